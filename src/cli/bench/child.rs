//! Running one `memlog` process and recording what a user would see: wall time, exit status,
//! the error code of a failure, and the process's peak memory.
//!
//! Peak memory comes from the child itself: with `MEMLOG_PEAK_RSS_FILE` set, `memlog` writes its
//! peak resident set size (Linux `VmHWM`) to that file when it exits.

use crate::error::Result;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Environment variable naming the file a process writes its peak RSS (bytes) to at exit.
pub const PEAK_RSS_ENV: &str = "MEMLOG_PEAK_RSS_FILE";

/// The project every bench workspace holds.
pub const PROJECT: &str = "bench";

/// How to start `memlog` for the bench.
pub struct Memlog {
    exe: PathBuf,
    /// Where the peak-memory files of the children go.
    scratch: PathBuf,
}

/// One finished process.
#[derive(Debug)]
pub struct Outcome {
    pub ms: f64,
    /// The `error.code` of the JSON error (`LOCK_TIMEOUT`, …), or `EXIT_<n>` when there was none.
    pub error: Option<String>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub peak_rss: Option<u64>,
}

impl Outcome {
    /// What a `--json` command answered: the `results` of a success (docs/JSON.md), or the
    /// whole error object of a failure.
    pub fn json(&self) -> Option<serde_json::Value> {
        let mut v: serde_json::Value = serde_json::from_slice(&self.stdout).ok()?;
        if v["success"] == true
            && let Some(results) = v.get_mut("results")
        {
            return Some(results.take());
        }
        Some(v)
    }

    /// What went wrong, for a message: the JSON error's message, else standard error.
    pub fn failure(&self) -> String {
        let message = self
            .json()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_owned));
        message.unwrap_or_else(|| String::from_utf8_lossy(&self.stderr).trim().to_owned())
    }
}

impl Memlog {
    pub fn new(exe: PathBuf, scratch: PathBuf) -> Self {
        Self { exe, scratch }
    }

    /// Runs `memlog --json <args>` on project `bench` of `workspace`, with the default lock
    /// timeout and the system clock. `tag` names the peak-memory file, so that processes run at
    /// the same time use different ones.
    ///
    /// # Errors
    /// Only when the process cannot be started; a failing command is an [`Outcome`].
    pub fn run(&self, workspace: &Path, args: &[String], tag: &str) -> Result<Outcome> {
        let rss_file = self.scratch.join(format!("peak-rss-{tag}"));
        let _ = fs_err::remove_file(&rss_file);
        let start = Instant::now();
        let output = Command::new(&self.exe)
            .arg("--workspace")
            .arg(workspace)
            .args(["--project", PROJECT, "--actor", "bench", "--json"])
            .args(args)
            .env(PEAK_RSS_ENV, &rss_file)
            .env_remove("MEMLOG_NOW")
            .env_remove("MEMLOG_LOCK_TIMEOUT_MS")
            .env_remove("MEMLOG_WORKSPACE")
            .env_remove("MEMLOG_PROJECT")
            .env_remove("MEMLOG_ACTOR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()?;
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        let peak_rss = fs_err::read_to_string(&rss_file)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok());
        let _ = fs_err::remove_file(&rss_file);
        let error = (!output.status.success()).then(|| {
            serde_json::from_slice::<serde_json::Value>(&output.stdout)
                .ok()
                .and_then(|v| v["error"]["code"].as_str().map(str::to_owned))
                .unwrap_or_else(|| match output.status.code() {
                    Some(code) => format!("EXIT_{code}"),
                    None => "KILLED".to_owned(),
                })
        });
        Ok(Outcome {
            ms,
            error,
            stdout: output.stdout,
            stderr: output.stderr,
            peak_rss,
        })
    }
}

/// Writes this process's peak resident set size to the file named by [`PEAK_RSS_ENV`], if set.
/// Called by `main` just before exiting; best effort, Linux only.
pub fn report_peak_rss() {
    let Some(path) = std::env::var_os(PEAK_RSS_ENV) else {
        return;
    };
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return;
    };
    let kib = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(kib) = kib {
        let _ = std::fs::write(path, (kib * 1024).to_string());
    }
}
