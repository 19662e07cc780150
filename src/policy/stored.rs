//! Secrets that are already in a log.
//!
//! Every write is scanned and refused when it holds a credential, but a line can reach the log
//! without memlog's checks: written by another clone without the hooks, committed with
//! `--no-verify`, merged from a branch. Such a line verifies (its hash is its content's), so
//! nothing refuses it; what memlog must still never do is print the credential. The store
//! redacts it when it projects the entry (once per change of the entry, not on every read), so
//! that every read (`list`, `show`, `query`, `stats`, `context`, MCP) shows `[redacted]` in its
//! place, and remembers which field of which entry held what kind of secret, so that `health`
//! can name the entry and its fix (`memlog purge`) without the value.

use projections::{AuditRecord, EntryState};
use serde::{Deserialize, Serialize};

/// What replaces a detected secret in everything memlog prints.
pub const REDACTED: &str = "[redacted]";

/// A secret found in a field of a stored entry: the field and the rule, never the value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSecret {
    /// The field, as writes name it: `content`, `tags[0]`, `evidence[1].uri`, `status_reason`.
    pub field: String,
    /// The rule that found it, e.g. `github-token`.
    pub rule: String,
}

/// Replaces every secret in `text` (an evidence URI when `uri`) by [`REDACTED`], noting each
/// under `field` in `found`.
pub fn redact_field(field: &str, text: &mut String, uri: bool, found: &mut Vec<StoredSecret>) {
    let findings = if uri {
        super::secret_scan::scan_uri(text)
    } else {
        super::secret_scan::scan_text(text)
    };
    if findings.is_empty() {
        return;
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for f in &findings {
        out.push_str(text.get(last..f.start).unwrap_or_default());
        out.push_str(REDACTED);
        last = f.end;
        found.push(StoredSecret {
            field: field.to_owned(),
            rule: f.rule.to_owned(),
        });
    }
    out.push_str(text.get(last..).unwrap_or_default());
    *text = out;
}

/// `text` with every secret in it replaced by [`REDACTED`] (an actor's name, say).
pub fn without_secrets(text: &str) -> String {
    let mut text = text.to_owned();
    redact_field("", &mut text, false, &mut Vec::new());
    text
}

/// Redacts every secret in the text fields of `state` (those a write checks, the reason of its
/// last change and the names of its actors), returning where they were.
pub fn redact_state(state: &mut EntryState) -> Vec<StoredSecret> {
    let mut found = Vec::new();
    let f = &mut state.fields;
    for (name, value) in [
        ("subject", &mut f.subject),
        ("scope", &mut f.scope),
        ("summary", &mut f.summary),
        ("content", &mut f.content),
    ] {
        redact_field(name, value, false, &mut found);
    }
    for (i, tag) in f.tags.iter_mut().enumerate() {
        redact_field(&format!("tags[{i}]"), tag, false, &mut found);
    }
    for (i, e) in f.evidence.iter_mut().enumerate() {
        redact_field(&format!("evidence[{i}].uri"), &mut e.uri, true, &mut found);
        redact_field(
            &format!("evidence[{i}].note"),
            &mut e.note,
            false,
            &mut found,
        );
    }
    if let Some(reason) = state.status_reason.as_mut() {
        redact_field("status_reason", reason, false, &mut found);
    }
    for (name, actor) in [
        ("created_by", &mut state.created_by),
        ("updated_by", &mut state.updated_by),
    ] {
        redact_field(name, actor, false, &mut found);
    }
    if let Some(actor) = state.pinned_by.as_mut() {
        redact_field("pinned_by", actor, false, &mut found);
    }
    found
}

/// Redacts the reason and the actor of an audit record (what `audit` and `show` print of it).
pub fn redact_audit(record: &mut AuditRecord) -> Vec<StoredSecret> {
    let mut found = Vec::new();
    if let Some(reason) = record.reason.as_mut() {
        redact_field("reason", reason, false, &mut found);
    }
    redact_field("actor", &mut record.actor, false, &mut found);
    found
}

/// The advice for an entry whose stored text holds a secret (`health`, `verify`).
pub fn fix(entry: &str) -> String {
    format!(
        "rotate the credential, then remove it from the log with `memlog purge {entry} --reason \
         \"credential\"` and `memlog gc`"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";

    #[test]
    fn a_secret_in_a_field_is_replaced_and_named() {
        let mut text = format!("deploy token {TOKEN} rotate monthly");
        let mut found = Vec::new();
        redact_field("content", &mut text, false, &mut found);
        assert_eq!(text, "deploy token [redacted] rotate monthly");
        assert_eq!(
            found,
            vec![StoredSecret {
                field: "content".into(),
                rule: "github-token".into()
            }]
        );
    }

    #[test]
    fn text_without_a_secret_is_left_alone() {
        let mut text = "deploy tokens rotate monthly".to_owned();
        let mut found = Vec::new();
        redact_field("content", &mut text, false, &mut found);
        assert_eq!(text, "deploy tokens rotate monthly");
        assert!(found.is_empty());
    }
}
