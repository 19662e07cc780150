use crate::common::{Env, git};
use serde_json::json;
use std::path::{Path, PathBuf};

/// Every path under `dir` with its contents (directories as `/`), sorted.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for item in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = item.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                out.push((path.clone(), b"/".to_vec()));
                todo.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
                out.push((path, bytes));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn bad_project_names_are_refused_and_nothing_is_written_outside() {
    // The workspace is `<temp>/ws`; the test owns `<temp>`, where `../x` would land.
    let env = Env::nested();
    let outside = env.dir.path();
    std::fs::write(outside.join("sibling.txt"), "untouched").unwrap_or_else(|e| panic!("{e}"));
    let before = tree(outside);
    let abs_existed = Path::new("/abs").exists();
    for bad in [
        "../x",
        "/abs",
        "",
        "a\u{1}b",
        ".memlog",
        "a/b",
        "..",
        "../ws2",
        "x/../../y",
    ] {
        let add = [
            "add",
            bad,
            "--section",
            "learnings",
            "--kind",
            "other",
            "--subject",
            "s",
            "--scope",
            "org",
            "--summary",
            "x",
            "--content",
            "c",
            "--confidence",
            "0.7",
            "--evidence",
            "doc:docs/a.md:n",
        ];
        for args in [&["init", bad][..], &["list", "-p", bad], &add] {
            let r = env.run(args);
            assert_eq!(r.code, 3, "{args:?}: {}", r.stderr);
            assert!(
                r.stderr.contains("invalid project name"),
                "{args:?}: {}",
                r.stderr
            );
        }
    }
    // Nothing was created, inside the workspace or out.
    assert_eq!(tree(outside), before);
    assert_eq!(tree(env.root()), vec![]);
    assert_eq!(Path::new("/abs").exists(), abs_existed);
}

/// A project that a checkout on Windows or macOS could not hold is not created, whether by
/// `init`, by a first write or by `fork`; nothing is written.
#[test]
fn names_other_systems_cannot_check_out_are_refused() {
    let env = Env::with_project();
    // What the projects hold, not their local state (`fork` takes its source's lock).
    let projects = || {
        let mut t = tree(env.root());
        t.retain(|(p, _)| !p.components().any(|c| c.as_os_str() == ".memlog"));
        t
    };
    let before = projects();
    for (name, said) in [
        ("GLOBAL", "differs from the project `global` only by case"),
        ("Demo", "differs from the project `demo` only by case"),
        ("con", "device name on Windows"),
        ("NUL.txt", "device name on Windows"),
        ("lpt1", "device name on Windows"),
    ] {
        let fork = ["fork", "demo", name];
        let mut add = crate::common::add_args(
            ("learnings", "other"),
            "s",
            "x",
            "c",
            "0.7",
            "doc:docs/a.md:n",
        );
        add.insert(1, name);
        for args in [&["init", name][..], &fork, &add] {
            let r = env.run(args);
            assert_eq!(r.code, 3, "{args:?}: {}", r.stderr);
            assert!(r.stderr.contains(said), "{args:?}: {}", r.stderr);
        }
    }
    assert_eq!(projects(), before);
    // Under `--json`, the details name the field and the rule, as for any bad name.
    let r = env.run(&["--json", "init", "GLOBAL"]);
    let details = &r.json()["error"]["details"];
    assert_eq!(details["field"], "project", "{details}");
    assert_eq!(details["constraint"], "project_name", "{details}");
    assert_eq!(details["value"], "GLOBAL", "{details}");
    env.run(&["init", "console"]).ok();
}

#[test]
fn verify_detects_tampering_and_missing_parents() {
    let env = Env::with_project();
    let id = env.add("a", "first");
    env.run(&["pin", &id]).ok();
    assert_eq!(env.run(&["verify"]).code, 0);
    let original = std::fs::read_to_string(env.log()).unwrap_or_default();

    // One byte of the content changed: the hash no longer matches.
    std::fs::write(env.log(), original.replacen("first", "firsT", 1))
        .unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["verify"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("events.jsonl:1:") && r.stdout.contains("was altered"),
        "{}",
        r.stdout
    );

    // The create removed: the pin names a parent that is gone.
    let second_line = original.lines().nth(1).unwrap_or_default();
    std::fs::write(env.log(), format!("{second_line}\n")).unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["verify", "--json"]);
    assert_eq!(r.code, 1);
    let problems = r.json()["problems"].to_string();
    assert!(problems.contains("is not in the log"), "{problems}");
}

/// A line deleted by hand leaves events whose parents are missing: `health`, `list` and `stats`
/// say so every time, as long as the log lacks them (not only the command that first caught
/// up), and no more once the line is back.
#[test]
fn missing_parents_are_reported_as_long_as_they_are_missing() {
    let env = Env::with_project();
    let id = env.add("a", "first");
    env.run(&["update", &id, "--confidence", "0.7"]).ok();
    let original = std::fs::read_to_string(env.log()).unwrap_or_default();
    let second_line = original.lines().nth(1).unwrap_or_default();
    std::fs::write(env.log(), format!("{second_line}\n")).unwrap_or_else(|e| panic!("{e}"));
    let said = "name a parent that is not in the log";
    for _ in 0..2 {
        let r = env.run(&["health"]).ok();
        assert!(r.stdout.contains(said), "{}", r.stdout);
        assert!(r.stdout.contains("healthy"), "{}", r.stdout);
    }
    let v = env.run(&["health", "--json"]).ok().envelope();
    // Each project's report holds its own warnings.
    assert!(
        v["results"][0]["warnings"].to_string().contains(said),
        "{v}"
    );
    for args in [&["list"][..], &["stats"]] {
        for _ in 0..2 {
            let r = env.run(args).ok();
            assert!(r.stderr.contains(said), "{args:?}: {}", r.stderr);
        }
    }
    std::fs::write(env.log(), &original).unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["health"]).ok();
    assert!(!r.stdout.contains(said), "{}", r.stdout);
    let r = env.run(&["list"]).ok();
    assert!(!r.stderr.contains(said), "{}", r.stderr);
}

