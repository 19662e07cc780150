//! `apply`'s input as people write it: refused updates name their line, a byte order mark is
//! named, and a refused write to a project that does not exist leaves nothing behind.

use crate::common::{Env, add_args, stdin_run};
use std::io::Write;

/// A valid create of a learning, on one line.
fn create_line(subject: &str) -> String {
    serde_json::json!({"operation": "create", "entry": {
        "section": "learnings", "kind": "other", "subject": subject, "scope": "repo",
        "summary": format!("Learning about {subject}"), "content": "c", "confidence": 0.9,
        "evidence": [{"type": "assumption", "uri": "none", "note": "n"}]}})
    .to_string()
}

/// A refused write to a project that is not initialized (a mistyped name) creates nothing;
/// the first update that passes creates it, and the ones refused before it are reported.
#[test]
fn a_refused_write_to_a_missing_project_creates_nothing() {
    let env = Env::with_project();
    let tyop = env.root().join("ai-memory/tyop");
    let r = stdin_run(
        &env,
        &["apply", "tyop", "-"],
        br#"{"operation":"create","entry":{"section":"bogus"}}"#,
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(!tyop.exists(), "{}", r.stderr);
    let refused = format!(
        "{}\n{}\n",
        r#"{"operation":"deprecate","target_id":"m-zzzzzzzzzz"}"#,
        r#"{"operation":"create","entry":{"section":"bogus"}}"#
    );
    let r = stdin_run(&env, &["apply", "tyop", "-", "--json"], refused.as_bytes());
    assert_eq!(r.code, 3, "{}", r.stdout);
    assert!(!tyop.exists());
    // A decision with weak evidence passes the schema but not the policy.
    let mut args = add_args(
        ("decisions", "decision"),
        "s",
        "A decision",
        "c",
        "0.9",
        "assumption:none:n",
    );
    args.insert(1, "tyop");
    assert_eq!(env.run(&args).code, 3);
    assert!(!tyop.exists());
    // Then one that passes: the project is created, and every update keeps its number.
    let input = format!("{refused}{}\n", create_line("tyop.a"));
    let r = stdin_run(&env, &["apply", "tyop", "-", "--json"], input.as_bytes());
    assert_eq!(r.code, 1, "{}", r.stdout);
    let report = r.json();
    assert_eq!(report["skipped"][0]["index"], 1, "{report}");
    assert_eq!(report["skipped"][1]["index"], 2, "{report}");
    assert_eq!(report["applied"][0]["index"], 3, "{report}");
    assert!(tyop.join("memlog.json").is_file());
    let listed = env.run(&["list", "tyop", "--json"]).ok().json();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    let kept = std::fs::read_to_string(tyop.join(".memlog/apply-log.jsonl")).unwrap_or_default();
    assert_eq!(kept.lines().count(), 2, "{kept}");
}

/// In JSON Lines every refusal names its line in the input (blank lines counted), in the text
/// output, the `--json` report (`line`), the apply log and `validate`; a line that is not JSON
/// names its column, not "line 1" of itself.
#[test]
fn refused_json_lines_are_named_by_their_line() {
    let env = Env::with_project();
    let id = env.add("lines.a", "An entry to deprecate");
    let input = format!(
        "\n\n{}\n\n{}\nnot json\n{}\n",
        serde_json::json!({"operation": "deprecate", "target_id": id}),
        r#"{"operation":"deprecate"}"#,
        create_line("lines.b")
    );
    let r = stdin_run(&env, &["apply", "demo", "-"], input.as_bytes());
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("skipped update 2 (line 5): invalid memory entry: target_id")
            && r.stderr.contains(
                "skipped update 3 (line 6): invalid memory entry: input: line 6 is not valid \
                 JSON: expected ident at column 2\n"
            ),
        "{}",
        r.stderr
    );
    let kept = std::fs::read_to_string(env.root().join("ai-memory/demo/.memlog/apply-log.jsonl"))
        .unwrap_or_default();
    let lines: Vec<serde_json::Value> = kept
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_default())
        .collect();
    assert_eq!(lines.len(), 2, "{kept}");
    assert_eq!(
        (&lines[0]["index"], &lines[0]["line"]),
        (&2.into(), &5.into())
    );
    assert_eq!(
        (&lines[1]["index"], &lines[1]["line"]),
        (&3.into(), &6.into())
    );
    // Again: the deprecate is now refused too, and every record has its line.
    let r = stdin_run(&env, &["apply", "demo", "-", "--json"], input.as_bytes());
    let report = r.json();
    let places = |key: &str| -> Vec<(u64, u64)> {
        report[key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                (
                    s["index"].as_u64().unwrap_or_default(),
                    s["line"].as_u64().unwrap_or_default(),
                )
            })
            .collect()
    };
    assert_eq!(
        places("skipped"),
        [(1, 3), (2, 5), (3, 6), (4, 7)],
        "{report}"
    );
    let r = stdin_run(&env, &["validate", "demo", "-", "--json"], input.as_bytes());
    let verdicts = r.json();
    assert_eq!(verdicts[1]["line"], 5, "{verdicts}");
    let r = stdin_run(&env, &["validate", "demo", "-"], input.as_bytes());
    assert!(
        r.stdout.contains("update 2 (line 5, deprecate): invalid"),
        "{}",
        r.stdout
    );
    // A JSON document has no lines to name.
    let document = format!("[{}]", r#"{"operation":"deprecate"}"#);
    let r = stdin_run(&env, &["apply", "demo", "-", "--json"], document.as_bytes());
    let report = r.json();
    assert!(report["skipped"][0].get("line").is_none(), "{report}");
}

