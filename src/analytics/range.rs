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
    /// The UTC day it was resolved on: where a daily series too long to show in full ends.
    #[serde(skip)]
    pub today: NaiveDate,
}

impl DateRange {
    /// True when `day` (`YYYY-MM-DD`) lies in the range.
    pub fn contains_day(&self, day: &str) -> bool {
        self.from.as_deref().is_none_or(|f| day >= f) && self.to.as_deref().is_none_or(|t| day <= t)
    }

    /// The first and last day of a daily series over the range, both included: the range's
    /// first day (or `data_first`, the series' first, when the range is open there) to its last
    /// (or `data_last`). Never more than [`MAX_DAYS`] days: when an open side lets the data
    /// stretch it further (an entry dated far in the past or future), the series is the
    /// [`MAX_DAYS`] days ending today, moved as little as needed to stay within those days.
    /// `None` when there is no day to show.
    pub fn series_days(
        &self,
        data_first: Option<&str>,
        data_last: Option<&str>,
    ) -> Option<(NaiveDate, NaiveDate)> {
        let parse = |d: &str| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok();
        let first = self.from.as_deref().or(data_first).and_then(parse)?;
        let last = self.to.as_deref().or(data_last).and_then(parse)?;
        let longest = Days::new(u64::from(MAX_DAYS - 1));
        match first.checked_add_days(longest) {
            Some(end) if end < last => {
                let end = self.today.clamp(end, last);
                Some((end.checked_sub_days(longest).unwrap_or(first), end))
            }
            _ => (first <= last).then_some((first, last)),
        }
    }

    /// The days from the range's first day (or `data_first`, where it is open) to its last (or
    /// `data_last`), both included, however many: what [`DateRange::series_days`] clips.
    pub fn span_days(&self, data_first: Option<&str>, data_last: Option<&str>) -> i64 {
        let parse = |d: &str| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok();
        let first = self.from.as_deref().or(data_first).and_then(parse);
        let last = self.to.as_deref().or(data_last).and_then(parse);
        match (first, last) {
            (Some(f), Some(l)) if f <= l => (l - f).num_days() + 1,
            _ => 0,
        }
    }
}

/// The longest range accepted, in days (ten years): of `--range Nd`, of `--from`..`--to`, and
/// of any daily series.
pub const MAX_DAYS: u32 = 3660;

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
    /// A usage error when a time does not parse, `--from` is after `--to`, or they are more than
    /// [`MAX_DAYS`] days apart.
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
        if let (Some(f), Some(t)) = (from, to)
            && (t - f).num_days() >= i64::from(MAX_DAYS)
        {
            return Err(Error::Usage(format!(
                "--from {f} --to {t} covers {} days; a range covers at most {MAX_DAYS} days: \
                 give days closer together, or --range all for every day",
                (t - f).num_days() + 1
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
                today,
            },
            Self::Last(n) => DateRange {
                label: format!("{n}d"),
                from: Some(fmt(today
                    .checked_sub_days(Days::new(u64::from(n.saturating_sub(1))))
                    .unwrap_or(NaiveDate::MIN))),
                to: Some(fmt(today)),
                today,
            },
            Self::Between { from, to } => DateRange {
                label: format!(
                    "{}..{}",
                    from.map(fmt).unwrap_or_default(),
                    to.map(fmt).unwrap_or_default()
                ),
                from: from.map(fmt),
                to: to.map(fmt),
                today,
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
    fn ranges_longer_than_the_limit_are_refused() {
        assert!(RangeSpec::between(Some("2016-11-15"), Some("2026-11-22")).is_ok());
        let e = RangeSpec::between(Some("2016-11-14"), Some("2026-11-22"))
            .err()
            .map(|e| e.to_string());
        assert!(
            e.as_deref()
                .is_some_and(|m| m.contains("at most 3660 days")),
            "{e:?}"
        );
    }

    #[test]
    fn a_series_never_has_more_than_the_limit_of_days() {
        let day = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok();
        let all = RangeSpec::All.resolve(at("2026-11-22T10:00:00Z"));
        let span = |first: &str, last: &str| {
            all.series_days(Some(first), Some(last))
                .map(|(f, l)| (f, l, (l - f).num_days() + 1))
        };
        // Short enough: the data's days as they are.
        assert_eq!(
            span("2026-11-01", "2027-01-01"),
            Some((
                day("2026-11-01").unwrap_or_default(),
                day("2027-01-01").unwrap_or_default(),
                62
            ))
        );
        // Too long: the days ending today, or the earliest days when today comes too soon.
        for (first, last, end) in [
            ("0001-01-01", "2026-11-30", "2026-11-22"),
            ("0001-01-01", "9999-12-31", "2026-11-22"),
            ("2026-01-01", "9999-12-31", "2036-01-08"),
            ("9000-01-01", "9999-12-31", "9010-01-08"),
            ("0001-01-01", "0500-01-01", "0500-01-01"),
        ] {
            let got = span(first, last);
            assert_eq!(got.map(|g| g.1), day(end), "{first}..{last}");
            assert_eq!(got.map(|g| g.2), Some(3660), "{first}..{last}");
        }
        assert_eq!(span("2026-11-02", "2026-11-01"), None);
    }

    #[test]
    fn the_filter_key_cycles_through_the_three_ranges() {
        let r = RangeSpec::Last(7);
        assert_eq!(r.cycle(), RangeSpec::Last(30));
        assert_eq!(r.cycle().cycle(), RangeSpec::All);
        assert_eq!(r.cycle().cycle().cycle(), RangeSpec::Last(7));
    }
}
