//! The foundation's promises under abuse: reads answer for the log on disk, nothing committed is
//! dropped, a broken store heals, and every text that enters the log is checked.

use crate::common::{Env, NOW, Run, add_args, git, stdin_run};
use std::io::Write;

/// `add` of a learning (kind other, scope repo, confidence 0.7).
fn note<'a>(
    subject: &'a str,
    summary: &'a str,
    content: &'a str,
    evidence: &'a str,
) -> Vec<&'a str> {
    crate::common::add_args(
        ("learnings", "other"),
        subject,
        summary,
        content,
        "0.7",
        evidence,
    )
}

fn replace_file(path: &std::path::Path, bytes: &[u8]) {
    // As git does on checkout: a new file renamed over the old one.
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).unwrap_or_else(|e| panic!("{e}"));
    std::fs::rename(&tmp, path).unwrap_or_else(|e| panic!("{e}"));
}

fn pinned(env: &Env, id: &str) -> bool {
    env.run(&["show", id, "--json"]).ok().json()["pinned"] == true
}

fn read(path: &std::path::Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

#[test]
fn a_same_length_rewrite_is_seen_by_the_next_read() {
    let env = Env::with_project();
    let e1 = env.add("a", "first");
    let e2 = env.add("b", "second");
    let base = read(&env.log());
    env.run(&["pin", &e1]).ok();
    let with_e1 = read(&env.log());
    replace_file(&env.log(), &base);
    assert!(!pinned(&env, &e1));
    env.run(&["pin", &e2]).ok();
    let with_e2 = read(&env.log());
    assert_eq!(
        with_e1.len(),
        with_e2.len(),
        "the two logs differ in one line of equal length"
    );
    assert_ne!(with_e1, with_e2);
    for _ in 0..2 {
        replace_file(&env.log(), &with_e1);
        assert!(pinned(&env, &e1) && !pinned(&env, &e2));
        replace_file(&env.log(), &with_e2);
        assert!(pinned(&env, &e2) && !pinned(&env, &e1));
    }
    // The same swap written in place (same file, same length) is seen too.
    std::fs::OpenOptions::new()
        .write(true)
        .open(env.log())
        .and_then(|mut f| f.write_all(&with_e1))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(pinned(&env, &e1) && !pinned(&env, &e2));
    assert_eq!(env.run(&["verify"]).code, 0);
}

#[test]
fn a_damaged_log_is_never_served_from_an_older_store() {
    let env = Env::with_project();
    env.add("a", "first");
    let b = env.add("b", "second");
    env.add("c", "third");
    assert_eq!(env.listed(), Some(3));
    let good = read(&env.log());
    let text = String::from_utf8(good.clone()).unwrap_or_default();
    let second = text.lines().nth(1).unwrap_or_default().len()
        + text.lines().next().unwrap_or_default().len()
        + 1;
    let at = text[..second]
        .rfind("second")
        .unwrap_or_else(|| panic!("no summary in {text}"));
    let mut damaged = good.clone();
    damaged[at] = b'S'; // one character, same length
    std::fs::OpenOptions::new()
        .write(true)
        .open(env.log())
        .and_then(|mut f| f.write_all(&damaged))
        .unwrap_or_else(|e| panic!("{e}"));
    for args in [
        vec!["list", "--json"],
        vec!["show", b.as_str(), "--json"],
        vec!["stats", "--json"],
        vec!["rebuild", "--json"],
        vec!["list", "--json"],
    ] {
        let r = env.run(&args);
        assert_eq!(
            r.code, 6,
            "{args:?} must refuse the damaged log: {}",
            r.stdout
        );
        assert_eq!(r.json()["error"]["code"], "CORRUPT_LOG", "{args:?}");
        assert_eq!(r.json()["error"]["details"]["line"], 2, "{args:?}");
    }
    let before = read(&env.log());
    let r = env.run(&note("d", "on top", "c", "doc:docs/a.md:n"));
    assert_eq!(r.code, 6, "no write on top of a damaged log: {}", r.stderr);
    assert_eq!(read(&env.log()), before, "nothing appended");
    replace_file(&env.log(), &good);
    assert_eq!(env.listed(), Some(3));
}

#[test]
fn a_last_line_missing_only_its_newline_is_kept() {
    let env = Env::with_project();
    env.add("a", "first");
    env.add("b", "second");
    let full = read(&env.log());
    std::fs::write(env.log(), &full[..full.len() - 1]).unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["list", "--json"]).ok();
    assert_eq!(r.json().as_array().map(Vec::len), Some(2));
    assert!(r.stdout.contains("newline was added"), "{}", r.stdout);
    assert_eq!(
        read(&env.log()),
        full,
        "the log is whole again, nothing removed"
    );
    assert!(read(&env.root().join("ai-memory/demo/.memlog/quarantine.jsonl")).is_empty());
    // The same through a write: the event is kept and the new one follows it.
    std::fs::write(env.log(), &full[..full.len() - 1]).unwrap_or_else(|e| panic!("{e}"));
    env.add("c", "third");
    assert_eq!(env.run(&["verify"]).code, 0);
    assert_eq!(env.listed(), Some(3));
}

