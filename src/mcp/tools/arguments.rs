//! Reading a tool's arguments. A wrong argument is named by its JSON path (`limit`,
//! `evidence[0].uri`) with what it must be, and its value is never repeated: an agent may have
//! put a credential where it does not belong, and serde's own messages quote the value.

use crate::policy::secret_scan::scan_text;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;

/// An argument a tool cannot take.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ArgError {
    /// JSON path of the argument, when it can be named.
    pub field: Option<String>,
    /// What is wrong: `type`, `enum`, `required`, `unknown_argument` or `invalid`.
    pub constraint: &'static str,
    pub message: String,
}

impl ArgError {
    /// `field` is not valid, for the reason `message` gives (which must not quote the value).
    pub fn invalid(field: &str, message: &str) -> Self {
        Self {
            field: Some(field.to_owned()),
            constraint: "invalid",
            message: format!("`{field}`: {message}"),
        }
    }
}

/// Parses a tool's arguments.
pub fn parse<T: DeserializeOwned + JsonSchema>(v: Value) -> Result<T, ArgError> {
    serde_path_to_error::deserialize(&v).map_err(|e| describe::<T>(&v, &e))
}

/// Parses the arguments `T`, which flattens `F` (`#[serde(flatten)]`). serde reads a flattened
/// struct from a buffered copy of the arguments, which carries no path, so an error inside `F`
/// is located by reading `F` alone (it takes the arguments it does not know).
pub fn parse_flat<T, F>(v: Value) -> Result<T, ArgError>
where
    T: DeserializeOwned + JsonSchema,
    F: DeserializeOwned + JsonSchema,
{
    let e = match serde_path_to_error::deserialize::<_, T>(&v) {
        Ok(t) => return Ok(t),
        Err(e) => e,
    };
    if e.path().iter().next().is_none()
        && let Err(inner) = serde_path_to_error::deserialize::<_, F>(&v)
        && inner.path().iter().next().is_some()
    {
        return Err(describe::<F>(&v, &inner));
    }
    Err(describe::<T>(&v, &e))
}

/// `segments` as a JSON path: `evidence[0].uri`.
fn render(segments: &[Segment]) -> String {
    let mut out = String::new();
    for s in segments {
        match s {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Unknown => out.push_str(if out.is_empty() { "?" } else { ".?" }),
        }
    }
    out
}

/// The value at `segments` in `args`.
fn at<'a>(args: &'a Value, segments: &[Segment]) -> Option<&'a Value> {
    segments.iter().try_fold(args, |v, s| match s {
        Segment::Seq { index } => v.get(index),
        Segment::Map { key } => v.get(key),
        _ => None,
    })
}

/// What kind of JSON value `v` is (never the value itself).
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number with a fraction",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// serde's name of what it expected, in JSON's terms.
fn in_json_terms(expected: &str) -> String {
    let whole = |lo: i128, hi: i128| format!("a whole number from {lo} to {hi}");
    match expected {
        "u8" => whole(0, u8::MAX.into()),
        "u16" => whole(0, u16::MAX.into()),
        "u32" => whole(0, u32::MAX.into()),
        "u64" | "usize" => whole(0, u64::MAX.into()),
        "i8" => whole(i8::MIN.into(), i8::MAX.into()),
        "i16" => whole(i16::MIN.into(), i16::MAX.into()),
        "i32" => whole(i32::MIN.into(), i32::MAX.into()),
        "i64" | "isize" => whole(i64::MIN.into(), i64::MAX.into()),
        "f32" | "f64" => "a number".into(),
        "a sequence" => "an array".into(),
        "a map" => "an object".into(),
        s if s.starts_with("struct ") => "an object".into(),
        s => s.to_owned(),
    }
}

/// The schema `s` of `root` stands for: through `$ref`s, and the non-null alternative of an
/// optional value.
fn resolve<'a>(root: &'a Value, mut s: &'a Value) -> Option<&'a Value> {
    for _ in 0..8 {
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            s = root.pointer(r.strip_prefix('#')?)?;
        } else if let Some(alts) = s.get("anyOf").and_then(Value::as_array)
            && let Some(alt) = alts.iter().find(|a| a.get("type") != Some(&"null".into()))
        {
            s = alt;
        } else {
            break;
        }
    }
    Some(s)
}

