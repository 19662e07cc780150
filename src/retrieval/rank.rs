//! The composite score of the requirements, the rules that demote or annotate an entry, and how
//! text relevance combines with both.
//!
//! `composite = confidence*0.5 + evidence_quality*0.3 + recency*0.1 + scope_match*0.1`, minus
//! [`DEMOTION`] for each demoting rule (approaching expiry, stale evidence).
//!
//! With text, `score = RELEVANCE_WEIGHT * relevance + (1 - RELEVANCE_WEIGHT) * composite`, where
//! `relevance` is the entry's BM25F divided by the best BM25F among the entries that pass the
//! filters (so the best text match has relevance 1). Relevance leads because a query is a
//! question: a perfect answer with confidence 0.7 must beat a confident entry that merely shares
//! a word. The composite still decides between matches of similar relevance, and a demotion
//! costs `(1 - RELEVANCE_WEIGHT) * DEMOTION` = 0.12 of score, as much as a third of the way from
//! the best match. Without text the score is the composite alone. Ties are broken by confidence,
//! then updated_at (newer first), then the project (own before global), then id, so the order is
//! total and the same on every run.

use super::features::DocFeatures;
use super::filters::Filters;
use serde::Serialize;

pub const W_CONFIDENCE: f64 = 0.5;
pub const W_EVIDENCE: f64 = 0.3;
pub const W_RECENCY: f64 = 0.1;
pub const W_SCOPE: f64 = 0.1;
/// Subtracted from the composite for each demoting rule. Larger than everything but confidence
/// can add (0.3 * 0.6 + 0.1 + 0.1 = 0.38), so of two entries with equal confidence the demoted
/// one always ranks lower when there is no text.
pub const DEMOTION: f64 = 0.4;
/// Share of text relevance in the score of a text query.
pub const RELEVANCE_WEIGHT: f64 = 0.7;
/// Confidence below which an entry is marked low-confidence (requirement 3.10).
pub const LOW_CONFIDENCE: f64 = 0.5;

/// Milliseconds in a day.
pub const MS_PER_DAY: i64 = 86_400_000;

/// What the ranking knows besides the entry: the time and the policy.
#[derive(Debug, Clone, Copy)]
pub struct RankParams {
    /// Unix milliseconds.
    pub now: i64,
    /// Entries whose `valid_to` is this close are demoted and annotated.
    pub expiry_warning_days: u32,
    /// Recency halves every this many days since `updated_at`.
    pub recency_half_life_days: u32,
}

/// A rule that demoted or annotated an entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Rule {
    /// `valid_to` within the warning window: demoted and annotated.
    ApproachingExpiry { valid_to_in_days: f64 },
    /// An evidence URI was found unreachable: demoted and annotated.
    StaleEvidence,
    /// Confidence below 0.5: annotated.
    LowConfidence,
}

impl Rule {
    /// The annotation name used in JSON output.
    pub fn annotation(&self) -> &'static str {
        match self {
            Self::ApproachingExpiry { .. } => "approaching_expiry",
            Self::StaleEvidence => "stale_evidence",
            Self::LowConfidence => "low_confidence",
        }
    }

    pub fn demotes(&self) -> bool {
        matches!(self, Self::ApproachingExpiry { .. } | Self::StaleEvidence)
    }
}

/// Every component of a score.
#[derive(Debug, Clone, Serialize)]
pub struct Components {
    pub confidence: f64,
    pub evidence_quality: f64,
    pub recency: f64,
    pub scope_match: f64,
    /// The weighted sum of the four, before demotions.
    pub composite_raw: f64,
    /// Total subtracted by demoting rules.
    pub demotion: f64,
    pub composite: f64,
    /// BM25F of the entry for the query's terms (text queries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bm25: Option<f64>,
    /// `bm25` divided by the best among the matches (text queries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relevance: Option<f64>,
    pub score: f64,
}

/// The rules that apply to an entry at `now`.
pub fn rules(f: &DocFeatures, p: &RankParams) -> Vec<Rule> {
    let mut out = Vec::new();
    if let Some(t) = f.valid_to {
        let window = i64::from(p.expiry_warning_days) * MS_PER_DAY;
        if t >= p.now && t - p.now <= window && !Filters::expired(f, p.now) {
            #[expect(clippy::cast_precision_loss, reason = "seconds in a few days")]
            let days = (t - p.now) as f64 / MS_PER_DAY as f64;
            out.push(Rule::ApproachingExpiry {
                valid_to_in_days: (days * 100.0).round() / 100.0,
            });
        }
    }
    if f.evidence_stale {
        out.push(Rule::StaleEvidence);
    }
    if f.confidence() < LOW_CONFIDENCE {
        out.push(Rule::LowConfidence);
    }
    out
}

