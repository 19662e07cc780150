//! Date ranges of the statistics: the last N days, all time, or two days given.

use crate::error::{Error, Result};
use chrono::{DateTime, Days, NaiveDate, Utc};

/// A date range as the user gave it; resolved against `now` by [`RangeSpec::resolve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RangeSpec {
    /// The last `n` UTC days, today included.
    Last(u32),
    /// Every day.
    All,
    /// From one UTC day to another, both included; either side may be open.
    Between {
        from: Option<NaiveDate>,
        to: Option<NaiveDate>,
    },
}

/// A resolved range of UTC days (`YYYY-MM-DD`, both ends included; `None` leaves a side open).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DateRange {
    /// What the user chose: `7d`, `30d`, `all` or `FROM..TO`.
    pub label: String,
    pub from: Option<String>,
    pub to: Option<String>,
}

impl DateRange {
    /// True when `day` (`YYYY-MM-DD`) lies in the range.
    pub fn contains_day(&self, day: &str) -> bool {
        self.from.as_deref().is_none_or(|f| day >= f) && self.to.as_deref().is_none_or(|t| day <= t)
    }
}

/// The longest `--range Nd` accepted (ten years).
const MAX_DAYS: u32 = 3660;

impl RangeSpec {
    /// Parses `--range`: `7d`, `30d`, any `<N>d`, or `all`.
    ///
    /// # Errors
    /// A usage error naming the accepted forms.
    pub fn parse(s: &str) -> Result<Self> {
        if s == "all" {
            return Ok(Self::All);
        }
        let days = s
            .strip_suffix('d')
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| (1..=MAX_DAYS).contains(n));
        days.map(Self::Last).ok_or_else(|| {
            Error::Usage(format!(
                "--range: `{}` is not a range; use 7d, 30d, all, or <N>d with N from 1 to {MAX_DAYS}",
                s.escape_debug()
            ))
        })
    }

    /// Builds the range of `--from` and `--to` (ISO 8601 times or dates; their UTC day counts).
    ///
    /// # Errors
    /// A usage error when a time does not parse or `--from` is after `--to`.
    pub fn between(from: Option<&str>, to: Option<&str>) -> Result<Self> {
        let day = |flag: &str, v: Option<&str>| -> Result<Option<NaiveDate>> {
            v.map(|s| {
                crate::clock::parse_time(s)
                    .map(|t| t.date_naive())
                    .map_err(|m| Error::Usage(format!("--{flag}: {m}")))
            })
            .transpose()
        };
        let (from, to) = (day("from", from)?, day("to", to)?);
        if let (Some(f), Some(t)) = (from, to)
            && f > t
        {
            return Err(Error::Usage(format!(
                "--from {f} is after --to {t}; give the earlier day to --from"
            )));
        }
        Ok(Self::Between { from, to })
    }

    /// The days this range covers at `now`.
    pub fn resolve(&self, now: DateTime<Utc>) -> DateRange {
        let today = now.date_naive();
        let fmt = |d: NaiveDate| d.format("%Y-%m-%d").to_string();
        match self {
            Self::All => DateRange {
                label: "all".into(),
                from: None,
                to: None,
            },
            Self::Last(n) => DateRange {
                label: format!("{n}d"),
                from: Some(fmt(today
                    .checked_sub_days(Days::new(u64::from(n.saturating_sub(1))))
                    .unwrap_or(NaiveDate::MIN))),
                to: Some(fmt(today)),
            },
            Self::Between { from, to } => DateRange {
                label: format!(
                    "{}..{}",
                    from.map(fmt).unwrap_or_default(),
                    to.map(fmt).unwrap_or_default()
                ),
                from: from.map(fmt),
                to: to.map(fmt),
            },
        }
    }

    /// The next range of the dashboard's `f` key: 7d, 30d, all, and round again.
    pub fn cycle(&self) -> Self {
        match self {
            Self::Last(7) => Self::Last(30),
            Self::Last(30) => Self::All,
            _ => Self::Last(7),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        crate::clock::parse_time(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn last_days_include_today() {
        let r = RangeSpec::Last(7).resolve(at("2026-11-22T10:00:00Z"));
        assert_eq!(r.from.as_deref(), Some("2026-11-16"));
        assert_eq!(r.to.as_deref(), Some("2026-11-22"));
        assert!(r.contains_day("2026-11-16") && r.contains_day("2026-11-22"));
        assert!(!r.contains_day("2026-11-15") && !r.contains_day("2026-11-23"));
    }

    #[test]
    fn bad_ranges_are_refused_with_the_accepted_forms() {
        for bad in ["", "7", "d", "0d", "-3d", "7days", "9999999d", "ALL"] {
            let e = RangeSpec::parse(bad).err().map(|e| e.to_string());
            assert!(
                e.as_deref().is_some_and(|m| m.contains("use 7d, 30d, all")),
                "{bad}: {e:?}"
            );
        }
        assert!(RangeSpec::between(Some("2026-11-22"), Some("2026-11-01")).is_err());
        assert!(RangeSpec::between(Some("yesterday"), None).is_err());
    }

    #[test]
    fn the_filter_key_cycles_through_the_three_ranges() {
        let r = RangeSpec::Last(7);
        assert_eq!(r.cycle(), RangeSpec::Last(30));
        assert_eq!(r.cycle().cycle(), RangeSpec::All);
        assert_eq!(r.cycle().cycle().cycle(), RangeSpec::Last(7));
    }
}
