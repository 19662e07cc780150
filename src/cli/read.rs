//! `show`, `list`, `history` and `audit`: answers from the projections.

use super::output::{clip, safe};
use super::{Ctx, ExitCode, Out};
use crate::error::Result;
use crate::store::session::Session;
use projections::EntryState;
use projections::entry_json::to_flat_map;
use serde_json::Value;

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Entry id or unique prefix
    pub id: String,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: Option<String>,
    #[command(flatten)]
    pub filters: super::query::FilterArgs,
    /// At most this many entries
    #[arg(long, default_value_t = 50, allow_negative_numbers = true, value_parser = super::numbers::whole::<usize>)]
    pub limit: usize,
    /// Every entry (no limit)
    #[arg(long)]
    pub all: bool,
    /// Archived entries instead (cold storage, by id; page with --offset and --limit)
    #[arg(long, group = "cold")]
    pub archived: bool,
    /// Expired entries instead (archived past their retention; cold storage, by id)
    #[arg(long, group = "cold")]
    pub expired: bool,
    /// Purged entries instead (no summary, content or evidence left; by id)
    #[arg(long, group = "cold")]
    pub purged: bool,
    /// With --archived, --expired or --purged: skip this many entries
    #[arg(long, default_value_t = 0, requires = "cold", allow_negative_numbers = true, value_parser = super::numbers::whole::<usize>)]
    pub offset: usize,
}

impl ListArgs {
    /// The storage state `--archived`, `--expired` or `--purged` asks for.
    fn cold(&self) -> Option<&'static str> {
        [
            (self.archived, "archived"),
            (self.expired, "expired"),
            (self.purged, "purged"),
        ]
        .into_iter()
        .find_map(|(set, state)| set.then_some(state))
    }
}

#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    /// Entry id or unique prefix
    pub id: String,
}

#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// Entry id or unique prefix (default: every entry of the project)
    pub id: Option<String>,
    /// At most this many records (newest last)
    #[arg(long, allow_negative_numbers = true, value_parser = super::numbers::whole::<usize>)]
    pub limit: Option<usize>,
}

fn open(ctx: &Ctx, project: Option<&str>) -> Result<Session> {
    let p = ctx.project(project)?;
    ctx.open_session(&p)
}

fn value_text(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => safe(s),
        other => safe(&other.to_string()),
    }
}

pub fn show(ctx: &Ctx, args: ShowArgs, out: &mut Out) -> Result<ExitCode> {
    let session = open(ctx, None)?;
    let id = session.resolve(&normalize_id(&args.id))?;
    let Some(mut state) = session.store().entry(&id)? else {
        return Err(crate::Error::NotFound {
            project: session.project.name.to_string(),
            prefix: id,
        });
    };
    let project = session.project.clone();
    // A look at the past (`--as-of`) is not a use of the entry today: no access, no restore.
    let past = ctx.global.as_of.is_some();
    if !past {
        crate::lifecycle::access_log::record_best_effort(&project, &[&id], &ctx.now(), "show");
    }
    if state.lifecycle == projections::Lifecycle::Archived && !state.purged && !past {
        // Reading an archived entry restores it: the store lock is released for the write.
        // A failed restore does not fail the read: the entry is shown as it is.
        drop(session);
        let restored = ctx.write_context().and_then(|w| {
            crate::lifecycle::archive::restore_if_archived(&project, &w, &state, "show")
        });
        match restored {
            Ok(w) => {
                if let Some(entry) = w.and_then(|w| w.entry) {
                    state = entry;
                }
                super::output::note(&format!("{id} was archived; reading it restored it"));
            }
            Err(e) => {
                super::output::warn(&format!("{id} is archived and could not be restored: {e}"))
            }
        }
    }
    let map = to_flat_map(&state);
    if out.json {
        out.json(&map);
        return Ok(ExitCode::Ok);
    }
    const ORDER: [&str; 31] = [
        "id",
        "status",
        "section",
        "kind",
        "subject",
        "scope",
        "summary",
        "content",
        "tags",
        "confidence",
        "evidence",
        "superseded_by",
        "superseded_at",
        "related_entries",
        "valid_from",
        "valid_to",
        "review_interval",
        "created_by",
        "created_at",
        "updated_at",
        "updated_by",
        "lifecycle",
        "pinned",
        "pinned_by",
        "pinned_at",
        "status_reason",
        "evidence_stale",
        "purged",
        "version",
        "conflict",
        "heads",
    ];
    for key in ORDER {
        let Some(v) = map.get(key) else { continue };
        match (key, v) {
            ("evidence", Value::Array(items)) => {
                out.line(format!(
                    "{key:<16}{}",
                    if items.is_empty() { "-" } else { "" }
                ));
                for e in items {
                    out.line(format!(
                        "  - {}: {} ({})",
                        value_text(&e["type"]),
                        value_text(&e["uri"]),
                        value_text(&e["note"])
                    ));
                }
            }
            ("content", Value::String(s)) => {
                out.line(format!("{key:<16}"));
                for l in s.lines() {
                    out.line(format!("  {}", safe(l)));
                }
            }
            (_, Value::Array(items)) => out.line(format!(
                "{key:<16}{}",
                if items.is_empty() {
                    "-".into()
                } else {
                    items.iter().map(value_text).collect::<Vec<_>>().join(", ")
                }
            )),
            _ => out.line(format!("{key:<16}{}", value_text(v))),
        }
    }
    if state.fields.confidence < 0.5 {
        out.line("note            low confidence (below 0.5)");
    }
    if state.in_conflict() {
        out.line(format!(
            "note            concurrent changes left {} heads; see `memlog history {}`",
            state.heads.len(),
            state.id
        ));
    }
    Ok(ExitCode::Ok)
}

