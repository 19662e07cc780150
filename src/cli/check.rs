//! `validate` (a dry run of `apply`) and `secrets scan` (the detector over any text).

use super::apply::{Sink, Updates, apply_one, project_and_file};
use super::output::{constraint_code, error_code, safe};
use super::{Ctx, ExitCode, Out};
use crate::error::{Error, Result};
use crate::log::writer::Batch;
use crate::policy::validate::{Problem, redact_secrets};
use crate::project::Project;
use crate::workspace::{ProjectName, Workspace};
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// [PROJECT] [FILE|-]: the project to check against (duplicates, targets, its policy) and the
    /// JSON file (default: stdin)
    #[arg(num_args = 0..=2, value_name = "PROJECT|FILE")]
    pub args: Vec<String>,
}

/// The verdict on one Memory_Update.
#[derive(Debug, Serialize)]
struct Verdict {
    index: usize,
    /// Its line, when the input is JSON Lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    /// `null` when the update names none (or is not JSON), as in `apply`'s skipped updates.
    operation: Option<String>,
    valid: bool,
    errors: Vec<ErrorItem>,
    warnings: Vec<crate::policy::Warning>,
}

#[derive(Debug, Serialize)]
struct ErrorItem {
    code: &'static str,
    field: String,
    constraint: &'static str,
    message: String,
}

fn errors_of(e: &Error) -> Vec<ErrorItem> {
    match e {
        Error::Invalid(inv) => inv
            .problems
            .iter()
            .map(
                |Problem {
                     field,
                     constraint,
                     message,
                 }| ErrorItem {
                    code: constraint_code(constraint),
                    field: field.clone(),
                    constraint,
                    message: message.clone(),
                },
            )
            .collect(),
        Error::NotFound { .. } | Error::AmbiguousId { .. } => vec![ErrorItem {
            code: error_code(e),
            field: "target_id".into(),
            constraint: "exists",
            message: redact_secrets(&e.to_string()),
        }],
        other => vec![ErrorItem {
            code: error_code(other),
            field: "update".into(),
            constraint: "policy",
            message: redact_secrets(&other.to_string()),
        }],
    }
}

/// A new project named as the one checked, in a workspace of its own in the temp directory,
/// removed when dropped.
struct ScratchProject {
    root: std::path::PathBuf,
    project: Project,
}

/// Names of scratch projects' directories: the prefix, then the process id and a number.
const SCRATCH_PREFIX: &str = "memlog-validate-";

impl ScratchProject {
    /// Made in the first of the temp directory (`TMPDIR`), `/tmp` and `/var/tmp` that takes it,
    /// after removing there the scratch projects of processes that ended without removing
    /// theirs (interrupted).
    fn create(name: &ProjectName, now: &str) -> Result<Self> {
        let mut parents = vec![std::env::temp_dir()];
        for fallback in ["/tmp", "/var/tmp"] {
            let fallback = PathBuf::from(fallback);
            if !parents.contains(&fallback) {
                parents.push(fallback);
            }
        }
        let mut failed = Vec::new();
        for parent in parents {
            remove_stale_scratch(&parent);
            match Self::create_in(&parent, name, now) {
                Ok(scratch) => return Ok(scratch),
                Err(e) => failed.push(format!("{}: {e}", parent.display())),
            }
        }
        Err(Error::Usage(failed.join("; ")))
    }

    fn create_in(parent: &std::path::Path, name: &ProjectName, now: &str) -> Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let root = parent.join(format!("{SCRATCH_PREFIX}{}-{nanos}", std::process::id()));
        fs_err::create_dir(&root)?;
        // Removed by `drop` from here on, whatever fails below.
        let mut scratch = Self {
            project: Project::new(&Workspace::at(&root)?, name.clone()),
            root,
        };
        crate::project::init(&scratch.project.workspace, name, now)?;
        scratch.project = Project::open(&scratch.project.workspace, name.clone())?;
        Ok(scratch)
    }
}

/// Removes the scratch projects in `parent` whose process is gone (where `/proc` tells) or that
/// are older than a day. Best effort.
fn remove_stale_scratch(parent: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let procfs = std::path::Path::new("/proc/self").exists();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(SCRATCH_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let gone = procfs && !std::path::Path::new(&format!("/proc/{pid}")).exists();
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(86_400));
        if gone || old {
            let _ = fs_err::remove_dir_all(entry.path());
        }
    }
}

impl Drop for ScratchProject {
    fn drop(&mut self) {
        // Best effort: a leftover in the temp directory is harmless.
        let _ = fs_err::remove_dir_all(&self.root);
    }
}

