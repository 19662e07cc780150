//! The retrieval evaluation's data set, generated deterministically from a seed: memories of
//! the kinds agents write (decisions, incidents, runbook steps, metrics, requirements, facts from
//! conversations) for many services, distractors that share their words (low-confidence
//! guesses, drafts, expired measurements, unrelated notes on the same service), and questions
//! with the entry that answers each, half of them paraphrases that share few words with it.

use serde_json::{Value, json};

/// A small deterministic generator (SplitMix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n as u64).max(1)).unwrap_or(0)
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const SERVICES: [&str; 70] = [
    "auth",
    "billing",
    "payments",
    "search",
    "checkout",
    "inventory",
    "notifications",
    "gateway",
    "ledger",
    "reporting",
    "scheduler",
    "profiles",
    "media",
    "catalog",
    "shipping",
    "pricing",
    "fraud",
    "analytics",
    "email",
    "sms",
    "webhooks",
    "exports",
    "imports",
    "sessions",
    "audit",
    "recommendations",
    "reviews",
    "cart",
    "orders",
    "refunds",
    "subscriptions",
    "invoicing",
    "tax",
    "geo",
    "maps",
    "chat",
    "feeds",
    "uploads",
    "thumbnails",
    "indexer",
    "crawler",
    "metrics",
    "alerts",
    "backups",
    "identity",
    "permissions",
    "quotas",
    "ratelimiter",
    "cdn",
    "dns",
    "mailer",
    "payouts",
    "kyc",
    "onboarding",
    "support",
    "tickets",
    "wiki",
    "builds",
    "deployer",
    "secrets",
    "vault",
    "billing-sync",
    "loyalty",
    "coupons",
    "wallet",
    "ads",
    "translations",
    "consent",
    "telemetry",
    "status-page",
];
const DBS: [&str; 8] = [
    "PostgreSQL",
    "MySQL",
    "Redis",
    "DynamoDB",
    "Cassandra",
    "MongoDB",
    "SQLite",
    "Elasticsearch",
];
/// (what, a paraphrase of it)
const OBJECTS: [(&str, &str); 6] = [
    ("invoices", "bills sent to customers"),
    ("session tokens", "login state"),
    ("user profiles", "account details of people"),
    ("audit events", "trail of who changed what"),
    ("uploaded files", "attachments people send"),
    ("order history", "past purchases"),
];
/// (cause, fix, a paraphrase of the question)
const CAUSES: [(&str, &str, &str); 6] = [
    (
        "an expired TLS certificate",
        "renewing the certificate",
        "why did {S} stop answering over HTTPS",
    ),
    (
        "a full disk on the primary node",
        "freeing space and adding a volume",
        "why did {S} break when storage filled up",
    ),
    (
        "a bad configuration push",
        "rolling the config back",
        "which settings change took {S} down",
    ),
    (
        "connection pool exhaustion",
        "raising the pool size",
        "why did {S} run out of database connections",
    ),
    (
        "a memory leak in the worker",
        "restarting workers nightly",
        "why did {S} keep getting killed for using too much RAM",
    ),
    (
        "DNS resolution failures",
        "caching lookups locally",
        "why could {S} not resolve hostnames",
    ),
];
const COMMANDS: [&str; 4] = [
    "systemctl restart {S}",
    "kubectl rollout restart deployment/{S}",
    "make restart SERVICE={S}",
    "./ops/restart.sh {S}",
];
const FORMATS: [(&str, &str); 4] = [
    ("a PDF attachment", "a spreadsheet"),
    ("a short Slack message", "long emails"),
    ("a CSV export", "charts"),
    ("a bullet list in the ticket", "meetings"),
];
const PEOPLE: [&str; 8] = [
    "Alice Moreau",
    "Bilal Khan",
    "Chen Wei",
    "Dana Ortiz",
    "Erik Lund",
    "Fatima Noor",
    "Goran Petrov",
    "Hana Sato",
];
const AGENTS: [&str; 4] = ["planner", "coder", "reviewer", "ops-agent"];

