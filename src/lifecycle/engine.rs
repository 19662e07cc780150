//! The evaluation of one entry at a given time: decay, importance, TTL and retention, in the
//! precedence order of the requirements (pinned, importance, TTL, decay). Pure: the same facts
//! and the same `now` always give the same decision.

use super::access_log::AccessStats;
use super::decay::DecayFunction;
use crate::project::LifecyclePolicy;
use projections::{EntryState, Lifecycle, Section};

const DAY_MS: f64 = 86_400_000.0;

/// What the evaluation of one entry needs besides the policy.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub state: &'a EntryState,
    /// Its accesses from the access log, at or before `now`.
    pub access: Option<&'a AccessStats>,
    /// When the entry entered its current lifecycle state (from its audit records).
    pub lifecycle_since: Option<&'a str>,
}

/// What should happen to an entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Nothing (with why, for `--dry-run` reports and tests).
    Keep(&'static str),
    /// A transition with its reason.
    Transition {
        from: Lifecycle,
        to: Lifecycle,
        reason: String,
    },
    /// Remove the content (an expired entry past its retention).
    Purge { reason: String },
}

/// The numbers behind a decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    pub days_since_use: f64,
    pub decay: f64,
    pub importance: f64,
    pub effective_ttl_days: f64,
}

/// A validated policy ready to evaluate entries at one time.
#[derive(Debug, Clone)]
pub struct Evaluator {
    pub policy: LifecyclePolicy,
    pub decay: DecayFunction,
    pub now_ms: i64,
}

fn ms(t: &str) -> Option<i64> {
    crate::retrieval::features::unix_millis(t)
}

#[expect(
    clippy::cast_precision_loss,
    reason = "millisecond spans far below 2^52"
)]
fn days_between(from_ms: i64, to_ms: i64) -> f64 {
    (to_ms - from_ms).max(0) as f64 / DAY_MS
}

impl Evaluator {
    /// # Errors
    /// When the policy is invalid (naming the key) or `now` is not a timestamp.
    pub fn new(policy: &LifecyclePolicy, now: &str) -> Result<Self, String> {
        policy.validate()?;
        Ok(Self {
            decay: policy.decay_function()?,
            policy: policy.clone(),
            now_ms: ms(now).ok_or_else(|| format!("`{now}` is not a timestamp"))?,
        })
    }

    /// Decay, importance and effective TTL of an entry.
    ///
    /// # Errors
    /// When the entry's timestamps cannot be read.
    pub fn scores(&self, f: &Facts<'_>) -> Result<Scores, String> {
        let s = f.state;
        let created = ms(&s.created_at)
            .ok_or_else(|| format!("created_at `{}` is not a timestamp", s.created_at))?;
        let updated = ms(&s.updated_at).unwrap_or(created);
        let accessed = f.access.and_then(|a| ms(&a.last));
        let last_use = [Some(created), Some(updated), accessed]
            .into_iter()
            .flatten()
            .filter(|t| *t <= self.now_ms)
            .max()
            .unwrap_or(created);
        let days = days_between(last_use, self.now_ms);
        let accesses = f.access.map_or(0, |a| a.count);
        // Never accessed: after the grace period, time runs faster.
        let grace = f64::from(self.policy.grace_period_days);
        let effective_days = if accesses == 0 && days > grace {
            grace + (days - grace) * self.policy.never_accessed_decay_multiplier
        } else {
            days
        };
        let decay = self.decay.score(effective_days);
        let importance = self.policy.importance.score(
            accesses,
            days_between(created, self.now_ms),
            s.fields.confidence,
            s.fields.related_entries.len(),
        );
        let ttl = f64::from(self.policy.ttl_for(s.fields.kind));
        Ok(Scores {
            days_since_use: days,
            decay,
            importance,
            effective_ttl_days: ttl * self.policy.importance.multiplier(importance),
        })
    }

