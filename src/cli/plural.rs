//! Counts in messages: `1 entry`, `2 entries`.

/// `n` and the noun, singular for one.
pub fn count(n: impl TryInto<u64> + Copy + std::fmt::Display, one: &str, many: &str) -> String {
    let singular = n.try_into().is_ok_and(|n: u64| n == 1);
    format!("{n} {}", if singular { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1_usize, "entry", "entries"), "1 entry");
        assert_eq!(count(0_usize, "entry", "entries"), "0 entries");
        assert_eq!(count(2_u64, "event", "events"), "2 events");
    }
}