/// A log deleted by hand is said to be missing, by `verify` and `health` (a warning: exit code
/// 0), not taken for an empty one.
#[test]
fn a_missing_log_is_reported_as_missing() {
    let env = Env::with_project();
    env.add("a", "first");
    std::fs::remove_file(env.log()).unwrap_or_else(|e| panic!("{e}"));
    let said = "events.jsonl does not exist";
    let r = env.run(&["verify"]).ok();
    assert!(
        r.stdout.contains("no log (the file does not exist)") && !r.stdout.contains(": ok"),
        "{}",
        r.stdout
    );
    assert!(r.stderr.contains(said), "{}", r.stderr);
    let v = env.run(&["verify", "--json"]).ok().envelope();
    assert_eq!(v["results"]["missing"], true, "{v}");
    assert!(v["warnings"].to_string().contains(said), "{v}");
    let r = env.run(&["health"]).ok();
    assert!(
        r.stdout
            .contains("log readable          no (the file does not exist)")
            && r.stdout.contains(said),
        "{}",
        r.stdout
    );
    let v = env.run(&["health", "--json"]).ok().envelope();
    let log = &v["results"][0]["log"];
    assert_eq!(
        (&log["exists"], &log["readable"]),
        (&json!(false), &json!(false)),
        "{v}"
    );
    assert!(
        v["results"][0]["warnings"].to_string().contains(said),
        "{v}"
    );
}

#[test]
fn a_damaged_middle_line_is_an_error_naming_line_and_offset() {
    let env = Env::with_project();
    env.add("a", "first");
    env.add("b", "second");
    let text = std::fs::read_to_string(env.log()).unwrap_or_default();
    let first_len = text.lines().next().map_or(0, str::len) + 1;
    let damaged = format!("{}{{not json\n{}", &text[..first_len], &text[first_len..]);
    std::fs::write(env.log(), damaged).unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_dir_all(env.root().join("ai-memory/demo/.memlog"))
        .unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["list", "--json"]);
    assert_eq!(r.code, 6);
    let err = r.json();
    assert_eq!(err["error"]["code"], "CORRUPT_LOG");
    assert_eq!(err["error"]["details"]["line"], 2);
    assert_eq!(err["error"]["details"]["offset"], first_len);
}

