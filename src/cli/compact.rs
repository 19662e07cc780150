//! `compact`, and starting it in the background when a command found a store due for it.

use super::{Ctx, ExitCode, Out};
use crate::error::Result;
use crate::project::Project;
use crate::store::compact::{self, Outcome};
use serde_json::json;
use std::time::Instant;

#[derive(Debug, clap::Args)]
pub struct CompactArgs {
    #[command(flatten)]
    target: super::rebuild::ProjectArg,
    /// Only when the store is due (how commands start it: one started late, after another
    /// compaction ended, does nothing)
    #[arg(long, hide = true)]
    if_due: bool,
}

pub fn run(ctx: &Ctx, args: CompactArgs, out: &mut Out) -> Result<ExitCode> {
    let project = ctx.project(args.target.project.as_deref())?;
    if args.if_due && !ctx.open_session(&project)?.store().compaction_due()? {
        if out.json {
            out.json(&json!({"success": true, "project": project.name.as_str(), "compacted": false, "reason": "not due"}));
        } else {
            out.line(format!("{}: not due for compaction", project.name));
        }
        return Ok(ExitCode::Ok);
    }
    let started = Instant::now();
    // A pause between the build and the swap, for tests that change the log meanwhile; in
    // debug builds only.
    let pause = std::env::var("MEMLOG_TEST_COMPACT_PAUSE_MS")
        .ok()
        .filter(|_| cfg!(debug_assertions))
        .and_then(|ms| ms.parse().ok())
        .map_or(std::time::Duration::ZERO, std::time::Duration::from_millis);
    let outcome = compact::run(&project, ctx.lock_timeout(), pause)?;
    let elapsed = started.elapsed();
    let name = project.name.as_str();
    match outcome {
        Outcome::Busy if out.json => {
            out.json(&json!({"success": true, "project": name, "compacted": false, "reason": "another process is compacting this project"}));
        }
        Outcome::Busy => out.line(format!(
            "another process is compacting {name}: nothing to do"
        )),
        Outcome::Compacted { built, caught_up } if out.json => {
            out.json(&json!({"success": true, "project": name, "compacted": true, "events": built, "caught_up": caught_up, "millis": elapsed.as_millis()}));
        }
        Outcome::Stale if out.json => {
            out.json(&json!({"success": true, "project": name, "compacted": false, "reason": "the log was rewritten while the new store was built; it was thrown away"}));
        }
        Outcome::Stale => out.line(format!(
            "{name}: the log was rewritten while the new store was built (a checkout, a gc): \
             nothing swapped in; the next write starts over"
        )),
        Outcome::Compacted { built, caught_up } => out.line(format!(
            "compacted {name}: rebuilt from {built} event{} in {elapsed:.1?}, then {caught_up} written meanwhile applied",
            if built == 1 { "" } else { "s" }
        )),
    }
    Ok(ExitCode::Ok)
}

/// Set to `0` to leave compaction to `memlog compact` alone.
pub const AUTO_COMPACT_ENV: &str = "MEMLOG_AUTO_COMPACT";

/// Starts `memlog compact` in the background, detached, for each project this process found
/// due for it, unless [`AUTO_COMPACT_ENV`] is `0`. Best effort: a compaction that cannot start
/// is tried again by the next command that writes.
pub fn start_due() {
    let due = compact::take_due();
    if due.is_empty() || std::env::var_os(AUTO_COMPACT_ENV).is_some_and(|v| v == "0") {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut started = STARTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // A long-running process (the MCP server) reaps the compactions it started before.
    started.retain_mut(|child| matches!(child.try_wait(), Ok(None)));
    for project in due
        .iter()
        .filter(|p| !compact::running(p) && !compact::failed_lately(p))
    {
        if let Ok(child) = spawn(&exe, project) {
            started.push(child);
        }
    }
}

/// Compactions this process started and has not seen end (reaped by the next call, in the
/// processes that run for long: the MCP server, the lifecycle daemon).
static STARTED: std::sync::Mutex<Vec<std::process::Child>> = std::sync::Mutex::new(Vec::new());

fn spawn(exe: &std::path::Path, project: &Project) -> std::io::Result<std::process::Child> {
    use std::process::Command;
    // At a lower priority where `nice` exists: the agents' own commands come first (a
    // compaction keeps both cores of a small machine busy for seconds).
    let mut niced = Command::new("nice");
    niced.args(["-n", "10"]).arg(exe);
    // Not waited for: the command that started it exits now, and the compaction goes on.
    match detached(niced, project).spawn() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            detached(Command::new(exe), project).spawn()
        }
        other => other,
    }
}

/// `command` (memlog, or something that runs it) given `compact <project> --workspace <root>`,
/// with nothing to read or write and out of the caller's process group.
fn detached(mut command: std::process::Command, project: &Project) -> std::process::Command {
    use std::process::Stdio;
    command
        .arg("compact")
        .arg("--if-due")
        .arg(project.name.as_str())
        .arg("--workspace")
        .arg(project.workspace.root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env_remove(super::bench::PEAK_RSS_ENV);
    #[cfg(unix)]
    {
        // Its own process group: a Ctrl-C meant for the command that started it does not
        // interrupt it half-way (which would only waste the work).
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    command
}
