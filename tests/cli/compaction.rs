//! `compact`: a store grown by single writes, rebuilt beside itself and swapped in, answers
//! as a rebuilt store does, loses nothing written meanwhile, and starts by itself when due.

use crate::common::{Env, add_args, output};
#[cfg(debug_assertions)]
use std::time::{Duration, Instant};

/// A project grown by single writes: creates, a supersede and a pin.
fn grown(n: usize) -> (Env, Vec<String>) {
    let env = Env::with_project();
    let ids: Vec<String> = (0..n)
        .map(|i| {
            env.add(
                &format!("svc{}.queue", i % 3),
                &format!("Queue bound number {i} for the retry budget"),
            )
        })
        .collect();
    env.run(&[
        "supersede",
        &ids[0],
        "--summary",
        "Queue bound replaced after the load test",
    ])
    .ok();
    env.run(&["pin", &ids[1]]).ok();
    (env, ids)
}

/// `add` of a decision in `subject`, its summary and content as given.
fn add_command(env: &Env, subject: &str, summary: &str, content: &str) -> std::process::Command {
    env.command(&add_args(
        ("decisions", "decision"),
        subject,
        summary,
        content,
        "0.8",
        "code:src/lib.rs#L1-L9:where it happens",
    ))
}

fn dump(env: &Env) -> String {
    env.run(&["dump"]).ok().stdout
}

/// The store as it is dumps byte for byte as the store a rebuild makes.
#[track_caller]
fn assert_dumps_as_a_rebuild(env: &Env) {
    let compacted = dump(env);
    env.run(&["rebuild"]).ok();
    assert_eq!(compacted, dump(env));
}

#[test]
fn a_compacted_store_answers_as_a_rebuilt_one() {
    let (env, _) = grown(24);
    let query = ["query", "queue bound retry", "--json", "--explain"];
    let before = env.run(&query).ok().stdout;
    let health = env.run(&["health", "--json"]).ok().json();
    let state = &health[0]["projections"]["compaction"];
    assert_eq!(state["built_from_lines"], 0, "{health}");
    assert_eq!(state["lines"], 26, "{health}");

    let out = env.run(&["compact", "--json"]).ok().json();
    assert_eq!(out["compacted"], true, "{out}");
    assert_eq!(out["events"], 26, "{out}");
    assert_eq!(out["caught_up"], 0, "{out}");
    let health = env.run(&["health", "--json"]).ok().json();
    let state = &health[0]["projections"]["compaction"];
    assert_eq!(state["built_from_lines"], 26, "{health}");
    assert_eq!(state["due"], false, "{health}");

    assert_eq!(env.run(&query).ok().stdout, before);
    assert_dumps_as_a_rebuild(&env);
}