/// Accepts ids with or without the `m-` prefix.
/// Entry ids as people read them in tables: the shortest unique prefix of at least 10
/// characters (`m-` and 8), like git's short commit ids; any unique prefix is accepted back.
fn short_ids<'a>(session: &Session, ids: impl Iterator<Item = &'a str>) -> Result<Vec<String>> {
    let mut known = std::collections::HashMap::new();
    ids.map(|id| {
        if let Some(s) = known.get(id) {
            return Ok(String::clone(s));
        }
        let short = session.store().short_id(id, 10)?;
        known.insert(id.to_owned(), short.clone());
        Ok(short)
    })
    .collect()
}

pub fn normalize_id(id: &str) -> String {
    if id.starts_with("m-") {
        id.to_owned()
    } else {
        format!("m-{id}")
    }
}

pub fn list(ctx: &Ctx, args: ListArgs, out: &mut Out) -> Result<ExitCode> {
    let session = ctx.open_session_whole(&ctx.project(args.project.as_deref())?)?;
    if let Some(state) = args.cold() {
        return list_cold(&session, &args, state, out);
    }
    let limit = if args.all { usize::MAX } else { args.limit };
    let (policy, _) = super::query::rank_params(ctx, &session.project)?;
    let filters = args
        .filters
        .resolve(&policy, super::query::Defaults::None)?;
    let now = crate::retrieval::features::unix_millis(&ctx.now()).unwrap_or(0);
    let keep = |s: &EntryState| filters.passes(s, now);
    // One more than shown, to know whether entries were left out. `--limit 0` asks for none.
    let mut entries = if limit == 0 {
        Vec::new()
    } else {
        recent_passing(&session, limit.saturating_add(1), &filters, now, keep)?
    };
    let left_out = if entries.len() > limit {
        entries.truncate(limit);
        Some(format!(
            "showing {limit} of {} entries; use --limit N or --all",
            session.store().hot_count()?
        ))
    } else {
        None
    };
    if out.json {
        if let Some(w) = &left_out {
            super::output::warn(w);
        }
        let items: Vec<Value> = entries
            .iter()
            .map(|s| Value::Object(to_flat_map(s)))
            .collect();
        out.json(&items);
        return Ok(ExitCode::Ok);
    }
    if entries.is_empty() {
        out.line("no entries");
        return Ok(ExitCode::Ok);
    }
    let ids = short_ids(&session, entries.iter().map(|s| s.id.as_str()))?;
    let w = ids.iter().map(String::len).max().unwrap_or(2).max(2);
    out.line(format!(
        "{:<w$}  {:<24}  {:<12}  {:<12}  {:<11}  {:<24}  {:<20}  {:>4}  {}",
        "ID", "UPDATED", "SECTION", "KIND", "STATUS", "SUBJECT", "SCOPE", "CONF", "SUMMARY"
    ));
    for (s, id) in entries.iter().zip(&ids) {
        let low = if s.fields.confidence < 0.5 { "!" } else { " " };
        out.line(format!(
            "{:<w$}  {:<24}  {:<12}  {:<12}  {:<11}  {:<24}  {:<20}  {:>4}{low} {}",
            id,
            s.updated_at,
            s.fields.section.as_str(),
            s.fields.kind.as_str(),
            s.status.as_str(),
            clip(&s.fields.subject, 24),
            clip(&s.fields.scope, 20),
            super::output::confidence_cell(s.fields.confidence),
            clip(&s.fields.summary, 80)
        ));
    }
    if let Some(w) = left_out {
        out.line(format!("({w})"));
    }
    Ok(ExitCode::Ok)
}

/// The most recent entries that pass `filters`. The newest entries are read first; when a
/// few hundred of them yield fewer than `limit`, the filters are selective, and the candidates
/// are taken from the text index's feature records (no entry decoded) before any entry is read.
fn recent_passing(
    session: &Session,
    limit: usize,
    filters: &crate::retrieval::filters::Filters,
    now: i64,
    keep: impl Fn(&EntryState) -> bool,
) -> Result<Vec<EntryState>> {
    const BUDGET: usize = 512;
    let store = session.store();
    let (entries, whole) = store.recent_among(limit, BUDGET, |_| true, &keep)?;
    if whole || entries.len() >= limit {
        return Ok(entries);
    }
    let mut admitted = std::collections::HashSet::new();
    store.scan_index(crate::retrieval::text_index::DOC_PREFIX, |id, value| {
        if crate::retrieval::features::DocFeatures::decode(value)
            .is_some_and(|f| filters.admits(&f, now))
        {
            admitted.insert(id.to_vec());
        }
        true
    })?;
    Ok(store
        .recent_among(limit, usize::MAX, |id| admitted.contains(id), keep)?
        .0)
}

