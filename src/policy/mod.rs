//! The write policy: what a complete entry must satisfy beyond its schema before it is written.
//!
//! Every path that writes (add, apply, supersede, update, resolve, and whatever comes later)
//! goes through [`crate::log::writer::write`], which runs these checks on the final fields. Checks
//! that need only the entry are in [`Policy::check_entry`]; those that need the store
//! (duplicates, references, the size of the project) in [`Policy::check_against_store`].

pub mod evidence_uri;
pub mod secret_scan;
pub mod stored;
pub mod validate;

use crate::error::{Error, Result};
use crate::policy::evidence_uri::{TicketPatterns, UriKind, check_evidence_uri};
use crate::policy::secret_scan::{Finding, scan_text, scan_uri};
use crate::policy::validate::{Invalid, Problem};
use crate::project::{Project, WritePolicy};
use crate::store::Store;
use projections::{EntryFields, EntryState, EvidenceType, Status};
use serde::Serialize;
use std::collections::BTreeSet;

/// Something worth knowing about a write that does not block it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    pub field: String,
    pub rule: &'static str,
    pub message: String,
}

/// A secret found in a field: the field and the rule, never the value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Detection {
    pub field: String,
    pub rule: &'static str,
}

/// The outcome of the policy checks on one entry.
#[derive(Debug, Default)]
pub struct Verdict {
    pub problems: Vec<Problem>,
    pub warnings: Vec<Warning>,
    pub detections: Vec<Detection>,
}

/// The warning for a new entry that repeats `old`, a superseded or deprecated entry.
fn replaced_fact(old: &EntryState) -> String {
    let when = old
        .superseded_at
        .as_deref()
        .unwrap_or(old.updated_at.as_str());
    match old.superseded_by.as_deref() {
        Some(by) if old.status == Status::Superseded => format!(
            "{id} had this subject, scope and summary and was superseded by {by} on {when}: this \
             brings the replaced fact back as a new entry, which ranks beside {by}; if it is true \
             again, supersede {by} with it instead (`memlog supersede {by} ...`)",
            id = old.id
        ),
        _ => format!(
            "{id} had this subject, scope and summary and was deprecated on {when}: this brings \
             the deprecated fact back as a new entry; if it is true again, say why in the new \
             entry's content",
            id = old.id
        ),
    }
}

/// A number as a message shows it: as written when that is short, else in scientific notation
/// (`1e-320` was printed as a decimal of 330 characters).
fn readable_number(x: f64) -> String {
    let plain = x.to_string();
    if plain.len() <= 12 {
        plain
    } else if x.abs() >= 1e-4 {
        format!("{x:.4}")
    } else {
        format!("{x:.3e}")
    }
}

impl Verdict {
    pub(crate) fn problem(
        &mut self,
        field: impl Into<String>,
        constraint: &'static str,
        message: String,
    ) {
        self.problems.push(Problem {
            field: field.into(),
            constraint,
            message,
        });
    }

    /// The warnings, or the problems as an error, with the secrets found for the security log.
    ///
    /// # Errors
    /// [`Invalid`] when a check failed.
    pub fn into_result(self) -> std::result::Result<Vec<Warning>, Invalid> {
        if self.problems.is_empty() {
            Ok(self.warnings)
        } else {
            Err(Invalid {
                problems: self.problems,
                detections: self.detections,
            })
        }
    }

    /// The secrets found in `field`: one problem, for the first, and a detection for each.
    fn secrets(&mut self, field: String, findings: &[Finding]) {
        let Some(first) = findings.first() else {
            return;
        };
        self.problem(field.clone(), "secret", secret_message(first));
        self.detections.extend(findings.iter().map(|f| Detection {
            field: field.clone(),
            rule: f.rule,
        }));
    }

    /// Adds the problems, warnings and detections of `other`.
    pub fn merge(&mut self, other: Self) {
        self.problems.extend(other.problems);
        self.warnings.extend(other.warnings);
        self.detections.extend(other.detections);
    }
}

