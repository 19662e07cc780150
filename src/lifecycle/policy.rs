//! Validation of `policies.lifecycle`: every bad value is refused when the configuration is
//! read, with the key that holds it.

use super::decay::DecayFunction;
use crate::project::LifecyclePolicy;
use projections::Kind;

const KEY: &str = "policies.lifecycle";

impl LifecyclePolicy {
    /// Every invalid value, each named by its key, e.g.
    /// `policies.lifecycle.decay.lambda must be > 0 (got -1)`; empty when the policy is valid.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Err(e) = self.decay_function() {
            out.push(e);
        }
        if let Some(spec) = &self.decay {
            out.extend(spec.problems());
        }
        if !self.decaying_threshold.is_finite() || !(0.0..=1.0).contains(&self.decaying_threshold) {
            out.push(format!(
                "{KEY}.decaying_threshold must be between 0 and 1 (got {})",
                self.decaying_threshold
            ));
        }
        // The half-life is refused at 0 even when the decay function does not read it, as the
        // schema of `memlog.json` refuses it: a half-life of no days means nothing.
        for (key, v) in [
            ("default_ttl_days", self.default_ttl_days),
            ("decay_half_life_days", self.decay_half_life_days),
            ("archive_retention_days", self.archive_retention_days),
            ("expired_retention_days", self.expired_retention_days),
            ("audit_retention_days", self.audit_retention_days),
            ("batch_size", self.batch_size),
        ] {
            if v == 0 {
                out.push(format!("{KEY}.{key} must be > 0 (got 0)"));
            }
        }
        for (kind, days) in &self.ttl_days {
            if Kind::parse(kind).is_none() {
                out.push(format!(
                    "{KEY}.ttl_days has unknown kind `{kind}`; use one of {}",
                    Kind::choices()
                ));
            } else if *days == 0 {
                out.push(format!("{KEY}.ttl_days.{kind} must be > 0 (got 0)"));
            }
        }
        out.extend(self.importance.problems());
        if !self.never_accessed_decay_multiplier.is_finite()
            || self.never_accessed_decay_multiplier < 1.0
        {
            out.push(format!(
                "{KEY}.never_accessed_decay_multiplier must be >= 1 (got {}): it accelerates decay",
                self.never_accessed_decay_multiplier
            ));
        }
        if self.archive_size_warning == 0 {
            out.push(format!("{KEY}.archive_size_warning must be > 0 (got 0)"));
        }
        // A value that the function in use reads and that is also checked on its own (a
        // half-life of 0 with exponential decay) is one problem, named once.
        let mut seen = std::collections::HashSet::new();
        out.retain(|p| seen.insert(p.clone()));
        out
    }

    /// Checks every value.
    ///
    /// # Errors
    /// Every [`Self::problems`], joined by `; `.
    pub fn validate(&self) -> Result<(), String> {
        let problems = self.problems();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    /// The decay function the policy configures.
    ///
    /// # Errors
    /// As [`DecayFunction::from_policy`].
    pub fn decay_function(&self) -> Result<DecayFunction, String> {
        DecayFunction::from_policy(
            &self.decay_function,
            self.decay_half_life_days,
            self.decay.as_ref(),
        )
    }

    /// TTL in days of a kind.
    pub fn ttl_for(&self, kind: Kind) -> u32 {
        self.ttl_days
            .get(kind.as_str())
            .copied()
            .unwrap_or(self.default_ttl_days)
    }
}

#[cfg(test)]
mod tests {
    use crate::project::Policies;

    #[test]
    fn defaults_are_valid_and_bad_values_name_their_key() {
        let mut p = Policies::default().lifecycle;
        assert_eq!(p.validate(), Ok(()));
        p.ttl_days.insert("fact".into(), 3);
        assert!(
            p.validate()
                .err()
                .unwrap_or_default()
                .starts_with("policies.lifecycle.ttl_days has unknown kind `fact`")
        );
        let mut p = Policies::default().lifecycle;
        p.decaying_threshold = 1.5;
        assert_eq!(
            p.validate().err().unwrap_or_default(),
            "policies.lifecycle.decaying_threshold must be between 0 and 1 (got 1.5)"
        );
        let mut p = Policies::default().lifecycle;
        p.batch_size = 0;
        assert_eq!(
            p.validate().err().unwrap_or_default(),
            "policies.lifecycle.batch_size must be > 0 (got 0)"
        );
    }

    #[test]
    fn every_bad_value_is_named() {
        let mut p = Policies::default().lifecycle;
        p.decay = Some(crate::lifecycle::decay::DecaySpec {
            lambda: Some(-1.0),
            ..Default::default()
        });
        p.default_ttl_days = 0;
        p.batch_size = 0;
        p.importance.weights.confidence = -0.1;
        p.importance.high_threshold = 2.0;
        assert_eq!(
            p.problems(),
            [
                "policies.lifecycle.decay.lambda must be > 0 (got -1)",
                "policies.lifecycle.default_ttl_days must be > 0 (got 0)",
                "policies.lifecycle.batch_size must be > 0 (got 0)",
                "policies.lifecycle.importance.weights.confidence must be >= 0 (got -0.1)",
                "policies.lifecycle.importance.high_threshold must be between 0 and 1 (got 2)",
            ]
        );
    }
}