#[test]
fn a_torn_last_line_is_quarantined_and_writing_goes_on() {
    let env = Env::with_project();
    env.add("a", "first");
    env.append_log(br#"{"actor":"agent-7","at":"2026-11-22T1"#);
    assert_eq!(env.run(&["verify"]).code, 1);
    let listed = env.run(&["list", "--json"]).ok();
    assert!(
        listed.stdout.contains("incomplete line") && listed.stdout.contains("quarantine.jsonl"),
        "the quarantine is reported in the JSON document: {}",
        listed.stdout
    );
    assert!(
        listed
            .stderr
            .lines()
            .all(|l| l.contains("retrieval.slow_query_ms")),
        "and only there (but for the slow-query warning of a loaded machine): {}",
        listed.stderr
    );
    assert_eq!(listed.json().as_array().map(Vec::len), Some(1));
    let quarantine =
        std::fs::read_to_string(env.root().join("ai-memory/demo/.memlog/quarantine.jsonl"))
            .unwrap_or_default();
    assert!(
        quarantine.starts_with(r#"{"actor":"agent-7","at":"2026-11-22T1"#),
        "{quarantine}"
    );
    env.add("b", "second");
    assert_eq!(env.run(&["verify"]).code, 0);
    assert_eq!(
        env.run(&["list", "--json"])
            .ok()
            .json()
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

/// A last line that is a whole event and lacks only its newline is no torn write: `verify`
/// says what it is and that the next command completes it (a warning, exit 0), and the next
/// command keeps the event.
#[test]
fn verify_tells_a_missing_final_newline_from_a_torn_line() {
    let env = Env::with_project();
    env.add("a", "first");
    env.add("b", "second");
    let log = std::fs::read(env.log()).unwrap_or_default();
    std::fs::write(env.log(), &log[..log.len() - 1]).unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["verify"]).ok();
    assert!(
        r.stdout
            .contains(":2: warning: the last line is a complete event without its final newline")
            && r.stdout
                .contains("the next memlog command adds the newline")
            && r.stdout.contains("2 lines, 2 events, 2 entries")
            && !r.stdout.contains("torn"),
        "{}",
        r.stdout
    );
    let report = env.run(&["verify", "--json"]).ok().envelope();
    assert_eq!(report["results"]["ok"], true, "{report}");
    assert_eq!(report["results"]["warnings"][0]["line"], 2, "{report}");
    assert_eq!(env.listed(), Some(2));
    assert_eq!(std::fs::read(env.log()).unwrap_or_default(), log);
    let r = env.run(&["verify"]).ok();
    assert!(!r.stdout.contains("warning"), "{}", r.stdout);
}

#[test]
fn a_held_lock_times_out_with_a_clear_error() {
    let env = Env::with_project();
    env.add("a", "first");
    let lock_path = env.root().join("ai-memory/demo/.memlog/store.lock");
    let _held = memlog::log::lock::FileLock::acquire(
        &lock_path,
        "store",
        std::time::Duration::from_secs(1),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["--lock-timeout", "200", "show", "m-", "--json"]);
    assert_eq!(r.code, 5);
    let err = r.json();
    assert_eq!(err["error"]["code"], "LOCK_TIMEOUT");
    assert_eq!(err["error"]["details"]["lock"], "store");
    let message = err["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("timed out after 2"), "{message}");
    assert!(
        message.contains(" ms waiting for the store lock"),
        "{message}"
    );
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("--lock-timeout")
    );
    // A create waits for the store like every write: no check is skipped because it is busy,
    // and nothing reaches the log.
    let log_before = std::fs::read(env.log()).unwrap_or_default();
    let r = env.run(&[
        "--lock-timeout",
        "200",
        "add",
        "--section",
        "learnings",
        "--kind",
        "other",
        "--subject",
        "s",
        "--scope",
        "org",
        "--summary",
        "while busy",
        "--content",
        "c",
        "--confidence",
        "0.7",
        "--evidence",
        "doc:docs/a.md:n",
    ]);
    assert_eq!(r.code, 5, "{}", r.stderr);
    assert!(r.stderr.contains("store lock"), "{}", r.stderr);
    assert_eq!(std::fs::read(env.log()).unwrap_or_default(), log_before);
    drop(_held);
    assert_eq!(
        env.run(&["list", "--json"])
            .ok()
            .json()
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn schema_violations_are_named() {
    let env = Env::with_project();
    let r = env.run(&[
        "--json",
        "add",
        "--section",
        "state",
        "--kind",
        "metric",
        "--subject",
        "s",
        "--scope",
        "service:",
        "--summary",
        &"x".repeat(301),
        "--content",
        "c",
        "--confidence",
        "1.5",
    ]);
    assert_eq!(r.code, 3);
    let problems = r.json()["error"]["details"]["problems"].clone();
    let got: Vec<(String, String)> = problems
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["field"].as_str().unwrap_or_default().to_owned(),
                p["constraint"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    for want in [
        ("scope", "pattern"),
        ("summary", "max_length"),
        ("confidence", "range"),
        ("evidence", "required"),
        ("valid_to", "required"),
    ] {
        assert!(
            got.contains(&(want.0.to_owned(), want.1.to_owned())),
            "{want:?} missing from {got:?}"
        );
    }
    // 300 characters of multi-byte text is within the limit: lengths count characters.
    let r = env.run(&[
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
        &"é".repeat(300),
        "--content",
        "c",
        "--confidence",
        "0.7",
        "--evidence",
        "doc:docs/a.md:n",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let summary = r.json()["entry"]["summary"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(summary, "é".repeat(300));
}

#[test]
fn a_duplicated_line_is_counted_once_and_verify_says_so() {
    let env = Env::with_project();
    env.add("a", "first");
    env.add("b", "second");
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    let first = log.lines().next().unwrap_or_default().to_owned();
    std::fs::write(env.log(), format!("{log}{first}\n")).unwrap_or_else(|e| panic!("{e}"));
    let report = env.run(&["verify", "--json"]).ok().json();
    assert_eq!(
        (
            &report["ok"],
            &report["lines"],
            &report["events"],
            &report["duplicate_lines"]
        ),
        (
            &serde_json::json!(true),
            &serde_json::json!(3),
            &serde_json::json!(2),
            &serde_json::json!(1)
        )
    );
    let stats = env.run(&["stats", "--json"]).ok().json();
    assert_eq!(stats["statistics"]["total_entries"], 2, "{stats}");
}

/// An input file that cannot be read (missing, a directory) is the caller's mistake: a usage
/// error naming the path and the way out, for every command that reads one, and nothing is
/// written.
#[test]
fn an_unreadable_input_file_is_a_usage_error_naming_it() {
    let env = Env::with_project();
    let before = tree(env.dir.path());
    let missing = env.dir.path().join("missing.jsonl");
    let missing = missing.display().to_string();
    let dir = env.dir.path().display().to_string();
    for args in [
        vec!["--json", "apply", "demo", missing.as_str()],
        vec!["--json", "validate", "demo", missing.as_str()],
        vec!["--json", "import", "demo", missing.as_str()],
        vec!["--json", "context", "demo", missing.as_str()],
        vec!["--json", "secrets", "scan", missing.as_str()],
        vec!["--json", "apply", "demo", dir.as_str()],
        vec!["--json", "context", "demo", dir.as_str()],
    ] {
        let r = env.run(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stdout);
        let error = &r.envelope()["error"];
        assert_eq!(error["code"], "USAGE_ERROR", "{args:?}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(args[3]) && message.contains("`-` to read standard input"),
            "{args:?}: {message}"
        );
    }
    assert_eq!(tree(env.dir.path()), before, "nothing written");
}

/// A number option given a negative number reaches its range check (it is not taken for an
/// unknown flag), and a value that is no number names the option, the form it takes and the
/// command's usage line (docs/JSON.md, Failure).
#[test]
fn number_options_take_negative_values_and_name_their_form() {
    let env = Env::with_project();
    let message = |args: &[&str]| {
        let r = env.run(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stdout);
        let error = r.envelope()["error"].clone();
        assert_eq!(error["code"], "USAGE_ERROR", "{args:?}: {error}");
        error
    };
    for (args, says) in [
        (
            vec!["--json", "query", "x", "--min-confidence", "-0.5"],
            "--min-confidence: -0.5 is outside 0.0 to 1.0",
        ),
        (
            vec!["--json", "list", "--max-confidence", "-1"],
            "--max-confidence: -1 is outside 0.0 to 1.0",
        ),
        (
            vec!["--json", "export", "out.json", "--min-confidence", "-0.5"],
            "--min-confidence: -0.5 is outside 0.0 to 1.0",
        ),
        (
            vec!["--json", "list", "--limit", "-1"],
            "-1 is below 0: give a whole number, 0 or more",
        ),
        (
            vec!["--json", "list", "--limit", "-0"],
            "give a whole number, 0 or more, without a sign",
        ),
        (
            vec!["--json", "context", "--format", "prompt", "--budget", "-5"],
            "-5 is below 0: give a whole number of tokens, 0 or more",
        ),
        // Each option names its own range: `query --limit` takes 1 to 50, not 0.
        (
            vec!["--json", "query", "x", "--limit", "-1"],
            "-1 is below 1: give a whole number from 1 to 50",
        ),
        (
            vec!["--json", "query", "x", "--limit", "abc"],
            "give a whole number from 1 to 50, e.g. 10",
        ),
        (
            vec!["--json", "context", "--format", "prompt", "--budget", "abc"],
            "give a whole number of tokens, 0 or more, e.g. 1200",
        ),
    ] {
        let error = message(&args);
        let text = error["message"].as_str().unwrap_or_default();
        assert!(text.contains(says), "{args:?}: {text}");
        assert!(!text.contains("unexpected argument"), "{args:?}: {text}");
    }
    let error = message(&["--json", "query", "x", "--min-confidence", "abc"]);
    let text = error["message"].as_str().unwrap_or_default();
    for part in ["--min-confidence", "0.0 to 1.0", "; usage: memlog query "] {
        assert!(text.contains(part), "{part}: {text}");
    }
    let usage = error["details"]["usage"].as_str().unwrap_or_default();
    assert!(usage.starts_with("memlog query "), "{error}");
    let plain = env.run(&["list", "--limit", "abc"]);
    assert_eq!(plain.code, 2);
    assert!(
        plain.stderr.contains("whole number") && plain.stderr.contains("Usage: memlog list "),
        "{}",
        plain.stderr
    );
    // The examples of docs/JSON.md.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/JSON.md"))
        .unwrap_or_else(|e| panic!("{e}"));
    let doc = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    for args in [
        &["--json", "list", "--limt", "5"][..],
        &["--json", "query", "x", "--min-confidence", "abc"],
    ] {
        let error = message(args);
        let shown = error["message"].as_str().unwrap_or_default();
        assert!(
            doc.contains(&format!("`{shown}`")),
            "docs/JSON.md shows another message than {shown}"
        );
    }
}

/// Messages that show an example id show one of the current form: `m-` and 26 characters.
#[test]
fn example_ids_in_messages_have_the_current_form() {
    let env = Env::with_project();
    for args in [
        vec!["show", ""],
        vec![
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
            "s",
            "--content",
            "c",
            "--confidence",
            "0.7",
            "--status",
            "draft",
            "--related",
            "m-abc",
        ],
    ] {
        let r = env.run(&args);
        assert_ne!(r.code, 0, "{args:?}");
        let example = r
            .stderr
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
            .find(|w| w.starts_with("m-") && w.len() > "m-abc".len())
            .unwrap_or_else(|| panic!("{args:?}: no example id in {}", r.stderr));
        assert_eq!(example.len(), 2 + 26, "{args:?}: {}", r.stderr);
    }
}

/// An id too long or in upper case names no entry, and the message says what an id looks
/// like: `m-` and 26 lower-case characters (not "28 characters after m-" for `M-` and 26).
#[test]
fn an_id_in_upper_case_or_too_long_is_named_with_its_form() {
    let env = Env::with_project();
    let id = env.add("ids.a", "An entry");
    let upper = id.to_ascii_uppercase();
    let form = "an id is m- and 26 lower-case letters and digits";
    let upper_message = format!(
        "error: no entry matches `M-… (in upper case; {form}: type it in lower case)` in \
         project `demo`\n"
    );
    for (args, said) in [
        (vec!["show", upper.as_str()], upper_message.clone()),
        (vec!["show", &upper[..10]], upper_message),
        (
            vec!["show", &upper[2..]],
            format!(
                "error: no entry matches `m-… (in upper case; {form}: type it in lower case)` in \
                 project `demo`\n"
            ),
        ),
        (
            vec!["show", &format!("{id}0000")],
            format!(
                "error: no entry matches `m-… (30 characters after m-; {form})` in project \
                 `demo`\n"
            ),
        ),
    ] {
        let r = env.run(&args);
        assert_eq!(r.code, 4, "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr, said, "{args:?}");
    }
    env.run(&["show", &id]).ok();
}

/// A disk that fills up in the middle of an append: the log keeps all of the lines or none, and
/// the command reports none of them as written (a file size limit stands in for the full disk).
#[cfg(unix)]
#[test]
fn an_append_cut_short_by_a_full_disk_leaves_the_log_as_it_was() {
    let env = Env::with_project();
    env.add("kept", "Kept entry");
    let before = std::fs::read(env.log()).unwrap_or_default();
    let input: String = (0..2000)
        .map(|i| {
            serde_json::json!({"operation": "create", "entry": {"section": "learnings", "kind": "other", "subject": format!("bulk.{i}"), "scope": "repo", "summary": format!("Bulk note {i}"), "content": "c ".repeat(120), "confidence": 0.8, "evidence": [{"type": "doc", "uri": "docs/a.md", "note": "n"}]}})
                .to_string()
                + "\n"
        })
        .collect();
    let file = env.root().join("bulk.jsonl");
    std::fs::write(&file, input).unwrap_or_else(|e| panic!("{e}"));
    // Files may grow to 1 MiB (the store's are smaller); the append of about 1.8 MB fails.
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#"trap "" XFSZ; ulimit -f 1024; exec "$0" "$@""#)
        .arg(crate::common::bin())
        .args(["--json", "apply", "demo"])
        .arg(&file)
        .current_dir(env.root())
        .env("MEMLOG_WORKSPACE", env.root())
        .env("MEMLOG_AUTO_COMPACT", "0")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(7), "{stdout}");
    assert!(
        stdout.contains("nothing of this write was appended"),
        "{stdout}"
    );
    assert_eq!(std::fs::read(env.log()).unwrap_or_default(), before);
    assert_eq!(env.listed(), Some(1));
    env.run(&["verify"]).ok();
}

/// A log emptied or cut back by hand: the projections follow it, and the command says how many
/// events the store had that the log no longer holds, and how to get them back.
#[test]
fn a_log_that_lost_events_says_so() {
    let env = Env::with_project();
    for i in 0..3 {
        env.add(&format!("s{i}"), &format!("Entry {i}"));
    }
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    let first: String = log.lines().take(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(env.log(), first).unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["list", "--json"]).ok();
    assert_eq!(r.json().as_array().map(Vec::len), Some(1));
    let warnings = r.warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("2 event(s) that the store had applied are no longer in the log")),
        "{warnings:?}"
    );
    std::fs::write(env.log(), "").unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["list"]).ok();
    assert!(
        r.stderr.contains("1 event(s) that the store had applied")
            && r.stderr.contains("`memlog import demo "),
        "{}",
        r.stderr
    );
    // Said once: the store follows the log from then on.
    let r = env.run(&["list"]).ok();
    assert!(!r.stderr.contains("no longer in the log"), "{}", r.stderr);
    // Their lines were kept aside, and `import` puts them back.
    let kept = dropped_files(&env.root().join("ai-memory/demo/.memlog"));
    assert_eq!(kept.len(), 2, "{kept:?}");
    for file in &kept {
        env.run(&["import", "demo", &file.display().to_string()])
            .ok();
    }
    assert_eq!(env.listed(), Some(3));
    env.run(&["verify"]).ok();
}

/// Switching branches changes the log under the store: events only the other branch holds leave
/// the projections without a warning (git still has them) and without a `dropped-` file, and a
/// merge that brings a duplicate says so even when the store had to follow a rewritten log.
#[test]
fn a_checkout_drops_events_quietly_and_a_merge_names_its_duplicates() {
    let env = Env::new();
    crate::common::committed_entry(&env, ".", "base", "Base entry");
    git(&env, &["checkout", "-qb", "a"]);
    env.add("same", "Same thing");
    git(&env, &["commit", "-qam", "a"]);
    git(&env, &["checkout", "-q", "main"]);
    let r = env.run(&["list"]).ok();
    assert!(!r.stderr.contains("no longer in the log"), "{}", r.stderr);
    assert_eq!(env.listed(), Some(1));
    git(&env, &["checkout", "-qb", "b"]);
    env.run_at(
        "2026-11-22T11:00:00Z",
        &crate::common::add_args(
            ("decisions", "decision"),
            "same",
            "Same thing",
            "Another body.",
            "0.8",
            "code:src/lib.rs#L1-L9:where it happens",
        ),
    )
    .ok();
    git(&env, &["commit", "-qam", "b"]);
    git(&env, &["checkout", "-q", "main"]);
    git(&env, &["checkout", "-qb", "c"]);
    env.add("other", "Other entry");
    git(&env, &["commit", "-qam", "c"]);
    git(&env, &["checkout", "-q", "main"]);
    git(&env, &["merge", "-q", "--no-edit", "a"]);
    git(&env, &["merge", "-q", "--no-edit", "b"]);
    let r = env.run(&["list"]).ok();
    assert!(
        r.stderr.contains("1 pair(s) of active entries"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("no longer in the log"), "{}", r.stderr);
    let state = env.root().join("ai-memory/demo/.memlog");
    let dropped = std::fs::read_dir(&state)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("dropped-"))
        .count();
    assert_eq!(dropped, 0);

    // Emptied by hand, the log loses what git holds too: that is said, with the way back, and
    // only the one uncommitted event is kept aside.
    env.add("fresh", "Not committed yet");
    std::fs::write(env.log(), "").unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["list"]).ok();
    assert!(
        r.stderr.contains("no longer in the log")
            && r.stderr.contains("git still holds")
            && r.stderr
                .contains("the lines of the 1 that no branch holds now"),
        "{}",
        r.stderr
    );
    let kept = dropped_files(&state);
    assert_eq!(kept.len(), 1);
    let lines = std::fs::read_to_string(&kept[0]).unwrap_or_default();
    assert_eq!(lines.lines().count(), 1, "{lines}");
}

/// A record of skipped updates that cannot be written does not hide what was written: the
/// applied updates are still listed, with a warning.
#[test]
fn an_unwritable_apply_log_still_lists_what_was_applied() {
    let env = Env::with_project();
    env.run(&["list"]).ok();
    std::fs::create_dir_all(env.root().join("ai-memory/demo/.memlog/apply-log.jsonl"))
        .unwrap_or_else(|e| panic!("{e}"));
    let input = env.root().join("in.jsonl");
    std::fs::write(
        &input,
        concat!(
            r#"{"operation":"create","entry":{"section":"decisions","kind":"decision","subject":"z.z","scope":"repo","summary":"S","content":"c","confidence":0.9,"evidence":[{"type":"code","uri":"src/a.rs","note":"n"}]}}"#,
            "\n",
            r#"{"operation":"create","entry":{"section":"decisions"}}"#,
            "\n"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["--json", "apply", "demo", &input.display().to_string()]);
    let report = r.json();
    assert_eq!(
        report["applied"].as_array().map(Vec::len),
        Some(1),
        "{}{}",
        r.stdout,
        r.stderr
    );
    assert!(r.stdout.contains("apply-log.jsonl"), "{}", r.stdout);
    assert_eq!(env.listed(), Some(1));
}

/// A link or a directory where the store engine keeps a file (its journal, a table) made every
/// command panic inside the engine; the store is now rebuilt from the log, with a warning.
#[test]
fn a_store_entry_of_the_wrong_kind_is_rebuilt_from_the_log() {
    let env = Env::with_project();
    env.add("a", "first");
    let before = env.run(&["dump", "demo"]).ok().stdout;
    let store = env.root().join("ai-memory/demo/.memlog/store");
    let journal = std::fs::read_dir(&store)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jnl"))
        .unwrap_or_else(|| panic!("a journal"));
    let tables = store.join("keyspaces/1/tables");
    type Spoil = Box<dyn Fn(&std::path::Path)>;
    let spoils: [(std::path::PathBuf, Spoil); 3] = [
        (
            journal.clone(),
            Box::new(|p| {
                std::fs::remove_file(p).unwrap_or_else(|e| panic!("{e}"));
                std::os::unix::fs::symlink("/nonexistent", p).unwrap_or_else(|e| panic!("{e}"));
            }),
        ),
        (
            journal,
            Box::new(|p| {
                std::fs::remove_file(p).unwrap_or_else(|e| panic!("{e}"));
                std::fs::create_dir(p).unwrap_or_else(|e| panic!("{e}"));
            }),
        ),
        (
            tables.join("999"),
            Box::new(|p| std::fs::create_dir_all(p).unwrap_or_else(|e| panic!("{e}"))),
        ),
    ];
    for (path, spoil) in spoils {
        if !path.exists() && path.extension().is_some() {
            // The journal of the rebuilt store may have another name.
            continue;
        }
        spoil(&path);
        for command in [&["health", "demo"][..], &["dump", "demo"]] {
            let r = env.run(command);
            assert_ne!(r.code, 101, "{command:?}: {}", r.stderr);
        }
        let again = env.run(&["dump", "demo"]).ok();
        assert_eq!(again.stdout, before, "{}", path.display());
    }
    env.run(&["verify", "demo"]).ok();
}

/// A damaged block of the store (a flipped bit in a table) is found by the read that needs it,
/// after the store opened fine: that command fails naming the damage, and the next command
/// rebuilds the store from the log, which was never at risk.
#[test]
fn a_damaged_store_block_is_rebuilt_by_the_next_command() {
    let env = Env::with_project();
    env.apply_creates(
        1000,
        &"Some content that is long enough to fill the blocks of a table. ".repeat(3),
    );
    env.run(&["rebuild", "demo"]).ok();
    let before = env.run(&["dump", "demo"]).ok().stdout;

    let tables = env
        .root()
        .join("ai-memory/demo/.memlog/store/keyspaces/1/tables");
    let damage = || {
        for table in std::fs::read_dir(&tables)
            .unwrap_or_else(|e| panic!("{e}"))
            .flatten()
        {
            let mut bytes = std::fs::read(table.path()).unwrap_or_else(|e| panic!("{e}"));
            let at = bytes.len() / 3;
            bytes[at] ^= 0x10;
            std::fs::write(table.path(), bytes).unwrap_or_else(|e| panic!("{e}"));
        }
    };
    damage();
    let failed = env.run(&["dump", "demo"]);
    assert_eq!(failed.code, 6, "{}", failed.stderr);
    assert!(
        failed.stderr.contains("the next command rebuilds it"),
        "{}",
        failed.stderr
    );
    let again = env.run(&["dump", "demo"]).ok();
    assert!(
        again.stderr.contains("found the store damaged"),
        "{}",
        again.stderr
    );
    assert_eq!(again.stdout, before);
    assert!(
        !env.root()
            .join("ai-memory/demo/.memlog/store.damaged")
            .exists()
    );
    env.run(&["verify", "demo"]).ok();

    // `health` reads every block: it finds the damage that `dump` would find part way through
    // its output, says so, and the next command rebuilds the store.
    damage();
    let health = env.run(&["health", "demo"]);
    assert_eq!(health.code, 1, "{}", health.stdout);
    assert!(
        health.stdout.contains("the store cannot be read")
            && health.stdout.contains("the next command rebuilds it"),
        "{}",
        health.stdout
    );
    let rebuilt = env.run(&["dump", "demo"]).ok();
    assert!(
        rebuilt.stderr.contains("found the store damaged"),
        "{}",
        rebuilt.stderr
    );
    assert_eq!(rebuilt.stdout, before);

    // Marked damaged, then rebuilt by hand: the mark goes with the old store.
    std::fs::write(
        env.root().join("ai-memory/demo/.memlog/store.damaged"),
        b"\xff\xfe",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    env.run(&["rebuild", "demo"]).ok();
    let after = env.run(&["dump", "demo"]).ok();
    assert!(!after.stderr.contains("damaged"), "{}", after.stderr);
}

/// A bad actor name is named by where it came from — `--actor`, `MEMLOG_ACTOR` or `$USER` —
/// with the fix, not always as `--actor`; nothing is written.
#[test]
fn a_bad_actor_is_named_by_where_it_came_from() {
    let env = Env::with_project();
    let add = crate::common::add_args(
        ("learnings", "other"),
        "actor.a",
        "An entry",
        "c",
        "0.9",
        "assumption:none:n",
    );
    let run = |c: &mut std::process::Command| crate::common::output(c.output());
    let from_user = run(env
        .command(&add)
        .env_remove("MEMLOG_ACTOR")
        .env("USER", "bad\nuser"));
    let from_env = run(env.command(&add).env("MEMLOG_ACTOR", "x\u{200b}y"));
    let mut with_option = add.clone();
    with_option.extend(["--actor", ""]);
    let from_option = run(&mut env.command(&with_option));
    for (r, said) in [
        (
            &from_user,
            "the actor from $USER (used when neither --actor nor MEMLOG_ACTOR is set) must be 1 \
             to 128 characters without control characters; it has 8, control characters among \
             them: give a name with --actor NAME or MEMLOG_ACTOR",
        ),
        (
            &from_env,
            "the actor from MEMLOG_ACTOR contains U+200B, a zero-width character, which cannot \
             be seen: remove it (an actor holds only visible characters), or set MEMLOG_ACTOR \
             to another name, or give --actor NAME",
        ),
        (
            &from_option,
            "--actor must be 1 to 128 characters without control characters; it has 0: give \
             another name with --actor NAME",
        ),
    ] {
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert_eq!(r.stderr, format!("error: {said}\n"));
    }
    assert_eq!(env.listed(), Some(0));
}

/// A log the system will not let memlog write (immutable, or without write permission for a
/// user other than root) is named with the fix, not as a bare "Operation not permitted".
#[test]
#[expect(
    clippy::print_stderr,
    reason = "a skipped test says why, in the test output"
)]
fn an_unwritable_log_is_named_with_the_fix() {
    let env = Env::with_project();
    env.add("before", "An entry before");
    let log = env.log();
    let shown = log.display().to_string();
    // As root, permissions do not stop a write: the immutable flag does, where the file system
    // has it.
    let mut perms = std::fs::metadata(&log)
        .unwrap_or_else(|e| panic!("{e}"))
        .permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&log, perms.clone()).unwrap_or_else(|e| panic!("{e}"));
    let mut immutable = false;
    if std::fs::OpenOptions::new().append(true).open(&log).is_ok() {
        immutable = std::process::Command::new("chattr")
            .args(["+i", &shown])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !immutable {
            eprintln!("SKIPPED: this user can write read-only files, and chattr +i failed");
            return;
        }
    }
    let r = env.run(&crate::common::add_args(
        ("learnings", "other"),
        "after",
        "An entry after",
        "c",
        "0.9",
        "assumption:none:n",
    ));
    if immutable {
        let _ = std::process::Command::new("chattr")
            .args(["-i", &shown])
            .status();
    }
    #[expect(
        clippy::permissions_set_readonly_false,
        reason = "the test's own file, made writable again"
    )]
    perms.set_readonly(false);
    std::fs::set_permissions(&log, perms).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with(&format!("error: cannot write {shown}: "))
            && r.stderr.contains(&format!(
                "every write appends to this log: make it writable (`chmod u+w {shown}`"
            ))
            && r.stderr.contains(&format!("`chattr -i {shown}` as root")),
        "{}",
        r.stderr
    );
    assert_eq!(env.listed(), Some(1));
}

/// A store that lost one of its keyspaces' files (the store engine then opens that keyspace
/// empty) is rebuilt from the log by the next command, not served: `history` shows the
/// entry's versions, and a write refolds the entry with all its events.
#[test]
fn a_store_that_lost_a_keyspace_is_rebuilt_not_served() {
    let base = Env::with_project();
    let id = base.add("a", "first");
    base.run(&["rebuild"]).ok();
    let keyspaces = base.root().join("ai-memory/demo/.memlog/store/keyspaces");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&keyspaces)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    assert!(names.len() >= 2, "{names:?}");
    for keyspace in names {
        let env = Env::with_project();
        // The same entry (a fixed clock and actor): the workspace is a copy of the first.
        env.add("a", "first");
        env.run(&["rebuild"]).ok();
        let name = keyspace.file_name().unwrap_or_default();
        let lost = env
            .root()
            .join("ai-memory/demo/.memlog/store/keyspaces")
            .join(name)
            .join("current");
        std::fs::remove_file(&lost).unwrap_or_else(|e| panic!("{}: {e}", lost.display()));
        let history = env.run(&["history", &id, "--json"]).ok().json();
        assert_eq!(
            history.as_array().map(Vec::len),
            Some(1),
            "{}: {history}",
            lost.display()
        );
        env.run_at(
            "2026-11-23T00:00:00Z",
            &["update", &id, "--content", "second"],
        )
        .ok();
        let shown = env.run(&["show", &id, "--json"]).ok().json();
        assert_eq!(shown["content"], "second", "{}: {shown}", lost.display());
        assert_eq!(shown["version"], 2, "{}: {shown}", lost.display());
        assert_eq!(env.listed(), Some(1), "{}", lost.display());
    }
}

