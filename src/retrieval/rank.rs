//! The composite score of the requirements, the rules that demote or annotate an entry, the
//! decay of the lifecycle policy, and how text relevance combines with them.
//!
//! `composite = confidence*0.5 + evidence_quality*0.3 + recency*0.1 + scope_match*0.1`, minus
//! [`DEMOTION`] for each demoting rule (approaching expiry, expired, stale evidence, not current).
//!
//! `decay` is the project's decay function (`policies.lifecycle`: `decay_function`,
//! `decay_half_life_days`, `decay`) at the days since the entry was last used, where last use is
//! the later of `created_at` and `updated_at` ([`decay`]), at least [`MIN_DECAY`]; a pinned entry
//! has decay 1. It is
//! computed from the entry's features alone: the access log is not read per query (a query stays
//! a scan of the text index), so an entry that is read often but never written decays in ranking
//! as if unread, and the faster decay of never-accessed entries (`grace_period_days`,
//! `never_accessed_decay_multiplier`) applies only in `memlog lifecycle run`.
//!
//! With text, `score = RELEVANCE_WEIGHT * relevance + (1 - RELEVANCE_WEIGHT) * composite`, where
//! `relevance = bm25 * (1 - DECAY_SHARE + DECAY_SHARE * decay) / best`: the entry's BM25F
//! multiplied by a factor of its decay score (requirement 1.4 of the lifecycle requirements:
//! similarity multiplied by the decay score, of which decay takes at most [`DECAY_SHARE`]),
//! divided by the best such product among the entries that pass the filters (so the best match
//! has relevance 1). Normalizing after the decay keeps the balance of relevance and composite
//! whatever the age of the corpus: an old entry loses to an equally relevant fresh one, but a
//! corpus that is old as a whole ranks as it did when it was new. Relevance leads because a query is a
//! question: a perfect answer with confidence 0.7 must beat a confident entry that merely shares
//! a word. The composite still decides between matches of similar relevance, and a demotion
//! costs `(1 - RELEVANCE_WEIGHT) * DEMOTION` = 0.12 of score, as much as a third of the way from
//! the best match. Without text there is no similarity to multiply: the score is the composite
//! alone and decay is shown (`--explain`) but not applied. Ties are broken by confidence, then
//! updated_at (newer first), then the project (own before global), then id, so the order is
//! total and the same on every run.

use super::features::DocFeatures;
use super::filters::Filters;
use crate::lifecycle::decay::DecayFunction;
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

/// The lowest decay a match is given, though the policy's function may reach 0 (a linear decay
/// past its period, a step to 0, an exponential past a few thousand half-lives). At 0 every
/// product `bm25 * decay` of an old corpus would be 0 and relevance would say nothing: the
/// unrelated entry that shares one word would rank with the answer. At this floor fully decayed
/// matches still rank by their BM25F among themselves, and below every match that is not.
pub const MIN_DECAY: f64 = 0.001;

/// Milliseconds in a day.
pub const MS_PER_DAY: i64 = 86_400_000;

/// What the ranking knows besides the entry: the time and the policy.
#[derive(Debug, Clone)]
pub struct RankParams {
    /// Unix milliseconds.
    pub now: i64,
    /// Entries whose `valid_to` is this close are demoted and annotated.
    pub expiry_warning_days: u32,
    /// Recency halves every this many days since `updated_at`.
    pub recency_half_life_days: u32,
    /// The project's decay function (`policies.lifecycle`), built once per query.
    pub decay: DecayFunction,
}

/// A rule that demoted or annotated an entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Rule {
    /// `valid_to` within the warning window: demoted and annotated.
    ApproachingExpiry { valid_to_in_days: f64 },
    /// Past `valid_to` (shown because the query asked for expired entries): demoted and
    /// annotated.
    Expired { expired_days_ago: f64 },
    /// An evidence URI was found unreachable: demoted and annotated.
    StaleEvidence,
    /// Confidence below 0.5: annotated.
    LowConfidence,
    /// Not the current word on its subject (superseded, deprecated or a draft), shown because
    /// the query asked for that status: demoted below current entries and annotated with it.
    NotCurrent { status: &'static str },
}

