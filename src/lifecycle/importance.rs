//! Importance: how much an entry matters, from how often it is used, how confident it is and
//! how connected it is. High importance extends an entry's TTL.

use serde::{Deserialize, Serialize};

/// `policies.lifecycle.importance` of `memlog.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ImportancePolicy {
    pub weights: Weights,
    /// At or above this importance an entry's TTL is multiplied by `ttl_multiplier`.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub high_threshold: f64,
    /// At least 1: importance extends a TTL, never shortens it.
    #[schemars(range(min = 1.0))]
    pub ttl_multiplier: f64,
    /// Accesses per 30 days at which access frequency counts in full.
    #[schemars(extend("exclusiveMinimum" = 0.0))]
    pub full_frequency_per_month: f64,
    /// Related entries at which relationships count in full.
    #[schemars(range(min = 1))]
    pub full_relationships: u32,
}

/// The weights of the three factors (normalized by their sum).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Weights {
    #[schemars(range(min = 0.0))]
    pub access_frequency: f64,
    #[schemars(range(min = 0.0))]
    pub confidence: f64,
    #[schemars(range(min = 0.0))]
    pub relationships: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Self {
            access_frequency: 0.5,
            confidence: 0.3,
            relationships: 0.2,
        }
    }
}

impl Default for ImportancePolicy {
    fn default() -> Self {
        Self {
            weights: Weights::default(),
            high_threshold: 0.7,
            ttl_multiplier: 2.0,
            full_frequency_per_month: 10.0,
            full_relationships: 5,
        }
    }
}

const KEY: &str = "policies.lifecycle.importance";

impl ImportancePolicy {
    /// Every invalid value, each named by its key; empty when the policy is valid.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let w = &self.weights;
        for (name, v) in [
            ("access_frequency", w.access_frequency),
            ("confidence", w.confidence),
            ("relationships", w.relationships),
        ] {
            if !v.is_finite() || v < 0.0 {
                out.push(format!("{KEY}.weights.{name} must be >= 0 (got {v})"));
            }
        }
        if w.access_frequency + w.confidence + w.relationships <= 0.0 {
            out.push(format!(
                "{KEY}.weights must not all be 0: give at least one factor a positive weight"
            ));
        }
        if !(0.0..=1.0).contains(&self.high_threshold) {
            out.push(format!(
                "{KEY}.high_threshold must be between 0 and 1 (got {})",
                self.high_threshold
            ));
        }
        if !self.ttl_multiplier.is_finite() || self.ttl_multiplier < 1.0 {
            out.push(format!(
                "{KEY}.ttl_multiplier must be >= 1 (got {}): importance extends a TTL, never shortens it",
                self.ttl_multiplier
            ));
        }
        if !self.full_frequency_per_month.is_finite() || self.full_frequency_per_month <= 0.0 {
            out.push(format!(
                "{KEY}.full_frequency_per_month must be > 0 (got {})",
                self.full_frequency_per_month
            ));
        }
        if self.full_relationships == 0 {
            out.push(format!("{KEY}.full_relationships must be > 0 (got 0)"));
        }
        out
    }

    /// Importance in [0, 1]: the weighted mean of access frequency (accesses per 30 days of the
    /// entry's life, at least one month, relative to `full_frequency_per_month`), confidence and
    /// relationship count (relative to `full_relationships`), each capped at 1.
    pub fn score(
        &self,
        accesses: u64,
        age_days: f64,
        confidence: f64,
        relationships: usize,
    ) -> f64 {
        let months = (age_days.max(0.0) / 30.0).max(1.0);
        #[expect(clippy::cast_precision_loss, reason = "access counts far below 2^52")]
        let frequency = accesses as f64 / months;
        let f = (frequency / self.full_frequency_per_month).min(1.0);
        let c = if confidence.is_finite() {
            confidence.clamp(0.0, 1.0)
        } else {
            0.0
        };
        #[expect(clippy::cast_precision_loss, reason = "small counts")]
        let r = (relationships as f64 / f64::from(self.full_relationships)).min(1.0);
        let w = &self.weights;
        let total = w.access_frequency + w.confidence + w.relationships;
        if total <= 0.0 {
            return 0.0;
        }
        ((w.access_frequency * f + w.confidence * c + w.relationships * r) / total).clamp(0.0, 1.0)
    }

    /// The TTL multiplier for an importance: `ttl_multiplier` at or above `high_threshold`.
    pub fn multiplier(&self, importance: f64) -> f64 {
        if importance >= self.high_threshold {
            self.ttl_multiplier
        } else {
            1.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// An access never lowers importance, and importance stays in [0, 1].
        #[test]
        fn an_access_never_lowers_importance(
            accesses in 0u64..10_000, age in 0.0f64..5000.0, confidence in 0.0f64..1.0,
            rel in 0usize..20, wa in 0.0f64..1.0, wc in 0.0f64..1.0, wr in 0.01f64..1.0,
        ) {
            let p = ImportancePolicy {
                weights: Weights { access_frequency: wa, confidence: wc, relationships: wr },
                ..ImportancePolicy::default()
            };
            let before = p.score(accesses, age, confidence, rel);
            let after = p.score(accesses + 1, age, confidence, rel);
            prop_assert!((0.0..=1.0).contains(&before));
            prop_assert!(after >= before);
            prop_assert!(p.multiplier(after) >= p.multiplier(before));
        }
    }

    #[test]
    fn bad_weights_name_the_key() {
        let mut p = ImportancePolicy::default();
        p.weights.confidence = -0.1;
        assert_eq!(
            p.problems(),
            ["policies.lifecycle.importance.weights.confidence must be >= 0 (got -0.1)"]
        );
        let p = ImportancePolicy {
            ttl_multiplier: 0.5,
            ..ImportancePolicy::default()
        };
        assert!(!p.problems().is_empty());
    }
}
