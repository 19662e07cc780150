//! `rebuild` and `dump`.

use super::{Ctx, ExitCode, Out};
use crate::error::Result;
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
pub struct ProjectArg {
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: Option<String>,
}

pub fn rebuild(ctx: &Ctx, args: ProjectArg, out: &mut Out) -> Result<ExitCode> {
    let project = ctx.project(args.project.as_deref())?;
    let started = std::time::Instant::now();
    let session = crate::store::session::Session::open_rebuilt(&project, ctx.lock_timeout())?;
    let warnings = session.report.warnings();
    for w in &warnings {
        super::output::warn(&w.message);
    }
    let events = session.report.applied;
    let elapsed = started.elapsed();
    if out.json {
        out.json(&json!({"success": true, "project": project.name.as_str(), "events": events, "millis": elapsed.as_millis(), "warnings": warnings}));
    } else {
        out.line(format!(
            "rebuilt {} from {events} events in {:.1?}",
            project.name, elapsed
        ));
    }
    Ok(ExitCode::Ok)
}

pub fn dump(ctx: &Ctx, args: ProjectArg, out: &mut Out) -> Result<ExitCode> {
    let project = ctx.project(args.project.as_deref())?;
    let session = ctx.open_session(&project)?;
    if out.json {
        // One JSON value per record, in the canonical order.
        let mut buf = Vec::new();
        session.store().dump(&mut buf)?;
        let records: Vec<Value> = String::from_utf8_lossy(&buf)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|_| Value::String(l.to_owned())))
            .collect();
        out.json(&json!({"project": project.name.as_str(), "records": records}));
        return Ok(ExitCode::Ok);
    }
    let mut w = std::io::BufWriter::new(out.raw());
    match session.store().dump(&mut w) {
        Err(crate::Error::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::Ok),
        other => other.map(|()| ExitCode::Ok),
    }
}