/// The values the schema of `T` allows at `segments`, as `` `json`, `prompt` ``.
fn allowed_values<T: JsonSchema>(segments: &[Segment]) -> Option<String> {
    let root = serde_json::to_value(schemars::schema_for!(T)).ok()?;
    let mut schema = resolve(&root, &root)?;
    for seg in segments {
        schema = match seg {
            Segment::Map { key } => resolve(&root, schema.get("properties")?.get(key)?)?,
            Segment::Seq { .. } => resolve(&root, schema.get("items")?)?,
            _ => return None,
        };
    }
    let values: Vec<String> = match schema.get("enum").and_then(Value::as_array) {
        Some(values) => values
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        None => schema
            .get("oneOf")?
            .as_array()?
            .iter()
            .filter_map(|alt| alt.get("const")?.as_str().map(String::from))
            .collect(),
    };
    (!values.is_empty()).then(|| {
        values
            .iter()
            .map(|v| format!("`{v}`"))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// The error `e` of reading `args` as `T`, without the value serde's message quotes.
fn describe<T: JsonSchema>(
    args: &Value,
    e: &serde_path_to_error::Error<serde_json::Error>,
) -> ArgError {
    let mut segments: Vec<Segment> = e.path().iter().cloned().collect();
    let raw = e.inner().to_string();
    // What follows the last ", expected " comes from memlog's own types (a type name, field or
    // variant names); what comes before it may quote the value.
    let expected = raw
        .rfind(", expected ")
        .map(|i| &raw[i + ", expected ".len()..]);
    if let Some(name) = raw
        .strip_prefix("missing field `")
        .and_then(|r| r.strip_suffix('`'))
    {
        segments.push(Segment::Map {
            key: name.to_owned(),
        });
        let field = render(&segments);
        return ArgError {
            message: format!("`{field}` is missing (required)"),
            field: Some(field),
            constraint: "required",
        };
    }
    if raw.starts_with("unknown field `") {
        let named =
            matches!(segments.last(), Some(Segment::Map { key }) if scan_text(key).is_empty());
        if !named {
            segments.pop();
        }
        let field = render(&segments);
        let allowed = expected.map_or(String::new(), |x| {
            format!(
                "; the arguments there are {}",
                x.trim_start_matches("one of ")
            )
        });
        return ArgError {
            message: match (named, field.is_empty()) {
                (true, _) => format!("unknown argument `{field}`{allowed}"),
                (false, true) => format!("an unknown argument{allowed}"),
                (false, false) => format!("an unknown argument in `{field}`{allowed}"),
            },
            field: (!field.is_empty()).then_some(field),
            constraint: "unknown_argument",
        };
    }
    let field = render(&segments);
    let name = if field.is_empty() {
        "the arguments".to_owned()
    } else {
        format!("`{field}`")
    };
    let enum_values = || allowed_values::<T>(&segments);
    let (constraint, message) = if raw.starts_with("unknown variant `") {
        let values = enum_values()
            .or_else(|| expected.map(|x| x.trim_start_matches("one of ").to_owned()))
            .unwrap_or_default();
        ("enum", format!("{name} must be one of {values}"))
    } else if let Some(values) = enum_values() {
        ("enum", format!("{name} must be one of {values}"))
    } else if let Some(x) = expected
        && raw.starts_with("invalid type: ")
    {
        let given = at(args, &segments).map_or(String::new(), |v| format!(", not {}", kind(v)));
        (
            "type",
            format!("{name} must be {}{given}", in_json_terms(x)),
        )
    } else if let Some(x) = expected {
        ("invalid", format!("{name} must be {}", in_json_terms(x)))
    } else {
        ("invalid", format!("{name} is not valid"))
    };
    ArgError {
        field: (!field.is_empty()).then_some(field),
        constraint,
        message,
    }
}
