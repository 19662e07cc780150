//! What a commit is about to add under `ai-memory/`: the staged lines, scanned for credentials
//! by the pre-commit hook. Only added lines are read (the log only grows), so the hook costs
//! time in proportion to the commit, not to the log.

use super::repo::Repo;
use crate::error::Result;
use serde::Serialize;

/// A credential found in a staged line (the value itself is never kept).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StagedFinding {
    /// Path relative to the workspace root.
    pub path: String,
    /// 1-based line in the staged file.
    pub line: usize,
    pub column: usize,
    pub rule: &'static str,
    pub description: &'static str,
}

/// Runs of consecutive added lines: (path, first line number, text).
fn added_hunks(diff: &str) -> Vec<(String, usize, String)> {
    let mut out: Vec<(String, usize, String)> = Vec::new();
    let mut path: Option<String> = None;
    let mut next_line = 0usize;
    let mut current: Option<(String, usize, String)> = None;
    for line in diff.split('\n') {
        if let Some(p) = line.strip_prefix("+++ ") {
            out.extend(current.take());
            path = p.strip_prefix("b/").map(str::to_owned);
        } else if let Some(h) = line.strip_prefix("@@ ") {
            out.extend(current.take());
            // `@@ -a,b +c,d @@`: the new side starts at line c.
            next_line = h
                .split_whitespace()
                .find_map(|t| t.strip_prefix('+'))
                .and_then(|t| t.split(',').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(1);
        } else if let (Some(text), Some(p)) = (line.strip_prefix('+'), &path) {
            match &mut current {
                Some((_, _, buf)) => {
                    buf.push_str(text);
                    buf.push('\n');
                }
                None => current = Some((p.clone(), next_line, format!("{text}\n"))),
            }
            next_line += 1;
        } else if line.starts_with(' ') {
            out.extend(current.take());
            next_line += 1;
        } else if line.starts_with('-') && !line.starts_with("---") {
            out.extend(current.take());
        }
    }
    out.extend(current);
    out
}

/// Credentials in the lines staged under the workspace's `ai-memory/`.
///
/// # Errors
/// When git cannot run.
pub fn scan(repo: &Repo) -> Result<Vec<StagedFinding>> {
    let diff = repo.run(&[
        "diff",
        "--cached",
        "--relative",
        "-U0",
        "--no-color",
        "--no-ext-diff",
        "--text",
        "--diff-filter=ACMR",
        "--",
        crate::workspace::MEMORY_DIR,
    ])?;
    let mut out = Vec::new();
    for (path, first, text) in added_hunks(&diff) {
        for f in crate::policy::secret_scan::scan_document(&text) {
            out.push(StagedFinding {
                path: path.clone(),
                line: first + f.line - 1,
                column: f.column,
                rule: f.rule,
                description: f.description,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::added_hunks;

    #[test]
    fn added_lines_keep_their_line_numbers() {
        let diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -3,0 +4,2 @@\n+four\n+five\n@@ -9 +11 @@\n-old\n+eleven\n";
        assert_eq!(
            added_hunks(diff),
            vec![
                ("x".to_owned(), 4, "four\nfive\n".to_owned()),
                ("x".to_owned(), 11, "eleven\n".to_owned())
            ]
        );
    }
}
