//! The tools the MCP server offers: for each, its arguments (whose doc comments are the schema
//! descriptions a model reads) and the `memlog` command line they stand for.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

mod arguments;
mod more;

pub use arguments::ArgError;
use arguments::{parse, parse_flat};

/// A command line being built: flags first, then `--` and the positional arguments, so that no
/// value (an id, a query text) can ever be read as a flag.
#[derive(Default)]
pub struct Argv {
    flags: Vec<String>,
    positionals: Vec<String>,
    /// Standard input of the command.
    pub input: Option<String>,
}

impl Argv {
    fn new(command: &str) -> Self {
        Self {
            flags: vec![command.to_owned()],
            ..Self::default()
        }
    }
    fn flag(&mut self, name: &str, on: Option<bool>) {
        if on == Some(true) {
            self.flags.push(format!("--{name}"));
        }
    }
    fn opt(&mut self, name: &str, value: Option<impl ToString>) {
        if let Some(v) = value {
            // `--name=value`, so that a value starting with `-` is still a value.
            self.flags.push(format!("--{name}={}", v.to_string()));
        }
    }
    fn many(&mut self, name: &str, values: &Option<Vec<String>>) {
        for v in values.iter().flatten() {
            self.flags.push(format!("--{name}={v}"));
        }
    }
    fn pos(&mut self, value: Option<impl ToString>) {
        if let Some(v) = value {
            self.positionals.push(v.to_string());
        }
    }
    /// The arguments after the command name.
    pub fn into_args(self) -> Vec<String> {
        let mut args = self.flags;
        if !self.positionals.is_empty() {
            args.push("--".into());
            args.extend(self.positionals);
        }
        args
    }
}

/// The project a tool works on, when not the server's.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ProjectOnly {
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
}

/// Filters shared by `query` and `list`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct Filters {
    /// Only these sections: decisions, state, observations, learnings
    pub section: Option<Vec<String>>,
    /// Only these kinds: decision, requirement, invariant, incident, metric, hypothesis,
    /// runbook_step, other
    pub kind: Option<Vec<String>>,
    /// Only this scope and the scopes above it (service:auth also returns repo and org)
    pub scope: Option<String>,
    /// Only this subject (canonical entity key, e.g. auth-service.token-refresh)
    pub subject: Option<String>,
    /// Only entries having all these tags
    pub tags: Option<Vec<String>>,
    /// Only these statuses (draft, active, superseded, deprecated, or `all`); query default:
    /// active
    pub status: Option<Vec<String>>,
    /// At least this confidence (0 to 1); query default: the policy's min_confidence
    pub min_confidence: Option<f64>,
    /// At most this confidence (0 to 1)
    pub max_confidence: Option<f64>,
    /// Created at or after this time (ISO 8601)
    pub created_after: Option<String>,
    /// Created at or before this time (ISO 8601)
    pub created_before: Option<String>,
    /// Updated at or after this time (ISO 8601)
    pub updated_after: Option<String>,
    /// Updated at or before this time (ISO 8601)
    pub updated_before: Option<String>,
    /// Also entries past their valid_to (default: excluded)
    pub include_expired: Option<bool>,
}

impl Filters {
    fn push(&self, a: &mut Argv) {
        a.many("section", &self.section);
        a.many("kind", &self.kind);
        a.opt("scope", self.scope.as_ref());
        a.opt("subject", self.subject.as_ref());
        if let Some(tags) = &self.tags {
            for t in tags {
                a.opt("tags", Some(t));
            }
        }
        a.many("status", &self.status);
        a.opt("min-confidence", self.min_confidence);
        a.opt("max-confidence", self.max_confidence);
        a.opt("created-after", self.created_after.as_ref());
        a.opt("created-before", self.created_before.as_ref());
        a.opt("updated-after", self.updated_after.as_ref());
        a.opt("updated-before", self.updated_before.as_ref());
        a.flag("include-expired", self.include_expired);
    }
}

/// Which projects to check.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct HealthArgs {
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
    /// Every project of the workspace
    pub all: Option<bool>,
}

