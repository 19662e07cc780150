//! `query`: ranked retrieval with filters, smart defaults, the scope hierarchy and `global`.
//! Also the filter flags `list` shares, and the sources (project and global) of a query.

use super::output::{clip, warn};
use super::{Ctx, ExitCode, Out};
use crate::error::{Error, Result};
use crate::project::{Project, RetrievalPolicy};
use crate::retrieval::features::unix_millis;
use crate::retrieval::filters::{Filters, MAX_LIMIT, parse_choice, parse_statuses};
use crate::retrieval::query_log::{self, QueryLogEntry};
use crate::retrieval::rank::{RankParams, Rule};
use crate::retrieval::search::{self, Answer, Hit, Order, Request, Source};
use crate::store::session::Session;
use crate::workspace::{GLOBAL_PROJECT, ProjectName};
use projections::{Kind, Section};
use serde::Serialize;
use serde_json::{Map, Value};
use std::time::Instant;

// Filters shared by `query`, `list` and `context`. (Not a doc comment: clap would take it for
// the help of the subcommands that flatten it.)
#[derive(Debug, Clone, Default, clap::Args, Serialize)]
pub struct FilterArgs {
    /// Only these sections (repeatable): decisions, state, observations, learnings
    #[arg(long)]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub section: Vec<String>,
    /// Only these kinds (repeatable): decision, requirement, invariant, incident, metric,
    /// hypothesis, runbook_step, other
    #[arg(long)]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kind: Vec<String>,
    /// Only this scope and the scopes above it (service:auth also returns repo and org)
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Only this subject
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Only entries having all these tags (comma-separated)
    #[arg(long, value_delimiter = ',')]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Only these statuses (repeatable, or `all`) [query default: active]
    #[arg(long)]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<String>,
    /// At least this confidence [query default: the policy's min_confidence, 0.6, unless
    /// --max-confidence is lower]
    #[arg(long, value_name = "X", allow_negative_numbers = true, value_parser = super::numbers::fraction)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_confidence: Option<f64>,
    /// At most this confidence
    #[arg(long, value_name = "X", allow_negative_numbers = true, value_parser = super::numbers::fraction)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_confidence: Option<f64>,
    /// Created at or after this time (ISO 8601)
    #[arg(long, value_name = "TIME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_after: Option<String>,
    /// Created at or before this time
    #[arg(long, value_name = "TIME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_before: Option<String>,
    /// Updated at or after this time
    #[arg(long, value_name = "TIME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_after: Option<String>,
    /// Updated at or before this time
    #[arg(long, value_name = "TIME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_before: Option<String>,
    /// Also entries past their valid_to [query default: excluded]
    #[arg(long)]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub include_expired: bool,
}

#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// Words to look for in summary, content, subject and tags (none: rank by score alone)
    pub text: Option<String>,
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: Option<String>,
    #[command(flatten)]
    pub filters: FilterArgs,
    /// At most this many entries (at most 50) [default: the policy's max_results]
    #[arg(long, allow_negative_numbers = true, value_parser = super::numbers::query_limit)]
    pub limit: Option<usize>,
    /// Only id, summary, subject, scope, kind and confidence of each entry
    #[arg(long)]
    pub summary_only: bool,
    /// Also the entries results name in related_entries
    #[arg(long)]
    pub include_related: bool,
    /// Leave out the entries of ai-memory/global/
    #[arg(long)]
    pub no_global: bool,
    /// Also archived entries (after the active ones; they are outside the text index, so this
    /// reads every archived entry)
    #[arg(long)]
    pub include_archived: bool,
    /// Print every component of each result's score and every rule that demoted or annotated it
    #[arg(long)]
    pub explain: bool,
}

fn time_arg(flag: &str, v: Option<&str>) -> Result<Option<i64>> {
    v.map(|s| {
        crate::clock::parse_time(s)
            .map(|t| t.timestamp_millis())
            .map_err(|m| Error::Usage(format!("--{flag}: {m}")))
    })
    .transpose()
}

fn confidence_arg(flag: &str, v: Option<f64>) -> Result<Option<f64>> {
    match v {
        Some(x) if !(0.0..=1.0).contains(&x) => {
            Err(Error::Usage(format!("--{flag}: {x} is outside 0.0 to 1.0")))
        }
        other => Ok(other),
    }
}

