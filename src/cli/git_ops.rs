//! `merge-driver`, `git install|uninstall|pre-commit` and `sync-context`.

use super::output::{safe, warn};
use super::plural::count;
use super::{Ctx, ExitCode, Out};
use crate::error::Result;
use crate::git::sync_context::{self, Context, Staleness};
use crate::project::Project;
use serde_json::json;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct MergeDriverArgs {
    /// The common ancestor's version (git's %O): not read (a line one side lacks is no line
    /// to drop: the merge is the union of both sides, tombstones replacing purged lines)
    pub ancestor: PathBuf,
    /// Our version (git's %A): the merged log is written here
    pub ours: PathBuf,
    /// Their version (git's %B); `-` reads it from standard input
    pub theirs: PathBuf,
    /// The path in the repository (git's %P), for messages; its working copy is merged in too
    pub path: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum GitCommand {
    /// Register the merge driver (local git config and .git/info/attributes) and the
    /// pre-commit hook; idempotent, says what it changed
    Install,
    /// Undo `memlog git install` (an earlier hook of yours gets its place back)
    Uninstall,
    /// What the hook runs: staged lines under ai-memory/ checked (intact events, no
    /// credentials), every ai-context/<project>.md checked against memory, and for a merge,
    /// every event of the merged commits' logs kept
    PreCommit,
}

#[derive(Debug, clap::Args)]
pub struct SyncContextArgs {
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: Option<String>,
    /// Write nothing; exit 1 when the file is missing or stale, naming the entries that changed
    #[arg(long, conflicts_with = "dry_run")]
    pub check: bool,
    /// Print the file that would be written; write nothing
    #[arg(long)]
    pub dry_run: bool,
}

pub fn merge_driver(ctx: &Ctx, args: MergeDriverArgs, out: &mut Out) -> Result<ExitCode> {
    // git runs the driver in the repository's root, where `%P` names the working copy of the
    // log, which git replaces with the driver's result. A memlog write may have appended to it
    // after git read it: what is there is merged in too, under the project's write lock so
    // that no write lands between the read and the result. (One landing after the driver
    // exits and before git writes the result is still lost; that window is git's.)
    // Run by hand on a project's log (`memlog merge-driver /dev/null <log> -`), ours is the
    // working copy: the same lock keeps writes out while it is rewritten.
    let working = args
        .path
        .as_deref()
        .map_or(args.ours.as_path(), std::path::Path::new);
    let working = Some(working)
        .filter(|p| p.file_name().is_some_and(|n| n == crate::project::LOG_FILE) && p.is_file());
    let name = args
        .path
        .clone()
        .unwrap_or_else(|| args.ours.display().to_string());
    let theirs = if args.theirs.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes)?;
        bytes
    } else {
        fs_err::read(&args.theirs)?
    };
    let merged = match working {
        Some(log) => {
            let state = log
                .parent()
                .unwrap_or(std::path::Path::new("."))
                .join(crate::project::STATE_DIR);
            // The project's links are not checked on this path (no project is opened): a
            // `.memlog/` a repository committed as a link would have the lock made where it
            // leads.
            crate::log::durable::refuse_link(&state)?;
            fs_err::create_dir_all(&state)?;
            let _write = crate::log::lock::FileLock::acquire(
                &state.join("write.lock"),
                "write",
                ctx.lock_timeout(),
            )?;
            // A torn last line (a writer killed) is set aside as every command does, so that
            // the merge neither refuses it nor completes it with a newline.
            crate::log::durable::repair_tail(
                log,
                &state.join("quarantine.jsonl"),
                crate::store::session::is_whole_line,
                crate::store::session::without_secrets,
            )?;
            let written = fs_err::read(log)?;
            crate::git::merge_driver::run(&args.ours, &theirs, &written, &name)?
        }
        None => crate::git::merge_driver::run(&args.ours, &theirs, b"", &name)?,
    };
    if out.json {
        out.json(&json!({"success": true, "path": name, "ours": merged.ours, "added": merged.added, "duplicates": merged.duplicates, "replaced": merged.replaced}));
    } else {
        // git shows the driver's output during the merge: keep it to one line on stderr.
        let mut note = format!(
            "memlog merged {}: {} kept, {} added from the other side, {} dropped",
            name,
            count(merged.ours, "line", "lines"),
            merged.added,
            count(merged.duplicates, "duplicate", "duplicates")
        );
        if merged.replaced > 0 {
            note.push_str(&format!(
                ", {} left out for {} tombstone",
                count(merged.replaced, "purged line", "purged lines"),
                if merged.replaced == 1 { "its" } else { "their" }
            ));
        }
        super::output::note(&note);
    }
    Ok(ExitCode::Ok)
}