/// A question, asked of one project, and the entries (by index in [`DataSet::memories`]) that
/// answer it: finding any of them counts.
#[derive(Debug, Clone)]
pub struct Question {
    pub text: String,
    pub answers: Vec<usize>,
    /// The generated set's `keyword`, `paraphrase` or `typo`; a LoCoMo question's category.
    pub style: String,
    /// Index in [`DataSet::projects`].
    pub project: usize,
}

/// Memories (Memory_Update `create` entries, in order, each in one project) and questions.
#[derive(Debug, Clone, Default)]
pub struct DataSet {
    /// What the set is, for the report: `seed 7`, `LoCoMo (path)`.
    pub name: String,
    pub projects: Vec<String>,
    pub memories: Vec<Value>,
    /// The project (index in `projects`) of each memory.
    pub memory_project: Vec<usize>,
    pub questions: Vec<Question>,
}

impl DataSet {
    /// Adds `entry` to `project`, returning its index.
    pub fn push(&mut self, project: usize, entry: Value) -> usize {
        self.memories.push(entry);
        self.memory_project.push(project);
        self.memories.len() - 1
    }
}

fn evidence(kind: &str, s: &str) -> Value {
    match kind {
        "code" => {
            json!({"type": "code", "uri": format!("src/{s}/main.rs#L10-L40"), "note": "implementation"})
        }
        "ticket" => {
            json!({"type": "ticket", "uri": format!("https://github.com/acme/{s}/issues/42"), "note": "tracking issue"})
        }
        "doc" => {
            json!({"type": "doc", "uri": format!("docs/{s}/README.md"), "note": "service documentation"})
        }
        "log" => {
            json!({"type": "log", "uri": format!("logs/{s}/2026-11-01.log"), "note": "observed"})
        }
        _ => json!({"type": "assumption", "uri": "-", "note": "inferred from a conversation"}),
    }
}

struct Fact {
    section: &'static str,
    kind: &'static str,
    summary: String,
    content: String,
    keyword: String,
    paraphrase: String,
    evidence: &'static str,
}

fn day(rng: &mut Rng) -> String {
    format!("2026-{:02}-{:02}", 1 + rng.below(10), 1 + rng.below(28))
}