/// No arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct QueryArgs {
    /// Words to look for in summary, content, subject and tags (none: rank by score alone)
    pub text: Option<String>,
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
    #[serde(flatten)]
    pub filters: Filters,
    /// At most this many entries (1 to 50; default: the policy's max_results)
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u32>,
    /// Only id, summary, subject, scope, kind and confidence of each entry (cheaper to read)
    pub summary_only: Option<bool>,
    /// Also the entries that results name in related_entries
    pub include_related: Option<bool>,
    /// Leave out the workspace's global memory
    pub no_global: Option<bool>,
    /// Add every component of each result's score
    pub explain: Option<bool>,
    /// Token budget: results are kept in rank order while their JSON fits in this many
    /// (estimated) tokens; the others are left out with a warning (when not even the first
    /// fits, the warning names the budget it needs)
    pub budget: Option<u32>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
    #[serde(flatten)]
    pub filters: Filters,
    /// At most this many entries (default 50)
    pub limit: Option<u32>,
    /// Every entry (no limit)
    pub all: Option<bool>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct IdArgs {
    /// Entry id, or any unique prefix of it (e.g. m-9avyae89jr0fnr67sw0cgkjmcg)
    pub id: String,
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ReasonArgs {
    /// Entry id, or any unique prefix of it
    pub id: String,
    /// Why (recorded in the event and shown by history and audit)
    pub reason: Option<String>,
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct AuditArgs {
    /// Entry id or unique prefix (default: every entry of the project)
    pub id: Option<String>,
    /// At most this many records (newest last)
    pub limit: Option<u32>,
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
}

/// One piece of evidence.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// code | artifact | log | screenshot | assumption | ticket | doc
    #[serde(rename = "type")]
    pub kind: String,
    /// Where it is: a repository path (src/auth.rs#L10-L20), an https URL, a ticket URL
    pub uri: String,
    /// What it shows (required, as for `memlog add`'s `--evidence TYPE:URI:NOTE`)
    pub note: String,
}

/// Fields of a memory entry.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct EntryFields {
    /// decisions | state | observations | learnings
    pub section: Option<String>,
    /// decision | requirement | invariant | incident | metric | hypothesis | runbook_step | other
    pub kind: Option<String>,
    /// Canonical entity key, e.g. auth-service.token-refresh
    pub subject: Option<String>,
    /// repo | org | customer | service:<name> | environment:<prod|staging>
    pub scope: Option<String>,
    /// One or two sentences, at most 300 characters
    pub summary: Option<String>,
    /// The full text, at most 2000 characters
    pub content: Option<String>,
    /// Confidence from 0.0 to 1.0
    pub confidence: Option<f64>,
    /// Evidence; active entries need at least one, decisions, requirements and invariants need
    /// code, artifact, ticket or doc evidence
    pub evidence: Option<Vec<Evidence>>,
    /// Tags
    pub tags: Option<Vec<String>>,
    /// When the entry becomes valid (ISO 8601)
    pub valid_from: Option<String>,
    /// When the entry expires (ISO 8601)
    pub valid_to: Option<String>,
    /// How often to review the entry: ISO 8601 duration (P30D) or 30d / 2w / 12h
    pub review_interval: Option<String>,
    /// Full ids of related entries
    pub related: Option<Vec<String>>,
    /// active (default) or draft
    pub status: Option<String>,
}