fn invocation(ctx: &Ctx) -> Result<crate::git::install::Invocation> {
    let exe = std::env::current_exe()?;
    let exe = fs_err::canonicalize(&exe).unwrap_or(exe);
    let bass = exe
        .file_stem()
        .is_some_and(|s| s.to_string_lossy() == "bass-agents");
    Ok(crate::git::install::Invocation {
        exe,
        prefix: if bass {
            vec!["memory".into()]
        } else {
            Vec::new()
        },
        workspace: ctx.workspace()?.root().to_path_buf(),
    })
}

pub fn git(ctx: &Ctx, command: GitCommand, out: &mut Out) -> Result<ExitCode> {
    let steps = match command {
        GitCommand::Install => crate::git::install::install(&invocation(ctx)?)?,
        GitCommand::Uninstall => crate::git::install::uninstall(ctx.workspace()?.root())?,
        GitCommand::PreCommit => return pre_commit(ctx, out),
    };
    if out.json {
        out.json(&json!({"success": true, "steps": steps}));
    } else {
        for s in &steps {
            out.line(format!("{:<10} {}  ({})", s.action, s.what, safe(&s.path)));
        }
    }
    Ok(ExitCode::Ok)
}

/// The context file of `project`, what memory generates for it now, and how they differ.
fn context_status(ctx: &Ctx, project: &Project) -> Result<(PathBuf, Context, Staleness)> {
    let session = ctx.open_session(project)?;
    let entries = sync_context::entries(session.store())?;
    let secrets = session.store().secrets()?;
    let context = sync_context::render(project.name.as_str(), &entries, &secrets);
    let path = context_path(ctx, project)?;
    let existing = match fs_err::read_to_string(&path) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e.into()),
    };
    let stale = sync_context::staleness(existing.as_deref(), &context.text);
    Ok((path, context, stale))
}

/// The context file the *staged* memory of `project` generates: what the commit will hold must
/// agree with the log the commit will hold, not with writes made since and left unstaged.
fn staged_context(ctx: &Ctx, repo: &crate::git::repo::Repo, project: &Project) -> Result<String> {
    let log = project.log_path();
    let rel = log
        .strip_prefix(&repo.cwd)
        .map_or_else(|_| log.clone(), std::path::Path::to_path_buf);
    let rel = rel.to_string_lossy();
    // The working copy is what is staged (the usual case): the project's own store answers.
    let unchanged = repo
        .output(&["diff", "--quiet", "--no-ext-diff", "--", &rel])?
        .status
        .success();
    if unchanged {
        return Ok(context_status(ctx, project)?.1.text);
    }
    let shown = repo.output(&["show", &format!(":./{rel}")])?;
    let bytes = if shown.status.success() {
        shown.stdout
    } else {
        Vec::new()
    };
    let mut events = Vec::new();
    for line in crate::log::read::lines(&bytes, 1, 0).filter(|l| !crate::log::read::is_blank(l)) {
        let event = crate::log::read::decode(&log, &line)?;
        events.push((event, String::from_utf8_lossy(line.bytes).into_owned()));
    }
    let session =
        crate::store::session::Session::detached(project, events, crate::store::session::Keep::No)?;
    let entries = sync_context::entries(session.store())?;
    let secrets = session.store().secrets()?;
    Ok(sync_context::render(project.name.as_str(), &entries, &secrets).text)
}

fn context_path(ctx: &Ctx, project: &Project) -> Result<PathBuf> {
    Ok(ctx
        .workspace()?
        .root()
        .join(crate::workspace::CONTEXT_DIR)
        .join(format!("{}.md", project.name)))
}

/// What is stale, in words: `entries added: m-1; changed: m-2`.
/// Ids listed in a human message before the rest are counted (`--json` lists them all).
const IDS_SHOWN: usize = 10;

/// `ids` joined, the first [`IDS_SHOWN`] of them and a count of the rest.
fn some_ids(ids: &[String]) -> String {
    let shown = ids[..ids.len().min(IDS_SHOWN)].join(", ");
    match ids.len().saturating_sub(IDS_SHOWN) {
        0 => shown,
        rest => format!("{shown} and {rest} more"),
    }
}

