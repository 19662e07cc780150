//! Correctness properties of retrieval (the core document's properties 4, 6, 20, 24, 36, 39 and
//! 40), checked on random corpora written to a real store and searched in process with
//! [`memlog::retrieval::search::search`], at a fixed `now`.
//!
//! Every expectation is computed here from the entries themselves (an oracle written from the
//! documentation, not from the retrieval code), so a wrong filter, order or score fails a test.

use crate::common::{NOW, session, temp_project};
use memlog::retrieval::context::{MAX_CONTEXT, MIN_RELEVANCE};
use memlog::retrieval::features::unix_millis;
use memlog::retrieval::filters::{Filters, MAX_LIMIT};
use memlog::retrieval::rank::RankParams;
use memlog::retrieval::search::{self, Hit, Order, Request, Source};
use memlog::store::session::Session;
use projections::{
    EntryFields, EntryState, Event, EventData, Evidence, EvidenceType, Kind, Section, Status,
};
use proptest::prelude::*;
use std::collections::BTreeSet;

const DAY: i64 = 86_400_000;
const SCOPES: [&str; 6] = [
    "org",
    "repo",
    "service:auth",
    "service:billing",
    "environment:prod",
    "customer",
];
const SUBJECTS: [&str; 3] = ["pay.deploy", "auth.login", "ops.oncall"];
const TAGS: [&str; 3] = ["alpha", "bravo", "charlie"];
/// Words of summaries and queries: stems of themselves, none one letter from another.
const WORDS: [&str; 5] = ["pipeline", "freeze", "rollback", "window", "quorum"];
const MIN_CONFIDENCE: f64 = 0.6;

fn now() -> i64 {
    unix_millis(NOW).unwrap_or_else(|| panic!("bad NOW"))
}

fn params() -> RankParams {
    RankParams {
        now: now(),
        expiry_warning_days: 7,
        recency_half_life_days: 30,
        decay: memlog::lifecycle::decay::DecayFunction::from_policy("exponential", 30, None)
            .unwrap_or_else(|e| panic!("{e}")),
    }
}

/// The event timestamp of Unix milliseconds.
fn timestamp(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_else(|| panic!("bad time {ms}"))
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

const HOUR: i64 = 3_600_000;

/// One random entry.
#[derive(Debug, Clone)]
struct Spec {
    section: Section,
    kind: Kind,
    scope: &'static str,
    subject: &'static str,
    tags: Vec<&'static str>,
    /// Confidence in tenths.
    confidence: u8,
    evidence: EvidenceType,
    /// Created this many hours before now.
    age_hours: i64,
    /// Deprecated (a second event) or created as a draft; active otherwise.
    status: Status,
    /// `valid_to` relative to now, in hours.
    valid_to_hours: Option<i64>,
    words: Vec<&'static str>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        (
            prop::sample::select(Section::ALL),
            prop::sample::select(Kind::ALL),
            prop::sample::select(&SCOPES[..]),
            prop::sample::select(&SUBJECTS[..]),
            prop::sample::subsequence(&TAGS[..], 0..=3),
        ),
        (
            prop_oneof![0u8..=10, 6u8..=10],
            prop::sample::select(EvidenceType::ALL),
            0i64..2000,
            prop_oneof![
                6 => Just(Status::Active),
                1 => Just(Status::Draft),
                1 => Just(Status::Deprecated),
            ],
            prop::option::of(prop_oneof![
                -400i64..400,
                Just(0i64),
                Just(7 * 24),
                Just(7 * 24 + 1)
            ]),
            prop::sample::subsequence(&WORDS[..], 1..=3),
        ),
    )
        .prop_map(
            |(
                (section, kind, scope, subject, tags),
                (confidence, evidence, age_hours, status, valid_to_hours, words),
            )| Spec {
                section,
                kind,
                scope,
                subject,
                tags,
                confidence,
                evidence,
                age_hours,
                status,
                valid_to_hours,
                words,
            },
        )
}

fn corpus() -> impl Strategy<Value = Vec<Spec>> {
    prop::collection::vec(spec(), 1..16)
}

