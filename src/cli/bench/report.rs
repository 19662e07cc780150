//! What the bench reports: one row per operation, workspace and size; the targets, judged; the
//! machine it ran on.

use super::child::Outcome;
use serde::Serialize;
use std::collections::BTreeMap;

/// Errors by code (`LOCK_TIMEOUT`, `EXIT_1`, …).
pub type Errors = BTreeMap<String, usize>;

/// One timed operation on one workspace.
#[derive(Debug, Serialize)]
pub struct Row {
    pub operation: &'static str,
    /// `applied` (bulk `apply`, then single writes), `grown` (one process per entry), or
    /// `growing` (the writes that grew it).
    pub state: &'static str,
    pub entries: usize,
    /// Lines of the log when the operation ran.
    pub events: usize,
    pub runs: usize,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub p99_ms: f64,
    /// Updates per second (`apply`) or events per second (`rebuild`, catch-up), from the median.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_sec: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_rss_mib: Option<f64>,
    pub errors: Errors,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
}

/// A target and whether it was met.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was measured, e.g. `add median, applied, 100000 entries`.
    pub subject: String,
    /// The target, e.g. `< 10 ms`.
    pub target: String,
    pub measured: f64,
    pub limit: f64,
    pub met: bool,
    /// `measured / limit`: above 1 misses an upper bound, below 1 misses a lower bound.
    pub ratio: f64,
}

impl Check {
    pub fn below(subject: String, unit: &str, measured: f64, limit: f64) -> Self {
        Self {
            subject,
            target: format!("< {} {unit}", fmt_num(limit)),
            measured,
            limit,
            met: measured < limit,
            ratio: measured / limit,
        }
    }

    pub fn at_least(subject: String, unit: &str, measured: f64, limit: f64) -> Self {
        Self {
            subject,
            target: format!("≥ {} {unit}", fmt_num(limit)),
            measured,
            limit,
            met: measured >= limit,
            ratio: measured / limit,
        }
    }

    /// A count that must be zero; its ratio is the count.
    pub fn none(subject: String, count: usize) -> Self {
        Self {
            subject,
            target: "none".into(),
            measured: count as f64,
            limit: 0.0,
            met: count == 0,
            ratio: count as f64,
        }
    }

    /// `met (0.62×)` or `MISSED (1.80×)`.
    pub fn verdict(&self) -> String {
        format!(
            "{} ({:.2}×)",
            if self.met { "met" } else { "MISSED" },
            self.ratio
        )
    }
}

/// A number with thousands separators when it is whole and large.
pub fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() >= 10_000.0 {
        let digits = format!("{x:.0}");
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else {
        format!("{x}")
    }
}

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The `q` quantile (0 to 1) of sorted `times`, nearest rank.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Counts the failures of `outcomes` by error code.
pub fn count_errors<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Errors {
    let mut errors = Errors::new();
    for o in outcomes {
        if let Some(code) = &o.error {
            *errors.entry(code.clone()).or_default() += 1;
        }
    }
    errors
}

impl Row {
    /// The row of `outcomes`; times are those of the successful runs. `None` when none succeeded.
    pub fn of(
        operation: &'static str,
        state: &'static str,
        entries: usize,
        events: usize,
        outcomes: &[Outcome],
    ) -> Option<Self> {
        let mut times: Vec<f64> = outcomes
            .iter()
            .filter(|o| o.error.is_none())
            .map(|o| o.ms)
            .collect();
        if times.is_empty() {
            return None;
        }
        times.sort_by(f64::total_cmp);
        let peak = outcomes.iter().filter_map(|o| o.peak_rss).max();
        Some(Self {
            operation,
            state,
            entries,
            events,
            runs: outcomes.len(),
            median_ms: quantile(&times, 0.5),
            min_ms: times[0],
            max_ms: times[times.len() - 1],
            p99_ms: quantile(&times, 0.99),
            per_sec: None,
            peak_rss_mib: peak.map(mib),
            errors: count_errors(outcomes),
            checks: Vec::new(),
        })
    }

    /// Sets `per_sec` to `count` items per median run.
    pub fn rate(mut self, count: usize) -> Self {
        self.per_sec = Some(count as f64 / (self.median_ms / 1000.0));
        self
    }

    pub fn subject(&self, what: &str) -> String {
        format!(
            "{} {what}, {}, {} entries",
            self.operation,
            self.state,
            fmt_num(self.entries as f64)
        )
    }
}

pub const TABLE_HEADER: &str = "operation              state     entries   events  runs  median ms    min ms    max ms    p99 ms        per s  peak MiB  errors  targets";

pub fn format_row(r: &Row) -> String {
    let errors: usize = r.errors.values().sum();
    let checks: Vec<String> = r
        .checks
        .iter()
        .map(|c| format!("{} {}", c.target, c.verdict()))
        .collect();
    format!(
        "{:<22} {:<8} {:>8} {:>8} {:>5} {:>10.2} {:>9.2} {:>9.2} {:>9.2} {:>12} {:>9} {:>7}  {}",
        r.operation,
        r.state,
        r.entries,
        r.events,
        r.runs,
        r.median_ms,
        r.min_ms,
        r.max_ms,
        r.p99_ms,
        r.per_sec.map_or("-".into(), |e| format!("{e:.0}")),
        r.peak_rss_mib.map_or("-".into(), |m| format!("{m:.1}")),
        errors,
        checks.join("; ")
    )
}

/// The size on disk of one workspace, once built.
#[derive(Debug, Serialize)]
pub struct Footprint {
    pub state: &'static str,
    pub entries: usize,
    pub events: usize,
    pub log_bytes: u64,
    pub store_bytes: u64,
    /// Wall time to build it (the apply, or every `add`), in seconds.
    pub build_seconds: f64,
}

#[derive(Debug, Serialize)]
pub struct Machine {
    pub os: &'static str,
    pub arch: &'static str,
    pub cpus: usize,
    pub cpu_model: Option<String>,
    pub memory_gib: Option<f64>,
    /// `/proc/loadavg` when the bench started: the machine may be shared.
    pub load_average: Option<String>,
    pub memlog_version: &'static str,
    pub build: &'static str,
}

pub fn machine() -> Machine {
    let cpuinfo = fs_err::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_owned());
    let memory_gib = fs_err::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / (1024.0 * 1024.0));
    let load_average = fs_err::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    Machine {
        os: std::env::consts::OS,
        arch: std::env::consts::ARCH,
        cpus: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        cpu_model,
        memory_gib,
        load_average,
        memlog_version: env!("CARGO_PKG_VERSION"),
        build: if cfg!(debug_assertions) {
            "debug (numbers are not meaningful: use cargo build --release)"
        } else {
            "release"
        },
    }
}
