//! `conflicts`: every entry that concurrent writers left with several heads, with both sides.

use super::output::{clip, safe};
use super::{Ctx, ExitCode, Out};
use crate::error::Result;
use serde_json::Value;

#[derive(Debug, clap::Args)]
pub struct ConflictsArgs {
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: Option<String>,
    /// Exit with status 1 when any entry is in conflict, or active entries duplicate each other
    /// (for CI)
    #[arg(long)]
    pub check: bool,
}

fn value_text(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => safe(s),
        other => safe(&other.to_string()),
    }
}

fn short(id: &str) -> &str {
    &id[..12.min(id.len())]
}

/// Warns about each group of active entries with the same subject, scope and summary (two
/// branches that recorded the same thing, merged), naming the one to keep (the most relevant,
/// as `merge-project` chooses) and how to settle the others. Shown until they are settled, not
/// only by the command that caught up with the merge.
fn warn_duplicates(store: &crate::store::Store) -> Result<usize> {
    let groups = store.duplicate_groups()?;
    let n = groups.len();
    for mut group in groups {
        group.sort_by(|a, b| crate::git::namespace::relevance(b, a));
        let Some((keep, others)) = group.split_first() else {
            continue;
        };
        let others: Vec<&str> = others.iter().map(|s| s.id.as_str()).collect();
        super::output::warn(&format!(
            "{} and {} are active with the same subject, scope and summary: keep {} (the most \
             relevant) and settle the other{}: `memlog deprecate {} --reason \"duplicate of {}\"`",
            keep.id,
            others.join(", "),
            keep.id,
            if others.len() == 1 { "" } else { "s" },
            others.join(" / "),
            keep.id,
        ));
    }
    Ok(n)
}

pub fn run(ctx: &Ctx, args: ConflictsArgs, out: &mut Out) -> Result<ExitCode> {
    let project = ctx.project(args.project.as_deref())?;
    let session = ctx.open_session(&project)?;
    let conflicts = crate::git::conflicts::list(session.store(), || {
        // The same events the session's store was built from.
        let events = match &ctx.as_of {
            Some(as_of) => crate::git::as_of::events_as_of(&project, as_of)?.0,
            None => crate::git::as_of::all_events(&project)?,
        };
        let events: Vec<projections::Event> = events.into_iter().map(|(e, _)| e).collect();
        Ok(crate::git::conflicts::in_conflict(&events))
    })?;
    let duplicates = warn_duplicates(session.store())?;
    super::query::warn_without_outcome(&[crate::retrieval::search::Source {
        store: session.store(),
        project: project.name.to_string(),
        global: false,
    }])?;
    let code = if args.check && (!conflicts.is_empty() || duplicates > 0) {
        ExitCode::Problems
    } else {
        ExitCode::Ok
    };
    if out.json {
        out.json(&conflicts);
        return Ok(code);
    }
    if conflicts.is_empty() {
        out.line(format!("no conflicts in {}", project.name));
        return Ok(code);
    }
    for c in &conflicts {
        out.line(format!(
            "{}  {}  [{}]  {} sides{}",
            c.entry,
            clip(&c.summary, 60),
            c.status,
            c.sides.len(),
            if c.disputed.is_empty() {
                String::new()
            } else {
                format!(", disputed: {}", c.disputed.join(", "))
            }
        ));
        if !c.base.is_empty() {
            out.line(format!(
                "  base    event {}",
                c.base
                    .iter()
                    .map(|b| short(b))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        for (i, side) in c.sides.iter().enumerate() {
            out.line(format!(
                "  side {}  head {} by {}",
                i + 1,
                short(&side.head),
                clip(&side.actors.join(", "), 60)
            ));
            for e in &side.events {
                out.line(format!(
                    "          {}  {:<11} {:<20} event {}",
                    e.at,
                    e.event_type,
                    clip(&e.actor, 20),
                    short(&e.event)
                ));
            }
            if side.set.is_empty() {
                out.line("          (changed no field)");
            }
            for (field, value) in &side.set {
                out.line(format!(
                    "          set {field} = {}",
                    clip(&value_text(value), 80)
                ));
            }
        }
        for (field, value) in &c.current {
            out.line(format!(
                "  now     {field} = {}",
                clip(&value_text(value), 80)
            ));
        }
        out.line(format!(
            "  settle  memlog resolve {} [--winner ID | field flags] --reason \"...\"",
            c.entry
        ));
    }
    Ok(code)
}
