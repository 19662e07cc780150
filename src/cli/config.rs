//! `config validate` and `config schema`: `memlog.json` checked against the JSON Schema
//! generated from [`ProjectConfig`], the check every command runs before using a project.

use super::{Ctx, ExitCode, Out};
use crate::error::{Error, Result};
use crate::project::{LifecyclePolicy, Project, ProjectConfig};
use serde_json::{Value, json};

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
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

/// The JSON Schema of `memlog.json`, generated from the code (once per process: every command
/// checks the configuration against it).
pub fn schema() -> Value {
    static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(generate_schema).clone()
}

fn generate_schema() -> Value {
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

pub use super::json_schema::Problem;

/// The configuration format this memlog reads and `init` writes.
pub const CONFIG_FORMAT: u64 = 1;

/// Every problem of the configuration text of project `name`: JSON syntax, then every key
/// against the schema, then what the schema cannot say (the format version, the name of the
/// project's directory, a creation time, kinds, ticket patterns that must be regular
/// expressions, the lifecycle policy's ranges).
pub fn problems(text: &str, name: &str) -> Vec<Problem> {
    // Problems quote keys and values of the file: a credential pasted into it (as a name, as a
    // key) is never echoed, by `config validate`, `health` or the refusal of any command.
    let mut found = unredacted_problems(text, name);
    for p in &mut found {
        p.key = crate::policy::validate::redact_secrets(&p.key);
        p.message = crate::policy::validate::redact_secrets(&p.message);
    }
    found
}

fn unredacted_problems(text: &str, name: &str) -> Vec<Problem> {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return vec![Problem {
                key: String::new(),
                message: format!("not JSON: {e}"),
            }];
        }
    };
    let mut out = super::json_schema::problems(&schema(), &value);
    out.extend(beyond_schema(&value, name));
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
    // The ranges the schema cannot state (a decay rate above 0, a table of scores from 0 to
    // 1, ...): what every command refuses must be refused here too, whatever else is wrong.
    if let Some(lifecycle) = value.pointer("/policies/lifecycle")
        && let Ok(policy) = serde_json::from_value::<LifecyclePolicy>(lifecycle.clone())
    {
        for problem in policy.problems() {
            let (key, message) = problem.split_once(' ').unwrap_or(("", &problem));
            out.push(Problem {
                key: key.to_owned(),
                message: message.to_owned(),
            });
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

/// The checks of values the schema takes by type only.
fn beyond_schema(value: &Value, name: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut problem = |key: &str, message: String| {
        out.push(Problem {
            key: key.to_owned(),
            message,
        });
    };
    if let Some(format) = value.get("format").and_then(Value::as_u64)
        && format != CONFIG_FORMAT
    {
        problem(
            "format",
            format!(
                "format {format} is not the one this memlog reads ({CONFIG_FORMAT}): a newer \
                 memlog wrote it, so upgrade memlog; or set it back to {CONFIG_FORMAT}"
            ),
        );
    }
    if let Some(given) = value.get("name").and_then(Value::as_str)
        && given != name
    {
        problem(
            "name",
            format!(
                "is `{}`, but the project's directory is ai-memory/{name}/: set it to `{name}`",
                given.escape_debug()
            ),
        );
    }
    if let Some(at) = value.get("created_at").and_then(Value::as_str)
        && let Err(e) = crate::clock::normalize_time(at)
    {
        problem("created_at", format!("not a time: {e}"));
    }
    if let Some(kinds) = value
        .pointer("/policies/write/strong_evidence_kinds")
        .and_then(Value::as_array)
    {
        for (i, k) in kinds.iter().enumerate() {
            if let Some(k) = k.as_str()
                && projections::Kind::parse(k).is_none()
            {
                problem(
                    &format!("policies.write.strong_evidence_kinds[{i}]"),
                    format!(
                        "`{}` is not a kind; use {}",
                        k.escape_debug(),
                        projections::Kind::choices()
                    ),
                );
            }
        }
    }
    out
}

thread_local! {
    static LOGGED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The file under `.memlog/` that names the configuration last found valid (memlog's version
/// and a hash of `memlog.json`).
const VALID_CONFIG_FILE: &str = "config-valid";

/// Refuses a project whose `memlog.json` is invalid, with the one message every command gives;
/// under `--debug`, logs the active configuration and the store's state the first time.
///
/// # Errors
/// [`Error::InvalidConfig`] naming every invalid key.
pub fn refuse_invalid(ctx: &Ctx, project: &Project) -> Result<()> {
    let path = project.config_path();
    let text = fs_err::read_to_string(&path)?;
    // Checking against the schema means generating it (a tenth of a short command's time):
    // a configuration found valid is remembered, by content, in the project's local state.
    let seen = project.state_dir().join(VALID_CONFIG_FILE);
    let key = format!(
        "{} {}",
        env!("CARGO_PKG_VERSION"),
        blake3::hash(text.as_bytes()).to_hex()
    );
    if !ctx.global.debug && std::fs::read_to_string(&seen).is_ok_and(|k| k == key) {
        return Ok(());
    }
    let found = problems(&text, project.name.as_str());
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
        // Best effort: without it the next command checks again.
        if project.state_dir().is_dir() {
            let _ = crate::log::durable::write_atomic(&seen, key.as_bytes());
        }
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
            if out.json {
                out.json(&schema());
            } else {
                out.line(serde_json::to_string_pretty(&schema()).unwrap_or_default());
            }
            Ok(ExitCode::Ok)
        }
        ConfigCommand::Validate(args) => {
            let projects = chosen_projects(ctx, args.project.as_deref(), args.all)?;
            let mut reports = Vec::new();
            for p in &projects {
                let text = fs_err::read_to_string(p.config_path())?;
                let found = problems(&text, p.name.as_str());
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
        assert_eq!(problems(&default_config().to_string(), "demo"), Vec::new());
    }

    /// Values of the right type that still mean nothing: a format this memlog does not read,
    /// a name that is not the project's, a creation time that is not one, a kind that is none,
    /// a default query size beyond what a query returns.
    #[test]
    fn values_the_schema_takes_by_type_are_checked_too() {
        let mut c = default_config();
        c["format"] = json!(2);
        c["name"] = json!("../../etc");
        c["created_at"] = json!("yesterday");
        c["policies"]["write"]["strong_evidence_kinds"] = json!(["decision", "nope"]);
        c["policies"]["retrieval"]["max_results"] = json!(0);
        let found = problems(&c.to_string(), "demo");
        let keys: Vec<&str> = found.iter().map(|p| p.key.as_str()).collect();
        for key in [
            "format",
            "name",
            "created_at",
            "policies.write.strong_evidence_kinds[1]",
            "policies.retrieval.max_results",
        ] {
            assert!(keys.contains(&key), "{key}: {found:?}");
        }
        assert_eq!(found.len(), 5, "{found:?}");
    }

    #[test]
    fn every_invalid_key_is_named() {
        let mut c = default_config();
        c["policies"]["write"]["low_confidence_warning"] = json!(1.5);
        c["policies"]["retrieval"]["max_results"] = json!("fifty");
        c["policies"]["lifecycle"]["decay"] = json!(true);
        c["policies"]["write"]["ticket_patterns"] = json!(["(unclosed"]);
        let found = problems(&c.to_string(), "demo");
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

    /// The lifecycle policy's own checks report every bad value, beside the other keys'
    /// problems; an integer too large for its key is named by its key.
    #[test]
    fn lifecycle_problems_are_all_named_beside_the_others() {
        let mut c = default_config();
        c["policies"]["lifecycle"]["decay"] = json!({"lambda": -1});
        c["policies"]["lifecycle"]["default_ttl_days"] = json!(0);
        c["policies"]["lifecycle"]["batch_size"] = json!(0);
        c["policies"]["write"]["ticket_patterns"] = json!(["(unclosed"]);
        for too_large in [json!(1_000_000_000_000_000_000_u64), json!(1e18)] {
            c["policies"]["retrieval"]["max_results"] = too_large;
            let found = problems(&c.to_string(), "demo");
            let keys: Vec<&str> = found.iter().map(|p| p.key.as_str()).collect();
            assert_eq!(
                keys,
                [
                    "policies.retrieval.max_results",
                    "policies.write.ticket_patterns[0]",
                    "policies.lifecycle.decay.lambda",
                    "policies.lifecycle.default_ttl_days",
                    "policies.lifecycle.batch_size",
                ],
                "{found:?}"
            );
        }
        c["policies"]["retrieval"]["max_results"] = json!(50);
        c["policies"]["retrieval"]["expiry_warning_days"] = json!(4_294_967_296_u64);
        let found = problems(&c.to_string(), "demo");
        assert_eq!(found[0].key, "policies.retrieval.expiry_warning_days");
        assert_eq!(
            found[0].message, "must be between 0 and 4294967295, not 4294967296",
            "{found:?}"
        );
    }

    #[test]
    fn a_missing_key_and_bad_json_are_named() {
        let mut c = default_config();
        if let Some(m) = c.as_object_mut() {
            m.remove("policies");
        }
        let found = problems(&c.to_string(), "demo");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].key, "policies");
        let found = problems("{ not json", "demo");
        assert!(found[0].message.starts_with("not JSON"), "{found:?}");
    }
}

#[cfg(test)]
mod laws {
    use super::problems;
    use proptest::prelude::*;
    use serde_json::json;

    fn config(low: f64, min: f64, decaying: f64, max_results: u32) -> serde_json::Value {
        let mut c = serde_json::to_value(crate::project::ProjectConfig {
            name: "demo".into(),
            created_at: "2026-11-22T10:31:12.123Z".into(),
            format: 1,
            policies: crate::project::Policies::default(),
        })
        .unwrap_or_default();
        c["policies"]["write"]["low_confidence_warning"] = json!(low);
        c["policies"]["retrieval"]["min_confidence"] = json!(min);
        c["policies"]["lifecycle"]["decaying_threshold"] = json!(decaying);
        c["policies"]["retrieval"]["max_results"] = json!(max_results);
        c
    }

    proptest! {
        /// Any configuration within the documented ranges is valid; a key that the schema
        /// does not have is always named, wherever it is put.
        #[test]
        fn valid_ranges_pass_and_unknown_keys_are_named(
            low in 0.0f64..=1.0, min in 0.0f64..=1.0, decaying in 0.0f64..=1.0,
            max_results in 1u32..=50, key in "[a-z]{3,10}_x", at in 0usize..4,
        ) {
            let mut c = config(low, min, decaying, max_results);
            prop_assert_eq!(problems(&c.to_string(), "demo"), Vec::new());
            let (object, path) = match at {
                0 => (&mut c, key.clone()),
                1 => (&mut c["policies"], format!("policies.{key}")),
                2 => (&mut c["policies"]["write"], format!("policies.write.{key}")),
                _ => (&mut c["policies"]["lifecycle"], format!("policies.lifecycle.{key}")),
            };
            object[key.as_str()] = json!(1);
            let found = problems(&c.to_string(), "demo");
            prop_assert_eq!(found.len(), 1);
            prop_assert_eq!(&found[0].key, &path);
        }

        /// A confidence threshold outside 0..1 is named with its range.
        #[test]
        fn out_of_range_thresholds_are_named(low in prop_oneof![-10.0f64..-0.001, 1.001f64..10.0]) {
            let c = config(low, 0.5, 0.5, 50);
            let found = problems(&c.to_string(), "demo");
            prop_assert_eq!(found.len(), 1);
            prop_assert_eq!(found[0].key.as_str(), "policies.write.low_confidence_warning");
            prop_assert!(found[0].message.contains("between 0 and 1"));
        }
    }
}
