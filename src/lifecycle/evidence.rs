//! Evidence checks: every evidence URI of every entry that still has content. Workspace paths
//! must exist and their line anchors (`#L10`, `#L10-L20`, `:42`) must be within the file;
//! URLs (permalinks, tickets, documents) are checked over HTTP only when asked (`online`), with
//! a timeout and retries with backoff. Short references (`RFC 7231`, `ADR-7`) and assumptions
//! are not checkable and never stale.

use crate::policy::evidence_uri::{UriShape, classify};
use projections::{EntryState, EvidenceType};
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

/// How to check URLs.
#[derive(Debug, Clone)]
pub struct Online {
    /// Per attempt.
    pub timeout: Duration,
    /// Attempts after the first, waiting `backoff`, then twice as long, ...
    pub retries: u32,
    pub backoff: Duration,
}

/// The outcome for one URI.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct UriCheck {
    pub uri: String,
    /// `ok`, `stale` or `unchecked`.
    pub result: &'static str,
    pub detail: String,
}

/// The outcome for one entry.
#[derive(Debug, Clone, Serialize)]
pub struct EntryCheck {
    pub id: String,
    pub checks: Vec<UriCheck>,
    /// URIs found stale.
    pub stale: Vec<String>,
    /// Every URI was checked (none left `unchecked`).
    pub complete: bool,
}

impl EntryCheck {
    /// The `evidence_checked` event to write, if the entry's flag should change: set when a URI
    /// is stale and the flag is not; cleared when every URI was checked and passed.
    pub fn change(&self, state: &EntryState) -> Option<Vec<String>> {
        if !self.stale.is_empty() && !state.evidence_stale {
            Some(self.stale.clone())
        } else if self.stale.is_empty() && self.complete && state.evidence_stale {
            Some(Vec::new())
        } else {
            None
        }
    }
}

/// Splits `path#L10-L20`, `path#L10`, `path:42[:7]` into the path and the line range.
fn anchor(uri: &str) -> (&str, Option<(usize, usize)>) {
    if let Some((path, frag)) = uri.split_once('#') {
        let lines = frag.strip_prefix('L').and_then(|r| {
            let (a, b) = r.split_once("-L").unwrap_or((r, r));
            Some((a.parse().ok()?, b.parse().ok()?))
        });
        return (path, lines);
    }
    let mut parts = uri.splitn(3, ':');
    let path = parts.next().unwrap_or(uri);
    match parts.next().and_then(|l| l.parse::<usize>().ok()) {
        Some(l) => (path, Some((l, l))),
        None => (uri, None),
    }
}

/// Checks a workspace path (with its anchor) under `root`.
pub fn check_path(root: &Path, uri: &str) -> UriCheck {
    let (path, lines) = anchor(uri.trim());
    let full = root.join(path.trim_start_matches("./"));
    let stale = |detail: String| UriCheck {
        uri: uri.to_owned(),
        result: "stale",
        detail,
    };
    if !full.exists() {
        return stale(format!("{path} does not exist in the workspace"));
    }
    if let Some((first, last)) = lines {
        let Ok(text) = fs_err::read(&full) else {
            return stale(format!("{path} cannot be read"));
        };
        let count = text.split(|b| *b == b'\n').count()
            - usize::from(text.last() == Some(&b'\n') || text.is_empty());
        if first == 0 || last < first || last > count {
            return stale(format!(
                "{path} has {count} lines; the anchor names lines {first} to {last}"
            ));
        }
    }
    UriCheck {
        uri: uri.to_owned(),
        result: "ok",
        detail: "exists".into(),
    }
}

/// Checks a URL with `curl` (HEAD, then GET when HEAD is refused), retrying with backoff.
/// 2xx and 3xx pass; 404 and 410 are stale at once; other failures are retried, then stale.
pub fn check_url(uri: &str, online: &Online) -> UriCheck {
    let mut wait = online.backoff;
    let mut last = String::new();
    for attempt in 0..=online.retries {
        if attempt > 0 {
            std::thread::sleep(wait);
            wait = wait.saturating_mul(2);
        }
        match http_status(uri, online.timeout) {
            Ok(code) if (200..400).contains(&code) => {
                return UriCheck {
                    uri: uri.to_owned(),
                    result: "ok",
                    detail: format!("HTTP {code}"),
                };
            }
            Ok(code @ (404 | 410)) => {
                return UriCheck {
                    uri: uri.to_owned(),
                    result: "stale",
                    detail: format!("HTTP {code}"),
                };
            }
            Ok(code) => last = format!("HTTP {code}"),
            Err(e) => last = e,
        }
    }
    UriCheck {
        uri: uri.to_owned(),
        result: "stale",
        detail: format!("{last} after {} attempts", online.retries + 1),
    }
}

fn http_status(uri: &str, timeout: Duration) -> Result<u16, String> {
    let secs = format!("{:.3}", timeout.as_secs_f64());
    let run = |head: bool| {
        let mut c = std::process::Command::new("curl");
        c.args([
            "-s",
            "-o",
            "/dev/null",
            "-L",
            "-w",
            "%{http_code}",
            "--max-time",
            &secs,
        ]);
        if head {
            c.arg("-I");
        }
        c.arg("--").arg(uri);
        c.output()
    };
    let status = |out: std::io::Result<std::process::Output>| -> Result<u16, String> {
        let out = out.map_err(|e| {
            format!("cannot run curl ({e}); install curl to check URLs with --online")
        })?;
        let code: u16 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0);
        if code == 0 {
            Err(format!(
                "no HTTP answer (curl exit {})",
                out.status.code().unwrap_or(-1)
            ))
        } else {
            Ok(code)
        }
    };
    match status(run(true)) {
        Ok(405 | 501) => status(run(false)),
        other => other,
    }
}

/// Checks every evidence URI of `state`.
pub fn check_entry(root: &Path, state: &EntryState, online: Option<&Online>) -> EntryCheck {
    let mut checks = Vec::new();
    for e in &state.fields.evidence {
        if e.kind == EvidenceType::Assumption {
            continue;
        }
        let c = match classify(&e.uri) {
            UriShape::FilePath => check_path(root, &e.uri),
            UriShape::GitPermalink | UriShape::TicketUrl | UriShape::WebUrl => match online {
                Some(o) => check_url(e.uri.trim(), o),
                None => UriCheck {
                    uri: e.uri.clone(),
                    result: "unchecked",
                    detail: "a URL: checked only with --online".into(),
                },
            },
            UriShape::Other => continue,
        };
        checks.push(c);
    }
    let stale = checks
        .iter()
        .filter(|c| c.result == "stale")
        .map(|c| c.uri.clone())
        .collect();
    let complete = checks.iter().all(|c| c.result != "unchecked");
    EntryCheck {
        id: state.id.clone(),
        checks,
        stale,
        complete,
    }
}

#[cfg(test)]
mod tests {
    use super::anchor;

    #[test]
    fn anchors() {
        assert_eq!(anchor("src/a.rs#L10-L20"), ("src/a.rs", Some((10, 20))));
        assert_eq!(anchor("src/a.rs#L3"), ("src/a.rs", Some((3, 3))));
        assert_eq!(anchor("src/a.rs:42:7"), ("src/a.rs", Some((42, 42))));
        assert_eq!(anchor("docs/x.md#usage"), ("docs/x.md", None));
        assert_eq!(anchor("Makefile"), ("Makefile", None));
    }
}