/// A byte order mark at the start of the input is named with the fix, as the log reader names
/// one, for a file and for standard input, by `apply` and `validate`; nothing is written.
#[test]
fn a_byte_order_mark_is_named_with_the_fix() {
    let env = Env::with_project();
    let mut input = b"\xEF\xBB\xBF".to_vec();
    input.extend_from_slice(create_line("bom.a").as_bytes());
    input.push(b'\n');
    let file = env.root().join("bom.json");
    std::fs::write(&file, &input).unwrap_or_else(|e| panic!("{e}"));
    let path = file.display().to_string();
    let named = "starts with a UTF-8 byte order mark (EF BB BF, added by an editor): remove \
                 those 3 bytes";
    let sed_file = format!("`sed -i '1s/^\\xEF\\xBB\\xBF//' {path}`");
    // `validate` reports it as the verdict on the input (exit 1), `apply` as its error.
    for (args, code, fix) in [
        (&["apply", "demo", path.as_str()][..], 3, sed_file.as_str()),
        (
            &["validate", "demo", path.as_str()][..],
            1,
            sed_file.as_str(),
        ),
        (
            &["apply", "demo", "-"][..],
            3,
            "`sed '1s/^\\xEF\\xBB\\xBF//'`",
        ),
    ] {
        let r = stdin_run(&env, args, &input);
        let said = format!("{}{}", r.stdout, r.stderr);
        assert_eq!(r.code, code, "{args:?}: {said}");
        assert!(
            said.contains(&format!("the input {named}")) && said.contains(fix),
            "{args:?}: {said}"
        );
    }
    assert_eq!(env.listed(), Some(0));
    // On a later line of JSON Lines (files put together), that line is named.
    let mut later = create_line("bom.b").into_bytes();
    later.push(b'\n');
    later.extend_from_slice(&input);
    let r = stdin_run(&env, &["apply", "demo", "-"], &later);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "skipped update 2 (line 2): invalid memory entry: input: line 2 {named} from line 2"
        )),
        "{}",
        r.stderr
    );
}

