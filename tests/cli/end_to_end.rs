use crate::common::{Env, redact};
use serde_json::json;

macro_rules! snap {
    ($name:expr, $value:expr) => {
        insta::with_settings!({ snapshot_path => "../../snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!($name, $value);
        });
    };
}

#[test]
fn a_memory_goes_through_its_life() {
    let env = Env::with_project();
    let first = env.add("auth.tokens", "Use short-lived JWTs");
    assert!(first.starts_with("m-") && first.len() == 28, "{first}");
    let replaced = env
        .run_at(
            "2026-11-23T09:00:00Z",
            &[
                "supersede",
                &first[..6],
                "--summary",
                "Use 10-minute JWTs",
                "--reason",
                "security review",
            ],
        )
        .ok();
    let second = replaced
        .stdout
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    env.run_at(
        "2026-11-24T09:00:00Z",
        &[
            "update",
            &second,
            "--valid-to",
            "2027-01-01",
            "--review-interval",
            "P30D",
        ],
    )
    .ok();
    env.run_at(
        "2026-11-24T10:00:00Z",
        &["pin", &second, "--reason", "critical path"],
    )
    .ok();
    let state = env
        .run(&[
            "add",
            "--section",
            "state",
            "--kind",
            "metric",
            "--subject",
            "ci.duration",
            "--scope",
            "environment:staging",
            "--summary",
            "CI takes 12 minutes",
            "--content",
            "Median of the last 20 runs.",
            "--confidence",
            "0.4",
            "--evidence",
            "log:https://ci.example.com/runs/42:ci log",
            "--valid-from",
            "2026-11-22",
            "--valid-to",
            "2026-12-22",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    env.run_at(
        "2026-11-25T09:00:00Z",
        &["deprecate", &state, "--reason", "pipeline rewritten"],
    )
    .ok();

    snap!(
        "show",
        redact(&env, &env.run(&["show", &second]).ok().stdout)
    );
    snap!("list", env.run(&["list"]).ok().stdout);
    snap!("history", env.run(&["history", &second]).ok().stdout);
    snap!("audit", env.run(&["audit"]).ok().stdout);
    snap!("stats", env.run(&["stats", "--json"]).ok().stdout);
    snap!("verify", redact(&env, &env.run(&["verify"]).ok().stdout));

    // Every Memory_Entry field comes back exactly.
    let shown = env.run(&["show", &second, "--json"]).ok().json();
    assert_eq!(shown["summary"], "Use 10-minute JWTs");
    assert_eq!(shown["review_interval"], "P30D");
    assert_eq!(shown["valid_to"], "2027-01-01T00:00:00.000Z");
    assert_eq!(shown["pinned"], true);
    assert_eq!(shown["evidence"][0]["uri"], "src/lib.rs#L1-L9");
    let old = env.run(&["show", &first, "--json"]).ok().json();
    assert_eq!(old["status"], "superseded");
    assert_eq!(old["superseded_by"], second.as_str());

    // The same commands through the bass-agents entry point.
    let bass = std::path::Path::new(crate::common::bin()).with_file_name("bass-agents");
    let out = crate::common::output(
        std::process::Command::new(bass)
            .args(["memory", "show", &second, "--json"])
            .env("MEMLOG_WORKSPACE", env.root())
            .output(),
    )
    .ok();
    assert_eq!(out.json()["id"], second.as_str());
}

#[test]
fn apply_takes_updates_arrays_and_agent_results() {
    let env = Env::with_project();
    let target = env.add("billing.retries", "Retry payments three times");
    let result = serde_json::json!({
        "status": "done",
        "memory_updates": [
            {"operation": "create", "entry": {"section": "learnings", "kind": "incident", "subject": "billing.webhooks",
              "scope": "service:billing", "summary": "Webhooks arrive out of order", "content": "Seen in prod twice.",
              "confidence": 0.7, "evidence": [{"type": "ticket", "uri": "https://github.com/acme/billing/issues/7", "note": "report"}]}},
            {"operation": "supersede", "target_id": target, "entry": {"summary": "Retry payments five times", "content": "With backoff.", "confidence": 0.9,
              "evidence": [{"type": "code", "uri": "src/retry.rs", "note": "policy"}]}},
            {"operation": "create", "entry": {"section": "nowhere", "summary": "bad"}},
            {"operation": "deprecate", "target_id": "m-0000000000"}
        ]
    });
    let file = env.root().join("result.json");
    std::fs::write(&file, result.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["apply", "demo", file.to_str().unwrap_or_default(), "--json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let v = r.json();
    assert_eq!(v["applied"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["skipped"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["skipped"][0]["index"], 3);
    assert_eq!(v["skipped"][1]["code"], "NOT_FOUND");
    let old = env.run(&["show", &target, "--json"]).ok().json();
    assert_eq!(old["status"], "superseded");
    // One bad update alone is an error with the requirement's error format; nothing is written.
    let before = std::fs::read(env.log()).unwrap_or_default();
    let mut cmd = env.command(&["apply", "--json", "-"]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{e}"));
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        let _ = stdin.write_all(br#"{"operation":"create","entry":{"section":"decisions","kind":"decision","subject":"x","scope":"galaxy","summary":"s","content":"c","confidence":2,"evidence":[]}}"#);
    }
    let r = crate::common::output(child.wait_with_output());
    assert_eq!(r.code, 3);
    let err = r.json();
    assert_eq!(err["success"], false);
    assert_eq!(err["error"]["code"], "VALIDATION_ERROR");
    let fields: Vec<&str> = err["error"]["details"]["problems"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["field"].as_str())
        .collect();
    assert!(
        fields.contains(&"entry.scope")
            && fields.contains(&"entry.confidence")
            && fields.contains(&"entry.evidence"),
        "{fields:?}"
    );
    assert_eq!(std::fs::read(env.log()).unwrap_or_default(), before);
}

#[test]
fn concurrent_writers_lose_nothing() {
    let env = Env::with_project();
    let mut children = Vec::new();
    for w in 0..4 {
        let root = env.root().to_path_buf();
        children.push(std::thread::spawn(move || {
            let mut printed = Vec::new();
            for i in 0..12 {
                let out = std::process::Command::new(crate::common::bin())
                    .args([
                        "--actor",
                        &format!("agent-{w}"),
                        "--lock-timeout",
                        "60000",
                        "add",
                        "--section",
                        "observations",
                        "--kind",
                        "other",
                        "--subject",
                        "load",
                        "--scope",
                        "repo",
                        "--summary",
                        &format!("writer {w} entry {i}"),
                        "--content",
                        "c",
                        "--confidence",
                        "0.5",
                        "--evidence",
                        "assumption:none:n",
                    ])
                    .env("MEMLOG_WORKSPACE", &root)
                    .env_remove("MEMLOG_NOW")
                    .output();
                let r = crate::common::output(out);
                assert_eq!(r.code, 0, "{}", r.stderr);
                printed.push(r.stdout.trim().to_owned());
            }
            printed
        }));
    }
    let mut printed = std::collections::BTreeSet::new();
    for c in children {
        printed.extend(
            c.join()
                .unwrap_or_else(|_| panic!("writer thread panicked")),
        );
    }
    assert_eq!(printed.len(), 48, "ids printed: {printed:?}");
    let verify = env.run(&["verify", "--json"]).ok().json();
    assert_eq!(verify["ok"], true);
    assert_eq!(verify["events"], 48);
    let list = env.run(&["list", "--all", "--json"]).ok().json();
    let ids: std::collections::BTreeSet<String> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["id"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        ids, printed,
        "every acknowledged id is listed, nothing else"
    );
}

#[test]
fn bench_times_every_operation_on_a_synthetic_workspace() {
    let env = Env::new();
    // The bench works in a directory of its own inside --dir and removes only that.
    let dir = env.root().join("bench");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("notes.txt"), "not the bench's").unwrap_or_else(|e| panic!("{e}"));
    let r = env
        .run(&[
            "bench",
            "--entries",
            "24,30",
            "--grown",
            "8",
            "--writes",
            "6",
            "--runs",
            "3",
            "--slow-runs",
            "1",
            "--pull-events",
            "10",
            "--writers",
            "2",
            "--mutators",
            "2",
            "--readers",
            "1",
            "--ops",
            "3",
            "--dir",
            dir.to_str().unwrap_or_default(),
            "--json",
        ])
        .ok();
    let v = r.json();
    let rows = v["results"].as_array().cloned().unwrap_or_default();
    let ops: std::collections::BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["operation"].as_str().unwrap_or_default().to_owned(),
                r["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    for (op, state) in [
        ("apply", "applied"),
        ("stats after apply", "applied"),
        ("supersede", "applied"),
        ("pin", "applied"),
        ("show", "applied"),
        ("list", "applied"),
        ("stats", "applied"),
        ("add", "applied"),
        ("rebuild", "applied"),
        ("verify", "applied"),
        ("catch-up rewritten", "applied"),
        ("catch-up pull", "applied"),
        ("add", "growing"),
        ("show", "grown"),
        ("list", "grown"),
        ("stats", "grown"),
        ("add", "grown"),
    ] {
        assert!(
            ops.contains(&(op.to_owned(), state.to_owned())),
            "{op} ({state}) missing from {ops:?}"
        );
    }
    for row in &rows {
        assert!(row["median_ms"].as_f64().unwrap_or(0.0) > 0.0, "{row}");
        assert!(
            row["errors"].as_object().is_some_and(|e| e.is_empty()),
            "{row}"
        );
    }
    let sizes: Vec<u64> = rows
        .iter()
        .filter(|r| r["operation"] == "apply")
        .filter_map(|r| r["entries"].as_u64())
        .collect();
    assert_eq!(sizes, [24, 30]);
    // The pull brought 10 events to the 30 entries, the 6 setup writes and the 3 timed adds.
    let pull = rows.iter().find(|r| r["operation"] == "catch-up pull");
    assert_eq!(pull.map(|r| r["events"].clone()), Some(49.into()));
    // Every write of the concurrency run is acknowledged and in the log, once.
    let c = &v["concurrency"];
    assert_eq!(c["acknowledged_writes"], 12, "{c}");
    assert_eq!(c["events_appended"], 12, "{c}");
    assert!(c["errors"].as_object().is_some_and(|e| e.is_empty()), "{c}");
    assert!(c["write_p99_ms"].as_f64().unwrap_or(0.0) > 0.0, "{c}");
    // Sizes on disk of each workspace, and the targets judged.
    let workspaces = v["workspaces"].as_array().cloned().unwrap_or_default();
    assert_eq!(workspaces.len(), 3);
    assert!(
        workspaces
            .iter()
            .all(|w| w["log_bytes"].as_u64() > Some(0) && w["store_bytes"].as_u64() > Some(0))
    );
    let checks = v["targets"]["checks"].as_array().map_or(0, Vec::len);
    assert!(checks > 10, "{}", v["targets"]);
    assert_eq!(v["errors"], serde_json::json!({}));
    // Only the bench's own directory was removed.
    let left: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(left, ["notes.txt"]);
}

#[test]
fn project_flag_and_short_ids_work_after_any_command() {
    let env = Env::with_project();
    let id = env.add("auth", "Sessions expire after 30 minutes");
    env.run(&["init", "other"]).ok();
    // Two projects: commands need a project, given either way and in any position, and they
    // answer for that project.
    let lists: Vec<String> = [
        &["list", "-p", "demo"][..],
        &["-p", "demo", "list"][..],
        &["list", "demo"][..],
    ]
    .iter()
    .map(|args| env.run(args).ok().stdout)
    .collect();
    // Tables show the shortest unique prefix (at least 10 characters).
    let short = &id[..10];
    assert!(lists[0].contains(short), "{}", lists[0]);
    assert!(lists.iter().all(|l| *l == lists[0]), "{lists:?}");
    assert!(
        !env.run(&["list", "-p", "other"])
            .ok()
            .stdout
            .contains(short)
    );
    let stats = env
        .run(&["stats", "--project", "demo", "--json"])
        .ok()
        .json();
    assert_eq!(stats["statistics"]["total_entries"], 1, "{stats}");
    let stats = env
        .run(&["stats", "--project", "other", "--json"])
        .ok()
        .json();
    assert_eq!(stats["statistics"]["total_entries"], 0, "{stats}");
    let verify = env.run(&["verify", "-p", "demo", "--json"]).ok().json();
    assert_eq!(
        (&verify["ok"], &verify["events"]),
        (&json!(true), &json!(1))
    );
    // Without a project, a command that needs one says so.
    let r = env.run(&["list", "--json"]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert_eq!(r.json()["error"]["details"]["field"], "project");
    // Ids without their `m-` work for writes as for reads.
    env.run(&["pin", &id[2..], "-p", "demo"]).ok();
    let shown = env
        .run(&["show", &id[2..8], "-p", "demo", "--json"])
        .ok()
        .json();
    assert_eq!(shown["pinned"], true);
}

/// `bench --locomo` writes each conversation into a project of its own by `apply` and asks its
/// questions there: a turn that holds the question's words is found, in its own conversation
/// only.
#[test]
fn bench_locomo_asks_each_conversation_its_own_questions() {
    let env = Env::new();
    let data = env.root().join("locomo");
    std::fs::create_dir_all(&data).unwrap_or_else(|e| panic!("{e}"));
    for (n, speaker, hobby) in [("1", "Ana", "pottery"), ("2", "Bo", "pottery")] {
        let conv = serde_json::json!({
            "session_1": [
                {"speaker": speaker, "dia_id": "D1:1", "text": format!("I started {hobby} classes last week.")},
                {"speaker": "Cy", "dia_id": "D1:2", "text": "Nice, tell me more!"},
                {"speaker": speaker, "dia_id": "D1:3", "text": "My dog Toby loves the park."}
            ],
            "qa": [
                {"question": format!("What classes did {speaker} start?"), "answer": hobby, "evidence": ["D1:1"], "category": 4},
                {"question": format!("What is the name of {speaker}'s dog?"), "answer": "Toby", "evidence": ["D1:3"], "category": 1}
            ]
        });
        std::fs::write(data.join(format!("{n}.json")), conv.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let dir = env.root().join("bench");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let r = env
        .run(&[
            "--json",
            "bench",
            "--locomo",
            &data.display().to_string(),
            "--dir",
            &dir.display().to_string(),
        ])
        .ok();
    let v = r.json();
    assert_eq!(v["memories"], 6, "{v}");
    assert_eq!(v["questions"], 4, "{v}");
    let mine = &v["scores"][0];
    assert_eq!(mine["ranker"], "memlog query (defaults)");
    assert_eq!(mine["recall_at_5"], 1.0, "{v}");
    assert_eq!(mine["mrr_at_10"], 1.0, "{v}");
}
