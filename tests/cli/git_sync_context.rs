//! `memlog sync-context`: ai-context/<project>.md from high-confidence memory, deterministic,
//! with `--check` for CI and the hook and `--dry-run`.

use crate::common::Env;

macro_rules! snapshot {
    ($name:expr, $value:expr) => {
        insta::with_settings!({ snapshot_path => "../../snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!($name, $value);
        });
    };
}

fn add(
    env: &Env,
    now: &str,
    section: &str,
    subject: &str,
    summary: &str,
    confidence: &str,
    evidence: &str,
) -> String {
    let mut args = vec![
        "add",
        "--section",
        section,
        "--kind",
        "decision",
        "--subject",
        subject,
        "--scope",
        "service:auth",
        "--summary",
        summary,
        "--content",
        "First line.\n# not a heading\nLast line.",
        "--confidence",
        confidence,
        "--evidence",
        evidence,
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

fn context(env: &Env) -> String {
    std::fs::read_to_string(env.root().join("ai-context/demo.md")).unwrap_or_default()
}

#[test]
fn selects_groups_and_is_deterministic() {
    let env = Env::with_project();
    let code = "code:src/auth/token.rs#L10-L40:token issuing";
    let kept = add(
        &env,
        "2026-11-20T10:00:00Z",
        "decisions",
        "auth.tokens",
        "Use short-lived JWTs",
        "0.9",
        code,
    );
    add(
        &env,
        "2026-11-20T10:00:01Z",
        "learnings",
        "auth.retry",
        "Retry token refresh once",
        "0.8",
        "artifact:build/report.html:the load test",
    );
    add(
        &env,
        "2026-11-20T10:00:02Z",
        "state",
        "auth.rollout",
        "Rollout at 50 percent",
        "0.95",
        code,
    );
    add(
        &env,
        "2026-11-20T10:00:03Z",
        "decisions",
        "auth.low",
        "Low confidence",
        "0.79",
        code,
    );
    add(
        &env,
        "2026-11-20T10:00:04Z",
        "decisions",
        "auth.ticket",
        "Only a ticket",
        "0.9",
        "ticket:https://github.com/acme/app/issues/123:the ask",
    );
    let gone = add(
        &env,
        "2026-11-20T10:00:05Z",
        "decisions",
        "auth.gone",
        "Deprecated",
        "0.9",
        code,
    );
    env.run_at(
        "2026-11-20T11:00:00Z",
        &["deprecate", &gone, "--reason", "obsolete"],
    )
    .ok();

    let check = env.run(&["sync-context", "--check"]);
    assert_eq!(check.code, 1, "{}", check.stdout);
    assert!(check.stdout.contains("does not exist"), "{}", check.stdout);
    let dry = env.run(&["sync-context", "--dry-run"]).ok().stdout;
    assert!(!env.root().join("ai-context").exists(), "--dry-run wrote");
    env.run(&["sync-context"]).ok();
    let text = context(&env);
    assert_eq!(text, dry);
    assert!(text.contains(&kept));
    for left_out in ["Low confidence", "Only a ticket", "Deprecated"] {
        assert!(!text.contains(left_out), "{left_out}: {text}");
    }
    assert!(text.find("## Decisions") < text.find("## State"), "{text}");
    snapshot!("sync_context", text.replace(&kept, "[KEPT]"));
    assert_eq!(env.run(&["sync-context", "--check"]).code, 0);
    assert!(
        env.run(&["sync-context"])
            .ok()
            .stdout
            .contains("up to date")
    );

    // The same events in another order (and duplicated) give the same bytes.
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    let mut lines: Vec<&str> = log.lines().collect();
    lines.reverse();
    lines.push(lines[0]);
    std::fs::write(env.log(), format!("{}\n", lines.join("\n"))).unwrap_or_else(|e| panic!("{e}"));
    env.run(&["rebuild"]).ok();
    assert_eq!(env.run(&["sync-context", "--check"]).code, 0);

    // A change is named by --check, and the file follows it.
    env.run_at(
        "2026-11-21T10:00:00Z",
        &["update", &kept, "--confidence", "0.85"],
    )
    .ok();
    let check = env.run(&["sync-context", "--check", "--json"]);
    assert_eq!(check.code, 1);
    assert_eq!(check.json()["stale"]["changed"], serde_json::json!([kept]));
    env.run_at(
        "2026-11-21T10:00:01Z",
        &["update", &kept, "--confidence", "0.5"],
    )
    .ok();
    let check = env.run(&["sync-context", "--check", "--json"]);
    assert_eq!(check.json()["stale"]["removed"], serde_json::json!([kept]));
    env.run(&["sync-context"]).ok();
    assert!(!context(&env).contains(&kept));

    // The file as it was: --as-of with --check/--dry-run only.
    let past = env
        .run(&[
            "sync-context",
            "--dry-run",
            "--as-of",
            "2026-11-20T12:00:00Z",
        ])
        .ok()
        .stdout;
    assert_eq!(past, text);
    let refused = env.run(&["sync-context", "--as-of", "2026-11-20T12:00:00Z"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
}

#[cfg(unix)]
#[test]
fn an_ai_context_link_out_of_the_workspace_is_refused() {
    let env = Env::nested();
    env.run(&["init", "demo"]).ok();
    let outside = env.dir.path().join("elsewhere");
    std::fs::create_dir(&outside).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(&outside, env.root().join("ai-context"))
        .unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["sync-context", "demo"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("outside the workspace"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_dir(&outside).map(|d| d.count()).unwrap_or(1),
        0
    );
}

/// Text that came through a merge (memlog refuses to write it) cannot drive a terminal nor hide
/// in the context file: control characters (ESC, BEL, C1 CSI, DEL), bidirectional overrides and
/// zero-width characters become spaces in what `sync-context` and `stats` show; content keeps
/// its lines and tabs.
#[test]
fn control_characters_from_a_merge_are_never_shown() {
    let env = Env::with_project();
    let id = env.add("auth.tokens", "Use short-lived JWTs");
    env.forge_update(
        &id,
        "2026-11-22T10:31:13.000Z",
        serde_json::json!({
            "summary": "Use \u{1b}]0;owned\u{7} JWTs \u{9b}2J",
            "subject": "auth\u{1b}[31m.tokens",
            "content": "First \u{1b}[2J line\u{7f}.\nSecond \u{202e}line\u{200b}.\r\n\tindented",
            "valid_to": "2026-11-25T00:00:00.000Z",
        }),
    );
    let shown = |c: char| {
        (c.is_control() && !matches!(c, '\n' | '\t')) || matches!(c, '\u{202e}' | '\u{200b}')
    };
    let dry = env.run(&["sync-context", "--dry-run"]).ok().stdout;
    env.run(&["sync-context"]).ok();
    let file = context(&env);
    let stats = env.run(&["stats"]).ok().stdout;
    for (what, text) in [("--dry-run", &dry), ("the file", &file), ("stats", &stats)] {
        assert!(!text.chars().any(shown), "{what}: {text:?}");
    }
    assert!(stats.contains(" ]0;owned  JWTs  2J"), "{stats}");
    assert!(
        file.contains("First  [2J line .\nSecond  line .\n\tindented\n"),
        "{file:?}"
    );
}

/// An entry whose text trips the secret scanner (a credential merged from elsewhere: memlog
/// refuses to write one) is left out of the context file, named on standard error by rule and
/// never copied nor printed.
#[test]
fn an_entry_holding_a_credential_is_left_out() {
    const FAKE_TOKEN: &str = "ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE0000";
    let env = Env::with_project();
    let kept = env.add("auth.kept", "Use short-lived JWTs");
    let leaked = env.add("auth.leaked", "Deploy token");
    env.forge_update(
        &leaked,
        "2026-11-22T10:31:13.000Z",
        serde_json::json!({"content": format!("token {FAKE_TOKEN}")}),
    );
    let dry = env.run(&["sync-context", "--dry-run"]).ok();
    let check = env.run(&["sync-context", "--check", "--json"]);
    let write = env.run(&["sync-context"]).ok();
    let file = context(&env);
    assert_eq!(file, dry.stdout);
    assert!(
        file.contains(&kept) && file.contains("evidence: 1."),
        "{file}"
    );
    assert!(
        file.contains(&format!("looks like a credential: {leaked}.")),
        "{file}"
    );
    assert!(!file.contains("Deploy token"), "{file}");
    for r in [&dry, &write] {
        assert!(
            r.stderr.contains(&format!("left out {leaked}"))
                && r.stderr.contains("github-token")
                && r.stderr.contains("memlog purge"),
            "{}",
            r.stderr
        );
    }
    assert_eq!(check.json()["withheld"][0]["entry"], leaked.as_str());
    assert_eq!(check.json()["withheld"][0]["rule"], "github-token");
    for r in [&dry, &check, &write] {
        assert!(!r.stdout.contains(FAKE_TOKEN) && !r.stderr.contains(FAKE_TOKEN));
    }
    assert_eq!(env.run(&["sync-context", "--check"]).code, 0);
}

/// A new section after an entry changes only the blank lines around that entry's block: the
/// entry is not reported as changed, the new one as added.
#[test]
fn a_new_section_does_not_change_the_entry_before_it() {
    let env = Env::with_project();
    let first = add(
        &env,
        "2026-11-22T10:00:00Z",
        "decisions",
        "auth.a",
        "First decision",
        "0.9",
        "code:src/a.rs#L1-L2:where",
    );
    env.run(&["sync-context", "demo"]).ok();
    let second = add(
        &env,
        "2026-11-22T11:00:00Z",
        "learnings",
        "auth.b",
        "A learning",
        "0.9",
        "code:src/b.rs#L1-L2:where",
    );
    let check = env.run(&["sync-context", "demo", "--check", "--json"]);
    let stale = &check.json()["stale"];
    assert_eq!(stale["added"], serde_json::json!([second]), "{stale}");
    assert_eq!(stale["changed"], serde_json::json!([]), "{stale} ({first})");
}

/// `--check` names the first ten entries of each kind of difference and counts the rest, so a
/// bulk import does not print every id on one line; `--json` still lists them all.
#[test]
fn check_names_ten_entries_and_counts_the_rest() {
    let env = Env::with_project();
    env.run(&["sync-context", "demo"]).ok();
    env.apply_creates(13, "Imported.");

    let r = env.run(&["sync-context", "demo", "--check"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains(" and 3 more; run"), "{}", r.stdout);
    assert_eq!(r.stdout.matches("m-").count(), 10, "{}", r.stdout);
    let all = env
        .run(&["sync-context", "demo", "--check", "--json"])
        .json();
    assert_eq!(
        all["stale"]["added"].as_array().map(Vec::len),
        Some(13),
        "{all}"
    );
}
