//! `projects`: the projects of the workspace with their entry counts.

use super::{Ctx, ExitCode, Out};
use crate::error::Result;
use crate::project::Project;
use serde_json::json;

#[derive(Debug, clap::Args)]
pub struct ProjectsArgs {}

pub fn run(ctx: &Ctx, _args: ProjectsArgs, out: &mut Out) -> Result<ExitCode> {
    let ws = ctx.workspace()?;
    let mut rows = Vec::new();
    for name in ws.projects()? {
        let dir = ws.project_dir(&name);
        let counted = (|| -> Result<serde_json::Value> {
            let project = Project::open(&ws, name.clone())?;
            super::config::refuse_invalid(ctx, &project)?;
            let session = ctx.open_session(&project)?;
            let stats = session.store().stats()?;
            Ok(json!({
                "entries": stats.total_entries,
                "active": stats.entries_by_status.get("active").copied().unwrap_or(0),
                "events": session.store().event_count()?,
            }))
        })();
        // A broken project is listed with its problem, not a reason to list nothing.
        let mut row = counted.unwrap_or_else(|e| {
            let message = crate::policy::validate::redact_secrets(&e.to_string());
            super::output::warn(&format!("project `{name}`: {message}"));
            json!({"entries": null, "active": null, "events": null, "error": message})
        });
        row["project"] = json!(name.as_str());
        row["path"] = json!(dir);
        rows.push(row);
    }
    if out.json {
        out.json(&rows);
        return Ok(ExitCode::Ok);
    }
    if rows.is_empty() {
        out.line(format!(
            "no projects in {}: run `memlog init <project>`",
            ws.root().display()
        ));
        return Ok(ExitCode::Ok);
    }
    out.line(format!(
        "{:<24} {:>8} {:>8} {:>8}",
        "PROJECT", "ENTRIES", "ACTIVE", "EVENTS"
    ));
    for r in &rows {
        if r["error"].is_string() {
            out.line(format!(
                "{:<24} {:>8} {:>8} {:>8}  (unreadable: see the warning)",
                r["project"].as_str().unwrap_or_default(),
                "-",
                "-",
                "-"
            ));
            continue;
        }
        out.line(format!(
            "{:<24} {:>8} {:>8} {:>8}",
            r["project"].as_str().unwrap_or_default(),
            r["entries"].to_string(),
            r["active"].to_string(),
            r["events"].to_string()
        ));
    }
    Ok(ExitCode::Ok)
}
