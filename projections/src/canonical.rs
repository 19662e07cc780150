//! Canonical JSON: the RFC 8785 (JSON Canonicalization Scheme) subset memlog writes.
//!
//! Object keys are sorted by their UTF-16 code units, there is no insignificant whitespace,
//! strings escape only what JSON requires (with the short escapes where they exist and lowercase
//! `\u00xx` otherwise), and numbers use the ECMAScript shortest round-trip form. A number written
//! without fraction or exponent is an integer token and must lie within ±(2^53 − 1), however it
//! was parsed; only finite numbers exist.
//! Because the scheme is a published standard, a verifier in another language can reuse an
//! existing JCS library.

use serde_json::{Map, Number, Value};
use std::fmt::Write as _;

/// Largest integer magnitude that every JSON reader can hold exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Why a value has no canonical encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CanonicalError {
    /// A number is NaN or infinite (serde_json cannot produce these, but a typed value can).
    NonFinite,
    /// An integer is larger in magnitude than 2^53 - 1.
    UnsafeInteger(String),
}

impl std::fmt::Display for CanonicalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NonFinite => f.write_str("number is not finite"),
            Self::UnsafeInteger(n) => write!(f, "integer {n} is outside ±(2^53 - 1)"),
        }
    }
}

impl std::error::Error for CanonicalError {}

/// Encodes `value` canonically.
///
/// # Errors
/// When a number has no canonical form (see [`CanonicalError`]).
pub fn to_canonical_string(value: &Value) -> Result<String, CanonicalError> {
    let mut out = String::with_capacity(256);
    write_value(&mut out, value)?;
    Ok(out)
}

fn write_value(out: &mut String, value: &Value) -> Result<(), CanonicalError> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n)?,
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item)?;
            }
            out.push(']');
        }
        Value::Object(map) => write_object(out, map)?,
    }
    Ok(())
}

/// Encodes an object canonically (the same as [`to_canonical_string`] of `Value::Object`).
///
/// # Errors
/// As [`to_canonical_string`].
pub fn map_to_canonical_string(map: &Map<String, Value>) -> Result<String, CanonicalError> {
    let mut out = String::with_capacity(1024);
    write_object(&mut out, map)?;
    Ok(out)
}

/// Whether byte order and UTF-16 order agree for `key`: they differ only for characters at or
/// above U+E000, whose UTF-8 encodings start with a byte of 0xEE or more.
fn orders_agree(key: &str) -> bool {
    key.bytes().all(|b| b < 0xEE)
}

fn write_object(out: &mut String, map: &Map<String, Value>) -> Result<(), CanonicalError> {
    // JCS orders keys by UTF-16 code units. For the usual keys (no characters at or above
    // U+E000) that is byte order, and when the map already iterates in that order (serde_json's
    // default map does) no sort is needed.
    let mut previous: Option<&String> = None;
    let presorted = map.keys().all(|k| {
        let ok = orders_agree(k) && previous.is_none_or(|p| p.as_bytes() < k.as_bytes());
        previous = Some(k);
        ok
    });
    out.push('{');
    if presorted {
        for (i, (key, value)) in map.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_string(out, key);
            out.push(':');
            write_value(out, value)?;
        }
    } else {
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        for (i, key) in keys.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_string(out, key);
            out.push(':');
            if let Some(v) = map.get(key.as_str()) {
                write_value(out, v)?;
            }
        }
    }
    out.push('}');
    Ok(())
}

/// Writes a JSON string literal with the minimal JCS escaping.
pub fn write_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let needs_escape = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
    if !s.bytes().any(needs_escape) {
        // The common case, checked by a loop the compiler vectorizes.
        out.push_str(s);
        out.push('"');
        return;
    }
    // Copy runs of bytes that need no escape in one go. Every byte that needs one is ASCII, so
    // the slice boundaries below are always character boundaries.
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escape);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

fn write_number(out: &mut String, n: &Number) -> Result<(), CanonicalError> {
    if let Some(u) = n.as_u64() {
        if u > MAX_SAFE_INTEGER {
            return Err(CanonicalError::UnsafeInteger(u.to_string()));
        }
        let _ = write!(out, "{u}");
        return Ok(());
    }
    if let Some(i) = n.as_i64() {
        if i.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(CanonicalError::UnsafeInteger(i.to_string()));
        }
        let _ = write!(out, "{i}");
        return Ok(());
    }
    let f = n.as_f64().ok_or(CanonicalError::NonFinite)?;
    // A double from 2^53 up to (not including) 1e21 is written without fraction or exponent,
    // which makes it an integer token, and integer tokens must be safe. (A token such as
    // `100000000000000000000` parses as a double because it does not fit in 64 bits.)
    if f.abs() > MAX_SAFE_INTEGER as f64 && f.abs() < 1e21 {
        let mut token = String::new();
        write_f64(&mut token, f)?;
        return Err(CanonicalError::UnsafeInteger(token));
    }
    write_f64(out, f)
}

