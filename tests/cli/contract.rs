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
    } else if v.get("warnings").is_some() {
        // Warnings given before the error stand beside it, never as an empty list.
        assert_eq!(
            keys,
            ["error", "success", "warnings"],
            "{name}: {}",
            r.stdout
        );
        assert_ne!(v["warnings"], serde_json::json!([]), "{name}: {}", r.stdout);
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

/// The usage line of an error shows the options typed, not those the environment gave
/// (`MEMLOG_ACTOR`, `MEMLOG_NOW`), which would look required.
#[test]
fn a_usage_line_leaves_out_options_given_by_the_environment() {
    let env = Env::with_project();
    let r = env.run(&["purge", "m-x"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("Usage: memlog purge --reason <REASON> <ID>"),
        "{}",
        r.stderr
    );
    let v = env
        .run(&["stats", "--range", "7d", "--from", "2026-01-01", "--json"])
        .json();
    assert_eq!(
        v["error"]["details"]["usage"], "memlog stats --range <RANGE> --json [PROJECT]",
        "{v}"
    );
    // Typed, they stay.
    let r = env.run(&["purge", "m-x", "--actor", "agent-8"]);
    assert!(
        r.stderr.contains("--actor <NAME>") && !r.stderr.contains("--now"),
        "{}",
        r.stderr
    );
}

/// A warning given before an error (a torn last line set aside) stands beside the error, as
/// docs/JSON.md says, and the schema takes it.
#[test]
fn an_error_carries_the_warnings_given_before_it() {
    let env = Env::with_project();
    env.add("a", "first");
    env.append_log(br#"{"actor":"x","at":"2026-11-2"#);
    let r = env.run(&["show", "m-zzzzzz", "--json"]);
    assert_eq!(r.code, 4, "{}", r.stdout);
    let v = check("show", &r);
    assert_eq!(v["error"]["code"], "NOT_FOUND", "{v}");
    let warning = v["warnings"][0]["message"].as_str().unwrap_or_default();
    assert!(warning.contains("quarantine"), "{v}");
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}

/// `verify`'s findings are its report's (`results.warnings`, `{line, offset, problem}`), in
/// JSON as in text; the envelope's `warnings` hold only what the command said.
#[test]
fn verify_keeps_its_findings_in_its_report() {
    let env = Env::with_project();
    env.add("a", "first");
    env.append_log(b"\n");
    let r = env.run(&["verify", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let v = check("verify", &r);
    let finding = &v["results"]["warnings"][0];
    assert_eq!(finding["line"], 2, "{v}");
    assert_eq!(finding["problem"], "blank line", "{v}");
    assert!(finding["offset"].as_u64().is_some_and(|o| o > 0), "{v}");
    assert_eq!(v["warnings"], serde_json::json!([]), "{v}");
    let r = env.run(&["verify"]).ok();
    assert!(r.stdout.contains(":2: warning: blank line"), "{}", r.stdout);
    assert!(r.stderr.is_empty(), "{}", r.stderr);
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
    let r = env.run(&["conflicts", "--check", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let v = check("conflicts", &r);
    assert_eq!(v["results"][0]["entry"], shared.as_str(), "{v}");
    assert_eq!(
        v["results"][0]["sides"].as_array().map(Vec::len),
        Some(2),
        "{v}"
    );
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

/// Runs `args` with `--json` and checks the answer against `name`'s schema; the answer.
#[track_caller]
fn json_run(env: &Env, name: &str, args: &[&str]) -> (Run, Value) {
    let mut all = args.to_vec();
    all.push("--json");
    let r = env.run(&all);
    let v = check(name, &r);
    (r, v)
}

/// A success (exit code 0 or 1, `success: true`) of `name`.
#[track_caller]
fn succeeds(env: &Env, name: &str, args: &[&str]) -> Value {
    let (r, v) = json_run(env, name, args);
    assert!(r.code <= 1, "{args:?}: {}{}", r.stdout, r.stderr);
    assert_eq!(v["success"], true, "{args:?}: {v}");
    v
}

/// A failure with `code` of `name`.
#[track_caller]
fn fails(env: &Env, name: &str, args: &[&str], code: &str) -> Value {
    let (r, v) = json_run(env, name, args);
    assert!(r.code >= 2, "{args:?}: {}", r.stdout);
    assert_eq!(v["error"]["code"], code, "{args:?}: {v}");
    v
}

#[test]
fn an_empty_or_overlong_id_is_refused_for_every_command() {
    let env = Env::with_project();
    let id = env.add("auth.tokens", "Use short-lived tokens");
    let long = format!("m-{}", "a".repeat(70_000));
    for (bad, code) in [
        ("", "USAGE_ERROR"),
        ("m-", "USAGE_ERROR"),
        (long.as_str(), "NOT_FOUND"),
    ] {
        let cases: Vec<(&str, Vec<&str>)> = vec![
            ("show", vec!["show", bad]),
            ("history", vec!["history", bad]),
            ("audit", vec!["audit", bad]),
            ("update", vec!["update", bad, "--summary", "x"]),
            ("supersede", vec!["supersede", bad, "--summary", "x"]),
            ("resolve", vec!["resolve", bad]),
            ("deprecate", vec!["deprecate", bad]),
        ];
        for (name, args) in cases {
            let v = fails(&env, name, &args, code);
            let message = v["error"]["message"].as_str().unwrap_or_default();
            assert!(message.len() < 400, "{name}: {message}");
        }
    }
    // A whole id is the longest accepted; a longer one names no entry, and is not echoed.
    let v = fails(&env, "show", &["show", &format!("{id}a")], "NOT_FOUND");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.contains(&id), "{message}");
    // The entry was not touched.
    let v = succeeds(&env, "history", &["history", &id]);
    assert_eq!(v["results"].as_array().map(Vec::len), Some(1), "{v}");
}

#[test]
fn lifecycle_commands_answer_in_the_contract() {
    let env = Env::with_project();
    let id = env.add("auth.tokens", "Use short-lived tokens");
    let other = env.add("auth.refresh", "Refresh in the gateway");
    env.run(&["pin", &id, "--reason", "core"]).ok();

    let v = succeeds(&env, "lifecycle-run", &["lifecycle", "run"]);
    assert_eq!(v["results"]["project"], "demo", "{v}");
    let v = succeeds(
        &env,
        "lifecycle-run",
        &["lifecycle", "run", "--all", "--dry-run"],
    );
    assert!(v["results"].is_array(), "{v}");
    fails(
        &env,
        "lifecycle-run",
        &["lifecycle", "run", "nope"],
        "NOT_FOUND",
    );

    let v = succeeds(
        &env,
        "lifecycle-daemon",
        &["lifecycle", "daemon", "--every", "1h", "--max-runs", "1"],
    );
    assert_eq!(v["results"].as_array().map(Vec::len), Some(1), "{v}");
    fails(
        &env,
        "lifecycle-daemon",
        &["lifecycle", "daemon", "--every", "soon"],
        "USAGE_ERROR",
    );

    let v = succeeds(&env, "lifecycle-report", &["lifecycle", "report"]);
    assert!(v["results"]["last_run"].is_object(), "{v}");
    fails(
        &env,
        "lifecycle-report",
        &["lifecycle", "report", "nope"],
        "NOT_FOUND",
    );

    let v = succeeds(&env, "pinned", &["pinned"]);
    assert_eq!(v["results"][0]["id"], id.as_str(), "{v}");
    fails(&env, "pinned", &["pinned", "nope"], "NOT_FOUND");

    succeeds(&env, "check-freshness", &["check-freshness"]);
    fails(
        &env,
        "check-freshness",
        &["check-freshness", "nope"],
        "NOT_FOUND",
    );

    // The evidence files do not exist here: found stale, still a success (exit code 1).
    let v = succeeds(
        &env,
        "validate-evidence",
        &["validate-evidence", "--dry-run"],
    );
    assert!(!v["results"]["entries"][0]["stale"].is_null(), "{v}");
    succeeds(&env, "validate-evidence", &["validate-evidence"]);
    fails(
        &env,
        "validate-evidence",
        &["validate-evidence", "nope"],
        "NOT_FOUND",
    );

    succeeds(
        &env,
        "purge",
        &[
            "purge",
            &other,
            "--reason",
            "pasted by mistake",
            "--dry-run",
        ],
    );
    let v = succeeds(
        &env,
        "purge",
        &["purge", &other, "--reason", "pasted by mistake"],
    );
    assert_eq!(v["results"]["id"], other.as_str(), "{v}");
    fails(
        &env,
        "purge",
        &["purge", "m-zzzzzzzzzz", "--reason", "gone"],
        "NOT_FOUND",
    );
    fails(
        &env,
        "purge",
        &["purge", &id, "--reason", " "],
        "VALIDATION_ERROR",
    );

    let v = succeeds(&env, "gc", &["gc", "--dry-run"]);
    assert_eq!(v["results"]["purges"], 1, "{v}");
    succeeds(&env, "gc", &["gc"]);
    fails(&env, "gc", &["gc", "nope"], "NOT_FOUND");

    env.run(&["init", "scratch"]).ok();
    fails(&env, "drop", &["drop", "scratch"], "USAGE_ERROR");
    let v = succeeds(&env, "drop", &["drop", "scratch", "--yes"]);
    assert_eq!(v["results"]["dropped"], true, "{v}");

    fails(&env, "dashboard", &["dashboard"], "USAGE_ERROR");
    fails(
        &env,
        "dashboard",
        &["dashboard", "--once", "--size", "80x24"],
        "USAGE_ERROR",
    );

    // stats: the full documented document, with the lifecycle run and the access counts.
    env.run(&["show", &id]).ok();
    let v = succeeds(&env, "stats", &["stats"]);
    assert!(
        v["results"]["statistics"]["lifecycle"]["last_run"].is_object(),
        "{v}"
    );
    let v = succeeds(&env, "stats", &["stats", "--all", "--range", "7d"]);
    assert!(v["results"]["projects"].is_array(), "{v}");
    fails(&env, "stats", &["stats", "--range", "soon"], "USAGE_ERROR");
}

#[test]
fn git_commands_answer_in_the_contract() {
    use crate::common::git;
    let env = Env::new();
    // Outside a git repository: the hooks cannot be installed.
    env.run(&["init", "demo"]).ok();
    let v = json_run(&env, "git-install", &["git", "install"]).1;
    assert_eq!(v["success"], false, "{v}");
    json_run(&env, "git-pre-commit", &["git", "pre-commit"]);

    git(&env, &["init", "-q", "-b", "main"]);
    let id = env.add("auth.tokens", "Use short-lived tokens");
    let v = succeeds(&env, "git-install", &["git", "install"]);
    assert!(
        !v["results"]["steps"].as_array().is_none_or(Vec::is_empty),
        "{v}"
    );

    succeeds(&env, "conflicts", &["conflicts"]);
    fails(&env, "conflicts", &["conflicts", "nope"], "NOT_FOUND");

    // sync-context: --dry-run, write, --check.
    let v = succeeds(&env, "sync-context", &["sync-context", "--dry-run"]);
    assert!(v["results"]["content"].is_string(), "{v}");
    let v = succeeds(&env, "sync-context", &["sync-context"]);
    assert_eq!(v["results"]["written"], true, "{v}");
    let v = succeeds(&env, "sync-context", &["sync-context", "--check"]);
    assert_eq!(v["results"]["up_to_date"], true, "{v}");
    fails(&env, "sync-context", &["sync-context", "nope"], "NOT_FOUND");

    git(&env, &["add", "-A"]);
    let v = succeeds(&env, "git-pre-commit", &["git", "pre-commit"]);
    assert_eq!(v["results"]["ok"], true, "{v}");

    // merge-driver: two copies of the log, one with a line more.
    let log = std::fs::read_to_string(env.log()).unwrap_or_else(|e| panic!("{e}"));
    env.run_at(
        "2026-11-23T00:00:00Z",
        &["update", &id, "--confidence", "0.9"],
    )
    .ok();
    let theirs = std::fs::read_to_string(env.log()).unwrap_or_else(|e| panic!("{e}"));
    let dir = env.root().join("merge");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    for (name, text) in [("base", &log), ("ours", &log), ("theirs", &theirs)] {
        std::fs::write(dir.join(name), text).unwrap_or_else(|e| panic!("{e}"));
    }
    let path = |n: &str| dir.join(n).display().to_string();
    let v = succeeds(
        &env,
        "merge-driver",
        &[
            "merge-driver",
            &path("base"),
            &path("ours"),
            &path("theirs"),
            "ai-memory/demo/events.jsonl",
        ],
    );
    assert_eq!(v["results"]["added"], 1, "{v}");
    json_run(
        &env,
        "merge-driver",
        &[
            "merge-driver",
            &path("base"),
            &path("missing"),
            &path("theirs"),
        ],
    );

    // export, import, fork, merge-project.
    let v = succeeds(&env, "export", &["export", "demo", "out/demo.json"]);
    assert_eq!(v["results"]["entries"], 1, "{v}");
    let v = succeeds(
        &env,
        "export",
        &["export", "demo", "-", "--format", "jsonl"],
    );
    assert!(v["results"].is_string(), "{v}");
    fails(
        &env,
        "export",
        &["export", "demo", "out/x.json", "--section", "bogus"],
        "USAGE_ERROR",
    );
    env.run(&["init", "other"]).ok();
    let v = succeeds(&env, "import", &["import", "other", "out/demo.json"]);
    assert_eq!(
        v["results"]["imported"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );
    fails(
        &env,
        "import",
        &["import", "other", "out/missing.json"],
        "USAGE_ERROR",
    );

    let v = succeeds(&env, "fork", &["fork", "demo", "demo-fork"]);
    assert_eq!(v["results"]["project"], "demo-fork", "{v}");
    let v = json_run(&env, "fork", &["fork", "demo", "demo-fork"]).1;
    assert_eq!(v["success"], false, "{v}");
    succeeds(
        &env,
        "merge-project",
        &["merge-project", "demo-fork", "demo"],
    );
    fails(
        &env,
        "merge-project",
        &["merge-project", "nope", "demo"],
        "NOT_FOUND",
    );

    let v = succeeds(&env, "git-uninstall", &["git", "uninstall"]);
    assert!(v["results"]["steps"].is_array(), "{v}");
}

/// An error quoting an oversized input says how much it left out instead of repeating it.
#[test]
fn an_error_never_repeats_a_huge_input() {
    let env = Env::with_project();
    let huge = "x".repeat(100_000);
    for args in [
        vec!["list", "--section", huge.as_str()],
        vec!["--now", huge.as_str(), "list"],
    ] {
        let r = env.run(&args);
        assert_ne!(r.code, 0);
        assert!(r.stderr.len() < 2_500, "{}", r.stderr.len());
        assert!(
            r.stderr.contains("more characters)"),
            "{}",
            &r.stderr[..200]
        );
    }
}

/// A project that does not exist answers `[]` (agent runs proceed) with a warning naming it;
/// writing to one creates it and says so on stderr, under `--json` too.
#[test]
fn an_unknown_project_is_named_by_reads_and_writes() {
    let env = Env::with_project();
    let r = env.run(&["--json", "query", "token", "nosuch"]).ok();
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_default();
    assert_eq!(v["results"], serde_json::json!([]), "{}", r.stdout);
    assert!(
        v["warnings"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("`nosuch` is not initialized")),
        "{}",
        r.stdout
    );
    let mut args = vec!["--json"];
    args.extend(crate::common::add_args(
        ("decisions", "decision"),
        "a",
        "first",
        "Body.",
        "0.8",
        "code:src/lib.rs#L1-L9:where it happens",
    ));
    args.push("fresh");
    let r = env.run(&args).ok();
    assert!(
        r.stderr.contains("note:") && r.stderr.contains("fresh"),
        "{}",
        r.stderr
    );
}