impl Rule {
    /// The annotation name used in JSON output.
    pub fn annotation(&self) -> &'static str {
        match self {
            Self::ApproachingExpiry { .. } => "approaching_expiry",
            Self::Expired { .. } => "expired",
            Self::StaleEvidence => "stale_evidence",
            Self::LowConfidence => "low_confidence",
            Self::NotCurrent { status } => status,
        }
    }

    pub fn demotes(&self) -> bool {
        matches!(
            self,
            Self::ApproachingExpiry { .. }
                | Self::Expired { .. }
                | Self::StaleEvidence
                | Self::NotCurrent { .. }
        )
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
    /// The decay score in [0, 1] at the days since last use (1 when pinned); weighs
    /// `relevance` in a text query ([`decayed_by`]), unused without text.
    pub decay: f64,
    /// BM25F of the entry for the query's terms (text queries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bm25: Option<f64>,
    /// The decayed BM25F ([`decayed_by`]) divided by the best among the matches (text queries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relevance: Option<f64>,
    pub score: f64,
}

/// The days until an entry's `valid_to` when that is within the warning window.
fn expiry_within_warning(f: &DocFeatures, p: &RankParams) -> Option<f64> {
    let t = f.valid_to?;
    let window = i64::from(p.expiry_warning_days) * MS_PER_DAY;
    (t >= p.now && t - p.now <= window && !Filters::expired(f, p.now)).then(|| {
        #[expect(clippy::cast_precision_loss, reason = "seconds in a few days")]
        let days = (t - p.now) as f64 / MS_PER_DAY as f64;
        days
    })
}

/// The rules that apply to an entry at `now`.
pub fn rules(f: &DocFeatures, p: &RankParams) -> Vec<Rule> {
    let mut out = Vec::new();
    if let Some(days) = expiry_within_warning(f, p) {
        out.push(Rule::ApproachingExpiry {
            valid_to_in_days: (days * 100.0).round() / 100.0,
        });
    }
    if let Some(t) = f.valid_to.filter(|_| Filters::expired(f, p.now)) {
        #[expect(
            clippy::cast_precision_loss,
            reason = "milliseconds of an age fit easily"
        )]
        let days = (p.now - t) as f64 / MS_PER_DAY as f64;
        out.push(Rule::Expired {
            expired_days_ago: (days * 100.0).round() / 100.0,
        });
    }
    if f.evidence_stale {
        out.push(Rule::StaleEvidence);
    }
    if f.confidence() < LOW_CONFIDENCE {
        out.push(Rule::LowConfidence);
    }
    if f.status != projections::Status::Active {
        out.push(Rule::NotCurrent {
            status: f.status.as_str(),
        });
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

/// The decay score of an entry at `p.now`: the policy's decay function at the days since last
/// use, the later of `created` and `updated`, at least [`MIN_DECAY`] (1 for a pinned entry, and
/// for a last use at or after `now`).
pub fn decay(f: &DocFeatures, p: &RankParams) -> f64 {
    if f.pinned {
        return 1.0;
    }
    #[expect(
        clippy::cast_precision_loss,
        reason = "ages in milliseconds fit easily"
    )]
    let days = (p.now - f.created.max(f.updated)).max(0) as f64 / MS_PER_DAY as f64;
    p.decay.score(days).max(MIN_DECAY)
}

/// The weighted sum of the four components, before demotions.
fn composite_raw(confidence: f64, evidence_quality: f64, recency: f64, scope_match: f64) -> f64 {
    confidence * W_CONFIDENCE
        + evidence_quality * W_EVIDENCE
        + recency * W_RECENCY
        + scope_match * W_SCOPE
}

