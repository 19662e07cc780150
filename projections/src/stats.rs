//! Statistics maintained by delta: each entry contributes a fixed amount, added when its state
//! appears and subtracted when it changes. All counters are integers (confidence in millionths),
//! so any order of additions and subtractions gives the same bytes.
//!
//! Every counter is kept twice: over all entries ([`Stats::totals`]) and per UTC day of the
//! entries' `created_at` ([`Stats::by_created_day`]), so that statistics of a date range are a
//! sum over the days of the range, never a scan of entries. The most recent operations
//! ([`RecentOperations`]) are a bounded top-k of events, also a function of the set of events.

use crate::event::Event;
use crate::model::{EntryState, EventType, Lifecycle, Status, confidence_micros};
use crate::time::day_of;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Below this confidence an entry counts as low-confidence (requirement 3.10).
pub const LOW_CONFIDENCE_MICROS: i64 = 500_000;

/// The five confidence buckets of the requirements.
pub const CONFIDENCE_BUCKETS: [&str; 5] = ["0.0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1.0"];

/// How many operations [`RecentOperations`] keeps (requirement 23.8: the last 20).
pub const RECENT_OPERATIONS: usize = 20;

/// Counters over a set of entries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    pub total_entries: i64,
    /// Entries in the active index (not archived, expired or purged).
    pub hot_entries: i64,
    pub entries_by_section: BTreeMap<String, i64>,
    pub entries_by_status: BTreeMap<String, i64>,
    pub entries_by_kind: BTreeMap<String, i64>,
    pub entries_by_scope: BTreeMap<String, i64>,
    /// Entries per lifecycle state (`EntryState::lifecycle`).
    pub entries_by_lifecycle: BTreeMap<String, i64>,
    /// Bytes of summary and content per lifecycle state (purged entries count as `purged`).
    pub content_bytes_by_lifecycle: BTreeMap<String, i64>,
    /// Entries per `kind/lifecycle` pair, for archival rates per memory type.
    pub entries_by_kind_lifecycle: BTreeMap<String, i64>,
    pub confidence_micros_sum: i64,
    pub confidence_distribution: BTreeMap<String, i64>,
    pub low_confidence_count: i64,
    /// Evidence objects by type, over all entries.
    pub evidence_type_distribution: BTreeMap<String, i64>,
    pub stale_evidence_count: i64,
    pub entries_by_agent: BTreeMap<String, i64>,
    pub entries_created_per_day: BTreeMap<String, i64>,
    pub entries_superseded_per_day: BTreeMap<String, i64>,
    /// Active, hot entries that have a `valid_to`, per UTC day of it (for expiry counts).
    pub valid_to_per_day: BTreeMap<String, i64>,
    pub pinned_count: i64,
    pub conflict_count: i64,
    pub purged_count: i64,
    /// Per kind: entries whose life has ended (superseded, deprecated, archived, expired or
    /// purged; `EntryState::is_ended`).
    pub ended_by_kind: BTreeMap<String, i64>,
    /// Per kind: the lifespans of those entries summed, in milliseconds (`created_at` to
    /// `ended_at`, the event that ended them).
    pub lifespan_ms_by_kind: BTreeMap<String, i64>,
}

fn bump(map: &mut BTreeMap<String, i64>, key: &str, delta: i64) {
    let slot = map.entry(key.to_owned()).or_insert(0);
    *slot += delta;
    if *slot == 0 {
        // A counter that returns to zero must look as if it never existed.
        map.remove(key);
    }
}

/// The lifecycle label an entry's storage counts under.
fn storage_state(s: &EntryState) -> &'static str {
    if s.purged {
        "purged"
    } else {
        s.lifecycle.as_str()
    }
}

