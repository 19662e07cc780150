//! Timestamps as events carry them: UTC, millisecond precision, `2026-11-22T10:31:12.123Z`.

use chrono::NaiveDateTime;

/// The one timestamp layout events use.
pub const TIMESTAMP_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.3fZ";

/// True when `s` is a timestamp in exactly the event layout.
pub fn is_event_timestamp(s: &str) -> bool {
    s.len() == 24
        && s.as_bytes().get(19) == Some(&b'.')
        && NaiveDateTime::parse_from_str(s, TIMESTAMP_FORMAT).is_ok()
}

/// The UTC calendar day of an event timestamp (`YYYY-MM-DD`).
pub fn day_of(timestamp: &str) -> &str {
    timestamp.get(..10).unwrap_or(timestamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_layout_is_accepted() {
        assert!(is_event_timestamp("2026-11-22T10:31:12.123Z"));
        assert!(!is_event_timestamp("2026-11-22T10:31:12Z"));
        assert!(!is_event_timestamp("2026-11-22T10:31:12.123+00:00"));
        assert!(!is_event_timestamp("2026-13-22T10:31:12.123Z"));
        assert!(!is_event_timestamp("2026-11-22 10:31:12.123Z"));
        assert!(!is_event_timestamp("2026-11-22T10:31:12.1234Z"));
    }
}
