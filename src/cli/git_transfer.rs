//! `export` and `import`.

use super::output::safe;
use super::{Ctx, ExitCode, Out};
use crate::error::{Error, Result};
use crate::git::export::{self, Filters};
use crate::git::import::{self, Input, Strategy};
use projections::{EntryState, Section};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A JSON array of Memory_Entry records, or one `<id>.json` per entry when PATH is a
    /// directory (ends with `/` or exists as one)
    Json,
    /// One Memory_Entry record per line (e.g. ai-memory/memory.jsonl)
    Jsonl,
    /// The raw events of the log, which any memlog imports losslessly
    Events,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// [PROJECT] PATH: the project to export (default: --project, or the workspace's only
    /// project) and where to write, inside the workspace (`-`: standard output)
    #[arg(num_args = 1..=2, required = true, value_name = "PROJECT|PATH")]
    pub args: Vec<String>,
    /// What to write
    #[arg(long, value_enum, default_value = "json")]
    pub format: Format,
    /// Only these sections (repeatable): decisions, state, observations, learnings
    #[arg(long)]
    pub section: Vec<String>,
    /// Only entries last changed at or after this time (ISO 8601)
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only entries last changed at or before this time (ISO 8601; a bare date is its midnight)
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Only entries with at least this confidence (0.0 to 1.0)
    #[arg(long, value_name = "X", allow_negative_numbers = true, value_parser = super::numbers::fraction)]
    pub min_confidence: Option<f64>,
}

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// [PROJECT] PATH: the project to import into (default: --project, or the workspace's only
    /// project) and an export: a JSON array, JSON Lines of records or of events, a directory of
    /// *.json records, or `-` for standard input
    #[arg(num_args = 1..=2, required = true, value_name = "PROJECT|PATH")]
    pub args: Vec<String>,
    /// What to do when the project already holds a record's entry
    #[arg(long, value_enum, default_value = "skip")]
    pub conflict_strategy: Strategy,
    /// Refuse a PATH that leads outside the workspace, links resolved (the MCP tool reads only
    /// inside it)
    #[arg(long, hide = true)]
    pub inside_workspace: bool,
}

/// The project and the path of `[PROJECT] PATH` (the positionals are read as one list, so that
/// options may stand between them, as everywhere else). An empty PATH is refused: it would be
/// taken for the working directory. `what` says what the path is for.
fn project_and_path<'a>(
    args: &'a [String],
    what: &str,
    stream: &str,
) -> Result<(Option<&'a str>, PathBuf)> {
    let (project, path) = match args {
        [project, path, ..] => (Some(project.as_str()), path.as_str()),
        [path] => (None, path.as_str()),
        [] => (None, ""),
    };
    if path.is_empty() {
        return Err(Error::Usage(format!(
            "`PATH` is empty: give {what}, or `-` for {stream}"
        )));
    }
    Ok((project, PathBuf::from(path)))
}

fn filters(args: &ExportArgs) -> Result<Filters> {
    let mut sections = Vec::new();
    for s in &args.section {
        sections.push(Section::parse(s).ok_or_else(|| {
            Error::Usage(format!(
                "--section {s}: not a section; use one of {}",
                Section::choices()
            ))
        })?);
    }
    let time = |flag: &str, v: &Option<String>| -> Result<Option<String>> {
        v.as_deref()
            .map(|t| {
                crate::clock::normalize_time(t).map_err(|m| Error::Usage(format!("{flag}: {m}")))
            })
            .transpose()
    };
    if let Some(c) = args.min_confidence
        && !(0.0..=1.0).contains(&c)
    {
        return Err(Error::Usage(format!(
            "--min-confidence: {c} is outside 0.0 to 1.0"
        )));
    }
    Ok(Filters {
        sections,
        since: time("--since", &args.since)?,
        until: time("--until", &args.until)?,
        min_confidence: args.min_confidence,
    })
}

/// Where a path given to `export` or `import` goes.
struct Confined {
    /// The path, relative to the working directory, with `..` resolved by its text.
    path: PathBuf,
    /// Where it leads once the links of its existing part are resolved.
    leads_to: PathBuf,
    /// The workspace root, its links resolved.
    root: PathBuf,
}