impl Counters {
    /// Adds (`sign = 1`) or removes (`sign = -1`) one entry's contribution.
    pub fn apply(&mut self, s: &EntryState, sign: i64) {
        let micros = confidence_micros(s.fields.confidence);
        self.total_entries += sign;
        if !s.is_cold() {
            self.hot_entries += sign;
        }
        bump(
            &mut self.entries_by_section,
            s.fields.section.as_str(),
            sign,
        );
        bump(&mut self.entries_by_status, s.status.as_str(), sign);
        bump(&mut self.entries_by_kind, s.fields.kind.as_str(), sign);
        bump(&mut self.entries_by_scope, &s.fields.scope, sign);
        bump(&mut self.entries_by_lifecycle, s.lifecycle.as_str(), sign);
        let bytes = i64::try_from(s.fields.summary.len() + s.fields.content.len()).unwrap_or(0);
        let slot = self
            .content_bytes_by_lifecycle
            .entry(storage_state(s).to_owned())
            .or_insert(0);
        *slot += sign * bytes;
        if *slot == 0 {
            self.content_bytes_by_lifecycle.remove(storage_state(s));
        }
        bump(
            &mut self.entries_by_kind_lifecycle,
            &format!("{}/{}", s.fields.kind.as_str(), s.lifecycle.as_str()),
            sign,
        );
        self.confidence_micros_sum += sign * micros;
        let bucket = usize::try_from((micros / 200_000).clamp(0, 4)).unwrap_or(4);
        bump(
            &mut self.confidence_distribution,
            CONFIDENCE_BUCKETS[bucket],
            sign,
        );
        if micros < LOW_CONFIDENCE_MICROS {
            self.low_confidence_count += sign;
        }
        for e in &s.fields.evidence {
            bump(&mut self.evidence_type_distribution, e.kind.as_str(), sign);
        }
        if s.evidence_stale {
            self.stale_evidence_count += sign;
        }
        bump(&mut self.entries_by_agent, &s.created_by, sign);
        bump(
            &mut self.entries_created_per_day,
            day_of(&s.created_at),
            sign,
        );
        if s.status == Status::Superseded
            && let Some(at) = &s.superseded_at
        {
            bump(&mut self.entries_superseded_per_day, day_of(at), sign);
        }
        if let Some(valid_to) = expiry_of(s) {
            bump(&mut self.valid_to_per_day, day_of(valid_to), sign);
        }
        if s.pinned {
            self.pinned_count += sign;
        }
        if s.in_conflict() {
            self.conflict_count += sign;
        }
        if s.purged {
            self.purged_count += sign;
        }
        if s.is_ended() {
            let kind = s.fields.kind.as_str();
            bump(&mut self.ended_by_kind, kind, sign);
            bump(
                &mut self.lifespan_ms_by_kind,
                kind,
                sign * s.lifespan_ms().unwrap_or(0),
            );
        }
    }

    /// Adds every counter of `other` (counters of a disjoint set of entries) to `self`.
    pub fn merge(&mut self, other: &Self) {
        self.total_entries += other.total_entries;
        self.hot_entries += other.hot_entries;
        self.confidence_micros_sum += other.confidence_micros_sum;
        self.low_confidence_count += other.low_confidence_count;
        self.stale_evidence_count += other.stale_evidence_count;
        self.pinned_count += other.pinned_count;
        self.conflict_count += other.conflict_count;
        self.purged_count += other.purged_count;
        for (mine, theirs) in [
            (&mut self.entries_by_section, &other.entries_by_section),
            (&mut self.entries_by_status, &other.entries_by_status),
            (&mut self.entries_by_kind, &other.entries_by_kind),
            (&mut self.entries_by_scope, &other.entries_by_scope),
            (&mut self.entries_by_lifecycle, &other.entries_by_lifecycle),
            (
                &mut self.content_bytes_by_lifecycle,
                &other.content_bytes_by_lifecycle,
            ),
            (
                &mut self.entries_by_kind_lifecycle,
                &other.entries_by_kind_lifecycle,
            ),
            (
                &mut self.confidence_distribution,
                &other.confidence_distribution,
            ),
            (
                &mut self.evidence_type_distribution,
                &other.evidence_type_distribution,
            ),
            (&mut self.entries_by_agent, &other.entries_by_agent),
            (
                &mut self.entries_created_per_day,
                &other.entries_created_per_day,
            ),
            (
                &mut self.entries_superseded_per_day,
                &other.entries_superseded_per_day,
            ),
            (&mut self.valid_to_per_day, &other.valid_to_per_day),
            (&mut self.ended_by_kind, &other.ended_by_kind),
            (&mut self.lifespan_ms_by_kind, &other.lifespan_ms_by_kind),
        ] {
            for (key, delta) in theirs {
                bump(mine, key, *delta);
            }
        }
    }

    /// Mean confidence over all entries, or 0 for none.
    pub fn avg_confidence(&self) -> f64 {
        if self.total_entries == 0 {
            return 0.0;
        }
        #[expect(clippy::cast_precision_loss, reason = "counts far below 2^52")]
        let avg = self.confidence_micros_sum as f64 / self.total_entries as f64 / 1_000_000.0;
        (avg * 10_000.0).round() / 10_000.0
    }

