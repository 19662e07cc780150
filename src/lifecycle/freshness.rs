//! Freshness: entries near or past their `valid_to`, and entries whose `review_interval` has
//! run out since they were last updated (an update is a review: `memlog update --valid-to`
//! renews an entry).

use crate::error::Result;
use crate::retrieval::features::unix_millis;
use crate::store::Store;
use serde::Serialize;

/// One entry that needs attention.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Stale {
    pub id: String,
    pub section: String,
    pub subject: String,
    pub summary: String,
    /// `expired`, `expiring` or `review_due`.
    pub problem: &'static str,
    /// When: `valid_to`, or when the review fell due.
    pub due: String,
    /// Days until `due` (negative: past).
    pub days: f64,
}

const DAY_MS: f64 = 86_400_000.0;

/// Milliseconds of a review interval: `30d`, `2w`, `12h`, or an ISO 8601 duration (`P30D`,
/// `P1Y2M`, `PT12H`; a year is 365 days and a month 30).
pub fn interval_millis(s: &str) -> Option<i64> {
    let unit = |c: char, time: bool| -> Option<i64> {
        Some(match (c, time) {
            ('Y', false) => 365 * 86_400_000,
            ('M', false) => 30 * 86_400_000,
            ('W', false) | ('w', _) => 7 * 86_400_000,
            ('D', false) | ('d', _) => 86_400_000,
            ('H', true) | ('h', _) => 3_600_000,
            ('M', true) => 60_000,
            ('S', true) => 1000,
            _ => return None,
        })
    };
    if !crate::policy::validate::is_valid_interval(s) {
        return None;
    }
    let (body, mut time) = match s.strip_prefix('P') {
        Some(rest) => (rest, false),
        None => (s, true),
    };
    let short = !s.starts_with('P');
    let mut total: i64 = 0;
    let mut digits = String::new();
    for c in body.chars() {
        if c == 'T' {
            time = true;
            continue;
        }
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let n: i64 = digits.parse().ok()?;
        digits.clear();
        let u = if short {
            unit(c, true)?
        } else {
            unit(c, time)?
        };
        total = total.checked_add(n.checked_mul(u)?)?;
    }
    Some(total)
}

/// Hot entries within `warning_days` of their `valid_to` (or past it), and entries whose
/// review is due, at `now`; soonest first.
///
/// # Errors
/// When the store cannot be read.
pub fn check(store: &Store, now: &str, warning_days: u32) -> Result<Vec<Stale>> {
    let Some(now_ms) = unix_millis(now) else {
        return Ok(Vec::new());
    };
    let horizon = now_ms + i64::from(warning_days) * 86_400_000;
    let mut out = Vec::new();
    let entries = store.recent(usize::MAX, |s| {
        s.fields.valid_to.is_some() || s.fields.review_interval.is_some()
    })?;
    #[expect(
        clippy::cast_precision_loss,
        reason = "millisecond spans far below 2^52"
    )]
    // To a tenth of a day; `+ 0.0` turns the -0.0 of a moment ago into 0.
    let days = |t: i64| ((t - now_ms) as f64 / DAY_MS * 10.0).round() / 10.0 + 0.0;
    for s in entries {
        let item = |problem, due: String, t| Stale {
            id: s.id.clone(),
            section: s.fields.section.as_str().into(),
            subject: s.fields.subject.clone(),
            summary: s.fields.summary.clone(),
            problem,
            due,
            days: days(t),
        };
        if let Some(v) = &s.fields.valid_to
            && let Some(t) = unix_millis(v)
            && t <= horizon
        {
            out.push(item(
                if t <= now_ms { "expired" } else { "expiring" },
                v.clone(),
                t,
            ));
        }
        if let Some(r) = &s.fields.review_interval
            && let (Some(every), Some(last)) = (interval_millis(r), unix_millis(&s.updated_at))
            && last.saturating_add(every) <= now_ms
        {
            let t = last.saturating_add(every);
            let due = crate::clock::format_timestamp(
                chrono::DateTime::from_timestamp_millis(t).unwrap_or_default(),
            );
            out.push(item("review_due", due, t));
        }
    }
    out.sort_by(|a, b| a.due.cmp(&b.due).then_with(|| a.id.cmp(&b.id)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::interval_millis;

    #[test]
    fn intervals() {
        assert_eq!(interval_millis("30d"), Some(30 * 86_400_000));
        assert_eq!(interval_millis("2w"), Some(14 * 86_400_000));
        assert_eq!(interval_millis("PT12H"), Some(12 * 3_600_000));
        assert_eq!(interval_millis("P1M"), Some(30 * 86_400_000));
        assert_eq!(interval_millis("P1DT1M"), Some(86_400_000 + 60_000));
        assert_eq!(interval_millis("soon"), None);
    }
}