/// What demoting rules subtract, of `demoting` of them.
fn demotion(demoting: usize) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "at most three rules")]
    let n = demoting as f64;
    n * DEMOTION
}

/// The composite score alone: [`composite`]'s `composite`, without making its rules and
/// components (a query computes it for every candidate and the rest for those it returns).
pub fn composite_score(f: &DocFeatures, scope_match: f64, p: &RankParams) -> f64 {
    let raw = composite_raw(
        f.confidence(),
        f.evidence_quality(),
        recency(f.updated, p),
        scope_match,
    );
    let demoting = usize::from(expiry_within_warning(f, p).is_some())
        + usize::from(Filters::expired(f, p.now))
        + usize::from(f.evidence_stale)
        + usize::from(f.status != projections::Status::Active);
    raw - demotion(demoting)
}

/// The composite score and its components (text fields left empty).
pub fn composite(f: &DocFeatures, scope_match: f64, rules: &[Rule], p: &RankParams) -> Components {
    let confidence = f.confidence();
    let evidence_quality = f.evidence_quality();
    let recency = recency(f.updated, p);
    let raw = composite_raw(confidence, evidence_quality, recency, scope_match);
    let demotion = demotion(rules.iter().filter(|r| r.demotes()).count());
    let composite = raw - demotion;
    Components {
        confidence,
        evidence_quality,
        recency,
        scope_match,
        composite_raw: raw,
        demotion,
        composite,
        decay: decay(f, p),
        bm25: None,
        relevance: None,
        score: composite,
    }
}

/// Adds text relevance to a composite: the entry's decayed BM25F ([`decayed_by`]) over `best`,
/// the largest among the matches, weighted with the composite.
pub fn with_relevance(mut c: Components, bm25: f64, best: f64) -> Components {
    let relevance = relevance(decayed_by(bm25, c.decay), best);
    c.bm25 = Some(bm25);
    c.relevance = Some(relevance);
    c.score = text_score(relevance, c.composite);
    c
}

/// Relevance of a match whose decayed BM25F ([`decayed`]) is `decayed`, the best being `best`.
pub fn relevance(decayed: f64, best: f64) -> f64 {
    if best > 0.0 { decayed / best } else { 0.0 }
}

/// The score of a text query's match.
pub fn text_score(relevance: f64, composite: f64) -> f64 {
    RELEVANCE_WEIGHT * relevance + (1.0 - RELEVANCE_WEIGHT) * composite
}

/// The share of an entry's relevance that its decay can take away: relevance is its BM25F times
/// `1 - DECAY_SHARE + DECAY_SHARE * decay`, so an entry that has fully decayed keeps four fifths
/// of it. Multiplied by the decay score alone (the lifecycle requirements' "similarity
/// multiplied by decay"), a decision or a toolchain fact seven weeks old kept a third of its
/// relevance and lost to a new note sharing one filler word with the question (166 memories of
/// a web shop written over seven weeks: the answer first for 0.747 of 79 questions, 0.848 with
/// half). With half, on 1,463 memories of a company written over four months (348 questions,
/// not written with the ranking), an old entry naming the service asked about still lost to a
/// newer one about another service: recall@1 0.379, below plain BM25 with the same filters
/// (0.491); with a fifth 0.520 (recall@5 0.641 -> 0.710, MRR 0.488 -> 0.598). The generated
/// evaluation and LoCoMo, written on one day, are unchanged (docs/PERFORMANCE.md).
pub const DECAY_SHARE: f64 = 0.2;

/// An entry's BM25F weighted by its decay score (see [`DECAY_SHARE`]): what relevance compares
/// between matches.
pub fn decayed(bm25: f64, f: &DocFeatures, p: &RankParams) -> f64 {
    decayed_by(bm25, decay(f, p))
}