#[test]
fn a_broken_store_is_rebuilt_and_leftovers_are_removed() {
    let env = Env::with_project();
    env.add("a", "first");
    env.add("b", "second");
    let state = env.root().join("ai-memory/demo/.memlog");
    let store = state.join("store");
    fn scribble(dir: &std::path::Path) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                scribble(&p);
            } else if p.file_name().is_some_and(|n| n != "lock") {
                std::fs::write(&p, b"garbage garbage garbage").unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
    scribble(&store);
    let r = env.run(&["list", "--json"]).ok();
    assert_eq!(r.json().as_array().map(Vec::len), Some(2), "{}", r.stderr);
    assert!(
        r.stdout.contains("rebuilt"),
        "the rebuild is reported: {}",
        r.stdout
    );
    scribble(&store);
    env.run(&["rebuild"]).ok();
    std::fs::create_dir_all(state.join("store.building/x")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(state.join("store.retired/y")).unwrap_or_else(|e| panic!("{e}"));
    // What a rebuild leaves when it could not remove the `store.retired` before it.
    std::fs::create_dir_all(state.join("store.retired-7-1700000000/z"))
        .unwrap_or_else(|e| panic!("{e}"));
    env.run(&["list"]).ok();
    assert!(!state.join("store.building").exists() && !state.join("store.retired").exists());
    assert!(!state.join("store.retired-7-1700000000").exists());
    // Deleting the whole local state while nothing runs is not an error either.
    std::fs::remove_dir_all(&state).unwrap_or_else(|e| panic!("{e}"));
    env.add("c", "third");
    assert_eq!(env.listed(), Some(3));
}

#[test]
fn preconditions_are_checked_against_the_real_change() {
    let env = Env::with_project();
    let a = env.add("a", "first");
    env.run(&["deprecate", &a, "--reason", "old"]).ok();
    let r = env
        .run(&["update", &a, "--confidence", "0.6", "--json"])
        .ok();
    assert_eq!(r.json()["entry"]["confidence"], 0.6);
    let b = env.add("b", "second");
    let c = env
        .run(&["supersede", &b, "--summary", "second, revised"])
        .ok();
    let again = env.run(&["supersede", &b, "--summary", "second, again"]);
    assert_eq!(again.code, 3, "{}", again.stderr);
    assert!(
        again.stderr.contains("supersede that entry instead")
            && !again.stderr.contains("deprecate"),
        "{}",
        again.stderr
    );
    assert!(
        again
            .stderr
            .contains(c.stdout.split_whitespace().next().unwrap_or("?"))
    );
}

/// An update that would change nothing is refused, as a repeated pin is, and writes no
/// version; with a reason it is a review that found nothing to change, and is recorded.
#[test]
fn an_update_that_changes_nothing_is_refused() {
    let env = Env::with_project();
    let id = env.add("same", "Unchanged entry");
    let before = read(&env.log());
    let shown = env.run(&["show", &id, "--json"]).ok().json();
    let confidence = shown["confidence"].to_string();
    let content = shown["content"].as_str().unwrap_or_default().to_owned();
    for args in [
        vec!["--content", content.as_str()],
        vec!["--confidence", confidence.as_str(), "--status", "active"],
        vec!["--tag", "test"],
        vec!["--clear-valid-to"],
    ] {
        let mut update = vec!["update", id.as_str()];
        update.extend(args.iter().copied());
        let r = env.run(&update);
        assert_eq!(r.code, 3, "{args:?}: {}", r.stderr);
        assert_eq!(
            r.stderr,
            format!(
                "error: {id} already has these values: the update would change nothing, and \
                 nothing was written; give a value that differs, or --reason TEXT to record a \
                 review that found nothing to change\n"
            )
        );
    }
    assert_eq!(read(&env.log()), before);
    env.run(&["update", &id, "--content", &content, "--reason", "reviewed"])
        .ok();
    let versions = env.run(&["history", &id, "--json"]).ok().json();
    assert_eq!(versions.as_array().map(Vec::len), Some(2), "{versions}");
}

/// An update dated before the entry's latest change (a `--now` or a clock behind it) is
/// refused, naming that change's time and the fix, and writes nothing: an update comes after
/// the version it changes, and an import refuses an update event that does not.
#[test]
fn an_update_dated_before_the_entrys_last_change_is_refused() {
    let env = Env::with_project();
    let id = env.add("dated", "Entry written now");
    let before = read(&env.log());
    let r = env.run_at(
        "2026-01-01T00:00:00Z",
        &["update", &id, "--confidence", "0.7"],
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("{id} has an event dated {NOW}"))
            && r.stderr
                .contains("after this change's time 2026-01-01T00:00:00.000Z")
            && r.stderr.contains(&format!("use a --now at or after {NOW}")),
        "{}",
        r.stderr
    );
    assert_eq!(read(&env.log()), before);
    // At the same time or later, it is written.
    env.run(&["update", &id, "--confidence", "0.7"]).ok();
}

