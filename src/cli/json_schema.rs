//! Checking a JSON value against a JSON Schema: the subset schemars generates and the command
//! schemas of docs/schemas/ use (`$ref`, `type`, `const`, `enum`, `properties`, `required`,
//! `additionalProperties` (`false`, or the schema of the other keys' values), `items`, `anyOf`, `oneOf`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`), each problem named by its key.

use serde::Serialize;
use serde_json::{Value, json};

/// One value that does not match its schema.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Problem {
    /// Dotted path of the key (`policies.write.low_confidence_warning`), empty for the whole value.
    pub key: String,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "`{}`: {}", self.key, self.message)
        }
    }
}

/// Every problem of `value` against `schema` (none when it matches).
pub fn problems(schema: &Value, value: &Value) -> Vec<Problem> {
    let mut out = Vec::new();
    check(schema, schema, value, "", &mut out);
    out
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// What a value of the wrong type is: a number is shown as it is (`1.5`, where a whole number
/// is wanted: "not a number" would say the opposite of what it is).
fn type_name(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(n) => n.to_string(),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

fn is_type(v: &Value, t: &str) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64(),
        "string" => v.is_string(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => true,
    }
}

/// The values of an integer `format` (`uint32`, `int64`, ...: what the Rust type holds).
fn integer_range(format: &str) -> Option<(i128, i128)> {
    let (signed, bits) = match format.strip_prefix("uint") {
        Some(bits) => (false, bits),
        None => (true, format.strip_prefix("int")?),
    };
    let bits: u32 = bits
        .parse()
        .ok()
        .filter(|b| matches!(b, 8 | 16 | 32 | 64))?;
    Some(if signed {
        (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    } else {
        (0, (1 << bits) - 1)
    })
}

/// Checks `v` against `schema` (the subset of JSON Schema that schemars generates: `$ref`,
/// `type`, `properties`, `required`, `additionalProperties`, `items`, `enum`, `anyOf`,
/// `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, and the range of an integer
/// `format`), naming each problem by its key.
pub(super) fn check(schema: &Value, root: &Value, v: &Value, path: &str, out: &mut Vec<Problem>) {
    let problem = |out: &mut Vec<Problem>, message: String| {
        out.push(Problem {
            key: path.to_owned(),
            message,
        });
    };
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let target = r
            .strip_prefix('#')
            .and_then(|p| root.pointer(p))
            .unwrap_or(&Value::Null);
        check(target, root, v, path, out);
        return;
    }
    if let Some(c) = schema.get("const")
        && c != v
    {
        problem(out, format!("must be {c}, not {v}"));
        return;
    }
    if let Some(alternatives) = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array)
    {
        let mut first = None;
        for alt in alternatives {
            let mut errs = Vec::new();
            check(alt, root, v, path, &mut errs);
            if errs.is_empty() {
                return;
            }
            if first.is_none() && alt.get("type") != Some(&json!("null")) {
                first = Some(errs);
            }
        }
        out.extend(first.unwrap_or_default());
        return;
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| is_type(v, t)) {
            let wanted: Vec<String> = types
                .iter()
                .map(|t| match *t {
                    "integer" => "a whole number".to_owned(),
                    "object" => "an object".to_owned(),
                    "array" => "an array".to_owned(),
                    other => format!("a {other}"),
                })
                .collect();
            problem(
                out,
                format!("must be {}, not {}", wanted.join(" or "), type_name(v)),
            );
            return;
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(v)
    {
        problem(
            out,
            format!(
                "must be one of {}",
                allowed
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    if let Some(n) = v.as_f64() {
        let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
        let (min, max) = (bound("minimum"), bound("maximum"));
        let (above, below) = (bound("exclusiveMinimum"), bound("exclusiveMaximum"));
        let out_of_range = min.is_some_and(|m| n < m)
            || max.is_some_and(|m| n > m)
            || above.is_some_and(|m| n <= m)
            || below.is_some_and(|m| n >= m);
        if out_of_range {
            let range = match (min, max) {
                (Some(a), Some(b)) => format!("between {a} and {b}"),
                _ => [
                    min.map(|a| format!("at least {a}")),
                    above.map(|a| format!("greater than {a}")),
                    max.map(|b| format!("at most {b}")),
                    below.map(|b| format!("less than {b}")),
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" and "),
            };
            problem(out, format!("must be {range}, not {n}"));
        } else if let Some((lo, hi)) = schema
            .get("format")
            .and_then(Value::as_str)
            .and_then(integer_range)
            && let Some(i) = v.as_i64().map(i128::from).or(v.as_u64().map(i128::from))
            && !(lo..=hi).contains(&i)
        {
            problem(out, format!("must be between {lo} and {hi}, not {i}"));
        }
    }
    match v {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            if let Some(required) = schema.get("required").and_then(Value::as_array) {
                for key in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(key) {
                        out.push(Problem {
                            key: join(path, key),
                            message: "missing (required)".into(),
                        });
                    }
                }
            }
            let others = schema.get("additionalProperties");
            let closed = others == Some(&Value::Bool(false));
            for (key, value) in map {
                match props
                    .and_then(|p| p.get(key))
                    .or_else(|| others.filter(|o| o.is_object()))
                {
                    Some(sub) => check(sub, root, value, &join(path, key), out),
                    None if closed => {
                        let mut known: Vec<&String> =
                            props.map(|p| p.keys().collect()).unwrap_or_default();
                        known.sort();
                        out.push(Problem {
                            key: join(path, key),
                            message: format!(
                                "unknown key (the keys here are {})",
                                known
                                    .iter()
                                    .map(|k| k.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        });
                    }
                    None => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item_schema, root, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}
