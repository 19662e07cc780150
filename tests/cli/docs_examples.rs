//! The examples of the documentation print what the pages show: each `$ ` command of a page's
//! code blocks runs, in order, in the workspace the page describes, with its actor and clock,
//! and what it prints (standard output and standard error as a terminal shows them) must be the
//! lines under it. An example whose shown output is shortened (a `...` line), and a `git`
//! command (whose messages differ between git versions), runs but is not compared.

use crate::common::{Env, bin, isolate_git};
use std::path::Path;
use std::process::Command;

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the examples of `page` in `ws`; `shown_ws` is the workspace path the page prints.
/// Returns how many outputs were compared.
fn check_examples(page: &str, ws: &Path, now: &str, shown_ws: Option<&str>) -> usize {
    let bin_dir = Path::new(bin())
        .parent()
        .unwrap_or_else(|| panic!("no parent"));
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let text = std::fs::read_to_string(manifest().join(page)).unwrap_or_else(|e| panic!("{e}"));
    let mut compared = 0;
    for block in text.split("\n```").skip(1).step_by(2) {
        let lines: Vec<&str> = block.lines().skip(1).collect();
        let starts: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].starts_with("$ "))
            .collect();
        for (k, &i) in starts.iter().enumerate() {
            let end = starts.get(k + 1).copied().unwrap_or(lines.len());
            let shown = lines[i + 1..end].join("\n");
            let command = &lines[i][2..];
            let mut bash = Command::new("bash");
            let o = isolate_git(&mut bash)
                .args(["-c", &format!("exec 2>&1\n{command}")])
                .current_dir(ws)
                .env("PATH", &path)
                .env("MEMLOG_ACTOR", "agent-7")
                .env("MEMLOG_NOW", now)
                .env_remove("MEMLOG_WORKSPACE")
                .env_remove("MEMLOG_PROJECT")
                .env_remove("MEMLOG_LOCK_TIMEOUT_MS")
                .output()
                .unwrap_or_else(|e| panic!("bash: {e}"));
            // git's own messages differ between its versions: git commands run, unchecked.
            if shown.lines().any(|l| l.trim() == "...") || command.starts_with("git ") {
                continue;
            }
            let mut printed = String::from_utf8_lossy(&o.stdout).into_owned();
            if let Some(shown_ws) = shown_ws {
                printed = printed.replace(&ws.display().to_string(), shown_ws);
            }
            assert_eq!(
                printed.trim_end(),
                shown.trim_end(),
                "{page}: `{command}` printed something else than the page shows"
            );
            compared += 1;
        }
    }
    compared
}

#[test]
fn the_examples_of_retrieval_md_print_what_the_page_shows() {
    let env = Env::new();
    let ws = env.dir.path().join("examples");
    let built = Command::new("bash")
        .arg(manifest().join("examples/retrieval.sh"))
        .arg(&ws)
        .env("MEMLOG", bin())
        .env_remove("MEMLOG_WORKSPACE")
        .env_remove("MEMLOG_PROJECT")
        .output()
        .unwrap_or_else(|e| panic!("bash: {e}"));
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let compared = check_examples("docs/RETRIEVAL.md", &ws, "2026-11-22T10:00:00Z", None);
    assert!(compared >= 5, "only {compared} examples compared");
}

#[test]
fn the_examples_of_the_guide_print_what_the_page_shows() {
    let env = Env::new();
    let ws = env.dir.path().join("guide-repo");
    std::fs::create_dir(&ws).unwrap_or_else(|e| panic!("{e}"));
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .output()
        .unwrap_or_else(|e| panic!("git: {e}"));
    assert!(init.status.success());
    let compared = check_examples(
        "docs/GUIDE.md",
        &ws,
        "2026-11-22T10:31:12.123Z",
        Some("/tmp/guide/guide-repo"),
    );
    assert!(compared >= 20, "only {compared} examples compared");
}

/// Each warning of docs/WRITE_POLICY.md's table is one the code gives (`rule: "<name>"` in a
/// source file): the page lists no warning that does not exist.
#[test]
fn the_write_policy_lists_only_warnings_the_code_gives() {
    let page = std::fs::read_to_string(manifest().join("docs/WRITE_POLICY.md"))
        .unwrap_or_else(|e| panic!("{e}"));
    let table = page
        .split("| warning | when |")
        .nth(1)
        .unwrap_or_else(|| panic!("no warning table in docs/WRITE_POLICY.md"));
    let rules: Vec<&str> = table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('`').nth(1))
        .collect();
    assert!(rules.len() >= 3, "{rules:?}");
    let mut sources = String::new();
    let mut dirs = vec![manifest().join("src")];
    while let Some(dir) = dirs.pop() {
        for item in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{e}")) {
            let path = item.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                sources.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    for rule in rules {
        assert!(
            sources.contains(&format!("rule: \"{rule}\"")),
            "docs/WRITE_POLICY.md lists the warning `{rule}`, which no code gives"
        );
    }
}

/// README.md says how a bulk `apply` appends as the code does: every `append_every` updates,
/// not in one append.
#[test]
fn the_readme_says_how_often_a_bulk_apply_appends() {
    let readme =
        std::fs::read_to_string(manifest().join("README.md")).unwrap_or_else(|e| panic!("{e}"));
    let every = memlog::store::tuning::append_every();
    let shown = format!("{},{:03}", every / 1000, every % 1000);
    assert!(
        readme.contains(&format!("one fsync every {shown} updates")),
        "README.md should say that a bulk apply appends every {shown} updates"
    );
    assert!(!readme.contains("one batch with one append"));
}

/// MCP.md's sessions by hand run as the page says: an answer to every request, the entry
/// created by the first and found by the second.
#[test]
fn the_mcp_sessions_by_hand_answer_every_request() {
    let text =
        std::fs::read_to_string(manifest().join("docs/MCP.md")).unwrap_or_else(|e| panic!("{e}"));
    let block = |file: &str| -> String {
        let (_, after) = text
            .split_once(&format!("as `{file}`:\n\n```json\n"))
            .unwrap_or_else(|| panic!("MCP.md has no {file}"));
        let (lines, _) = after
            .split_once("```")
            .unwrap_or_else(|| panic!("unclosed block"));
        lines.to_owned()
    };
    let env = Env::new();
    env.run(&["init", "auth-service"]).ok();
    // The answers of a session, by id (they may come in another order).
    let session = |file: &str| -> Vec<serde_json::Value> {
        let r = crate::common::stdin_run(&env, &["mcp"], block(file).as_bytes()).ok();
        let mut answers: Vec<serde_json::Value> = r
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        answers.sort_by_key(|a| a["id"].as_i64());
        assert!(
            answers.iter().all(|a| a.get("error").is_none()),
            "{}",
            r.stdout
        );
        answers
    };
    let first = session("session.jsonl");
    let ids: Vec<i64> = first.iter().filter_map(|a| a["id"].as_i64()).collect();
    assert_eq!(ids, [1, 2, 3]);
    let tools = first[1]["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(tools.iter().any(|t| t["name"] == "query"));
    let created = first[2]["result"]["structuredContent"]["results"]["entry"].clone();
    let second = session("query.jsonl");
    let found = &second[1]["result"]["structuredContent"]["results"][0];
    assert_eq!(found["id"], created["id"], "{second:?}");
    assert_eq!(found["summary"], "Use short-lived JWTs");
}
