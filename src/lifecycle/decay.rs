//! Decay functions: how relevance fades with the time since an entry was last used.
//!
//! Every function maps elapsed days to a score in [0, 1], is 1 at zero days and never rises
//! as time goes on, so a later evaluation never gives a higher score (a law of the lifecycle
//! requirements, property-tested below).

use serde::{Deserialize, Serialize};

/// The `policies.lifecycle.decay` object of `memlog.json`: parameters beyond the
/// `decay_function` / `decay_half_life_days` shorthand.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecaySpec {
    /// Overrides `decay_function`: `exponential`, `linear`, `step` or `custom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["exponential", "linear", "step", "custom", null]))]
    pub function: Option<String>,
    /// Exponential rate per day: `score = e^(-lambda * t)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0.0))]
    pub lambda: Option<f64>,
    /// Linear decay period T in days: `score = max(0, 1 - t / T)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0.0))]
    pub period_days: Option<f64>,
    /// Step decay: from `after_days` on, the score is `score`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<Step>>,
    /// Custom decay: a piecewise-linear table of (days, score) points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<Vec<Point>>,
}

/// One step of a step decay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    #[schemars(range(min = 0.0))]
    pub after_days: f64,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub score: f64,
}

/// One point of a custom decay table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Point {
    #[schemars(range(min = 0.0))]
    pub days: f64,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub score: f64,
}

/// A validated decay function.
#[derive(Debug, Clone, PartialEq)]
pub enum DecayFunction {
    /// `e^(-lambda t)`.
    Exponential { lambda: f64 },
    /// `max(0, 1 - t / period)`.
    Linear { period: f64 },
    /// The score of the last step reached, 1 before the first.
    Step(Vec<Step>),
    /// Linear interpolation between points; 1 at day 0 unless the table says otherwise; the
    /// last score after the last point.
    Custom(Vec<Point>),
}

const KEY: &str = "policies.lifecycle";

impl DecaySpec {
    /// The problems of every parameter given, whether or not the function in use reads it: the
    /// schema of `memlog.json`, which cannot tell which function is in use, refuses such a
    /// value wherever it is, and choosing another function must not reveal a problem that was
    /// there all along.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (key, value) in [
            ("decay.lambda", self.lambda),
            ("decay.period_days", self.period_days),
        ] {
            if let Some(v) = value
                && !(v.is_finite() && v > 0.0)
            {
                out.push(format!("{KEY}.{key} must be > 0 (got {v})"));
            }
        }
        if let Some(steps) = &self.steps {
            let points: Vec<(f64, f64)> = steps.iter().map(|s| (s.after_days, s.score)).collect();
            out.extend(check_table(&points, "decay.steps", "after_days").err());
        }
        if let Some(table) = &self.table {
            let points: Vec<(f64, f64)> = table.iter().map(|p| (p.days, p.score)).collect();
            out.extend(check_table(&points, "decay.table", "days").err());
        }
        out
    }
}