pub fn history(ctx: &Ctx, args: HistoryArgs, out: &mut Out) -> Result<ExitCode> {
    let session = open(ctx, None)?;
    let id = session.resolve(&normalize_id(&args.id))?;
    let versions = session.store().versions(&id)?;
    if out.json {
        out.json(&versions);
        return Ok(ExitCode::Ok);
    }
    for v in &versions {
        out.line(format!(
            "v{:<3} {}  {:<16} {:<20} event {}",
            v.version,
            v.at,
            v.event_type.as_str(),
            clip(&v.actor, 20),
            &v.event[..12.min(v.event.len())]
        ));
        for c in &v.changes {
            if v.version == 1 {
                continue;
            }
            out.line(format!(
                "       {}: {} -> {}",
                c.field,
                clip(&value_text(&c.from), 60),
                clip(&value_text(&c.to), 60)
            ));
        }
    }
    Ok(ExitCode::Ok)
}

pub fn audit(ctx: &Ctx, args: AuditArgs, out: &mut Out) -> Result<ExitCode> {
    let session = open(ctx, None)?;
    let id = args
        .id
        .as_deref()
        .map(|i| session.resolve(&normalize_id(i)))
        .transpose()?;
    let mut records = session.store().audit(id.as_deref())?;
    if let Some(n) = args.limit {
        let skip = records.len().saturating_sub(n);
        records.drain(..skip);
    }
    if out.json {
        out.json(&records);
        return Ok(ExitCode::Ok);
    }
    if records.is_empty() {
        out.line("no transitions");
    }
    let ids = short_ids(&session, records.iter().map(|r| r.entry.as_str()))?;
    let w = ids.iter().map(String::len).max().unwrap_or(0);
    for (r, id) in records.iter().zip(&ids) {
        out.line(format!(
            "{}  {:<w$}  {:<9} {:>10} -> {:<10} {:<20} event {}{}",
            r.at,
            id,
            format!("{:?}", r.dimension).to_lowercase(),
            r.from,
            r.to,
            clip(&r.actor, 20),
            &r.event[..12.min(r.event.len())],
            r.reason
                .as_deref()
                .map(|x| format!("  ({})", clip(x, 60)))
                .unwrap_or_default()
        ));
    }
    Ok(ExitCode::Ok)
}

/// Where a page of `list --archived` (`--expired`, `--purged`) is among the `total` entries:
/// how to reach the next page, or that the offset is past the last entry; none when the page
/// shows the last entries, or when there are none, or none were asked for (`--limit 0`).
fn cold_page_notice(
    state: &str,
    offset: usize,
    limit: usize,
    shown: usize,
    total: usize,
) -> Option<String> {
    let end = offset + shown;
    if shown == 0 && limit > 0 && total > 0 && offset >= total {
        Some(format!(
            "no {state} entries at --offset {offset} ({total} in all); give an --offset below {total}"
        ))
    } else if shown > 0 && end < total {
        Some(format!(
            "{state} {}-{end} of {total}; next page: --offset {end}",
            offset + 1
        ))
    } else {
        None
    }
}

fn list_cold(session: &Session, args: &ListArgs, state: &str, out: &mut Out) -> Result<ExitCode> {
    let limit = if args.all { usize::MAX } else { args.limit };
    let (entries, total) =
        crate::lifecycle::archive::cold_page(session.store(), state, args.offset, limit)?;
    let notice = cold_page_notice(state, args.offset, limit, entries.len(), total);
    if out.json {
        // The same words as the text's footer, where `--json` puts what is not the answer.
        if let Some(n) = &notice {
            super::output::warn(n);
        }
        let items: Vec<Value> = entries
            .iter()
            .map(|s| Value::Object(to_flat_map(s)))
            .collect();
        out.json(&items);
        return Ok(ExitCode::Ok);
    }
    if entries.is_empty() {
        out.line(notice.unwrap_or_else(|| format!("no {state} entries")));
        return Ok(ExitCode::Ok);
    }
    out.line(format!(
        "{:<28}  {:<12}  {:<12}  {:<24}  {}",
        "ID", "SECTION", "KIND", "SUBJECT", "SUMMARY"
    ));
    for s in &entries {
        out.line(format!(
            "{:<28}  {:<12}  {:<12}  {:<24}  {}",
            s.id,
            s.fields.section.as_str(),
            s.fields.kind.as_str(),
            clip(&s.fields.subject, 24),
            clip(&s.fields.summary, 80)
        ));
    }
    if let Some(n) = notice {
        out.line(format!("({n})"));
    }
    Ok(ExitCode::Ok)
}