/// The project to check against, resolved as `apply` resolves it (several projects and none
/// named is the same usage error); one that does not exist (yet) is checked on a
/// [`ScratchProject`], and nothing is created in the workspace.
fn project_to_check(ctx: &Ctx, name: Option<&str>) -> Result<Project> {
    match ctx.project(name) {
        Ok(p) => Ok(p),
        Err(Error::NoProject { project, root }) => Ok(Project::new(
            &Workspace::at(&root)?,
            ProjectName::new(&project)?,
        )),
        Err(Error::NoWorkspace { .. }) => {
            let ws = Workspace::at(&std::env::current_dir()?)?;
            Ok(Project::new(
                &ws,
                ProjectName::new(name.unwrap_or("default"))?,
            ))
        }
        Err(e) => Err(e),
    }
}

pub fn validate(ctx: &Ctx, args: ValidateArgs, out: &mut Out) -> Result<ExitCode> {
    let (project_name, file) = project_and_file(&args.args);
    let refused = |e: &Error| Verdict {
        index: 1,
        line: None,
        operation: None,
        valid: false,
        errors: errors_of(e),
        warnings: Vec::new(),
    };
    let (single, verdicts) = match Updates::open(file) {
        Err(e @ Error::Invalid(_)) => (true, vec![refused(&e)]),
        Err(e) => return Err(e),
        Ok(mut updates) => {
            let project = project_to_check(ctx, project_name)?;
            let mut wctx = ctx.write_context()?;
            wctx.dry_run = true;
            // The updates are checked as one batch, exactly as `apply` would stage them
            // (duplicates within the input, and changes of entries it creates, included).
            // Against a project that does not exist yet, the batch is opened on an empty one
            // with the default policies, as `apply` would create it, in a scratch directory
            // removed afterwards; where none can be made, each update gets the checks that
            // need no store.
            let exists = project.config_path().is_file();
            let scratch = (!exists).then(|| ScratchProject::create(&project.name, &ctx.now()));
            // Where no scratch project can be made, the verdicts that may differ from
            // `apply`'s say so (and standard error once).
            let degraded = match &scratch {
                Some(Err(e)) => {
                    let message = format!(
                        "no scratch project could be made in the temp directory ({e}): each \
                         update was checked alone, so a change of an entry that an earlier \
                         update of this input creates is reported NOT_FOUND although `apply` \
                         would accept it; set TMPDIR to a writable directory"
                    );
                    super::output::warn(&message);
                    Some(message)
                }
                _ => None,
            };
            let scratch = scratch.and_then(Result::ok);
            let target = if exists {
                Some(&project)
            } else {
                scratch.as_ref().map(|s| &s.project)
            };
            let mut batch = target.map(|p| Batch::open(p, &wctx)).transpose()?;
            let mut verdicts = Vec::new();
            // Updates are numbered from 1, as people count them.
            let mut index = 1;
            while let Some((line, item)) = updates.next_update() {
                let operation = item
                    .as_ref()
                    .ok()
                    .and_then(|u| u.get("operation"))
                    .and_then(Value::as_str)
                    .map(redact_secrets);
                let result = item.and_then(|update| {
                    let mut sink = match batch.as_mut() {
                        Some(b) => Sink::Batch(b),
                        None => Sink::NoProject(&project, &wctx),
                    };
                    apply_one(&mut sink, &update)
                });
                let not_found = matches!(result, Err(Error::NotFound { .. }));
                verdicts.push(match result {
                    Ok(w) => Verdict {
                        index,
                        line,
                        operation,
                        valid: true,
                        errors: Vec::new(),
                        warnings: w.warnings,
                    },
                    Err(e @ (Error::LockTimeout { .. } | Error::Io(_) | Error::Store { .. })) => {
                        return Err(e);
                    }
                    Err(e) => Verdict {
                        index,
                        line,
                        operation,
                        valid: false,
                        errors: errors_of(&e),
                        warnings: degraded
                            .iter()
                            .filter(|_| not_found)
                            .map(|message| crate::policy::Warning {
                                field: "target_id".into(),
                                rule: "scratch_project",
                                message: message.clone(),
                            })
                            .collect(),
                    },
                });
                index += 1;
            }
            drop(batch);
            drop(scratch);
            (updates.single_object && verdicts.len() == 1, verdicts)
        }
    };
    let all_valid = verdicts.iter().all(|v| v.valid);
    if out.json {
        // One shape whatever the input: an array of verdicts (one for a single update).
        let _ = single;
        out.json(&verdicts);
    } else {
        for v in &verdicts {
            out.line(format!(
                "update {}{}: {}",
                v.index,
                // `(line 3, deprecate)`: where it is in JSON Lines, and what it does.
                match (v.line, v.operation.as_deref()) {
                    (Some(l), Some(o)) => format!(" (line {l}, {})", safe(o)),
                    (Some(l), None) => format!(" (line {l})"),
                    (None, Some(o)) => format!(" ({})", safe(o)),
                    (None, None) => String::new(),
                },
                if v.valid { "valid" } else { "invalid" }
            ));
            for e in &v.errors {
                out.line(format!(
                    "  error   {} [{}]: {}",
                    e.field,
                    e.code,
                    safe(&e.message)
                ));
            }
            for w in &v.warnings {
                out.line(format!("  warning {}: {}", w.field, safe(&w.message)));
            }
        }
    }
    Ok(if all_valid {
        ExitCode::Ok
    } else {
        ExitCode::Problems
    })
}

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum SecretsCommand {
    /// Scan files (or stdin) for credentials; exit 1 when any is found
    Scan(ScanArgs),
    /// List the detection rules
    Rules,
}