/// A workspace in a directory of the repository (not its root) is found in git's branches
/// too: switching branches drops the other branch's events quietly, as at the root.
#[test]
fn a_checkout_in_a_workspace_below_the_repository_root_drops_events_quietly() {
    let env = Env::nested();
    crate::common::committed_entry(&env, "..", "base", "Base entry");
    git(&env, &["checkout", "-qb", "a"]);
    env.add("other", "Only on a");
    git(&env, &["commit", "-qam", "a"]);
    git(&env, &["checkout", "-q", "main"]);
    let r = env.run(&["list"]).ok();
    assert!(!r.stderr.contains("no longer in the log"), "{}", r.stderr);
    assert_eq!(env.listed(), Some(1));
}

/// Memory set aside by `git stash` is held by git: the next command drops it quietly, and
/// `git stash pop` brings it back.
#[test]
fn memory_set_aside_by_git_stash_is_dropped_quietly() {
    let env = Env::new();
    crate::common::committed_entry(&env, ".", "base", "Base entry");
    env.add("wip", "Not committed yet");
    git(&env, &["stash", "-q"]);
    let r = env.run(&["list"]).ok();
    assert!(!r.stderr.contains("no longer in the log"), "{}", r.stderr);
    assert_eq!(env.listed(), Some(1));
    git(&env, &["stash", "pop", "-q"]);
    assert_eq!(env.listed(), Some(2));
}