fn describe(s: &Staleness) -> String {
    if s.missing {
        return "the file does not exist".into();
    }
    let mut parts = Vec::new();
    for (label, ids) in [
        ("added", &s.added),
        ("removed", &s.removed),
        ("changed", &s.changed),
    ] {
        if !ids.is_empty() {
            parts.push(format!("{label} {}", some_ids(ids)));
        }
    }
    if s.other {
        parts.push("the header or layout differs".into());
    }
    parts.join("; ")
}

pub fn sync_context(ctx: &Ctx, args: SyncContextArgs, out: &mut Out) -> Result<ExitCode> {
    if !args.check && !args.dry_run {
        super::as_of::refuse(
            ctx,
            "sync-context writes ai-context/ (use --check or --dry-run)",
        )?;
    }
    let project = ctx.project(args.project.as_deref())?;
    let (path, context, stale) = context_status(ctx, &project)?;
    for w in &context.withheld {
        warn(&format!(
            "sync-context left out {id}: its text holds what looks like a credential ({}: {}); \
             remove it with `memlog purge {id} --reason credential` then `memlog gc`, and \
             rotate the credential",
            w.rule,
            w.description,
            id = w.entry
        ));
    }
    let Context {
        text,
        entries: n,
        withheld,
    } = context;
    let shown = path
        .strip_prefix(ctx.workspace()?.root())
        .unwrap_or(&path)
        .display()
        .to_string();
    if args.dry_run {
        if out.json {
            out.json(&json!({"path": shown, "entries": n, "withheld": withheld, "up_to_date": stale.is_fresh(), "stale": stale, "content": text}));
        } else {
            let mut w = out.raw();
            let _ = std::io::Write::write_all(&mut w, text.as_bytes());
        }
        return Ok(ExitCode::Ok);
    }
    if args.check {
        if out.json {
            out.json(&json!({"path": shown, "entries": n, "withheld": withheld, "up_to_date": stale.is_fresh(), "stale": stale}));
        } else if stale.is_fresh() {
            out.line(format!(
                "{shown} is up to date ({})",
                count(n, "entry", "entries")
            ));
        } else {
            out.line(format!(
                "{shown} is stale: {}; run `memlog sync-context {}` and commit it",
                describe(&stale),
                project.name
            ));
        }
        return Ok(if stale.is_fresh() {
            ExitCode::Ok
        } else {
            ExitCode::Problems
        });
    }
    if !stale.is_fresh() {
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir)?;
            let root = fs_err::canonicalize(ctx.workspace()?.root())?;
            let resolved = fs_err::canonicalize(dir)?;
            if !resolved.starts_with(&root) {
                return Err(crate::Error::Rejected {
                    message: format!(
                        "{} resolves to {}, outside the workspace {}; memlog never writes \
                         outside the workspace: replace the link with a directory",
                        dir.display(),
                        resolved.display(),
                        root.display()
                    ),
                });
            }
        }
        crate::log::durable::write_atomic(&path, text.as_bytes())?;
    }
    if out.json {
        out.json(&json!({"success": true, "path": shown, "entries": n, "withheld": withheld, "written": !stale.is_fresh(), "stale": stale}));
    } else if stale.is_fresh() {
        out.line(format!(
            "{shown} is up to date ({})",
            count(n, "entry", "entries")
        ));
    } else if stale.missing {
        out.line(format!(
            "created {shown} ({})",
            count(n, "entry", "entries")
        ));
    } else {
        out.line(format!(
            "wrote {shown} ({}): {}",
            count(n, "entry", "entries"),
            describe(&stale)
        ));
    }
    Ok(ExitCode::Ok)
}

/// The commits `git merge` names to its `pre-merge-commit` hook, before it writes
/// `MERGE_HEAD`: one `GITHEAD_<commit>=<name>` variable each.
fn announced_merge_heads() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(key, value)| {
            let commit = key.to_str()?.strip_prefix("GITHEAD_")?;
            let hex =
                matches!(commit.len(), 40 | 64) && commit.bytes().all(|b| b.is_ascii_hexdigit());
            hex.then(|| (commit.to_owned(), value.to_string_lossy().into_owned()))
        })
        .collect()
}

/// How many event ids a message names before it counts the rest.
const LOST_SHOWN: usize = 5;

