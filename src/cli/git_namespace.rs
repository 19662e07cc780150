//! `fork` and `merge-project`: memory namespaces.

use super::output::safe;
use super::plural::count;
use super::{Ctx, ExitCode, Out};
use crate::error::Result;
use crate::workspace::ProjectName;

#[derive(Debug, clap::Args)]
pub struct ForkArgs {
    /// The project to fork
    pub from: String,
    /// The new project: starts with a copy of the events and configuration
    pub new: String,
}

#[derive(Debug, clap::Args)]
pub struct MergeProjectArgs {
    /// The project whose events are added
    pub from: String,
    /// The project that receives them
    pub into: String,
}

pub fn fork(ctx: &Ctx, args: ForkArgs, out: &mut Out) -> Result<ExitCode> {
    super::as_of::refuse(ctx, "fork writes a project")?;
    let from = ctx.project(Some(&args.from))?;
    let new = ProjectName::new(&args.new)?;
    let ws = ctx.workspace()?;
    let forked = crate::git::namespace::fork(&ws, &from, &new, &ctx.now())?;
    if out.json {
        let mut v = serde_json::to_value(&forked).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.insert("success".into(), true.into());
        }
        out.json(&v);
    } else {
        out.line(format!(
            "forked {} into {} ({})",
            forked.from,
            forked.project,
            count(forked.events, "event", "events")
        ));
    }
    Ok(ExitCode::Ok)
}

pub fn merge_project(ctx: &Ctx, args: MergeProjectArgs, out: &mut Out) -> Result<ExitCode> {
    let from = ctx.project(Some(&args.from))?;
    let into = ctx.project(Some(&args.into))?;
    let wctx = ctx.write_context_for(&into, "import")?;
    let merged = crate::git::namespace::merge(&from, &into, &wctx)?;
    let code = if merged.rejected.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Problems
    };
    if out.json {
        let mut v = serde_json::to_value(&merged).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.insert("success".into(), merged.rejected.is_empty().into());
        }
        out.json(&v);
        return Ok(code);
    }
    out.line(format!(
        "merged {} into {}: {} added, {} already there, {} rejected, {} settled, {}",
        from.name,
        into.name,
        count(merged.added, "event", "events"),
        merged.already,
        merged.rejected.len(),
        count(merged.duplicates.len(), "duplicate", "duplicates"),
        count(
            merged.conflicts.len(),
            "entry in conflict",
            "entries in conflict"
        )
    ));
    for (event, why) in &merged.rejected {
        out.line(format!(
            "rejected event {}: {}",
            &event[..12.min(event.len())],
            safe(why)
        ));
    }
    for d in &merged.duplicates {
        out.line(format!(
            "duplicate: kept {}, deprecated {}",
            d.kept, d.deprecated
        ));
    }
    for c in &merged.conflicts {
        out.line(format!(
            "conflict: {c} (see `memlog conflicts {}`)",
            into.name
        ));
    }
    Ok(code)
}