/// A store written by another version of memlog (another store format) is rebuilt beside itself
/// by the next command, which says why (on standard error, or among the warnings of `--json`)
/// and answers as before; the command after it is quiet.
#[test]
fn a_store_of_another_format_is_rebuilt_and_said_so() {
    let env = Env::with_project();
    let id = env.add("a", "first");
    let before = env.run(&["show", &id, "--json"]).ok().json();
    let mark = |format| mark_store_format(&env, format);
    let said = "written by another version of memlog (store format `memlog-store-1`";
    mark(Some("memlog-store-1"));
    let r = env.run(&["show", &id, "--json"]).ok();
    let warned = r.envelope()["warnings"].to_string();
    assert!(
        warned.contains(said) && warned.contains("rebuilt from the log"),
        "{warned}"
    );
    assert_eq!(r.json(), before);
    let again = env.run(&["show", &id, "--json"]).ok().envelope();
    assert_eq!(again["warnings"], json!([]), "{again}");

    mark(None);
    let r = env.run(&["show", &id]).ok();
    assert!(
        r.stderr.contains("names no format") && r.stderr.contains("rebuilt from the log"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("first"), "{}", r.stdout);
    let again = env.run(&["show", &id]).ok();
    assert!(!again.stderr.contains("rebuilt"), "{}", again.stderr);
}

/// A line deleted from the log by hand before the first command of a new version: the store of
/// the old format is the only witness of that event, so the rebuild for the new format says
/// the event went and keeps its line aside for `import`, as a catch-up does.
#[test]
fn a_store_of_another_format_still_witnesses_lines_deleted_from_the_log() {
    let env = Env::with_project();
    env.add("a", "first");
    let id = env.add("b", "second");
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    let kept_line = log.lines().next().unwrap_or_default().to_owned();
    std::fs::write(env.log(), format!("{kept_line}\n")).unwrap_or_else(|e| panic!("{e}"));
    mark_store_format(&env, Some("memlog-store-1"));
    let r = env.run(&["list"]).ok();
    assert!(
        r.stderr.contains("written by another version of memlog")
            && r.stderr
                .contains("1 event(s) that the store had applied are no longer in the log"),
        "{}",
        r.stderr
    );
    let kept = dropped_files(&env.root().join("ai-memory/demo/.memlog"));
    assert_eq!(kept.len(), 1, "{kept:?}");
    env.run(&["import", "demo", &kept[0].display().to_string()])
        .ok();
    assert_eq!(
        env.run(&["show", &id, "--json"]).ok().json()["summary"],
        "second"
    );
    env.run(&["verify"]).ok();
}

/// Marks the store of project `demo` as written in store format `format` (none for `None`), as
/// another version of memlog would have left it.
fn mark_store_format(env: &Env, format: Option<&str>) {
    let db = fjall::Database::builder(env.root().join("ai-memory/demo/.memlog/store"))
        .open()
        .unwrap_or_else(|e| panic!("{e}"));
    let proj = db
        .keyspace("projections", fjall::KeyspaceCreateOptions::default)
        .unwrap_or_else(|e| panic!("{e}"));
    let key = b"~m\0format";
    match format {
        Some(f) => proj.insert(key, f),
        None => proj.remove(key),
    }
    .unwrap_or_else(|e| panic!("{e}"));
    db.persist(fjall::PersistMode::SyncAll)
        .unwrap_or_else(|e| panic!("{e}"));
}

/// The `dropped-*.jsonl` files in the project state directory `state`.
fn dropped_files(state: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(state)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("dropped-"))
        })
        .collect()
}

