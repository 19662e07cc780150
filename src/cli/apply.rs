//! `apply`: Memory_Update objects, arrays of them, and AgentResults.

use super::write_ops::print_written;
use super::{Ctx, ExitCode, Out};
use crate::error::{Error, Result};
use crate::project::Project;
use crate::validate::{EntryInput, Invalid, check_create, check_reason, entry_input_from_json};
use crate::workspace::ProjectName;
use crate::writer::{Change, write};
use serde::Serialize;
use serde_json::{Value, json};
use std::io::Read;

#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// [PROJECT] [FILE|-]: the project (default as for `add`) and the JSON file (default: stdin)
    #[arg(num_args = 0..=2, value_name = "PROJECT|FILE")]
    pub args: Vec<String>,
}

/// Largest input accepted, so a runaway pipe cannot exhaust memory.
const MAX_INPUT_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Serialize)]
struct Skipped {
    index: usize,
    operation: Option<String>,
    code: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    problems: Vec<crate::validate::Problem>,
}

pub(super) fn read_input(path: Option<&str>) -> Result<String> {
    let mut buf = Vec::new();
    match path {
        None | Some("-") => {
            if path.is_none() && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                return Err(Error::Usage(
                    "no input: give a JSON file, or pipe the JSON in (`-` reads stdin)".into(),
                ));
            }
            std::io::stdin()
                .take(MAX_INPUT_BYTES as u64 + 1)
                .read_to_end(&mut buf)?;
        }
        Some(p) => {
            let f = fs_err::File::open(p)?;
            f.take(MAX_INPUT_BYTES as u64 + 1).read_to_end(&mut buf)?;
        }
    }
    if buf.len() > MAX_INPUT_BYTES {
        return Err(Error::Invalid(Invalid::one(
            "input",
            "max_length",
            "input is larger than 16 MiB; split it",
        )));
    }
    String::from_utf8(buf)
        .map_err(|_| Error::Invalid(Invalid::one("input", "format", "input is not UTF-8")))
}

/// The list of updates in any of the accepted shapes.
pub(super) fn updates_of(value: Value) -> Result<Vec<Value>> {
    match value {
        Value::Array(items) => Ok(items),
        Value::Object(mut map) if map.contains_key("memory_updates") => {
            match map.remove("memory_updates") {
                Some(Value::Array(items)) => Ok(items),
                Some(Value::Null) | None => Ok(Vec::new()),
                Some(_) => Err(Error::Invalid(Invalid::one(
                    "memory_updates",
                    "type",
                    "`memory_updates` must be an array of Memory_Update objects",
                ))),
            }
        }
        v @ Value::Object(_) => Ok(vec![v]),
        _ => Err(Error::Invalid(Invalid::one(
            "input",
            "type",
            "expected a Memory_Update object, an array of them, or an AgentResult with memory_updates",
        ))),
    }
}

fn project_for(ctx: &Ctx, name: Option<&str>) -> Result<Project> {
    match ctx.project(name) {
        Err(Error::NoProject { project, .. }) => {
            // Requirement: a write to uninitialized memory initializes it.
            let ws = ctx.workspace()?;
            let pname = ProjectName::new(&project)?;
            crate::project::init(&ws, &pname, &ctx.now())?;
            Project::open(&ws, pname)
        }
        other => other,
    }
}

fn field_str(
    map: &serde_json::Map<String, Value>,
    key: &str,
) -> std::result::Result<Option<String>, Invalid> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Invalid::one(
            key,
            "type",
            format!("`{key}` must be a string"),
        )),
    }
}

/// Applies one update; returns the written result or why it was skipped.
pub(super) fn apply_one(
    ctx: &Ctx,
    project: &Project,
    update: &Value,
    dry_run: bool,
) -> Result<crate::writer::Written> {
    let Value::Object(map) = update else {
        return Err(Error::Invalid(Invalid::one(
            "update",
            "type",
            "a Memory_Update must be a JSON object",
        )));
    };
    for key in map.keys() {
        if !matches!(key.as_str(), "operation" | "entry" | "target_id" | "reason") {
            return Err(Error::Invalid(Invalid::one(
                key.as_str(),
                "unknown_field",
                format!(
                    "unknown Memory_Update field `{key}`; use operation, entry, target_id, reason"
                ),
            )));
        }
    }
    let op = field_str(map, "operation")?.ok_or_else(|| {
        Invalid::one(
            "operation",
            "required",
            "`operation` is required: create, supersede or deprecate",
        )
    })?;
    let target = field_str(map, "target_id")?;
    let reason = field_str(map, "reason")?;
    check_reason(reason.as_deref())?;
    let input = match map.get("entry") {
        Some(v) => entry_input_from_json(v, "entry.")?,
        None => EntryInput::default(),
    };
    let mut wctx = ctx.write_context()?;
    wctx.dry_run = dry_run;
    let need_target = || {
        Invalid::one(
            "target_id",
            "required",
            format!("`target_id` is required for {op}"),
        )
    };
    match op.as_str() {
        "create" => {
            if map.get("entry").is_none() {
                return Err(Error::Invalid(Invalid::one(
                    "entry",
                    "required",
                    "`entry` is required for create",
                )));
            }
            let (fields, status) = check_create(&input)?;
            write(
                project,
                &wctx,
                Change::Create {
                    fields: fields.clone(),
                    status,
                },
                |_, _| Ok(Change::Create { fields, status }),
            )
        }
        "supersede" => {
            let target = target.ok_or_else(need_target)?;
            if map.get("entry").is_none() {
                return Err(Error::Invalid(Invalid::one(
                    "entry",
                    "required",
                    "`entry` (the replacement) is required for supersede",
                )));
            }
            write(
                project,
                &wctx,
                Change::Deprecate {
                    target,
                    reason: None,
                },
                |_, state| {
                    let old =
                        state.ok_or_else(|| Error::Usage("supersede needs a target".into()))?;
                    let merged = super::write_ops::inherit(&input, old);
                    let (fields, status) = check_create(&merged)?;
                    Ok(Change::Supersede {
                        target: old.id.clone(),
                        fields,
                        status,
                        reason: reason.clone(),
                    })
                },
            )
        }
        "deprecate" => {
            let target = target.ok_or_else(need_target)?;
            write(
                project,
                &wctx,
                Change::Deprecate {
                    target,
                    reason: reason.clone(),
                },
                |_, state| {
                    Ok(Change::Deprecate {
                        target: state.map(|s| s.id.clone()).unwrap_or_default(),
                        reason: reason.clone(),
                    })
                },
            )
        }
        other => Err(Error::Invalid(Invalid::one(
            "operation",
            "enum",
            format!(
                "`operation` is `{}`; use create, supersede or deprecate",
                other.escape_debug()
            ),
        ))),
    }
}

