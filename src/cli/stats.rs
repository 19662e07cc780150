//! `stats`: counters maintained by delta, read without scanning entries.

use super::{Ctx, ExitCode, Out};
use crate::error::Result;
use serde_json::{Value, json};
use std::collections::BTreeMap;

#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: Option<String>,
}

fn series(map: &BTreeMap<String, i64>) -> Value {
    Value::Array(
        map.iter()
            .map(|(d, c)| json!({"date": d, "count": c}))
            .collect(),
    )
}

pub fn run(ctx: &Ctx, args: StatsArgs, out: &mut Out) -> Result<ExitCode> {
    let project = ctx.project(args.project.as_deref())?;
    let session = ctx.open_session(&project)?;
    let s = session.store().stats()?;
    let mut agents: Vec<(&String, &i64)> = s.entries_by_agent.iter().collect();
    agents.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let superseded = s.entries_by_status.get("superseded").copied().unwrap_or(0);
    #[expect(clippy::cast_precision_loss, reason = "counts far below 2^52")]
    let pct = if s.total_entries == 0 {
        0.0
    } else {
        (superseded as f64 * 10_000.0 / s.total_entries as f64).round() / 100.0
    };
    let statistics = json!({
        "total_entries": s.total_entries,
        "entries_by_section": s.entries_by_section,
        "entries_by_status": s.entries_by_status,
        "entries_by_kind": s.entries_by_kind,
        "entries_by_scope": s.entries_by_scope,
        "entries_by_lifecycle": s.entries_by_lifecycle,
        "avg_confidence": s.avg_confidence(),
        "confidence_distribution": projections::stats::CONFIDENCE_BUCKETS.iter().map(|b| (b.to_string(), s.confidence_distribution.get(*b).copied().unwrap_or(0))).collect::<BTreeMap<_, _>>(),
        "low_confidence_count": s.low_confidence_count,
        "evidence_type_distribution": s.evidence_type_distribution,
        "stale_evidence_count": s.stale_evidence_count,
        "entries_by_agent": s.entries_by_agent,
        "most_active_agents": agents.iter().take(10).map(|(a, c)| json!({"agent": a, "count": c})).collect::<Vec<_>>(),
        "entries_created_over_time": series(&s.entries_created_per_day),
        "entries_superseded_over_time": series(&s.entries_superseded_per_day),
        "superseded_percentage": pct,
        "compaction_candidates": superseded,
        "pinned_count": s.pinned_count,
        "conflict_count": s.conflict_count,
        "purged_count": s.purged_count,
    });
    if out.json {
        out.json(&json!({"project": project.name.as_str(), "computed_at": ctx.now(), "statistics": statistics}));
        return Ok(ExitCode::Ok);
    }
    out.line(format!("project            {}", project.name));
    out.line(format!("total entries      {}", s.total_entries));
    out.line(format!(
        "average confidence {:.2}  (low-confidence: {})",
        s.avg_confidence(),
        s.low_confidence_count
    ));
    let show = |out: &mut Out, label: &str, m: &BTreeMap<String, i64>| {
        let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k} {v}")).collect();
        out.line(format!(
            "{label:<19}{}",
            if parts.is_empty() {
                "-".into()
            } else {
                parts.join(", ")
            }
        ));
    };
    show(out, "by section", &s.entries_by_section);
    show(out, "by status", &s.entries_by_status);
    show(out, "by kind", &s.entries_by_kind);
    show(out, "by lifecycle", &s.entries_by_lifecycle);
    show(out, "confidence", &s.confidence_distribution);
    show(out, "evidence types", &s.evidence_type_distribution);
    show(out, "by agent", &s.entries_by_agent);
    out.line(format!(
        "superseded         {pct}%  pinned {}  conflicts {}  stale evidence {}",
        s.pinned_count, s.conflict_count, s.stale_evidence_count
    ));
    Ok(ExitCode::Ok)
}
