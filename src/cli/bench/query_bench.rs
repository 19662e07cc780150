//! `query` against the `sqlite3` command doing the same filtered FTS5 query over the same rows,
//! both as whole processes in the same run.

use super::child::Outcome;
use super::workload;
use crate::error::{Error, Result};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Two-word texts: one that a few entries share (a tag of 5 % and a number of 0.2 %), one that
/// every entry of the synthetic workload shares (the worst case for an inverted index).
pub const TEXTS: [(&str, &str); 2] = [("selective", "t7 137"), ("broad", "bounded queue")];

/// `memlog query <text>`, default filters.
pub fn memlog_args(text: &str) -> Vec<String> {
    vec!["query".into(), text.into()]
}

/// True when the `sqlite3` command runs.
pub fn sqlite_available() -> bool {
    Command::new("sqlite3")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Builds an FTS5 database of entries `0..n` of the workload (the rows `apply` wrote).
///
/// # Errors
/// When sqlite3 fails.
pub fn build_db(db: &Path, n: usize) -> Result<()> {
    let mut sql = String::from(
        "CREATE VIRTUAL TABLE f USING fts5(summary, content, subject, tags, id UNINDEXED, \
         status UNINDEXED, confidence UNINDEXED, valid_to UNINDEXED);\nBEGIN;\n",
    );
    for i in 0..n {
        let e = workload::entry(i);
        let s = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
        let tags: Vec<&str> = e["tags"]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t.as_str()).collect())
            .unwrap_or_default();
        sql.push_str(&format!(
            "INSERT INTO f VALUES({},{},{},{},'e{i}','active',{},{});\n",
            quote(&s("summary")),
            quote(&s("content")),
            quote(&s("subject")),
            quote(&tags.join(" ")),
            e["confidence"].as_f64().unwrap_or(0.0),
            e["valid_to"].as_str().map_or("NULL".into(), quote),
        ));
    }
    sql.push_str("COMMIT;\n");
    run_sqlite(db, &sql).map(|_| ())
}

/// Runs `sql` through the `sqlite3` command on `db` and returns what it printed.
///
/// # Errors
/// When sqlite3 cannot be started or fails.
pub fn run_sqlite(db: &Path, sql: &str) -> Result<Vec<u8>> {
    use std::io::Write;
    let mut child = Command::new("sqlite3")
        .arg(db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // Written from a thread: sqlite3 answers while it reads, and an answer larger than the
    // pipe's buffer would otherwise block both processes.
    let stdin = child.stdin.take();
    let out = std::thread::scope(|scope| {
        let writer = stdin.map(|mut stdin| scope.spawn(move || stdin.write_all(sql.as_bytes())));
        let out = child.wait_with_output()?;
        if let Some(w) = writer {
            w.join()
                .map_err(|_| Error::Usage("bench: writing to sqlite3 failed".into()))??;
        }
        Ok::<_, Error>(out)
    })?;
    if !out.status.success() {
        return Err(Error::Usage(format!(
            "bench: sqlite3 failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(out.stdout)
}

/// The filtered FTS5 query memlog's defaults amount to: any of the words, active, confidence
/// at least 0.6, unexpired, best 50 by BM25.
pub fn fts5_sql(text: &str, now: &str) -> String {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{w}\""))
        .collect();
    format!(
        "SELECT id, summary, subject, confidence FROM f WHERE f MATCH {} AND status = 'active' \
         AND confidence >= 0.6 AND (valid_to IS NULL OR valid_to >= {}) ORDER BY bm25(f) LIMIT 50;",
        quote(&words.join(" OR ")),
        quote(now)
    )
}

/// One timed `sqlite3 db "<query>"` process.
///
/// # Errors
/// When sqlite3 cannot be started.
pub fn sqlite_query(db: &Path, text: &str, now: &str) -> Result<Outcome> {
    let start = Instant::now();
    let out = Command::new("sqlite3")
        .arg(db)
        .arg(fts5_sql(text, now))
        .stdin(Stdio::null())
        .output()?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    Ok(Outcome {
        ms,
        error: (!out.status.success()).then(|| format!("EXIT_{}", out.status.code().unwrap_or(-1))),
        stdout: out.stdout,
        stderr: out.stderr,
        peak_rss: None,
    })
}
