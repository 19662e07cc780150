//! Timestamps as events carry them: UTC, millisecond precision, `2026-11-22T10:31:12.123Z`.

use chrono::NaiveDate;

/// The one timestamp layout events use.
pub const TIMESTAMP_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.3fZ";

/// True when `s` is a timestamp in exactly the event layout `YYYY-MM-DDTHH:MM:SS.mmmZ`: a date
/// of the proleptic Gregorian calendar from year 0001 to 9999, hours 00–23, minutes and seconds
/// 00–59 (no leap second `60`: most date libraries cannot represent it, and clocks smear it).
pub fn is_event_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let layout_ok = b.len() == 24
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            23 => *c == b'Z',
            _ => c.is_ascii_digit(),
        });
    if !layout_ok {
        return false;
    }
    let num = |from: usize, to: usize| s.get(from..to).and_then(|d| d.parse::<u32>().ok());
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) = (
        num(0, 4),
        num(5, 7),
        num(8, 10),
        num(11, 13),
        num(14, 16),
        num(17, 19),
    ) else {
        return false;
    };
    year >= 1
        && hour < 24
        && minute < 60
        && second < 60
        && i32::try_from(year)
            .ok()
            .and_then(|y| NaiveDate::from_ymd_opt(y, month, day))
            .is_some()
}

/// The UTC calendar day of an event timestamp (`YYYY-MM-DD`).
pub fn day_of(timestamp: &str) -> &str {
    timestamp.get(..10).unwrap_or(timestamp)
}

/// Unix milliseconds of an event timestamp; `None` when it is not in the event layout.
pub fn millis_of(timestamp: &str) -> Option<i64> {
    if !is_event_timestamp(timestamp) {
        return None;
    }
    chrono::NaiveDateTime::parse_from_str(timestamp, TIMESTAMP_FORMAT)
        .ok()
        .map(|t| t.and_utc().timestamp_millis())
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
        assert!(!is_event_timestamp("2026-02-29T10:31:12.123Z"));
        assert!(is_event_timestamp("2028-02-29T10:31:12.123Z"));
        assert!(!is_event_timestamp("2026-11-22T24:00:00.000Z"));
        assert!(!is_event_timestamp("+026-11-22T10:31:12.123Z"));
        assert!(!is_event_timestamp("2026-11-22T10:31:1 .123Z"));
    }

    #[test]
    fn millis_of_event_timestamps() {
        assert_eq!(millis_of("1970-01-01T00:00:01.250Z"), Some(1250));
        assert_eq!(millis_of("2026-11-22T10:31:12Z"), None);
    }

    /// Section 6.2 of the event format: years 0001 to 9999, seconds 00 to 59.
    #[test]
    fn no_year_zero_and_no_leap_second() {
        assert!(is_event_timestamp("0001-01-01T00:00:00.000Z"));
        assert!(is_event_timestamp("9999-12-31T23:59:59.999Z"));
        assert!(!is_event_timestamp("0000-01-01T00:00:00.000Z"));
        assert!(!is_event_timestamp("2016-12-31T23:59:60.000Z"));
        assert!(!is_event_timestamp("2026-11-22T10:31:60.123Z"));
    }
}