/// What docs/CLI.md says of `apply -` from a pipe that pauses: no lock is held until the input's
/// shape is known (its second non-blank line of JSON Lines), so a write beside it runs at once;
/// from then on the locks are held until the input ends, and other commands wait.
#[test]
fn apply_from_a_pausing_pipe_holds_the_locks_only_after_its_second_line() {
    let env = Env::with_project();
    let mut apply = env
        .command(&["apply", "demo", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stdin = apply.stdin.take().unwrap_or_else(|| panic!("stdin"));
    writeln!(stdin, "{}", create_line("pipe.a")).unwrap_or_else(|e| panic!("{e}"));
    stdin.flush().unwrap_or_else(|e| panic!("{e}"));
    let mut add = add_args(
        ("learnings", "other"),
        "pipe.beside",
        "Added while apply waits",
        "c",
        "0.9",
        "assumption:none:n",
    );
    add.extend(["--lock-timeout", "5000"]);
    env.run(&add).ok();
    writeln!(stdin, "{}", create_line("pipe.b")).unwrap_or_else(|e| panic!("{e}"));
    stdin.flush().unwrap_or_else(|e| panic!("{e}"));
    // The second line read, apply takes the locks and keeps them while the pipe stays open.
    let started = std::time::Instant::now();
    let blocked = loop {
        let r = env.run(&["list", "--lock-timeout", "100"]);
        if r.code == 5 {
            break true;
        }
        if started.elapsed() > std::time::Duration::from_secs(20) {
            break false;
        }
    };
    drop(stdin);
    let done = crate::common::output(apply.wait_with_output());
    assert!(
        blocked,
        "no command was kept waiting while apply read its input"
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(env.listed(), Some(3));
}

/// Rerunning an input at the same time (a retry with `--now`, or of a killed `apply`) writes
/// nothing twice: a create the log holds is refused as a duplicate naming its entry, also once
/// the entry was deprecated (no active copy names it any more), and the log keeps one line per
/// event.
#[test]
fn a_create_rerun_at_the_same_time_is_refused_even_after_its_entry_was_deprecated() {
    let env = Env::with_project();
    let input = format!("{}\n{}\n", create_line("a.one"), create_line("a.two"));
    let first = stdin_run(&env, &["apply", "demo", "-", "--json"], input.as_bytes()).ok();
    let ids: Vec<String> = first.json()["applied"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|u| u["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(ids.len(), 2, "{}", first.stdout);
    env.run_at(
        "2026-11-23T00:00:00Z",
        &["deprecate", &ids[0], "--reason", "no longer true"],
    )
    .ok();
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    let again = stdin_run(&env, &["apply", "demo", "-", "--json"], input.as_bytes());
    assert_eq!(again.code, 3, "{}", again.stdout);
    let skipped = again.json()["skipped"].to_string();
    assert!(
        skipped.contains("this create was written before")
            && skipped.contains(&format!("entry {}, now deprecated", ids[0])),
        "{skipped}"
    );
    assert_eq!(std::fs::read_to_string(env.log()).unwrap_or_default(), log);
    let shown = env.run(&["show", &ids[0], "--json"]).ok().json();
    assert_eq!(shown["status"], "deprecated", "{shown}");
}

/// `validate` judges an input as `apply` does: a change of an entry that an earlier update of
/// the input creates is valid (its id is known ahead: a create's id is its content's), and
/// nothing is written.
#[test]
fn validate_checks_changes_of_entries_the_input_creates_as_apply_does() {
    let create = create_line("a.one");
    let id = id_of(&create);
    let input = format!(
        "{create}\n{}\n{}\n",
        serde_json::json!({"operation": "deprecate", "target_id": id, "reason": "replaced"}),
        serde_json::json!({"operation": "deprecate", "target_id": &id[..8], "reason": "again"}),
    );
    let env = Env::with_project();
    let (checked, valid) = validity(&env, &input);
    // The second deprecate finds the entry deprecated by the first, as apply does.
    assert_eq!(valid, [true, true, false], "{}", checked.stdout);
    assert!(
        checked.stdout.contains("already deprecated"),
        "{}",
        checked.stdout
    );
    assert_eq!(std::fs::read_to_string(env.log()).unwrap_or_default(), "");
    let applied = stdin_run(&env, &["apply", "demo", "-", "--json"], input.as_bytes());
    assert_eq!(applied.code, 1, "{}", applied.stdout);
    let v = applied.json();
    assert_eq!(v["applied"].as_array().map(Vec::len), Some(2), "{v}");
    assert!(
        v["skipped"].to_string().contains("already deprecated"),
        "{v}"
    );
}

/// Against a project that does not exist yet, `validate` judges the input as `apply` would
/// (which creates the project): a change of an entry the input creates is valid, a second
/// deprecate of it is not. Nothing is created, in the workspace or in the temp directory.
#[test]
fn validate_of_a_project_not_yet_created_sees_what_the_input_creates() {
    let create = create_line("a.one");
    let id = id_of(&create);
    let input = format!(
        "{create}\n{}\n{}\n",
        serde_json::json!({"operation": "deprecate", "target_id": id, "reason": "replaced"}),
        serde_json::json!({"operation": "deprecate", "target_id": id, "reason": "again"}),
    );
    let env = Env::new();
    env.run(&["init", "other"]).ok();
    let listing = |dir: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let memory = env.root().join("ai-memory");
    let before = listing(&memory);
    let file = env.root().join("updates.jsonl");
    let tmp = env.root().join("tmp");
    std::fs::write(&file, &input).unwrap_or_else(|e| panic!("{e}"));
    // The scratch project of an interrupted run (its process is gone) is removed; that of a
    // running one is not.
    let alive = format!("memlog-validate-{}-1", std::process::id());
    for leftover in ["memlog-validate-4000000000-1", alive.as_str()] {
        std::fs::create_dir_all(tmp.join(leftover)).unwrap_or_else(|e| panic!("{e}"));
    }
    let check = |tmp: &std::path::Path| {
        let checked = crate::common::output(
            env.command(&["validate", "demo", &file.to_string_lossy(), "--json"])
                .env("TMPDIR", tmp)
                .output(),
        );
        assert_eq!(
            verdicts(&checked),
            [true, true, false],
            "{}",
            checked.stdout
        );
        assert!(
            checked.stdout.contains("already deprecated"),
            "{}",
            checked.stdout
        );
    };
    check(&tmp);
    assert_eq!(listing(&memory), before);
    assert_eq!(listing(&tmp), [alive], "a scratch project was left");
    // A temp directory that cannot be used: the next one that can (`/tmp`).
    check(&env.root().join("no-such-dir"));
    assert_eq!(listing(&memory), before);
    let applied = stdin_run(&env, &["apply", "demo", "-", "--json"], input.as_bytes());
    assert_eq!(applied.code, 1, "{}", applied.stdout);
    assert_eq!(applied.json()["applied"].as_array().map(Vec::len), Some(2));
}

/// JSON Lines whose first line is damaged (cut short) is still JSON Lines: that line is refused
/// alone and the others applied. A document printed over several lines is still one document,
/// even when one of its lines is a whole object.
#[test]
fn a_damaged_first_line_of_json_lines_is_refused_alone() {
    let env = Env::with_project();
    let input = format!(
        "{{\"operation\":\"create\",\"entry\":\n{}\n{}\n",
        create_line("a.one"),
        create_line("a.two")
    );
    let r = stdin_run(&env, &["apply", "demo", "-", "--json"], input.as_bytes());
    assert_eq!(r.code, 1, "{}", r.stdout);
    let v = r.json();
    assert_eq!(v["applied"].as_array().map(Vec::len), Some(2), "{v}");
    assert!(
        v["skipped"]
            .to_string()
            .contains("line 1 is not valid JSON: EOF while parsing a value at the end of the line"),
        "{v}"
    );
    // With a single whole line after it, too.
    let input = format!(
        "{{\"operation\":\"create\",\"entry\":{{\"section\":\"lea\n{}\n",
        create_line("a.four")
    );
    let r = stdin_run(&env, &["apply", "demo", "-", "--json"], input.as_bytes());
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_eq!(r.json()["applied"].as_array().map(Vec::len), Some(1));
    assert_eq!(env.listed(), Some(3));
    let document = format!("[\n{}\n]\n", create_line("a.three"));
    let r = stdin_run(&env, &["apply", "demo", "-", "--json"], document.as_bytes());
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(env.listed(), Some(4));
    // A document cut short is refused whole, even with updates on lines of their own.
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    for broken in [
        format!(
            "{{\"task_id\":\"t\",\"memory_updates\":[\n{}\n{}\n]\n",
            create_line("b.one"),
            create_line("b.two")
        ),
        format!(
            "{{\"task_id\":\"t\",\"memory_updates\":[\n{}\n]\n",
            create_line("b.one")
        ),
    ] {
        let r = stdin_run(&env, &["apply", "demo", "-"], broken.as_bytes());
        assert_eq!(r.code, 3, "{broken}: {}", r.stderr);
        assert!(r.stderr.contains("input is not valid JSON"), "{}", r.stderr);
        assert_eq!(std::fs::read_to_string(env.log()).unwrap_or_default(), log);
    }
}

/// Within one input, a create that says again what an entry deprecated above it said is
/// judged as in a later run: accepted, with the warning that it brings the fact back; a copy
/// after it is refused, by `validate` as by `apply`.
#[test]
fn a_fact_deprecated_earlier_in_the_input_can_be_said_again() {
    let line = create_line("a.one");
    let id = id_of(&line);
    let again: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
    let mut changed = again.clone();
    changed["entry"]["content"] = "said again, with a reason".into();
    let input = format!(
        "{line}\n{}\n{changed}\n{line}\n",
        serde_json::json!({"operation": "deprecate", "target_id": id, "reason": "wrong"}),
    );
    let env = Env::with_project();
    let (checked, valid) = validity(&env, &input);
    assert_eq!(valid, [true, true, true, false], "{}", checked.stdout);
    let applied = stdin_run(&env, &["apply", "demo", "-", "--json"], input.as_bytes());
    let v = applied.json();
    assert_eq!(v["applied"].as_array().map(Vec::len), Some(3), "{v}");
    let said = v.to_string();
    assert!(said.contains("brings the deprecated fact back"), "{said}");
    // The last line repeats the first: the entry line 3 made says the same, and is active.
    assert!(
        v["skipped"]
            .to_string()
            .contains("an earlier update of this batch"),
        "{v}"
    );
}

/// The id the create `line` gets: the same time and actor make the same id in any workspace.
fn id_of(line: &str) -> String {
    let scratch = Env::with_project();
    stdin_run(&scratch, &["apply", "demo", "-"], line.as_bytes())
        .ok()
        .stdout
        .trim()
        .to_owned()
}

/// `validate --json` of `input` in `env`, and whether each update is valid.
fn validity(env: &Env, input: &str) -> (crate::common::Run, Vec<bool>) {
    let checked = stdin_run(env, &["validate", "demo", "-", "--json"], input.as_bytes());
    let valid = verdicts(&checked);
    (checked, valid)
}

/// Whether each update `validate --json` judged is valid.
fn verdicts(checked: &crate::common::Run) -> Vec<bool> {
    checked
        .json()
        .as_array()
        .map(|a| a.iter().map(|v| v["valid"] == true).collect())
        .unwrap_or_default()
}

/// Every verdict of `validate` names its operation, `null` for a line that is not JSON or an
/// update that names none, as `apply`'s skipped updates do.
#[test]
fn every_verdict_names_its_operation() {
    let env = Env::with_project();
    let input = b"{\"operation\":\"deprecate\"}\nnope\n{\"target_id\":\"m-zz\"}\n";
    let checked = stdin_run(&env, &["--json", "validate", "demo", "-"], input);
    let v = checked.json();
    // Present, not merely `null` when indexed.
    let operations: Vec<Option<&serde_json::Value>> = v
        .as_array()
        .map(|a| a.iter().map(|verdict| verdict.get("operation")).collect())
        .unwrap_or_default();
    let null = serde_json::Value::Null;
    let deprecate = serde_json::Value::from("deprecate");
    assert_eq!(
        operations,
        [Some(&deprecate), Some(&null), Some(&null)],
        "{v}"
    );
    let applied = stdin_run(&env, &["--json", "apply", "demo", "-"], input);
    let skipped = &applied.json()["skipped"];
    assert_eq!(
        skipped[1]["operation"],
        serde_json::Value::Null,
        "{skipped}"
    );
    assert!(
        skipped
            .as_array()
            .is_some_and(|s| s.iter().all(|u| u.get("operation").is_some())),
        "{skipped}"
    );
}