fn secret_message(f: &Finding) -> String {
    format!(
        "looks like {} {} (rule {}, line {}, column {}); credentials must never be stored in \
         memory: remove it and refer to where it is kept instead (e.g. the name of the vault \
         entry)",
        article(f.description),
        f.description,
        f.rule,
        f.line,
        f.column
    )
}

/// "a" or "an" before `text` as it is read aloud: "an AWS access key", "an SSH key", "a GitHub
/// token", "a URL".
pub fn article(text: &str) -> &'static str {
    let word = text.split_whitespace().next().unwrap_or_default();
    let Some(first) = word.chars().next() else {
        return "a";
    };
    let acronym = word.len() > 1
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    let an = if acronym {
        "AEFHILMNORSX".contains(first)
    } else {
        "aeiouAEIOU".contains(first)
    };
    if an { "an" } else { "a" }
}

/// Evidence types that count as strong evidence for decisions, requirements and invariants.
const STRONG: [EvidenceType; 4] = [
    EvidenceType::Code,
    EvidenceType::Artifact,
    EvidenceType::Ticket,
    EvidenceType::Doc,
];

/// A project's write policy, ready to check entries.
pub struct Policy {
    write: WritePolicy,
    tickets: TicketPatterns,
    /// The retrieval policy's `min_confidence`: default queries leave out entries below it.
    min_confidence: f64,
}

fn uri_kind(t: EvidenceType) -> UriKind {
    match t {
        EvidenceType::Code => UriKind::Code,
        EvidenceType::Artifact => UriKind::Artifact,
        EvidenceType::Log => UriKind::Log,
        EvidenceType::Screenshot => UriKind::Screenshot,
        EvidenceType::Assumption => UriKind::Assumption,
        EvidenceType::Ticket => UriKind::Ticket,
        EvidenceType::Doc => UriKind::Doc,
    }
}

impl Policy {
    /// The policy of a new project.
    pub fn defaults() -> Self {
        let policies = crate::project::Policies::default();
        Self {
            write: policies.write,
            tickets: TicketPatterns::empty(),
            min_confidence: policies.retrieval.min_confidence,
        }
    }

    /// The policy in the project's `memlog.json`.
    ///
    /// # Errors
    /// When the configuration cannot be read or a ticket pattern is not a valid regex.
    pub fn load(project: &Project) -> Result<Self> {
        let policies = project.config()?.policies;
        let write = policies.write;
        let tickets =
            TicketPatterns::new(&write.ticket_patterns).map_err(|problem| Error::CorruptFile {
                path: project.config_path(),
                problem: format!("policies.{problem}; fix the pattern in memlog.json"),
            })?;
        Ok(Self {
            write,
            tickets,
            min_confidence: policies.retrieval.min_confidence,
        })
    }

    /// Checks a text that enters an event beside the entry's fields (a reason, the actor's
    /// name) for secrets.
    pub fn check_free_text(&self, field: &str, text: &str) -> Verdict {
        let mut v = Verdict::default();
        v.secrets(field.to_owned(), &scan_text(text));
        v
    }