/// `path` if it leads inside the workspace `root` (through links too), else `outside()`.
fn confined(root: &Path, path: &Path, outside: impl FnOnce() -> Error) -> Result<Confined> {
    let full = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    // `..` is resolved by its text first, so that a path cannot climb out below a directory
    // that does not exist yet.
    let mut normal = PathBuf::new();
    for c in full.components() {
        match c {
            std::path::Component::ParentDir => {
                normal.pop();
            }
            std::path::Component::CurDir => {}
            other => normal.push(other),
        }
    }
    let existing = normal
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("/"));
    let resolved = fs_err::canonicalize(existing)?;
    let root = fs_err::canonicalize(root)?;
    if !resolved.starts_with(&root) {
        return Err(outside());
    }
    let leads_to = resolved.join(normal.strip_prefix(existing).unwrap_or(Path::new("")));
    Ok(Confined {
        path: normal,
        leads_to,
        root,
    })
}

/// `path` inside the workspace and neither one of memlog's own files nor git's, or an error
/// naming the fix: memlog writes nowhere else, and an export must never replace a log, a
/// configuration or a repository. Nothing is created before the check.
fn export_target(root: &Path, memory: &Path, path: &Path) -> Result<PathBuf> {
    // A file named after a credential would put it in the workspace, and in git.
    if !crate::policy::secret_scan::scan_text(&path.to_string_lossy()).is_empty() {
        return Err(Error::Usage(
            "the export path looks like a credential; name the file after what it holds".into(),
        ));
    }
    let text = path.to_string_lossy();
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(Error::Usage(format!(
            "the export path contains U+{:04X}, a control character: give a path of plain \
             characters, or `-` and redirect standard output",
            u32::from(c)
        )));
    }
    // The export is in the repository, often committed (`ai-memory/memory.jsonl`): a name
    // that no Windows checkout can hold is refused, as it is for a project.
    if let Some(name) = path
        .components()
        .filter_map(|c| c.as_os_str().to_str())
        .find(|name| crate::workspace::is_windows_device_name(name))
    {
        return Err(Error::Usage(format!(
            "the export path names `{name}`, a device name on Windows (con, prn, aux, nul, \
             com0-com9, lpt0-lpt9, with any extension): a Windows checkout could not hold it; \
             give another name"
        )));
    }
    let target = confined(root, path, || {
        Error::Usage(format!(
            "{} is outside the workspace {}: memlog writes only inside it; give a path inside \
             it, or `-` and redirect standard output",
            path.display(),
            root.display()
        ))
    })?;
    // A link may lead into `.git` or the memory directory too: `leads_to` is checked.
    let in_git = target
        .leads_to
        .strip_prefix(&target.root)
        .unwrap_or(&target.leads_to)
        .components()
        .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"));
    if in_git {
        return Err(Error::Usage(format!(
            "{} is inside .git: an export must not replace git's files; give a path outside \
             .git, e.g. ai-memory/memory.jsonl, or `-` and redirect standard output",
            path.display()
        )));
    }
    // Exports may live in the memory directory (`ai-memory/memory.jsonl`,
    // `ai-memory/entries/`), but never over memlog's own files.
    let memory = fs_err::canonicalize(memory).unwrap_or_else(|_| memory.to_path_buf());
    if let Ok(inside) = target.leads_to.strip_prefix(&memory) {
        let own = inside
            .components()
            .any(|c| c.as_os_str() == crate::project::STATE_DIR)
            || inside.file_name().is_some_and(|n| {
                [
                    crate::project::LOG_FILE,
                    crate::project::CONFIG_FILE,
                    ".gitattributes",
                    ".gitignore",
                ]
                .iter()
                .any(|own| n == *own)
            });
        if own {
            return Err(Error::Usage(format!(
                "{} is one of memlog's own files (a project's log, configuration or local \
                 state): an export must not replace it; give another path, e.g. \
                 ai-memory/memory.jsonl, or `-` and redirect standard output",
                path.display()
            )));
        }
    }
    Ok(target.path)
}

/// Refuses to replace `file` when it holds something other than an export: an export replaces
/// only what an export wrote.
fn replaceable(file: &Path) -> Result<()> {
    if !file.is_file() || export::is_export(&fs_err::read(file)?) {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "{} exists and is not a memlog export: an export must not replace it; give another \
         path, or remove the file first",
        file.display()
    )))
}