#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// Files or folders (scanned recursively, without .git and .memlog) to scan; `-` or none
    /// reads stdin
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Serialize)]
struct Hit {
    path: String,
    line: usize,
    column: usize,
    rule: &'static str,
    description: &'static str,
}

/// Directories a folder scan skips: git's own and memlog's derived state.
const SKIPPED_DIRS: [&str; 2] = [".git", ".memlog"];

/// The files under `dir`, recursively and sorted, without following links.
fn files_under(dir: &std::path::Path, out: &mut Vec<Option<PathBuf>>) -> Result<()> {
    let mut entries: Vec<_> = fs_err::read_dir(dir)?.collect::<std::io::Result<Vec<_>>>()?;
    entries.sort_by_key(fs_err::DirEntry::file_name);
    for e in entries {
        let kind = e.file_type()?;
        let path = e.path();
        if kind.is_dir() {
            if !SKIPPED_DIRS.iter().any(|s| e.file_name() == *s) {
                files_under(&path, out)?;
            }
        } else if kind.is_file() {
            out.push(Some(path));
        }
    }
    Ok(())
}

pub fn secrets(_ctx: &Ctx, command: SecretsCommand, out: &mut Out) -> Result<ExitCode> {
    let args = match command {
        SecretsCommand::Rules => {
            let rules = crate::policy::secret_scan::rules();
            if out.json {
                let v: Vec<Value> = rules
                    .iter()
                    .map(|(id, d)| serde_json::json!({"rule": id, "description": d}))
                    .collect();
                out.json(&v);
            } else {
                for (id, d) in rules {
                    out.line(format!("{id:<28} {d}"));
                }
            }
            return Ok(ExitCode::Ok);
        }
        SecretsCommand::Scan(a) => a,
    };
    let inputs: Vec<Option<PathBuf>> = if args.files.is_empty() {
        if super::invoke::stdin_is_terminal() {
            return Err(Error::Usage(
                "no input: give files to scan, or pipe text in (`-` reads stdin)".into(),
            ));
        }
        vec![None]
    } else {
        let mut inputs = Vec::new();
        for f in args.files {
            if f.as_os_str() == "-" {
                inputs.push(None);
            } else if f.is_dir() {
                // A folder: every file in it, recursively.
                files_under(&f, &mut inputs)?;
            } else {
                inputs.push(Some(f));
            }
        }
        inputs
    };
    let mut hits = Vec::new();
    for input in inputs {
        // An input of any size is scanned in parts (see `secret_scan::stream`), never only its
        // start: what a limit left out could hold a credential, and a hook must not pass it.
        let (name, reader): (String, Box<dyn std::io::Read>) = match &input {
            None => ("-".to_owned(), super::invoke::stdin()),
            Some(path) => {
                let file = fs_err::File::open(path).map_err(|e| Error::input(path, e))?;
                // A file named after a credential: its name is printed redacted, as `apply`
                // prints it (a hook's output ends up in CI logs).
                let name = crate::policy::validate::redact_secrets(&path.display().to_string());
                (name, Box::new(file))
            }
        };
        let limits = crate::policy::secret_scan::stream::Limits::default();
        let scanned = crate::policy::secret_scan::stream::scan_reader(
            std::io::BufReader::new(reader),
            limits,
            |f| {
                hits.push(Hit {
                    path: name.clone(),
                    line: f.line,
                    column: f.column,
                    rule: f.rule,
                    description: f.description,
                });
            },
        );
        match scanned {
            Ok(()) => {}
            Err(crate::policy::secret_scan::stream::StreamError::Io(e)) => {
                return Err(match &input {
                    Some(path) => Error::input(path, e),
                    None => Error::Io(e),
                });
            }
            Err(crate::policy::secret_scan::stream::StreamError::LineTooLong(line)) => {
                return Err(Error::Usage(format!(
                    "{}: line {line} is longer than {} MiB, more than a line of text; it is \
                     not text memlog can scan (an endless input such as /dev/zero?)",
                    safe(&name),
                    limits.line_bytes / (1024 * 1024)
                )));
            }
        }
    }
    if out.json {
        out.json(&serde_json::json!({"clean": hits.is_empty(), "findings": hits}));
    } else {
        for h in &hits {
            out.line(format!(
                "{}:{}:{}: {} ({})",
                safe(&h.path),
                h.line,
                h.column,
                h.rule,
                h.description
            ));
        }
    }
    Ok(if hits.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Problems
    })
}
