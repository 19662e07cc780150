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
                message: crate::project::conflict_markers(text)
                    .map_or_else(|| format!("not JSON: {e}"), |m| format!("not JSON: {m}")),
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
    // What the schema cannot state (a decay table whose scores rise, a TTL for a kind that is
    // none, ...): what every command refuses must be refused here too, whatever else is wrong.
    if let Some(lifecycle) = value.pointer("/policies/lifecycle") {
        let more = lifecycle_problems(lifecycle, &out);
        out.extend(more);
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

/// Where the lifecycle policy's keys are in `memlog.json`.
const LIFECYCLE_KEY: &str = "policies.lifecycle";

/// The problems of the lifecycle policy `lifecycle` (its `memlog.json` object) that `found`
/// does not name yet. A key that `found` already names is checked at its default instead: a
/// value of the wrong type (a negative or fractional number of days) makes the policy
/// unreadable, and must not hide the problems of the other keys. A key named in `found`, or
/// inside one named there, is not named again.
fn lifecycle_problems(lifecycle: &Value, found: &[Problem]) -> Vec<Problem> {
    let failed: Vec<&str> = found
        .iter()
        .filter_map(|p| key_within(&p.key, LIFECYCLE_KEY))
        .collect();
    // The whole object is of the wrong type: there is nothing to check inside it.
    if failed.contains(&"") {
        return Vec::new();
    }
    let defaults =
        serde_json::to_value(crate::project::Policies::default().lifecycle).unwrap_or(Value::Null);
    let mut patched = lifecycle.clone();
    for key in failed {
        at_default(&mut patched, &defaults, &pointer_of(key));
    }
    // A value the defaults cannot stand in for (inside a decay table): the schema's problems
    // are all there is to say.
    let Ok(policy) = serde_json::from_value::<LifecyclePolicy>(patched) else {
        return Vec::new();
    };
    policy
        .problems()
        .into_iter()
        .map(|problem| {
            let (key, message) = problem.split_once(' ').unwrap_or(("", &problem));
            Problem {
                key: key.to_owned(),
                message: message.to_owned(),
            }
        })
        .filter(|p| !found.iter().any(|f| key_within(&p.key, &f.key).is_some()))
        .collect()
}

/// The part of the dotted key `key` inside `outer` (`""` for `outer` itself), if it is inside.
fn key_within<'k>(key: &'k str, outer: &str) -> Option<&'k str> {
    let rest = key.strip_prefix(outer)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('.')
            .or_else(|| rest.starts_with('[').then_some(rest))
    }
}

/// The JSON pointer of a dotted key (`decay.steps[1].score` is `/decay/steps/1/score`).
fn pointer_of(key: &str) -> String {
    let mut pointer = String::new();
    for part in key.split('.').filter(|p| !p.is_empty()) {
        let mut pieces = part.split('[');
        if let Some(name) = pieces.next().filter(|n| !n.is_empty()) {
            pointer.push('/');
            pointer.push_str(&name.replace('~', "~0").replace('/', "~1"));
        }
        for index in pieces {
            pointer.push('/');
            pointer.push_str(index.trim_end_matches(']'));
        }
    }
    pointer
}