pub fn export(ctx: &Ctx, args: ExportArgs, out: &mut Out) -> Result<ExitCode> {
    let filters = filters(&args)?;
    let (project_name, path) = project_and_path(
        &args.args,
        "the file to write the export to, inside the workspace",
        "standard output",
    )?;
    let project = ctx.project(project_name)?;
    // Records of the current memory are read from the store, one entry at a time, and written
    // as they are read: made from the whole log at once, an export of 100,000 entries held 3 GB.
    // The events, and anything `--as-of`, are selected from the log's events.
    let from_store = ctx.as_of.is_none() && args.format != Format::Events;
    let (session, selection) = if from_store {
        (
            Some(ctx.open_session(&project)?),
            export::Selection::default(),
        )
    } else {
        let events = match &ctx.as_of {
            Some(as_of) => crate::git::as_of::events_as_of(&project, as_of)?.0,
            None => crate::git::as_of::all_events(&project)?,
        };
        (None, export::select(events, &filters)?)
    };
    // Calls `f` with each exported entry, in id order.
    let each = |f: &mut dyn FnMut(EntryState) -> Result<()>| -> Result<()> {
        match &session {
            Some(session) => session.store().for_each_state(|mut s| {
                if s.purged || !filters.passes(&s) {
                    return Ok(());
                }
                crate::policy::stored::redact_state(&mut s);
                f(s)
            }),
            None => selection.entries.iter().try_for_each(|s| f(s.clone())),
        }
    };
    let mut ids: Vec<String> = Vec::new();
    each(&mut |s| {
        ids.push(s.id);
        Ok(())
    })?;
    let stdout = path.as_os_str() == "-";
    let ws = ctx.workspace()?;
    let target = if stdout {
        None
    } else {
        Some(export_target(ws.root(), &ws.memory_dir(), &path)?)
    };
    let as_dir = target
        .as_ref()
        .is_some_and(|p| p.is_dir() || path.to_string_lossy().ends_with('/'));
    let dir_export = args.format == Format::Json && as_dir;
    let entry_file = |dir: &Path, id: &str| dir.join(format!("{id}.json"));
    // Every file the export would replace must hold an export; nothing is written otherwise.
    if let Some(t) = &target {
        if dir_export {
            for id in &ids {
                replaceable(&entry_file(t, id))?;
            }
        } else {
            replaceable(t)?;
        }
        let dir = if as_dir {
            Some(t.as_path())
        } else {
            t.parent()
        };
        if let Some(d) = dir {
            fs_err::create_dir_all(d)?;
        }
    }
    let mut files = 0usize;
    // Events written redacted (see below), for the warning that the export is not whole.
    let redacted = std::cell::Cell::new(0usize);
    // What a file (or standard output) of the export holds, written as it is made.
    let body = |w: &mut dyn std::io::Write| -> Result<()> {
        match args.format {
            Format::Events => {
                for (_, l) in &selection.events {
                    // A line holding a secret (it reached the log without memlog's checks) is
                    // written redacted: it no longer verifies, and an import refuses it.
                    let line = crate::policy::validate::redact_secrets(l);
                    if line != *l {
                        redacted.set(redacted.get() + 1);
                    }
                    writeln!(w, "{line}")?;
                }
            }
            Format::Jsonl => each(&mut |s| {
                writeln!(w, "{}", export::record_line(&export::record(&s)))?;
                Ok(())
            })?,
            // As `serde_json::to_string_pretty` prints the array, an item at a time.
            Format::Json => {
                let mut first = true;
                each(&mut |s| {
                    let text = serde_json::to_string_pretty(&Value::Object(export::record(&s)))
                        .unwrap_or_default();
                    w.write_all(if first { b"[\n" } else { b",\n" })?;
                    first = false;
                    for (i, line) in text.lines().enumerate() {
                        if i > 0 {
                            w.write_all(b"\n")?;
                        }
                        write!(w, "  {line}")?;
                    }
                    Ok(())
                })?;
                w.write_all(if first { b"[]\n" } else { b"\n]\n" })?;
            }
        }
        Ok(())
    };
    if dir_export {
        let dir = target.clone().unwrap_or_default();
        fs_err::create_dir_all(&dir)?;
        each(&mut |s| {
            let text = serde_json::to_string_pretty(&Value::Object(export::record(&s)))
                .unwrap_or_default();
            crate::log::durable::write_atomic(
                &entry_file(&dir, &s.id),
                format!("{text}\n").as_bytes(),
            )?;
            files += 1;
            Ok(())
        })?;
    } else if stdout {
        let mut w = out.raw();
        let written = body(&mut w);
        warn_redacted(redacted.get());
        return match written {
            // A reader that stopped reading (`| head`) is no failure.
            Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::Ok),
            Err(e) => Err(e),
            Ok(()) => Ok(ExitCode::Ok),
        };
    } else {
        crate::log::durable::write_atomic_with(&target.clone().unwrap_or_default(), body)?;
        files = 1;
    }
    warn_redacted(redacted.get());
    let target = target.unwrap_or_default();
    let count = if args.format == Format::Events {
        selection.events.len()
    } else {
        ids.len()
    };
    let (what, one) = if args.format == Format::Events {
        ("events", "event")
    } else {
        ("entries", "entry")
    };
    if out.json {
        out.json(&json!({"success": true, "path": target, "format": format!("{:?}", args.format).to_lowercase(), what: count, "files": files}));
    } else {
        out.line(format!(
            "exported {} of {} to {}",
            super::plural::count(count, one, what),
            project.name,
            safe(&target.display().to_string())
        ));
    }
    Ok(ExitCode::Ok)
}

