//! The tools for lifecycle, git collaboration and transfer commands: a lifecycle run, purge,
//! freshness and evidence checks, conflicts and their resolution, the context file, export and
//! import, and statistics for a date range.

use super::{ArgError, Argv, Built, EntryFields, ToolDef, parse, parse_flat, schema, with_project};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct LifecycleRunArgs {
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
    /// Evaluate and report what would change (decay, archive, expire, restore), writing nothing
    pub dry_run: Option<bool>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct PurgeArgs {
    /// The entry to purge (id or unique prefix)
    pub id: String,
    /// Why it is purged, e.g. "contained a pasted credential" (kept in the log: never repeat
    /// the secret itself here)
    pub reason: String,
    /// Check and report, writing nothing
    pub dry_run: Option<bool>,
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct EvidenceArgs {
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
    /// Also check URLs (permalinks, tickets, documents) over HTTP; slower
    pub online: Option<bool>,
    /// Check and report, writing no evidence_checked events
    pub dry_run: Option<bool>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ResolveArgs {
    /// The entry in conflict (id or unique prefix), as listed by the conflicts tool
    pub id: String,
    /// How the conflict was settled
    pub reason: Option<String>,
    /// For concurrent supersedes: the replacement entry to keep; the others are superseded by it
    pub winner: Option<String>,
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
    /// Field values to keep; fields not given keep what the entry shows now
    #[serde(flatten)]
    pub entry: EntryFields,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct SyncContextArgs {
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
    /// Write nothing; report whether ai-context/<project>.md is up to date and which entries
    /// changed
    pub check: Option<bool>,
    /// Write nothing; answer the file that would be written (`content`)
    pub dry_run: Option<bool>,
}

/// What `export` writes.
#[derive(Debug, Default, Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// A JSON array of Memory_Entry records (one <id>.json per entry when path ends with /)
    #[default]
    Json,
    /// One Memory_Entry record per line
    Jsonl,
    /// The raw events of the log, imported losslessly by any memlog
    Events,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ExportArgs {
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
    /// Where to write, relative to the workspace root (inside it); `-` answers the text itself
    pub path: String,
    /// json (default), jsonl or events
    pub format: Option<ExportFormat>,
    /// Only these sections: decisions, state, observations, learnings
    pub section: Option<Vec<String>>,
    /// Only entries last changed at or after this time (ISO 8601)
    pub since: Option<String>,
    /// Only entries last changed at or before this time (ISO 8601)
    pub until: Option<String>,
    /// Only entries with at least this confidence (0 to 1)
    pub min_confidence: Option<f64>,
}

/// What `import` does with a record whose entry the project already holds.
#[derive(Debug, Default, Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Keep the project's entry (default)
    #[default]
    Skip,
    /// The higher confidence wins the fields; evidence and tags are united (a new version)
    Merge,
    /// Replace the entry's fields with the record's (a new version)
    Overwrite,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ImportArgs {
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
    /// The export to read, relative to the workspace root: a JSON array, JSON Lines of records
    /// or of events, or a directory of *.json records
    pub path: String,
    /// skip (default), merge or overwrite, for records whose entry the project already holds
    pub conflict_strategy: Option<Strategy>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct StatsArgs {
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
    /// Every project of the workspace added up (then `project` is ignored)
    pub all: Option<bool>,
    /// Days of entry creation: 7d, 30d, all (default) or <N>d
    pub range: Option<String>,
    /// First day of the range (ISO 8601 date or time), instead of `range`
    pub from: Option<String>,
    /// Last day of the range, included (ISO 8601), instead of `range`
    pub to: Option<String>,
}

fn lifecycle_run_argv(v: Value) -> Built {
    let q: LifecycleRunArgs = parse(v)?;
    let mut a = Argv::new("lifecycle");
    a.flags.push("run".into());
    a.flag("dry-run", q.dry_run);
    Ok(with_project(q.project, a))
}

fn lifecycle_report_argv(v: Value) -> Built {
    let q: super::ProjectOnly = parse(v)?;
    let mut a = Argv::new("lifecycle");
    a.flags.push("report".into());
    Ok(with_project(q.project, a))
}

fn purge_argv(v: Value) -> Built {
    let q: PurgeArgs = parse(v)?;
    let mut a = Argv::new("purge");
    a.opt("reason", Some(q.reason));
    a.flag("dry-run", q.dry_run);
    a.pos(Some(q.id));
    Ok(with_project(q.project, a))
}

fn evidence_argv(v: Value) -> Built {
    let q: EvidenceArgs = parse(v)?;
    let mut a = Argv::new("validate-evidence");
    a.flag("online", q.online);
    a.flag("dry-run", q.dry_run);
    Ok(with_project(q.project, a))
}

fn resolve_argv(v: Value) -> Built {
    let q: ResolveArgs = parse_flat::<_, EntryFields>(v)?;
    let mut a = Argv::new("resolve");
    a.opt("reason", q.reason);
    a.opt("winner", q.winner);
    q.entry.push(&mut a);
    a.pos(Some(q.id));
    Ok(with_project(q.project, a))
}

fn sync_context_argv(v: Value) -> Built {
    let q: SyncContextArgs = parse(v)?;
    let mut a = Argv::new("sync-context");
    a.flag("check", q.check);
    a.flag("dry-run", q.dry_run);
    Ok(with_project(q.project, a))
}

fn export_argv(v: Value) -> Built {
    let q: ExportArgs = parse(v)?;
    let mut a = Argv::new("export");
    a.opt(
        "format",
        Some(match q.format.unwrap_or_default() {
            ExportFormat::Json => "json",
            ExportFormat::Jsonl => "jsonl",
            ExportFormat::Events => "events",
        }),
    );
    a.many("section", &q.section);
    a.opt("since", q.since);
    a.opt("until", q.until);
    a.opt("min-confidence", q.min_confidence);
    a.pos(Some(q.path));
    Ok(with_project(q.project, a))
}

fn import_argv(v: Value) -> Built {
    let q: ImportArgs = parse(v)?;
    if q.path == "-" {
        return Err(ArgError::invalid(
            "path",
            "`-` (standard input) is not available to a tool; give a file in the workspace",
        ));
    }
    // A tool reads only inside the workspace (the server's process can read more).
    let relative = std::path::Path::new(&q.path);
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(ArgError::invalid(
            "path",
            "must be relative to the workspace root and inside it (no `..`, not absolute)",
        ));
    }
    let mut a = Argv::new("import");
    // Links too: a link inside the workspace may lead out of it.
    a.flag("inside-workspace", Some(true));
    a.opt(
        "conflict-strategy",
        q.conflict_strategy.map(|s| match s {
            Strategy::Skip => "skip",
            Strategy::Merge => "merge",
            Strategy::Overwrite => "overwrite",
        }),
    );
    a.pos(Some(q.path));
    Ok(with_project(q.project, a))
}

fn stats_argv(v: Value) -> Built {
    let q: StatsArgs = parse(v)?;
    let mut a = Argv::new("stats");
    a.flag("all", q.all);
    a.opt("range", q.range);
    a.opt("from", q.from);
    a.opt("to", q.to);
    // `all` covers every project: the server's default project must not narrow it.
    if q.all == Some(true) {
        return Ok((None, a));
    }
    Ok(with_project(q.project, a))
}

/// Statistics, with a date range: replaces the plain `stats` tool.
pub fn stats_tool() -> ToolDef {
    ToolDef {
        name: "stats",
        description: "Statistics of a project (or of all with `all`): entries by section, \
            kind, status, scope and lifecycle state, confidence, evidence types, growth over \
            time, most active agents, most queried subjects, expiring entries, the last \
            lifecycle run and access counts, and a health colour per metric. `range` (7d, 30d, \
            all, <N>d) or from/to limit it to entries created in those days.",
        read_only: true,
        schema: schema::<StatsArgs>,
        argv: stats_argv,
        post: None,
    }
}

/// The tools of this module, in the order they are listed.
pub fn all() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "lifecycle_run",
            description: "Evaluate every entry's lifecycle once: entries unused for long decay, \
                then archive; entries past valid_to expire; archived entries read again are \
                restored. Pinned entries are left alone. Use dry_run first to see the \
                transitions it would write.",
            read_only: false,
            schema: schema::<LifecycleRunArgs>,
            argv: lifecycle_run_argv,
            post: None,
        },
        ToolDef {
            name: "lifecycle_report",
            description: "Lifecycle metrics of a project: entries per lifecycle state, pinned, \
                purged, stale evidence, access frequency, storage per tier, archival rates and \
                the last lifecycle run.",
            read_only: true,
            schema: schema::<super::ProjectOnly>,
            argv: lifecycle_report_argv,
            post: None,
        },
        ToolDef {
            name: "pinned",
            description: "Every pinned entry (exempt from decay and archiving), oldest pin first.",
            read_only: true,
            schema: schema::<super::ProjectOnly>,
            argv: |v| {
                let q: super::ProjectOnly = parse(v)?;
                Ok(with_project(q.project, Argv::new("pinned")))
            },
            post: None,
        },
        ToolDef {
            name: "purge",
            description: "Remove an entry's content for good, e.g. when it holds a credential or \
                personal data: the entry leaves every query and projection and its fields are \
                redacted; a purge event records who and why. Irreversible: try dry_run first. \
                To retire an entry that is merely outdated, use deprecate or supersede instead.",
            read_only: false,
            schema: schema::<PurgeArgs>,
            argv: purge_argv,
            post: None,
        },
        ToolDef {
            name: "check_freshness",
            description: "Entries that have expired or expire soon (valid_to) and entries whose \
                review is due, soonest first: what to update, supersede or deprecate.",
            read_only: true,
            schema: schema::<super::ProjectOnly>,
            argv: |v| {
                let q: super::ProjectOnly = parse(v)?;
                Ok(with_project(q.project, Argv::new("check-freshness")))
            },
            post: None,
        },
        ToolDef {
            name: "validate_evidence",
            description: "Check every entry's evidence: code paths and line ranges still exist \
                in the workspace (and URLs answer, with online). Entries with stale evidence are \
                marked (stale_evidence) unless dry_run; entries whose evidence passes again are \
                cleared.",
            read_only: false,
            schema: schema::<EvidenceArgs>,
            argv: evidence_argv,
            post: None,
        },
        ToolDef {
            name: "conflicts",
            description: "Entries that concurrent writers (merged git branches) changed \
                differently: each side's events and the values it set, the disputed fields and \
                what the entry shows now. Settle each with the resolve tool.",
            read_only: true,
            schema: schema::<super::ProjectOnly>,
            argv: |v| {
                let q: super::ProjectOnly = parse(v)?;
                Ok(with_project(q.project, Argv::new("conflicts")))
            },
            post: None,
        },
        ToolDef {
            name: "resolve",
            description: "Settle an entry in conflict (see the conflicts tool): give the field \
                values to keep (others keep what the entry shows now), or for concurrent \
                supersedes the winner to keep, and a reason.",
            read_only: false,
            schema: schema::<ResolveArgs>,
            argv: resolve_argv,
            post: None,
        },
        ToolDef {
            name: "sync_context",
            description: "Regenerate ai-context/<project>.md, the human-readable digest of \
                current memory committed with the code. check: only report whether it is up to \
                date and which entries changed; dry_run: answer the file without writing.",
            read_only: false,
            schema: schema::<SyncContextArgs>,
            argv: sync_context_argv,
            post: None,
        },
        ToolDef {
            name: "export",
            description: "Write a project's entries (json, jsonl) or raw events (events) to a \
                file inside the workspace, optionally filtered by section, time and confidence; \
                path `-` answers the text itself.",
            read_only: false,
            schema: schema::<ExportArgs>,
            argv: export_argv,
            post: None,
        },
        ToolDef {
            name: "import",
            description: "Import an export (records or events) from a file inside the \
                workspace into a project. Every record is validated and scanned for secrets; \
                conflict_strategy says what to do with entries the project already holds. \
                The answer lists what was imported, merged, overwritten, skipped and rejected.",
            read_only: false,
            schema: schema::<ImportArgs>,
            argv: import_argv,
            post: None,
        },
    ]
}
