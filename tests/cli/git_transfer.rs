//! `memlog export` and `memlog import`: round trips, strategies, filters, the write policy.

use crate::common::{Env, NOW};
use serde_json::{Value, json};

const FAKE_TOKEN: &str = "ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE0000";

fn add(
    env: &Env,
    project: &str,
    now: &str,
    section: &str,
    subject: &str,
    confidence: &str,
    tag: &str,
) -> String {
    let mut args = vec![
        "add",
        project,
        "--section",
        section,
        "--kind",
        "other",
        "--subject",
        subject,
        "--scope",
        "repo",
        "--summary",
        subject,
        "--content",
        "Details.",
        "--confidence",
        confidence,
        "--evidence",
        "code:src/lib.rs#L1-L9:here",
        "--tag",
        tag,
        "--json",
    ];
    if section == "state" {
        args.extend([
            "--valid-from",
            "2026-11-01T00:00:00Z",
            "--valid-to",
            "2027-01-01T00:00:00Z",
        ]);
    }
    env.run_at(now, &args).ok().json()["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn two_projects() -> Env {
    let env = Env::new();
    env.run(&["init", "demo"]).ok();
    env.run(&["init", "copy"]).ok();
    env
}

/// Adds to project `demo` a decision related to `a`; its id.
fn add_related(env: &Env, a: &str) -> String {
    let mut args = crate::common::add_args(
        ("decisions", "decision"),
        "auth.refresh",
        "Refresh tokens rotate",
        "Every use rotates the refresh token.",
        "0.8",
        "code:src/lib.rs#L1-L9:here",
    );
    args.extend(["--related", a, "-p", "demo"]);
    env.run(&args).ok().stdout.trim().to_owned()
}

fn read_json(env: &Env, path: &str) -> Value {
    let text = std::fs::read_to_string(env.root().join(path)).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn json_round_trip_keeps_every_field_and_a_second_import_adds_nothing() {
    let env = two_projects();
    let a = add(
        &env,
        "demo",
        "2026-11-20T10:00:00Z",
        "decisions",
        "db",
        "0.9",
        "x",
    );
    let b = add(
        &env,
        "demo",
        "2026-11-20T11:00:00Z",
        "state",
        "rollout",
        "0.7",
        "y",
    );
    env.run_at(
        "2026-11-21T10:00:00Z",
        &["-p", "demo", "deprecate", &b, "--reason", "done"],
    )
    .ok();
    let r = env
        .run(&["export", "demo", "out/demo.json", "--json"])
        .ok()
        .json();
    assert_eq!(r["entries"], 2);
    let exported = read_json(&env, "out/demo.json");
    let keys: Vec<&str> = exported[0]
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(keys.len(), 19, "the Memory_Entry fields: {keys:?}");

    let run = env.run(&["import", "copy", "out/demo.json", "--json"]).ok();
    let r = run.json();
    assert_eq!(
        (
            r["imported"].as_array().map(Vec::len),
            r["rejected"].clone(),
            run.envelope()["success"].clone()
        ),
        (Some(2), json!([]), json!(true)),
        "{r}"
    );
    env.run(&["export", "copy", "out/copy.json"]).ok();
    let copied = read_json(&env, "out/copy.json");
    // An entry never changed keeps even its id (the create event is the same); the deprecated
    // one keeps every field but its id.
    let by_subject = |v: &Value, s: &str| -> Value {
        v.as_array()
            .into_iter()
            .flatten()
            .find(|r| r["subject"] == s)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(by_subject(&copied, "db"), by_subject(&exported, "db"));
    assert_eq!(by_subject(&copied, "db")["id"], a.as_str());
    let mut old = by_subject(&exported, "rollout");
    let mut new = by_subject(&copied, "rollout");
    old.as_object_mut().map(|m| m.remove("id"));
    new.as_object_mut().map(|m| m.remove("id"));
    assert_eq!(new, old);

    let log = std::fs::read(env.root().join("ai-memory/copy/events.jsonl")).unwrap_or_default();
    let again = env
        .run(&["import", "copy", "out/demo.json", "--json"])
        .ok()
        .json();
    assert_eq!(
        again["skipped"].as_array().map(Vec::len),
        Some(2),
        "{again}"
    );
    assert_eq!(
        std::fs::read(env.root().join("ai-memory/copy/events.jsonl")).unwrap_or_default(),
        log
    );

    // The same through JSON Lines and through a directory of records.
    env.run(&[
        "export",
        "demo",
        "ai-memory/memory.jsonl",
        "--format",
        "jsonl",
    ])
    .ok();
    env.run(&["export", "demo", "ai-memory/entries/"]).ok();
    let files = std::fs::read_dir(env.root().join("ai-memory/entries"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(files, 2);
    for input in ["ai-memory/memory.jsonl", "ai-memory/entries"] {
        let r = env.run(&["import", "copy", input, "--json"]).ok().json();
        assert_eq!(
            r["skipped"].as_array().map(Vec::len),
            Some(2),
            "{input}: {r}"
        );
    }
}

#[test]
fn events_round_trip_is_lossless() {
    let env = two_projects();
    let a = add(
        &env,
        "demo",
        "2026-11-20T10:00:00Z",
        "decisions",
        "db",
        "0.9",
        "x",
    );
    env.run_at(
        "2026-11-21T10:00:00Z",
        &["-p", "demo", "supersede", &a, "--summary", "db v2"],
    )
    .ok();
    env.run_at("2026-11-21T11:00:00Z", &["-p", "demo", "pin", &a])
        .ok();
    env.run(&["export", "demo", "out/ev.jsonl", "--format", "events"])
        .ok();
    let other = Env::new();
    other.run(&["init", "demo"]).ok();
    std::fs::copy(
        env.root().join("out/ev.jsonl"),
        other.root().join("ev.jsonl"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = other
        .run(&["import", "demo", "ev.jsonl", "--json"])
        .ok()
        .json();
    assert_eq!(r["imported"].as_array().map(Vec::len), Some(3), "{r}");
    assert_eq!(
        other.run(&["dump"]).ok().stdout,
        env.run(&["-p", "demo", "dump"]).ok().stdout
    );
    let again = other
        .run(&["import", "demo", "ev.jsonl", "--json"])
        .ok()
        .json();
    assert_eq!(again["imported"], json!([]));
}

#[test]
fn an_import_initializes_memory_that_is_not_initialized_only_when_it_has_something() {
    let env = two_projects();
    add(
        &env,
        "demo",
        "2026-11-20T10:00:00Z",
        "decisions",
        "db",
        "0.9",
        "x",
    );
    env.run(&["export", "demo", "ev.jsonl", "--format", "events"])
        .ok();
    std::fs::write(env.root().join("junk.jsonl"), "{\"not\": \n").unwrap_or_default();
    // Nothing in the input can be read: nothing is created, as before.
    let refused = env.run(&["import", "fresh", "junk.jsonl"]);
    assert_eq!(refused.code, 4, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("memlog init fresh"),
        "{}",
        refused.stderr
    );
    assert!(!env.root().join("ai-memory/fresh").exists());
    // An import is a write: the project is initialized for it, and says so.
    let run = env.run(&["import", "fresh", "ev.jsonl", "--json"]).ok();
    assert!(run.stderr.contains("was not initialized"), "{}", run.stderr);
    assert_eq!(run.json()["imported"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        env.run(&["-p", "fresh", "dump"]).ok().stdout,
        env.run(&["-p", "demo", "dump"]).ok().stdout
    );
}

/// A purge travels with an events export, as its tombstones whether `gc` ran or not, and
/// never the purged content: imported where the entry is still whole, it purges it there.
#[test]
fn an_events_export_carries_purges_and_never_the_purged_content() {
    for gc in [false, true] {
        let env = two_projects();
        let keep = add(
            &env,
            "demo",
            "2026-11-20T10:00:00Z",
            "decisions",
            "db",
            "0.9",
            "x",
        );
        let gone = add(
            &env,
            "demo",
            "2026-11-20T10:01:00Z",
            "decisions",
            "wiki",
            "0.9",
            "x",
        );
        env.run(&["-p", "demo", "export", "before.jsonl", "--format", "events"])
            .ok();
        let other = Env::new();
        other.run(&["init", "demo"]).ok();
        std::fs::copy(
            env.root().join("before.jsonl"),
            other.root().join("before.jsonl"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        other.run(&["import", "demo", "before.jsonl"]).ok();

        env.run_at(
            "2026-11-21T10:00:00Z",
            &[
                "-p",
                "demo",
                "purge",
                &gone,
                "--reason",
                "pasted by mistake",
            ],
        )
        .ok();
        if gc {
            env.run(&["-p", "demo", "gc"]).ok();
        }
        env.run(&["-p", "demo", "export", "after.jsonl", "--format", "events"])
            .ok();
        let text = std::fs::read_to_string(env.root().join("after.jsonl")).unwrap_or_default();
        assert!(text.contains("\"type\":\"purge\""), "gc {gc}: {text}");
        assert!(
            !text.contains("\"summary\":\"wiki\""),
            "gc {gc}: purged content exported: {text}"
        );
        assert!(text.contains("\"summary\":\"db\""));
        assert!(text.contains(&keep));

        std::fs::copy(
            env.root().join("after.jsonl"),
            other.root().join("after.jsonl"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let r = other
            .run(&["import", "demo", "after.jsonl", "--json"])
            .ok()
            .json();
        assert_eq!(r["rejected"], json!([]), "gc {gc}: {r}");
        let shown = other.run(&["show", &gone, "--json"]).ok().json();
        assert_eq!(shown["purged"], true, "gc {gc}: {shown}");
        assert_eq!(shown["content"], "", "gc {gc}: {shown}");
    }
}

#[test]
fn strategies_settle_id_conflicts() {
    let env = two_projects();
    let id = add(
        &env,
        "demo",
        "2026-11-20T10:00:00Z",
        "decisions",
        "db",
        "0.6",
        "a",
    );
    env.run(&["export", "demo", "out/base.json"]).ok();
    let mut rec = read_json(&env, "out/base.json")[0].clone();
    rec["confidence"] = json!(0.95);
    rec["summary"] = json!("db, revised");
    rec["tags"] = json!(["b"]);
    rec["evidence"] = json!([{"type": "artifact", "uri": "build/bench.html", "note": "bench"}]);
    std::fs::write(env.root().join("rec.json"), rec.to_string()).unwrap_or_else(|e| panic!("{e}"));

    let r = env
        .run(&["import", "demo", "rec.json", "--json"])
        .ok()
        .json();
    assert_eq!(r["skipped"][0]["entry"], id.as_str(), "{r}");
    let r = env
        .run(&[
            "import",
            "demo",
            "rec.json",
            "--conflict-strategy",
            "merge",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(r["merged"][0]["entry"], id.as_str(), "{r}");
    let shown = env.run(&["-p", "demo", "show", &id, "--json"]).ok().json();
    assert_eq!(
        (shown["confidence"].clone(), shown["summary"].clone()),
        (json!(0.95), json!("db, revised"))
    );
    assert_eq!(shown["tags"], json!(["a", "b"]));
    assert_eq!(shown["evidence"].as_array().map(Vec::len), Some(2));

    rec["confidence"] = json!(0.7);
    rec["summary"] = json!("db, overwritten");
    std::fs::write(env.root().join("rec.json"), rec.to_string()).unwrap_or_else(|e| panic!("{e}"));
    // Merge: the entry's higher confidence keeps its fields.
    let r = env
        .run(&[
            "import",
            "demo",
            "rec.json",
            "--conflict-strategy",
            "merge",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(r["skipped"][0]["entry"], id.as_str(), "{r}");
    let r = env
        .run(&[
            "import",
            "demo",
            "rec.json",
            "--conflict-strategy",
            "overwrite",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(r["overwritten"][0]["entry"], id.as_str(), "{r}");
    let shown = env.run(&["-p", "demo", "show", &id, "--json"]).ok().json();
    assert_eq!(
        (
            shown["confidence"].clone(),
            shown["summary"].clone(),
            shown["tags"].clone()
        ),
        (json!(0.7), json!("db, overwritten"), json!(["b"]))
    );
    let history = env
        .run(&["-p", "demo", "history", &id, "--json"])
        .ok()
        .json();
    assert_eq!(
        history.as_array().map(Vec::len),
        Some(3),
        "every import is a version"
    );
}

#[test]
fn bad_records_are_rejected_with_reasons_and_the_rest_imported() {
    let env = two_projects();
    let good = json!({"section": "decisions", "kind": "decision", "subject": "ok", "scope": "repo", "summary": "Fine", "content": "x", "confidence": 0.9, "evidence": [{"type": "code", "uri": "src/a.rs#L1-L2", "note": "n"}]});
    let mut secret = good.clone();
    secret["subject"] = json!("leak");
    secret["content"] = json!(format!("deploy with {FAKE_TOKEN}"));
    let mut bad_section = good.clone();
    bad_section["subject"] = json!("bad");
    bad_section["section"] = json!("misc");
    let text = format!("{good}\n{secret}\n{bad_section}\nnot json\n");
    std::fs::write(env.root().join("in.jsonl"), text).unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["import", "demo", "in.jsonl", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(!r.stdout.contains(FAKE_TOKEN));
    let v = r.json();
    assert_eq!(v["imported"].as_array().map(Vec::len), Some(1));
    let reasons: Vec<String> = v["rejected"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            format!(
                "{}: {}",
                o["source"].as_str().unwrap_or(""),
                o["reason"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(
        reasons[0].starts_with("line 2:") && reasons[0].contains("rule github-token"),
        "{reasons:?}"
    );
    assert!(
        reasons[1].starts_with("line 3:") && reasons[1].contains("section"),
        "{reasons:?}"
    );
    assert!(reasons[2].starts_with("line 4: not JSON"), "{reasons:?}");
    let text = env.run(&["import", "demo", "in.jsonl"]);
    assert!(
        text.stdout
            .contains("imported 0, merged 0, overwritten 0, skipped 1, rejected 3"),
        "{}",
        text.stdout
    );
}

/// Sections, since, until, minimum confidence.
type Case<'a> = (&'a [&'a str], Option<&'a str>, Option<&'a str>, Option<f64>);

/// Property 35: an export holds exactly the entries that pass every filter given.
#[test]
fn export_filters_keep_exactly_the_matching_entries() {
    let env = two_projects();
    let specs = [
        ("2026-11-10T00:00:00Z", "decisions", "0.9"),
        ("2026-11-12T00:00:00Z", "learnings", "0.5"),
        ("2026-11-14T00:00:00Z", "decisions", "0.75"),
        ("2026-11-16T00:00:00Z", "observations", "0.95"),
        ("2026-11-18T00:00:00Z", "learnings", "0.8"),
    ];
    for (i, (now, section, conf)) in specs.iter().enumerate() {
        add(&env, "demo", now, section, &format!("s{i}"), conf, "t");
    }
    let cases: [Case<'_>; 6] = [
        (&[], None, None, None),
        (&["decisions"], None, None, None),
        (&["decisions", "learnings"], None, None, Some(0.8)),
        (&[], Some("2026-11-12"), Some("2026-11-16"), None),
        (&["learnings"], Some("2026-11-13"), None, Some(0.5)),
        (&[], None, Some("2026-11-09"), None),
    ];
    for (sections, since, until, min) in cases {
        let mut args: Vec<String> = vec![
            "export".into(),
            "demo".into(),
            "-".into(),
            "--format".into(),
            "jsonl".into(),
        ];
        for s in sections {
            args.extend(["--section".into(), (*s).into()]);
        }
        if let Some(t) = since {
            args.extend(["--since".into(), t.into()]);
        }
        if let Some(t) = until {
            args.extend(["--until".into(), t.into()]);
        }
        if let Some(c) = min {
            args.extend(["--min-confidence".into(), c.to_string()]);
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = env.run(&argv).ok().stdout;
        let got: Vec<String> = out
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap_or_default()["subject"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned()
            })
            .collect();
        let want: Vec<String> = specs
            .iter()
            .enumerate()
            .filter(|(_, (now, section, conf))| {
                let day = &now[..10];
                (sections.is_empty() || sections.contains(section))
                    && since.is_none_or(|t| day >= t)
                    && until.is_none_or(|t| day <= t)
                    && min.is_none_or(|c| conf.parse::<f64>().unwrap_or(0.0) >= c)
            })
            .map(|(i, _)| format!("s{i}"))
            .collect();
        let mut got_sorted = got.clone();
        got_sorted.sort();
        assert_eq!(got_sorted, want, "{sections:?} {since:?} {until:?} {min:?}");
    }
}

#[test]
fn export_refuses_paths_outside_the_workspace_and_bad_filters() {
    let env = Env::nested();
    env.run(&["init", "demo"]).ok();
    for path in ["../out.json", "/tmp/../tmp/memlog-export-outside.json"] {
        let r = env.run(&["export", "demo", path]);
        assert_eq!(r.code, 2, "{path}: {}", r.stderr);
        assert!(r.stderr.contains("outside the workspace"), "{}", r.stderr);
    }
    assert!(!env.dir.path().join("out.json").exists());
    // Names no Windows checkout can hold, as for a project.
    for path in ["NUL", "ai-memory/aux.jsonl", "Con.json", "com1/x.json"] {
        let r = env.run(&["export", "demo", path]);
        assert_eq!(r.code, 2, "{path}: {}", r.stderr);
        assert!(
            r.stderr.contains("a device name on Windows"),
            "{}",
            r.stderr
        );
    }
    let r = env.run(&["export", "demo", "x\u{7}.json"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("U+0007, a control character"),
        "{}",
        r.stderr
    );
    let r = env.run(&["export", "demo", "x.json", "--section", "misc"]);
    assert_eq!(r.code, 2);
    let r = env.run(&["export", "demo", "x.json", "--min-confidence", "2"]);
    assert_eq!(r.code, 2);
    let r = env.run(&["import", "demo", "missing.json"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("missing.json"), "{}", r.stderr);
}

/// An empty PATH is a usage error naming the argument: it would be taken for the working
/// directory, and an export would scatter entry files there.
#[test]
fn an_empty_path_is_refused_by_export_and_import() {
    let env = Env::with_project();
    env.add("kept", "Kept entry");
    let before: Vec<_> = std::fs::read_dir(env.root())
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .map(|e| e.file_name())
        .collect();
    for args in [
        &["export", "demo", ""][..],
        &["export", ""],
        &["import", "demo", ""],
    ] {
        let r = env.run(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("`PATH` is empty"),
            "{args:?}: {}",
            r.stderr
        );
        let mut json = args.to_vec();
        json.push("--json");
        let v = env.run(&json).json();
        assert_eq!(v["error"]["code"], "USAGE_ERROR", "{v}");
    }
    let after: Vec<_> = std::fs::read_dir(env.root())
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(after, before);
}

#[test]
fn export_never_writes_over_memlogs_own_files() {
    let env = Env::with_project();
    env.add("kept", "Kept entry");
    let log = env.root().join("ai-memory/demo/events.jsonl");
    let config = env.root().join("ai-memory/demo/memlog.json");
    let before = (std::fs::read(&log).ok(), std::fs::read(&config).ok());
    #[cfg(unix)]
    std::os::unix::fs::symlink(env.root().join("ai-memory/demo"), env.root().join("link"))
        .unwrap_or_else(|e| panic!("{e}"));
    for path in [
        "ai-memory/demo/events.jsonl",
        "ai-memory/demo/memlog.json",
        "ai-memory/global/events.jsonl",
        "ai-memory/.gitattributes",
        "ai-memory/demo/.memlog/",
        "ai-memory/demo/.memlog/access.jsonl",
        "link/events.jsonl",
    ] {
        for format in ["events", "jsonl", "json"] {
            let r = env.run(&["export", "demo", path, "--format", format]);
            assert_eq!(r.code, 2, "{path} {format}: {}", r.stderr);
            assert!(r.stderr.contains("memlog's own files"), "{}", r.stderr);
        }
    }
    assert_eq!(
        (std::fs::read(&log).ok(), std::fs::read(&config).ok()),
        before
    );
    assert_eq!(env.listed(), Some(1));
    // Exports beside them are where the requirements put them.
    env.run(&[
        "export",
        "demo",
        "ai-memory/demo/memory.jsonl",
        "--format",
        "jsonl",
    ])
    .ok();
    assert_eq!(env.listed(), Some(1));
}

#[test]
fn export_replaces_only_earlier_exports_and_never_gits_files() {
    let env = Env::with_project();
    let id = env.add("kept", "Kept entry");
    std::fs::create_dir_all(env.root().join(".git")).unwrap_or_else(|e| panic!("{e}"));
    let git_config = env.root().join(".git/config");
    std::fs::write(&git_config, "[core]\n").unwrap_or_else(|e| panic!("{e}"));
    #[cfg(unix)]
    std::os::unix::fs::symlink(env.root().join(".git"), env.root().join("g"))
        .unwrap_or_else(|e| panic!("{e}"));
    let notes = env.root().join("notes.txt");
    std::fs::write(&notes, "mine\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(env.root().join("entries")).unwrap_or_else(|e| panic!("{e}"));
    let foreign = env.root().join(format!("entries/{id}.json"));
    std::fs::write(&foreign, "{\"not\": \"a record\"}\n").unwrap_or_else(|e| panic!("{e}"));
    for format in ["events", "jsonl", "json"] {
        for path in [".git/config", ".git/new", "g/config", "sub/.git/x", ".git/"] {
            let r = env.run(&["export", "demo", path, "--format", format]);
            assert_eq!(r.code, 2, "{path} {format}: {}", r.stderr);
            assert!(r.stderr.contains("inside .git"), "{}", r.stderr);
        }
        let r = env.run(&["export", "demo", "notes.txt", "--format", format]);
        assert_eq!(r.code, 2, "{format}: {}", r.stderr);
        assert!(
            r.stderr
                .contains("notes.txt exists and is not a memlog export"),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains("remove the file first"), "{}", r.stderr);
    }
    let r = env.run(&["export", "demo", "entries/"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("is not a memlog export"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(&git_config).ok().as_deref(),
        Some("[core]\n")
    );
    assert!(!env.root().join(".git/new").exists());
    assert!(!env.root().join("sub").exists());
    assert_eq!(
        std::fs::read_to_string(&notes).ok().as_deref(),
        Some("mine\n")
    );
    assert!(std::fs::read_to_string(&foreign).is_ok_and(|t| t.contains("not")));
    // An export in any format is replaced by another in any format, and a directory export
    // by another.
    for first in ["events", "jsonl", "json"] {
        for then in ["events", "jsonl", "json"] {
            env.run(&["export", "demo", "out/demo", "--format", first])
                .ok();
            env.run(&["export", "demo", "out/demo", "--format", then])
                .ok();
        }
    }
    env.run(&["export", "demo", "out/entries/"]).ok();
    env.run(&["export", "demo", "out/entries/"]).ok();
}

#[test]
fn a_record_twice_in_one_input_is_imported_once() {
    let env = two_projects();
    let rec = json!({"section": "decisions", "kind": "decision", "subject": "ok", "scope": "repo", "summary": "Fine", "content": "x", "confidence": 0.9, "evidence": [{"type": "code", "uri": "src/a.rs#L1-L2", "note": "n"}], "created_by": "alice", "created_at": "2026-11-01T00:00:00Z"});
    let mut higher = rec.clone();
    higher["confidence"] = json!(0.95);
    std::fs::write(
        env.root().join("in.json"),
        json!([rec, rec, higher]).to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = env
        .run(&[
            "import",
            "demo",
            "in.json",
            "--conflict-strategy",
            "merge",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(r["imported"].as_array().map(Vec::len), Some(1), "{r}");
    assert_eq!(
        r["skipped"][0]["reason"], "the same record appears earlier in the input",
        "{r}"
    );
    // The third is another version of the same entry (same subject, scope and summary, no id
    // the project knows): the strategy applies to it.
    let id = r["imported"][0]["entry"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(r["merged"][0]["entry"], id.as_str(), "{r}");
    let shown = env.run(&["-p", "demo", "show", &id, "--json"]).ok().json();
    assert_eq!(
        (shown["created_by"].clone(), shown["created_at"].clone()),
        (json!("alice"), json!("2026-11-01T00:00:00.000Z"))
    );
    assert_eq!(shown["confidence"], 0.95);
}

/// An import reports its inputs in the order of the file, whatever order it applied them in.
#[test]
fn an_import_reports_in_input_order() {
    let env = Env::with_project();
    let a = env.add("a", "first");
    env.run(&["update", &a, "--summary", "first, updated"]).ok();
    env.add("b", "second");
    let file = env.root().join("events.jsonl");
    // Updates before creations: the import applies each event after its parents.
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    let mut lines: Vec<&str> = log.lines().collect();
    lines.reverse();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    let r = env
        .run(&["import", "demo", &file.display().to_string(), "--json"])
        .ok();
    let sources: Vec<String> = r.json()["skipped"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["source"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(sources.len(), 3, "{}", r.stdout);
    let mut sorted = sources.clone();
    sorted.sort_by_key(|s| {
        s.rsplit(' ')
            .next()
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0)
    });
    assert_eq!(sources, sorted);
}

/// Records exported from one project import into another whole: a record related to another is
/// related to the entry that record became (its id is derived anew on import), and a deprecated
/// draft without evidence is created as a draft, then deprecated.
#[test]
fn exported_records_import_with_their_relations_and_deprecated_drafts() {
    let env = two_projects();
    let a = add(&env, "demo", NOW, "decisions", "auth.tokens", "0.9", "t");
    // A changed entry: the record's id is not the one the import derives.
    env.run(&["-p", "demo", "update", &a, "--summary", "Tokens, revised"])
        .ok();
    let b = add_related(&env, &a);
    let draft = env
        .run(&[
            "add",
            "demo",
            "--section",
            "observations",
            "--kind",
            "hypothesis",
            "--subject",
            "auth.guess",
            "--scope",
            "repo",
            "--summary",
            "Maybe a cache",
            "--content",
            "Unconfirmed.",
            "--confidence",
            "0.7",
            "--status",
            "draft",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    env.run(&["-p", "demo", "deprecate", &draft, "--reason", "disproved"])
        .ok();
    env.run(&["-p", "demo", "export", "out.json"]).ok();
    let r = env.run(&["--json", "import", "copy", "out.json"]);
    let report = r.json();
    assert_eq!(r.code, 0, "{report}");
    assert_eq!(report["rejected"], json!([]), "{report}");
    assert_eq!(
        report["imported"].as_array().map(Vec::len),
        Some(3),
        "{report}"
    );
    let verify = env.run(&["--json", "verify", "copy"]).ok().json();
    assert_eq!(verify["ok"], true, "{verify}");
    let copy = env.run(&["-p", "copy", "export", "-"]).ok();
    let records: Value = serde_json::from_str(&copy.stdout).unwrap_or_else(|e| panic!("{e}"));
    let by_subject = |subject: &str| {
        records
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["subject"] == subject)
            .cloned()
            .unwrap_or_else(|| panic!("no {subject} in {records}"))
    };
    let (new_a, new_b) = (by_subject("auth.tokens"), by_subject("auth.refresh"));
    assert_ne!(new_a["id"], a.as_str());
    assert_ne!(new_b["id"], b.as_str());
    assert_eq!(new_b["related_entries"], json!([new_a["id"]]), "{records}");
    let guess = by_subject("auth.guess");
    assert_eq!(guess["status"], "deprecated", "{records}");
    assert_eq!(guess["evidence"], json!([]), "{records}");
}

/// An entry related to another entry of the same input is imported with it in one run, by
/// every way of moving entries: the policy's reference check sees what the import accepted
/// before (it looked only at the store, which holds the batch's events once it commits).
#[test]
fn an_entry_related_to_another_of_the_same_input_is_imported_in_one_run() {
    let env = two_projects();
    let a = add(&env, "demo", NOW, "decisions", "auth.tokens", "0.9", "t");
    let b = add_related(&env, &a);
    env.run(&["-p", "demo", "export", "out/ev.jsonl", "--format", "events"])
        .ok();
    env.run(&["-p", "demo", "export", "out/records.json"]).ok();
    for (project, file) in [("copy", "out/ev.jsonl"), ("records", "out/records.json")] {
        env.run(&["init", project]).ok();
        let r = env.run(&["--json", "import", project, file]);
        let report = r.json();
        assert_eq!(r.code, 0, "{file}: {report}");
        assert_eq!(report["rejected"], json!([]), "{file}: {report}");
        assert_eq!(
            report["imported"].as_array().map(Vec::len),
            Some(2),
            "{file}: {report}"
        );
        let again = env.run(&["--json", "import", project, file]).ok().json();
        assert_eq!(again["imported"], json!([]), "{file}: {again}");
    }
    let shown = env.run(&["-p", "copy", "show", &b, "--json"]).ok().json();
    assert_eq!(shown["related_entries"], json!([a]), "{shown}");
    env.run(&["init", "merged"]).ok();
    let r = env.run(&["--json", "merge-project", "demo", "merged"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let merged = env.run(&["-p", "merged", "show", &b, "--json"]).ok().json();
    assert_eq!(merged["related_entries"], json!([a]), "{merged}");
}

/// Options may stand between the project and the path, as with every other command.
#[test]
fn options_may_stand_between_the_project_and_the_path() {
    let env = crate::common::Env::with_project();
    let id = env.add("auth", "Sessions expire after 30 minutes");
    let out = env.run(&["export", "demo", "--format", "events", "-"]).ok();
    assert!(out.stdout.contains(&id), "{}", out.stdout);
    env.run(&["export", "demo", "--format", "jsonl", "saved.jsonl"])
        .ok();
    env.run(&["init", "other"]).ok();
    let r = env
        .run(&[
            "import",
            "other",
            "--conflict-strategy",
            "skip",
            "saved.jsonl",
        ])
        .ok();
    assert!(r.stdout.contains("1"), "{}", r.stdout);
    assert_eq!(
        env.run(&["list", "other", "--json"])
            .ok()
            .json()
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

/// An imported event is never an orphan: one whose entry's create, or one of whose parents,
/// is neither in the project nor accepted from the input is rejected with its reason, and the
/// project still verifies.
#[test]
fn an_import_rejects_events_whose_create_or_parents_it_does_not_have() {
    let env = two_projects();
    let a = add(&env, "demo", NOW, "learnings", "a", "0.7", "t");
    for (i, c) in ["0.8", "0.9"].iter().enumerate() {
        let at = format!("2026-11-2{}T10:00:00Z", 3 + i);
        env.run_at(&at, &["-p", "demo", "update", &a, "--confidence", c])
            .ok();
    }
    env.run(&["export", "demo", "ev.jsonl", "--format", "events"])
        .ok();
    let log = std::fs::read_to_string(env.root().join("ev.jsonl")).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 3, "{log}");
    let write = |name: &str, lines: &[String]| {
        std::fs::write(env.root().join(name), lines.join("\n") + "\n")
            .unwrap_or_else(|e| panic!("{e}"));
    };
    let import = |name: &str| env.run(&["import", "copy", name, "--json"]).json();
    let rejected = |r: &Value| -> Vec<String> {
        r["rejected"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| o["reason"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    // The create altered (its hash no longer matches): its updates go with it.
    let altered = lines[0].replace("\"content\":\"Details.\"", "\"content\":\"Other.\"");
    assert_ne!(altered, lines[0]);
    write(
        "altered.jsonl",
        &[altered, lines[1].to_owned(), lines[2].to_owned()],
    );
    let r = import("altered.jsonl");
    assert_eq!(r["imported"], json!([]), "{r}");
    let why = rejected(&r);
    assert_eq!(why.len(), 3, "{r}");
    assert!(why[1].contains("has no create event"), "{r}");
    // An update alone, without its entry's create.
    write("update.jsonl", &[lines[1].to_owned()]);
    let r = import("update.jsonl");
    assert_eq!(r["imported"], json!([]), "{r}");
    assert!(rejected(&r)[0].contains("has no create event"), "{r}");
    // The create and the second update, without the first: the second's parent is missing.
    write("gap.jsonl", &[lines[0].to_owned(), lines[2].to_owned()]);
    let r = import("gap.jsonl");
    assert_eq!(r["imported"].as_array().map(Vec::len), Some(1), "{r}");
    let why = rejected(&r);
    assert_eq!(why.len(), 1, "{r}");
    assert!(why[0].contains("neither in this log nor accepted"), "{r}");
    env.run(&["verify", "copy"]).ok();
    // The whole log, last line first: each event comes after what it descends from.
    let reversed: Vec<String> = lines.iter().rev().map(|l| (*l).to_owned()).collect();
    write("reversed.jsonl", &reversed);
    let r = import("reversed.jsonl");
    assert_eq!(r["imported"].as_array().map(Vec::len), Some(2), "{r}");
    assert_eq!(r["rejected"], json!([]), "{r}");
    env.run(&["verify", "copy"]).ok();
}

/// An imported event is refused, as a write would be, when its text hides or reorders itself
/// (a bidirectional override in an update's content), and nothing of it is appended.
#[test]
fn an_import_refuses_text_that_reorders_itself() {
    let env = two_projects();
    let a = add(&env, "demo", NOW, "learnings", "a", "0.7", "t");
    env.run(&["export", "demo", "ev.jsonl", "--format", "events"])
        .ok();
    let log = std::fs::read_to_string(env.root().join("ev.jsonl")).unwrap_or_default();
    let create = projections::decode_line(log.lines().next().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut set = serde_json::Map::new();
    set.insert("content".into(), "admin \u{202e}eurt = nimda".into());
    let update = projections::Event::build(
        &a,
        "elsewhere",
        "2026-11-23T10:00:00.000Z",
        vec![create.id.clone()],
        projections::EventData::Update { set, reason: None },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let text = format!(
        "{}\n{}\n",
        log.lines().next().unwrap_or_default(),
        update.to_line().unwrap_or_else(|e| panic!("{e}"))
    );
    std::fs::write(env.root().join("hidden.jsonl"), text).unwrap_or_else(|e| panic!("{e}"));
    let r = env
        .run(&["import", "copy", "hidden.jsonl", "--json"])
        .json();
    assert_eq!(r["imported"].as_array().map(Vec::len), Some(1), "{r}");
    let reason = r["rejected"][0]["reason"].to_string();
    assert!(reason.contains("U+202E"), "{r}");
    let copy =
        std::fs::read_to_string(env.root().join("ai-memory/copy/events.jsonl")).unwrap_or_default();
    assert!(!copy.contains('\u{202e}'), "{copy}");
}

/// A project that went through purge and gc moves to another by `merge-project` and by an
/// event export and import: its tombstones are copied as they are (the purge vouches for them
/// there too), and the target's log still verifies.
#[test]
fn tombstones_move_with_merge_project_and_import() {
    let env = two_projects();
    env.run(&["init", "third"]).ok();
    let keep = add(&env, "demo", NOW, "learnings", "keep", "0.7", "t");
    let gone = add(&env, "demo", NOW, "learnings", "gone", "0.8", "t");
    env.run(&[
        "-p",
        "demo",
        "purge",
        &gone,
        "--reason",
        "pasted by mistake",
    ])
    .ok();
    env.run(&["gc", "demo"]).ok();
    assert!(
        std::fs::read_to_string(env.root().join("ai-memory/demo/events.jsonl"))
            .unwrap_or_default()
            .contains("\"purged_by\":")
    );
    // A replacement purged: the supersede that created it is the tombstone, and it belongs
    // to the replaced entry too, which an export keeps.
    let replaced = env
        .run(&[
            "-p",
            "demo",
            "supersede",
            &keep,
            "--summary",
            "Replacement",
            "--content",
            "Kept",
        ])
        .ok()
        .stdout
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    env.run(&[
        "-p",
        "demo",
        "purge",
        &replaced,
        "--reason",
        "pasted by mistake",
    ])
    .ok();
    env.run(&["gc", "demo"]).ok();
    env.run(&["merge-project", "demo", "copy"]).ok();
    env.run(&["export", "demo", "ev.jsonl", "--format", "events"])
        .ok();
    let exported = std::fs::read_to_string(env.root().join("ev.jsonl")).unwrap_or_default();
    assert!(exported.contains("\"purged_by\":"), "{exported}");
    env.run(&["import", "third", "ev.jsonl"]).ok();
    for (project, purged) in [("copy", vec![&gone, &replaced]), ("third", vec![&replaced])] {
        let v = env.run(&["verify", project, "--json"]).json();
        assert_eq!(v["ok"], true, "{project}: {v}");
        std::fs::remove_dir_all(env.root().join(format!("ai-memory/{project}/.memlog")))
            .unwrap_or_else(|e| panic!("{e}"));
        for id in purged {
            let shown = env.run(&["-p", project, "show", id, "--json"]).ok().json();
            assert_eq!(shown["purged"], true, "{project}: {shown}");
        }
        let shown = env
            .run(&["-p", project, "show", &keep, "--json"])
            .ok()
            .json();
        assert_eq!(shown["status"], "superseded", "{project}: {shown}");
    }
}

/// The events of `demo` as an event export writes them, decoded, each with its line.
fn exported_events(env: &Env) -> Vec<(projections::Event, String)> {
    env.run(&["export", "demo", "ev.jsonl", "--format", "events"])
        .ok();
    std::fs::read_to_string(env.root().join("ev.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let e = projections::decode_line(l).unwrap_or_else(|e| panic!("{e}"));
            (e, l.to_owned())
        })
        .collect()
}

/// Writes `lines` to `name` in the workspace, one a line.
fn write_lines(env: &Env, name: &str, lines: &[String]) {
    std::fs::write(env.root().join(name), lines.join("\n") + "\n")
        .unwrap_or_else(|e| panic!("{e}"));
}

fn line_of(event: &projections::Event) -> String {
    event.to_line().unwrap_or_else(|e| panic!("{e}"))
}

fn reasons(report: &Value, key: &str) -> Vec<String> {
    report[key]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            o.get("reason")
                .or_else(|| o.get(1))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// An event that creates an entry (a create, a supersede's replacement) or sets its fields (an
/// update) passes the schema checks of `add` and `update` when it is imported or merged from
/// another project: a confidence out of range, a scope outside the pattern, a content over its
/// length, too many tags, a time not written as memlog writes it are each rejected with the
/// field named, and nothing of them reaches the log.
#[test]
fn imported_and_merged_events_pass_the_field_checks_of_add_and_update() {
    let env = two_projects();
    env.run(&["init", "third"]).ok();
    let a = add(&env, "demo", NOW, "learnings", "a", "0.7", "t");
    let (create, create_line) = exported_events(&env).remove(0);
    let projections::EventData::Create { fields, status } = &create.data else {
        panic!("not a create: {create_line}")
    };
    let build = |entry: &str, parents: Vec<String>, data| {
        projections::Event::build(
            entry,
            "elsewhere",
            "2026-11-23T10:00:00.000Z",
            parents,
            data,
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let mut wild = fields.clone();
    wild.subject = "f1".into();
    wild.confidence = 5.0;
    wild.scope = "../../etc".into();
    wild.content = "x".repeat(5000);
    wild.tags = vec!["t".into(); 40];
    let wild_create = build(
        "",
        Vec::new(),
        projections::EventData::Create {
            fields: wild,
            status: *status,
        },
    );
    let mut replacement = fields.clone();
    replacement.confidence = 9.0;
    replacement.scope = "bogus scope".into();
    let wild_supersede = projections::Event::supersede_with_replacement(
        &a,
        "elsewhere",
        "2026-11-23T10:00:00.000Z",
        vec![create.id.clone()],
        replacement,
        *status,
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut set = serde_json::Map::new();
    set.insert("confidence".into(), json!(7));
    let wild_update = build(
        &a,
        vec![create.id.clone()],
        projections::EventData::Update { set, reason: None },
    );
    let mut dated = fields.clone();
    dated.subject = "f2".into();
    dated.valid_to = Some("2027-01-01".into());
    let loose_time = build(
        "",
        Vec::new(),
        projections::EventData::Create {
            fields: dated,
            status: *status,
        },
    );
    let wild_lines: Vec<String> = [&wild_create, &wild_supersede, &wild_update, &loose_time]
        .into_iter()
        .map(line_of)
        .collect();
    write_lines(
        &env,
        "wild.jsonl",
        &[vec![create_line.clone()], wild_lines.clone()].concat(),
    );
    let r = env.run(&["import", "copy", "wild.jsonl", "--json"]).json();
    assert_eq!(r["imported"].as_array().map(Vec::len), Some(1), "{r}");
    let why = reasons(&r, "rejected");
    assert_eq!(why.len(), 4, "{r}");
    for field in ["confidence", "scope", "content", "tags"] {
        assert!(why[0].contains(&format!("{field}: ")), "{field}: {r}");
    }
    assert!(
        why[1].contains("scope: ") && why[1].contains("confidence: "),
        "{r}"
    );
    assert!(why[2].contains("confidence: `confidence` is 7"), "{r}");
    assert!(why[3].contains("valid_to: "), "{r}");
    let copy =
        std::fs::read_to_string(env.root().join("ai-memory/copy/events.jsonl")).unwrap_or_default();
    assert_eq!(copy, create_line + "\n");
    let listed = env
        .run(&["-p", "copy", "list", "--min-confidence", "0", "--json"])
        .ok()
        .json();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    // The same events in a project merged into another.
    let mut log = std::fs::read_to_string(env.log()).unwrap_or_default();
    for l in &wild_lines {
        log.push_str(l);
        log.push('\n');
    }
    std::fs::write(env.log(), log).unwrap_or_else(|e| panic!("{e}"));
    let r = env
        .run(&["merge-project", "demo", "third", "--json"])
        .json();
    assert_eq!(r["added"], 1, "{r}");
    let why: Vec<String> = r["rejected"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|pair| pair[1].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(why.len(), 4, "{r}");
    assert!(
        why.iter()
            .any(|w| w.contains("scope: `scope` is `../../etc`")),
        "{r}"
    );
    assert!(
        why.iter()
            .any(|w| w.contains("scope: `scope` is `bogus scope`")),
        "{r}"
    );
    env.run(&["verify", "third"]).ok();
}

/// An imported or merged event is refused when `verify` would refuse the log for its place in
/// it: a pin that names no parent (replay put it before its entry's create), a pin whose
/// parent belongs to another entry. The entry is left as it was: no conflict, a log that
/// verifies.
#[test]
fn an_event_that_verify_would_refuse_for_its_place_is_not_imported() {
    let env = two_projects();
    let a = add(&env, "demo", NOW, "learnings", "a", "0.7", "t");
    add(&env, "demo", NOW, "learnings", "b", "0.7", "t");
    let events = exported_events(&env);
    env.run(&["import", "copy", "ev.jsonl"]).ok();
    let other = events
        .iter()
        .find(|(e, _)| e.entry != a)
        .map(|(e, _)| e.id.clone())
        .unwrap_or_default();
    let pin = |at: &str, parents: Vec<String>| {
        projections::Event::build(
            &a,
            "elsewhere",
            at,
            parents,
            projections::EventData::Pin { reason: None },
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let orphan = pin("2000-01-01T00:00:00.000Z", Vec::new());
    let astray = pin("2026-11-23T10:00:00.000Z", vec![other]);
    write_lines(&env, "pins.jsonl", &[line_of(&orphan), line_of(&astray)]);
    let r = env.run(&["import", "copy", "pins.jsonl", "--json"]).json();
    assert_eq!(r["imported"], json!([]), "{r}");
    let why = reasons(&r, "rejected");
    assert_eq!(why.len(), 2, "{r}");
    assert!(why[0].contains("names no parent"), "{r}");
    assert!(why[1].contains("belongs to entry"), "{r}");
    let v = env.run(&["verify", "copy", "--json"]).ok().json();
    assert_eq!(v["conflicts"], json!([]), "{v}");
    // The same pin in a project merged into another.
    let mut log = std::fs::read_to_string(env.log()).unwrap_or_default();
    log.push_str(&line_of(&orphan));
    log.push('\n');
    std::fs::write(env.log(), log).unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["merge-project", "demo", "copy", "--json"]).json();
    assert_eq!(r["added"], 0, "{r}");
    assert!(
        r["rejected"][0][1]
            .as_str()
            .is_some_and(|w| w.contains("names no parent")),
        "{r}"
    );
    let v = env.run(&["verify", "copy", "--json"]).ok().json();
    assert_eq!(v["conflicts"], json!([]), "{v}");
}

/// A supersede without a replacement, or a consolidation, must name another entry the log or
/// the import holds: one pointing at nothing or at its own entry hid the entry with no
/// successor, and `verify` found nothing wrong.
#[test]
fn a_supersede_or_consolidation_into_nothing_is_not_imported() {
    let env = two_projects();
    let a = add(&env, "demo", NOW, "learnings", "a", "0.7", "t");
    let b = add(&env, "demo", NOW, "learnings", "b", "0.7", "t");
    let events = exported_events(&env);
    env.run(&["import", "copy", "ev.jsonl"]).ok();
    let head = events
        .iter()
        .find(|(e, _)| e.entry == a)
        .map(|(e, _)| e.id.clone())
        .unwrap_or_default();
    let change = |data| {
        projections::Event::build(
            &a,
            "elsewhere",
            "2026-11-23T10:00:00.000Z",
            vec![head.clone()],
            data,
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let missing = "m-aaaaaaaaaaaaaaaaaaaaaaaaaa".to_owned();
    let supersede = |by: &str| projections::EventData::Supersede {
        by: by.to_owned(),
        reason: None,
        replacement: None,
    };
    let consolidate = |into: &str| projections::EventData::Consolidate {
        into: into.to_owned(),
        reason: None,
    };
    let bad = [
        change(supersede(&missing)),
        change(supersede(&a)),
        change(consolidate(&missing)),
        change(consolidate(&a)),
    ];
    for event in &bad {
        write_lines(&env, "bad.jsonl", &[line_of(event)]);
        let r = env.run(&["import", "copy", "bad.jsonl", "--json"]).json();
        assert_eq!(r["imported"], json!([]), "{r}");
        let why = reasons(&r, "rejected");
        assert!(
            why.first()
                .is_some_and(|w| w.contains("itself") || w.contains("no create event")),
            "{r}"
        );
    }
    let shown = env.run(&["-p", "copy", "--json", "show", &a]).ok().json();
    assert_eq!(shown["status"], "active", "{shown}");
    // Into an entry the log holds, the same event is taken.
    write_lines(&env, "good.jsonl", &[line_of(&change(supersede(&b)))]);
    let r = env.run(&["import", "copy", "good.jsonl", "--json"]).json();
    assert_eq!(r["rejected"], json!([]), "{r}");
}

/// An imported or merged update must be one `memlog update` would write: one dated before
/// its parent, one that sets no field, and one without a reason that sets only the values the
/// entry has are each rejected, naming the event and the fix, and nothing of them is written.
/// With a reason, an update that changes nothing is a review, and is taken.
#[test]
fn an_update_memlog_update_would_refuse_is_not_imported() {
    let env = two_projects();
    env.run(&["init", "third"]).ok();
    let a = add(&env, "demo", NOW, "learnings", "a", "0.7", "t");
    let (create, create_line) = exported_events(&env).remove(0);
    env.run(&["import", "copy", "ev.jsonl"]).ok();
    let update = |at: &str, set: Value, reason: Option<&str>| {
        let Value::Object(set) = set else {
            panic!("not an object: {set}")
        };
        projections::Event::build(
            &a,
            "elsewhere",
            at,
            vec![create.id.clone()],
            projections::EventData::Update {
                set,
                reason: reason.map(str::to_owned),
            },
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let later = "2026-11-23T10:00:00.000Z";
    let bad = [
        (
            update("2026-01-01T00:00:00.000Z", json!({"confidence": 0.8}), None),
            format!(
                "is dated 2026-01-01T00:00:00.000Z, before its parent {}",
                create.id
            ),
        ),
        (update(later, json!({}), None), "sets no field".to_owned()),
        (
            update(later, json!({}), Some("looked again")),
            "sets no field".to_owned(),
        ),
        (
            update(later, json!({"confidence": 0.7}), None),
            "sets only values the entry already has".to_owned(),
        ),
    ];
    let log = env.root().join("ai-memory/copy/events.jsonl");
    let before = std::fs::read_to_string(&log).unwrap_or_default();
    for (event, why) in &bad {
        write_lines(&env, "bad.jsonl", &[line_of(event)]);
        let r = env.run(&["import", "copy", "bad.jsonl", "--json"]);
        assert_eq!(r.code, 1, "{}", r.stdout);
        let r = r.json();
        assert_eq!(r["imported"], json!([]), "{r}");
        assert_eq!(r["rejected"][0]["source"], "line 1", "{r}");
        let reason = reasons(&r, "rejected").join("");
        assert!(
            reason.contains(&format!("event {} (update of entry {a})", event.id))
                && reason.contains(why.as_str())
                && reason.contains("leave the event out"),
            "{why}: {r}"
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap_or_default(), before);
    }
    // With a reason, the same values are a review that found nothing to change.
    let review = update(later, json!({"confidence": 0.7}), Some("reviewed"));
    write_lines(&env, "review.jsonl", &[line_of(&review)]);
    let r = env
        .run(&["import", "copy", "review.jsonl", "--json"])
        .json();
    assert_eq!(r["rejected"], json!([]), "{r}");
    // The same events in a project merged into another.
    for (event, _) in &bad {
        env.append_log(format!("{}\n", line_of(event)).as_bytes());
    }
    let r = env
        .run(&["merge-project", "demo", "third", "--json"])
        .json();
    assert_eq!(r["added"], 1, "{r}");
    let rejected: Vec<String> = r["rejected"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|pair| pair[1].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(rejected.len(), bad.len(), "{r}");
    for (_, why) in &bad {
        assert!(
            rejected.iter().any(|w| w.contains(why.as_str())),
            "{why}: {r}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(env.root().join("ai-memory/third/events.jsonl"))
            .unwrap_or_default(),
        create_line + "\n"
    );
}

/// Two entries that each supersede the other (both present) would leave neither active and
/// no successor: the event that closes the cycle is rejected, from the same input or from an
/// earlier import, and by `merge-project`; a consolidation that closes one too.
#[test]
fn a_supersede_cycle_is_not_imported() {
    let env = two_projects();
    env.run(&["init", "third"]).ok();
    let a = add(&env, "demo", NOW, "learnings", "a", "0.7", "t");
    let b = add(&env, "demo", NOW, "learnings", "b", "0.7", "t");
    let events = exported_events(&env);
    env.run(&["import", "copy", "ev.jsonl"]).ok();
    let head = |entry: &str| {
        events
            .iter()
            .find(|(e, _)| e.entry == entry)
            .map(|(e, _)| e.id.clone())
            .unwrap_or_default()
    };
    let over = |entry: &str, data| {
        projections::Event::build(
            entry,
            "elsewhere",
            "2026-11-23T10:00:00.000Z",
            vec![head(entry)],
            data,
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let supersede = |by: &str| projections::EventData::Supersede {
        by: by.to_owned(),
        reason: None,
        replacement: None,
    };
    let a_by_b = over(&a, supersede(&b));
    let b_by_a = over(&b, supersede(&a));
    let b_into_a = over(
        &b,
        projections::EventData::Consolidate {
            into: a.clone(),
            reason: None,
        },
    );
    let cycle = format!("({b} → {a} → {b})");
    write_lines(&env, "cycle.jsonl", &[line_of(&a_by_b), line_of(&b_by_a)]);
    let r = env.run(&["import", "copy", "cycle.jsonl", "--json"]).json();
    assert_eq!(r["imported"].as_array().map(Vec::len), Some(1), "{r}");
    let why = reasons(&r, "rejected");
    assert_eq!(why.len(), 1, "{r}");
    assert!(
        why[0].contains(&format!(
            "event {} has entry {b} superseded by {a}",
            b_by_a.id
        )) && why[0].contains(&cycle)
            && why[0].contains("leave one of these events out"),
        "{r}"
    );
    // The cycle's other half in a later import, as a supersede or a consolidation.
    for event in [&b_by_a, &b_into_a] {
        write_lines(&env, "half.jsonl", &[line_of(event)]);
        let r = env.run(&["import", "copy", "half.jsonl", "--json"]).json();
        assert_eq!(r["imported"], json!([]), "{r}");
        assert!(reasons(&r, "rejected").join("").contains(&cycle), "{r}");
    }
    let shown = env.run(&["-p", "copy", "--json", "show", &b]).ok().json();
    assert_eq!(shown["status"], "active", "{shown}");
    // Both halves in a project merged into another: one is taken, the other refused.
    env.append_log(format!("{}\n{}\n", line_of(&a_by_b), line_of(&b_by_a)).as_bytes());
    let r = env
        .run(&["merge-project", "demo", "third", "--json"])
        .json();
    assert_eq!(r["added"], 3, "{r}");
    assert_eq!(r["rejected"].as_array().map(Vec::len), Some(1), "{r}");
    assert!(
        r["rejected"][0][1]
            .as_str()
            .is_some_and(|w| w.contains("leave one of these events out")),
        "{r}"
    );
    let listed = env
        .run(&["-p", "third", "list", "--min-confidence", "0", "--json"])
        .ok()
        .json();
    let active = listed
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["status"] == "active")
        .count();
    assert_eq!(active, 1, "{listed}");
    env.run(&["verify", "third"]).ok();
}

/// A purged entry whose confidence changed before the purge moves by `merge-project` after
/// `gc`: the change is checked on the entry as `gc` left it, whose content (summary, content,
/// evidence) is gone by design.
#[test]
fn a_purged_entry_changed_before_its_purge_moves_with_merge_project() {
    let env = two_projects();
    let a = add(&env, "demo", NOW, "learnings", "a", "0.7", "t");
    env.run(&["-p", "demo", "update", &a, "--confidence", "0.8"])
        .ok();
    env.run(&["-p", "demo", "purge", &a, "--reason", "pasted by mistake"])
        .ok();
    env.run(&["gc", "demo"]).ok();
    let r = env.run(&["merge-project", "demo", "copy", "--json"]).json();
    assert_eq!(
        (r["added"].as_u64(), &r["rejected"]),
        (Some(3), &json!([])),
        "{r}"
    );
    env.run(&["verify", "copy"]).ok();
    // Only blankness is excused: a change after the purge is checked like any other.
    let purge = log_events(&env, "copy")
        .into_iter()
        .find(|e| matches!(e.data, projections::EventData::Purge { .. }))
        .unwrap_or_else(|| panic!("no purge"));
    let mut set = serde_json::Map::new();
    set.insert("content".into(), json!("x".repeat(5000)));
    let long = projections::Event::build(
        &a,
        "elsewhere",
        "2026-11-24T10:00:00.000Z",
        vec![purge.id],
        projections::EventData::Update { set, reason: None },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    write_lines(&env, "long.jsonl", &[line_of(&long)]);
    let r = env.run(&["import", "copy", "long.jsonl", "--json"]).json();
    assert!(
        reasons(&r, "rejected")[0].contains("content: `content` has 5000"),
        "{r}"
    );
}

/// The events of a project's log.
fn log_events(env: &Env, project: &str) -> Vec<projections::Event> {
    std::fs::read_to_string(env.root().join(format!("ai-memory/{project}/events.jsonl")))
        .unwrap_or_default()
        .lines()
        .map(|l| projections::decode_line(l).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// An optional key written as `null` or `{}` (`"reason":null`, `"redacted":{}`) is valid and
/// decodes as absent: import and merge-project copy such a line byte for byte, so that its id
/// still hashes it once the store is rebuilt from the log.
#[test]
fn import_and_merge_project_copy_a_line_with_an_empty_optional_key_as_it_is() {
    let env = two_projects();
    env.run(&["init", "third"]).ok();
    let a = add(&env, "demo", NOW, "decisions", "db", "0.9", "t");
    let create = projections::decode_line(
        std::fs::read_to_string(env.log())
            .unwrap_or_default()
            .lines()
            .next()
            .unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let pin = crate::common::forge_line(json!({
        "actor": "x", "at": "2026-11-22T11:00:00.000Z", "data": {"reason": null},
        "entry": a, "parents": [create.id], "type": "pin", "v": 1
    }));
    let pin_id = projections::decode_line(&pin)
        .unwrap_or_else(|e| panic!("{e}"))
        .id;
    let purge = crate::common::forge_line(json!({
        "actor": "x", "at": "2026-11-22T12:00:00.000Z", "data": {"reason": "r", "redacted": {}},
        "entry": a, "parents": [pin_id], "type": "purge", "v": 1
    }));
    env.append_log(format!("{pin}\n{purge}\n").as_bytes());
    env.run(&["verify", "demo"]).ok();
    std::fs::copy(env.log(), env.root().join("ev.jsonl")).unwrap_or_else(|e| panic!("{e}"));
    let r = env
        .run(&["import", "copy", "ev.jsonl", "--json"])
        .ok()
        .json();
    assert_eq!(r["imported"].as_array().map(Vec::len), Some(3), "{r}");
    env.run(&["merge-project", "demo", "third"]).ok();
    let sorted = |project: &str| {
        let path = env.root().join(format!("ai-memory/{project}/events.jsonl"));
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines.sort();
        lines
    };
    for project in ["copy", "third"] {
        assert_eq!(sorted(project), sorted("demo"), "{project}");
        std::fs::remove_dir_all(env.root().join(format!("ai-memory/{project}/.memlog")))
            .unwrap_or_else(|e| panic!("{e}"));
        env.run(&["verify", project]).ok();
        env.run(&["list", project, "--status", "all"]).ok();
    }
}

/// An export of the current memory is read from the store an entry at a time; an export
/// `--as-of` a time after every event is selected from the log's events: both print the same
/// bytes, in every format and with any filter (none passing included).
#[test]
fn an_export_from_the_store_equals_one_from_the_events() {
    let env = two_projects();
    let a = add(&env, "demo", NOW, "decisions", "auth.tokens", "0.9", "t");
    add_related(&env, &a);
    add(&env, "demo", NOW, "state", "queue.depth", "0.7", "q");
    env.run_at(
        "2026-11-23T00:00:00Z",
        &[
            "-p",
            "demo",
            "supersede",
            &a,
            "--summary",
            "Tokens, revised",
        ],
    )
    .ok();
    let later = "2027-06-01T00:00:00Z";
    for format in ["json", "jsonl"] {
        for filter in [
            vec![],
            vec!["--section", "state"],
            vec!["--min-confidence", "0.99"],
        ] {
            let mut args = vec!["-p", "demo", "export", "-", "--format", format];
            args.extend(&filter);
            let stored = env.run(&args).ok().stdout;
            let mut as_of = args.clone();
            as_of.extend(["--as-of", later]);
            let selected = env.run(&as_of).ok().stdout;
            assert_eq!(stored, selected, "{format} {filter:?}");
            // JSON Lines of no entry is empty; a JSON array of none is `[]`.
            let none = filter.contains(&"0.99");
            assert_eq!(
                stored.is_empty(),
                none && format == "jsonl",
                "{format} {filter:?}"
            );
            if none && format == "json" {
                assert_eq!(stored, "[]\n");
            }
        }
    }
    // Written to a file, the same bytes.
    env.run(&["-p", "demo", "export", "out/all.json"]).ok();
    let file = std::fs::read_to_string(env.root().join("out/all.json")).unwrap_or_default();
    let printed = env.run(&["-p", "demo", "export", "-"]).ok().stdout;
    assert_eq!(file, printed);
}
