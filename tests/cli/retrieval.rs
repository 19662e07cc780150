//! `query`, `list` filters and `context`: smart defaults, scope hierarchy, global memory,
//! annotations, explanations, budgets.

use crate::common::Env;
use memlog::retrieval::budget::estimate_tokens;
use serde_json::{Value, json};

macro_rules! snap {
    ($name:expr, $value:expr) => {
        insta::with_settings!({ snapshot_path => "../../snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!($name, $value);
        });
    };
}

fn entry(summary: &str, scope: &str, confidence: f64, evidence: &str) -> Value {
    json!({
        "section": "decisions", "kind": "decision", "subject": "deploy.pipeline",
        "scope": scope, "summary": summary, "content": format!("Details: {summary}."),
        "tags": ["deploy"], "confidence": confidence,
        "evidence": [{"type": evidence, "uri": match evidence { "assumption" => "-", "ticket" => "https://github.com/acme/app/issues/7", _ => "docs/deploy.md" }, "note": "why"}],
    })
}

/// Applies creates to `project` and returns their ids in order.
fn apply(env: &Env, project: &str, entries: &[Value]) -> Vec<String> {
    let text: String = entries
        .iter()
        .map(|e| format!("{}\n", json!({"operation": "create", "entry": e})))
        .collect();
    let file = env.dir.path().join(format!("{project}-updates.jsonl"));
    std::fs::write(&file, text).unwrap_or_else(|e| panic!("{e}"));
    let r = env
        .run(&["--json", "apply", project, &file.display().to_string()])
        .ok();
    r.json()["applied"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", r.stdout))
        .iter()
        .map(|a| a["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// `n` confident repo entries "Deploy step <i> runs after the checks" with doc evidence.
fn deploy_steps(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            entry(
                &format!("Deploy step {i} runs after the checks"),
                "repo",
                0.9,
                "doc",
            )
        })
        .collect()
}

fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|e| e["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A project with entries that exercise every rule, and one global entry.
fn fixture() -> (Env, Vec<String>, Vec<String>) {
    let env = Env::with_project();
    let mut state = entry(
        "Deployment freeze is on until the release",
        "repo",
        0.9,
        "doc",
    );
    state["section"] = "state".into();
    state["kind"] = "other".into();
    state["valid_from"] = "2026-11-01T00:00:00Z".into();
    state["valid_to"] = "2026-11-25T00:00:00Z".into();
    let mut expired = state.clone();
    expired["summary"] = "Deployment window is Tuesday".into();
    expired["valid_to"] = "2026-11-10T00:00:00Z".into();
    let mut draft = entry("Deploys could use canaries", "repo", 0.9, "doc");
    draft["status"] = "draft".into();
    let mut guess = entry(
        "Deploys may fail on cold caches",
        "repo",
        0.45,
        "assumption",
    );
    guess["kind"] = "hypothesis".into();
    let ids = apply(
        &env,
        "demo",
        &[
            entry(
                "Deploys go through the blue-green pipeline",
                "service:auth",
                0.9,
                "doc",
            ),
            entry("Deploy approvals need one reviewer", "repo", 0.8, "ticket"),
            entry(
                "Billing deploys run at night",
                "service:billing",
                0.9,
                "doc",
            ),
            state,
            expired,
            draft,
            guess,
        ],
    );
    let global = apply(
        &env,
        "global",
        &[entry("Never deploy on Fridays", "org", 0.95, "doc")],
    );
    (env, ids, global)
}

#[test]
fn defaults_filter_rank_and_annotate() {
    let (env, ids, global) = fixture();
    let r = env.run(&["--json", "query", "deploying", "demo"]).ok();
    let got = ids_of(&r.json());
    // Active, confident, unexpired, from the project and global; no draft, guess or expired.
    for want in [&ids[0], &ids[1], &ids[2], &ids[3], &global[0]] {
        assert!(got.contains(want), "{want} missing from {got:?}");
    }
    for gone in [&ids[4], &ids[5], &ids[6]] {
        assert!(!got.contains(gone), "{gone} should be filtered out");
    }
    let items = r.json();
    let find = |id: &str| {
        items
            .as_array()
            .and_then(|a| a.iter().find(|e| e["id"] == id))
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(find(&global[0])["annotations"], json!(["global"]));
    assert_eq!(find(&global[0])["global"], json!(true));
    assert_eq!(find(&ids[3])["annotations"], json!(["approaching_expiry"]));
    // The near-expiry entry is demoted below the others of equal relevance class.
    assert_eq!(got.last(), Some(&ids[3]), "{got:?}");

    // Lowering the threshold shows the guess, marked low-confidence.
    let r = env
        .run(&[
            "--json",
            "query",
            "deploy",
            "demo",
            "--min-confidence",
            "0.4",
        ])
        .ok();
    let items = r.json();
    let guess = items
        .as_array()
        .and_then(|a| a.iter().find(|e| e["id"] == ids[6].as_str()))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(guess["annotations"], json!(["low_confidence"]));

    // --status all and --include-expired bring back the draft and the expired entry.
    let r = env
        .run(&[
            "--json",
            "query",
            "deploy",
            "demo",
            "--status",
            "all",
            "--include-expired",
        ])
        .ok();
    let got = ids_of(&r.json());
    assert!(got.contains(&ids[4]) && got.contains(&ids[5]), "{got:?}");
    // The expired one says so.
    let expired: Vec<Value> = r
        .json()
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["annotations"].to_string().contains("\"expired\""))
        .cloned()
        .collect();
    assert_eq!(expired.len(), 1, "{}", r.stdout);
    assert!(expired[0]["valid_to"].is_string(), "{}", r.stdout);
    // --no-global leaves global memory out.
    let r = env
        .run(&["--json", "query", "deploy", "demo", "--no-global"])
        .ok();
    assert!(!ids_of(&r.json()).contains(&global[0]));
}

fn ids_of(v: &Value) -> Vec<String> {
    ids(v)
}

#[test]
fn scope_hierarchy_and_filters_before_text() {
    let (env, ids, global) = fixture();
    let r = env
        .run(&[
            "--json",
            "query",
            "deploy",
            "demo",
            "--scope",
            "service:auth",
        ])
        .ok();
    let got = ids_of(&r.json());
    assert!(got.contains(&ids[0]) && got.contains(&ids[1]) && got.contains(&global[0]));
    assert!(
        !got.contains(&ids[2]),
        "service:billing must not be returned: {got:?}"
    );
    let r = env
        .run(&["--json", "list", "demo", "--scope", "service:billing"])
        .ok();
    assert!(ids_of(&r.json()).iter().all(|i| i != &ids[0]));
    let r = env
        .run(&[
            "--json",
            "query",
            "deploy",
            "demo",
            "--tags",
            "deploy,nothing",
        ])
        .ok();
    assert_eq!(r.json(), json!([]));
    // Spaces around the commas are not part of the tags.
    let spaced = env
        .run(&["--json", "list", "demo", "--tags", " deploy , "])
        .ok();
    let plain = env
        .run(&["--json", "list", "demo", "--tags", "deploy"])
        .ok();
    assert_eq!(ids_of(&spaced.json()), ids_of(&plain.json()));
    assert!(!ids_of(&plain.json()).is_empty());
}

#[test]
fn vocabulary_errors_name_the_allowed_values() {
    let env = Env::with_project();
    for (args, allowed) in [
        (
            &["query", "x", "--status", "bogus"][..],
            "active, superseded, deprecated, draft, all",
        ),
        (
            &["query", "x", "--section", "Decisions"],
            "decisions, state, observations, learnings",
        ),
        (&["list", "--kind", "choice"], "decision, requirement"),
        (&["query", "x", "--scope", "team"], "service:<name>"),
        (&["query", "x", "--limit", "51"], "50"),
        (
            &[
                "query",
                "x",
                "--min-confidence",
                "1",
                "--max-confidence",
                "0",
            ],
            "no entry can match",
        ),
        (
            &[
                "list",
                "--created-after",
                "2027-01-01",
                "--created-before",
                "2026-01-01",
            ],
            "no entry can match",
        ),
    ] {
        let r = env.run(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(allowed), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn uninitialized_memory_answers_an_empty_array() {
    let env = Env::new();
    let r = env.run(&["--json", "query", "anything", "nowhere"]).ok();
    assert_eq!(r.json(), json!([]));
    let task = r#"{"goal":"ship it","memory_enabled":true}"#;
    let r = crate::common::output(
        env.command(&["context", "nowhere", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                if let Some(mut s) = c.stdin.take() {
                    s.write_all(task.as_bytes())?;
                }
                c.wait_with_output()
            }),
    )
    .ok();
    assert_eq!(r.json()["memory_context"], json!([]));
}

/// Two entries, the second naming the first in `related_entries`: their ids.
fn related_pair(env: &Env) -> (String, String) {
    let first = apply(
        env,
        "demo",
        &[entry("Use canary deploys", "repo", 0.9, "doc")],
    );
    let mut second = entry("Canary size is five percent", "repo", 0.9, "doc");
    second["related_entries"] = json!([first[0]]);
    second["summary"] = "Canary traffic share is five percent".into();
    let second = apply(env, "demo", &[second]);
    (first[0].clone(), second[0].clone())
}

#[test]
fn summary_only_and_related() {
    let env = Env::with_project();
    let (first, _) = related_pair(&env);
    let r = env
        .run(&["--json", "query", "traffic share", "--summary-only"])
        .ok();
    let results = r.json().as_array().cloned().unwrap_or_default();
    assert!(!results.is_empty(), "{}", r.stdout);
    for e in &results {
        let mut keys: Vec<&String> = e
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        keys.sort();
        assert_eq!(
            keys,
            ["confidence", "id", "kind", "scope", "subject", "summary"]
        );
    }
    let r = env
        .run(&["--json", "query", "traffic share", "--include-related"])
        .ok();
    let got = ids_of(&r.json());
    assert!(got.contains(&first), "related entry missing: {got:?}");
}

/// `--explain` says why an entry that `--include-related` added is scored by its composite
/// alone although the query has text; "no text" is said of a query without text only.
#[test]
fn explain_says_why_a_related_entry_is_scored_by_its_composite() {
    let env = Env::with_project();
    let (_, second) = related_pair(&env);
    let r = env
        .run(&["query", "traffic share", "--include-related", "--explain"])
        .ok();
    let why = format!(
        "= composite (related to {second}, added by --include-related, not ranked by the text: decay"
    );
    assert!(r.stdout.contains(&why), "{why}\n{}", r.stdout);
    assert!(!r.stdout.contains("no text"), "{}", r.stdout);
    let r = env.run(&["query", "--explain"]).ok();
    assert!(
        r.stdout.contains("= composite (no text: decay"),
        "{}",
        r.stdout
    );
}

#[test]
fn explain_shows_every_component_and_rule() {
    let (env, _, _) = fixture();
    let r = env.run(&["query", "deploys", "demo", "--explain"]).ok();
    snap!("query_explain", r.stdout);
}

fn context(env: &Env, args: &[&str], task: &str) -> crate::common::Run {
    // A command refused before it reads the task (a missing task file) may close its input
    // first: it is judged by what it printed, not by the broken pipe.
    crate::common::stdin_run(env, args, task.as_bytes())
}

#[test]
fn context_fills_memory_context_or_leaves_the_task_alone() {
    let (env, ids, global) = fixture();
    let disabled = "{\"goal\": \"deploy\",  \"memory_enabled\": false}";
    let r = context(&env, &["context", "demo", "-"], disabled).ok();
    assert_eq!(r.stdout.trim_end(), disabled);
    let r = context(&env, &["context", "demo", "-"], "{\"goal\":\"deploy\"}").ok();
    assert_eq!(r.stdout.trim_end(), "{\"goal\":\"deploy\"}");
    // As a prompt, a disabled task gives the empty prompt, in the shape `--format prompt`
    // always answers with, and says why it is empty.
    let prompt = ["context", "demo", "-", "--format", "prompt"];
    let r = context(&env, &prompt, disabled).ok();
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr.contains("`memory_enabled` is not true"),
        "{}",
        r.stderr
    );
    let r = context(&env, &[&["--json"][..], &prompt].concat(), disabled).ok();
    assert_eq!(
        r.json(),
        json!({"prompt": "", "entries": 0, "tokens": 0, "budget": 1200}),
        "{}",
        r.stdout
    );
    assert!(
        r.warnings()
            .iter()
            .any(|w| w.contains("`memory_enabled` is not true")),
        "{}",
        r.stdout
    );
    let before = std::fs::read_to_string(env.root().join("ai-memory/demo/.memlog/queries.jsonl"))
        .unwrap_or_default();
    assert!(before.is_empty(), "a disabled task ran a query");

    let task = r#"{"goal":"how do deploys work","memory_enabled":true,"scope":"service:auth"}"#;
    let r = context(&env, &["--json", "context", "demo", "-"], task).ok();
    let ctx = r.json()["memory_context"].clone();
    let list = ctx.as_array().cloned().unwrap_or_default();
    assert!(!list.is_empty() && list.len() <= 10);
    let confidences: Vec<f64> = list
        .iter()
        .map(|e| e["confidence"].as_f64().unwrap_or(0.0))
        .collect();
    assert!(
        confidences.windows(2).all(|w| w[0] >= w[1]),
        "{confidences:?}"
    );
    assert!(
        list.iter()
            .all(|e| e.get("content").is_none() && e["status"] == "active")
    );
    assert!(!ids_of(&ctx).contains(&ids[2]), "out of scope");
    // Fields an agent leaves empty are absent, not filters no entry passes.
    let blank = r#"{"goal":"how do deploys work","memory_enabled":true,"scope":"","subject":" "}"#;
    let r = context(&env, &["--json", "context", "demo", "-"], blank).ok();
    let unfiltered = r.json()["memory_context"].clone();
    assert!(ids_of(&unfiltered).contains(&ids[2]), "{unfiltered}");
    // Global entries are marked as in a query's answer.
    let global_entry = list
        .iter()
        .find(|e| e["id"] == global[0].as_str())
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(global_entry["annotations"], json!(["global"]), "{ctx}");

    for budget in [0, 20, 60, 120, 200, 400, 1200] {
        let r = context(
            &env,
            &[
                "context",
                "demo",
                "-",
                "--format",
                "prompt",
                "--budget",
                &budget.to_string(),
            ],
            task,
        )
        .ok();
        assert!(
            estimate_tokens(&r.stdout) <= budget,
            "budget {budget}: {} tokens\n{}",
            estimate_tokens(&r.stdout),
            r.stdout
        );
    }
    let r = context(&env, &["context", "demo", "-", "--format", "prompt"], task).ok();
    snap!("context_prompt", r.stdout);
}

/// A budget too small for any entry says so, and names the budget that shows the first one.
#[test]
fn a_budget_too_small_for_any_entry_names_the_budget_that_shows_one() {
    let (env, _, _) = fixture();
    let task = r#"{"goal":"how do deploys work","memory_enabled":true,"scope":"service:auth"}"#;
    let prompt = |budget: &str| {
        let args = [
            "context", "demo", "-", "--format", "prompt", "--budget", budget,
        ];
        context(&env, &args, task).ok().stdout
    };
    let small = prompt("120");
    assert!(!small.contains("lower-ranked"), "{small}");
    let needed = small
        .split("the first needs a budget of ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no budget named: {small}"));
    assert!(
        small.contains("the token budget of 120 is too small for any entry"),
        "{small}"
    );
    let enough = prompt(needed);
    assert!(enough.contains("1. ["), "budget {needed}: {enough}");
}

/// Every budget below the first entry's need says so, within the budget, as soon as the header
/// and that line fit; below that the prompt is empty and a warning names the budget needed (on
/// standard error, or in `warnings` with `--json`). No budget leaves entries out silently.
#[test]
fn every_budget_too_small_for_any_entry_names_the_budget_needed() {
    let (env, _, _) = fixture();
    let task = r#"{"goal":"how do deploys work","memory_enabled":true,"scope":"service:auth"}"#;
    let prompt = |budget: usize, json: bool| {
        let budget = budget.to_string();
        let mut args = vec![
            "context", "demo", "-", "--format", "prompt", "--budget", &budget,
        ];
        if json {
            args.insert(0, "--json");
        }
        context(&env, &args, task).ok()
    };
    let named = |text: &str| -> Option<usize> {
        text.split("the first needs a budget of ")
            .nth(1)?
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    let needed = named(&prompt(120, false).stdout).unwrap_or_else(|| panic!("no budget named"));
    assert!(
        prompt(needed, false).stdout.contains("1. ["),
        "budget {needed}"
    );
    let mut said = false;
    for budget in 0..needed {
        let r = prompt(budget, false);
        assert!(
            estimate_tokens(&r.stdout) <= budget,
            "budget {budget}: {}",
            r.stdout
        );
        assert!(
            !r.stdout.contains("lower-ranked"),
            "budget {budget}: {}",
            r.stdout
        );
        if r.stdout.is_empty() {
            assert!(
                !said,
                "budget {budget}: empty after a smaller budget said it"
            );
            assert_eq!(
                named(&r.stderr),
                Some(needed),
                "budget {budget}: {}",
                r.stderr
            );
        } else {
            said = true;
            assert!(
                r.stdout.starts_with("## Memory for project demo")
                    && r.stdout.contains(&format!(
                        "the token budget of {budget} is too small for any entry"
                    )),
                "budget {budget}: {}",
                r.stdout
            );
            assert_eq!(
                named(&r.stdout),
                Some(needed),
                "budget {budget}: {}",
                r.stdout
            );
            // Nothing but, on a loaded machine, the slow-query warning.
            assert!(
                r.stderr
                    .lines()
                    .all(|l| l.contains("retrieval.slow_query_ms")),
                "budget {budget}: {}",
                r.stderr
            );
        }
    }
    assert!(said, "no budget below {needed} said it");
    // With --json, the empty prompt's warning is in `warnings`.
    let r = prompt(10, true);
    assert_eq!(r.json()["prompt"], "", "{}", r.stdout);
    let warnings = r.warnings();
    assert!(
        warnings.iter().any(|w| named(w) == Some(needed)),
        "{warnings:?}"
    );
}

#[test]
fn queries_are_logged() {
    let (env, _, _) = fixture();
    env.run(&["query", "deploy", "demo", "--kind", "decision"])
        .ok();
    let log = std::fs::read_to_string(env.root().join("ai-memory/demo/.memlog/queries.jsonl"))
        .unwrap_or_else(|e| panic!("{e}"));
    let line: Value = serde_json::from_str(log.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(line["project"], "demo");
    assert_eq!(line["filters"]["kind"], json!(["decision"]));
    assert_eq!(line["filters"]["text"], "deploy");
    assert!(line["result_count"].as_u64().is_some() && line["execution_time_ms"].is_number());
    let r = env.run(&["query", "deploy", "demo", "--debug"]).ok();
    assert!(
        r.stderr.contains("execution time") && r.stderr.contains("scanned"),
        "{}",
        r.stderr
    );
}

/// `list` with a filter that few entries pass: the newest entries are read first, and when they
/// yield too few the candidates come from the feature records. Either way the answer is every
/// passing entry, newest first.
#[test]
fn list_finds_the_few_entries_a_selective_filter_keeps() {
    let env = Env::with_project();
    let mut old = entry("Cache invalidation is event driven", "repo", 0.9, "doc");
    old["section"] = "learnings".into();
    old["kind"] = "other".into();
    let file = env.dir.path().join("old.jsonl");
    std::fs::write(
        &file,
        format!("{}\n", json!({"operation": "create", "entry": old})),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let first = env
        .run_at(
            "2026-11-01T00:00:00Z",
            &["--json", "apply", "demo", &file.display().to_string()],
        )
        .ok();
    let old_id = first.json()["applied"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // More newer entries than `list` reads before it turns to the feature records.
    let newer = deploy_steps(600);
    assert_eq!(apply(&env, "demo", &newer).len(), 600);
    let found = env.run(&["--json", "list", "demo", "--kind", "other"]).ok();
    assert_eq!(ids(&found.json()), vec![old_id.clone()]);
    let none = env
        .run(&[
            "--json",
            "list",
            "demo",
            "--kind",
            "other",
            "--section",
            "state",
        ])
        .ok();
    assert_eq!(ids(&none.json()), Vec::<String>::new());
    // The newest entries still come first without a selective filter.
    let recent = env.run(&["--json", "list", "demo", "--limit", "3"]).ok();
    assert_eq!(ids(&recent.json()).len(), 3);
    assert!(!ids(&recent.json()).contains(&old_id));
}

/// One argument that looks like a file is the input, so a mistyped name is reported as missing
/// instead of being taken for a project while the task is read from standard input.
#[test]
fn context_names_a_missing_task_file() {
    let env = Env::with_project();
    for args in [
        vec!["context", "nosuch.json"],
        vec!["context", "demo", "nosuch.json"],
    ] {
        let r = context(&env, &args, "{\"goal\": \"x\"}");
        assert_eq!(r.code, 2, "{args:?}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("cannot read `nosuch.json`"),
            "{}",
            r.stderr
        );
    }
    // A project name alone still reads the task from standard input.
    let r = context(&env, &["context", "demo"], "{\"goal\": \"x\"}").ok();
    assert!(r.stdout.contains("\"goal\""), "{}", r.stdout);
}

/// The prompt gives a procedure its ordered steps and an experience its outcome and project
/// (requirements 8.3 and 8.4 of the retrieval-context document); other entries their summary.
#[test]
fn the_prompt_carries_steps_and_outcomes() {
    let env = Env::with_project();
    env.run(&crate::common::add_args(
        ("learnings", "runbook_step"),
        "payments.deploy",
        "Deploy payments safely",
        "1. Stop the consumers. 2. Wait for the queue to drain. 3. Deploy.",
        "0.9",
        "doc:docs/runbook.md:the runbook",
    ))
    .ok();
    env.run(&crate::common::add_args(
        ("observations", "incident"),
        "payments.outage",
        "Payments deploy caused an outage",
        "Rolled back within five minutes; no payment was lost.",
        "0.9",
        "log:logs/incident.log:timeline",
    ))
    .ok();
    let task = r#"{"goal":"deploy payments","memory_enabled":true}"#;
    let r = context(&env, &["context", "demo", "-", "--format", "prompt"], task).ok();
    assert!(
        r.stdout
            .contains("steps: 1. Stop the consumers. 2. Wait for the queue to drain. 3. Deploy."),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(
            "project demo; outcome: Rolled back within five minutes; no payment was lost."
        ),
        "{}",
        r.stdout
    );
}

/// A query whose reader is gone before it prints (`| head`, a closed pipe) is still counted:
/// its accesses and its query log line are written before the answer.
#[test]
fn a_query_into_a_closed_pipe_is_still_recorded() {
    let env = Env::with_project();
    env.add("cache", "Cache lives five minutes");
    for _ in 0..3 {
        let (reader, writer) = std::io::pipe().unwrap_or_else(|e| panic!("{e}"));
        drop(reader);
        let status = env
            .command(&["query", "cache"])
            .stdout(writer)
            .status()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(status.success());
    }
    let stats = env.run(&["stats", "--json"]).ok().json();
    assert_eq!(stats["statistics"]["query_count"], 3, "{stats}");
}

/// A query of common words only asks for nothing: an empty answer and a warning that says why,
/// not every entry by its score; `list` still lists.
#[test]
fn a_query_of_stop_words_only_matches_nothing() {
    let (env, _, _) = fixture();
    for text in ["what is it", "who?", "the"] {
        let r = env
            .run(&["--json", "query", text, "demo", "--include-archived"])
            .ok();
        assert_eq!(r.json(), json!([]), "{text}");
        assert!(
            r.warnings()
                .iter()
                .any(|w| w.contains("no word to search for")),
            "{text}: {:?}",
            r.warnings()
        );
    }
    assert!(
        env.run(&["--json", "list", "demo"])
            .ok()
            .json()
            .as_array()
            .is_some_and(|a| !a.is_empty())
    );
}

/// A word that is in no entry is corrected only when it is a slip of the fingers of a word an
/// entry writes: "deplyo" finds the deploy entries; "election" and "selection" (one letter
/// apart, either way) and "parking" (a slip from a word whose stem is that of "Paris") find
/// nothing.
#[test]
fn only_slips_are_corrected() {
    let env = Env::with_project();
    env.add("ui.selection", "Selection of rows keeps the header visible");
    env.add("ops.deploy", "Deploys go through the pipeline");
    env.add("travel.fatima", "Fatima travels to Paris in March");
    let found = env.run(&["--json", "query", "deplyo"]).ok().json();
    assert_eq!(found.as_array().map(Vec::len), Some(1), "{found}");
    // "parking" slips to "pariing", whose stem is that of "Paris": no entry writes it.
    for text in ["leader election", "stale", "parking"] {
        let none = env.run(&["--json", "query", text]).ok().json();
        assert_eq!(none, json!([]), "{text}");
    }
    // "selection" is "election" with an `s` (the key beside `e`) typed before it: another word.
    let env = Env::with_project();
    env.add("board.vote", "The board election happens in March");
    let none = env.run(&["--json", "query", "selection"]).ok().json();
    assert_eq!(none, json!([]), "selection");
}

/// `list --limit 0` lists nothing, however many entries match (as `list --archived --limit 0`).
#[test]
fn list_limit_zero_lists_nothing() {
    let env = Env::with_project();
    apply(&env, "demo", &deploy_steps(2));
    let json = env.run(&["--json", "list", "demo", "--limit", "0"]).ok();
    assert_eq!(json.json(), json!([]), "{}", json.stdout);
    assert!(json.warnings().is_empty(), "{}", json.stdout);
    let text = env.run(&["list", "demo", "--limit", "0"]).ok();
    assert_eq!(text.stdout.trim(), "no entries", "{}", text.stdout);
}

/// When `list` leaves entries out, its JSON says so in `warnings`, as its text says in a footer;
/// when every matching entry is shown (however many entries the project has), neither does.
#[test]
fn list_says_when_entries_were_left_out() {
    let env = Env::with_project();
    let entries = deploy_steps(5);
    let created = apply(&env, "demo", &entries);
    for id in &created[..2] {
        env.run(&["deprecate", id, "--reason", "done"]).ok();
    }
    let cut = env
        .run(&["--json", "list", "demo", "--status", "all", "--limit", "3"])
        .ok();
    assert_eq!(ids(&cut.json()).len(), 3);
    assert_eq!(
        cut.warnings(),
        vec!["showing 3 of 5 entries; use --limit N or --all".to_owned()]
    );
    let text = env.run(&["list", "demo", "--limit", "3"]).ok();
    assert!(
        text.stdout
            .contains("(showing 3 of 5 entries; use --limit N or --all)"),
        "{}",
        text.stdout
    );
    // Exactly the three active entries match: none was left out.
    for args in [
        &["list", "demo", "--status", "active", "--limit", "3"][..],
        &["list", "demo", "--limit", "5"],
        &["list", "demo", "--all"],
    ] {
        let json = env.run(&[&["--json"][..], args].concat()).ok();
        assert!(json.warnings().is_empty(), "{args:?}: {}", json.stdout);
        let text = env.run(args).ok();
        assert!(
            !text.stdout.contains("showing"),
            "{args:?}: {}",
            text.stdout
        );
    }
}

/// A `--max-confidence` below the policy's default minimum (0.6), without `--min-confidence`,
/// lifts that default, with a warning naming it, instead of matching nothing; an explicit
/// minimum above the maximum stays an error.
#[test]
fn max_confidence_below_the_default_minimum_lifts_it() {
    let env = Env::with_project();
    let mut guess = entry("Deploys may be slow", "repo", 0.4, "assumption");
    guess["section"] = "observations".into();
    guess["kind"] = "hypothesis".into();
    let created = apply(
        &env,
        "demo",
        &[guess, entry("Deploys go blue-green", "repo", 0.9, "doc")],
    );
    let r = env
        .run(&["--json", "query", "deploy", "--max-confidence", "0.5"])
        .ok();
    assert_eq!(ids(&r.json()), vec![created[0].clone()], "{}", r.stdout);
    let warnings = r.warnings();
    assert!(
        warnings.iter().any(|w| w.contains("--max-confidence 0.5")
            && w.contains("min_confidence")
            && w.contains("0.6")
            && w.contains("--min-confidence")),
        "{warnings:?}"
    );
    // The same on the text output's standard error.
    let text = env
        .run(&["query", "deploy", "--max-confidence", "0.5"])
        .ok();
    assert!(text.stdout.contains(&created[0][..12]), "{}", text.stdout);
    assert!(
        text.stderr.contains("warning: --max-confidence 0.5"),
        "{}",
        text.stderr
    );
    // A maximum at or above the default minimum keeps it, silently.
    let r = env
        .run(&["--json", "query", "deploy", "--max-confidence", "0.95"])
        .ok();
    assert_eq!(ids(&r.json()), vec![created[1].clone()], "{}", r.stdout);
    assert!(r.warnings().is_empty(), "{}", r.stdout);
    // An explicit minimum is the user's: below the maximum it applies, above it is refused.
    let r = env
        .run(&[
            "--json",
            "query",
            "deploy",
            "--min-confidence",
            "0.45",
            "--max-confidence",
            "0.5",
        ])
        .ok();
    assert_eq!(r.json(), json!([]), "{}", r.stdout);
    assert!(r.warnings().is_empty(), "{}", r.stdout);
    let refused = env.run(&[
        "query",
        "deploy",
        "--min-confidence",
        "0.6",
        "--max-confidence",
        "0.5",
    ]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
}

/// A subject, scope or tag filter no entry can have is refused (exit 2) naming the option, the
/// limit and the fix, by `list`, `query` and `context`, and nothing goes into the query log:
/// an empty tag list matched everything, an empty subject nothing, and an over-long subject went
/// whole into the log.
#[test]
fn filter_values_no_entry_can_have_are_refused() {
    let env = Env::with_project();
    apply(&env, "demo", &deploy_steps(2));
    let log = env.root().join("ai-memory/demo/.memlog/queries.jsonl");
    let long_subject = "s".repeat(100_000);
    let long_scope = format!("service:{}", "a".repeat(200));
    let long_tag = "t".repeat(65);
    let many_tags = vec!["t"; 33].join(",");
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["--tags", ""],
            vec!["--tags", "no tag given", "--tags deploy,ci"],
        ),
        (vec!["--tags", ","], vec!["--tags", "no tag given"]),
        (vec!["--tags", " , "], vec!["--tags", "no tag given"]),
        (
            vec!["--tags", &long_tag],
            vec!["--tags", "65 characters", "64"],
        ),
        (vec!["--tags", &many_tags], vec!["--tags", "33 tags", "32"]),
        (
            vec!["--subject", ""],
            vec!["--subject", "empty", "leave it out"],
        ),
        (vec!["--subject", " "], vec!["--subject", "empty"]),
        (
            vec!["--subject", &long_subject],
            vec!["--subject", "100000 characters", "200", "shorter"],
        ),
        (
            vec!["--scope", &long_scope],
            vec!["--scope", "208 characters", "108"],
        ),
    ];
    for (filter, needles) in &cases {
        for command in [&["list", "demo"][..], &["query", "deploy", "demo"]] {
            let args = [command, &filter[..]].concat();
            let r = env.run(&args);
            assert_eq!(r.code, 2, "{command:?} {needles:?}: {}", r.stderr);
            for n in needles {
                assert!(r.stderr.contains(n), "{command:?}: {n}: {}", r.stderr);
            }
            assert!(
                r.stderr.len() < 2000,
                "{command:?}: {} bytes",
                r.stderr.len()
            );
        }
    }
    assert!(
        std::fs::read_to_string(&log).unwrap_or_default().is_empty(),
        "a refused query was logged"
    );
    // The task's subject of `context` is named as the task's.
    let task = json!({"goal": "deploy", "memory_enabled": true, "subject": long_subject});
    let r = context(&env, &["context", "demo", "-"], &task.to_string());
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("the task's `subject`: 100000 characters"),
        "{}",
        r.stderr
    );
    assert!(
        std::fs::read_to_string(&log).unwrap_or_default().is_empty(),
        "a refused context was logged"
    );
    // Tags as written with spaces still filter.
    let r = env
        .run(&["--json", "list", "demo", "--tags", "deploy, other"])
        .ok();
    assert_eq!(r.json(), json!([]), "{}", r.stdout);
    let r = env
        .run(&["--json", "list", "demo", "--tags", " deploy "])
        .ok();
    assert_eq!(ids(&r.json()).len(), 2, "{}", r.stdout);
}

/// Words of a question that no entry holds are named in a warning when results came back
/// anyway: those results share only the question's other words.
#[test]
fn words_no_entry_holds_are_named() {
    let (env, _, _) = fixture();
    let r = env.run(&["query", "office wifi deploys", "demo"]).ok();
    assert!(!r.stdout.trim().is_empty(), "{}", r.stdout);
    assert!(
        r.stderr
            .contains("no entry holds `office`, `wifi`: the results match only"),
        "{}",
        r.stderr
    );
    let held = env.run(&["query", "deploys", "demo"]).ok();
    assert!(!held.stderr.contains("no entry holds"), "{}", held.stderr);
}

/// A query that first catches up with lines a pull brought (here made slow on purpose) times
/// the query alone: neither its execution time in the query log nor the slow-query warning
/// counts the catch-up.
#[test]
fn a_catch_up_before_a_query_is_not_counted_as_the_query() {
    let env = Env::with_project();
    env.add("kept.subject", "kept decision");
    set_slow_query_ms(&env, 1000);
    // Another clone's line, as a pull brings it.
    let other = Env::with_project();
    other.add("pulled.subject", "pulled decision");
    let line = std::fs::read_to_string(other.log()).unwrap_or_default();
    env.append_log(line.as_bytes());
    let r = crate::common::output(
        env.command(&["query", "pulled decision", "--json"])
            .env("MEMLOG_TEST_CATCH_UP_PAUSE_MS", "1500")
            .output(),
    )
    .ok();
    assert!(r.stdout.contains("pulled decision"), "{}", r.stdout);
    assert!(!r.stderr.contains("slow query"), "{}", r.stderr);
    assert_last_query_took_under(&env, 1000.0);
}

/// A query that waits for another process to release the store lock times the query alone:
/// the wait is neither in its execution time nor behind a slow-query warning.
#[test]
fn waiting_for_a_store_lock_is_not_counted_as_the_query() {
    let env = Env::with_project();
    env.add("kept.subject", "kept decision");
    env.run(&["query", "kept decision"]).ok();
    set_slow_query_ms(&env, 1000);
    env.run(&["list"]).ok();
    let lock = memlog::log::lock::FileLock::acquire(
        &env.root().join("ai-memory/demo/.memlog/store.lock"),
        "store",
        std::time::Duration::from_secs(1),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(1500));
        drop(lock);
    });
    let started = std::time::Instant::now();
    let r = env.run(&["query", "kept decision", "--json"]).ok();
    let _ = release.join();
    assert!(
        started.elapsed().as_millis() >= 1400,
        "the query did not wait"
    );
    assert!(r.stdout.contains("kept decision"), "{}", r.stdout);
    assert!(!r.stderr.contains("slow query"), "{}", r.stderr);
    assert_last_query_took_under(&env, 1000.0);
}

/// Sets project `demo`'s `slow_query_ms`.
fn set_slow_query_ms(env: &Env, ms: u64) {
    let config = env.root().join("ai-memory/demo/memlog.json");
    let mut c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap_or_default())
            .unwrap_or_default();
    c["policies"]["retrieval"]["slow_query_ms"] = serde_json::json!(ms);
    std::fs::write(&config, c.to_string()).unwrap_or_else(|e| panic!("{e}"));
}

/// Asserts that the last line of project `demo`'s query log took under `ms`.
fn assert_last_query_took_under(env: &Env, ms: f64) {
    let log = std::fs::read_to_string(env.root().join("ai-memory/demo/.memlog/queries.jsonl"))
        .unwrap_or_default();
    let last: serde_json::Value =
        serde_json::from_str(log.lines().last().unwrap_or_default()).unwrap_or_default();
    assert!(
        last["execution_time_ms"].as_f64().is_some_and(|t| t < ms),
        "{last}"
    );
}