/// A file where a project's directory goes is named, with the fix, by every command: the
/// project is not merely uninitialized, and `init` cannot create it.
#[test]
fn a_file_where_the_project_directory_goes_is_named() {
    let env = Env::with_project();
    let dir = env.root().join("ai-memory/demo");
    std::fs::remove_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&dir, "x").unwrap_or_else(|e| panic!("{e}"));
    for args in [
        &["list", "demo"][..],
        &["init", "demo"],
        &["verify", "demo"],
    ] {
        let r = env.run(args);
        assert_eq!(r.code, 6, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains(
                "is a file where project `demo`'s directory goes; move it away or remove it"
            ),
            "{args:?}: {}",
            r.stderr
        );
    }
    assert_eq!(std::fs::read_to_string(&dir).unwrap_or_default(), "x");
}

/// A value of megabytes in `memlog.json` is quoted in a line, not whole, by every command that
/// reports the configuration's problems, in text and under `--json`.
#[test]
fn a_huge_value_in_the_configuration_is_not_echoed_whole() {
    let env = Env::with_project();
    let path = env.root().join("ai-memory/demo/memlog.json");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut config: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    config["name"] = "x".repeat(1_000_000).into();
    config["policies"]["write"]["low_confidence_warning"] = "y".repeat(500_000).into();
    std::fs::write(&path, config.to_string()).unwrap_or_else(|e| panic!("{e}"));
    for args in [
        &["list"][..],
        &["--json", "list"],
        &["config", "validate", "demo"],
        &["--json", "config", "validate", "demo"],
        &["--json", "health"],
    ] {
        let r = env.run(args);
        assert_ne!(r.code, 0, "{args:?}");
        let size = r.stdout.len() + r.stderr.len();
        assert!(size < 20_000, "{args:?}: {size} bytes");
    }
}