/// Recency in (0, 1]: 1 when updated now (or later), halving every half-life.
pub fn recency(updated: i64, p: &RankParams) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "ages in seconds fit easily")]
    let age_days = (p.now - updated).max(0) as f64 / MS_PER_DAY as f64;
    let half = f64::from(p.recency_half_life_days.max(1));
    (-(age_days / half) * std::f64::consts::LN_2).exp()
}

/// The composite score and its components (text fields left empty).
pub fn composite(f: &DocFeatures, scope_match: f64, rules: &[Rule], p: &RankParams) -> Components {
    let confidence = f.confidence();
    let evidence_quality = f.evidence_quality();
    let recency = recency(f.updated, p);
    let raw = confidence * W_CONFIDENCE
        + evidence_quality * W_EVIDENCE
        + recency * W_RECENCY
        + scope_match * W_SCOPE;
    #[expect(clippy::cast_precision_loss, reason = "at most two rules")]
    let demotion = rules.iter().filter(|r| r.demotes()).count() as f64 * DEMOTION;
    let composite = raw - demotion;
    Components {
        confidence,
        evidence_quality,
        recency,
        scope_match,
        composite_raw: raw,
        demotion,
        composite,
        bm25: None,
        relevance: None,
        score: composite,
    }
}

/// Adds text relevance to a composite: `bm25 / best` weighted with the composite.
pub fn with_relevance(mut c: Components, bm25: f64, best: f64) -> Components {
    let relevance = if best > 0.0 { bm25 / best } else { 0.0 };
    c.bm25 = Some(bm25);
    c.relevance = Some(relevance);
    c.score = RELEVANCE_WEIGHT * relevance + (1.0 - RELEVANCE_WEIGHT) * c.composite;
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use projections::{Kind, Section, Status};
    use proptest::prelude::*;

    const NOW: i64 = 1_795_000_000_000;

    fn params() -> RankParams {
        RankParams {
            now: NOW,
            expiry_warning_days: 7,
            recency_half_life_days: 30,
        }
    }

    fn features(
        conf: u32,
        quality: u8,
        age: i64,
        valid_to: Option<i64>,
        stale: bool,
    ) -> DocFeatures {
        DocFeatures {
            confidence: conf,
            evidence_quality: quality,
            evidence_stale: stale,
            status: Status::Active,
            section: Section::State,
            kind: Kind::Metric,
            created: NOW - age,
            updated: NOW - age,
            valid_to,
            scope_hash: 0,
            subject_hash: 0,
            tag_bits: 0,
            lens: [1, 1, 1, 1],
        }
    }

    fn score(f: &DocFeatures, scope: f64) -> f64 {
        composite(f, scope, &rules(f, &params()), &params()).score
    }

    proptest! {
        /// Properties 37 and 43: at equal confidence, an entry near expiry or with stale evidence
        /// ranks below one without, whatever its evidence, recency and scope match.
        #[test]
        fn demotions_outrank_everything_but_confidence(
            conf in 500_000u32..=1_000_000,
            qa in prop::sample::select(vec![4u8, 6, 8, 10]),
            qb in prop::sample::select(vec![4u8, 6, 8, 10]),
            age_a in 0i64..400 * MS_PER_DAY,
            age_b in 0i64..400 * MS_PER_DAY,
            scope_a in prop::sample::select(vec![0.5, 1.0]),
            scope_b in prop::sample::select(vec![0.5, 1.0]),
            days_left in 0i64..7 * MS_PER_DAY,
            stale in any::<bool>(),
        ) {
            let demoted = if stale {
                features(conf, qa, age_a, None, true)
            } else {
                features(conf, qa, age_a, Some(NOW + days_left), false)
            };
            let fine = features(conf, qb, age_b, Some(NOW + 30 * MS_PER_DAY), false);
            prop_assert!(score(&demoted, scope_a) < score(&fine, scope_b));
        }

        /// Property 38: code/artifact evidence ranks above assumption at equal confidence and
        /// recency.
        #[test]
        fn evidence_quality_orders(conf in 0u32..=1_000_000, age in 0i64..400 * MS_PER_DAY) {
            let strong = features(conf, 10, age, None, false);
            let weak = features(conf, 4, age, None, false);
            prop_assert!(score(&strong, 1.0) > score(&weak, 1.0));
        }

        /// Property 8: below 0.5 an entry is annotated low-confidence, at or above it is not.
        #[test]
        fn low_confidence_marking(conf in 0u32..=1_000_000) {
            let f = features(conf, 10, 0, None, false);
            let marked = rules(&f, &params()).contains(&Rule::LowConfidence);
            prop_assert_eq!(marked, conf < 500_000);
        }
    }

    #[test]
    fn relevance_leads_with_text() {
        let f = features(600_000, 4, 0, None, false);
        let g = features(1_000_000, 10, 0, None, false);
        let best = with_relevance(composite(&f, 1.0, &[], &params()), 2.0, 2.0);
        let weak = with_relevance(composite(&g, 1.0, &[], &params()), 0.5, 2.0);
        assert!(best.score > weak.score);
    }
}