impl DecayFunction {
    /// The function a lifecycle policy describes.
    ///
    /// # Errors
    /// A message naming the key whose value is invalid and why.
    pub fn from_policy(
        function: &str,
        half_life_days: u32,
        spec: Option<&DecaySpec>,
    ) -> Result<Self, String> {
        let empty = DecaySpec::default();
        let spec = spec.unwrap_or(&empty);
        let (name, key) = match &spec.function {
            Some(f) => (f.as_str(), format!("{KEY}.decay.function")),
            None => (function, format!("{KEY}.decay_function")),
        };
        let half_life = f64::from(half_life_days);
        let positive = |v: f64, key: &str| {
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                Err(format!("{KEY}.{key} must be > 0 (got {v})"))
            }
        };
        match name {
            "exponential" => {
                let lambda = match spec.lambda {
                    Some(l) => positive(l, "decay.lambda")?,
                    None => std::f64::consts::LN_2 / positive(half_life, "decay_half_life_days")?,
                };
                Ok(Self::Exponential { lambda })
            }
            "linear" => {
                let period = match spec.period_days {
                    Some(p) => positive(p, "decay.period_days")?,
                    None => 2.0 * positive(half_life, "decay_half_life_days")?,
                };
                Ok(Self::Linear { period })
            }
            "step" => {
                let steps = spec.steps.clone().ok_or_else(|| {
                    format!(
                        "{KEY}.decay.steps is required for step decay: a list like \
                         [{{\"after_days\": 30, \"score\": 0.5}}, {{\"after_days\": 90, \"score\": 0.1}}]"
                    )
                })?;
                check_table(
                    &steps
                        .iter()
                        .map(|s| (s.after_days, s.score))
                        .collect::<Vec<_>>(),
                    "decay.steps",
                    "after_days",
                )?;
                Ok(Self::Step(steps))
            }
            "custom" => {
                let table = spec.table.clone().ok_or_else(|| {
                    format!(
                        "{KEY}.decay.table is required for custom decay: a list like \
                         [{{\"days\": 0, \"score\": 1}}, {{\"days\": 60, \"score\": 0.2}}]"
                    )
                })?;
                check_table(
                    &table.iter().map(|p| (p.days, p.score)).collect::<Vec<_>>(),
                    "decay.table",
                    "days",
                )?;
                Ok(Self::Custom(table))
            }
            other => Err(format!(
                "{key} is `{other}`; use exponential, linear, step or custom"
            )),
        }
    }

    /// The score after `days` without use (negative `days` count as zero).
    pub fn score(&self, days: f64) -> f64 {
        let t = if days.is_finite() {
            days.max(0.0)
        } else {
            f64::MAX
        };
        let s = match self {
            Self::Exponential { lambda } => (-lambda * t).exp(),
            Self::Linear { period } => (1.0 - t / period).max(0.0),
            Self::Step(steps) => steps
                .iter()
                .take_while(|s| s.after_days <= t)
                .last()
                .map_or(1.0, |s| s.score),
            Self::Custom(points) => interpolate(points, t),
        };
        if s.is_nan() { 0.0 } else { s.clamp(0.0, 1.0) }
    }

    /// A short description for reasons: `exponential(lambda=0.0231/day)`.
    pub fn describe(&self) -> String {
        match self {
            Self::Exponential { lambda } => format!("exponential(lambda={lambda:.4}/day)"),
            Self::Linear { period } => format!("linear(T={period:.1} days)"),
            Self::Step(s) => format!("step({} steps)", s.len()),
            Self::Custom(p) => format!("custom({} points)", p.len()),
        }
    }
}

fn interpolate(points: &[Point], t: f64) -> f64 {
    let mut prev = Point {
        days: 0.0,
        score: 1.0,
    };
    for p in points {
        if t < p.days {
            let span = p.days - prev.days;
            if span <= 0.0 {
                return p.score.min(prev.score);
            }
            let f = (t - prev.days) / span;
            return prev.score + (p.score - prev.score) * f;
        }
        prev = p.clone();
    }
    prev.score
}