/// How a command fills in filters it was not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Defaults {
    /// The smart defaults of the retrieval policy (query, context).
    Smart,
    /// Everything (list, an inspection command).
    None,
}

impl FilterArgs {
    /// Validates the flags into filters, filling in `defaults`.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the flag and the allowed values.
    pub fn resolve(&self, policy: &RetrievalPolicy, defaults: Defaults) -> Result<Filters> {
        let smart = defaults == Defaults::Smart;
        let mut f = Filters::defaults(if smart { policy.min_confidence } else { 0.0 });
        if !smart {
            f.statuses = projections::Status::ALL.to_vec();
            f.include_expired = true;
        }
        for s in self.section.iter().flat_map(|s| s.split(',')) {
            f.sections.push(
                parse_choice("section", s, Section::parse, &Section::choices())
                    .map_err(Error::Usage)?,
            );
        }
        for k in self.kind.iter().flat_map(|s| s.split(',')) {
            f.kinds.push(
                parse_choice("kind", k, Kind::parse, &Kind::choices()).map_err(Error::Usage)?,
            );
        }
        if let Some(statuses) = parse_statuses(&self.status).map_err(Error::Usage)? {
            f.statuses = statuses;
        }
        self.check_text_values()?;
        if let Some(scope) = &self.scope {
            if !crate::policy::validate::is_valid_scope(scope) {
                return Err(Error::Usage(format!(
                    "--scope: `{}` is not a scope; the allowed values are repo, org, customer, \
                     service:<name> and environment:<prod|staging>",
                    scope.escape_debug()
                )));
            }
            f.scope = Some(scope.clone());
        }
        f.subject.clone_from(&self.subject);
        // `--tags "a, b"` means a and b.
        f.tags = self
            .tags
            .iter()
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect();
        if let Some(x) = confidence_arg("min-confidence", self.min_confidence)? {
            f.min_confidence = x;
        }
        if let Some(x) = confidence_arg("max-confidence", self.max_confidence)? {
            f.max_confidence = x;
            // A maximum below the default minimum would silently match nothing: the default
            // yields to the bound the user gave, and says so.
            if smart && self.min_confidence.is_none() && x < policy.min_confidence {
                f.min_confidence = 0.0;
                warn(&format!(
                    "--max-confidence {x} is below the default minimum confidence {} \
                     (retrieval.min_confidence in memlog.json): that default is not applied; \
                     give --min-confidence X to set a minimum",
                    policy.min_confidence
                ));
            }
        }
        f.created_after = time_arg("created-after", self.created_after.as_deref())?;
        f.created_before = time_arg("created-before", self.created_before.as_deref())?;
        f.updated_after = time_arg("updated-after", self.updated_after.as_deref())?;
        f.updated_before = time_arg("updated-before", self.updated_before.as_deref())?;
        if self.include_expired {
            f.include_expired = true;
        }
        // Bounds that no entry can meet are a mistake to name, not an empty answer.
        if let (Some(min), Some(max)) = (self.min_confidence, self.max_confidence)
            && min > max
        {
            return Err(Error::Usage(format!(
                "--min-confidence {min} is above --max-confidence {max}: no entry can match; \
                 swap them"
            )));
        }
        for (after, before, name) in [
            (f.created_after, f.created_before, "created"),
            (f.updated_after, f.updated_before, "updated"),
        ] {
            if let (Some(a), Some(b)) = (after, before)
                && a > b
            {
                return Err(Error::Usage(format!(
                    "--{name}-after is later than --{name}-before: no entry can match; swap them"
                )));
            }
        }
        Ok(f)
    }
}

