//! JSON input read strictly: an object that states a key twice is refused. serde_json keeps
//! the last of two equal keys, so `{"operation":"create","operation":"deprecate"}` would be
//! taken for a deprecate whatever the writer meant.

use serde::de::{Deserialize, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A JSON value whose objects state each key once.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Strict::deserialize(d).map(|s| s.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let Strict(v) = map.next_value()?;
            if out.contains_key(&key) {
                let shown: String = key.chars().take(64).collect();
                return Err(A::Error::custom(format!(
                    "the key `{}` is stated twice in one object; keep one",
                    shown.escape_debug()
                )));
            }
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Parses `bytes` as one JSON value (surrounding whitespace allowed), refusing duplicate keys.
///
/// # Errors
/// serde_json's error for malformed JSON, or a duplicate key with its line and column.
pub fn from_slice(bytes: &[u8]) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let Strict(value) = Strict::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// serde_json's message for `e`, with a lone UTF-16 surrogate named as such: serde_json calls
/// `"\ud800b"` an "unexpected end of hex escape" (and `"\udc00"` a "lone leading surrogate"),
/// though the escape is complete and the problem is the missing other half of the pair.
pub fn message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    for serde_says in [
        "unexpected end of hex escape",
        "lone leading surrogate in hex escape",
    ] {
        if let Some(rest) = text.strip_prefix(serde_says) {
            return format!(
                "a lone UTF-16 surrogate (a `\\u` escape from `\\ud800` to `\\udfff` without \
                 the other half of its pair), which is no character: write the character \
                 itself, or escape it as its full pair (`\\ud83d\\ude00`), or remove the \
                 escape{rest}"
            );
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::from_slice;
    use proptest::prelude::*;

    /// A lone surrogate is named as such, where serde_json blames the hex escape; the place
    /// stays.
    #[test]
    fn a_lone_surrogate_is_named() {
        for input in [&br#"{"a":"x\ud800y"}"#[..], br#"{"a":"x\udc00y"}"#] {
            let e = from_slice(input)
                .err()
                .unwrap_or_else(|| panic!("{input:?} parsed"));
            let m = super::message(&e);
            assert!(m.starts_with("a lone UTF-16 surrogate"), "{m}");
            assert!(
                m.ends_with(&format!(" at line 1 column {}", e.column())),
                "{m}"
            );
        }
        let e = from_slice(b"{").err().unwrap_or_else(|| panic!("parsed"));
        assert_eq!(super::message(&e), e.to_string());
    }

    #[test]
    fn a_key_stated_twice_is_refused() {
        let e = from_slice(br#"{"operation":"create","operation":"deprecate"}"#)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("`operation` is stated twice"), "{e}");
        assert!(from_slice(br#"{"a":{"b":1,"b":2}}"#).is_err());
        assert!(from_slice(br#"[{"a":1},{"a":2}]"#).is_ok());
        assert!(from_slice(b"{} x").is_err());
    }

    fn json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<u64>().prop_map(serde_json::Value::from),
            (-1e300f64..1e300).prop_map(serde_json::Value::from),
            "\\PC{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                prop::collection::btree_map("\\PC{0,4}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Input without duplicate keys reads exactly as serde_json reads it.
        #[test]
        fn reads_what_serde_json_reads(v in json()) {
            let text = v.to_string();
            prop_assert_eq!(from_slice(text.as_bytes()).ok(), serde_json::from_str(&text).ok());
        }
    }
}