    /// Checks that need only the entry: secrets in every text field, evidence URIs by type,
    /// strong evidence for decisions, requirements and invariants, and the low-confidence
    /// warning. `only`, when given, limits the checks to those fields (an update checks what
    /// it changes, not what was accepted before).
    pub fn check_entry(
        &self,
        fields: &EntryFields,
        status: Status,
        only: Option<&BTreeSet<String>>,
    ) -> Verdict {
        let wants = |f: &str| only.is_none_or(|o| o.contains(f));
        let mut v = Verdict::default();
        for (name, value) in [
            ("subject", &fields.subject),
            ("scope", &fields.scope),
            ("summary", &fields.summary),
            ("content", &fields.content),
        ] {
            if wants(name) {
                v.secrets(name.to_owned(), &scan_text(value));
            }
        }
        if wants("tags") {
            for (i, tag) in fields.tags.iter().enumerate() {
                v.secrets(format!("tags[{i}]"), &scan_text(tag));
            }
        }
        if wants("evidence") {
            for (i, e) in fields.evidence.iter().enumerate() {
                let uri_findings = scan_uri(&e.uri);
                let leaked = !uri_findings.is_empty();
                v.secrets(format!("evidence[{i}].uri"), &uri_findings);
                v.secrets(format!("evidence[{i}].note"), &scan_text(&e.note));
                if leaked {
                    continue;
                }
                if let Err(p) = check_evidence_uri(uri_kind(e.kind), &e.uri, &self.tickets) {
                    v.problem(
                        format!("evidence[{i}].uri"),
                        "evidence_uri",
                        format!("{} ({})", p.message, p.rule),
                    );
                }
            }
        }
        let strong_needed = self
            .write
            .strong_evidence_kinds
            .iter()
            .any(|k| k == fields.kind.as_str());
        if strong_needed
            && status != Status::Draft
            && (wants("evidence") || wants("kind") || wants("status"))
            && !fields.evidence.iter().any(|e| STRONG.contains(&e.kind))
        {
            v.problem(
                "evidence",
                "evidence_strength",
                format!(
                    "a {} needs code, artifact, ticket or doc evidence (it has {}); add e.g. \
                     --evidence code:src/file.rs#L10:what it shows, or record it as a draft",
                    fields.kind.as_str(),
                    if fields.evidence.is_empty() {
                        "none".to_owned()
                    } else {
                        fields
                            .evidence
                            .iter()
                            .map(|e| e.kind.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ),
            );
        }
        let c = fields.confidence;
        if wants("confidence") && c < self.write.low_confidence_warning {
            let hidden = if c < self.min_confidence {
                format!(", and {}", self.left_out())
            } else {
                String::new()
            };
            v.warnings.push(Warning {
                field: "confidence".into(),
                rule: "low_confidence",
                message: format!(
                    "confidence {} is below {}: the entry is marked low-confidence wherever it \
                     is shown{hidden}",
                    readable_number(c),
                    self.write.low_confidence_warning,
                ),
            });
        } else if wants("confidence") && c < self.min_confidence {
            v.warnings.push(Warning {
                field: "confidence".into(),
                rule: "below_min_confidence",
                message: format!("confidence {} is {}", readable_number(c), self.left_out()),
            });
        }
        v
    }

    /// What the retrieval policy does with an entry below its `min_confidence`.
    fn left_out(&self) -> String {
        format!(
            "below the project's min_confidence {}: default queries and `context` leave it out \
             until it is confirmed (`memlog query --min-confidence 0` finds it)",
            self.min_confidence
        )
    }

    /// Checks that need the store: no active entry with the same subject, scope and summary
    /// (other than `exclude`, the entry being replaced or changed), related entries exist, and
    /// the project-size warning.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn check_against_store(
        &self,
        store: &Store,
        fields: &EntryFields,
        status: Status,
        exclude: Option<&str>,
        only: Option<&BTreeSet<String>>,
    ) -> Result<Verdict> {
        let wants = |f: &str| only.is_none_or(|o| o.contains(f));
        let mut v = Verdict::default();
        if status == Status::Active && (wants("subject") || wants("scope") || wants("summary")) {
            // Index lookups: active entries with this subject, scope and summary, then archived
            // ones (a read restores them as they are).
            let key = crate::store::duplicate_key(fields);
            let mut candidates = store.ids_with("duplicate", &key)?;
            candidates.extend(store.ids_with("duplicate_archived", &key)?);
            for id in candidates {
                if Some(id.as_str()) == exclude {
                    continue;
                }
                if let Some(other) = store.entry(&id)?
                    && other.status == Status::Active
                    && other.fields.scope == fields.scope
                    && other.fields.summary == fields.summary
                {
                    let message = if other.lifecycle == projections::Lifecycle::Archived {
                        format!(
                            "archived entry {id} already has this subject, scope and summary; \
                             `memlog show {id}` restores it, then supersede or update it instead \
                             of adding a copy"
                        )
                    } else {
                        format!(
                            "active entry {id} already has this subject, scope and summary; \
                             supersede or update it instead of adding a copy"
                        )
                    };
                    v.problem("summary", "duplicate", message);
                    break;
                }
            }
            // A new entry (not a replacement) that says again what a superseded or deprecated
            // entry said brings back a fact that was replaced, and being newer it ranks above
            // what replaced it: allowed (it may be true again), never silently.
            if exclude.is_none() && v.problems.is_empty() {
                for id in store.ids_with("replaced", &key)? {
                    if let Some(old) = store.entry(&id)?
                        && old.fields.scope == fields.scope
                        && old.fields.summary == fields.summary
                    {
                        v.warnings.push(Warning {
                            field: "summary".into(),
                            rule: "replaced_fact",
                            message: replaced_fact(&old),
                        });
                        break;
                    }
                }
            }
        }
        if wants("related_entries") {
            for (i, id) in fields.related_entries.iter().enumerate() {
                if Some(id.as_str()) == exclude {
                    v.problem(
                        format!("related_entries[{i}]"),
                        "reference",
                        format!(
                            "{id} is the entry being changed: an entry is not related to itself"
                        ),
                    );
                } else if store.entry(id)?.is_none() {
                    v.problem(
                        format!("related_entries[{i}]"),
                        "reference",
                        format!(
                            "related entry {} does not exist in this project; use a full id \
                             from `memlog list`",
                            id.escape_debug()
                        ),
                    );
                }
            }
        }
        if exclude.is_none() {
            let n = store.hot_count()?;
            if u64::try_from(n).unwrap_or(u64::MAX) >= self.write.max_entries_warning {
                v.warnings.push(Warning {
                    field: "project".into(),
                    rule: "many_entries",
                    message: format!(
                        "the project holds {n} active-index entries (policy warns at {}); \
                         consider consolidating: deprecate or supersede what is outdated",
                        self.write.max_entries_warning
                    ),
                });
            }
        }
        Ok(v)
    }

    /// Both kinds of checks; the store ones only when a store is given.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn check(
        &self,
        store: Option<&Store>,
        fields: &EntryFields,
        status: Status,
        exclude: Option<&str>,
        only: Option<&BTreeSet<String>>,
    ) -> Result<Verdict> {
        let mut v = self.check_entry(fields, status, only);
        if let Some(store) = store {
            v.merge(self.check_against_store(store, fields, status, exclude, only)?);
        }
        Ok(v)
    }
}