#[test]
fn a_missing_configuration_is_named_and_no_other_project_is_used() {
    let env = Env::with_project();
    env.add("a", "first");
    std::fs::remove_file(env.root().join("ai-memory/demo/memlog.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    let global = env.root().join("ai-memory/global/events.jsonl");
    let before = read(&global);
    let listed = env.run(&["list"]);
    assert_ne!(listed.code, 0);
    assert!(
        listed.stderr.contains("memlog.json") && listed.stderr.contains("git checkout"),
        "{}",
        listed.stderr
    );
    let added = env.run(&note("d", "where does this go", "c", "doc:docs/a.md:n"));
    assert_ne!(added.code, 0, "{}", added.stdout);
    assert_eq!(read(&global), before, "nothing written to global");
    env.run(&["init", "demo"]).ok();
    assert_eq!(env.listed(), Some(1));
}

/// A `memlog.json` that is a directory is named as one, with the fix, by every command and by
/// `init` (which must not call the project initialized); once it is removed, `init` writes the
/// default configuration.
#[test]
fn a_configuration_that_is_a_directory_is_named_with_the_fix() {
    let env = Env::with_project();
    env.add("a", "first");
    let config = env.root().join("ai-memory/demo/memlog.json");
    std::fs::remove_file(&config).unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir(&config).unwrap_or_else(|e| panic!("{e}"));
    for args in [
        &["list"][..],
        &["config", "validate", "demo"],
        &["init", "demo"],
    ] {
        let r = env.run(args);
        assert_ne!(r.code, 0, "{args:?}: {}", r.stdout);
        assert!(
            r.stderr.contains("is a directory")
                && r.stderr.contains("rm -r ai-memory/demo/memlog.json")
                && r.stderr.contains("memlog init demo"),
            "{args:?}: {}",
            r.stderr
        );
    }
    assert!(config.is_dir(), "nothing changed");
    std::fs::remove_dir(&config).unwrap_or_else(|e| panic!("{e}"));
    env.run(&["init", "demo"]).ok();
    assert_eq!(env.listed(), Some(1));
}

#[test]
fn a_deleted_event_is_reported_loudly() {
    let env = Env::with_project();
    let a = env.add("a", "first");
    env.run(&["pin", &a]).ok();
    env.add("b", "second");
    let text = String::from_utf8(read(&env.log())).unwrap_or_default();
    let without_create: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    replace_file(&env.log(), without_create.as_bytes());
    let listed = env.run(&["list"]).ok();
    assert!(
        listed.stderr.contains("not in the log"),
        "{}",
        listed.stderr
    );
    let rebuilt = env.run(&["rebuild"]).ok();
    assert!(
        rebuilt.stderr.contains("not in the log"),
        "{}",
        rebuilt.stderr
    );
    assert_eq!(env.run(&["verify"]).code, 1);
}

#[test]
fn git_conflict_markers_are_named_with_the_way_out() {
    let env = Env::with_project();
    env.add("a", "first");
    let text = String::from_utf8(read(&env.log())).unwrap_or_default();
    let marked = format!("<<<<<<< HEAD\n{text}=======\n{text}>>>>>>> b\n");
    replace_file(&env.log(), marked.as_bytes());
    for args in [vec!["list"], vec!["verify"]] {
        let r = env.run(&args);
        assert_ne!(r.code, 0);
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(
            all.contains("conflict marker")
                && all.contains("delete the marker lines")
                && all.contains("ai-memory/.gitattributes"),
            "{args:?}: {all}"
        );
        // During a merge `git checkout -- <file>` fails: it is not offered.
        assert!(!all.contains("git checkout --"), "{args:?}: {all}");
    }
}

/// Obviously fake tokens of real formats.
const FAKE_GITHUB: &str = "ghp_Zq8v3Lk2Rm7Tn1Wp4Xs9Yd6Fb0Hc5Jg2Ka8Q";
const FAKE_AWS: &str = "AKIAQ7ZJ4R2WXN6TB3KD";

#[test]
fn every_text_that_enters_an_event_is_scanned() {
    let env = Env::with_project();
    let a = env.add("a", "first");
    let before = read(&env.log());
    let reason = format!("token {FAKE_GITHUB}");
    let key = format!("rotated key {FAKE_AWS}");
    let runs = [
        env.run(&["deprecate", &a, "--reason", &reason]),
        env.run(&["update", &a, "--confidence", "0.7", "--reason", &key]),
        env.run(&["pin", &a, "--reason", &reason]),
        stdin_run(
            &env,
            &["apply", "-"],
            format!(r#"{{"operation":"deprecate","target_id":"{a}","reason":"{key}"}}"#).as_bytes(),
        ),
    ];
    for r in runs {
        assert_eq!(r.code, 3, "refused: {} {}", r.stdout, r.stderr);
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(
            all.contains("secret") || all.contains("looks like"),
            "{all}"
        );
        assert!(
            !all.contains(FAKE_GITHUB) && !all.contains(FAKE_AWS),
            "never echoed: {all}"
        );
    }
    // As the actor, a credential is a bad setting (exit 2).
    let r = env.run(&["--actor", FAKE_GITHUB, "pin", &a]);
    assert_eq!(r.code, 2, "refused: {}", r.stderr);
    assert!(
        r.stderr.contains("looks like") && !r.stderr.contains(FAKE_GITHUB),
        "{}",
        r.stderr
    );
    assert_eq!(read(&env.log()), before, "nothing written");
}

#[test]
fn promoting_a_draft_runs_every_check_a_create_runs() {
    let env = Env::with_project();
    let active = env.add("a", "the same thing");
    let draft = env
        .run(&[
            "add",
            "--section",
            "decisions",
            "--kind",
            "decision",
            "--subject",
            "a",
            "--scope",
            "repo",
            "--summary",
            "the same thing",
            "--content",
            "a draft copy",
            "--confidence",
            "0.8",
            "--status",
            "draft",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    let r = env.run(&["update", &draft, "--status", "active"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains(&active),
        "names the active duplicate: {}",
        r.stderr
    );
    let hypothesis = env
        .run(&[
            "add",
            "--section",
            "learnings",
            "--kind",
            "hypothesis",
            "--subject",
            "h",
            "--scope",
            "repo",
            "--summary",
            "maybe",
            "--content",
            "no evidence yet",
            "--confidence",
            "0.5",
            "--status",
            "draft",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    let r = env.run(&["update", &hypothesis, "--status", "active"]);
    assert_eq!(r.code, 3, "an active entry needs evidence: {}", r.stderr);
    assert!(r.stderr.contains("evidence"), "{}", r.stderr);
}

fn create_line(i: usize, summary: &str) -> String {
    format!(
        r#"{{"operation":"create","entry":{{"section":"learnings","kind":"other","subject":"s{i}","scope":"repo","summary":"{summary}","content":"c","confidence":0.7,"evidence":[{{"type":"doc","uri":"docs/a.md","note":"n"}}]}}}}"#
    )
}

#[test]
fn validate_and_apply_agree_on_a_batch() {
    let env = Env::with_project();
    let batch = format!("{}\n{}\n", create_line(1, "same"), create_line(1, "same"));
    let v = stdin_run(&env, &["validate", "--json", "-"], batch.as_bytes());
    let verdicts = v.json();
    assert_eq!(verdicts[0]["valid"], true, "{verdicts}");
    assert_eq!(verdicts[1]["valid"], false, "{verdicts}");
    let a = stdin_run(&env, &["apply", "--json", "-"], batch.as_bytes());
    let report = a.json();
    assert_eq!(
        report["applied"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    assert_eq!(report["skipped"][0]["index"], 2, "{report}");
    // A retry of the same create names the entry it would duplicate instead of adding one.
    let retry = stdin_run(
        &env,
        &["apply", "--json", "-"],
        create_line(1, "same").as_bytes(),
    );
    assert_eq!(retry.code, 3);
    assert_eq!(env.listed(), Some(1));
}

#[test]
fn validate_resolves_the_project_as_apply_does() {
    let env = Env::with_project();
    env.run(&["init", "other"]).ok();
    let file = env.root().join("update.json");
    std::fs::write(&file, create_line(1, "one")).unwrap_or_else(|e| panic!("{e}"));
    let file = file.display().to_string();
    let apply = env.run(&["apply", &file]);
    let validate = env.run(&["validate", &file]);
    assert_eq!(apply.code, 2, "{}", apply.stderr);
    assert_eq!(validate.code, 2, "{}{}", validate.stdout, validate.stderr);
    assert_eq!(validate.stderr, apply.stderr);
    assert!(
        validate.stderr.contains("no project given"),
        "{}",
        validate.stderr
    );
    assert_eq!(env.run(&["validate", "-p", "demo", &file]).ok().code, 0);
}

#[test]
fn a_large_json_lines_import_is_one_batch_and_a_hostile_one_stays_small() {
    let env = Env::with_project();
    let good: String = (0..300)
        .map(|i| create_line(i, &format!("note {i}")) + "\n")
        .collect();
    let r = stdin_run(&env, &["apply", "-"], good.as_bytes()).ok();
    assert_eq!(r.stdout.lines().count(), 300);
    assert!(
        r.stderr.matches("consider consolidating").count() <= 1,
        "the size warning is said once: {}",
        r.stderr
    );
    assert_eq!(
        String::from_utf8(read(&env.log()))
            .unwrap_or_default()
            .lines()
            .count(),
        300
    );
    let hostile: String = (0..20_000)
        .map(|i| format!(r#"{{"operation":"deprecate","target_id":"m-nosuch{i:06}"}}"#) + "\n")
        .collect();
    let before = read(&env.log());
    let r = stdin_run(&env, &["apply", "-"], hostile.as_bytes());
    assert_eq!(r.code, 3);
    assert!(
        r.stderr.len() < 8192,
        "bounded output: {} bytes",
        r.stderr.len()
    );
    assert!(
        r.stderr.contains("20000 skipped"),
        "{}",
        &r.stderr[r.stderr.len().saturating_sub(300)..]
    );
    assert_eq!(read(&env.log()), before);
}

/// The numbers of the updates an `apply --json` report skipped.
fn skipped_indexes(report: &serde_json::Value) -> Vec<u64> {
    report["skipped"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["index"].as_u64())
        .collect()
}

#[test]
fn an_overlong_line_is_one_refused_update_whatever_it_hides() {
    let env = Env::with_project();
    let kept = env.add("kept", "Kept entry");
    // A line past 16 MiB whose tail, after the cut, would parse as an update of its own.
    let head = r#"{"note":""#;
    let limit = 16 * 1024 * 1024;
    let mut long = String::with_capacity(limit + 4096);
    long.push_str(head);
    long.push_str(&"a".repeat(limit - head.len() - 1000));
    long.push_str(&" ".repeat(2000));
    long.push_str(&format!(
        r#"{{"operation":"deprecate","target_id":"{kept}","reason":"hidden"}}"#
    ));
    let input = format!(
        "{}\n{long}\n{}\n",
        r#"{"operation":"deprecate","target_id":"m-zzzzzzzzzz"}"#,
        create_line(7, "after the long line")
    );
    let r = stdin_run(&env, &["apply", "--json", "-"], input.as_bytes());
    assert_eq!(r.code, 1, "{}", r.stderr);
    let report = r.json();
    let skipped = skipped_indexes(&report);
    assert_eq!(skipped, [1, 2], "{report}");
    assert_eq!(report["applied"][0]["index"], 3, "{report}");
    let shown = env.run(&["show", &kept, "--json"]).ok().json();
    assert_eq!(shown["status"], "active", "{shown}");
}

#[test]
fn a_key_stated_twice_is_refused_not_guessed() {
    let env = Env::with_project();
    let kept = env.add("kept", "Kept entry");
    let before = read(&env.log());
    // serde_json alone would keep the last `operation`: a deprecate.
    let twice = format!(
        r#"{{"operation":"create","operation":"deprecate","target_id":"{kept}","entry":{{"summary":"x"}}}}"#
    );
    let r = stdin_run(&env, &["apply", "--json", "-"], twice.as_bytes());
    assert_eq!(r.code, 3, "{}", r.stdout);
    assert!(
        r.stdout.contains("`operation` is stated twice"),
        "{}",
        r.stdout
    );
    assert_eq!(read(&env.log()), before);
    // In JSON Lines, that line alone is refused, wherever it is.
    let mut nested = create_line(2, "second");
    nested = nested.replacen(r#""confidence":"#, r#""confidence":0.1,"confidence":"#, 1);
    let input = format!("{twice}\n{}\n{nested}\n", create_line(1, "first"));
    let r = stdin_run(&env, &["apply", "--json", "-"], input.as_bytes());
    assert_eq!(r.code, 1, "{}", r.stdout);
    let report = r.json();
    let skipped = skipped_indexes(&report);
    assert_eq!(skipped, [1, 3], "{report}");
    assert_eq!(report["applied"][0]["index"], 2, "{report}");
    let shown = env.run(&["show", &kept, "--json"]).ok().json();
    assert_eq!(shown["status"], "active", "{shown}");
}

fn active_ids(env: &Env) -> Vec<String> {
    let listed = env.run(&["list", "--json"]).ok().json();
    let mut ids: Vec<String> = listed
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["status"] == "active")
        .filter_map(|e| e["id"].as_str().map(str::to_owned))
        .collect();
    ids.sort();
    ids
}

#[test]
fn concurrent_supersedes_are_settled_by_choosing_a_winner() {
    let env = Env::new();
    git(&env, &["init", "-q", "-b", "main"]);
    env.run(&["init", "demo"]).ok();
    let old = env.add("auth.tokens", "Use long-lived tokens");
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "base"]);
    git(&env, &["checkout", "-qb", "a"]);
    let first = env
        .run_at(
            "2026-11-23T00:00:00Z",
            &["supersede", &old, "--summary", "Use 15-minute tokens"],
        )
        .ok()
        .stdout;
    let b1 = first
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    let same_a = env
        .run_at(
            "2026-11-23T00:00:05Z",
            &note(
                "ci",
                "CI needs 4 GB",
                "seen on branch a",
                "log:ci/run.log:oom",
            ),
        )
        .ok();
    git(&env, &["commit", "-qam", "a"]);
    git(&env, &["checkout", "-q", "main"]);
    let second = env
        .run_at(
            "2026-11-23T00:00:01Z",
            &["supersede", &old, "--summary", "Use 10-minute tokens"],
        )
        .ok()
        .stdout;
    let b2 = second
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    let same_b = env
        .run_at(
            "2026-11-23T00:00:06Z",
            &note("ci", "CI needs 4 GB", "seen on main", "log:ci/run.log:oom"),
        )
        .ok();
    git(&env, &["commit", "-qam", "b"]);
    git(&env, &["merge", "-q", "--no-edit", "a"]);

    // The merge is caught up with both replacements, and the same note from both branches is
    // reported as a duplicate.
    let listed = env.run(&["list"]).ok();
    assert!(
        listed.stderr.contains("same subject, scope and summary"),
        "{}",
        listed.stderr
    );
    assert!(
        listed.stderr.contains(same_a.stdout.trim())
            || listed.stderr.contains(same_b.stdout.trim())
    );
    let shown = env.run(&["show", &old, "--json"]).ok().json();
    assert_eq!(shown["heads"].as_array().map(Vec::len), Some(2), "{shown}");
    // Reviving the replaced entry is refused; resolving needs a winner.
    // After both branches: a change is not dated before its entry's latest event.
    let after = "2026-11-24T00:00:00Z";
    let revive = env.run_at(after, &["resolve", &old, "--status", "active"]);
    assert_eq!(revive.code, 3, "{}", revive.stderr);
    let vague = env.run_at(after, &["resolve", &old]);
    assert_eq!(vague.code, 3);
    assert!(
        vague.stderr.contains("--winner")
            && vague.stderr.contains(&b1)
            && vague.stderr.contains(&b2),
        "{}",
        vague.stderr
    );
    env.run_at(
        after,
        &[
            "resolve",
            &old,
            "--winner",
            &b1,
            "--reason",
            "shorter is not needed",
        ],
    )
    .ok();
    let shown = env.run(&["show", &old, "--json"]).ok().json();
    assert_eq!(shown["heads"].as_array().map(Vec::len), Some(1), "{shown}");
    assert_eq!(shown["superseded_by"], b1.as_str());
    let loser = env.run(&["show", &b2, "--json"]).ok().json();
    assert_eq!(loser["status"], "superseded");
    assert_eq!(loser["superseded_by"], b1.as_str());
    let active = active_ids(&env);
    assert!(
        active.contains(&b1) && !active.contains(&b2) && !active.contains(&old),
        "{active:?}"
    );
    let audit = env.run(&["audit", &b2]).ok().stdout;
    assert!(audit.contains("lost a concurrent supersede"), "{audit}");
    // Settled: resolving again is refused as for any entry without a conflict, not sent back
    // to choose a winner.
    let again = env.run_at(after, &["resolve", &old]);
    assert_eq!(again.code, 3, "{}", again.stderr);
    assert!(
        again.stderr.contains("has no conflict to resolve") && !again.stderr.contains("--winner"),
        "{}",
        again.stderr
    );
    assert_eq!(env.run(&["verify"]).code, 0);
}

#[test]
fn every_problem_of_an_update_is_reported_at_once_and_an_assumption_needs_no_uri() {
    let env = Env::with_project();
    let bad = format!(
        r#"{{"operation":"create","entry":{{"section":"learnings","kind":"other","subject":"s","scope":"repo","summary":"x","content":"key {FAKE_AWS}","confidence":7,"evidence":[{{"type":"doc","uri":"docs/a.md","note":"n"}}]}}}}"#
    );
    let v = stdin_run(&env, &["validate", "--json", "-"], bad.as_bytes()).json();
    let fields: Vec<&str> = v[0]["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["field"].as_str())
        .collect();
    assert!(
        fields.contains(&"entry.confidence") && fields.contains(&"entry.content"),
        "{v}"
    );
    let assumption = r#"{"operation":"create","entry":{"section":"learnings","kind":"hypothesis","subject":"s","scope":"repo","summary":"guess","content":"c","confidence":0.6,"status":"draft","evidence":[{"type":"assumption","note":"nobody measured it yet"}]}}"#;
    let v = stdin_run(&env, &["validate", "--json", "-"], assumption.as_bytes()).json();
    assert_eq!(v[0]["valid"], true, "{v}");
    stdin_run(&env, &["apply", "-"], assumption.as_bytes()).ok();
}

#[test]
fn a_write_that_reached_the_log_is_reported_as_written_even_if_the_store_fails() {
    let env = Env::with_project();
    let args = [
        "add",
        "--section",
        "learnings",
        "--kind",
        "other",
        "--subject",
        "s",
        "--scope",
        "repo",
        "--summary",
        "durable",
        "--content",
        "c",
        "--confidence",
        "0.7",
        "--evidence",
        "doc:docs/a.md:n",
        "--json",
    ];
    let r = output_with(&env, &args, "MEMLOG_TEST_FAIL_AFTER_APPEND");
    assert_eq!(
        r.code, 0,
        "the write is acknowledged: {} {}",
        r.stdout, r.stderr
    );
    let written = r.json();
    let id = written["id"].as_str().unwrap_or_default().to_owned();
    assert!(
        r.envelope()["warnings"].to_string().contains("store_stale"),
        "{}",
        r.stdout
    );
    // The next command catches up; a retry does not create a second entry.
    let shown = env.run(&["show", &id, "--json"]).ok().json();
    assert_eq!(shown["summary"], "durable");
    let retry = env.run(&args);
    assert_eq!(retry.code, 3, "{}", retry.stdout);
    assert!(
        retry.stdout.contains(&id),
        "the retry names the entry: {}",
        retry.stdout
    );
    assert_eq!(env.listed(), Some(1));
}

fn output_with(env: &Env, args: &[&str], var: &str) -> Run {
    crate::common::output(env.command(args).env(var, "1").output())
}

/// Bytes in the store journal of project `demo`, which the next process replays.
fn journal_bytes(env: &Env) -> u64 {
    let store = env.root().join("ai-memory/demo/.memlog/store");
    std::fs::read_dir(&store)
        .unwrap_or_else(|e| panic!("{}: {e}", store.display()))
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jnl"))
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .sum()
}

/// One `add` per process, `n` times, each with its own subject and summary.
fn add_one_by_one(env: &Env, n: usize, tag: &str) {
    for i in 0..n {
        let (subject, summary) = (
            format!("{tag}-{i}"),
            format!("{tag} number {i} of the series"),
        );
        // Sixty words of their own: sixty postings, several KiB of journal.
        let content: Vec<String> = (0..60).map(|w| format!("{tag}{i}word{w}")).collect();
        env.run(&crate::common::add_args(
            ("learnings", "other"),
            &subject,
            &summary,
            &content.join(" "),
            "0.8",
            "doc:docs/a.md:where it is written",
        ))
        .ok();
    }
}

#[test]
fn an_agent_writing_alone_leaves_a_short_journal() {
    let env = Env::with_project();
    // A process waiting for the store (as the wait file's shared lock says) makes writers leave
    // the checkpoint to later, up to the hard threshold (256 KiB).
    let state = env.root().join("ai-memory/demo/.memlog");
    std::fs::create_dir_all(&state).unwrap_or_else(|e| panic!("{e}"));
    let wait = state.join("store.lock.wait");
    let waiting = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&wait)
        .unwrap_or_else(|e| panic!("{e}"));
    waiting.lock_shared().unwrap_or_else(|e| panic!("{e}"));
    add_one_by_one(&env, 28, "watched");
    let watched = journal_bytes(&env);
    assert!(
        watched > 64 * 1024,
        "{watched} bytes: checkpointed while awaited"
    );
    drop(waiting);

    // Nobody waits: the next writer finds more than the quiet threshold (64 KiB) and
    // checkpoints as it closes.
    add_one_by_one(&env, 3, "alone");
    let alone = journal_bytes(&env);
    assert!(alone < 64 * 1024, "{alone} bytes left to replay");

    let incremental = env.run(&["dump"]).ok().stdout;
    env.run(&["rebuild"]).ok();
    assert_eq!(env.run(&["dump"]).ok().stdout, incremental);
}

#[test]
fn writes_after_a_store_checkpoint_are_not_hidden_by_older_ones() {
    let env = Env::with_project();
    // A bulk apply ends with a checkpoint of the store (flush, new journal).
    let bulk: String = (0..300)
        .map(|i| create_line(i, &format!("bulk {i}")) + "\n")
        .collect();
    let ids: Vec<String> = stdin_run(&env, &["apply", "-"], bulk.as_bytes())
        .ok()
        .stdout
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(ids.len(), 300);
    // Later writes change the same records again; they must win over the flushed ones.
    for id in &ids[..5] {
        env.run(&["update", id, "--confidence", "0.95"]).ok();
        env.run(&["pin", id]).ok();
    }
    for id in &ids[..5] {
        let shown = env.run(&["show", id, "--json"]).ok().json();
        assert_eq!(shown["confidence"], 0.95, "{shown}");
        assert_eq!(shown["pinned"], true, "{shown}");
    }
    let incremental = env.run(&["dump"]).ok().stdout;
    env.run(&["rebuild"]).ok();
    assert_eq!(env.run(&["dump"]).ok().stdout, incremental);
}

/// `apply` of an empty input writes nothing and exits 0, and says so on standard error.
#[test]
fn apply_of_an_empty_input_says_there_was_nothing_to_apply() {
    let env = Env::with_project();
    for input in [&b""[..], b"\n  \n"] {
        let r = stdin_run(&env, &["apply", "demo", "-"], input).ok();
        assert_eq!(r.stdout, "");
        assert_eq!(
            r.stderr, "note: no updates in the input; nothing was written\n",
            "{input:?}"
        );
        // `--json` keeps standard error's notes (docs/JSON.md).
        let r = stdin_run(&env, &["apply", "demo", "-", "--json"], input).ok();
        assert_eq!(
            r.stderr,
            "note: no updates in the input; nothing was written\n"
        );
        assert_eq!(r.json()["applied"], serde_json::json!([]), "{}", r.stdout);
    }
    assert!(std::fs::read(env.log()).unwrap_or_default().is_empty());
}

/// A refused line is named by its line in the input, blank lines counted, as an editor shows
/// it; and a line far over the limit is refused without taking the rest of the input with it.
#[test]
fn apply_names_a_refused_line_by_its_place_in_the_input() {
    let env = Env::with_project();
    let input = format!(
        "{}\n\n\n\ngarbage\n{}\n{}\n{}\n{{\"operation\":\"create\",\"entry\":\n",
        create_line(1, "First"),
        create_line(2, "Second"),
        "y".repeat(17 * 1024 * 1024),
        create_line(3, "Third"),
    );
    let r = stdin_run(&env, &["apply", "demo", "-", "--json"], input.as_bytes());
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v = r.json();
    let skipped = v["skipped"].to_string();
    assert!(skipped.contains("line 5 is not valid JSON"), "{skipped}");
    // A line that ends too soon is named by its own number only, the problem at its end.
    assert!(
        skipped
            .contains("line 9 is not valid JSON: EOF while parsing a value at the end of the line"),
        "{skipped}"
    );
    assert!(
        skipped.contains("line 7 is longer than 16 MiB"),
        "{skipped}"
    );
    assert_eq!(v["applied"].as_array().map(Vec::len), Some(3), "{v}");
}

/// A variable set to nothing counts as unset: the default applies, and nothing is refused as if
/// the option had been given empty.
#[test]
fn an_empty_environment_variable_counts_as_unset() {
    let env = Env::with_project();
    let r = env
        .command(&add_args(
            ("learnings", "other"),
            "s.x",
            "e",
            "c",
            "0.9",
            "doc:a.md:n",
        ))
        .env("MEMLOG_ACTOR", "")
        .env("USER", "ops-bot")
        .env("MEMLOG_NOW", "")
        .env("MEMLOG_LOCK_TIMEOUT_MS", "")
        .output();
    let r = crate::common::output(r).ok();
    let id = r.stdout.trim().to_owned();
    let shown = env.run(&["--json", "show", &id]).ok();
    assert_eq!(shown.json()["created_by"], "ops-bot", "{}", shown.stdout);
    let listed =
        crate::common::output(env.command(&["list"]).env("MEMLOG_PROJECT", "").output()).ok();
    assert!(listed.stdout.contains(&id[..10]), "{}", listed.stdout);
}

/// An actor of only spaces or blank characters is refused, naming where it came from:
/// `history` and `audit` would show no author.
#[test]
fn a_blank_actor_is_refused() {
    let env = Env::with_project();
    let add = add_args(("learnings", "other"), "s.x", "e", "c", "0.9", "doc:a.md:n");
    for blank in [" ", "\u{3000}", "\u{a0}", "\u{2800}", "  "] {
        let r = crate::common::output(env.command(&add).env("MEMLOG_ACTOR", blank).output());
        assert_eq!(r.code, 2, "{blank:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("MEMLOG_ACTOR") && r.stderr.contains("blank"),
            "{}",
            r.stderr
        );
        let mut with_option = vec!["--actor", blank];
        with_option.extend(&add);
        let r = env.run(&with_option);
        assert_eq!(r.code, 2, "{blank:?}: {}", r.stderr);
        assert!(r.stderr.contains("--actor"), "{}", r.stderr);
    }
    assert_eq!(
        env.run(&["list", "demo", "--json"])
            .ok()
            .json()
            .as_array()
            .map(Vec::len),
        Some(0)
    );
}

/// A bad value that only the environment gave is named by its variable, with the fix; typed
/// as the option, the same value says nothing of the variable.
#[test]
fn a_bad_value_from_the_environment_names_its_variable() {
    let env = Env::with_project();
    let r = crate::common::output(
        env.command(&["list"])
            .env("MEMLOG_LOCK_TIMEOUT_MS", "soon")
            .output(),
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("the value comes from MEMLOG_LOCK_TIMEOUT_MS"),
        "{}",
        r.stderr
    );
    let typed = crate::common::output(
        env.command(&["list", "--lock-timeout", "soon"])
            .env("MEMLOG_LOCK_TIMEOUT_MS", "soon")
            .output(),
    );
    assert_eq!(typed.code, 2, "{}", typed.stderr);
    assert!(
        !typed.stderr.contains("MEMLOG_LOCK_TIMEOUT_MS"),
        "{}",
        typed.stderr
    );
    // So is a directory that does not exist, and a value that is not UTF-8.
    let r = crate::common::output(
        env.command(&["list"])
            .env("MEMLOG_WORKSPACE", "/no/such/dir")
            .output(),
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("error: MEMLOG_WORKSPACE /no/such/dir: no such directory"),
        "{}",
        r.stderr
    );
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bytes = std::ffi::OsStr::from_bytes(b"a\xffb");
        let r = crate::common::output(env.command(&["list"]).env("MEMLOG_ACTOR", bytes).output());
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            r.stderr.contains(
                "MEMLOG_ACTOR holds bytes that are not UTF-8: set it to text, or unset it"
            ),
            "{}",
            r.stderr
        );
    }
    // So is a project name that is no project's.
    let r = crate::common::output(env.command(&["list"]).env("MEMLOG_PROJECT", "a b").output());
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.starts_with("error: MEMLOG_PROJECT: ")
            && r.stderr
                .contains("set MEMLOG_PROJECT to a project's name, or unset it"),
        "{}",
        r.stderr
    );
    // The time, read after the options, is named by its variable too.
    let r = crate::common::output(env.command(&["list"]).env("MEMLOG_NOW", "soon").output());
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("error: MEMLOG_NOW: `soon` is not an ISO 8601 time")
            && r.stderr
                .contains("set MEMLOG_NOW to a valid time, or unset it"),
        "{}",
        r.stderr
    );
    let typed = env.run(&["list", "--now", "soon"]);
    assert_eq!(typed.code, 2, "{}", typed.stderr);
    assert!(
        typed.stderr.starts_with("error: --now: ") && !typed.stderr.contains("MEMLOG_NOW"),
        "{}",
        typed.stderr
    );
}

/// A variable of only spaces counts as unset, as an empty one does (`MEMLOG_NOW=' '` was
/// refused as a bad `--now`): the default applies. (An actor of only spaces is refused instead,
/// see `a_blank_actor_is_refused`.)
#[test]
fn a_blank_environment_variable_counts_as_unset() {
    let env = Env::with_project();
    for blank in [" ", "  \t"] {
        let r = env
            .command(&add_args(
                ("learnings", "other"),
                &format!("s.blank{}", blank.len()),
                "e",
                "c",
                "0.9",
                "doc:a.md:n",
            ))
            .env("MEMLOG_NOW", blank)
            .env("MEMLOG_LOCK_TIMEOUT_MS", blank)
            .env("MEMLOG_WORKSPACE", blank)
            .current_dir(env.root())
            .output();
        let r = crate::common::output(r);
        assert_eq!(r.code, 0, "{blank:?}: {}", r.stderr);
        let id = r.stdout.trim().to_owned();
        let listed = crate::common::output(
            env.command(&["list", "--json"])
                .env("MEMLOG_PROJECT", blank)
                .env("MEMLOG_NOW", blank)
                .output(),
        )
        .ok();
        assert!(listed.stdout.contains(&id), "{}", listed.stdout);
    }
}

/// A credential given as the actor (`--actor`, or by mistake in `MEMLOG_ACTOR` or `$USER`) is
/// a bad setting, not a bad entry: refused as a usage error (exit 2) naming where it came from
/// and the fix, never echoed, logged to the security log without its value, and nothing is
/// written.
#[test]
fn a_credential_as_the_actor_is_a_usage_error_naming_its_source() {
    let env = Env::with_project();
    let add = add_args(("learnings", "other"), "s.x", "e", "c", "0.9", "doc:a.md:n");
    let before = read(&env.log());
    let from_env =
        crate::common::output(env.command(&add).env("MEMLOG_ACTOR", FAKE_GITHUB).output());
    let from_user = crate::common::output(
        env.command(&add)
            .env_remove("MEMLOG_ACTOR")
            .env("USER", FAKE_AWS)
            .output(),
    );
    let mut typed = vec!["--actor", FAKE_GITHUB];
    typed.extend(&add);
    let from_option = env.run(&typed);
    for (r, said) in [
        (
            &from_env,
            "the actor from MEMLOG_ACTOR looks like a GitHub token (rule github-token): the \
             actor is written into every event, and credentials must never be stored in \
             memory; nothing was written: set MEMLOG_ACTOR to another name, or give --actor \
             NAME",
        ),
        (
            &from_user,
            "the actor from $USER (used when neither --actor nor MEMLOG_ACTOR is set) looks \
             like an AWS access key id (rule aws-access-key-id): the actor is written into \
             every event, and credentials must never be stored in memory; nothing was written: \
             give a name with --actor NAME or MEMLOG_ACTOR",
        ),
        (
            &from_option,
            "--actor looks like a GitHub token (rule github-token): the actor is written into \
             every event, and credentials must never be stored in memory; nothing was written: \
             give another name with --actor NAME",
        ),
    ] {
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert_eq!(r.stderr, format!("error: {said}\n"));
    }
    assert_eq!(read(&env.log()), before, "nothing written");
    let (security, records) = env.security_log();
    let rules: Vec<String> = records
        .iter()
        .filter(|r| r["field"] == "actor" && r["actor"] == "[redacted]")
        .map(|r| r["rule"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        rules,
        ["github-token", "aws-access-key-id", "github-token"],
        "{security}"
    );
    let runs = [&from_env, &from_user, &from_option];
    crate::common::assert_nowhere(&env, &runs, FAKE_GITHUB);
    crate::common::assert_nowhere(&env, &runs, FAKE_AWS);
}