/// The hook's message for events a merge commit would drop: which, from where, and the fix.
fn describe_loss(loss: &crate::git::staged::MergeLoss) -> String {
    let n = loss.missing.len();
    let ids: Vec<&str> = loss
        .missing
        .iter()
        .take(LOST_SHOWN)
        .map(|id| id.get(..12).unwrap_or(id))
        .collect();
    let more = n.saturating_sub(LOST_SHOWN);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    let from = match &loss.branch {
        Some(b) => format!(
            "`{}` (commit {})",
            safe(b),
            &loss.commit[..loss.commit.len().min(12)]
        ),
        None => format!("commit {}", &loss.commit[..loss.commit.len().min(12)]),
    };
    let path = safe(&loss.path);
    format!(
        "{path}: the merge drops {} that {from} holds ({}{more}): a merge keeps the memory of \
         both sides. Put them back with `git show {}:./{path} | memlog merge-driver /dev/null \
         {path} -` (the union of both logs), then `git add {path}` and `git commit`",
        count(n, "event", "events"),
        ids.join(", "),
        loss.commit,
    )
}

fn pre_commit(ctx: &Ctx, out: &mut Out) -> Result<ExitCode> {
    let ws = ctx.workspace()?;
    let repo = crate::git::repo::Repo::at(ws.root())?;
    let staged = crate::git::staged::scan(&repo)?;
    let heads = crate::git::staged::merge_heads(&repo, &announced_merge_heads())?;
    let losses = crate::git::staged::merge_losses(&repo, &heads)?;
    let findings = &staged.secrets;
    let mut stale = Vec::new();
    // Whether ai-context/ is in sync is a question for a log that reads: a damaged one is the
    // problem to report.
    let projects = if staged.damaged.is_empty() {
        ws.projects()?
    } else {
        Vec::new()
    };
    for name in projects {
        let project = Project::open(&ws, name)?;
        // What the commit holds is the staged file: a regenerated file left unstaged is still
        // stale in the commit. A file git does not track is not part of it.
        let rel = format!("{}/{}.md", crate::workspace::CONTEXT_DIR, project.name);
        let shown = repo.output(&["show", &format!(":./{rel}")])?;
        if !shown.status.success() {
            continue;
        }
        // A commit that changes neither the file nor what it is made from commits them as the
        // last commit did: regenerating the file for it (a second at 40,000 entries, for a
        // commit of code) would only check that commit again.
        let inputs = [
            rel.clone(),
            format!("{}/{}", crate::workspace::MEMORY_DIR, project.name),
            format!("{}/global", crate::workspace::MEMORY_DIR),
        ];
        let mut unchanged = vec!["diff", "--cached", "--quiet", "HEAD", "--"];
        unchanged.extend(inputs.iter().map(String::as_str));
        if repo.output(&unchanged)?.status.success() {
            continue;
        }
        let staged = String::from_utf8_lossy(&shown.stdout).into_owned();
        let context = staged_context(ctx, &repo, &project)?;
        let s = sync_context::staleness(Some(&staged), &context);
        if !s.is_fresh() {
            stale.push((project.name.to_string(), s));
        }
    }
    let ok =
        findings.is_empty() && stale.is_empty() && staged.damaged.is_empty() && losses.is_empty();
    if out.json {
        let stale: Vec<_> = stale
            .iter()
            .map(|(p, s)| json!({"project": p, "stale": s}))
            .collect();
        out.json(&json!({"ok": ok, "secrets": findings, "damaged_log_lines": staged.damaged, "dropped_by_merge": losses, "stale_context": stale}));
    } else {
        for d in &staged.damaged {
            out.line(format!(
                "{}:{}: {}",
                safe(&d.path),
                d.line,
                safe(&d.problem)
            ));
        }
        for loss in &losses {
            out.line(describe_loss(loss));
        }
        for f in findings {
            out.line(format!(
                "{}:{}:{}: {} ({}){}; remove it from the staged files before committing",
                safe(&f.path),
                f.line,
                f.column,
                f.rule,
                f.description,
                f.field
                    .as_deref()
                    .map(|x| format!(" in field {}", safe(x)))
                    .unwrap_or_default(),
            ));
        }
        for (p, s) in &stale {
            out.line(format!(
                "ai-context/{p}.md is stale: {}; run `memlog sync-context {p}` and `git add ai-context/{p}.md`",
                describe(s)
            ));
        }
    }
    Ok(if ok { ExitCode::Ok } else { ExitCode::Problems })
}
