//! Statistics maintained by delta: each entry contributes a fixed amount, added when its state
//! appears and subtracted when it changes. All counters are integers (confidence in millionths),
//! so any order of additions and subtractions gives the same bytes.

use crate::model::{EntryState, Status, confidence_micros};
use crate::time::day_of;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Below this confidence an entry counts as low-confidence (requirement 3.10).
pub const LOW_CONFIDENCE_MICROS: i64 = 500_000;

/// The five confidence buckets of the requirements.
pub const CONFIDENCE_BUCKETS: [&str; 5] = ["0.0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1.0"];

/// Counters over all entries of a project.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    pub total_entries: i64,
    /// Entries in the active index (not archived, expired or purged).
    pub hot_entries: i64,
    pub entries_by_section: BTreeMap<String, i64>,
    pub entries_by_status: BTreeMap<String, i64>,
    pub entries_by_kind: BTreeMap<String, i64>,
    pub entries_by_scope: BTreeMap<String, i64>,
    pub entries_by_lifecycle: BTreeMap<String, i64>,
    pub confidence_micros_sum: i64,
    pub confidence_distribution: BTreeMap<String, i64>,
    pub low_confidence_count: i64,
    /// Evidence objects by type, over all entries.
    pub evidence_type_distribution: BTreeMap<String, i64>,
    pub stale_evidence_count: i64,
    pub entries_by_agent: BTreeMap<String, i64>,
    pub entries_created_per_day: BTreeMap<String, i64>,
    pub entries_superseded_per_day: BTreeMap<String, i64>,
    pub pinned_count: i64,
    pub conflict_count: i64,
    pub purged_count: i64,
}

fn bump(map: &mut BTreeMap<String, i64>, key: &str, delta: i64) {
    let slot = map.entry(key.to_owned()).or_insert(0);
    *slot += delta;
    if *slot == 0 {
        // A counter that returns to zero must look as if it never existed.
        map.remove(key);
    }
}

impl Stats {
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
        if s.pinned {
            self.pinned_count += sign;
        }
        if s.in_conflict() {
            self.conflict_count += sign;
        }
        if s.purged {
            self.purged_count += sign;
        }
    }

    /// Adds every counter of `other` (statistics of a disjoint set of entries) to `self`.
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
}
