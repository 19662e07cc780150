//! The colour thresholds of the dashboard (property 51), as values the renderer maps to colours
//! and to labels: colour is never the only signal.

use serde::Serialize;

/// How healthy a metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    /// Green.
    Ok,
    /// Yellow.
    Warn,
    /// Red.
    Bad,
}

impl Health {
    /// The label shown beside the metric.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warn => "warn",
            Self::Bad => "bad",
        }
    }
}

/// Average confidence: above 0.7 ok, 0.5 to 0.7 warn, below 0.5 bad; `None` without entries.
pub fn confidence(avg: f64, total: i64) -> Option<Health> {
    let h = if avg > 0.7 {
        Health::Ok
    } else if avg >= 0.5 {
        Health::Warn
    } else {
        Health::Bad
    };
    (total > 0).then_some(h)
}

/// Entries with stale evidence: none ok, 1 to 5 warn, more bad.
pub const fn stale(count: i64) -> Health {
    match count {
        ..=0 => Health::Ok,
        1..=5 => Health::Warn,
        _ => Health::Bad,
    }
}

/// Expiry: entries already past `valid_to` bad, entries expiring within 7 days warn.
pub const fn expiry(approaching: usize, past: i64) -> Health {
    if past > 0 {
        Health::Bad
    } else if approaching > 0 {
        Health::Warn
    } else {
        Health::Ok
    }
}

/// The whole project: the worst of its confidence and stale-evidence health (property 51).
pub fn overall(avg: f64, stale_count: i64, total: i64) -> Option<Health> {
    confidence(avg, total).map(|c| c.max(stale(stale_count)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Property 51: green for avg > 0.7 and no stale evidence, yellow for avg in 0.5..=0.7
        /// or 1 to 5 stale, red for avg < 0.5 or more than 5 stale.
        #[test]
        fn thresholds_of_property_51(avg in 0.0f64..=1.0, stale_count in 0i64..20) {
            let h = overall(avg, stale_count, 1);
            let expected = if avg < 0.5 || stale_count > 5 {
                Health::Bad
            } else if avg <= 0.7 || stale_count >= 1 {
                Health::Warn
            } else {
                Health::Ok
            };
            prop_assert_eq!(h, Some(expected));
        }
    }

    #[test]
    fn edges() {
        assert_eq!(confidence(0.7, 1), Some(Health::Warn));
        assert_eq!(confidence(0.7001, 1), Some(Health::Ok));
        assert_eq!(confidence(0.5, 1), Some(Health::Warn));
        assert_eq!(confidence(0.4999, 1), Some(Health::Bad));
        assert_eq!(confidence(0.0, 0), None);
        assert_eq!(stale(5), Health::Warn);
        assert_eq!(stale(6), Health::Bad);
        assert_eq!(expiry(0, 1), Health::Bad);
        assert_eq!(expiry(2, 0), Health::Warn);
    }
}
