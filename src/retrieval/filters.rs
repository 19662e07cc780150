//! Which entries a query may return: the filters asked for, and the smart defaults of the
//! project's retrieval policy (status active, confidence at least `min_confidence`, nothing past
//! its `valid_to`) for every filter not asked for.
//!
//! Each filter is checked twice, cheaply on the [`DocFeatures`] of a candidate (exact for
//! everything but scope, subject and tags, which are compared by hash) and exactly on the entry
//! itself before it is returned, so no hash collision can let a wrong entry through.

use super::features::{DocFeatures, hash, tag_bit};
use super::scope::visible_scopes;
use projections::{EntryState, Kind, Section, Status};

/// The most entries one query returns (requirement 4.10).
pub const MAX_LIMIT: usize = 50;

/// A validated set of filters, smart defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Filters {
    /// Empty: any.
    pub sections: Vec<Section>,
    /// Empty: any.
    pub kinds: Vec<Kind>,
    /// Never empty: the default is `[active]`.
    pub statuses: Vec<Status>,
    /// The scope asked for; entries of it and of its parent scopes pass.
    pub scope: Option<String>,
    pub subject: Option<String>,
    /// The entry must have every one.
    pub tags: Vec<String>,
    pub min_confidence: f64,
    pub max_confidence: f64,
    /// Unix seconds, inclusive bounds.
    pub created_after: Option<i64>,
    pub created_before: Option<i64>,
    pub updated_after: Option<i64>,
    pub updated_before: Option<i64>,
    /// Keep entries past their `valid_to` (excluded by default).
    pub include_expired: bool,
}

impl Filters {
    /// The defaults of a policy: active entries of at least `min_confidence`, unexpired.
    pub fn defaults(min_confidence: f64) -> Self {
        Self {
            sections: Vec::new(),
            kinds: Vec::new(),
            statuses: vec![Status::Active],
            scope: None,
            subject: None,
            tags: Vec::new(),
            min_confidence,
            max_confidence: 1.0,
            created_after: None,
            created_before: None,
            updated_after: None,
            updated_before: None,
            include_expired: false,
        }
    }

    /// True when the entry is past its `valid_to` at `now`.
    pub fn expired(f: &DocFeatures, now: i64) -> bool {
        f.valid_to.is_some_and(|t| now > t)
    }

    /// The cheap check on features (exact but for the hashed scope, subject and tags).
    pub fn admits(&self, f: &DocFeatures, now: i64) -> bool {
        let conf = f.confidence();
        (self.sections.is_empty() || self.sections.contains(&f.section))
            && (self.kinds.is_empty() || self.kinds.contains(&f.kind))
            && self.statuses.contains(&f.status)
            && conf >= self.min_confidence - 1e-9
            && conf <= self.max_confidence + 1e-9
            && self.created_after.is_none_or(|t| f.created >= t)
            && self.created_before.is_none_or(|t| f.created <= t)
            && self.updated_after.is_none_or(|t| f.updated >= t)
            && self.updated_before.is_none_or(|t| f.updated <= t)
            && (self.include_expired || !Self::expired(f, now))
            && self
                .scope
                .as_deref()
                .is_none_or(|s| visible_scopes(s).iter().any(|v| hash(v) == f.scope_hash))
            && self
                .subject
                .as_deref()
                .is_none_or(|s| hash(s) == f.subject_hash)
            && self.tags.iter().all(|t| f.tag_bits & tag_bit(t) != 0)
    }

    /// True when the cheap check may let through an entry that does not pass (a hash or tag-bit
    /// collision): such candidates are confirmed with [`Filters::confirms`].
    pub fn needs_confirmation(&self) -> bool {
        self.scope.is_some() || self.subject.is_some() || !self.tags.is_empty()
    }

    /// The exact check of what [`Filters::admits`] compared by hash.
    pub fn confirms(&self, s: &EntryState) -> bool {
        self.scope
            .as_deref()
            .is_none_or(|w| visible_scopes(w).contains(&s.fields.scope))
            && self
                .subject
                .as_deref()
                .is_none_or(|w| s.fields.subject == w)
            && self.tags.iter().all(|t| s.fields.tags.contains(t))
    }

    /// Both checks on a whole entry.
    pub fn passes(&self, s: &EntryState, now: i64) -> bool {
        // Word counts play no part in filtering: the entry's text is not cut.
        !s.is_cold() && self.admits(&DocFeatures::with_lens(s, [0; 4]), now) && self.confirms(s)
    }
}

/// Parses a closed-vocabulary filter value, or says which values are allowed.
///
/// # Errors
/// A message naming the flag, the value and the allowed values.
pub fn parse_choice<T>(
    flag: &str,
    value: &str,
    parse: impl Fn(&str) -> Option<T>,
    choices: &str,
) -> Result<T, String> {
    parse(value).ok_or_else(|| {
        format!(
            "--{flag}: `{}` is not one of the allowed values: {choices}",
            value.escape_debug()
        )
    })
}

/// Parses `--status` values: any of the four statuses, repeated or comma-separated, or `all`.
///
/// # Errors
/// A message naming the allowed values.
pub fn parse_statuses(values: &[String]) -> Result<Option<Vec<Status>>, String> {
    if values.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for v in values.iter().flat_map(|v| v.split(',')) {
        if v == "all" {
            return Ok(Some(Status::ALL.to_vec()));
        }
        let s = parse_choice(
            "status",
            v,
            Status::parse,
            &format!("{}, all", Status::choices()),
        )?;
        if !out.contains(&s) {
            out.push(s);
        }
    }
    Ok(Some(out))
}
