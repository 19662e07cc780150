//! `projects`, `health`, `config validate` / `config schema`, the refusal of an invalid
//! configuration by every command, `--debug`, `completions`, and `bass-agents`.

use crate::common::Env;
use std::process::Command;

fn break_config(env: &Env) {
    let path = env.root().join("ai-memory/demo/memlog.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut c: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    c["policies"]["write"]["low_confidence_warning"] = serde_json::json!(1.5);
    c["policies"]["retrieval"]["max_results"] = serde_json::json!("fifty");
    c["policies"]["lifecycle"]["colour"] = serde_json::json!("blue");
    std::fs::write(&path, c.to_string()).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn projects_lists_every_project_with_its_entry_count() {
    let env = Env::with_project();
    env.add("auth.tokens", "Use short-lived tokens");
    env.add("auth.refresh", "Refresh tokens in the gateway");
    let listed = env.run(&["projects", "--json"]).ok().json();
    let rows = listed.as_array().unwrap_or_else(|| panic!("{listed}"));
    let names: Vec<&str> = rows.iter().filter_map(|r| r["project"].as_str()).collect();
    assert_eq!(names, ["demo", "global"]);
    assert_eq!(rows[0]["entries"], 2, "{listed}");
    assert_eq!(rows[1]["entries"], 0, "{listed}");
    let text = env.run(&["projects"]).ok().stdout;
    assert!(
        text.lines()
            .any(|l| l.starts_with("demo") && l.contains(" 2 ")),
        "{text}"
    );
}

#[test]
fn health_reports_a_healthy_project_and_names_why_one_is_not() {
    let env = Env::with_project();
    env.add("auth.tokens", "Use short-lived tokens");
    let r = env.run(&["health", "--json"]).ok().json();
    let h = &r[0];
    assert_eq!(h["project"], "demo", "{r}");
    assert_eq!(h["healthy"], true, "{r}");
    assert_eq!(h["log"]["readable"], true, "{r}");
    assert_eq!(h["entries"]["total"], 1, "{r}");
    assert_eq!(h["events"], 1, "{r}");
    assert_eq!(h["config"]["valid"], true, "{r}");
    assert!(
        h["projections"]["bytes_on_disk"].as_u64().unwrap_or(0) > 0,
        "{r}"
    );
    // No lifecycle run yet: said so, with no made-up value.
    assert!(h["last_lifecycle_run"].is_null(), "{r}");
    assert!(
        h["last_lifecycle_run_note"]
            .as_str()
            .unwrap_or_default()
            .starts_with("never"),
        "{r}"
    );
    let all = env.run(&["health", "--all", "--json"]).ok().json();
    assert_eq!(all.as_array().map(Vec::len), Some(2), "{all}");

    // The store deleted: still healthy, and it says the projections were not current.
    std::fs::remove_dir_all(env.root().join("ai-memory/demo/.memlog"))
        .unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["health", "--json"]).ok().json();
    assert_eq!(r[0]["projections"]["current"], false, "{r}");

    break_config(&env);
    let r = env.run(&["health"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("UNHEALTHY"), "{}", r.stdout);
    assert!(
        r.stdout.contains("memlog.json is invalid (3 problems)"),
        "{}",
        r.stdout
    );

    // A damaged line in the middle of the log: unhealthy, naming the line.
    let env = Env::with_project();
    env.add("auth.tokens", "Use short-lived tokens");
    env.add("auth.refresh", "Refresh in the gateway");
    let log = env.log();
    let text = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&log, text.replacen("\"v\":1", "\"v\":7", 1)).unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_dir_all(env.root().join("ai-memory/demo/.memlog"))
        .unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["health", "--json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let h = &r.json()[0];
    assert_eq!(h["healthy"], false, "{h}");
    assert!(
        h["problems"][0]
            .as_str()
            .unwrap_or_default()
            .contains("line 1"),
        "{h}"
    );
    // The text says what it does not know, not `null`.
    let r = env.run(&["health"]);
    assert!(
        r.stdout.contains("entries               unknown"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("null"), "{}", r.stdout);
}

#[test]
fn config_validate_names_every_invalid_key_and_every_command_refuses_it_alike() {
    let env = Env::with_project();
    let id = env.add("auth.tokens", "Use short-lived tokens");
    env.run(&["config", "validate"]).ok();
    break_config(&env);
    let r = env.run(&["config", "validate", "demo"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    for key in [
        "`policies.write.low_confidence_warning`: must be between 0 and 1, not 1.5",
        "`policies.retrieval.max_results`: must be a whole number, not a string",
        "`policies.lifecycle.colour`: unknown key",
    ] {
        assert!(r.stdout.contains(key), "{key} not in\n{}", r.stdout);
    }
    assert!(r.stdout.contains("invalid (3 problems)"), "{}", r.stdout);
    let v = env.run(&["config", "validate", "demo", "--json"]);
    assert_eq!(v.code, 1);
    let keys: Vec<String> = v.json()[0]["problems"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["key"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        keys,
        [
            "policies.lifecycle.colour",
            "policies.retrieval.max_results",
            "policies.write.low_confidence_warning"
        ]
    );

    // Every command that uses the project refuses it with the same message, and writes nothing.
    let log_before = std::fs::read(env.log()).unwrap_or_default();
    let mut messages = Vec::new();
    for args in [
        vec!["list"],
        vec!["query", "tokens"],
        vec!["show", id.as_str()],
        vec!["stats"],
        vec!["verify"],
        vec!["deprecate", id.as_str(), "--reason", "x"],
        vec![
            "add",
            "--section",
            "learnings",
            "--kind",
            "other",
            "--subject",
            "a.b",
            "--scope",
            "repo",
            "--summary",
            "s",
            "--content",
            "c",
            "--confidence",
            "0.9",
            "--evidence",
            "code:src/a.rs:x",
        ],
    ] {
        let r = env.run(&args);
        assert_eq!(r.code, 3, "{args:?}: {}{}", r.stdout, r.stderr);
        messages.push(r.stderr.clone());
    }
    assert!(messages.windows(2).all(|w| w[0] == w[1]), "{messages:#?}");
    assert!(
        messages[0].contains("is not a valid memlog.json"),
        "{}",
        messages[0]
    );
    assert!(
        messages[0].contains("memlog config validate demo"),
        "{}",
        messages[0]
    );
    assert_eq!(std::fs::read(env.log()).unwrap_or_default(), log_before);
}

/// A value of the wrong type (a negative number of days) hides none of the lifecycle policy's
/// other problems, and a value refused by the schema and by the policy's own checks is listed
/// once: by `config validate`, and in the refusal every command gives.
#[test]
fn config_validate_lists_every_lifecycle_problem_once() {
    let env = Env::with_project();
    let path = env.root().join("ai-memory/demo/memlog.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut c: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let l = &mut c["policies"]["lifecycle"];
    l["grace_period_days"] = serde_json::json!(-1);
    l["batch_size"] = serde_json::json!(0);
    l["archive_retention_days"] = serde_json::json!(0);
    l["decaying_threshold"] = serde_json::json!(1.5);
    std::fs::write(&path, c.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let problems = [
        "`policies.lifecycle.archive_retention_days`: must be at least 1, not 0",
        "`policies.lifecycle.batch_size`: must be at least 1, not 0",
        "`policies.lifecycle.decaying_threshold`: must be between 0 and 1, not 1.5",
        "`policies.lifecycle.grace_period_days`: must be at least 0, not -1",
    ];
    let r = env.run(&["config", "validate", "demo"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let listed: Vec<&str> = r.stdout.lines().skip(1).map(str::trim).collect();
    assert_eq!(listed, problems, "{}", r.stdout);
    assert!(r.stdout.contains("invalid (4 problems)"), "{}", r.stdout);
    let refused = env.run(&["list", "demo"]);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    for problem in problems {
        assert_eq!(
            refused.stderr.matches(problem).count(),
            1,
            "{problem}: {}",
            refused.stderr
        );
    }
}

/// Values of the right type but out of the lifecycle policy's ranges: `config validate`,
/// `health` and every other command agree that they are invalid.
#[test]
fn config_validate_and_health_refuse_what_every_command_refuses() {
    let path_of = |env: &Env| env.root().join("ai-memory/demo/memlog.json");
    for (key, value) in [
        (
            "decay",
            serde_json::json!({"function": "exponential", "lambda": -1}),
        ),
        ("decay_function", serde_json::json!("bogus")),
        ("default_ttl_days", serde_json::json!(0)),
        ("importance", serde_json::json!({"ttl_multiplier": 0.5})),
    ] {
        let env = Env::with_project();
        let path = path_of(&env);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        let mut c: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        c["policies"]["lifecycle"][key] = value;
        std::fs::write(&path, c.to_string()).unwrap_or_else(|e| panic!("{e}"));
        let v = env.run(&["config", "validate", "demo", "--json"]);
        assert_eq!(v.code, 1, "{key}: {}", v.stdout);
        let problem = v.json()[0]["problems"][0]["key"].clone();
        assert!(
            problem
                .as_str()
                .is_some_and(|k| k.starts_with(&format!("policies.lifecycle.{key}"))),
            "{key}: {}",
            v.stdout
        );
        let h = env.run(&["health", "demo"]);
        assert_ne!(h.code, 0, "{key}: {}", h.stdout);
        let l = env.run(&["list", "demo", "--json"]);
        assert_eq!(l.code, 3, "{key}: {}", l.stdout);
        assert_eq!(
            l.json()["error"]["code"],
            "VALIDATION_ERROR",
            "{}",
            l.stdout
        );
    }
}

#[test]
fn the_schema_in_docs_is_the_one_generated_from_the_code() {
    let env = Env::new();
    let generated = env.run(&["config", "schema"]).ok().stdout;
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schemas/memlog.schema.json");
    let shipped = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        generated == shipped,
        "{} differs from `memlog config schema`: regenerate it with \
         `cargo run -- config schema > docs/schemas/memlog.schema.json`",
        path.display()
    );
}

#[test]
fn debug_logs_the_active_configuration() {
    let env = Env::with_project();
    let r = env.run(&["list", "--debug"]).ok();
    assert!(
        r.stderr.contains("debug: project `demo`: configuration"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("\"min_confidence\":0.6"), "{}", r.stderr);
    assert!(
        r.stderr.contains("debug: project `demo`: store"),
        "{}",
        r.stderr
    );
}

#[test]
fn completions_are_generated_for_each_shell() {
    let env = Env::new();
    for (shell, marker) in [
        ("bash", "_memlog()"),
        ("zsh", "#compdef memlog"),
        ("fish", "complete -c memlog"),
    ] {
        let r = env.run(&["completions", shell]).ok();
        assert!(
            r.stdout.contains(marker),
            "{shell}: {}",
            &r.stdout[..r.stdout.len().min(200)]
        );
        assert!(
            r.stdout.contains("health"),
            "{shell} completions lack `health`"
        );
    }
    let r = env.run(&["completions", "powershell"]);
    assert_eq!(r.code, 2);
}

#[test]
fn bass_agents_help_and_version_exit_zero() {
    let bin = env!("CARGO_BIN_EXE_bass-agents");
    for flag in ["--help", "-h", "--version", "-V"] {
        let out = Command::new(bin)
            .arg(flag)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(out.status.success(), "bass-agents {flag}: {:?}", out.status);
        assert!(!out.stdout.is_empty(), "bass-agents {flag} printed nothing");
    }
    let out = Command::new(bin)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("bass-agents {}", env!("CARGO_PKG_VERSION"))
    );
    let out = Command::new(bin)
        .args(["memory", "--version"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success());
    let out = Command::new(bin)
        .arg("nonsense")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_configuration_found_valid_before_is_checked_again_once_it_changes() {
    let env = Env::with_project();
    env.add("a.subject", "first");
    // The valid configuration is remembered; a command after an edit still sees the edit.
    env.run(&["list"]).ok();
    let seen = env.root().join("ai-memory/demo/.memlog/config-valid");
    assert!(seen.is_file(), "the valid configuration is remembered");
    break_config(&env);
    let r = env.run(&["list"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("policies.write.low_confidence_warning"),
        "{}",
        r.stderr
    );
}
