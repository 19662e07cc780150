//! `memlog fork` and `memlog merge-project`: namespaces that evolve apart and merge back.

use crate::common::Env;
use serde_json::json;

fn add(
    env: &Env,
    project: &str,
    actor: &str,
    now: &str,
    summary: &str,
    confidence: &str,
    evidence: &str,
) -> String {
    env.command(&[
        "add",
        project,
        "--section",
        "learnings",
        "--kind",
        "other",
        "--subject",
        "cache",
        "--scope",
        "repo",
        "--summary",
        summary,
        "--content",
        "x",
        "--confidence",
        confidence,
        "--evidence",
        evidence,
        "--json",
    ])
    .env("MEMLOG_ACTOR", actor)
    .env("MEMLOG_NOW", now)
    .output()
    .map(|o| {
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap_or_default()["results"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    })
    .unwrap_or_default()
}

#[test]
fn fork_isolates_and_merge_project_reconciles() {
    let env = Env::new();
    env.run(&["init", "main"]).ok();
    let shared = add(
        &env,
        "main",
        "alice",
        "2026-11-20T10:00:00Z",
        "Shared finding",
        "0.8",
        "code:src/a.rs#L1-L2:a",
    );
    let forked = env.run(&["fork", "main", "exp", "--json"]).ok().json();
    assert_eq!(
        (forked["events"].clone(), forked["project"].clone()),
        (json!(1), json!("exp"))
    );
    let again = env.run(&["fork", "main", "exp"]);
    assert_eq!(again.code, 3, "{}", again.stderr);
    assert!(again.stderr.contains("merge-project"), "{}", again.stderr);

    // Each namespace evolves on its own (004 7.3, 7.5).
    env.run_at(
        "2026-11-21T10:00:00Z",
        &["-p", "exp", "update", &shared, "--confidence", "0.9"],
    )
    .ok();
    env.run_at(
        "2026-11-21T11:00:00Z",
        &["-p", "main", "update", &shared, "--confidence", "0.7"],
    )
    .ok();
    let exp_only = add(
        &env,
        "exp",
        "agent-x",
        "2026-11-22T10:00:00Z",
        "Cache at the edge",
        "0.9",
        "code:src/c.rs#L1-L2:c",
    );
    let main_dup = add(
        &env,
        "main",
        "agent-m",
        "2026-11-22T10:00:00Z",
        "Cache at the edge",
        "0.6",
        "log:logs/c.log:c",
    );
    assert_eq!(
        env.run(&["-p", "main", "show", &exp_only]).code,
        4,
        "no leak across namespaces"
    );
    let main_only = add(
        &env,
        "main",
        "agent-m",
        "2026-11-22T11:00:00Z",
        "Only in main",
        "0.8",
        "code:src/m.rs#L1-L2:m",
    );
    assert_eq!(env.run(&["-p", "exp", "show", &main_only]).code, 4);

    // Merge (004 7.4): every event of exp joins main with its provenance; the concurrent
    // updates are a visible conflict; of the duplicates the more relevant stays.
    let merged = env
        .run(&["merge-project", "exp", "main", "--json"])
        .ok()
        .json();
    assert_eq!(merged["added"], 2, "{merged}");
    assert_eq!(
        merged["duplicates"],
        json!([{"kept": exp_only, "deprecated": main_dup}]),
        "{merged}"
    );
    assert_eq!(merged["conflicts"], json!([shared]));
    let shown = env
        .run(&["-p", "main", "show", &exp_only, "--json"])
        .ok()
        .json();
    assert_eq!(
        (shown["created_by"].clone(), shown["status"].clone()),
        (json!("agent-x"), json!("active"))
    );
    let lost = env
        .run(&["-p", "main", "show", &main_dup, "--json"])
        .ok()
        .json();
    assert_eq!(lost["status"], "deprecated");
    assert!(
        lost["status_reason"]
            .as_str()
            .unwrap_or("")
            .contains(&exp_only),
        "{lost}"
    );
    let history = env
        .run(&["-p", "main", "history", &shared, "--json"])
        .ok()
        .json();
    let actors: Vec<&str> = history
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["actor"].as_str())
        .collect();
    assert_eq!(actors, ["alice", "agent-7", "agent-7"]);

    // Merging again adds nothing; exp is unchanged by the merge.
    let again = env
        .run(&["merge-project", "exp", "main", "--json"])
        .ok()
        .json();
    assert_eq!(
        (again["added"].clone(), again["duplicates"].clone()),
        (json!(0), json!([]))
    );
    assert_eq!(env.run(&["-p", "exp", "show", &main_only]).code, 4);
    assert_eq!(env.run(&["-p", "main", "verify"]).code, 0);
    let same = env.run(&["merge-project", "main", "main"]);
    assert_eq!(same.code, 2, "{}", same.stderr);
}

/// A fork onto its own name is a usage error; onto another existing project it names the
/// merge that would do.
#[test]
fn a_fork_needs_a_new_name() {
    let env = Env::with_project();
    env.add("a", "first");
    let r = env.run(&["fork", "demo", "demo"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("needs a new name"), "{}", r.stderr);
    env.run(&["init", "other"]).ok();
    let r = env.run(&["fork", "demo", "other"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("memlog merge-project demo other"),
        "{}",
        r.stderr
    );
}

/// merge-project settles a duplicate of an archived entry too: a read would restore it beside
/// the copy.
#[test]
fn merge_project_settles_duplicates_of_archived_entries() {
    let env = Env::new();
    env.run(&["init", "main"]).ok();
    env.run(&["init", "other"]).ok();
    let old = add(
        &env,
        "main",
        "alice",
        "2026-01-01T00:00:00Z",
        "Cache lives 5 minutes",
        "0.8",
        "code:src/a.rs#L1-L2:a",
    );
    env.run_at("2027-06-01T00:00:00Z", &["lifecycle", "run", "main"])
        .ok();
    let listed = env
        .run_at("2027-06-01T00:00:00Z", &["list", "main", "--archived"])
        .ok()
        .stdout;
    assert!(listed.contains(&old), "{listed}");
    add(
        &env,
        "other",
        "bob",
        "2027-06-01T00:00:00Z",
        "Cache lives 5 minutes",
        "0.9",
        "code:src/a.rs#L1-L2:a",
    );
    let r = env
        .run_at(
            "2027-06-02T00:00:00Z",
            &["--json", "merge-project", "other", "main"],
        )
        .ok();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_default();
    assert_eq!(
        v["results"]["duplicates"].as_array().map(Vec::len),
        Some(1),
        "{}",
        r.stdout
    );
}