/// The events of one entry: its create, and a deprecate when the spec says so.
fn events_of(s: &Spec, n: usize, related: Vec<String>) -> Vec<Event> {
    let created = now() - s.age_hours * HOUR;
    let summary = format!("Note {n}: {}", s.words.join(" "));
    let fields = EntryFields {
        section: s.section,
        kind: s.kind,
        subject: s.subject.into(),
        scope: s.scope.into(),
        content: summary.clone(),
        summary,
        tags: s.tags.iter().map(|t| (*t).to_owned()).collect(),
        confidence: f64::from(s.confidence) / 10.0,
        evidence: vec![Evidence {
            kind: s.evidence,
            uri: format!("src/file{n}.rs"),
            note: "why".into(),
        }],
        related_entries: related,
        valid_from: None,
        valid_to: s.valid_to_hours.map(|h| timestamp(now() + h * HOUR)),
        review_interval: None,
    };
    let status = if s.status == Status::Draft {
        Status::Draft
    } else {
        Status::Active
    };
    let create = Event::build(
        "",
        "agent-7",
        &timestamp(created),
        vec![],
        EventData::Create { fields, status },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut out = vec![create.clone()];
    if s.status == Status::Deprecated {
        out.push(
            Event::build(
                &create.entry,
                "agent-7",
                &timestamp(created + 60_000),
                vec![create.id.clone()],
                EventData::Deprecate { reason: None },
            )
            .unwrap_or_else(|e| panic!("{e}")),
        );
    }
    out
}

/// A project whose log holds `events` in this order, and a caught-up session on it.
struct Corpus {
    _dir: tempfile::TempDir,
    session: Session,
}

impl Corpus {
    fn write(events: &[Event]) -> Self {
        let (dir, project) = temp_project();
        let text: String = events
            .iter()
            .map(|e| format!("{}\n", e.to_line().unwrap_or_else(|e| panic!("{e}"))))
            .collect();
        memlog::log::durable::append(&project.log_path(), text.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        let session = session(&project);
        Self { _dir: dir, session }
    }

    /// A store a rebuild wrote from `first` (postings in blocks), then caught up with `rest`
    /// one entry at a time (postings alone, and masks on the blocks).
    fn grown(first: &[Event], rest: &[Event]) -> Self {
        let (dir, project) = temp_project();
        let lines = |events: &[Event]| -> String {
            events
                .iter()
                .map(|e| format!("{}\n", e.to_line().unwrap_or_else(|e| panic!("{e}"))))
                .collect()
        };
        memlog::log::durable::append(&project.log_path(), lines(first).as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        drop(session(&project));
        memlog::log::durable::append(&project.log_path(), lines(rest).as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        let session = session(&project);
        Self { _dir: dir, session }
    }

    fn of(specs: &[Spec]) -> Self {
        let events: Vec<Event> = specs
            .iter()
            .enumerate()
            .flat_map(|(n, s)| events_of(s, n, vec![]))
            .collect();
        Self::write(&events)
    }

    fn search(&self, req: &Request) -> Vec<Hit> {
        let sources = [Source {
            store: self.session.store(),
            project: "demo".into(),
            global: false,
        }];
        search::search(&sources, req)
            .unwrap_or_else(|e| panic!("{e}"))
            .hits
    }

    /// Every entry of the store, whatever its status.
    fn all(&self) -> Vec<EntryState> {
        let req = request(None, unfiltered(), Order::Score);
        self.search(&req).into_iter().map(|h| h.entry).collect()
    }
}

/// Filters that let everything through.
fn unfiltered() -> Filters {
    let mut f = Filters::defaults(0.0);
    f.statuses = Status::ALL.to_vec();
    f.include_expired = true;
    f
}

fn request(text: Option<String>, filters: Filters, order: Order) -> Request {
    Request {
        text,
        filters,
        limit: MAX_LIMIT,
        include_related: false,
        params: params(),
        order,
        min_relevance: 0.0,
    }
}

/// A random set of filters over the smart defaults (as `query` resolves them).
#[derive(Debug, Clone)]
struct FilterSpec {
    sections: Vec<Section>,
    kinds: Vec<Kind>,
    statuses: Option<Vec<Status>>,
    scope: Option<&'static str>,
    subject: Option<&'static str>,
    tags: Vec<&'static str>,
    min_confidence: Option<u8>,
    max_confidence: Option<u8>,
    created_after_hours: Option<i64>,
    created_before_hours: Option<i64>,
    updated_after_hours: Option<i64>,
    updated_before_hours: Option<i64>,
    include_expired: bool,
}

fn filter_spec() -> impl Strategy<Value = FilterSpec> {
    // Each filter is asked for in about one query out of seven, so that most queries return
    // something and each filter is often the only one that decides.
    fn sometimes<S: Strategy>(s: S) -> impl Strategy<Value = Option<S::Value>> {
        prop::option::weighted(0.15, s)
    }
    let hours = || sometimes(0i64..2000);
    (
        (
            sometimes(prop::sample::subsequence(Section::ALL, 1..=2)),
            sometimes(prop::sample::subsequence(Kind::ALL, 1..=3)),
            sometimes(prop::sample::subsequence(Status::ALL, 1..=4)),
            sometimes(prop::sample::select(&SCOPES[..])),
            sometimes(prop::sample::select(&SUBJECTS[..])),
            sometimes(prop::sample::subsequence(&TAGS[..], 1..=2)),
        ),
        (
            sometimes(0u8..=10),
            sometimes(0u8..=10),
            hours(),
            hours(),
            hours(),
            hours(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |((sections, kinds, statuses, scope, subject, tags), rest)| {
                let (min, max, ca, cb, ua, ub, include_expired) = rest;
                FilterSpec {
                    sections: sections.unwrap_or_default(),
                    kinds: kinds.unwrap_or_default(),
                    statuses,
                    scope,
                    subject,
                    tags: tags.unwrap_or_default(),
                    min_confidence: min,
                    max_confidence: max,
                    created_after_hours: ca,
                    created_before_hours: cb,
                    updated_after_hours: ua,
                    updated_before_hours: ub,
                    include_expired,
                }
            },
        )
}

impl FilterSpec {
    fn filters(&self) -> Filters {
        let at = |h: Option<i64>| h.map(|h| now() - h * HOUR);
        let mut f = Filters::defaults(MIN_CONFIDENCE);
        f.sections.clone_from(&self.sections);
        f.kinds.clone_from(&self.kinds);
        if let Some(s) = &self.statuses {
            f.statuses.clone_from(s);
        }
        f.scope = self.scope.map(str::to_owned);
        f.subject = self.subject.map(str::to_owned);
        f.tags = self.tags.iter().map(|t| (*t).to_owned()).collect();
        if let Some(c) = self.min_confidence {
            f.min_confidence = f64::from(c) / 10.0;
        }
        if let Some(c) = self.max_confidence {
            f.max_confidence = f64::from(c) / 10.0;
        }
        f.created_after = at(self.created_after_hours);
        f.created_before = at(self.created_before_hours);
        f.updated_after = at(self.updated_after_hours);
        f.updated_before = at(self.updated_before_hours);
        f.include_expired = self.include_expired;
        f
    }
}

/// The scopes a query for `scope` must return, as requirement 17 and property 39 list them.
fn scopes_for(scope: &str) -> Vec<&str> {
    match scope {
        "org" => vec!["org"],
        "repo" => vec!["repo", "org"],
        s => vec![s, "repo", "org"],
    }
}

fn secs(t: &str) -> i64 {
    unix_millis(t).unwrap_or_else(|| panic!("bad time {t}"))
}

fn expired(e: &EntryState) -> bool {
    e.fields
        .valid_to
        .as_deref()
        .is_some_and(|t| now() > secs(t))
}

/// Why an entry fails `f`, or `None` when it passes: each filter of the table in RETRIEVAL.md.
fn violation(e: &EntryState, f: &Filters) -> Option<&'static str> {
    let x = &e.fields;
    let created = secs(&e.created_at);
    let updated = secs(&e.updated_at);
    if !f.sections.is_empty() && !f.sections.contains(&x.section) {
        return Some("section");
    }
    if !f.kinds.is_empty() && !f.kinds.contains(&x.kind) {
        return Some("kind");
    }
    if !f.statuses.contains(&e.status) {
        return Some("status");
    }
    if let Some(s) = &f.scope
        && !scopes_for(s).contains(&x.scope.as_str())
    {
        return Some("scope");
    }
    if f.subject.as_ref().is_some_and(|s| *s != x.subject) {
        return Some("subject");
    }
    if !f.tags.iter().all(|t| x.tags.contains(t)) {
        return Some("tags");
    }
    if x.confidence < f.min_confidence - 1e-9 || x.confidence > f.max_confidence + 1e-9 {
        return Some("confidence");
    }
    if f.created_after.is_some_and(|t| created < t) || f.created_before.is_some_and(|t| created > t)
    {
        return Some("created");
    }
    if f.updated_after.is_some_and(|t| updated < t) || f.updated_before.is_some_and(|t| updated > t)
    {
        return Some("updated");
    }
    if !f.include_expired && expired(e) {
        return Some("expired");
    }
    None
}

fn has_word(e: &EntryState, word: &str) -> bool {
    e.fields.summary.split([' ', ':']).any(|w| w == word)
}

fn ids(hits: &[Hit]) -> Vec<String> {
    hits.iter().map(|h| h.entry.id.clone()).collect()
}

/// The composite score as RETRIEVAL.md defines it, from the entry alone.
fn documented_composite(e: &EntryState, scope: Option<&str>) -> f64 {
    let x = &e.fields;
    let quality = x
        .evidence
        .iter()
        .map(|v| match v.kind {
            EvidenceType::Code | EvidenceType::Artifact => 1.0,
            EvidenceType::Ticket | EvidenceType::Doc => 0.8,
            EvidenceType::Log | EvidenceType::Screenshot => 0.6,
            EvidenceType::Assumption => 0.4,
        })
        .fold(0.0_f64, f64::max);
    #[expect(clippy::cast_precision_loss, reason = "ages of a few months")]
    let age_days = (now() - secs(&e.updated_at)).max(0) as f64 / DAY as f64;
    let recency = 0.5_f64.powf(age_days / 30.0);
    let scope_match = match scope {
        None => 1.0,
        Some(s) if s == x.scope => 1.0,
        Some(s) if scopes_for(s).contains(&x.scope.as_str()) => 0.5,
        Some(_) => 0.0,
    };
    let near_expiry = x.valid_to.as_deref().is_some_and(|t| {
        let t = secs(t);
        t >= now() && t - now() <= 7 * DAY
    });
    let expired = x.valid_to.as_deref().is_some_and(|t| secs(t) < now());
    // 0.4 per demoting rule: near expiry, expired (shown because the query asked for it),
    // stale evidence, not the current entry (a status other than active, shown because the
    // query asked for it).
    let demotion = [
        near_expiry,
        expired,
        e.evidence_stale,
        e.status != projections::Status::Active,
    ]
    .iter()
    .map(|d| if *d { 0.4 } else { 0.0 })
    .sum::<f64>();
    x.confidence * 0.5 + quality * 0.3 + recency * 0.1 + scope_match * 0.1 - demotion
}

/// The decay score as the documentation states it: halving every 30 days since the later of
/// `created_at` and `updated_at`, 1 for a pinned entry.
fn documented_decay(e: &EntryState) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "ages of a few months")]
    let days = (now() - secs(&e.created_at).max(secs(&e.updated_at))).max(0) as f64 / DAY as f64;
    if e.pinned {
        1.0
    } else {
        0.5_f64.powf(days / 30.0)
    }
}

fn quality_of(e: &EntryState) -> f64 {
    e.fields
        .evidence
        .iter()
        .map(|v| v.kind.quality())
        .fold(0.0_f64, f64::max)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Property 6 (query filter correctness): every entry a query returns satisfies every filter
    /// asked for and every smart default not overridden, and every entry that satisfies them all
    /// is returned (the limit, 50, is above the corpus size); with text, exactly the entries
    /// that also hold a query word.
    #[test]
    fn property_6_filters_return_exactly_the_matching_entries(
        specs in corpus(),
        fs in prop::collection::vec(filter_spec(), 12),
        word in prop::option::of(prop::sample::select(&WORDS[..])),
    ) {
        let c = Corpus::of(&specs);
        let all = c.all();
        prop_assert_eq!(all.len(), specs.len());
        for spec in fs {
            let filters = spec.filters();
            let req = request(word.map(str::to_owned), filters.clone(), Order::Score);
            let got = ids(&c.search(&req));
            for h in &got {
                let e = all.iter().find(|e| &e.id == h).unwrap_or_else(|| panic!("{h}"));
                prop_assert_eq!(violation(e, &filters), None, "returned {:?} for {:?}", e, spec);
            }
            let want: BTreeSet<&String> = all
                .iter()
                .filter(|e| violation(e, &filters).is_none())
                .filter(|e| word.is_none_or(|w| has_word(e, w)))
                .map(|e| &e.id)
                .collect();
            let got_set: BTreeSet<&String> = got.iter().collect();
            prop_assert_eq!(got.len(), got_set.len(), "an entry returned twice");
            prop_assert_eq!(got_set, want, "filters {:?}, word {:?}", spec, word);
        }
    }

    /// Property 36 (state entry expiry exclusion): a query with `section = state` and the smart
    /// defaults returns no entry whose `valid_to` is past, and every unexpired active state entry
    /// of enough confidence.
    #[test]
    fn property_36_expired_state_entries_are_excluded(specs in corpus()) {
        let specs: Vec<Spec> = specs
            .into_iter()
            .map(|mut s| {
                s.section = Section::State;
                s
            })
            .collect();
        let c = Corpus::of(&specs);
        let mut filters = Filters::defaults(MIN_CONFIDENCE);
        filters.sections = vec![Section::State];
        let hits = c.search(&request(None, filters, Order::Score));
        for h in &hits {
            if let Some(t) = h.entry.fields.valid_to.as_deref() {
                prop_assert!(secs(t) >= now(), "expired entry returned: valid_to {}", t);
            }
        }
        let want = c
            .all()
            .iter()
            .filter(|e| e.status == Status::Active && e.fields.confidence >= MIN_CONFIDENCE)
            .filter(|e| !expired(e))
            .count();
        prop_assert_eq!(hits.len(), want);
    }

    /// Property 39 (scope hierarchy inclusion): a query for `service:*`, `environment:*` or
    /// `customer` returns the entries of that scope, `repo` and `org`; for `repo`, `repo` and
    /// `org`; for `org`, `org`; without a scope, every scope.
    #[test]
    fn property_39_scope_query_includes_parent_scopes(
        specs in corpus(),
        scope in prop::option::of(prop::sample::select(&SCOPES[..])),
    ) {
        let c = Corpus::of(&specs);
        let mut filters = unfiltered();
        filters.scope = scope.map(str::to_owned);
        let got: Vec<String> = c
            .search(&request(None, filters, Order::Score))
            .into_iter()
            .map(|h| h.entry.fields.scope)
            .collect();
        let mut want: Vec<String> = specs
            .iter()
            .filter(|s| scope.is_none_or(|q| scopes_for(q).contains(&s.scope)))
            .map(|s| s.scope.to_owned())
            .collect();
        let mut got_sorted = got.clone();
        got_sorted.sort();
        want.sort();
        prop_assert_eq!(got_sorted, want);
    }

    /// Property 40 (query result sorting): without text, results are in descending order of the
    /// composite score `confidence*0.5 + evidence_quality*0.3 + recency*0.1 + scope_match*0.1`
    /// (minus 0.4 per demotion), ties broken by confidence, then `updated_at` (newer first), then
    /// id; with text, by the reported score with the same tie-breaks. The same query twice gives
    /// the same order, and so does the same corpus written in another order.
    #[test]
    fn property_40_results_sorted_by_score_deterministically(
        specs in corpus(),
        scope in prop::option::of(prop::sample::select(&SCOPES[..])),
        word in prop::option::of(prop::sample::select(&WORDS[..])),
        seed in any::<u64>(),
    ) {
        let mut events: Vec<Event> = specs
            .iter()
            .enumerate()
            .flat_map(|(n, s)| events_of(s, n, vec![]))
            .collect();
        let c = Corpus::write(&events);
        let mut filters = unfiltered();
        filters.scope = scope.map(str::to_owned);
        let req = request(word.map(str::to_owned), filters, Order::Score);
        let hits = c.search(&req);
        for h in &hits {
            let want = documented_composite(&h.entry, scope);
            prop_assert!(
                (h.components.composite - want).abs() < 1e-9,
                "composite {} != documented {} for {:?}", h.components.composite, want, h.entry
            );
            if word.is_none() {
                prop_assert!((h.components.score - want).abs() < 1e-9);
            } else {
                // With text: 0.7 x relevance + 0.3 x composite, relevance = bm25 x (0.8 + 0.2 x
                // decay) over the best such product among the matches, decay halving every 30
                // days since the later of created_at and updated_at (1 when pinned).
                let decay = documented_decay(&h.entry);
                let bm25 = h.components.bm25.unwrap_or(-1.0);
                let best = hits
                    .iter()
                    .map(|h| h.components.bm25.unwrap_or(0.0) * (0.8 + 0.2 * documented_decay(&h.entry)))
                    .fold(0.0, f64::max);
                let relevance = bm25 * (0.8 + 0.2 * decay) / best;
                prop_assert!((h.components.decay - decay).abs() < 1e-9, "decay {} != {}", h.components.decay, decay);
                prop_assert!((h.components.relevance.unwrap_or(-1.0) - relevance).abs() < 1e-9);
                let documented = 0.7 * relevance + 0.3 * want;
                prop_assert!((h.components.score - documented).abs() < 1e-9);
            }
        }
        for pair in hits.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let key = |h: &Hit| (h.components.score, h.entry.fields.confidence, secs(&h.entry.updated_at));
            let (ka, kb) = (key(a), key(b));
            let ordered = ka.0 > kb.0
                || (ka.0 == kb.0
                    && (ka.1 > kb.1
                        || (ka.1 == kb.1
                            && (ka.2 > kb.2 || (ka.2 == kb.2 && a.entry.id < b.entry.id)))));
            prop_assert!(ordered, "{:?} before {:?}", ka, kb);
        }
        let order = ids(&hits);
        prop_assert_eq!(&ids(&c.search(&req)), &order, "same query, another order");

        // The same events written in another order: the same store, the same answer.
        let mut x = seed | 1;
        for i in (1..events.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let j = usize::try_from(x % (i as u64 + 1)).unwrap_or(0);
            events.swap(i, j);
        }
        // A deprecate must follow its create in the log.
        events.sort_by_key(|e| !matches!(e.data, EventData::Create { .. }));
        let permuted = Corpus::write(&events);
        prop_assert_eq!(&ids(&permuted.search(&req)), &order, "another write order");
    }

    /// The answer to a query with limit `k` is the first `k` entries of its answer with the
    /// largest limit, for texts of one to three words (candidates merged term by term) and
    /// scope filters confirmed on the entries: only the head of the ranking is sorted, and
    /// that must never change what is returned.
    #[test]
    fn a_smaller_limit_returns_a_prefix_of_the_answer(
        specs in prop::collection::vec(spec(), 20..60),
        scope in prop::option::of(prop::sample::select(&SCOPES[..])),
        words in prop::collection::vec(prop::sample::select(&WORDS[..]), 0..4),
        k in 1usize..6,
    ) {
        let c = Corpus::of(&specs);
        let mut filters = unfiltered();
        filters.scope = scope.map(str::to_owned);
        let text = (!words.is_empty()).then(|| words.join(" "));
        let full = ids(&c.search(&request(text.clone(), filters.clone(), Order::Score)));
        let mut req = request(text, filters, Order::Score);
        req.limit = k;
        let head = ids(&c.search(&req));
        prop_assert_eq!(&head[..], &full[..k.min(full.len())]);
    }

    /// A store that a rebuild wrote and later writes changed (postings in blocks, masked where
    /// the entry changed, and single postings) answers every query as a store rebuilt from the
    /// same log: same entries, same order, same scores. Either store may hold its common terms'
    /// postings by positions or inline (`small` thresholds make every term in an eighth of the
    /// entries common), which changes no answer either; nor does a walk of those positions cut
    /// into ranges walked on several threads.
    #[test]
    fn a_caught_up_store_answers_as_a_rebuilt_one(
        specs in prop::collection::vec(spec(), 1..24),
        words in prop::collection::vec(prop::sample::select(&WORDS[..]), 0..3),
        defaults in any::<bool>(),
        small in any::<(bool, bool)>(),
    ) {
        let mut events: Vec<Event> = specs
            .iter()
            .enumerate()
            .flat_map(|(n, s)| events_of(s, n, vec![]))
            .collect();
        // Creates first: the rebuild writes them all, the deprecates come one by one after.
        events.sort_by_key(|e| !matches!(e.data, EventData::Create { .. }));
        let creates = events
            .iter()
            .filter(|e| matches!(e.data, EventData::Create { .. }))
            .count();
        let thresholds = |small: bool| if small {
            memlog::store::tuning::shrink_for_tests();
        } else {
            memlog::store::tuning::restore_defaults();
        };
        thresholds(small.0);
        let grown = Corpus::grown(&events[..creates], &events[creates..]);
        thresholds(small.1);
        let rebuilt = Corpus::write(&events);
        memlog::store::tuning::restore_defaults();
        let filters = if defaults { Filters::defaults(MIN_CONFIDENCE) } else { unfiltered() };
        let text = (!words.is_empty()).then(|| words.join(" "));
        let req = request(text, filters, Order::Score);
        let (a, b) = (grown.search(&req), rebuilt.search(&req));
        // The walk over common terms cut into ranges for the cores (from two postings on with
        // small thresholds) finds what one walk finds.
        memlog::store::tuning::shrink_for_tests();
        let split = rebuilt.search(&req);
        memlog::store::tuning::restore_defaults();
        prop_assert_eq!(ids(&a), ids(&b));
        prop_assert_eq!(ids(&b), ids(&split));
        for ((x, y), z) in a.iter().zip(&b).zip(&split) {
            prop_assert!((x.components.score - y.components.score).abs() < 1e-12);
            prop_assert_eq!(y.components.score.to_bits(), z.components.score.to_bits());
            prop_assert_eq!(&x.matched_terms, &y.matched_terms);
            prop_assert_eq!(&y.matched_terms, &z.matched_terms);
        }
    }

    /// Properties 20, 21 and 24 (AgentTask memory context): `context` chooses at most 10
    /// entries, all active, unexpired and of at least the policy's confidence, in descending
    /// order of confidence, code/artifact evidence before weaker evidence at equal confidence;
    /// without a goal they are the most confident of all entries passing the filters, with one
    /// they all hold a word of it.
    #[test]
    fn properties_20_24_context_is_the_most_confident_active_entries(
        specs in prop::collection::vec(spec(), 1..20),
        scope in prop::option::of(prop::sample::select(&SCOPES[..])),
        subject in prop::option::of(prop::sample::select(&SUBJECTS[..])),
        goal in prop::option::of(prop::sample::select(&WORDS[..])),
    ) {
        let c = Corpus::of(&specs);
        let mut filters = Filters::defaults(MIN_CONFIDENCE);
        filters.scope = scope.map(str::to_owned);
        filters.subject = subject.map(str::to_owned);
        let mut req = request(goal.map(str::to_owned), filters.clone(), Order::Confidence);
        req.limit = MAX_CONTEXT;
        req.min_relevance = MIN_RELEVANCE;
        let hits = c.search(&req);
        prop_assert!(hits.len() <= 10);
        for h in &hits {
            prop_assert_eq!(h.entry.status, Status::Active);
            prop_assert!(!expired(&h.entry), "expired entry in context: {:?}", h.entry);
            prop_assert!(h.entry.fields.confidence >= MIN_CONFIDENCE);
        }
        for pair in hits.windows(2) {
            let (a, b) = (&pair[0].entry, &pair[1].entry);
            prop_assert!(
                a.fields.confidence > b.fields.confidence
                    || (a.fields.confidence == b.fields.confidence
                        && quality_of(a) >= quality_of(b)),
                "{} ({}, {}) before {} ({}, {})",
                a.id, a.fields.confidence, quality_of(a), b.id, b.fields.confidence, quality_of(b)
            );
        }
        if let Some(w) = goal {
            // With a goal, matches hold one of its words (relevance decides among them).
            prop_assert!(hits.iter().all(|h| has_word(&h.entry, w)));
            return Ok(());
        }
        // Without a goal every entry passing the filters matches: the chosen are the best of
        // them by (confidence, evidence).
        let mut matches: Vec<(f64, f64)> = c
            .all()
            .iter()
            .filter(|e| violation(e, &filters).is_none())
            .map(|e| (e.fields.confidence, quality_of(e)))
            .collect();
        matches.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.total_cmp(&a.1)));
        matches.truncate(MAX_CONTEXT);
        let got: Vec<(f64, f64)> = hits
            .iter()
            .map(|h| (h.entry.fields.confidence, quality_of(&h.entry)))
            .collect();
        prop_assert_eq!(got, matches);
    }

    /// Property 4 (related entries traversal): with `include_related`, a query returns the
    /// entries it matches plus every entry they name in `related_entries`, whatever its status,
    /// each once.
    #[test]
    fn property_4_include_related_adds_every_named_entry(
        specs in corpus(),
        links in prop::collection::vec(prop::collection::vec(any::<prop::sample::Index>(), 0..3), 16),
        word in prop::sample::select(&WORDS[..]),
    ) {
        // Each entry may name entries written before it.
        let mut events = Vec::new();
        let mut created: Vec<String> = Vec::new();
        for (n, s) in specs.iter().enumerate() {
            let related: Vec<String> = if created.is_empty() {
                vec![]
            } else {
                let mut r: Vec<String> =
                    links[n].iter().map(|i| created[i.index(created.len())].clone()).collect();
                r.sort();
                r.dedup();
                r
            };
            let evs = events_of(s, n, related);
            created.push(evs[0].entry.clone());
            events.extend(evs);
        }
        let c = Corpus::write(&events);
        let all = c.all();
        let mut req = request(Some(word.to_owned()), Filters::defaults(MIN_CONFIDENCE), Order::Score);
        let plain = ids(&c.search(&req));
        req.include_related = true;
        let hits = c.search(&req);
        let got = ids(&hits);
        prop_assert_eq!(&got[..plain.len()], &plain[..], "results first, in their order");
        let got_set: BTreeSet<&String> = got.iter().collect();
        prop_assert_eq!(got_set.len(), got.len(), "an entry returned twice");
        // Closure: every entry named by a returned entry is returned.
        for h in &hits {
            for r in &h.entry.fields.related_entries {
                prop_assert!(got_set.contains(r), "{} names {} which is missing", h.entry.id, r);
            }
        }
        // Nothing else: each added entry is named by an entry before it.
        for (i, h) in hits.iter().enumerate().skip(plain.len()) {
            let named = hits[..i].iter().any(|p| p.entry.fields.related_entries.contains(&h.entry.id));
            prop_assert!(named, "{} added but named by no earlier result", h.entry.id);
            prop_assert!(h.related_to.is_some());
        }
        prop_assert!(got.iter().all(|g| all.iter().any(|e| &e.id == g)));
    }
}