    /// True when the counters hold no entry at all.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The `valid_to` an entry can still expire at: set, on an active hot entry.
pub fn expiry_of(s: &EntryState) -> Option<&str> {
    let live = s.status == Status::Active
        && !s.is_cold()
        && !matches!(s.lifecycle, Lifecycle::Archived | Lifecycle::Expired);
    s.fields.valid_to.as_deref().filter(|_| live)
}

/// Counters over all entries of a project, and the same counters per day of creation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stats {
    /// Every entry.
    pub totals: Counters,
    /// The entries created on each UTC day (`YYYY-MM-DD`); days without entries are absent.
    pub by_created_day: BTreeMap<String, Counters>,
}

impl std::ops::Deref for Stats {
    type Target = Counters;

    fn deref(&self) -> &Counters {
        &self.totals
    }
}

impl Stats {
    /// Adds (`sign = 1`) or removes (`sign = -1`) one entry's contribution.
    pub fn apply(&mut self, s: &EntryState, sign: i64) {
        self.totals.apply(s, sign);
        let day = day_of(&s.created_at);
        let bucket = self.by_created_day.entry(day.to_owned()).or_default();
        bucket.apply(s, sign);
        if bucket.is_empty() {
            self.by_created_day.remove(day);
        }
    }

    /// Adds every counter of `other` (statistics of a disjoint set of entries) to `self`.
    pub fn merge(&mut self, other: &Self) {
        self.totals.merge(&other.totals);
        for (day, theirs) in &other.by_created_day {
            let bucket = self.by_created_day.entry(day.clone()).or_default();
            bucket.merge(theirs);
            if bucket.is_empty() {
                self.by_created_day.remove(day);
            }
        }
    }

    /// The counters of the entries created from day `from` to day `to` (`YYYY-MM-DD`, both
    /// included; `None` leaves that side open). Costs one addition per day of the range that
    /// has entries, whatever the number of entries.
    pub fn created_between(&self, from: Option<&str>, to: Option<&str>) -> Counters {
        if from.is_none() && to.is_none() {
            return self.totals.clone();
        }
        let mut out = Counters::default();
        let lower = from.map_or(std::ops::Bound::Unbounded, |d| {
            std::ops::Bound::Included(d.to_owned())
        });
        let upper = to.map_or(std::ops::Bound::Unbounded, |d| {
            std::ops::Bound::Included(d.to_owned())
        });
        if matches!((&lower, &upper), (std::ops::Bound::Included(a), std::ops::Bound::Included(b)) if a > b)
        {
            return out;
        }
        for counters in self.by_created_day.range((lower, upper)).map(|(_, c)| c) {
            out.merge(counters);
        }
        out
    }
}

/// One create, supersede or deprecate event, as the recent-operations table shows it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Operation {
    /// When (event timestamp).
    pub at: String,
    /// The event id (ties in time are ordered by it).
    pub event: String,
    /// `create`, `supersede` or `deprecate`.
    pub operation: String,
    /// The entry the event is about (for a supersede, the entry it replaces).
    pub entry: String,
    /// Who wrote it.
    pub agent: String,
}

impl Operation {
    /// The operation an event records, when it is a create, supersede or deprecate.
    pub fn of(event: &Event) -> Option<Self> {
        let t = event.event_type();
        matches!(
            t,
            EventType::Create | EventType::Supersede | EventType::Deprecate
        )
        .then(|| Self {
            at: event.at.clone(),
            event: event.id.clone(),
            operation: t.as_str().to_owned(),
            entry: event.entry.clone(),
            agent: event.actor.clone(),
        })
    }
}

/// The [`RECENT_OPERATIONS`] latest operations of a set of events, newest first (by time, then
/// event id). Events are never taken out of a log, so the latest k of a growing set are the
/// latest k of the old latest k and the new events: the result is a function of the set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentOperations(pub Vec<Operation>);

impl RecentOperations {
    /// Takes `op` into account (an operation already present changes nothing).
    pub fn note(&mut self, op: Operation) {
        let key = |o: &Operation| std::cmp::Reverse((o.at.clone(), o.event.clone()));
        let k = key(&op);
        match self.0.binary_search_by_key(&k, key) {
            Ok(_) => {}
            Err(pos) if pos < RECENT_OPERATIONS => {
                self.0.insert(pos, op);
                self.0.truncate(RECENT_OPERATIONS);
            }
            Err(_) => {}
        }
    }

    /// Takes `event` into account when it is a create, supersede or deprecate.
    pub fn note_event(&mut self, event: &Event) {
        if let Some(op) = Operation::of(event) {
            self.note(op);
        }
    }