impl EntryFields {
    fn push(&self, a: &mut Argv) {
        a.opt("section", self.section.as_ref());
        a.opt("kind", self.kind.as_ref());
        a.opt("subject", self.subject.as_ref());
        a.opt("scope", self.scope.as_ref());
        a.opt("summary", self.summary.as_ref());
        a.opt("content", self.content.as_ref());
        a.opt("confidence", self.confidence);
        for e in self.evidence.iter().flatten() {
            let v = serde_json::json!({"type": e.kind, "uri": e.uri, "note": e.note});
            a.opt("evidence", Some(v));
        }
        a.many("tag", &self.tags);
        a.opt("valid-from", self.valid_from.as_ref());
        a.opt("valid-to", self.valid_to.as_ref());
        a.opt("review-interval", self.review_interval.as_ref());
        a.many("related", &self.related);
        a.opt("status", self.status.as_ref());
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct CreateArgs {
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
    #[serde(flatten)]
    pub entry: EntryFields,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct SupersedeArgs {
    /// The entry to replace (id or unique prefix)
    pub id: String,
    /// Why it is replaced
    pub reason: Option<String>,
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
    /// Fields of the replacement; those not given are copied from the replaced entry
    #[serde(flatten)]
    pub entry: EntryFields,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct UpdateArgs {
    /// The entry to change (id or unique prefix)
    pub id: String,
    /// Why it changes
    pub reason: Option<String>,
    /// Remove valid_to (the entry no longer expires)
    pub clear_valid_to: Option<bool>,
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
    /// Fields to change
    #[serde(flatten)]
    pub entry: EntryFields,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct UpdatesArgs {
    /// A Memory_Update object, an array of them, or an AgentResult with memory_updates
    pub updates: Value,
    /// Project name (default: the server's --project, or the workspace's only project)
    pub project: Option<String>,
}

/// Output of the context tool.
#[derive(Debug, Default, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ContextFormat {
    /// The AgentTask with memory_context filled
    #[default]
    Json,
    /// The chosen entries as a prompt prefix within the token budget
    Prompt,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ContextArgs {
    /// The AgentTask: memory_enabled must be true for memory to be added (false or absent
    /// returns the task unchanged, and no prompt); goal is the query text; project, scope and
    /// subject narrow the entries
    pub task: Value,
    /// json: the task with memory_context filled; prompt: a prompt prefix of the entries
    pub format: Option<ContextFormat>,
    /// Token budget of the prompt prefix (default 1200)
    pub budget: Option<u32>,
    /// Leave out the workspace's global memory
    pub no_global: Option<bool>,
    /// Project name (default: the task's project, the server's --project, or the only project)
    pub project: Option<String>,
}

/// A tool call as a command line: the project it names (if any) and the command.
pub type Built = Result<(Option<String>, Argv), ArgError>;

/// A tool: its name, description, whether it only reads, its argument schema and its command.
pub struct ToolDef {
    pub name: &'static str,
    pub description: &'static str,
    pub read_only: bool,
    pub schema: fn() -> schemars::Schema,
    pub argv: fn(Value) -> Built,
    /// Changes the results after the command ran (the query budget).
    pub post: Option<fn(&Value, &mut Value, &mut Vec<String>)>,
}

fn with_project(project: Option<String>, a: Argv) -> (Option<String>, Argv) {
    (project, a)
}

fn query_argv(v: Value) -> Built {
    let q: QueryArgs = parse_flat::<_, Filters>(v)?;
    let mut a = Argv::new("query");
    q.filters.push(&mut a);
    a.opt("limit", q.limit);
    a.flag("summary-only", q.summary_only);
    a.flag("include-related", q.include_related);
    a.flag("no-global", q.no_global);
    a.flag("explain", q.explain);
    a.pos(q.text);
    Ok(with_project(q.project, a))
}

/// Keeps query results in rank order while their JSON fits the budget.
fn query_budget(args: &Value, results: &mut Value, warnings: &mut Vec<String>) {
    let Some(budget) = args.get("budget").and_then(Value::as_u64) else {
        return;
    };
    let Some(items) = results.as_array_mut() else {
        return;
    };
    let mut used = 0usize;
    let mut keep = 0;
    for item in items.iter() {
        let cost = crate::retrieval::budget::estimate_tokens(&item.to_string());
        if used + cost > budget as usize {
            break;
        }
        used += cost;
        keep += 1;
    }
    let left_out = items.len() - keep;
    if let Some(first) = items.first().filter(|_| keep == 0) {
        let needed = crate::retrieval::budget::estimate_tokens(&first.to_string());
        items.clear();
        warnings.push(format!(
            "{}; raise `budget` or ask with summary_only",
            crate::retrieval::budget::too_small_for_any(budget as usize, needed)
        ));
    } else if left_out > 0 {
        items.truncate(keep);
        warnings.push(format!(
            "{left_out} lower-ranked result{} left out to fit the budget of {budget} tokens; \
             raise `budget` or ask with summary_only",
            if left_out == 1 { " was" } else { "s were" }
        ));
    }
}

fn list_argv(v: Value) -> Built {
    let q: ListArgs = parse_flat::<_, Filters>(v)?;
    let mut a = Argv::new("list");
    q.filters.push(&mut a);
    a.opt("limit", q.limit);
    a.flag("all", q.all);
    Ok(with_project(q.project, a))
}

fn id_argv(command: &'static str) -> impl Fn(Value) -> Built {
    move |v| {
        let q: IdArgs = parse(v)?;
        let mut a = Argv::new(command);
        a.pos(Some(q.id));
        Ok(with_project(q.project, a))
    }
}

fn reason_argv(command: &'static str) -> impl Fn(Value) -> Built {
    move |v| {
        let q: ReasonArgs = parse(v)?;
        let mut a = Argv::new(command);
        a.opt("reason", q.reason);
        a.pos(Some(q.id));
        Ok(with_project(q.project, a))
    }
}

fn create_argv(v: Value) -> Built {
    let q: CreateArgs = parse_flat::<_, EntryFields>(v)?;
    let mut a = Argv::new("add");
    q.entry.push(&mut a);
    Ok(with_project(q.project, a))
}

fn supersede_argv(v: Value) -> Built {
    let q: SupersedeArgs = parse_flat::<_, EntryFields>(v)?;
    let mut a = Argv::new("supersede");
    a.opt("reason", q.reason);
    q.entry.push(&mut a);
    a.pos(Some(q.id));
    Ok(with_project(q.project, a))
}

fn update_argv(v: Value) -> Built {
    let q: UpdateArgs = parse_flat::<_, EntryFields>(v)?;
    let mut a = Argv::new("update");
    a.opt("reason", q.reason);
    a.flag("clear-valid-to", q.clear_valid_to);
    q.entry.push(&mut a);
    a.pos(Some(q.id));
    Ok(with_project(q.project, a))
}

fn updates_argv(command: &'static str) -> impl Fn(Value) -> Built {
    move |v| {
        let q: UpdatesArgs = parse(v)?;
        let mut a = Argv::new(command);
        a.pos(Some("-"));
        a.input = Some(q.updates.to_string());
        Ok(with_project(q.project, a))
    }
}

fn context_argv(v: Value) -> Built {
    let q: ContextArgs = parse(v)?;
    let mut a = Argv::new("context");
    a.opt(
        "format",
        Some(match q.format.unwrap_or_default() {
            ContextFormat::Json => "json",
            ContextFormat::Prompt => "prompt",
        }),
    );
    a.opt("budget", q.budget);
    a.flag("no-global", q.no_global);
    a.pos(Some("-"));
    a.input = Some(q.task.to_string());
    Ok(with_project(q.project, a))
}

fn audit_argv(v: Value) -> Built {
    let q: AuditArgs = parse(v)?;
    let mut a = Argv::new("audit");
    a.opt("limit", q.limit);
    a.pos(q.id);
    Ok(with_project(q.project, a))
}

fn project_argv(command: &'static str) -> impl Fn(Value) -> Built {
    move |v| {
        let q: ProjectOnly = parse(v)?;
        Ok(with_project(q.project, Argv::new(command)))
    }
}

fn health_argv(v: Value) -> Built {
    let q: HealthArgs = parse(v)?;
    let mut a = Argv::new("health");
    a.flag("all", q.all);
    // `--all` covers every project: the server's default project must not narrow it.
    let project = if q.all == Some(true) { None } else { q.project };
    a.pos(project);
    Ok((None, a))
}

fn config_validate_argv(v: Value) -> Built {
    let q: HealthArgs = parse(v)?;
    let mut a = Argv::new("config");
    a.flags.push("validate".into());
    a.flag("all", q.all);
    let project = if q.all == Some(true) { None } else { q.project };
    a.pos(project);
    Ok((None, a))
}

fn projects_argv(v: Value) -> Built {
    let _: NoArgs = parse(v)?;
    Ok((None, Argv::new("projects")))
}

fn schema<T: JsonSchema>() -> schemars::Schema {
    schemars::schema_for!(T)
}

macro_rules! argv_fn {
    ($f:expr) => {{
        fn call(v: Value) -> Built {
            ($f)(v)
        }
        call
    }};
}

/// Every tool, in the order they are listed.
pub fn all() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "query",
            description: "Ask memory before you act: ranked entries matching words and filters. \
                Defaults leave out drafts, superseded, deprecated and expired entries and those \
                below the policy's minimum confidence, and add the workspace's global memory. \
                Use summary_only or budget to keep the answer short; then `show` one entry in full.",
            read_only: true,
            schema: schema::<QueryArgs>,
            argv: query_argv,
            post: Some(query_budget),
        },
        ToolDef {
            name: "show",
            description: "Every field of one entry (any unique id prefix), including evidence, \
                status, lifecycle state and validity.",
            read_only: true,
            schema: schema::<IdArgs>,
            argv: argv_fn!(id_argv("show")),
            post: None,
        },
        ToolDef {
            name: "list",
            description: "Entries most recently updated first, with filters and no smart \
                defaults (every status unless filtered). For browsing; to answer a question use \
                `query`.",
            read_only: true,
            schema: schema::<ListArgs>,
            argv: list_argv,
            post: None,
        },
        ToolDef {
            name: "create",
            description: "Record a new memory entry: a decision, requirement, invariant, \
                incident, metric, hypothesis or runbook step learned while working. Query first: \
                if an entry on the same subject exists, supersede or update it instead. Needs \
                section, kind, subject, scope, summary, content, confidence and (for active \
                entries) evidence. Never put credentials in any field: such entries are refused.",
            read_only: false,
            schema: schema::<CreateArgs>,
            argv: create_argv,
            post: None,
        },
        ToolDef {
            name: "supersede",
            description: "Replace an entry that is no longer right with a new one; the old one \
                becomes superseded (kept in history, left out of queries). Fields not given are \
                copied from the old entry; give a reason.",
            read_only: false,
            schema: schema::<SupersedeArgs>,
            argv: supersede_argv,
            post: None,
        },
        ToolDef {
            name: "update",
            description: "Change fields of an entry that is still right (a new version), e.g. \
                extend valid_to, raise confidence, add evidence or tags. An archived entry is \
                restored by the update.",
            read_only: false,
            schema: schema::<UpdateArgs>,
            argv: update_argv,
            post: None,
        },
        ToolDef {
            name: "deprecate",
            description: "Mark an entry as deprecated: historically relevant but no longer \
                current, with nothing replacing it (to replace it, use supersede).",
            read_only: false,
            schema: schema::<ReasonArgs>,
            argv: argv_fn!(reason_argv("deprecate")),
            post: None,
        },
        ToolDef {
            name: "pin",
            description: "Pin an entry: exempt it from automatic lifecycle transitions (decay, \
                archiving).",
            read_only: false,
            schema: schema::<ReasonArgs>,
            argv: argv_fn!(reason_argv("pin")),
            post: None,
        },
        ToolDef {
            name: "unpin",
            description: "Unpin an entry: lifecycle policies apply to it again.",
            read_only: false,
            schema: schema::<ReasonArgs>,
            argv: argv_fn!(reason_argv("unpin")),
            post: None,
        },
        ToolDef {
            name: "validate",
            description: "Check Memory_Update objects (one, an array, or an AgentResult with \
                memory_updates) against the schema and the write policy, writing nothing: \
                a verdict per update with errors and warnings.",
            read_only: true,
            schema: schema::<UpdatesArgs>,
            argv: argv_fn!(updates_argv("validate")),
            post: None,
        },
        ToolDef {
            name: "apply",
            description: "Apply Memory_Update objects (one, an array, or an AgentResult with \
                memory_updates): create, supersede, deprecate. Valid updates are written, \
                invalid ones are skipped and reported.",
            read_only: false,
            schema: schema::<UpdatesArgs>,
            argv: argv_fn!(updates_argv("apply")),
            post: None,
        },
        ToolDef {
            name: "context",
            description: "Fill an AgentTask's memory_context with the entries relevant to its \
                goal, scope and subject (format json), or get them as a prompt prefix within a \
                token budget (format prompt). Call it at the start of a task.",
            read_only: true,
            schema: schema::<ContextArgs>,
            argv: context_argv,
            post: None,
        },
        ToolDef {
            name: "history",
            description: "Every version of an entry, with what changed, who changed it and when.",
            read_only: true,
            schema: schema::<IdArgs>,
            argv: argv_fn!(id_argv("history")),
            post: None,
        },
        ToolDef {
            name: "audit",
            description: "Status, lifecycle, pin and conflict transitions of one entry or of \
                the whole project.",
            read_only: true,
            schema: schema::<AuditArgs>,
            argv: audit_argv,
            post: None,
        },
        more::stats_tool(),
        ToolDef {
            name: "verify",
            description: "Check every event of the project's log: canonical form, hash, \
                version and parents.",
            read_only: true,
            schema: schema::<ProjectOnly>,
            argv: argv_fn!(project_argv("verify")),
            post: None,
        },
        ToolDef {
            name: "projects",
            description: "The projects of the workspace with their entry counts.",
            read_only: true,
            schema: schema::<NoArgs>,
            argv: projects_argv,
            post: None,
        },
        ToolDef {
            name: "health",
            description: "Whether a project's memory is usable: log readable, projections \
                current, index sizes, entries and events, configuration valid; `healthy` \
                false with the reasons in `problems`.",
            read_only: true,
            schema: schema::<HealthArgs>,
            argv: health_argv,
            post: None,
        },
        ToolDef {
            name: "config_validate",
            description: "Check a project's memlog.json against its JSON Schema and name every \
                invalid key (`valid` false with `problems`).",
            read_only: true,
            schema: schema::<HealthArgs>,
            argv: config_validate_argv,
            post: None,
        },
    ]
    .into_iter()
    .chain(more::all())
    .collect()
}
