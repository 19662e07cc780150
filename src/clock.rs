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

/// Parses any ISO 8601 / RFC 3339 time (`2026-11-22T10:31:12Z`, with offset, or a bare date
/// `2026-11-22`, read as midnight UTC).
///
/// # Errors
/// A message naming the accepted forms.
pub fn parse_time(s: &str) -> Result<DateTime<Utc>, String> {
    // chrono alone tolerates signed years and padded fields; accept only the plain layouts.
    static LAYOUT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})?)?$",
        )
        .unwrap_or_else(|e| panic!("time layout: {e}"))
    });
    if !LAYOUT.is_match(s) {
        return Err(format!(
            "`{}` is not an ISO 8601 time; use e.g. 2026-11-22T10:31:12Z, 2026-11-22T10:31:12+01:00 or 2026-11-22",
            s.escape_debug()
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
        "`{s}` is not a valid time (no such date or hour); use e.g. 2026-11-22T10:31:12Z"
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
    use super::parse_time;

    #[test]
    fn only_plain_iso_8601_layouts_are_times() {
        for ok in [
            "2026-11-22",
            "2026-11-22T10:31:12Z",
            "2026-11-22T10:31:12.5+01:00",
            "2026-11-22T10:31:12",
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
            "yesterday",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }
}