/// A `memlog.json` that a merge left with git's conflict markers (two branches initialized the
/// same project) is named as such, with how to keep one side, by every command and by
/// `config validate`.
#[test]
fn conflict_markers_in_the_configuration_are_named() {
    let env = Env::with_project();
    let path = env.root().join("ai-memory/demo/memlog.json");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let marked = format!("<<<<<<< HEAD\n{text}=======\n{text}>>>>>>> a\n");
    std::fs::write(&path, marked).unwrap_or_else(|e| panic!("{e}"));
    for args in [&["list"][..], &["config", "validate", "demo"]] {
        let r = env.run(args);
        assert_ne!(r.code, 0, "{args:?}");
        let said = format!("{}{}", r.stdout, r.stderr);
        assert!(
            said.contains("git conflict markers") && said.contains("--ours"),
            "{args:?}: {}{}",
            r.stdout,
            r.stderr
        );
    }
}

/// An event dated after the machine's clock (a writer's clock was wrong, and a merge brought it
/// in) is named by `verify` as a warning: the log is still valid.
#[test]
fn verify_names_events_dated_after_the_clock() {
    let env = Env::with_project();
    let id = env.add("clock", "Written by a wrong clock");
    env.run(&["--now", "2099-01-01T00:00:00Z", "pin", &id]).ok();
    let r = env.run(&["verify"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("is dated 2099-01-01T00:00:00.000Z")
            && r.stdout.contains("writer's clock was wrong"),
        "{}",
        r.stdout
    );
    assert_eq!(
        r.stdout.matches("writer's clock").count(),
        1,
        "{}",
        r.stdout
    );
}