/// Property 36 below the second: a state entry whose `valid_to` passed 123 ms before `--now` is
/// expired and must not be returned by `query`.
#[test]
fn property_36_expiry_is_exact_below_the_second() {
    let env = crate::common::Env::with_project();
    let entry = serde_json::json!({
        "section": "state", "kind": "other", "subject": "release.freeze", "scope": "repo",
        "summary": "Deploy freeze", "content": "Deploy freeze until the release.",
        "tags": [], "confidence": 0.9,
        "evidence": [{"type": "doc", "uri": "docs/release.md", "note": "why"}],
        "valid_from": "2026-11-01T00:00:00Z",
        // NOW is 2026-11-22T10:31:12.123Z.
        "valid_to": "2026-11-22T10:31:12.000Z",
    });
    let file = env.dir.path().join("updates.jsonl");
    let line = serde_json::json!({"operation": "create", "entry": entry});
    std::fs::write(&file, format!("{line}\n")).unwrap_or_else(|e| panic!("{e}"));
    env.run(&["--json", "apply", "demo", &file.display().to_string()])
        .ok();
    let with_expired = env
        .run(&[
            "--json",
            "query",
            "freeze",
            "demo",
            "--section",
            "state",
            "--include-expired",
        ])
        .ok();
    assert_eq!(with_expired.json().as_array().map(Vec::len), Some(1));
    let r = env
        .run(&["--json", "query", "freeze", "demo", "--section", "state"])
        .ok();
    assert_eq!(r.json(), serde_json::json!([]), "expired entry returned");
}
