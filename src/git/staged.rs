//! What a commit is about to add under `ai-memory/`: the staged lines, scanned for credentials
//! by the pre-commit hook. Only added lines are read (the log only grows), so the hook costs
//! time in proportion to the commit, not to the log.

use super::repo::Repo;
use crate::error::Result;
use serde::Serialize;
use serde_json::Value;

/// A credential found in a staged line (the value itself is never kept).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StagedFinding {
    /// Path relative to the workspace root.
    pub path: String,
    /// 1-based line in the staged file.
    pub line: usize,
    pub column: usize,
    /// For an event line: the field of the event that holds the credential (e.g.
    /// `data.set.summary`); the column is then within that field's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub rule: &'static str,
    pub description: &'static str,
}

/// The path of a `+++` line as git writes it: as it is (a name with a space ends in a tab), or
/// quoted C-style when it holds a quote, a control character or a byte above 0x7F
/// (`"b/ai-context/\303\261otes.md"`). `None` for `/dev/null`.
fn diff_path(text: &str) -> Option<String> {
    let Some(quoted) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        let plain = text.strip_suffix('\t').unwrap_or(text);
        return (plain != "/dev/null").then(|| plain.to_owned());
    };
    let mut bytes = Vec::with_capacity(quoted.len());
    let mut chars = quoted.bytes().peekable();
    while let Some(b) = chars.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        match chars.next()? {
            b'n' => bytes.push(b'\n'),
            b't' => bytes.push(b'\t'),
            b'r' => bytes.push(b'\r'),
            b'a' => bytes.push(0x07),
            b'b' => bytes.push(0x08),
            b'f' => bytes.push(0x0c),
            b'v' => bytes.push(0x0b),
            d @ b'0'..=b'7' => {
                let mut value = u32::from(d - b'0');
                for _ in 0..2 {
                    let next = chars.next_if(|c| (b'0'..=b'7').contains(c))?;
                    value = value * 8 + u32::from(next - b'0');
                }
                bytes.push(u8::try_from(value).ok()?);
            }
            other => bytes.push(other),
        }
    }
    String::from_utf8(bytes).ok()
}

/// The first line of a hunk's old (`-`) or new (`+`) side, from its header after `@@ `:
/// `-a,b +c,d @@` starts at a on the old side and c on the new.
fn hunk_start(header: &str, side: char) -> usize {
    header
        .split_whitespace()
        .find_map(|t| t.strip_prefix(side))
        .and_then(|t| t.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

/// The event ids of the lines a diff removes from event logs: (path, old line number, id). The
/// path is the new side's (`+++`), or with `old_side` the old side's (`---`: a log the new
/// side deletes is read too).
fn removed_events(diff: &str, old_side: bool) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    let mut path: Option<String> = None;
    let mut old_line = 0usize;
    // Between `diff --git` and the first `@@`: the file's header, where `---` and `+++` name it.
    let mut in_header = false;
    let (header, prefix) = if old_side {
        ("--- ", "a/")
    } else {
        ("+++ ", "b/")
    };
    for line in diff.split('\n') {
        if line.starts_with("diff ") {
            in_header = true;
            path = None;
        } else if let Some(h) = line.strip_prefix("@@ ") {
            in_header = false;
            old_line = hunk_start(h, '-');
        } else if in_header {
            if let Some(p) = line.strip_prefix(header) {
                path = diff_path(p)
                    .and_then(|p| p.strip_prefix(prefix).map(str::to_owned))
                    .filter(|p| p.ends_with(crate::project::LOG_FILE));
            }
        } else if let (Some(text), Some(p)) = (line.strip_prefix('-'), &path) {
            if let Some(id) = line_event_id(text) {
                out.push((p.clone(), old_line, id));
            }
            old_line += 1;
        }
    }
    out
}

/// The event id a log line states (a tombstone's too: it keeps its event's id), if it has one.
fn line_event_id(line: &str) -> Option<String> {
    if let Some(id) = crate::log::line_id::stated_id_unchecked(line.as_bytes()) {
        return Some(id.to_owned());
    }
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(m)) => match m.get("id") {
            Some(Value::String(id)) => Some(id.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The staged text of event logs, each read from git once however many checks need it.
struct StagedLogs<'r> {
    repo: &'r Repo,
    texts: std::collections::HashMap<String, String>,
}

impl StagedLogs<'_> {
    /// The staged text of `path` (empty when git has no such blob).
    fn text(&mut self, path: &str) -> &str {
        let repo = self.repo;
        self.texts.entry(path.to_owned()).or_insert_with(|| {
            repo.output(&["show", &format!(":./{path}")])
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default()
        })
    }
}

/// Lines removed from a staged log whose events the staged log no longer holds at all: a log
/// only grows (`gc` rewrites a line as its tombstone, which keeps the id), and a commit that
/// drops events loses them for every clone.
fn removed_problems(logs: &mut StagedLogs<'_>, diff: &str) -> Vec<DamagedLine> {
    let mut out = Vec::new();
    for (path, line, id) in removed_events(diff, false) {
        let text = logs.text(&path);
        if !text.contains(&format!("\"id\":\"{id}\"")) {
            out.push(DamagedLine {
                path: path.clone(),
                problem: format!(
                    "the commit removes event {} (line {line} of the committed log) and holds it \
                     nowhere else: a log only grows; restore the committed lines with `git \
                     checkout HEAD -- {path}` and record changes with memlog commands \
                     (`deprecate`, `purge` then `gc`)",
                    short(&id)
                ),
                line,
            });
        }
    }
    out
}

/// A commit that the merge being committed brings in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeHead {
    /// Its full id.
    pub commit: String,
    /// What it was merged as (a branch, a remote-tracking branch), when known.
    pub name: Option<String>,
}