impl FilterArgs {
    /// Refuses a subject, scope or tags no entry can have: empty (an empty subject would match
    /// nothing, a list of no tags be dropped and match everything) or longer than an entry's
    /// field may be (which would also go whole into the query log). Before any work, so nothing
    /// is logged.
    fn check_text_values(&self) -> Result<()> {
        use crate::policy::validate::{
            MAX_SCOPE_CHARS, MAX_SUBJECT_CHARS, MAX_TAG_CHARS, MAX_TAGS,
        };
        let too_long = |flag: &str, what: &str, n: usize, max: usize| {
            Error::Usage(format!(
                "--{flag}: {n} characters, more than the {max} {what} can have; give a shorter \
                 one, as recorded in the entries"
            ))
        };
        if let Some(subject) = &self.subject {
            let n = subject.chars().count();
            if subject.trim().is_empty() {
                return Err(Error::Usage(
                    "--subject: empty; give the subject to look for, or leave it out".into(),
                ));
            }
            if n > MAX_SUBJECT_CHARS {
                return Err(too_long("subject", "a subject", n, MAX_SUBJECT_CHARS));
            }
        }
        if let Some(scope) = &self.scope {
            let n = scope.chars().count();
            if n > MAX_SCOPE_CHARS {
                return Err(too_long("scope", "a scope", n, MAX_SCOPE_CHARS));
            }
        }
        if self.tags.len() > MAX_TAGS {
            return Err(Error::Usage(format!(
                "--tags: {} tags, more than the {MAX_TAGS} an entry can have; give fewer",
                self.tags.len()
            )));
        }
        // A stray comma (`deploy,`) is forgiven; a list with no tag at all is not.
        if !self.tags.is_empty() && self.tags.iter().all(|t| t.trim().is_empty()) {
            return Err(Error::Usage(
                "--tags: no tag given; give comma-separated tags, e.g. --tags deploy,ci, or \
                 leave it out"
                    .into(),
            ));
        }
        for tag in &self.tags {
            let n = tag.trim().chars().count();
            if n > MAX_TAG_CHARS {
                return Err(too_long("tags", "a tag", n, MAX_TAG_CHARS));
            }
        }
        Ok(())
    }
}

/// The query limit: the flag, else the policy's `max_results`, never above 50.
///
/// # Errors
/// [`Error::Usage`] for 0 or more than 50.
pub fn limit_of(flag: Option<usize>, policy: &RetrievalPolicy) -> Result<usize> {
    match flag {
        Some(0) => Err(Error::Usage("--limit: must be at least 1".into())),
        Some(n) if n > MAX_LIMIT => Err(Error::Usage(format!(
            "--limit: {n} is more than {MAX_LIMIT}, the most one query returns"
        ))),
        Some(n) => Ok(n),
        None => Ok(usize::try_from(policy.max_results)
            .unwrap_or(MAX_LIMIT)
            .clamp(1, MAX_LIMIT)),
    }
}

/// The sessions a query reads: the project's, then `global`'s unless left out (or empty).
pub struct Sources {
    pub project: Project,
    pub sessions: Vec<(Session, bool)>,
}

