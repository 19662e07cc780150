//! `config validate` and `config schema`: `memlog.json` checked against the JSON Schema
//! generated from [`ProjectConfig`], the check every command runs before using a project.

use super::{Ctx, ExitCode, Out};
use crate::error::{Error, Result};
use crate::project::{Project, ProjectConfig};
use serde::Serialize;
use serde_json::{Value, json};

#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Check memlog.json against its JSON Schema and name every invalid key; exit 1 if invalid
    Validate(ValidateArgs),
    /// Print the JSON Schema of memlog.json (docs/schemas/memlog.schema.json)
    Schema,
}

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: Option<String>,
    /// Every project of the workspace
    #[arg(long, conflicts_with = "project_name")]
    pub all: bool,
}

/// The JSON Schema of `memlog.json`, generated from the code.
pub fn schema() -> Value {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(ProjectConfig)).unwrap_or_else(|_| json!({}));
    if let Value::Object(m) = &mut schema {
        m.insert("title".into(), json!("memlog.json"));
        m.insert(
            "description".into(),
            json!("A memlog project's configuration: ai-memory/<project>/memlog.json"),
        );
    }
    schema
}

/// One invalid key of a configuration.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Problem {
    /// Dotted path of the key (`policies.write.low_confidence_warning`), empty for the whole file.
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

/// Every problem of a configuration's text: JSON syntax, then every key against the schema,
/// then what the schema cannot say (ticket patterns must be regular expressions).
pub fn problems(text: &str) -> Vec<Problem> {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return vec![Problem {
                key: String::new(),
                message: format!("not JSON: {e}"),
            }];
        }
    };
    let schema = schema();
    let mut out = Vec::new();
    check(&schema, &schema, &value, "", &mut out);
    if let Some(patterns) = value
        .pointer("/policies/write/ticket_patterns")
        .and_then(Value::as_array)
    {
        for (i, p) in patterns.iter().enumerate() {
            if let Some(p) = p.as_str()
                && let Err(e) = regex::Regex::new(p)
            {
                out.push(Problem {
                    key: format!("policies.write.ticket_patterns[{i}]"),
                    message: format!(
                        "not a regular expression: {}",
                        e.to_string().lines().last().unwrap_or_default()
                    ),
                });
            }
        }
    }
    if out.is_empty()
        && let Err(e) = serde_json::from_value::<ProjectConfig>(value)
    {
        out.push(Problem {
            key: String::new(),
            message: e.to_string(),
        });
    }
    out
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
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

