//! The clock, behind a trait so that every time-dependent answer can be reproduced with `--now`.

use chrono::{DateTime, SecondsFormat, Utc};

/// A source of "now".
pub trait Clock {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;

    /// The current time in the event timestamp layout.
    fn timestamp(&self) -> String {
        format_timestamp(self.now())
    }
}

/// The machine's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock stopped at one instant (`--now`, tests, audits).
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub DateTime<Utc>);

impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
}

/// Formats a time as events carry it: UTC, milliseconds, `Z`.
pub fn format_timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `YYYY-MM-DD`, optionally followed by `THH:MM:SS`, a fraction of 1 to 9 digits, and `Z` or
/// `+HH:MM`/`-HH:MM`: ASCII digits only. (A regex did this and its compilation was a tenth of a
/// short command.)
fn plain_layout(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    if !(digits(0..4) && at(4, b'-') && digits(5..7) && at(7, b'-') && digits(8..10)) {
        return false;
    }
    if b.len() == 10 {
        return true;
    }
    if !(at(10, b'T')
        && digits(11..13)
        && at(13, b':')
        && digits(14..16)
        && at(16, b':')
        && digits(17..19))
    {
        return false;
    }
    let mut i = 19;
    if at(i, b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if !(1..=9).contains(&(i - start)) {
            return false;
        }
    }
    match b.get(i) {
        None => true,
        Some(b'Z') => b.len() == i + 1,
        Some(b'+' | b'-') => {
            digits(i + 1..i + 3) && at(i + 3, b':') && digits(i + 4..i + 6) && b.len() == i + 6
        }
        Some(_) => false,
    }
}

/// Parses any ISO 8601 / RFC 3339 time (`2026-11-22T10:31:12Z`, with offset, or a bare date
/// `2026-11-22`, read as midnight UTC).
///
/// # Errors
/// A message naming the accepted forms.
pub fn parse_time(s: &str) -> Result<DateTime<Utc>, String> {
    let t = parse_any_time(s)?;
    // What an event cannot carry is refused here, where the time is given, and not by the
    // write that would have recorded it.
    if !projections::time::is_event_timestamp(&format_timestamp(t)) {
        return Err(format!(
            "`{}` is outside the times memlog records (UTC years 0001 to 9999, no leap \
             second); use e.g. 2026-11-22T10:31:12Z",
            s.escape_debug()
        ));
    }
    Ok(t)
}

fn parse_any_time(given: &str) -> Result<DateTime<Utc>, String> {
    // RFC 3339 allows `t` and `z` in lower case.
    let upper = given.to_ascii_uppercase();
    let s = upper.as_str();
    // chrono alone tolerates signed years and padded fields; accept only the plain layouts.
    if !plain_layout(s) {
        return Err(format!(
            "`{}` is not an ISO 8601 time; use e.g. 2026-11-22T10:31:12Z, 2026-11-22T10:31:12+01:00 or 2026-11-22",
            given.escape_debug()
        ));
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        && let Some(t) = d.and_hms_opt(0, 0, 0)
    {
        return Ok(t.and_utc());
    }
    if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f") {
        return Ok(t.and_utc());
    }
    Err(format!(
        "`{}` is not a valid time (no such date or hour); use e.g. 2026-11-22T10:31:12Z",
        given.escape_debug()
    ))
}

/// Normalizes any accepted time to the event layout.
///
/// # Errors
/// As [`parse_time`].
pub fn normalize_time(s: &str) -> Result<String, String> {
    parse_time(s).map(format_timestamp)
}

#[cfg(test)]
mod tests {
    use super::{parse_time, plain_layout};
    use proptest::prelude::*;

    proptest! {
        /// The hand-written layout check accepts exactly what the documented pattern accepts
        /// (ASCII digits), on strings built from the characters that matter.
        #[test]
        fn layout_check_agrees_with_the_pattern(
            s in "[0-9T:.Z+ -]{0,40}|[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{0,11})?(Z|[+-][0-9]{2}:[0-9]{2}|[+-][0-9]{1,3}|Zx)?)?"
        ) {
            let re = regex::Regex::new(
                r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?(?:Z|[+-][0-9]{2}:[0-9]{2})?)?$",
            ).unwrap_or_else(|e| panic!("{e}"));
            prop_assert_eq!(plain_layout(&s), re.is_match(&s), "{}", s);
        }
    }

    #[test]
    fn only_plain_iso_8601_layouts_are_times() {
        for ok in [
            "2026-11-22",
            "2026-11-22T10:31:12Z",
            "2026-11-22T10:31:12.5+01:00",
            "2026-11-22T10:31:12",
            "2026-11-22t10:31:12z",
        ] {
            assert!(parse_time(ok).is_ok(), "{ok}");
        }
        for bad in [
            "+2026-11-22",
            " 2026-11-22",
            "2026-1-2",
            "2026-11-22 10:31:12",
            "2026-02-30",
            "2026-11-22T25:00:00Z",
            "2026-11-22T10:31:12.Z",
            "2026-11-22T10:31:12.1234567890Z",
            "2026-11-22T10:31:12+01",
            "2026-11-22T10:31:12Zz",
            "２０２６-11-22",
            "yesterday",
            "2026-11-22T23:59:60Z",
            "0000-01-01T00:00:00Z",
            "0001-01-01T00:30:00+01:00",
            "9999-12-31T23:30:00-01:00",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        /// Every time accepted is one an event can carry: `--now` never lets a write fail
        /// later on its own timestamp.
        #[test]
        fn every_accepted_time_is_an_event_time(
            y in 0u32..10000, mo in 0u32..14, d in 0u32..33, h in 0u32..25, mi in 0u32..61,
            sec in 0u32..62, off in prop::option::of(-1440i32..1440),
        ) {
            let zone = off.map_or("Z".to_owned(), |o| {
                format!("{}{:02}:{:02}", if o < 0 { '-' } else { '+' }, o.abs() / 60, o.abs() % 60)
            });
            let s = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}{zone}");
            if let Ok(t) = parse_time(&s) {
                let stamp = super::format_timestamp(t);
                prop_assert!(projections::time::is_event_timestamp(&stamp), "{} -> {}", s, stamp);
            }
        }
    }
}