    /// The decision for one entry.
    ///
    /// # Errors
    /// When the entry's timestamps cannot be read.
    pub fn evaluate(&self, f: &Facts<'_>) -> Result<Decision, String> {
        let s = f.state;
        if s.pinned {
            return Ok(Decision::Keep("pinned"));
        }
        if s.purged {
            return Ok(Decision::Keep("purged"));
        }
        let since_days = || {
            f.lifecycle_since
                .and_then(ms)
                .or_else(|| ms(&s.updated_at))
                .map_or(0.0, |t| days_between(t, self.now_ms))
        };
        match s.lifecycle {
            Lifecycle::Archived => {
                let days = since_days();
                let keep = f64::from(self.policy.archive_retention_days);
                Ok(if days >= keep {
                    Decision::Transition {
                        from: Lifecycle::Archived,
                        to: Lifecycle::Expired,
                        reason: format!(
                            "archived for {days:.1} days >= archive retention {keep:.0} days"
                        ),
                    }
                } else {
                    Decision::Keep("archived within retention")
                })
            }
            Lifecycle::Expired => {
                let days = since_days();
                let keep = f64::from(self.policy.expired_retention_days);
                Ok(if days >= keep {
                    Decision::Purge {
                        reason: format!(
                            "expired for {days:.1} days >= expired retention {keep:.0} days"
                        ),
                    }
                } else {
                    Decision::Keep("expired within retention")
                })
            }
            from @ (Lifecycle::Active | Lifecycle::Decaying) => {
                let sc = self.scores(f)?;
                let numbers = format!(
                    "decay score {:.3} ({}), {:.1} days since last use, importance {:.3}, effective TTL {:.1} days (kind {} TTL {} days x{})",
                    sc.decay,
                    self.decay.describe(),
                    sc.days_since_use,
                    sc.importance,
                    sc.effective_ttl_days,
                    s.fields.kind,
                    self.policy.ttl_for(s.fields.kind),
                    self.policy.importance.multiplier(sc.importance),
                );
                if let Some(valid_to) = s
                    .fields
                    .valid_to
                    .as_deref()
                    .filter(|_| s.fields.section == Section::State)
                    && ms(valid_to).is_some_and(|t| t <= self.now_ms)
                {
                    return Ok(Decision::Transition {
                        from,
                        to: Lifecycle::Archived,
                        reason: format!("state entry past its valid_to {valid_to}: {numbers}"),
                    });
                }
                if sc.days_since_use >= sc.effective_ttl_days {
                    return Ok(Decision::Transition {
                        from,
                        to: Lifecycle::Archived,
                        reason: format!("effective TTL reached without use: {numbers}"),
                    });
                }
                let threshold = self.policy.decaying_threshold;
                if from == Lifecycle::Active && sc.decay < threshold {
                    return Ok(Decision::Transition {
                        from,
                        to: Lifecycle::Decaying,
                        reason: format!("below the decaying threshold {threshold}: {numbers}"),
                    });
                }
                if from == Lifecycle::Decaying && sc.decay >= threshold {
                    return Ok(Decision::Transition {
                        from,
                        to: Lifecycle::Active,
                        reason: format!(
                            "back at or above the decaying threshold {threshold} after a use: {numbers}"
                        ),
                    });
                }
                Ok(Decision::Keep("within TTL and threshold"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::Policies;
    use projections::{EntryFields, Kind, Status};
    use proptest::prelude::*;

    fn stamp(days: f64) -> String {
        #[expect(clippy::cast_possible_truncation, reason = "test spans")]
        let ms = 1_780_000_000_000i64 + (days * DAY_MS) as i64;
        crate::clock::format_timestamp(
            chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default(),
        )
    }

    fn state(lifecycle: Lifecycle, pinned: bool, confidence: f64, section: Section) -> EntryState {
        EntryState {
            id: "m-0000000000".into(),
            fields: EntryFields {
                section,
                kind: Kind::Decision,
                subject: "s".into(),
                scope: "repo".into(),
                summary: "x".into(),
                content: "y".into(),
                tags: vec![],
                confidence,
                evidence: vec![],
                related_entries: vec![],
                valid_from: None,
                valid_to: (section == Section::State).then(|| stamp(20.0)),
                review_interval: None,
            },
            status: Status::Active,
            superseded_by: None,
            superseded_at: None,
            created_by: "a".into(),
            created_at: stamp(0.0),
            updated_at: stamp(0.0),
            updated_by: "a".into(),
            lifecycle,
            pinned,
            pinned_by: None,
            pinned_at: None,
            status_reason: None,
            evidence_stale: false,
            purged: false,
            version: 1,
            heads: vec![],
            agreed: false,
            ended_at: None,
        }
    }

    fn lifecycles() -> impl Strategy<Value = Lifecycle> {
        prop_oneof![
            Just(Lifecycle::Active),
            Just(Lifecycle::Decaying),
            Just(Lifecycle::Archived),
            Just(Lifecycle::Expired),
        ]
    }

    proptest! {
        /// Pinned entries are never changed; every decision is a valid transition; evaluating
        /// again at the same time after applying a decision changes nothing (idempotence); the
        /// same facts always give the same decision.
        #[test]
        fn evaluation_laws(
            lifecycle in lifecycles(), pinned in any::<bool>(), confidence in 0.0f64..1.0,
            state_section in any::<bool>(), now_days in 0.0f64..2000.0, since_days in 0.0f64..2000.0,
            accesses in 0u64..50, access_day in 0.0f64..2000.0,
        ) {
            let policy = Policies::default().lifecycle;
            let section = if state_section { Section::State } else { Section::Decisions };
            let mut s = state(lifecycle, pinned, confidence, section);
            let now = stamp(now_days);
            let ev = Evaluator::new(&policy, &now).unwrap_or_else(|e| panic!("{e}"));
            let access = AccessStats { count: accesses, first: stamp(0.0), last: stamp(access_day.min(now_days)) };
            let since = stamp(since_days.min(now_days));
            let facts = Facts { state: &s, access: (accesses > 0).then_some(&access), lifecycle_since: Some(&since) };
            let d = ev.evaluate(&facts).unwrap_or_else(|e| panic!("{e}"));
            prop_assert_eq!(&d, &ev.evaluate(&facts).unwrap_or_else(|e| panic!("{e}")));
            if pinned {
                prop_assert!(matches!(d, Decision::Keep("pinned")));
            }
            match d {
                Decision::Transition { from, to, reason } => {
                    prop_assert_eq!(from, lifecycle);
                    prop_assert!(super::super::machine::is_valid(from, to), "{from} -> {to}");
                    prop_assert!(to != Lifecycle::Expired || lifecycle == Lifecycle::Archived);
                    prop_assert!(reason.chars().any(|c| c.is_ascii_digit()));
                    // Applied at `now`: a second evaluation at the same time changes nothing.
                    s.lifecycle = to;
                    let facts = Facts { state: &s, access: (accesses > 0).then_some(&access), lifecycle_since: Some(&now) };
                    let again = ev.evaluate(&facts).unwrap_or_else(|e| panic!("{e}"));
                    prop_assert!(matches!(again, Decision::Keep(_)), "{:?} then {:?}", to, again);
                }
                Decision::Purge { .. } => prop_assert_eq!(lifecycle, Lifecycle::Expired),
                Decision::Keep(_) => {}
            }
        }

        /// For the same last use, a later evaluation never gives a higher decay score.
        #[test]
        fn later_evaluation_never_scores_higher(a in 0.0f64..3000.0, b in 0.0f64..3000.0, accesses in 0u64..5) {
            let policy = Policies::default().lifecycle;
            let s = state(Lifecycle::Active, false, 0.5, Section::Decisions);
            let access = AccessStats { count: accesses, first: stamp(0.0), last: stamp(0.0) };
            let score = |d: f64| {
                let ev = Evaluator::new(&policy, &stamp(d)).unwrap_or_else(|e| panic!("{e}"));
                let f = Facts { state: &s, access: (accesses > 0).then_some(&access), lifecycle_since: None };
                ev.scores(&f).unwrap_or_else(|e| panic!("{e}")).decay
            };
            let (early, late) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(score(late) <= score(early));
            prop_assert!((0.0..=1.0).contains(&score(late)));
        }
    }
}
