//! `verify`: every line of the log, checked without the store.

use super::output::safe;
use super::plural::count;
use super::{Ctx, ExitCode, Out};
use crate::error::Result;

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: Option<String>,
}

pub fn run(ctx: &Ctx, args: VerifyArgs, out: &mut Out) -> Result<ExitCode> {
    let project = ctx.project(args.project.as_deref())?;
    // The machine's clock, not `--now` (which dates writes): an event is in the future when
    // it is dated after the real time, as a write dated so is warned of.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(i64::MAX / 2, |d| {
            i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 2)
        });
    let report = crate::log::verify::verify_log(&project.log_path(), now)?;
    if report.missing {
        super::output::warn(&missing_log_message(&project));
    }
    if out.json {
        // The report's `warnings` are findings in the log ({line, offset, problem}), part of
        // the answer; the envelope's are what the command said (a missing log).
        out.report(&report);
    } else {
        for f in &report.problems {
            out.line(format!(
                "{}:{}: (byte offset {}) {}",
                report.file,
                f.line,
                f.offset,
                safe(&f.problem)
            ));
        }
        for f in &report.warnings {
            out.line(format!(
                "{}:{}: warning: {}",
                report.file,
                f.line,
                safe(&f.problem)
            ));
        }
        for c in &report.conflicts {
            out.line(format!(
                "{c}: unresolved concurrent changes (several heads)"
            ));
        }
        out.line(format!(
            "{}: {}, {}, {}, {}: {}",
            report.file,
            count(report.lines, "line", "lines"),
            count(report.events, "event", "events"),
            count(report.entries, "entry", "entries"),
            count(report.duplicate_lines, "duplicate line", "duplicate lines"),
            if report.missing {
                "no log (the file does not exist)".to_owned()
            } else if report.ok {
                "ok".to_owned()
            } else {
                format!(
                    "{} problem{}",
                    report.problems.len(),
                    if report.problems.len() == 1 { "" } else { "s" }
                )
            }
        ));
    }
    Ok(if report.ok {
        ExitCode::Ok
    } else {
        ExitCode::Problems
    })
}

/// The warning for a project whose `events.jsonl` does not exist (`verify`, `health`).
pub fn missing_log_message(project: &crate::project::Project) -> String {
    format!(
        "{} does not exist: the project's log was deleted or moved; restore it from git (`git \
         checkout -- ai-memory/{}/events.jsonl`), or recreate an empty one with `memlog init {}` \
         if the project never had events",
        project.log_path().display(),
        project.name,
        project.name
    )
}