fn facts(s: &str, rng: &mut Rng) -> Vec<Fact> {
    let (obj, obj_alt) = *rng.pick(&OBJECTS);
    let db = *rng.pick(&DBS);
    let (cause, fix, cause_q) = *rng.pick(&CAUSES);
    let cmd = rng.pick(&COMMANDS).replace("{S}", s);
    let (fmt, dislike) = *rng.pick(&FORMATS);
    let person = *rng.pick(&PEOPLE);
    let (n, m) = (40 + rng.below(900), 5 + rng.below(30));
    let retries = 2 + rng.below(6);
    let date = day(rng);
    vec![
        Fact {
            section: "decisions",
            kind: "decision",
            summary: format!("{s} stores {obj} in {db}"),
            content: format!(
                "We decided to keep the {obj} of the {s} service in {db}; it was reviewed in the architecture meeting and fits the expected load."
            ),
            keyword: format!("Where does {s} store {obj}?"),
            paraphrase: format!("which datastore holds the {obj_alt} for {s}"),
            evidence: "code",
        },
        Fact {
            section: "observations",
            kind: "incident",
            summary: format!("{s} outage caused by {cause}"),
            content: format!(
                "On {date} the {s} service was unavailable for {m} minutes. Root cause: {cause}. Mitigated by {fix}."
            ),
            keyword: format!("What caused the {s} outage?"),
            paraphrase: cause_q.replace("{S}", s),
            evidence: "ticket",
        },
        Fact {
            section: "learnings",
            kind: "runbook_step",
            summary: format!("Restart {s} by draining traffic, then running {cmd}"),
            content: format!(
                "1. Drain {s} in the load balancer. 2. Run `{cmd}`. 3. Wait for the health check to pass before restoring traffic."
            ),
            keyword: format!("How do I restart {s}?"),
            paraphrase: format!("safe procedure to bounce the {s} service"),
            evidence: "doc",
        },
        Fact {
            section: "state",
            kind: "metric",
            summary: format!("{s} p99 latency is {n} ms"),
            content: format!("Measured under production load on {date}: p99 {n} ms, p50 {m} ms."),
            keyword: format!("What is the p99 latency of {s}?"),
            paraphrase: format!("how slow are the slowest {s} responses right now"),
            evidence: "log",
        },
        Fact {
            section: "observations",
            kind: "other",
            summary: format!("The user wants {s} reports as {fmt}"),
            content: format!(
                "In a chat on {date} the user said they prefer {fmt} for the weekly {s} report and dislike {dislike}."
            ),
            keyword: format!("What format does the user want for {s} reports?"),
            paraphrase: format!("how does she like the weekly {s} update delivered"),
            evidence: "assumption",
        },
        Fact {
            section: "decisions",
            kind: "requirement",
            summary: format!("{s} must respond within {n} ms"),
            content: format!(
                "From the SLO review: every {s} request completes within {n} ms at p99, otherwise callers time out."
            ),
            keyword: format!("What response time must {s} meet?"),
            paraphrase: format!("what is the deadline for {s} to answer a call"),
            evidence: "doc",
        },
        Fact {
            section: "decisions",
            kind: "decision",
            summary: format!("{s} retries failed calls {retries} times with exponential backoff"),
            content: format!(
                "Calls from {s} to its dependencies are retried {retries} times, starting at {m}0 ms and doubling each attempt."
            ),
            keyword: format!("How many times does {s} retry failed calls?"),
            paraphrase: format!("when a dependency errors, how often does {s} try again"),
            evidence: "code",
        },
        Fact {
            section: "learnings",
            kind: "other",
            summary: format!("{person} owns the {s} service"),
            content: format!(
                "Mentioned in standup on {date}: {person} is the owner and on-call lead for {s}; page them for incidents."
            ),
            keyword: format!("Who owns the {s} service?"),
            paraphrase: format!("who is responsible for {s} and should be paged"),
            evidence: "assumption",
        },
    ]
}

fn noise(s: &str, rng: &mut Rng) -> Vec<(String, String)> {
    let n = 10 + rng.below(90);
    let other = *rng.pick(&SERVICES);
    vec![
        (
            format!("{s} dashboards live in the Grafana folder {s}-ops"),
            format!("The {s} dashboards show request rate, errors and saturation."),
        ),
        (
            format!("{s} feature flag new-flow enabled for {n}% of users"),
            format!("Rollout of the new flow in {s} continues weekly if error rates stay flat."),
        ),
        (
            format!("{s} log retention is {n} days"),
            format!("Logs of {s} are kept {n} days in the central store, then deleted."),
        ),
        (
            format!("Load test of {s} reached {n}00 requests per second"),
            format!("The {s} load test saturated CPU first; memory stayed flat."),
        ),
        (
            format!("{s} depends on {other} for lookups"),
            format!("Every {s} request makes one call to {other}; a {other} outage degrades {s}."),
        ),
        (
            format!(
                "{s} alerts fire when the error rate exceeds {m}%",
                m = 1 + n % 5
            ),
            format!("The {s} alert pages the owner after five minutes above threshold."),
        ),
        (
            format!("{s} is deployed every weekday at noon"),
            format!(
                "The {s} pipeline deploys automatically after tests pass; Friday deploys need approval."
            ),
        ),
        (
            format!("{s} uses the shared HTTP client library"),
            format!("Timeouts and retries of {s} come from the shared client's configuration."),
        ),
    ]
}

