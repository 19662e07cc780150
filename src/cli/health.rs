//! `health`: whether a project's memory is usable, and the numbers an operator checks first.

use super::config::{chosen_projects, dir_size, problems};
use super::plural::count;
use super::{Ctx, ExitCode, Out};
use crate::error::{Error, Result};
use crate::project::Project;
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
pub struct HealthArgs {
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: Option<String>,
    /// Every project of the workspace
    #[arg(long, conflicts_with = "project_name")]
    pub all: bool,
}

/// What this version cannot report yet, said as such rather than as a made-up value.
const NO_LIFECYCLE_RUNS: &str = "never: run `memlog lifecycle run` (or `memlog lifecycle daemon`)";
const NO_CONSOLIDATION: &str =
    "unknown: this version of memlog records no consolidation runs (no consolidation yet)";

/// One project's health: the report, and the reasons it is unhealthy (none when healthy).
fn check(ctx: &Ctx, project: &Project) -> (Value, Vec<String>) {
    let mut unhealthy = Vec::new();
    let config = match fs_err::read_to_string(project.config_path()) {
        Ok(text) => {
            let found = problems(&text, project.name.as_str());
            if !found.is_empty() {
                unhealthy.push(format!(
                    "memlog.json is invalid ({} problem{}): run `memlog config validate {}`",
                    found.len(),
                    if found.len() == 1 { "" } else { "s" },
                    project.name
                ));
            }
            json!({"file": project.config_path(), "valid": found.is_empty(), "problems": found})
        }
        Err(e) => {
            unhealthy.push(format!("memlog.json cannot be read: {e}"));
            json!({"file": project.config_path(), "valid": false, "problems": [e.to_string()]})
        }
    };
    let log_bytes = std::fs::metadata(project.log_path()).map(|m| m.len());
    let exists = !matches!(&log_bytes, Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    let mut log = json!({"file": project.log_path(), "bytes": log_bytes.ok(), "exists": exists});
    let mut warnings = Vec::new();
    if !exists {
        // Read as an empty log below; said, so that a deleted log is not taken for a new one.
        warnings.push(super::verify::missing_log_message(project));
    }
    let mut projections = json!({});
    let mut entries = Value::Null;
    let mut events = Value::Null;
    match crate::store::session::Session::open_reading(project, ctx.lock_timeout()) {
        Ok(mut session) => {
            log["readable"] = json!(exists);
            // Every event whose parent is missing, as long as it is: not only those this
            // catch-up found (an earlier command may have applied them).
            if let Err(e) = session.report_all_missing_parents() {
                unhealthy.push(format!("the store cannot be read: {e}"));
            }
            let report = &session.report;
            let current = report.mode == "none" || (report.mode.is_empty() && report.applied == 0);
            projections = json!({
                "current": current,
                "caught_up": if current { Value::Null } else { json!({"mode": report.mode, "events_applied": report.applied, "rebuilt_because": report.rebuilt_because}) },
            });
            warnings.extend(report.warnings().into_iter().map(|w| w.message));
            // A credential that reached the log without memlog's checks: redacted in every
            // read, named here (never its value) with the fix.
            match session.store().secrets() {
                Ok(secrets) => {
                    for (entry, found) in &secrets {
                        for f in found {
                            unhealthy.push(format!(
                                "entry {entry} holds a secret in `{}` (rule {}), redacted in \
                                 every output: {}",
                                f.field,
                                f.rule,
                                crate::policy::stored::fix(entry)
                            ));
                        }
                    }
                }
                Err(e) => unhealthy.push(format!("the store cannot be read: {e}")),
            }
            match session.store().compaction_state() {
                Ok(state) => projections["compaction"] = json!(state),
                Err(e) => unhealthy.push(format!("the store cannot be read: {e}")),
            }
            match (session.store().stats(), session.store().event_count()) {
                (Ok(s), Ok(n)) => {
                    entries = json!({"total": s.total_entries, "in_active_index": s.hot_entries, "by_status": s.entries_by_status});
                    events = json!(n);
                }
                (Err(e), _) | (_, Err(e)) => {
                    unhealthy.push(format!("the store cannot be read: {e}"));
                }
            }
            // The counts above come from a few records; a damaged block elsewhere is found
            // only by reading it, and marked so that the next command rebuilds the store.
            if let Err(e) = session.store().read_all() {
                crate::store::session::mark_damaged(&e);
                unhealthy.push(format!("the store cannot be read: {e}"));
            }
        }
        Err(e) => {
            let readable = !matches!(e, Error::CorruptLog { .. } | Error::Io(_));
            log["readable"] = json!(readable);
            unhealthy.push(crate::policy::validate::redact_secrets(&e.to_string()));
        }
    }
    if let Some(at) = crate::store::compact::failed_at(project) {
        let at = chrono::DateTime::<chrono::Utc>::from(at).format("%Y-%m-%dT%H:%M:%SZ");
        warnings.push(format!(
            "the last compaction failed ({at}); run `memlog compact` to see why (a log that \
             does not verify: `memlog verify`)"
        ));
    }
    let store = project.store_dir();
    projections["store"] = json!(store);
    projections["bytes_on_disk"] = json!(dir_size(&store));
    projections["state_dir_bytes_on_disk"] = json!(dir_size(&project.state_dir()));
    // The last run report the lifecycle engine kept (.memlog/lifecycle-runs.jsonl).
    let (last_run, last_run_note) = match crate::lifecycle::metrics::last_run(project) {
        Ok(Some(r)) => {
            let note = format!(
                "{} ({}, {}, {} skipped, {} ms)",
                r.now,
                count(r.processed, "entry", "entries"),
                count(
                    r.transitions.values().sum::<usize>(),
                    "transition",
                    "transitions"
                ),
                r.skipped,
                r.duration_ms
            );
            (json!(r.now), note)
        }
        Ok(None) => (Value::Null, NO_LIFECYCLE_RUNS.to_owned()),
        Err(e) => (
            Value::Null,
            format!("unknown: the lifecycle run history cannot be read: {e}"),
        ),
    };
    let report = json!({
        "project": project.name.as_str(),
        "healthy": unhealthy.is_empty(),
        "problems": unhealthy,
        "warnings": warnings,
        "log": log,
        "projections": projections,
        "entries": entries,
        "events": events,
        "last_lifecycle_run": last_run,
        "last_lifecycle_run_note": last_run_note,
        "last_consolidation": Value::Null,
        "last_consolidation_note": NO_CONSOLIDATION,
        "config": config,
    });
    (report, unhealthy)
}

pub fn run(ctx: &Ctx, args: HealthArgs, out: &mut Out) -> Result<ExitCode> {
    let projects = chosen_projects(ctx, args.project.as_deref(), args.all)?;
    let mut reports = Vec::new();
    let mut all_healthy = true;
    for p in &projects {
        let (report, unhealthy) = check(ctx, p);
        all_healthy &= unhealthy.is_empty();
        reports.push(report);
    }
    if out.json {
        out.json(&reports);
    } else {
        for r in &reports {
            print_text(out, r);
        }
    }
    Ok(if all_healthy {
        ExitCode::Ok
    } else {
        ExitCode::Problems
    })
}

fn print_text(out: &mut Out, r: &Value) {
    let yes_no = |v: &Value| if v == &json!(true) { "yes" } else { "no" };
    let healthy = r["healthy"] == true;
    out.line(format!(
        "project {}: {}",
        r["project"].as_str().unwrap_or_default(),
        if healthy { "healthy" } else { "UNHEALTHY" }
    ));
    for p in r["problems"].as_array().into_iter().flatten() {
        out.line(format!("  problem: {}", p.as_str().unwrap_or_default()));
    }
    for w in r["warnings"].as_array().into_iter().flatten() {
        out.line(format!("  warning: {}", w.as_str().unwrap_or_default()));
    }
    if r["log"]["exists"] == false {
        out.line("  log readable          no (the file does not exist)");
    } else {
        out.line(format!(
            "  log readable          {} ({} bytes)",
            yes_no(&r["log"]["readable"]),
            r["log"]["bytes"]
        ));
    }
    // Unknown (null) when the log or the store could not be read: say so, not `null`.
    let count = |v: &serde_json::Value| match v.as_u64() {
        Some(n) => n.to_string(),
        None => "unknown".to_owned(),
    };
    let p = &r["projections"];
    out.line(format!(
        "  projections current   {}{}",
        yes_no(&p["current"]),
        if p["current"] == true || p["caught_up"].is_null() {
            String::new()
        } else {
            format!(
                " (caught up now: {}, {} events applied)",
                p["caught_up"]["mode"].as_str().unwrap_or_default(),
                count(&p["caught_up"]["events_applied"])
            )
        }
    ));
    out.line(format!(
        "  index size on disk    {} bytes (store), {} bytes (.memlog/ in all)",
        p["bytes_on_disk"], p["state_dir_bytes_on_disk"]
    ));
    let c = &p["compaction"];
    if !c.is_null() {
        out.line(format!(
            "  store built from      {} log lines; {} applied since{}",
            c["built_from_lines"],
            c["lines"]
                .as_u64()
                .unwrap_or(0)
                .saturating_sub(c["built_from_lines"].as_u64().unwrap_or(0)),
            if c["due"] == true {
                " (compaction due: `memlog compact`)"
            } else {
                ""
            }
        ));
    }
    if r["entries"]["total"].is_null() {
        out.line("  entries               unknown (the log could not be read)");
    } else {
        out.line(format!(
            "  entries               {} ({} in the active index)",
            count(&r["entries"]["total"]),
            count(&r["entries"]["in_active_index"])
        ));
    }
    out.line(format!("  events                {}", count(&r["events"])));
    out.line(format!(
        "  last lifecycle run    {}",
        r["last_lifecycle_run_note"].as_str().unwrap_or_default()
    ));
    out.line(format!(
        "  last consolidation    {}",
        r["last_consolidation_note"].as_str().unwrap_or_default()
    ));
    out.line(format!(
        "  configuration valid   {}",
        yes_no(&r["config"]["valid"])
    ));
}
