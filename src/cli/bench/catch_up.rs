//! Catching up with a log another tool wrote: a `git pull` that brought events from another
//! branch (the log is replaced by a longer file), and a rewritten log (the same events, lines
//! reordered, as a rebase or a union merge may leave them). Each is a new file renamed over
//! `events.jsonl`, as git writes it, and the first `memlog stats` afterwards is timed.

use super::child::{Memlog, Outcome};
use crate::error::{Error, Result};
use crate::log::durable::write_atomic;
use std::path::{Path, PathBuf};

/// A workspace whose store can be put back to the state before the pull.
pub struct Scene<'a> {
    pub memlog: &'a Memlog,
    pub workspace: &'a Path,
    pub log: PathBuf,
    pub store: PathBuf,
    /// Where the store is copied to before the first run.
    pub backup: PathBuf,
}

impl Scene<'_> {
    /// Replaces the log `runs` times with its own lines in a new order and times the first read
    /// after each. The store already holds every event, so nothing new is applied: the cost is
    /// recognising each line.
    ///
    /// # Errors
    /// When a file cannot be read or written, or a process cannot be started.
    pub fn rewritten(&self, base: &[u8], runs: usize) -> Result<Vec<Outcome>> {
        let mut outcomes = Vec::with_capacity(runs);
        for run in 0..runs {
            write_atomic(&self.log, &shuffled(base, run as u64 + 1))?;
            outcomes.push(self.read_once("rewrite")?);
        }
        Ok(outcomes)
    }

    /// Appends `pulled` (whole lines) to `base` in a new file `runs` times, each time with the
    /// store as it was before (restored from the backup), and times the first read after each.
    ///
    /// # Errors
    /// As [`Scene::rewritten`].
    pub fn pulled(&self, base: &[u8], pulled: &[u8], runs: usize) -> Result<Vec<Outcome>> {
        let mut log = Vec::with_capacity(base.len() + pulled.len());
        log.extend_from_slice(base);
        log.extend_from_slice(pulled);
        let mut outcomes = Vec::with_capacity(runs);
        for _ in 0..runs {
            self.restore_store()?;
            write_atomic(&self.log, &log)?;
            outcomes.push(self.read_once("pull")?);
        }
        Ok(outcomes)
    }

    /// Copies the store aside, so that every pull starts from the same state.
    ///
    /// # Errors
    /// When the copy fails.
    pub fn back_up_store(&self) -> Result<()> {
        copy_dir(&self.store, &self.backup)
    }

    fn restore_store(&self) -> Result<()> {
        if self.store.exists() {
            fs_err::remove_dir_all(&self.store)?;
        }
        copy_dir(&self.backup, &self.store)
    }

    fn read_once(&self, tag: &str) -> Result<Outcome> {
        let o = self
            .memlog
            .run(self.workspace, &super::workload::stats(), tag)?;
        if o.error.is_some() {
            return Err(Error::Usage(format!(
                "bench: `memlog stats` after the {tag} failed: {}",
                o.failure()
            )));
        }
        Ok(o)
    }
}

/// The lines of `log` in an order given by `seed` (a Fisher–Yates shuffle driven by xorshift).
fn shuffled(log: &[u8], seed: u64) -> Vec<u8> {
    let mut lines: Vec<&[u8]> = log
        .split_inclusive(|b| *b == b'\n')
        .filter(|l| l.ends_with(b"\n"))
        .collect();
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for i in (1..lines.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = usize::try_from(state % (i as u64 + 1)).unwrap_or(0);
        lines.swap(i, j);
    }
    lines.concat()
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs_err::create_dir_all(to)?;
    for item in fs_err::read_dir(from)? {
        let item = item?;
        let target = to.join(item.file_name());
        if item.file_type()?.is_dir() {
            copy_dir(&item.path(), &target)?;
        } else {
            fs_err::copy(item.path(), &target)?;
        }
    }
    Ok(())
}

/// Bytes under `path` (a file or a directory tree).
///
/// # Errors
/// When it cannot be read.
pub fn disk_usage(path: &Path) -> Result<u64> {
    let meta = fs_err::symlink_metadata(path)?;
    if !meta.is_dir() {
        return Ok(meta.len());
    }
    let mut total = 0;
    for item in fs_err::read_dir(path)? {
        total += disk_usage(&item?.path())?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_shuffle_keeps_every_line() {
        let log = b"a\nb\nc\nd\ne\n";
        let mut out = super::shuffled(log, 3);
        assert_ne!(out, log.to_vec());
        out.sort_unstable();
        let mut sorted = log.to_vec();
        sorted.sort_unstable();
        assert_eq!(out, sorted);
    }
}