#[test]
fn writes_during_a_compaction_are_all_kept() {
    let (env, _) = grown(12);
    for round in 0..3 {
        let mut compaction = env
            .command(&["compact", "--json"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        for i in 0..4 {
            let summary = format!("Written during compaction {round}.{i}");
            let subject = format!("round{round}.w{i}");
            let content = "Written while the store was rebuilt beside itself.";
            output(add_command(&env, &subject, &summary, content).output()).ok();
        }
        let status = compaction.wait().unwrap_or_else(|e| panic!("{e}"));
        assert!(status.success());
    }
    let listed = env.run(&["list", "--json", "--limit", "50"]).ok().json();
    let summaries: Vec<&str> = listed
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["summary"].as_str())
        .filter(|s| s.starts_with("Written during compaction"))
        .collect();
    assert_eq!(summaries.len(), 12, "{listed}");
    env.run(&["verify"]).ok();
    assert_dumps_as_a_rebuild(&env);
}

/// Debug builds only: `MEMLOG_TEST_SMALL_BATCHES` makes a store due after 8 lines.
#[test]
#[cfg(debug_assertions)]
fn a_store_due_is_compacted_in_the_background() {
    let env = Env::with_project();
    let write = |i: usize| {
        let summary = format!("Entry {i} written one by one");
        let subject = format!("svc.w{i}");
        let mut add = add_command(&env, &subject, &summary, "One write, one process.");
        add.env("MEMLOG_TEST_SMALL_BATCHES", "1")
            .env_remove("MEMLOG_AUTO_COMPACT");
        output(add.output()).ok();
    };
    for i in 0..10 {
        write(i);
    }
    let started = Instant::now();
    loop {
        let health = env.run(&["health", "--json"]).ok().json();
        let built = health[0]["projections"]["compaction"]["built_from_lines"].clone();
        if built.as_u64().is_some_and(|b| b >= 8) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no compaction after 30 s: {health}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Whatever the compaction saw, nothing is lost and the store is a rebuild's.
    assert_eq!(env.listed(), Some(10));
    assert_dumps_as_a_rebuild(&env);
}

#[test]
fn a_damaged_log_stops_a_compaction_and_changes_nothing() {
    let (env, ids) = grown(4);
    let before = dump(&env);
    let log = std::fs::read_to_string(env.log()).unwrap_or_else(|e| panic!("{e}"));
    let damaged = log.replacen("Queue bound number 2", "Queue bound number 7", 1);
    assert_ne!(damaged, log);
    std::fs::write(env.log(), &damaged).unwrap_or_else(|e| panic!("{e}"));

    let r = env.run(&["compact", "--json"]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert_eq!(r.json()["error"]["code"], "CORRUPT_LOG", "{}", r.stdout);
    let state = env.root().join("ai-memory/demo/.memlog");
    assert!(!state.join("store.compacting").exists());
    // Marked, so that writes do not start the same failing build again and again, and said.
    assert!(state.join("compact.failed").exists());
    let health = env.run(&["health", "--json"]).json();
    let warned = health[0]["warnings"].to_string();
    assert!(warned.contains("the last compaction failed"), "{health}");

    // The store the damage found is the one that was there.
    std::fs::write(env.log(), &log).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(dump(&env), before);
    assert!(env.run(&["show", &ids[3]]).ok().stdout.contains("number 3"));
    env.run(&["compact"]).ok();
    assert!(!state.join("compact.failed").exists());
}

#[test]
fn a_compaction_that_cannot_take_the_lock_leaves_nothing_behind() {
    let (env, _) = grown(4);
    let before = dump(&env);
    let ws = memlog::workspace::Workspace::at(env.root()).unwrap_or_else(|e| panic!("{e}"));
    let name = memlog::workspace::ProjectName::new("demo").unwrap_or_else(|e| panic!("{e}"));
    let project = memlog::project::Project::new(&ws, name);
    let held = crate::common::session(&project);
    let r = env.run(&["compact", "--json", "--lock-timeout", "300"]);
    drop(held);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert_eq!(r.json()["error"]["code"], "LOCK_TIMEOUT", "{}", r.stdout);
    let state = env.root().join("ai-memory/demo/.memlog");
    assert!(!state.join("store.compacting").exists());
    // A lock not had in time is no reason to wait ten minutes before the next try.
    assert!(!state.join("compact.failed").exists());
    assert_eq!(dump(&env), before);
}

/// Debug builds only: `MEMLOG_TEST_COMPACT_PAUSE_MS` holds the compaction between its build
/// and its swap, while `gc` rewrites the log without a purged entry's content.
#[test]
#[cfg(debug_assertions)]
fn a_store_built_before_a_gc_is_never_swapped_in() {
    let (env, _) = grown(3);
    let secret = "zebra-42 is the confidential host";
    let out = output(add_command(&env, "hosts.db", "The database host", secret).output()).ok();
    let id = out.stdout.trim().to_owned();
    env.run(&["purge", &id, "--reason", "confidential host name"])
        .ok();
    let compaction = env
        .command(&["compact", "--json"])
        .env("MEMLOG_TEST_COMPACT_PAUSE_MS", "1500")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    std::thread::sleep(Duration::from_millis(500));
    env.run(&["gc"]).ok();
    let done = compaction
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{e}"));
    let out: serde_json::Value =
        serde_json::from_slice(&done.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out["results"]["compacted"], false, "{out}");
    assert!(!dump(&env).contains("zebra"));
    assert!(
        !std::fs::read_to_string(env.log())
            .unwrap_or_default()
            .contains("zebra")
    );
    env.run(&["verify"]).ok();
}

/// What commands start in the background checks first that the store is still due: one that
/// started late, after another compaction ended, does nothing.
#[test]
fn compact_if_due_leaves_a_store_that_is_not_due() {
    let (env, _) = grown(3);
    let out = env.run(&["compact", "--if-due", "--json"]).ok().json();
    assert_eq!(out["compacted"], false, "{out}");
    assert_eq!(out["reason"], "not due", "{out}");
    let health = env.run(&["health", "--json"]).ok().json();
    assert_eq!(
        health[0]["projections"]["compaction"]["built_from_lines"], 0,
        "{health}"
    );
}