impl Sources {
    /// Opens the project and, unless `no_global`, the workspace's `global` project. `None` when
    /// the project (or the workspace) is not initialized: queries then answer nothing.
    ///
    /// # Errors
    /// Other errors opening either.
    pub fn open(ctx: &Ctx, project: Option<&str>, no_global: bool) -> Result<Option<Self>> {
        let project = match ctx.project(project) {
            Ok(p) => p,
            Err(e @ (Error::NoProject { .. } | Error::NoWorkspace { .. })) => {
                // Said, so that a misspelt name does not read as "no memory".
                super::output::warn(&format!(
                    "{e}; until then there is no memory to answer from"
                ));
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let mut sessions = vec![(ctx.open_session(&project)?, false)];
        if !no_global && project.name.as_str() != GLOBAL_PROJECT {
            let global = Project::new(&project.workspace, ProjectName::new(GLOBAL_PROJECT)?);
            let has_events = fs_err::metadata(global.log_path()).is_ok_and(|m| m.len() > 0);
            if has_events && global.config_path().is_file() {
                sessions.push((ctx.open_session(&global)?, true));
            }
        }
        Ok(Some(Self { project, sessions }))
    }

    /// When the query began, for its execution time and the slow-query warning: `started`,
    /// unless opening a store had to catch up with the log first (after a pull, a first use,
    /// a rebuild), which is no part of the query and can take seconds: then now. Time spent
    /// waiting for another process to release a store lock is no part of it either.
    pub fn query_started(&self, started: Instant) -> Instant {
        let caught_up = self
            .sessions
            .iter()
            .any(|(s, _)| s.report.applied > 0 || s.report.mode == "rebuild");
        if caught_up {
            return Instant::now();
        }
        let waited: std::time::Duration = self.sessions.iter().map(|(s, _)| s.lock_waited()).sum();
        (started + waited).min(Instant::now())
    }

    /// Ends the sessions, releasing the store locks (what follows a search, printing and the
    /// local logs, needs none: writers waiting for the store go on meanwhile), and returns the
    /// project asked for and the projects read.
    pub fn close(self) -> (Project, Vec<Project>) {
        let read = self
            .sessions
            .iter()
            .map(|(s, _)| s.project.clone())
            .collect();
        (self.project, read)
    }

    pub fn sources(&self) -> Vec<Source<'_>> {
        self.sessions
            .iter()
            .map(|(s, global)| Source {
                store: s.store(),
                project: s.project.name.to_string(),
                global: *global,
            })
            .collect()
    }
}

/// Records that `hits` were returned, in each project's local access log (best effort: a read
/// never fails because of it). Lifecycle importance counts these accesses.
pub fn record_accesses(ctx: &Ctx, read: &[Project], hits: &[Hit], via: &str) {
    if ctx.global.as_of.is_some() {
        // A look at the past is not a use of the entries today.
        return;
    }
    let now = ctx.now();
    for project in read {
        let name = project.name.as_str();
        let ids: Vec<&str> = hits
            .iter()
            .filter(|h| h.project == name)
            .map(|h| h.entry.id.as_str())
            .collect();
        if !ids.is_empty() {
            crate::lifecycle::access_log::record_best_effort(project, &ids, &now, via);
        }
    }
}

/// Ranking parameters from the policy and the clock.
pub fn rank_params(ctx: &Ctx, project: &Project) -> Result<(RetrievalPolicy, RankParams)> {
    let config = project.config()?;
    let now = unix_millis(&ctx.now()).unwrap_or(0);
    // `config()` validated the policy, so this only fails on a file changed since.
    let decay = config
        .policies
        .lifecycle
        .decay_function()
        .map_err(|problem| Error::CorruptFile {
            path: project.config_path(),
            problem: format!("{problem}; fix it in the file (see docs/LIFECYCLE.md)"),
        })?;
    let params = RankParams {
        now,
        expiry_warning_days: config.policies.retrieval.expiry_warning_days,
        recency_half_life_days: config.policies.lifecycle.decay_half_life_days,
        decay,
    };
    Ok((config.policies.retrieval, params))
}

/// A result as JSON: the Memory_Entry plus `project`, `global`, `score` and `annotations`
/// (`explain` adds the score's components), or only the six summary fields.
pub fn hit_json(h: &Hit, summary_only: bool, explain: bool) -> Value {
    if summary_only {
        let e = &h.entry;
        let mut m = Map::new();
        m.insert("id".into(), e.id.clone().into());
        m.insert("summary".into(), e.fields.summary.clone().into());
        m.insert("subject".into(), e.fields.subject.clone().into());
        m.insert("scope".into(), e.fields.scope.clone().into());
        m.insert("kind".into(), e.fields.kind.as_str().into());
        m.insert("confidence".into(), e.fields.confidence.into());
        return Value::Object(m);
    }
    let mut m = projections::entry_json::to_flat_map(&h.entry);
    m.insert("project".into(), h.project.clone().into());
    m.insert("global".into(), h.global.into());
    m.insert("score".into(), round(h.components.score).into());
    m.insert("annotations".into(), h.annotations().into());
    if let Some(r) = &h.related_to {
        m.insert("related_to".into(), r.clone().into());
    }
    if explain {
        m.insert("explain".into(), explain_json(h));
    }
    Value::Object(m)
}

fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

fn explain_json(h: &Hit) -> Value {
    let c = &h.components;
    serde_json::json!({
        "score": round(c.score),
        "relevance": c.relevance.map(round),
        "bm25": c.bm25.map(round),
        "matched_terms": h.matched_terms,
        "composite": round(c.composite),
        "decay": round(c.decay),
        "composite_before_demotions": round(c.composite_raw),
        "confidence": round(c.confidence),
        "evidence_quality": round(c.evidence_quality),
        "recency": round(c.recency),
        "scope_match": round(c.scope_match),
        "demotion": round(c.demotion),
        "rules": h.rules,
    })
}

/// The lines `--explain` prints under a result.
pub fn explain_lines(h: &Hit) -> Vec<String> {
    use crate::retrieval::rank::{
        DEMOTION, RELEVANCE_WEIGHT, W_CONFIDENCE, W_EVIDENCE, W_RECENCY, W_SCOPE,
    };
    let c = &h.components;
    let mut out = Vec::new();
    match (c.relevance, c.bm25) {
        (Some(rel), Some(bm25)) => {
            out.push(format!(
                "score {:.4} = {RELEVANCE_WEIGHT} x relevance {rel:.4} + {:.1} x composite {:.4}",
                c.score,
                1.0 - RELEVANCE_WEIGHT,
                c.composite
            ));
            out.push(format!(
                "relevance {rel:.4} = bm25f {bm25:.4} x ({} + {} x decay {:.4}) / best of the same among matches; terms matched: {}",
                1.0 - crate::retrieval::rank::DECAY_SHARE,
                crate::retrieval::rank::DECAY_SHARE,
                c.decay,
                if h.matched_terms.is_empty() {
                    "-".into()
                } else {
                    h.matched_terms.join(", ")
                }
            ));
        }
        // The score is the composite alone: say why, since a query with text scores its
        // matches otherwise. Related and archived entries are outside the text's ranking.
        _ => out.push(if let Some(from) = &h.related_to {
            format!(
                "score {:.4} = composite (related to {from}, added by --include-related, not \
                 ranked by the text: decay {:.4} not applied)",
                c.score, c.decay
            )
        } else if h.entry.lifecycle == projections::Lifecycle::Archived {
            let holding = if h.matched_terms.is_empty() {
                String::new()
            } else {
                format!(" for holding {}", h.matched_terms.join(", "))
            };
            format!(
                "score {:.4} = composite (archived, outside the text index: added by \
                 --include-archived after the active results{holding}; decay {:.4} not applied)",
                c.score, c.decay
            )
        } else {
            format!(
                "score {:.4} = composite (no text: decay {:.4} not applied)",
                c.score, c.decay
            )
        }),
    }
    out.push(if h.entry.pinned {
        format!("decay {:.4}: pinned entries do not decay", c.decay)
    } else {
        format!(
            "decay {:.4} = policies.lifecycle decay function at the days since last use {}",
            c.decay,
            (&h.entry.updated_at).max(&h.entry.created_at)
        )
    });
    out.push(format!(
        "composite {:.4} = confidence {:.2} x {W_CONFIDENCE} + evidence {:.2} x {W_EVIDENCE} + recency {:.4} x {W_RECENCY} + scope {:.2} x {W_SCOPE} - demotions {:.2}",
        c.composite, c.confidence, c.evidence_quality, c.recency, c.scope_match, c.demotion
    ));
    for r in &h.rules {
        out.push(match r {
            Rule::ApproachingExpiry { valid_to_in_days } => format!(
                "rule approaching_expiry: valid_to in {valid_to_in_days:.2} days: demoted by {DEMOTION}, annotated"
            ),
            Rule::Expired { expired_days_ago } => format!(
                "rule expired: valid_to {expired_days_ago:.2} days ago (shown by --include-expired): demoted by {DEMOTION}, annotated"
            ),
            Rule::StaleEvidence => format!(
                "rule stale_evidence: an evidence URI was found unreachable: demoted by {DEMOTION}, annotated"
            ),
            Rule::LowConfidence => {
                "rule low_confidence: confidence below 0.5: annotated".to_owned()
            }
            Rule::NotCurrent { status } => format!(
                "rule {status}: not the current entry on its subject: demoted by {DEMOTION}, annotated"
            ),
        });
    }
    if h.global {
        out.push("rule global: from ai-memory/global/: annotated".into());
    }
    if let Some(from) = &h.related_to {
        out.push(format!("rule related: named in related_entries of {from}"));
    }
    if let Some(of) = &h.disputed {
        out.push(format!(
            "rule disputed: replaces {of}, whose concurrent changes are unresolved: annotated"
        ));
    }
    out
}

/// Warns when words of the question are in no entry at all (not even by a one-letter
/// correction) while results came back: relevance is relative to the best match, so those
/// results score as high as an answer would, yet they hold only the question's other words
/// ("office wifi password" answered by "Password reset links expire after 1 hour"), and the
/// answer may not be in memory.
fn warn_unheld_words(answer: &Answer, text: &str) {
    if answer.hits.is_empty() {
        return;
    }
    let unheld: Vec<&str> = answer
        .terms
        .iter()
        .filter(|t| t.df == 0)
        .map(|t| t.word.as_str())
        .collect();
    if unheld.is_empty() {
        return;
    }
    // A credential pasted into the question is cut into words that do not look like one
    // each: none is quoted then.
    let words = if crate::policy::secret_scan::scan_text(text).is_empty() {
        let quoted: Vec<String> = unheld.iter().map(|w| format!("`{w}`")).collect();
        quoted.join(", ")
    } else {
        format!("{} of the query's words", unheld.len())
    };
    warn(&format!(
        "no entry holds {words}: the results match only the query's other words, and memory may \
         not hold the answer"
    ));
}

/// Warns of each entry superseded concurrently whose replacements each gave way to another,
/// so that none is active and no query finds any of them.
pub fn warn_without_outcome(sources: &[Source<'_>]) -> Result<()> {
    for (project, entry, competing) in crate::retrieval::search::without_outcome(sources)? {
        warn(&format!(
            "{entry} (project {project}) was superseded concurrently by {}, and each of those \
             was then superseded by another (resolves that chose different winners, merged): \
             none of them is active, so no query finds them; keep one with `memlog resolve \
             {entry} --winner ID`",
            competing.join(", ")
        ));
    }
    Ok(())
}

/// Warns, once per entry in conflict, that results replaced it and that the replacements are
/// competing outcomes until it is resolved.
pub fn warn_disputed(hits: &[Hit]) {
    let mut by: std::collections::BTreeMap<&str, Vec<&str>> = std::collections::BTreeMap::new();
    for h in hits {
        if let Some(of) = &h.disputed {
            by.entry(of.as_str()).or_default().push(h.entry.id.as_str());
        }
    }
    for (of, ids) in by {
        warn(&format!(
            "{} replace{} {of}, whose concurrent changes (from merged branches) are unresolved: \
             they are competing outcomes, not settled facts; see `memlog conflicts`, then \
             `memlog resolve {of} --winner ID`",
            ids.join(", "),
            if ids.len() == 1 { "s" } else { "" },
        ));
    }
}

/// Prints results as a table (with explanations), or as JSON.
pub fn print_hits(out: &mut Out, hits: &[Hit], summary_only: bool, explain: bool) {
    if out.json {
        let items: Vec<Value> = hits
            .iter()
            .map(|h| hit_json(h, summary_only, explain))
            .collect();
        out.json(&items);
        return;
    }
    if hits.is_empty() {
        out.line("no entries");
        return;
    }
    out.line(format!(
        "{:<12}  {:>6}  {:<12}  {:<12}  {:<24}  {:<20}  {:>4}  {}",
        "ID", "SCORE", "SECTION", "KIND", "SUBJECT", "SCOPE", "CONF", "SUMMARY"
    ));
    for h in hits {
        let e = &h.entry;
        let notes = h.annotations();
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!("  [{}]", notes.join(", "))
        };
        out.line(format!(
            "{:<12}  {:>6.3}  {:<12}  {:<12}  {:<24}  {:<20}  {:>4}  {}{notes}",
            e.id.get(..12).unwrap_or(&e.id),
            h.components.score,
            e.fields.section.as_str(),
            e.fields.kind.as_str(),
            clip(&e.fields.subject, 24),
            clip(&e.fields.scope, 20),
            super::output::confidence_cell(e.fields.confidence),
            clip(&e.fields.summary, 80),
        ));
        if explain {
            for l in explain_lines(h) {
                out.line(format!("    {l}"));
            }
        }
    }
}

/// Logs a query and warns when it was slow; a query log that cannot be written only warns.
pub fn log_query(
    ctx: &Ctx,
    project: &Project,
    command: &'static str,
    filters: Value,
    result_count: usize,
    started: Instant,
    slow_ms: u64,
) {
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    #[expect(clippy::cast_precision_loss, reason = "a threshold in milliseconds")]
    let slow = ms > slow_ms as f64;
    if slow {
        warn(&format!(
            "slow {command}: {ms:.1} ms (threshold {slow_ms} ms, retrieval.slow_query_ms in memlog.json)"
        ));
    }
    let entry = QueryLogEntry {
        timestamp: ctx.now(),
        project: project.name.to_string(),
        command,
        filters,
        result_count,
        execution_time_ms: (ms * 1000.0).round() / 1000.0,
        slow,
    };
    let state = project.state_dir();
    match query_log::append(&state, entry) {
        Ok(size) if size > query_log::FOLD_BYTES => {
            if let Err(e) = crate::analytics::query_patterns::fold_if_large(&state) {
                warn(&format!("could not fold the query log: {e}"));
            }
        }
        Ok(_) => {}
        Err(e) => warn(&format!("could not write the query log: {e}")),
    }
}

pub fn run(ctx: &Ctx, args: QueryArgs, out: &mut Out) -> Result<ExitCode> {
    let started = Instant::now();
    let Some(sources) = Sources::open(ctx, args.project.as_deref(), args.no_global)? else {
        // An uninitialized project has no memory yet: an empty answer, so agent runs proceed.
        print_hits(out, &[], args.summary_only, args.explain);
        return Ok(ExitCode::Ok);
    };
    let started = sources.query_started(started);
    let (policy, params) = rank_params(ctx, &sources.project)?;
    let req = Request {
        text: args.text.clone(),
        filters: args.filters.resolve(&policy, Defaults::Smart)?,
        limit: limit_of(args.limit, &policy)?,
        include_related: args.include_related,
        params,
        order: Order::Score,
        min_relevance: 0.0,
    };
    if args.text.as_deref().is_some_and(search::has_no_words) {
        warn(
            "the query text holds no word to search for (only common words such as \"what\" \
             or \"is\", punctuation, or words longer than 40 characters): nothing matches it; \
             name what you are looking for, or leave the text out to list entries",
        );
    }
    let mut answer: Answer = search::search(&sources.sources(), &req)?;
    if args.include_archived {
        let room = req.limit.saturating_sub(answer.hits.len());
        answer
            .hits
            .extend(search::archived_hits(&sources.sources(), &req, room)?);
    }
    warn_unheld_words(&answer, args.text.as_deref().unwrap_or_default());
    let elapsed = started.elapsed();
    warn_without_outcome(&sources.sources())?;
    let (project, read) = sources.close();
    // Recorded before the answer is printed: a reader that closes the pipe early (`| head`)
    // ends the process at the first line it no longer takes.
    record_accesses(ctx, &read, &answer.hits, "query");
    if ctx.global.debug {
        warn_debug(&answer, args.text.as_deref().unwrap_or_default(), elapsed);
    }
    let mut filters = serde_json::to_value(&args.filters).unwrap_or(Value::Null);
    if let (Value::Object(m), Some(t)) = (&mut filters, &args.text) {
        m.insert("text".into(), t.clone().into());
    }
    log_query(
        ctx,
        &project,
        "query",
        filters,
        answer.hits.len(),
        started,
        policy.slow_query_ms,
    );
    warn_disputed(&answer.hits);
    print_hits(out, &answer.hits, args.summary_only, args.explain);
    Ok(ExitCode::Ok)
}

/// The query's words are searched lowercased, split (`ghp`, then the rest of a token) and
/// joined again (`ghp_x` also as `ghpx`): a word taken from a credential in `text` is shown as
/// `[redacted]`.
fn warn_debug(answer: &Answer, text: &str, elapsed: std::time::Duration) {
    let secrets: Vec<(String, String)> = crate::policy::secret_scan::scan_text(text)
        .iter()
        .map(|f| {
            let s = text[f.start..f.end].to_lowercase();
            let joined = s.chars().filter(|c| c.is_alphanumeric()).collect();
            (s, joined)
        })
        .collect();
    let from_secret = |w: &str| {
        secrets
            .iter()
            .any(|(s, joined)| s.contains(w) || joined.contains(w) || w.contains(joined.as_str()))
    };
    let terms: Vec<String> = answer
        .terms
        .iter()
        .map(|t| match &t.corrected_to {
            _ if from_secret(&t.word) => "[redacted]".to_owned(),
            Some(c) => format!("{}->{} (df {})", t.word, c, t.df),
            None => format!("{}:{} (df {})", t.word, t.term, t.df),
        })
        .collect();
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!(
            "debug: execution time {:.3} ms; index records scanned {}; candidates {}; returned {}; terms [{}]\n",
            elapsed.as_secs_f64() * 1000.0,
            answer.scanned,
            answer.matched,
            answer.hits.len(),
            terms.join(", ")
        )
        .as_bytes(),
    );
}