/// Points must have finite, non-negative, strictly increasing positions and scores in [0, 1]
/// that never rise.
fn check_table(points: &[(f64, f64)], key: &str, at: &str) -> Result<(), String> {
    if points.is_empty() {
        return Err(format!("{KEY}.{key} must have at least one entry"));
    }
    let mut last: Option<(f64, f64)> = None;
    for (i, (days, score)) in points.iter().copied().enumerate() {
        if !days.is_finite() || days < 0.0 {
            return Err(format!("{KEY}.{key}[{i}].{at} must be >= 0 (got {days})"));
        }
        if !score.is_finite() || !(0.0..=1.0).contains(&score) {
            return Err(format!(
                "{KEY}.{key}[{i}].score must be between 0 and 1 (got {score})"
            ));
        }
        if let Some((d, s)) = last {
            if days <= d {
                return Err(format!(
                    "{KEY}.{key}[{i}].{at} must be greater than the previous entry's ({days} <= {d})"
                ));
            }
            if score > s {
                return Err(format!(
                    "{KEY}.{key}[{i}].score must not be higher than the previous entry's \
                     ({score} > {s}): relevance never grows back with time"
                ));
            }
        }
        last = Some((days, score));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn functions() -> impl Strategy<Value = DecayFunction> {
        prop_oneof![
            (1e-4f64..5.0).prop_map(|lambda| DecayFunction::Exponential { lambda }),
            (0.1f64..1000.0).prop_map(|period| DecayFunction::Linear { period }),
            proptest::collection::vec((0.1f64..100.0, 0.0f64..1.0), 1..6).prop_map(|v| {
                let mut days = 0.0;
                let mut score = 1.0;
                DecayFunction::Step(
                    v.into_iter()
                        .map(|(d, s)| {
                            days += d;
                            score *= s;
                            Step {
                                after_days: days,
                                score,
                            }
                        })
                        .collect(),
                )
            }),
            proptest::collection::vec((0.1f64..100.0, 0.0f64..1.0), 1..6).prop_map(|v| {
                let mut days = 0.0;
                let mut score = 1.0;
                DecayFunction::Custom(
                    v.into_iter()
                        .map(|(d, s)| {
                            days += d;
                            score *= s;
                            Point { days, score }
                        })
                        .collect(),
                )
            }),
        ]
    }

    proptest! {
        /// Decay always in [0, 1]; deterministic; a later time never scores higher.
        #[test]
        fn decay_is_bounded_deterministic_and_non_increasing(
            f in functions(), a in -10.0f64..5000.0, b in -10.0f64..5000.0,
        ) {
            let (early, late) = if a <= b { (a, b) } else { (b, a) };
            let s = f.score(early);
            prop_assert!((0.0..=1.0).contains(&s));
            prop_assert_eq!(s.to_bits(), f.score(early).to_bits());
            prop_assert!(f.score(late) <= s + 1e-12, "{} > {}", f.score(late), s);
        }

        /// Any configuration the validation accepts gives a function within [0, 1]; rising or
        /// out-of-range tables are refused naming the key.
        #[test]
        fn custom_tables_are_checked(points in proptest::collection::vec((-5.0f64..100.0, -0.5f64..1.5), 1..6)) {
            let spec = DecaySpec {
                function: Some("custom".into()),
                table: Some(points.iter().map(|(days, score)| Point { days: *days, score: *score }).collect()),
                ..DecaySpec::default()
            };
            match DecayFunction::from_policy("exponential", 30, Some(&spec)) {
                Ok(f) => for t in [0.0, 1.0, 10.0, 50.0, 200.0] {
                    prop_assert!((0.0..=1.0).contains(&f.score(t)));
                },
                Err(e) => prop_assert!(e.starts_with("policies.lifecycle.decay.table"), "{e}"),
            }
        }
    }

    #[test]
    fn formulas_of_the_requirements() {
        let e = DecayFunction::Exponential { lambda: 0.1 };
        assert!((e.score(10.0) - (-1.0f64).exp()).abs() < 1e-12);
        let l = DecayFunction::Linear { period: 40.0 };
        assert!((l.score(10.0) - 0.75).abs() < 1e-12);
        assert!(l.score(50.0).abs() < 1e-12);
        let half =
            DecayFunction::from_policy("exponential", 30, None).unwrap_or_else(|e| panic!("{e}"));
        assert!((half.score(30.0) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn invalid_configurations_name_the_key() {
        let bad = |spec: DecaySpec| {
            DecayFunction::from_policy("exponential", 30, Some(&spec))
                .err()
                .unwrap_or_default()
        };
        assert_eq!(
            bad(DecaySpec {
                lambda: Some(-1.0),
                ..DecaySpec::default()
            }),
            "policies.lifecycle.decay.lambda must be > 0 (got -1)"
        );
        assert!(
            bad(DecaySpec {
                function: Some("cubic".into()),
                ..DecaySpec::default()
            })
            .starts_with("policies.lifecycle.decay.function is `cubic`")
        );
        assert!(
            bad(DecaySpec {
                function: Some("step".into()),
                ..DecaySpec::default()
            })
            .starts_with("policies.lifecycle.decay.steps is required")
        );
        assert!(
            bad(DecaySpec {
                function: Some("step".into()),
                steps: Some(vec![
                    Step {
                        after_days: 5.0,
                        score: 0.5
                    },
                    Step {
                        after_days: 9.0,
                        score: 0.8
                    }
                ]),
                ..DecaySpec::default()
            })
            .starts_with("policies.lifecycle.decay.steps[1].score must not be higher")
        );
        assert_eq!(
            DecayFunction::from_policy("exponential", 0, None)
                .err()
                .unwrap_or_default(),
            "policies.lifecycle.decay_half_life_days must be > 0 (got 0)"
        );
    }
}