/// A lone argument names a file when it exists, or looks like one (a path or a `.json` name), so
/// that a mistyped file name is reported as missing instead of read as a project name.
fn looks_like_file(arg: &str) -> bool {
    let path = std::path::Path::new(arg);
    path.is_file()
        || arg.contains('/')
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json") || e.eq_ignore_ascii_case("jsonl"))
}

/// `[PROJECT] [FILE|-]`: one argument is a file when it is `-` or [`looks_like_file`].
pub(super) fn project_and_file(args: &[String]) -> (Option<&str>, Option<&str>) {
    match args {
        [] => (None, None),
        [one] if one == "-" || looks_like_file(one) => (None, Some(one.as_str())),
        [one] => (Some(one.as_str()), None),
        [p, f, ..] => (Some(p.as_str()), Some(f.as_str())),
    }
}

pub fn run(ctx: &Ctx, args: ApplyArgs, out: &mut Out) -> Result<ExitCode> {
    let (project_name, file) = project_and_file(&args.args);
    let text = read_input(file)?;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        Error::Invalid(Invalid::one(
            "input",
            "format",
            format!("input is not valid JSON: {e}"),
        ))
    })?;
    let updates = updates_of(value)?;
    let project = project_for(ctx, project_name)?;
    let single = updates.len() == 1;
    let mut applied = Vec::new();
    let mut skipped = Vec::new();
    for (index, update) in updates.iter().enumerate() {
        match apply_one(ctx, &project, update, false) {
            Ok(w) => applied.push(w),
            Err(
                e @ (Error::LockTimeout { .. }
                | Error::Io(_)
                | Error::Store { .. }
                | Error::CorruptLog { .. }),
            ) => return Err(e),
            Err(e) if single => return Err(e),
            Err(e) => {
                let problems = match &e {
                    Error::Invalid(inv) => inv.problems.clone(),
                    _ => Vec::new(),
                };
                skipped.push(Skipped {
                    index,
                    operation: update
                        .get("operation")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    code: super::output::error_code(&e),
                    message: e.to_string(),
                    problems,
                });
            }
        }
    }
    log_skipped(ctx, &project, &skipped)?;
    if out.json {
        let entries: Vec<Value> = applied
            .iter()
            .map(|w| json!({"id": w.id, "superseded": w.superseded, "events": w.events, "warnings": w.warnings}))
            .collect();
        out.json(&json!({"success": skipped.is_empty(), "applied": entries, "skipped": skipped}));
    } else {
        for w in &applied {
            print_written(ctx, w, "applied", out);
        }
        for s in &skipped {
            let mut err = std::io::stderr();
            let _ = std::io::Write::write_fmt(
                &mut err,
                format_args!(
                    "skipped update {}: {}\n",
                    s.index,
                    super::output::safe(&s.message)
                ),
            );
        }
    }
    Ok(if !skipped.is_empty() && applied.is_empty() {
        ExitCode::Rejected
    } else if skipped.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Problems
    })
}

/// Skipped updates are recorded in `.memlog/apply-log.jsonl` for later debugging.
fn log_skipped(ctx: &Ctx, project: &Project, skipped: &[Skipped]) -> Result<()> {
    if skipped.is_empty() {
        return Ok(());
    }
    project.ensure_state_dir()?;
    let actor = ctx.actor().unwrap_or_default();
    let mut bytes = Vec::new();
    for s in skipped {
        let line = json!({"at": ctx.now(), "actor": actor, "index": s.index, "operation": s.operation, "code": s.code, "message": s.message});
        bytes.extend_from_slice(line.to_string().as_bytes());
        bytes.push(b'\n');
    }
    crate::log::durable::append(&project.state_dir().join("apply-log.jsonl"), &bytes)
}