    /// Takes every operation of `other` into account.
    pub fn merge(&mut self, other: &Self) {
        for op in &other.0 {
            self.note(op.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    //! Properties 47 and 48 of the requirements, and the delta laws, over arbitrary entry
    //! states: counters kept by delta (with lifecycle transitions, status changes and merges)
    //! equal counters computed from scratch, and a date range sums exactly its days.

    use super::*;
    use crate::model::{EntryFields, Evidence, EvidenceType, Kind, Section};
    use proptest::prelude::*;

    fn state(
        n: usize,
        day: u8,
        conf: u32,
        section: usize,
        lifecycle: usize,
        status: usize,
    ) -> EntryState {
        let created_at = format!("2026-11-{:02}T10:00:00.000Z", 1 + day % 28);
        EntryState {
            id: format!("m-{n:04}"),
            fields: EntryFields {
                section: Section::ALL[section % Section::ALL.len()],
                kind: Kind::ALL[n % Kind::ALL.len()],
                subject: format!("s{}", n % 3),
                scope: "repo".into(),
                summary: format!("summary {n}"),
                content: "c".repeat(n % 7),
                tags: vec![],
                confidence: f64::from(conf % 1001) / 1000.0,
                evidence: vec![Evidence {
                    kind: EvidenceType::ALL[n % EvidenceType::ALL.len()],
                    uri: "src/lib.rs".into(),
                    note: String::new(),
                }],
                related_entries: vec![],
                valid_from: None,
                valid_to: n
                    .is_multiple_of(2)
                    .then(|| format!("2026-12-{:02}T00:00:00.000Z", 1 + n % 28)),
                review_interval: None,
            },
            status: Status::ALL[status % Status::ALL.len()],
            superseded_by: None,
            superseded_at: (status % Status::ALL.len() == 1).then(|| created_at.clone()),
            created_by: format!("agent-{}", n % 4),
            created_at: created_at.clone(),
            updated_at: created_at,
            updated_by: "agent-0".into(),
            lifecycle: Lifecycle::ALL[lifecycle % Lifecycle::ALL.len()],
            pinned: n.is_multiple_of(5),
            pinned_by: None,
            pinned_at: None,
            status_reason: None,
            evidence_stale: n.is_multiple_of(6),
            purged: false,
            version: 1,
            heads: vec![],
            agreed: false,
            ended_at: None,
        }
        .with_end()
    }

    trait WithEnd {
        fn with_end(self) -> Self;
    }

    impl WithEnd for EntryState {
        /// An ended entry ended some hours after its creation; a live one has no end.
        fn with_end(mut self) -> Self {
            self.ended_at = self.is_ended().then(|| {
                let hours = self.id.len() % 24 + self.fields.content.len();
                format!("{}T{:02}:30:00.000Z", day_of(&self.created_at), hours % 24)
            });
            self
        }
    }

    fn states() -> impl Strategy<Value = Vec<EntryState>> {
        prop::collection::vec(
            (0u8..28, 0u32..=1000, 0usize..4, 0usize..4, 0usize..4),
            0..40,
        )
        .prop_map(|v| {
            v.into_iter()
                .enumerate()
                .map(|(n, (d, c, s, l, st))| state(n, d, c, s, l, st))
                .collect()
        })
    }

    fn scratch(entries: &[EntryState]) -> Stats {
        let mut s = Stats::default();
        for e in entries {
            s.apply(e, 1);
        }
        s
    }

    fn day(d: u8) -> String {
        format!("2026-11-{:02}", 1 + d % 28)
    }

    proptest! {
        /// Property 47: total equals the number of entries, sections sum to it, the average
        /// confidence is the mean.
        #[test]
        fn totals_sections_and_mean(entries in states()) {
            let s = scratch(&entries);
            prop_assert_eq!(s.total_entries, i64::try_from(entries.len()).unwrap_or(-1));
            prop_assert_eq!(s.entries_by_section.values().sum::<i64>(), s.total_entries);
            prop_assert_eq!(s.entries_by_lifecycle.values().sum::<i64>(), s.total_entries);
            prop_assert_eq!(s.confidence_distribution.values().sum::<i64>(), s.total_entries);
            // Lifespans: one per ended entry, summed per kind.
            let ended: Vec<&EntryState> = entries.iter().filter(|e| e.is_ended()).collect();
            prop_assert_eq!(s.ended_by_kind.values().sum::<i64>(), i64::try_from(ended.len()).unwrap_or(-1));
            prop_assert_eq!(
                s.lifespan_ms_by_kind.values().sum::<i64>(),
                ended.iter().map(|e| e.lifespan_ms().unwrap_or(-1)).sum::<i64>()
            );
            if !entries.is_empty() {
                #[expect(clippy::cast_precision_loss, reason = "small counts")]
                let mean = entries.iter().map(|e| confidence_micros(e.fields.confidence)).sum::<i64>() as f64
                    / entries.len() as f64 / 1e6;
                prop_assert!((s.avg_confidence() - mean).abs() < 1e-4, "{} vs {}", s.avg_confidence(), mean);
            }
        }

        /// Property 48: the counters of a date range are those of exactly the entries created in
        /// it; entries outside are excluded.
        #[test]
        fn a_range_counts_exactly_its_entries(entries in states(), a in 0u8..28, b in 0u8..28) {
            let (from, to) = (day(a.min(b)), day(a.max(b)));
            let s = scratch(&entries);
            let inside: Vec<EntryState> = entries
                .iter()
                .filter(|e| { let d = day_of(&e.created_at); d >= from.as_str() && d <= to.as_str() })
                .cloned()
                .collect();
            prop_assert_eq!(s.created_between(Some(&from), Some(&to)), scratch(&inside).totals);
            prop_assert_eq!(s.created_between(None, None), s.totals.clone());
            // Two adjacent ranges add up to their union.
            let mut left = s.created_between(None, Some(&from));
            let right = s.created_between(Some(&day(a.min(b) + 1)), None);
            if a.min(b) + 1 < 28 {
                left.merge(&right);
                prop_assert_eq!(left, s.totals.clone());
            }
        }

        /// Counters kept by delta through lifecycle transitions and status changes equal the
        /// counters of the final states; removing every entry leaves nothing behind.
        #[test]
        fn delta_through_transitions_equals_scratch(entries in states(), moves in prop::collection::vec((0usize..40, 0usize..4, 0usize..4), 0..30)) {
            let mut current = entries.clone();
            let mut s = scratch(&entries);
            for (i, lifecycle, status) in moves {
                let Some(e) = current.get_mut(i) else { continue };
                s.apply(e, -1);
                e.lifecycle = Lifecycle::ALL[lifecycle];
                e.status = Status::ALL[status];
                e.superseded_at = (e.status == Status::Superseded).then(|| "2026-11-29T00:00:00.000Z".to_owned());
                e.ended_at = e.is_ended().then(|| "2026-11-29T00:00:00.000Z".to_owned());
                s.apply(e, 1);
            }
            prop_assert_eq!(&s, &scratch(&current));
            for e in &current {
                s.apply(e, -1);
            }
            prop_assert_eq!(s, Stats::default());
        }

        /// Statistics of disjoint sets merge into the statistics of their union, per day too.
        #[test]
        fn merge_is_the_union(entries in states(), cut in 0usize..40) {
            let cut = cut.min(entries.len());
            let mut left = scratch(&entries[..cut]);
            left.merge(&scratch(&entries[cut..]));
            prop_assert_eq!(left, scratch(&entries));
        }

        /// The latest operations are a function of the set: any order, any duplication.
        #[test]
        fn latest_operations_are_a_function_of_the_set(ops in prop::collection::vec((0u8..28, 0u32..50), 0..60), seed in any::<u64>()) {
            let all: Vec<Operation> = ops
                .iter()
                .map(|(d, n)| Operation {
                    at: format!("{}T10:00:00.000Z", day(*d)),
                    event: format!("{n:064}"),
                    operation: "create".into(),
                    entry: format!("m-{n}"),
                    agent: "a".into(),
                })
                .collect();
            let mut forward = RecentOperations::default();
            for op in &all { forward.note(op.clone()); }
            let mut shuffled = all.clone();
            shuffled.extend(all.iter().take(seed as usize % (all.len() + 1)).cloned());
            let len = shuffled.len();
            for i in 0..len {
                let j = usize::try_from((seed.wrapping_mul(i as u64 + 7)) % len as u64).unwrap_or(0);
                shuffled.swap(i, j);
            }
            let mut other = RecentOperations::default();
            for op in shuffled { other.note(op); }
            prop_assert_eq!(&forward, &other);
            let mut expected: Vec<Operation> = all.clone();
            expected.sort_by(|a, b| (&b.at, &b.event).cmp(&(&a.at, &a.event)));
            expected.dedup_by(|a, b| a.event == b.event && a.at == b.at);
            expected.truncate(RECENT_OPERATIONS);
            prop_assert_eq!(forward.0, expected);
        }
    }
}
