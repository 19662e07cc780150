//! The scheduler behind `lifecycle daemon`: one evaluation of each project, then a wait of
//! `every`, until stopped. The stop flag is checked between batches (inside a run) and the wait
//! wakes at once on a message of `wake`, so a signal ends the daemon between two batches
//! without leaving a lock held: every lock is held for one batch only.

use super::run::{RunOptions, RunReport, run};
use crate::error::Result;
use crate::project::Project;
use crossbeam_channel::{Receiver, after, select};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How the daemon runs.
pub struct Schedule {
    pub every: Duration,
    /// Stop after this many rounds (tests, cron-like use); `None`: until stopped.
    pub max_rounds: Option<u64>,
}

/// Runs rounds until `stop` is set, `wake` delivers (or disconnects), or `max_rounds` is
/// reached. `options` gives each round's options (its `now`); `on_report` sees every result.
/// Returns the number of rounds run.
pub fn run_daemon(
    projects: &[Project],
    schedule: &Schedule,
    stop: &AtomicBool,
    wake: &Receiver<()>,
    mut options: impl FnMut() -> RunOptions,
    mut on_report: impl FnMut(&Project, Result<RunReport>),
) -> u64 {
    let mut rounds = 0;
    loop {
        for p in projects {
            if stop.load(Ordering::SeqCst) {
                return rounds;
            }
            on_report(p, run(p, &options(), stop));
        }
        rounds += 1;
        if schedule.max_rounds.is_some_and(|m| rounds >= m) || stop.load(Ordering::SeqCst) {
            return rounds;
        }
        select! {
            recv(wake) -> _ => return rounds,
            recv(after(schedule.every)) -> _ => {}
        }
    }
}
