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
    let s = s.trim();
    s.parse::<T>().map_err(|_| match s.parse::<i128>() {
        Ok(n) if n < 0 => format!("{n} is below 0: give a whole number, 0 or more"),
        Ok(_) if s.starts_with('-') => {
            "a signed number: give a whole number, 0 or more, without a sign".to_owned()
        }
        Ok(_) => "too large a number".to_owned(),
        Err(_) => "not a whole number: give one of 0 or more, in digits, e.g. 10".to_owned(),
    })
}
