//! Counts in messages: `1 entry`, `2 entries`.

/// `n` and the noun, singular for one.
pub fn count(n: impl TryInto<u64> + Copy + std::fmt::Display, one: &str, many: &str) -> String {
    let singular = n.try_into().is_ok_and(|n: u64| n == 1);
    format!("{n} {}", if singular { one } else { many })
}

/// A number of days that may be fractional (`2.5 days`), singular for exactly one.
pub fn days(d: f64) -> String {
    let singular = (d - 1.0).abs() < f64::EPSILON;
    format!("{d} {}", if singular { "day" } else { "days" })
}

#[cfg(test)]
mod tests {
    use super::{count, days};

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1_usize, "entry", "entries"), "1 entry");
        assert_eq!(count(0_usize, "entry", "entries"), "0 entries");
        assert_eq!(count(2_u64, "event", "events"), "2 events");
        assert_eq!(days(1.0), "1 day");
        assert_eq!(days(0.5), "0.5 days");
        assert_eq!(days(2.0), "2 days");
    }
}