/// Warns that an events export is not whole when `n` of its events held a credential.
fn warn_redacted(n: usize) {
    if n > 0 {
        super::output::warn(&format!(
            "{} held a credential and {} written redacted: {} no longer {} and an import \
             refuses {}; `memlog verify` names the entries, `memlog purge ID --reason \
             credential` and `memlog gc` remove them from the log before an export",
            super::plural::count(n, "event", "events"),
            if n == 1 { "was" } else { "were" },
            if n == 1 { "it" } else { "they" },
            if n == 1 { "verifies" } else { "verify" },
            if n == 1 { "it" } else { "them" },
        ));
    }
}

pub fn import(ctx: &Ctx, args: ImportArgs, out: &mut Out) -> Result<ExitCode> {
    let (project_name, arg_path) =
        project_and_path(&args.args, "the export to read", "standard input")?;
    let (project, missing) = super::apply::write_target(ctx, project_name)?;
    let stdin = if arg_path.as_os_str() == "-" {
        Some(import::read_bounded(
            super::invoke::stdin(),
            "standard input",
        )?)
    } else {
        None
    };
    let mut within = None;
    let path = if args.inside_workspace && stdin.is_none() {
        let root = ctx.workspace()?.root().to_path_buf();
        let outside = || {
            Error::Usage(format!(
                "{} leads outside the workspace {}: only files inside it are read; give a \
                 file inside it",
                arg_path.display(),
                root.display()
            ))
        };
        let confined = confined(&root, &arg_path, outside)?;
        within = Some(confined.root);
        confined.path
    } else {
        arg_path
    };
    let input = import::read(&path, stdin, within.as_deref())?;
    // Memory that is not initialized is initialized for the import, as for every write, but
    // only when the input holds something to import: a mistyped project name and an input of
    // nothing leave no directory behind.
    let project = if missing && input.has_any() {
        super::apply::create_for_write(ctx, &project)?
    } else if missing {
        // Nothing to import: the error of memory that is not initialized, as before.
        ctx.project(project_name)?
    } else {
        project
    };
    let wctx = ctx.write_context_for(&project, "import")?;
    let report = match input {
        Input::Records(r) => import::import_records(&project, &wctx, r, args.conflict_strategy)?,
        Input::Events(e) => import::import_events(&project, &wctx, e)?,
    };
    let code = if report.rejected.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Problems
    };
    if out.json {
        let mut v = serde_json::to_value(&report).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.insert("success".into(), report.rejected.is_empty().into());
        }
        out.json(&v);
        return Ok(code);
    }
    out.line(format!(
        "imported {}, merged {}, overwritten {}, skipped {}, rejected {}",
        report.imported.len(),
        report.merged.len(),
        report.overwritten.len(),
        report.skipped.len(),
        report.rejected.len()
    ));
    for (label, list) in [("skipped", &report.skipped), ("rejected", &report.rejected)] {
        for o in list {
            out.line(format!(
                "{label} {}{}: {}",
                safe(&o.source),
                o.record
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default(),
                safe(o.reason.as_deref().unwrap_or(""))
            ));
        }
    }
    Ok(code)
}