/// Checks `v` against `schema` (the subset of JSON Schema that schemars generates: `$ref`,
/// `type`, `properties`, `required`, `additionalProperties`, `items`, `enum`, `anyOf`,
/// `minimum`, `maximum`), naming each problem by its key.
fn check(schema: &Value, root: &Value, v: &Value, path: &str, out: &mut Vec<Problem>) {
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
    if let Some(alternatives) = schema.get("anyOf").and_then(Value::as_array) {
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
        let min = schema.get("minimum").and_then(Value::as_f64);
        let max = schema.get("maximum").and_then(Value::as_f64);
        let out_of_range = min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m);
        if out_of_range {
            let range = match (min, max) {
                (Some(a), Some(b)) => format!("between {a} and {b}"),
                (Some(a), None) => format!("at least {a}"),
                (None, Some(b)) => format!("at most {b}"),
                (None, None) => String::new(),
            };
            problem(out, format!("must be {range}, not {n}"));
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
            let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
            for (key, value) in map {
                match props.and_then(|p| p.get(key)) {
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

thread_local! {
    static LOGGED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Refuses a project whose `memlog.json` is invalid, with the one message every command gives;
/// under `--debug`, logs the active configuration and the store's state the first time.
///
/// # Errors
/// [`Error::InvalidConfig`] naming every invalid key.
pub fn refuse_invalid(ctx: &Ctx, project: &Project) -> Result<()> {
    let path = project.config_path();
    let text = fs_err::read_to_string(&path)?;
    let found = problems(&text);
    if ctx.global.debug && !LOGGED.replace(true) {
        let store = project.store_dir();
        super::output::debug(&format!(
            "project `{}`: configuration {} ({}): {}",
            project.name,
            path.display(),
            if found.is_empty() { "valid" } else { "INVALID" },
            serde_json::from_str::<Value>(&text)
                .map(|v| v.to_string())
                .unwrap_or_else(|_| "(not JSON)".into())
        ));
        super::output::debug(&format!(
            "project `{}`: store {} ({})",
            project.name,
            store.display(),
            if store.is_dir() {
                format!("{} bytes on disk", dir_size(&store))
            } else {
                "absent: it is built from the log on first use".into()
            }
        ));
    }
    if found.is_empty() {
        return Ok(());
    }
    Err(Error::InvalidConfig {
        path,
        project: project.name.to_string(),
        problems: found.iter().map(ToString::to_string).collect(),
    })
}

/// Bytes of the files under `dir`, recursively (0 for what cannot be read).
pub fn dir_size(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(std::result::Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}

/// The projects a `[PROJECT] [--all]` command works on, none of them refused for its config.
pub fn chosen_projects(ctx: &Ctx, name: Option<&str>, all: bool) -> Result<Vec<Project>> {
    if all {
        let ws = ctx.workspace()?;
        let names = ws.projects()?;
        if names.is_empty() {
            return Err(Error::NoWorkspace {
                start: ws.root().to_path_buf(),
            });
        }
        names.into_iter().map(|n| Project::open(&ws, n)).collect()
    } else {
        Ok(vec![ctx.project_unchecked(name)?])
    }
}

pub fn run(ctx: &Ctx, command: ConfigCommand, out: &mut Out) -> Result<ExitCode> {
    match command {
        ConfigCommand::Schema => {
            out.line(serde_json::to_string_pretty(&schema()).unwrap_or_default());
            Ok(ExitCode::Ok)
        }
        ConfigCommand::Validate(args) => {
            let projects = chosen_projects(ctx, args.project.as_deref(), args.all)?;
            let mut reports = Vec::new();
            for p in &projects {
                let text = fs_err::read_to_string(p.config_path())?;
                let found = problems(&text);
                reports.push(json!({
                    "project": p.name.as_str(),
                    "file": p.config_path(),
                    "valid": found.is_empty(),
                    "problems": found,
                }));
            }
            let all_valid = reports.iter().all(|r| r["valid"] == true);
            if out.json {
                out.json(&reports);
            } else {
                for (p, r) in projects.iter().zip(&reports) {
                    let found: Vec<Problem> =
                        serde_json::from_value(r["problems"].clone()).unwrap_or_default();
                    if found.is_empty() {
                        out.line(format!("{}: valid", p.config_path().display()));
                    } else {
                        out.line(format!(
                            "{}: invalid ({} problem{})",
                            p.config_path().display(),
                            found.len(),
                            if found.len() == 1 { "" } else { "s" }
                        ));
                        for f in &found {
                            out.line(format!("  {f}"));
                        }
                    }
                }
            }
            Ok(if all_valid {
                ExitCode::Ok
            } else {
                ExitCode::Problems
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_config() -> Value {
        serde_json::to_value(ProjectConfig {
            name: "demo".into(),
            created_at: "2026-11-22T10:31:12.123Z".into(),
            format: 1,
            policies: crate::project::Policies::default(),
        })
        .unwrap_or_default()
    }

    #[test]
    fn the_default_configuration_is_valid() {
        assert_eq!(problems(&default_config().to_string()), Vec::new());
    }

    #[test]
    fn every_invalid_key_is_named() {
        let mut c = default_config();
        c["policies"]["write"]["low_confidence_warning"] = json!(1.5);
        c["policies"]["retrieval"]["max_results"] = json!("fifty");
        c["policies"]["lifecycle"]["decay"] = json!(true);
        c["policies"]["write"]["ticket_patterns"] = json!(["(unclosed"]);
        let found = problems(&c.to_string());
        let keys: Vec<&str> = found.iter().map(|p| p.key.as_str()).collect();
        assert!(
            keys.contains(&"policies.write.low_confidence_warning"),
            "{found:?}"
        );
        assert!(
            keys.contains(&"policies.retrieval.max_results"),
            "{found:?}"
        );
        assert!(keys.contains(&"policies.lifecycle.decay"), "{found:?}");
        assert!(
            keys.contains(&"policies.write.ticket_patterns[0]"),
            "{found:?}"
        );
        assert_eq!(found.len(), 4, "{found:?}");
    }

    #[test]
    fn a_missing_key_and_bad_json_are_named() {
        let mut c = default_config();
        if let Some(m) = c.as_object_mut() {
            m.remove("policies");
        }
        let found = problems(&c.to_string());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].key, "policies");
        let found = problems("{ not json");
        assert!(found[0].message.starts_with("not JSON"), "{found:?}");
    }
}
