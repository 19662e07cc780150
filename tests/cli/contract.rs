//! The one JSON contract: every command's `--json` output, successes and failures, matches its
//! schema in docs/schemas/commands/ (generated from the code, see src/cli/schemas.rs).

use crate::common::{Env, Run};
use serde_json::Value;
use std::path::PathBuf;

fn schema_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/schemas/commands")
}

#[track_caller]
fn check(name: &str, r: &Run) -> Value {
    let path = schema_dir().join(format!("{name}.schema.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let v = r.envelope();
    let problems = memlog::cli::json_schema::problems(&schema, &v);
    assert!(
        problems.is_empty(),
        "`{name}` --json does not match {}:\n{}\n{}",
        path.display(),
        problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        r.stdout
    );
    // Every success has the same three keys; every failure the error format.
    let keys: Vec<&String> = v
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    if v["success"] == true {
        assert_eq!(
            keys,
            ["results", "success", "warnings"],
            "{name}: {}",
            r.stdout
        );
    } else {
        assert_eq!(keys, ["error", "success"], "{name}: {}", r.stdout);
    }
    v
}

fn stdin(env: &Env, args: &[&str], input: &str) -> Run {
    use std::io::Write;
    let mut cmd = env.command(args);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{e}"));
    if let Some(mut s) = child.stdin.take() {
        let _ = s.write_all(input.as_bytes());
    }
    crate::common::output(child.wait_with_output())
}

const ENTRY: [&str; 16] = [
    "--section",
    "decisions",
    "--kind",
    "decision",
    "--subject",
    "auth.tokens",
    "--scope",
    "repo",
    "--summary",
    "Use short-lived tokens",
    "--content",
    "Fifteen minutes.",
    "--confidence",
    "0.9",
    "--evidence",
    "code:src/auth.rs#L1-L9:issuing",
];

#[test]
fn every_command_answers_in_the_one_contract() {
    let env = Env::new();
    check("init", &env.run(&["init", "demo", "--json"]).ok());
    let mut add = vec!["add", "--json"];
    add.extend(ENTRY);
    let added = check("add", &env.run(&add).ok());
    let id = added["results"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let low = env
        .run(&[
            "add",
            "--json",
            "--section",
            "learnings",
            "--kind",
            "other",
            "--subject",
            "cache",
            "--scope",
            "repo",
            "--summary",
            "The cache may be cold",
            "--content",
            "x",
            "--confidence",
            "0.3",
            "--evidence",
            "assumption:x:a hunch",
        ])
        .ok();
    let v = check("add", &low);
    assert_eq!(v["warnings"][0]["rule"], "low_confidence", "{v}");
    assert!(
        low.warnings().iter().any(|w| w.contains("below 0.5")),
        "{:?}",
        low.warnings()
    );
    let low_id = v["results"]["id"].as_str().unwrap_or_default().to_owned();

    for (name, args) in [
        ("show", vec!["show", id.as_str()]),
        ("list", vec!["list"]),
        ("query", vec!["query", "tokens"]),
        ("query", vec!["query", "tokens", "--summary-only"]),
        ("history", vec!["history", id.as_str()]),
        ("audit", vec!["audit"]),
        ("stats", vec!["stats"]),
        ("verify", vec!["verify"]),
        ("rebuild", vec!["rebuild"]),
        ("dump", vec!["dump"]),
        ("pin", vec!["pin", id.as_str(), "--reason", "core"]),
        ("unpin", vec!["unpin", id.as_str()]),
        (
            "update",
            vec!["update", id.as_str(), "--confidence", "0.95"],
        ),
        (
            "deprecate",
            vec!["deprecate", low_id.as_str(), "--reason", "unfounded"],
        ),
        ("secrets-rules", vec!["secrets", "rules"]),
        ("projects", vec!["projects"]),
        ("health", vec!["health"]),
        ("config-validate", vec!["config", "validate"]),
        ("config-schema", vec!["config", "schema"]),
        ("completions", vec!["completions", "fish"]),
    ] {
        let mut args = args;
        args.push("--json");
        check(name, &env.run(&args).ok());
    }
    let replaced = check(
        "supersede",
        &env.run(&[
            "supersede",
            &id,
            "--summary",
            "Use 10-minute tokens",
            "--json",
        ])
        .ok(),
    );
    assert_eq!(replaced["results"]["superseded"], id.as_str());

    let task = r#"{"goal":"token lifetime","memory_enabled":true}"#;
    let v = check(
        "context",
        &stdin(&env, &["context", "--json", "-"], task).ok(),
    );
    assert!(v["results"]["memory_context"].is_array(), "{v}");
    let v = check(
        "context",
        &stdin(
            &env,
            &["context", "--json", "--format", "prompt", "-"],
            task,
        )
        .ok(),
    );
    assert!(
        v["results"]["prompt"]
            .as_str()
            .unwrap_or_default()
            .contains("10-minute"),
        "{v}"
    );
    check(
        "context",
        &stdin(&env, &["context", "--json", "-"], r#"{"goal":"x"}"#).ok(),
    );

    // validate: an array of verdicts whether one update or several came in.
    let one = r#"{"operation":"create","entry":{"section":"decisions"}}"#;
    let v = check("validate", &stdin(&env, &["validate", "--json", "-"], one));
    assert_eq!(v["results"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["results"][0]["index"], 1, "{v}");
    let v = check(
        "validate",
        &stdin(
            &env,
            &["validate", "--json", "-"],
            &format!("[{one},{one}]"),
        ),
    );
    assert_eq!(v["results"].as_array().map(Vec::len), Some(2), "{v}");

    let new_id = replaced["results"]["id"].as_str().unwrap_or_default();
    let batch = format!(
        r#"[{{"operation":"deprecate","target_id":"{new_id}","reason":"old"}},{{"operation":"deprecate","target_id":"m-zzzzzzzzzz"}}]"#
    );
    let r = stdin(&env, &["apply", "--json", "-"], &batch);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let v = check("apply", &r);
    assert_eq!(v["results"]["skipped"][0]["index"], 2, "{v}");

    let r = stdin(
        &env,
        &["secrets", "scan", "--json", "-"],
        "nothing secret here\n",
    );
    check("secrets-scan", &r.ok());
}

#[test]
fn every_failure_is_the_error_format() {
    let env = Env::with_project();
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        ("show", vec!["show", "m-zzzzzzzzzz"], "NOT_FOUND"),
        ("list", vec!["list", "--status", "bogus"], "USAGE_ERROR"),
        ("list", vec!["list", "--no-such-flag"], "USAGE_ERROR"),
        ("query", vec!["query", "x", "--limit", "0"], "USAGE_ERROR"),
        ("stats", vec!["stats", "nope"], "NOT_FOUND"),
        ("add", vec!["add", "--summary", "x"], "VALIDATION_ERROR"),
        (
            "list",
            vec!["--workspace", "/nonexistent/memlog", "list"],
            "USAGE_ERROR",
        ),
    ];
    for (name, args, code) in cases {
        let mut args = args;
        args.push("--json");
        let r = env.run(&args);
        assert_ne!(r.code, 0, "{args:?}");
        let v = check(name, &r);
        assert_eq!(v["error"]["code"], code, "{args:?}: {v}");
    }
    // A usage error says what is wrong, the fix clap suggests and the usage line.
    let r = env.run(&["list", "--limt", "3", "--json"]);
    let message = r.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(message.contains("--limt"), "{message}");
    assert!(message.contains("--limit"), "{message}");
    assert!(message.contains("usage: memlog list"), "{message}");
    let r = env.run(&["list", "--workspace", "/nonexistent/memlog"]);
    assert!(
        r.stderr
            .contains("--workspace /nonexistent/memlog: no such directory"),
        "{}",
        r.stderr
    );
}

#[test]
fn every_command_has_a_schema() {
    use clap::CommandFactory;
    let command = memlog::cli::Cli::command();
    for sub in command.get_subcommands() {
        let name = sub.get_name();
        if name == "mcp" {
            continue; // speaks MCP, not --json
        }
        let names: Vec<String> = if sub.has_subcommands() {
            sub.get_subcommands()
                .map(|s| format!("{name}-{}", s.get_name()))
                .collect()
        } else {
            vec![name.to_owned()]
        };
        for n in names {
            assert!(
                schema_dir().join(format!("{n}.schema.json")).is_file(),
                "no docs/schemas/commands/{n}.schema.json: add `{n}` to src/cli/schemas.rs"
            );
        }
    }
}

#[test]
fn messages_name_the_problem_and_the_fix() {
    let env = Env::with_project();
    let id = env.add("auth.tokens", "Use short-lived tokens");
    env.add("auth.refresh", "Refresh in the gateway");

    // A credential is named with the right article, never echoed.
    let fake_aws = "AKIAQ7FAKEFAKEFAKE42";
    let r = env.run(&[
        "add",
        "--section",
        "learnings",
        "--kind",
        "other",
        "--subject",
        "aws",
        "--scope",
        "repo",
        "--summary",
        "The deploy key",
        "--content",
        &format!("key {fake_aws}"),
        "--confidence",
        "0.9",
        "--evidence",
        "code:src/a.rs:x",
    ]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("looks like an AWS"), "{}", r.stderr);
    assert!(!r.stderr.contains(fake_aws), "{}", r.stderr);

    // secrets scan takes a folder.
    let notes = env.root().join("notes/deep");
    std::fs::create_dir_all(&notes).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(notes.join("a.txt"), format!("token {fake_aws}\n"))
        .unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["secrets", "scan", "notes"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("notes/deep/a.txt:1:7"), "{}", r.stdout);

    // A damaged line: the error says how to restore the log from git; verify counts 1 problem.
    let log = env.log();
    let text = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&log, text.replacen(&id, "m-damaged", 1)).unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_dir_all(env.root().join("ai-memory/demo/.memlog"))
        .unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["list"]);
    assert_eq!(r.code, 6, "{}", r.stderr);
    assert!(r.stderr.contains("git checkout -- "), "{}", r.stderr);
    assert!(r.stderr.contains("memlog verify"), "{}", r.stderr);
    let r = env.run(&["verify"]);
    assert!(
        r.stdout.contains(": 1 problem\n") || r.stdout.trim_end().ends_with("1 problem"),
        "{}",
        r.stdout
    );

    // projects lists a broken project with its problem instead of failing.
    let r = env.run(&["projects", "--json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let rows = check("projects", &r);
    assert!(rows["results"][0]["error"].is_string(), "{rows}");
    assert_eq!(rows["results"][1]["entries"], 0, "{rows}");
}

#[test]
fn resolve_answers_in_the_contract() {
    use crate::common::git;
    let env = Env::new();
    git(&env, &["init", "-q", "-b", "main"]);
    env.run(&["init", "demo"]).ok();
    let shared = env.add("shared.subject", "written before the branches split");
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "base"]);
    git(&env, &["checkout", "-qb", "agent-a"]);
    env.run_at(
        "2026-11-23T00:00:00Z",
        &["update", &shared, "--confidence", "0.9"],
    )
    .ok();
    git(&env, &["commit", "-qam", "a"]);
    git(&env, &["checkout", "-q", "main"]);
    env.run_at(
        "2026-11-23T00:00:01Z",
        &["update", &shared, "--confidence", "0.7"],
    )
    .ok();
    git(&env, &["commit", "-qam", "b"]);
    git(&env, &["merge", "-q", "--no-edit", "agent-a"]);
    let r = env.run_at(
        "2026-11-24T00:00:00Z",
        &[
            "resolve",
            &shared,
            "--confidence",
            "0.9",
            "--reason",
            "measured",
            "--json",
        ],
    );
    let v = check("resolve", &r.ok());
    assert_eq!(v["results"]["entry"]["conflict"], false, "{v}");
    // Nothing left to resolve: a refusal in the error format.
    let r = env.run(&["resolve", &shared, "--json"]);
    assert_eq!(r.code, 3, "{}", r.stdout);
    check("resolve", &r);
}
