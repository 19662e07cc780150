//! Value parsers of the numeric options. Each option that takes one also allows a leading minus
//! (`allow_negative_numbers`), so that `--limit -1` and `--min-confidence -0.5` reach these
//! parsers or the option's range check instead of being taken for an unknown flag; a value that
//! is not a number says which form the option takes.

use std::str::FromStr;

/// A confidence-like value, `0.0` to `1.0`. Out-of-range numbers parse: the option's own range
/// check (or the write policy, for `--confidence`) names the bounds.
pub fn fraction(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err("not a number: give one from 0.0 to 1.0, e.g. 0.7".to_owned()),
    }
}

/// A count or a duration in whole units: digits only, 0 or more.
pub fn whole<T: FromStr>(s: &str) -> Result<T, String> {
    whole_in(s, 0, "a whole number, 0 or more", "10")
}

/// `query --limit`: 1 to 50. The parser names that range; 0 and numbers above 50 parse, and the
/// option's own check refuses them with the reason.
pub fn query_limit(s: &str) -> Result<usize, String> {
    whole_in(s, 1, "a whole number from 1 to 50", "10")
}

/// A token budget: 0 or more tokens.
pub fn tokens(s: &str) -> Result<usize, String> {
    whole_in(s, 0, "a whole number of tokens, 0 or more", "1200")
}

/// A whole number; a value that is not one (or is below 0, under `min`) is told to give `what`,
/// e.g. `example`. A number that parses is the option's own check to refuse.
fn whole_in<T: FromStr>(s: &str, min: i128, what: &str, example: &str) -> Result<T, String> {
    let s = s.trim();
    s.parse::<T>().map_err(|_| match s.parse::<i128>() {
        Ok(n) if n < 0 => format!("{n} is below {min}: give {what}"),
        Ok(_) if s.starts_with('-') => format!("a signed number: give {what}, without a sign"),
        Ok(_) => format!("too large a number: give {what}"),
        Err(_) => format!("not in digits: give {what}, e.g. {example}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_parser_names_its_own_range() {
        assert_eq!(
            whole::<usize>("-1").err().as_deref(),
            Some("-1 is below 0: give a whole number, 0 or more")
        );
        assert_eq!(
            query_limit("-1").err().as_deref(),
            Some("-1 is below 1: give a whole number from 1 to 50")
        );
        assert_eq!(
            query_limit("abc").err().as_deref(),
            Some("not in digits: give a whole number from 1 to 50, e.g. 10")
        );
        assert_eq!(
            query_limit("-0").err().as_deref(),
            Some("a signed number: give a whole number from 1 to 50, without a sign")
        );
        assert_eq!(
            tokens("abc").err().as_deref(),
            Some("not in digits: give a whole number of tokens, 0 or more, e.g. 1200")
        );
        assert_eq!(query_limit("0"), Ok(0));
        assert_eq!(tokens("0"), Ok(0));
    }
}