/// Appends secret detections to the project's local security log (`.memlog/security.jsonl`):
/// time, actor, operation, field and rule. Never the value: the actor and the field are
/// redacted, for the detection may be in the actor itself or in a key submitted.
///
/// # Errors
/// When the log cannot be written.
pub fn log_detections(
    project: &Project,
    at: &str,
    actor: &str,
    operation: &str,
    detections: &[Detection],
) -> Result<()> {
    if detections.is_empty() || !project.dir.exists() {
        return Ok(());
    }
    project.ensure_state_dir()?;
    let actor = validate::redact_secrets(actor);
    let mut bytes = Vec::new();
    for d in detections {
        let line = serde_json::json!({
            "at": at, "actor": actor, "operation": operation,
            "field": validate::redact_secrets(&d.field), "rule": d.rule,
            "action": "rejected",
        });
        bytes.extend_from_slice(line.to_string().as_bytes());
        bytes.push(b'\n');
    }
    crate::log::durable::append_record(&project.security_log_path(), &bytes)?
        .1
        .sync()
}

#[cfg(test)]
mod article_tests {
    #[test]
    fn articles_follow_the_sound() {
        for (text, a) in [
            ("AWS access key", "an"),
            ("SSH private key", "an"),
            ("GitHub token", "a"),
            ("URL with a password", "a"),
            ("private key", "a"),
            ("OpenAI API key", "an"),
            ("", "a"),
        ] {
            assert_eq!(super::article(text), a, "{text}");
        }
    }
}