/// Writes `f` as [`to_canonical_string`] writes the same number in a [`Value`].
///
/// # Errors
/// As [`to_canonical_string`].
pub fn write_f64_number(out: &mut String, f: f64) -> Result<(), CanonicalError> {
    write_number(out, &Number::from_f64(f).ok_or(CanonicalError::NonFinite)?)
}

/// The first integer token (a number without fraction or exponent) in the JSON text `json` that
/// lies outside ±(2^53 − 1), as written. Used to name the problem when a line is refused: a
/// parser reads such a token as a rounded double, so the value alone no longer shows it.
pub fn first_unsafe_integer(json: &str) -> Option<&str> {
    let bytes = json.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Skip the string, escapes included.
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < bytes.len()
                    && matches!(bytes[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    i += 1;
                }
                let token = json.get(start..i)?;
                let digits = token.trim_start_matches('-');
                let integer = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
                let unsafe_magnitude = digits.trim_start_matches('0').len() > 16
                    || digits.parse::<u64>().is_ok_and(|n| n > MAX_SAFE_INTEGER);
                if integer && unsafe_magnitude {
                    return Some(token);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// Writes `f` in the ECMAScript `Number.prototype.toString` form that RFC 8785 requires.
///
/// # Errors
/// When `f` is NaN or infinite.
pub fn write_f64(out: &mut String, f: f64) -> Result<(), CanonicalError> {
    if !f.is_finite() {
        return Err(CanonicalError::NonFinite);
    }
    if f == 0.0 {
        out.push('0');
        return Ok(());
    }
    if f < 0.0 {
        out.push('-');
    }
    // Rust's `{:e}` prints the shortest digits that round-trip, e.g. "1.2345e-7".
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    let k = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let n = exp + 1; // position of the decimal point relative to the digits
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n(
            '0',
            usize::try_from(n - k).unwrap_or(0),
        ));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(usize::try_from(n).unwrap_or(0));
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', usize::try_from(-n).unwrap_or(0)));
        out.push_str(&digits);
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        let _ = write!(out, "{}", (n - 1).abs());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn num(f: f64) -> String {
        let mut s = String::new();
        write_f64(&mut s, f).unwrap_or_default();
        s
    }

    #[test]
    fn numbers_follow_ecmascript() {
        // Vectors from RFC 8785 appendix B and ECMAScript.
        assert_eq!(num(0.0), "0");
        assert_eq!(num(-0.0), "0");
        assert_eq!(num(1.0), "1");
        assert_eq!(num(0.8), "0.8");
        assert_eq!(num(0.000001), "0.000001");
        assert_eq!(num(1e-7), "1e-7");
        assert_eq!(num(1e21), "1e+21");
        assert_eq!(num(1e20), "100000000000000000000");
        assert_eq!(num(123.456), "123.456");
        assert_eq!(num(-1.5), "-1.5");
        assert_eq!(num(9007199254740992.0), "9007199254740992");
        assert_eq!(num(5e-324), "5e-324");
        assert_eq!(num(1.7976931348623157e308), "1.7976931348623157e+308");
        assert_eq!(num(333333333.3333333), "333333333.3333333");
    }

    #[test]
    fn objects_sort_by_utf16_and_strings_escape_minimally() {
        let v = json!({"b": 1, "a": [true, null, "x\n\u{1}\"\\é"], "\u{10000}": 1, "\u{e000}": 2});
        let s = to_canonical_string(&v).unwrap_or_default();
        assert_eq!(
            s,
            "{\"a\":[true,null,\"x\\n\\u0001\\\"\\\\é\"],\"b\":1,\"\u{10000}\":1,\"\u{e000}\":2}"
        );
    }

    #[test]
    fn unsafe_integers_are_refused() {
        for token in [
            "9007199254740992",
            "9007199254740993",
            "-9007199254740992",
            "18446744073709551615",
            // Beyond 64 bits serde_json reads a double; the token is still an integer.
            "18446744073709551616",
            "100000000000000000000",
            "-100000000000000000000",
        ] {
            let v: Value = serde_json::from_str(token).unwrap_or(Value::Null);
            assert!(
                matches!(
                    to_canonical_string(&v),
                    Err(CanonicalError::UnsafeInteger(ref t)) if t.trim_start_matches('-').len() >= 16
                ),
                "{token} was accepted"
            );
        }
        // A token too large for a double's plain notation is refused too (it is read as 1e21,
        // whose canonical form differs), and the refusal names the token as written.
        let line = "{\"a\":\"9999999999999999999999 in a string\",\"n\":999999999999999999999}";
        assert_eq!(first_unsafe_integer(line), Some("999999999999999999999"));
        assert_eq!(
            first_unsafe_integer("{\"n\":9007199254740991,\"x\":1e+300}"),
            None
        );
        assert_eq!(
            first_unsafe_integer("[-9007199254740992]"),
            Some("-9007199254740992")
        );
        // Large doubles written with an exponent are not integer tokens; safe integers pass.
        for token in ["1e+21", "9007199254740991", "-9007199254740991", "1.5e+300"] {
            let v: Value = serde_json::from_str(token).unwrap_or(Value::Null);
            assert_eq!(to_canonical_string(&v).ok().as_deref(), Some(token));
        }
    }
}