#[expect(
    clippy::too_many_arguments,
    reason = "one row of the data set's fields"
)]
fn entry(
    section: &str,
    kind: &str,
    s: &str,
    summary: &str,
    content: &str,
    confidence: f64,
    ev: &str,
    status: &str,
    rng: &mut Rng,
) -> Value {
    let mut e = json!({
        "section": section, "kind": kind, "subject": format!("{s}.{kind}"),
        "scope": format!("service:{s}"), "summary": summary, "content": content,
        "tags": [s, kind], "confidence": confidence, "evidence": [evidence(ev, s)],
        "status": status,
    });
    if section == "state"
        && let Some(m) = e.as_object_mut()
    {
        m.insert("valid_from".into(), "2026-10-01T00:00:00Z".into());
        m.insert("valid_to".into(), "2027-06-01T00:00:00Z".into());
    }
    let _ = rng;
    e
}

/// Generates the data set for `seed`.
pub fn generate(seed: u64) -> DataSet {
    let mut rng = Rng::new(seed);
    let mut d = DataSet {
        name: format!("seed {seed}"),
        projects: vec![super::child::PROJECT.to_owned()],
        ..DataSet::default()
    };
    for (si, s) in SERVICES.iter().enumerate() {
        for (fi, f) in facts(s, &mut rng).into_iter().enumerate() {
            // Distractors first, so that insertion order never favours the answer.
            let guess = f.summary.replace(s, &format!("{s} probably"));
            d.push(
                0,
                entry(
                    "observations",
                    "hypothesis",
                    s,
                    &format!("Maybe {guess}"),
                    &format!("Unverified guess: {}", f.content),
                    0.35,
                    "assumption",
                    "active",
                    &mut rng,
                ),
            );
            d.push(
                0,
                entry(
                    f.section,
                    f.kind,
                    s,
                    &format!("{} (draft)", f.summary),
                    &format!("Draft, not yet confirmed. {}", f.content),
                    0.7,
                    f.evidence,
                    "draft",
                    &mut rng,
                ),
            );
            if f.section == "state" {
                let mut old = entry(
                    f.section,
                    f.kind,
                    s,
                    &f.summary.replace(" ms", "0 ms"),
                    &f.content,
                    0.8,
                    f.evidence,
                    "active",
                    &mut rng,
                );
                if let Some(m) = old.as_object_mut() {
                    m.insert("valid_from".into(), "2026-01-01T00:00:00Z".into());
                    m.insert("valid_to".into(), "2026-03-01T00:00:00Z".into());
                }
                d.push(0, old);
            }
            let confidence = 0.7 + (rng.below(30) as f64) / 100.0;
            let mut e = entry(
                f.section, f.kind, s, &f.summary, &f.content, confidence, f.evidence, "active",
                &mut rng,
            );
            if let Some(m) = e.as_object_mut() {
                m.insert(
                    "tags".into(),
                    json!([s, f.kind, AGENTS[(si + fi) % AGENTS.len()]]),
                );
            }
            let answer = d.push(0, e);
            let style = if (si + fi) % 2 == 0 {
                "keyword"
            } else {
                "paraphrase"
            };
            let mut text = if style == "keyword" {
                f.keyword
            } else {
                f.paraphrase
            };
            let style = if style == "keyword" && (si * 8 + fi) % 10 == 3 {
                text = typo(&text);
                "typo"
            } else {
                style
            };
            d.questions.push(Question {
                text,
                answers: vec![answer],
                style: style.to_owned(),
                project: 0,
            });
        }
        for (summary, content) in noise(s, &mut rng) {
            let e = entry(
                "observations",
                "other",
                s,
                &summary,
                &content,
                0.8,
                "log",
                "active",
                &mut rng,
            );
            d.push(0, e);
        }
    }
    d
}

/// Swaps two letters in the longest word of `text` that is not a service name.
fn typo(text: &str) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let Some((i, _)) = words
        .iter()
        .enumerate()
        .filter(|(_, w)| w.chars().all(|c| c.is_ascii_lowercase()) && !SERVICES.contains(w))
        .max_by_key(|(_, w)| w.len())
    else {
        return text.to_owned();
    };
    let mut chars: Vec<char> = words[i].chars().collect();
    if chars.len() >= 5 {
        chars.swap(2, 3);
    }
    let fixed: String = chars.into_iter().collect();
    words
        .iter()
        .enumerate()
        .map(|(j, w)| if j == i { fixed.as_str() } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}