/// Events that a commit being merged holds in a log and that the merge commit would drop.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MergeLoss {
    /// Path of the log, relative to the workspace root.
    pub path: String,
    /// The commit being merged.
    pub commit: String,
    /// What it was merged as, when known.
    pub branch: Option<String>,
    /// The ids of the events its log holds (whole or as tombstones) and the staged log lacks.
    pub missing: Vec<String>,
}

/// The commits the merge being committed brings in: each line of `MERGE_HEAD` (written when a
/// merge stops for a conflict or `--no-commit`, and read by the `git commit` that ends it), and
/// `announced`: (commit, name) pairs that `git merge` gives its `pre-merge-commit` hook in its
/// environment (`GITHEAD_<commit>=<name>`), before it writes `MERGE_HEAD`. Only names of
/// existing commits are kept.
///
/// # Errors
/// When git cannot run, or `MERGE_HEAD` exists and cannot be read.
pub fn merge_heads(repo: &Repo, announced: &[(String, String)]) -> Result<Vec<MergeHead>> {
    let mut heads: Vec<MergeHead> = announced
        .iter()
        .map(|(commit, name)| MergeHead {
            commit: commit.clone(),
            name: Some(name.clone()),
        })
        .collect();
    let merge_head = repo.git_path("MERGE_HEAD")?;
    match fs_err::read_to_string(&merge_head) {
        Ok(text) => heads.extend(text.split_whitespace().map(|c| MergeHead {
            commit: c.to_owned(),
            name: None,
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    let mut out: Vec<MergeHead> = Vec::new();
    for head in heads {
        let full = repo.output(&[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &format!("{}^{{commit}}", head.commit),
        ])?;
        if !full.status.success() {
            continue;
        }
        let commit = String::from_utf8_lossy(&full.stdout).trim().to_owned();
        if out.iter().any(|h| h.commit == commit) {
            continue;
        }
        let name = match head.name {
            Some(name) => Some(name),
            None => repo
                .output(&["name-rev", "--name-only", "--no-undefined", &commit])
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
                .filter(|n| !n.is_empty()),
        };
        out.push(MergeHead { commit, name });
    }
    Ok(out)
}

/// For each of `heads`, the events its logs hold that the staged logs lack: a merge resolved by
/// keeping our version of a log (`git checkout --ours`, `git merge -s ours` or `-X ours`) drops
/// the other branch's memory, which no check of what the commit adds would see. An event the
/// staged log holds as its tombstone is there.
///
/// # Errors
/// When git cannot run or fails.
pub fn merge_losses(repo: &Repo, heads: &[MergeHead]) -> Result<Vec<MergeLoss>> {
    let mut out = Vec::new();
    let mut logs = StagedLogs {
        repo,
        texts: std::collections::HashMap::new(),
    };
    let mut staged_ids: std::collections::HashMap<String, std::collections::HashSet<String>> =
        std::collections::HashMap::new();
    for head in heads {
        // Lines of the head's logs that the index lacks are the removed lines of this diff.
        let diff = repo.run(&staged_diff(&[
            "--no-renames",
            &head.commit,
            "--",
            crate::workspace::MEMORY_DIR,
        ]))?;
        let mut missing: Vec<(String, Vec<String>)> = Vec::new();
        let mut counted = std::collections::HashSet::new();
        for (path, _, id) in removed_events(&diff, true) {
            let ids = staged_ids
                .entry(path.clone())
                .or_insert_with(|| logs.text(&path).lines().filter_map(line_event_id).collect());
            if ids.contains(&id) || !counted.insert((path.clone(), id.clone())) {
                continue;
            }
            match missing.iter_mut().find(|(p, _)| *p == path) {
                Some((_, list)) => list.push(id),
                None => missing.push((path, vec![id])),
            }
        }
        out.extend(missing.into_iter().map(|(path, missing)| MergeLoss {
            path,
            commit: head.commit.clone(),
            branch: head.name.clone(),
            missing,
        }));
    }
    Ok(out)
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
            path = diff_path(p).and_then(|p| p.strip_prefix("b/").map(str::to_owned));
        } else if let Some(h) = line.strip_prefix("@@ ") {
            out.extend(current.take());
            next_line = hunk_start(h, '+');
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

/// A staged line of an event log that is not an intact event.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DamagedLine {
    /// Path relative to the workspace root.
    pub path: String,
    /// 1-based line in the staged file.
    pub line: usize,
    pub problem: String,
}

/// What the staged changes under `ai-memory/` and `ai-context/` would commit that they must not.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Staged {
    pub secrets: Vec<StagedFinding>,
    pub damaged: Vec<DamagedLine>,
}

/// `git diff` of the index, as the hooks read it (paths relative to the workspace, no context
/// lines, no colours or external tools, every file as text), then `more`.
fn staged_diff<'a>(more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "diff",
        "--cached",
        "--relative",
        "-U0",
        "--no-color",
        "--no-ext-diff",
        "--text",
    ];
    args.extend_from_slice(more);
    args
}

/// Credentials in the lines staged under the workspace's `ai-memory/` and `ai-context/`, and
/// added log lines that are not intact events (edited by hand, cut, or not events at all).
///
/// # Errors
/// When git cannot run.
pub fn scan(repo: &Repo) -> Result<Staged> {
    let diff = repo.run(&staged_diff(&[
        "--diff-filter=ACMR",
        "--",
        crate::workspace::MEMORY_DIR,
        crate::workspace::CONTEXT_DIR,
    ]))?;
    let mut staged = Staged::default();
    let out = &mut staged.secrets;
    let mut logs = StagedLogs {
        repo,
        texts: std::collections::HashMap::new(),
    };
    let mut purges: std::collections::HashMap<String, Purges> = std::collections::HashMap::new();
    for (path, first, text) in added_hunks(&diff) {
        if path.ends_with(crate::project::LOG_FILE) {
            for (i, line) in text.lines().enumerate() {
                out.extend(scan_event_line(&path, first + i, line));
                let damaged = check_event_line(&path, first + i, line).or_else(|| {
                    let purges = purges
                        .entry(path.clone())
                        .or_insert_with(|| Purges::staged(&mut logs, &path));
                    purges.check(&path, first + i, line)
                });
                staged.damaged.extend(damaged);
            }
            continue;
        }
        for f in crate::policy::secret_scan::scan_document(&text) {
            out.push(StagedFinding {
                path: path.clone(),
                line: first + f.line - 1,
                column: f.column,
                field: None,
                rule: f.rule,
                description: f.description,
            });
        }
    }
    staged.damaged.extend(removed_problems(&mut logs, &diff));
    Ok(staged)
}

/// The purges a staged log holds: the events each covers, and the entries purged.
#[derive(Default)]
struct Purges {
    /// Event id -> the purge that covers it.
    covered: std::collections::HashMap<String, String>,
    entries: std::collections::HashSet<String>,
    /// The purge events, by id: they vouch for the tombstones of the events they cover.
    events: std::collections::HashMap<String, projections::Event>,
}

impl Purges {
    /// The purges of the staged `path`; none when git has no such blob or no line names a purge.
    fn staged(logs: &mut StagedLogs<'_>, path: &str) -> Self {
        let mut purges = Self::default();
        // Most logs hold no purge: git answers that without the log passing through here.
        let any = logs
            .repo
            .output(&[
                "grep",
                "--cached",
                "-q",
                "-F",
                "\"type\":\"purge\"",
                "--",
                path,
            ])
            .is_ok_and(|o| o.status.success());
        if !any {
            return purges;
        }
        let text = logs.text(path);
        for line in text.lines().filter(|l| l.contains("\"type\":\"purge\"")) {
            if let Ok(e) = projections::decode_line(line)
                && let projections::EventData::Purge { redacted, .. } = &e.data
            {
                purges.entries.insert(e.entry.clone());
                for id in redacted.keys() {
                    purges.covered.insert(id.clone(), e.id.clone());
                }
                purges.events.insert(e.id.clone(), e);
            }
        }
        purges
    }

    /// The problem with an added whole event that carries content a staged purge removes: a
    /// merge that brings back a line `gc` rewrote, or an update written beside the purge. It
    /// would put purged text into the commit.
    fn check(&self, path: &str, line_no: usize, line: &str) -> Option<DamagedLine> {
        if projections::tombstone::split(line).is_some() {
            // Only `gc` writes a tombstone, and the purge it names vouches for it: a line that
            // merely claims to be one could say anything under the id of a real event.
            let id = projections::decode_line(line).ok()?.id;
            let purge_of = |p: &str| Ok(self.events.get(p).cloned());
            let problem = crate::log::tombstones::problem(&id, line, purge_of).ok()??;
            return Some(DamagedLine {
                path: path.to_owned(),
                line: line_no,
                problem: format!(
                    "{problem}: only `memlog gc` writes tombstones; restore the committed line \
                     with `git checkout HEAD -- {path}`"
                ),
            });
        }
        if self.entries.is_empty() {
            return None;
        }
        let e = projections::decode_line(line).ok()?;
        let problem = if let Some(purge) = self.covered.get(&e.id) {
            format!(
                "it carries content that purge {} removes: run `memlog gc` (it rewrites the \
                 line as its tombstone), then `git add` the log",
                short(purge)
            )
        } else {
            let entry = e.entries().find(|x| {
                self.entries.contains(*x) && projections::tombstone::redact(&e, x).is_some()
            })?;
            format!(
                "it carries content of purged entry {entry} that no purge covers (written \
                 beside the purge): run `memlog purge {entry} --reason ...` again, then `memlog \
                 gc`, then `git add` the log"
            )
        };
        Some(DamagedLine {
            path: path.to_owned(),
            line: line_no,
            problem,
        })
    }
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// The problem with an added log line that does not decode as an event whose ids match its
/// content; blank lines are allowed (every reader skips them).
fn check_event_line(path: &str, line_no: usize, line: &str) -> Option<DamagedLine> {
    if line.trim().is_empty() {
        return None;
    }
    let problem = if crate::log::read::is_conflict_marker(line.as_bytes()) {
        "a merge conflict marker: remove the marker lines and keep the events of both sides"
            .to_owned()
    } else {
        let why = match projections::decode_line(line) {
            Err(e) => e.to_string(),
            Ok(e) => unappliable_set(&e)?,
        };
        format!(
            "not an intact event ({why}); a log holds only lines memlog wrote: restore the \
             committed file with `git checkout HEAD -- {path}` (then `git add` it) or remove the \
             line, and record changes with memlog commands"
        )
    };
    Some(DamagedLine {
        path: path.to_owned(),
        line: line_no,
        problem: crate::policy::validate::redact_secrets(&problem),
    })
}

/// Why the `set` of an update or resolve cannot apply to any entry (a value of the wrong type
/// or outside its vocabulary: `verify` would report it in every clone); `None` when it can, or
/// for other events.
fn unappliable_set(e: &projections::Event) -> Option<String> {
    let (projections::EventData::Update { set, .. } | projections::EventData::Resolve { set, .. }) =
        &e.data
    else {
        return None;
    };
    let any: projections::EntryFields = serde_json::from_value(serde_json::json!({
        "section": "decisions", "kind": "decision", "subject": "s", "scope": "repo",
        "summary": "s", "content": "c", "tags": [], "confidence": 0.5, "evidence": [],
        "related_entries": []
    }))
    .ok()?;
    projections::fold::apply_set_to(&any, set).err()
}

/// An event line is scanned field by field, as the write policy checks an entry: the JSON
/// around the values (ids, hashes, keys) is not text and would only confuse the prose rules.
/// A line that is not an event is scanned as text.
fn scan_event_line(path: &str, line_no: usize, line: &str) -> Vec<StagedFinding> {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(line) else {
        return crate::policy::secret_scan::scan_document(line)
            .into_iter()
            .map(|f| StagedFinding {
                path: path.to_owned(),
                line: line_no,
                column: f.column,
                field: None,
                rule: f.rule,
                description: f.description,
            })
            .collect();
    };
    // Every member but the ids and hashes an event is made of, and every key: a line may look
    // like an event and still carry text anywhere (an edit by hand, another tool's import).
    let mut strings = Vec::new();
    for (key, v) in &map {
        use projections::event::{is_entry_id, is_event_id};
        let hash_like = match key.as_str() {
            "id" | "purged_by" => v.as_str().is_some_and(is_event_id),
            "entry" => v.as_str().is_some_and(is_entry_id),
            "parents" => v
                .as_array()
                .is_some_and(|a| a.iter().all(|p| p.as_str().is_some_and(is_event_id))),
            _ => false,
        };
        strings.push(("a top-level key".to_owned(), key.clone()));
        if !hash_like {
            collect_strings(key.clone(), v, &mut strings);
        }
    }
    let mut out = Vec::new();
    for (field, text) in strings {
        let is_uri = field.ends_with(".uri");
        let found = if is_uri {
            crate::policy::secret_scan::scan_uri(&text)
        } else {
            crate::policy::secret_scan::scan_text(&text)
        };
        out.extend(found.into_iter().map(|f| StagedFinding {
            path: path.to_owned(),
            line: line_no,
            column: f.column,
            // A path through a key that is itself a credential must not show it.
            field: Some(crate::policy::validate::redact_secrets(&field)),
            rule: f.rule,
            description: f.description,
        }));
    }
    out
}

fn collect_strings(at: String, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) => out.push((at, s.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect_strings(format!("{at}[{i}]"), item, out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                out.push((format!("a key of {at}"), k.clone()));
                collect_strings(format!("{at}.{k}"), item, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::added_hunks;

    #[test]
    fn quoted_and_spaced_paths_are_read_as_git_means_them() {
        use super::diff_path;
        assert_eq!(
            diff_path(r#""b/ai-context/\303\261otes.md""#).as_deref(),
            Some("b/ai-context/ñotes.md")
        );
        assert_eq!(
            diff_path(r#""b/ai-context/q\"t\tx.md""#).as_deref(),
            Some("b/ai-context/q\"t\tx.md")
        );
        assert_eq!(
            diff_path("b/ai-context/with space.md\t").as_deref(),
            Some("b/ai-context/with space.md")
        );
        assert_eq!(diff_path("/dev/null"), None);
    }

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
