//! The concurrency run: writers creating entries, mutators superseding, deprecating and pinning
//! them, and readers, all separate `memlog` processes on one project at the same time, with the
//! default lock timeout. Every failure is counted by its error code, and the log is checked
//! afterwards: it must hold exactly one new event per acknowledged write, and verify.

use super::child::{Memlog, Outcome};
use super::report::{Check, Errors, count_errors, mib, quantile};
use super::workload;
use crate::error::{Error, Result};
use serde::Serialize;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Processes of each role, and operations per writer and mutator.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    pub writers: usize,
    pub mutators: usize,
    pub readers: usize,
    pub ops: usize,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub entries: usize,
    pub writers: usize,
    pub mutators: usize,
    pub readers: usize,
    pub ops_per_writer: usize,
    pub wall_ms: f64,
    /// Writes (creates and changes) that exited with success.
    pub acknowledged_writes: usize,
    pub writes_per_sec: f64,
    pub write_p50_ms: f64,
    pub write_p99_ms: f64,
    pub write_max_ms: f64,
    pub reads: usize,
    pub read_p50_ms: f64,
    pub read_p99_ms: f64,
    /// Lines the log gained; equal to `acknowledged_writes` unless a write was lost or a failed
    /// write left an event behind.
    pub events_appended: usize,
    /// Every failure by error code, including `LOST_WRITE`, `UNACKNOWLEDGED_EVENT` and
    /// `VERIFY_FAILED` from the checks afterwards.
    pub errors: Errors,
    pub peak_rss_mib: Option<f64>,
    pub checks: Vec<Check>,
}

pub const WRITES_PER_SEC: f64 = 100.0;
pub const WRITE_P99_MS: f64 = 1000.0;

#[derive(Clone, Copy, PartialEq)]
enum Role {
    Write,
    Read,
}

/// Number of entries the mutators need that nothing else touches.
pub fn targets_needed(config: &Config) -> usize {
    config.mutators * config.ops
}

/// Runs the processes on `workspace`. `targets` are entries no other phase changed (the
/// mutators take turns over them, one change each); `readable` are ids to `show`.
///
/// # Errors
/// When a process cannot be started or the log cannot be read.
pub fn run(
    memlog: &Memlog,
    workspace: &Path,
    log: &Path,
    entries: usize,
    targets: &[String],
    readable: &[String],
    config: Config,
) -> Result<Report> {
    if targets.len() < targets_needed(&config) || readable.is_empty() {
        return Err(Error::Usage(format!(
            "bench: the concurrency run needs {} entries that no other phase changes; raise \
             --entries or lower --mutators or --ops",
            targets_needed(&config)
        )));
    }
    let before = super::log_lines(log)?;
    let busy = AtomicUsize::new(config.writers + config.mutators);
    let start = std::time::Instant::now();
    let results: Vec<Result<Vec<(Role, Outcome)>>> = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for w in 0..config.writers {
            let busy = &busy;
            handles.push(s.spawn(move || {
                let mut done = Vec::new();
                for k in 0..config.ops {
                    let i = workload::CONCURRENT_ADDS + w * 100_000 + k;
                    let o = memlog.run(workspace, &workload::add(i), &format!("w{w}"));
                    done.push((Role::Write, o?));
                }
                busy.fetch_sub(1, Ordering::SeqCst);
                Ok(done)
            }));
        }
        for m in 0..config.mutators {
            let busy = &busy;
            handles.push(s.spawn(move || {
                let mut done = Vec::new();
                for k in 0..config.ops {
                    let id = &targets[k * config.mutators + m];
                    let args = match k % 3 {
                        0 => workload::supersede(id, k),
                        1 => workload::deprecate(id),
                        _ => workload::pin(id),
                    };
                    let o = memlog.run(workspace, &args, &format!("m{m}"));
                    done.push((Role::Write, o?));
                }
                busy.fetch_sub(1, Ordering::SeqCst);
                Ok(done)
            }));
        }
        for r in 0..config.readers {
            let busy = &busy;
            handles.push(s.spawn(move || {
                let mut done = Vec::new();
                let mut k = 0;
                while busy.load(Ordering::SeqCst) > 0 {
                    let args = match k % 3 {
                        0 => workload::show(&readable[(k * 7919 + r) % readable.len()]),
                        1 => workload::list(),
                        _ => workload::stats(),
                    };
                    let o = memlog.run(workspace, &args, &format!("r{r}"));
                    done.push((Role::Read, o?));
                    k += 1;
                }
                Ok(done)
            }));
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Usage("bench: a worker thread panicked".into())))
            })
            .collect()
    });
    let wall_ms = start.elapsed().as_secs_f64() * 1000.0;
    let mut all = Vec::new();
    for r in results {
        all.extend(r?);
    }
    let mut errors = count_errors(all.iter().map(|(_, o)| o));
    let ok_times = |role: Role| {
        let mut t: Vec<f64> = all
            .iter()
            .filter(|(r, o)| *r == role && o.error.is_none())
            .map(|(_, o)| o.ms)
            .collect();
        t.sort_by(f64::total_cmp);
        t
    };
    let writes = ok_times(Role::Write);
    let reads = ok_times(Role::Read);
    let appended = super::log_lines(log)?.saturating_sub(before);
    if appended < writes.len() {
        *errors.entry("LOST_WRITE".into()).or_default() += writes.len() - appended;
    }
    if appended > writes.len() {
        *errors.entry("UNACKNOWLEDGED_EVENT".into()).or_default() += appended - writes.len();
    }
    let verify = memlog.run(workspace, &["verify".to_owned()], "verify")?;
    if verify.error.is_some() {
        *errors.entry("VERIFY_FAILED".into()).or_default() += 1;
    }
    let writes_per_sec = writes.len() as f64 / (wall_ms / 1000.0);
    let write_p99_ms = quantile(&writes, 0.99);
    let subject = |what: &str| format!("concurrency {what}, {entries} entries");
    let lock_timeouts = errors.get("LOCK_TIMEOUT").copied().unwrap_or(0);
    let checks = vec![
        Check::none(subject("LOCK_TIMEOUT errors"), lock_timeouts),
        Check::at_least(
            subject("acknowledged writes"),
            "per s",
            writes_per_sec,
            WRITES_PER_SEC,
        ),
        Check::below(
            subject("p99 write latency"),
            "ms",
            write_p99_ms,
            WRITE_P99_MS,
        ),
    ];
    Ok(Report {
        entries,
        writers: config.writers,
        mutators: config.mutators,
        readers: config.readers,
        ops_per_writer: config.ops,
        wall_ms,
        acknowledged_writes: writes.len(),
        writes_per_sec,
        write_p50_ms: quantile(&writes, 0.5),
        write_p99_ms,
        write_max_ms: writes.last().copied().unwrap_or(0.0),
        reads: reads.len(),
        read_p50_ms: quantile(&reads, 0.5),
        read_p99_ms: quantile(&reads, 0.99),
        events_appended: appended,
        errors,
        peak_rss_mib: all.iter().filter_map(|(_, o)| o.peak_rss).max().map(mib),
        checks,
    })
}