/// [`decayed`] of an entry whose decay score is known.
pub fn decayed_by(bm25: f64, decay: f64) -> f64 {
    bm25 * (1.0 - DECAY_SHARE + DECAY_SHARE * decay)
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
            decay: DecayFunction::Exponential {
                lambda: std::f64::consts::LN_2 / 30.0,
            },
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
            pinned: false,
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
        /// An entry that is not current (superseded, deprecated, a draft) ranks below the same
        /// entry active: a query that asks for every status still puts the current word first.
        #[test]
        fn entries_not_current_rank_below_current_ones(
            conf in 0u32..=1_000_000,
            q in prop::sample::select(vec![0u8, 4, 6, 8, 10]),
            age in 0i64..400 * MS_PER_DAY,
            status in prop::sample::select(vec![Status::Superseded, Status::Deprecated, Status::Draft]),
        ) {
            let current = features(conf, q, age, None, false);
            let mut old = current;
            old.status = status;
            prop_assert!(score(&old, 1.0) < score(&current, 1.0));
            prop_assert!(rules(&old, &params()).iter().any(|r| r.annotation() == status.as_str()));
        }

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

    fn any_decay() -> impl Strategy<Value = DecayFunction> {
        prop_oneof![
            (1e-4f64..1.0).prop_map(|lambda| DecayFunction::Exponential { lambda }),
            (1.0f64..400.0).prop_map(|period| DecayFunction::Linear { period }),
        ]
    }

    proptest! {
        /// Requirement 1.4 of the lifecycle requirements: at equal BM25 and composite, an entry
        /// with a lower decay score never ranks higher; a decay of 1 leaves the score as
        /// `0.7 * relevance + 0.3 * composite`.
        #[test]
        fn lower_decay_never_ranks_higher(
            conf in 0u32..=1_000_000,
            quality in prop::sample::select(vec![0u8, 4, 6, 8, 10]),
            age in 0i64..400 * MS_PER_DAY,
            bm25 in 0.0f64..20.0,
            extra in 0.0f64..20.0,
            da in 0.0f64..=1.0,
            db in 0.0f64..=1.0,
        ) {
            let f = features(conf, quality, age, None, false);
            let base = composite(&f, 1.0, &rules(&f, &params()), &params());
            let best = bm25 + extra;
            let (low, high) = if da <= db { (da, db) } else { (db, da) };
            let mut a = base.clone();
            a.decay = low;
            let mut b = base.clone();
            b.decay = high;
            prop_assert!(with_relevance(a, bm25, best).score <= with_relevance(b, bm25, best).score);
            let mut one = base.clone();
            one.decay = 1.0;
            let relevance = if best > 0.0 { bm25 / best } else { 0.0 };
            let undecayed = RELEVANCE_WEIGHT * relevance + (1.0 - RELEVANCE_WEIGHT) * base.composite;
            prop_assert_eq!(with_relevance(one, bm25, best).score.to_bits(), undecayed.to_bits());
        }

        /// Decay from the features: in [0, 1], never higher for an older entry, 1 when pinned,
        /// and an older unpinned entry never outranks an equally relevant newer one.
        #[test]
        fn decay_of_features(
            f in any_decay(),
            conf in 0u32..=1_000_000,
            a in 0i64..800 * MS_PER_DAY,
            b in 0i64..800 * MS_PER_DAY,
            bm25 in 0.1f64..20.0,
        ) {
            let p = RankParams { decay: f, ..params() };
            let (young, old) = if a <= b { (a, b) } else { (b, a) };
            let fy = features(conf, 8, young, None, false);
            let fo = features(conf, 8, old, None, false);
            let (dy, dold) = (decay(&fy, &p), decay(&fo, &p));
            prop_assert!((0.0..=1.0).contains(&dy) && (0.0..=1.0).contains(&dold));
            prop_assert!(dold <= dy);
            let pinned = DocFeatures { pinned: true, ..fo };
            prop_assert_eq!(decay(&pinned, &p).to_bits(), 1.0f64.to_bits());
            let score = |f: &DocFeatures| {
                with_relevance(composite(f, 1.0, &rules(f, &p), &p), bm25, bm25).score
            };
            prop_assert!(score(&fo) <= score(&fy));
        }

        /// Past the end of a linear decay every match has the same decay, so relevance orders
        /// the matches by BM25F alone, as when they were new: the best is 1, none is 0.
        #[test]
        fn a_fully_decayed_corpus_ranks_by_relevance(
            period in 1.0f64..400.0,
            matches in prop::collection::vec((0.1f64..20.0, 0i64..10_000), 1..12),
        ) {
            let p = RankParams { decay: DecayFunction::Linear { period }, ..params() };
            let decayed: Vec<f64> = matches
                .iter()
                .map(|(bm25, age)| {
                    let f = features(900_000, 8, (*age + 401) * MS_PER_DAY, None, false);
                    decayed(*bm25, &f, &p)
                })
                .collect();
            let best = decayed.iter().copied().fold(0.0, f64::max);
            let best_bm25 = matches.iter().map(|(b, _)| *b).fold(0.0, f64::max);
            for ((bm25, _), d) in matches.iter().zip(&decayed) {
                let r = relevance(*d, best);
                prop_assert!(r > 0.0);
                prop_assert!((r - bm25 / best_bm25).abs() < 1e-9);
            }
        }
    }

    proptest! {
        /// A corpus old as a whole ranks as it did when it was new: relevance is normalized after
        /// the decay, so a decay shared by every match changes no score.
        #[test]
        fn a_shared_decay_changes_no_score(
            matches in prop::collection::vec((0.0f64..20.0, 0u32..=1_000_000), 1..12),
            shared in 0.001f64..=1.0,
        ) {
            let scores = |d: f64| -> Vec<f64> {
                let comps: Vec<(f64, Components)> = matches
                    .iter()
                    .map(|&(bm25, conf)| {
                        let f = features(conf, 8, 0, None, false);
                        let mut c = composite(&f, 1.0, &[], &params());
                        c.decay = d;
                        (bm25, c)
                    })
                    .collect();
                let best = comps.iter().map(|(b, c)| decayed_by(*b, c.decay)).fold(0.0, f64::max);
                comps.into_iter().map(|(b, c)| with_relevance(c, b, best).score).collect()
            };
            for (old, new) in scores(shared).iter().zip(scores(1.0)) {
                prop_assert!((old - new).abs() < 1e-9, "{} vs {}", old, new);
            }
        }
    }

    proptest! {
        /// The score a query computes for every candidate is, to the bit, the one it shows
        /// with the components of each result, with or without text.
        #[test]
        fn the_score_alone_is_the_score_shown(
            conf in 0u32..=1_000_000,
            quality in prop::sample::select(vec![0u8, 4, 6, 8, 10]),
            age in -3 * MS_PER_DAY..400 * MS_PER_DAY,
            valid_in in prop::option::of(-2 * MS_PER_DAY..20 * MS_PER_DAY),
            stale in any::<bool>(),
            pinned in any::<bool>(),
            scope in prop::sample::select(vec![0.0, 0.5, 1.0]),
            bm25 in 0.0f64..20.0,
            best in 0.0f64..20.0,
        ) {
            let mut f = features(conf, quality, age, valid_in.map(|v| NOW + v), stale);
            f.pinned = pinned;
            let p = params();
            let shown = composite(&f, scope, &rules(&f, &p), &p);
            prop_assert_eq!(composite_score(&f, scope, &p).to_bits(), shown.score.to_bits());
            let with_text = with_relevance(shown.clone(), bm25, best);
            let relevance = relevance(decayed(bm25, &f, &p), best);
            prop_assert_eq!(
                text_score(relevance, composite_score(&f, scope, &p)).to_bits(),
                with_text.score.to_bits()
            );
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