/// Puts the value of `defaults` at `pointer` into `value` (added when missing), or takes the
/// key out of `value` when the defaults have none (an unknown key, an optional one).
fn at_default(value: &mut Value, defaults: &Value, pointer: &str) {
    let Some((parent, name)) = pointer.rsplit_once('/') else {
        return;
    };
    let name = name.replace("~1", "/").replace("~0", "~");
    let default = defaults.pointer(pointer).cloned();
    match (value.pointer_mut(parent), default) {
        (Some(Value::Object(map)), Some(d)) => {
            map.insert(name, d);
        }
        (Some(Value::Object(map)), None) => {
            map.remove(&name);
        }
        _ => {}
    }
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
                crate::safe_text::clip(&given.escape_debug().to_string(), 80)
            ),
        );
    }
    if let Some(at) = value.get("created_at").and_then(Value::as_str)
        && let Err(e) = crate::clock::normalize_time(at)
    {
        problem("created_at", format!("not a time: {e}"));
    }
    if value.pointer("/policies/write/require_evidence_for_active") == Some(&Value::Bool(false)) {
        problem(
            "policies.write.require_evidence_for_active",
            "is false, but an active entry always needs at least one evidence object (a draft \
             needs none: write entries without evidence as drafts): set it to true"
                .to_owned(),
        );
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

    /// Active entries need evidence whatever the configuration says: `false` is refused, not
    /// silently ignored.
    #[test]
    fn evidence_for_active_entries_cannot_be_turned_off() {
        let mut c = default_config();
        c["policies"]["write"]["require_evidence_for_active"] = json!(false);
        let found = problems(&c.to_string(), "demo");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].key, "policies.write.require_evidence_for_active");
        assert!(found[0].message.contains("set it to true"), "{found:?}");
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

    /// Every bad value of the lifecycle policy is reported beside the other keys' problems (by
    /// the schema, which states the policy's ranges, in the order of the keys); an integer too
    /// large for its key is named by its key.
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
                    "policies.lifecycle.batch_size",
                    "policies.lifecycle.decay.lambda",
                    "policies.lifecycle.default_ttl_days",
                    "policies.retrieval.max_results",
                    "policies.write.ticket_patterns[0]",
                ],
                "{found:?}"
            );
        }
        c["policies"]["retrieval"]["max_results"] = json!(50);
        c["policies"]["retrieval"]["expiry_warning_days"] = json!(4_294_967_296_u64);
        let found = problems(&c.to_string(), "demo");
        let too_large = found
            .iter()
            .find(|p| p.key == "policies.retrieval.expiry_warning_days");
        assert_eq!(
            too_large.map(|p| p.message.as_str()),
            Some("must be between 0 and 4294967295, not 4294967296"),
            "{found:?}"
        );
    }

    /// A value of the wrong type hides none of the lifecycle policy's other problems, and a
    /// value that both the schema and the policy's own checks refuse is named once.
    #[test]
    fn every_lifecycle_problem_is_named_once() {
        let mut c = default_config();
        let l = &mut c["policies"]["lifecycle"];
        l["grace_period_days"] = json!(-1);
        l["batch_size"] = json!(0);
        l["archive_retention_days"] = json!(0);
        l["decaying_threshold"] = json!(1.5);
        l["ttl_days"] = json!({"fact": 3});
        let found: Vec<String> = problems(&c.to_string(), "demo")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found[..4],
            [
                "`policies.lifecycle.archive_retention_days`: must be at least 1, not 0",
                "`policies.lifecycle.batch_size`: must be at least 1, not 0",
                "`policies.lifecycle.decaying_threshold`: must be between 0 and 1, not 1.5",
                "`policies.lifecycle.grace_period_days`: must be at least 0, not -1",
            ],
            "{found:#?}"
        );
        assert!(
            found[4].starts_with("`policies.lifecycle.ttl_days`: has unknown kind `fact`"),
            "{found:#?}"
        );
        assert_eq!(found.len(), 5, "{found:#?}");
    }

    /// A value out of range is told the least value memlog takes, and a fraction where a whole
    /// number is wanted is shown as it is.
    #[test]
    fn range_messages_say_what_is_accepted() {
        for (key, value, message) in [
            (
                "decay_half_life_days",
                json!(-3),
                "must be at least 1, not -3",
            ),
            (
                "decay_half_life_days",
                json!(0),
                "must be at least 1, not 0",
            ),
            (
                "grace_period_days",
                json!(1.5),
                "must be a whole number, not 1.5",
            ),
            (
                "decay",
                json!({"lambda": 0}),
                "must be greater than 0, not 0",
            ),
        ] {
            let mut c = default_config();
            c["policies"]["lifecycle"][key] = value;
            let found = problems(&c.to_string(), "demo");
            assert_eq!(found.len(), 1, "{key}: {found:?}");
            assert_eq!(found[0].message, message, "{key}: {found:?}");
        }
    }

    /// The shipped schema takes exactly the numbers memlog takes, for every number of the
    /// lifecycle policy: a schema that took a zero memlog refuses would tell an editor that a
    /// file every command refuses is fine.
    #[test]
    fn the_schema_takes_the_numbers_the_lifecycle_policy_takes() {
        let mut c = default_config();
        let l = &mut c["policies"]["lifecycle"];
        l["ttl_days"] = json!({"decision": 30});
        l["decay"] = json!({
            "lambda": 0.1,
            "period_days": 60,
            "steps": [{"after_days": 10, "score": 0.5}],
            "table": [{"days": 10, "score": 0.5}],
        });
        let mut paths = Vec::new();
        leaves(&c["policies"]["lifecycle"], String::new(), &mut paths);
        assert!(paths.len() > 20, "{paths:?}");
        for path in paths {
            // Whole numbers as JSON writes them (`0`, not `0.0`), which whole-number keys take.
            for probe in [
                json!(-1),
                json!(-0.5),
                json!(0),
                json!(0.5),
                json!(1),
                json!(1.5),
                json!(2),
            ] {
                let mut c = c.clone();
                if let Some(v) = c.pointer_mut(&format!("/policies/lifecycle{path}")) {
                    *v = probe.clone();
                }
                let by_schema = super::super::json_schema::problems(&schema(), &c).is_empty();
                let by_policy = serde_json::from_value::<ProjectConfig>(c)
                    .is_ok_and(|p| p.policies.lifecycle.problems().is_empty());
                assert_eq!(by_schema, by_policy, "{path} = {probe}");
            }
        }
    }

    /// The JSON pointers of the numbers in `v`.
    fn leaves(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Number(_) => out.push(at),
            Value::Object(m) => {
                for (k, v) in m {
                    leaves(v, format!("{at}/{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    leaves(v, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
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
