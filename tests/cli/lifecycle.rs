//! Lifecycle: evaluation runs, archive and restore, pinning, purge and gc, freshness and
//! evidence checks, the daemon. Every run has a fixed `--now`.

use crate::common::{Env, NOW, add_args, git, stdin_run};

/// `NOW` plus whole days, as `--now` takes it.
fn day(n: i64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339(NOW)
        .unwrap_or_else(|e| panic!("{e}"))
        .with_timezone(&chrono::Utc);
    (base + chrono::Duration::days(n)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn run_at(env: &Env, days: i64) -> serde_json::Value {
    env.run_at(&day(days), &["lifecycle", "run", "--json"])
        .ok()
        .json()
}

fn transitions(report: &serde_json::Value) -> Vec<(String, String, String)> {
    report["transitions"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| {
                    (
                        t["entry"].as_str().unwrap_or_default().to_owned(),
                        t["from"].as_str().unwrap_or_default().to_owned(),
                        t["to"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn show(env: &Env, id: &str) -> serde_json::Value {
    env.run(&["show", id, "--json"]).ok().json()
}

#[test]
fn runs_decay_then_archive_and_are_idempotent_at_the_same_now() {
    let env = Env::with_project();
    let a = env.add("a.subject", "first decision");
    let b = env.add("b.subject", "second decision");
    // 40 days, never accessed: 14 days of grace, then time runs twice as fast: 66 effective
    // days of a 30-day half-life, score 0.218 < 0.3.
    let first = run_at(&env, 40);
    let mut t = transitions(&first);
    t.sort();
    let mut expected = vec![
        (a.clone(), "active".to_owned(), "decaying".to_owned()),
        (b.clone(), "active".to_owned(), "decaying".to_owned()),
    ];
    expected.sort();
    assert_eq!(t, expected, "{first}");
    let reason = first["transitions"][0]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("decay score 0.218"), "{reason}");
    assert!(reason.contains("effective TTL 90.0 days"), "{reason}");
    let log = std::fs::read(env.log()).unwrap_or_default();
    // The same `now` again: nothing to do, nothing appended.
    let again = run_at(&env, 40);
    assert!(transitions(&again).is_empty(), "{again}");
    assert_eq!(std::fs::read(env.log()).unwrap_or_default(), log);
    // Past the 90-day TTL: archived, out of the active index.
    let later = run_at(&env, 100);
    assert_eq!(transitions(&later).len(), 2, "{later}");
    assert!(
        transitions(&later)
            .iter()
            .all(|(_, from, to)| from == "decaying" && to == "archived")
    );
    assert_eq!(env.listed(), Some(0));
    let archived = env.run(&["list", "--archived", "--json"]).ok().json();
    assert_eq!(archived.as_array().map(Vec::len), Some(2));
    let page = env
        .run(&[
            "list",
            "--archived",
            "--limit",
            "1",
            "--offset",
            "1",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(page.as_array().map(Vec::len), Some(1));
    let audit = env.run(&["audit", &a, "--json"]).ok().json();
    let tos: Vec<&str> = audit
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["dimension"] == "lifecycle")
        .filter_map(|r| r["to"].as_str())
        .collect();
    assert_eq!(tos, ["decaying", "archived"]);
    assert_eq!(env.run(&["verify"]).code, 0);
}

#[test]
fn reading_an_archived_entry_restores_it_with_every_field() {
    let env = Env::with_project();
    let a = env.add("a.subject", "a decision");
    let before = show(&env, &a);
    run_at(&env, 100);
    assert_eq!(env.listed(), Some(0));
    let shown = env.run_at(&day(101), &["show", &a, "--json"]).ok();
    // A note, on standard error under --json too.
    assert!(shown.stderr.contains("restored"), "{}", shown.stderr);
    let after = shown.json();
    assert_eq!(after["lifecycle"], "active");
    for (k, v) in before.as_object().into_iter().flatten() {
        if !["version", "heads", "status_reason"].contains(&k.as_str()) {
            assert_eq!(&after[k], v, "{k}");
        }
    }
    assert_eq!(env.listed(), Some(1));
    let last = last_transition(&env, &a);
    assert_eq!(
        (last["from"].as_str(), last["to"].as_str()),
        (Some("archived"), Some("active"))
    );
    assert!(
        last["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("restored")
    );
    // The read counts as an access: a run at the same time leaves it active.
    assert!(transitions(&run_at(&env, 101)).is_empty());
}

/// A `state` entry archived past its `valid_to` is renewed as LIFECYCLE.md section 11 says,
/// with `update --valid-to`: the update restores it in the same write, so that it is back in
/// every default answer, and the audit says why.
#[test]
fn renewing_an_archived_state_entry_with_update_restores_it() {
    let env = Env::with_project();
    let valid_to = day(9);
    let mut args = add_args(
        ("state", "metric"),
        "queue.depth",
        "Queue depth peaks at 120",
        "Measured daily.",
        "0.8",
        "artifact:reports/q.csv:daily",
    );
    args.extend(["--valid-from", "2026-11-22", "--valid-to", &valid_to]);
    let a = env.run(&args).ok().stdout.trim().to_owned();
    let archived = transitions(&run_at(&env, 10));
    assert_eq!(archived, [(a.clone(), "active".into(), "archived".into())]);
    let (renewal, until) = (day(11), day(60));
    let renewed = env
        .run_at(
            &renewal,
            &[
                "update",
                &a,
                "--valid-to",
                &until,
                "--reason",
                "re-measured, unchanged",
                "--json",
            ],
        )
        .ok();
    assert!(
        renewed
            .stderr
            .contains("was archived; updating it restored it"),
        "{}",
        renewed.stderr
    );
    let written = renewed.json();
    assert_eq!(written["entry"]["lifecycle"], "active", "{written}");
    // The update and the restore, in one append.
    assert_eq!(written["events"].as_array().map(Vec::len), Some(2));
    for command in [&["query", "queue", "--json"][..], &["list", "--json"]] {
        let found = env.run_at(&renewal, command).ok().json();
        let ids: Vec<&str> = found
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|h| h["id"].as_str())
            .collect();
        assert_eq!(ids, [a.as_str()], "{command:?}: {found}");
    }
    // Updated today and valid until later: the next run leaves it where it is.
    assert!(transitions(&run_at(&env, 11)).is_empty());
    let last = last_transition(&env, &a);
    assert_eq!(
        (last["from"].as_str(), last["to"].as_str()),
        (Some("archived"), Some("active")),
        "{last}"
    );
    assert_eq!(last["reason"], "restored: updated while archived");
    assert_eq!(env.run(&["verify"]).code, 0);
}

/// An expired entry cannot come back: an update of it is written, with a warning that names
/// the way to keep it, which works.
#[test]
fn updating_an_expired_entry_warns_that_it_stays_out() {
    let env = Env::with_project();
    let a = env.add("a.subject", "a decision");
    run_at(&env, 100);
    let expired = transitions(&run_at(&env, 100 + 365));
    assert_eq!(expired, [(a.clone(), "archived".into(), "expired".into())]);
    let later = day(466);
    let updated = env
        .run_at(&later, &["update", &a, "--content", "Still holds."])
        .ok();
    assert!(
        updated.stderr.contains("is expired")
            && updated.stderr.contains(&format!("memlog supersede {a}")),
        "{}",
        updated.stderr
    );
    assert_eq!(show(&env, &a)["lifecycle"], "expired");
    let replaced = env
        .run_at(&later, &["supersede", &a, "--reason", "still holds"])
        .ok();
    assert!(replaced.stdout.contains(&format!("(supersedes {a})")));
    assert_eq!(
        env.run_at(&later, &["list", "--json"]).ok().json()[0]["summary"],
        "a decision"
    );
}

/// A change dated before its entry's latest event is refused, naming both times and the fix,
/// and writes nothing, whichever command makes it: otherwise the audit would show the entry
/// restored before it was archived. A read at such a time shows the entry without restoring it.
#[test]
fn a_change_dated_before_the_entrys_latest_event_is_refused() {
    let env = Env::with_project();
    let a = env.add("a.subject", "a decision");
    run_at(&env, 100);
    let (archived, behind) = (day(100), day(50));
    let log = std::fs::read(env.log()).unwrap_or_default();
    let deprecate = serde_json::json!({"operation": "deprecate", "target_id": a, "reason": "gone"});
    for args in [
        vec!["update", &a, "--confidence", "0.9"],
        vec!["pin", &a],
        vec!["deprecate", &a, "--reason", "gone"],
        vec!["supersede", &a, "--summary", "another decision"],
    ] {
        let r = env.run_at(&behind, &args);
        assert_eq!(r.code, 3, "{args:?}: {}", r.stderr);
        assert_eq!(
            r.stderr.trim_end(),
            format!(
                "error: {a} has an event dated {archived}, after this change's time {behind}: a \
                 change cannot be dated before the history it follows, and nothing was written; \
                 use a --now at or after {archived} (leaving --now and MEMLOG_NOW out dates a \
                 change by the clock, which works once the clock has passed that time)"
            ),
            "{args:?}"
        );
    }
    let applied = stdin_run(
        &env,
        &["--now", &behind, "apply", "demo", "-", "--json"],
        deprecate.to_string().as_bytes(),
    );
    assert_ne!(applied.code, 0, "{}", applied.stdout);
    assert!(
        applied.stdout.contains("nothing was written"),
        "{}",
        applied.stdout
    );
    let shown = env.run_at(&behind, &["show", &a]).ok();
    assert!(
        shown.stderr.contains("could not be restored") && shown.stderr.contains(&archived),
        "{}",
        shown.stderr
    );
    assert_eq!(std::fs::read(env.log()).unwrap_or_default(), log);
    // At the time of the latest event, the change is in order.
    env.run_at(&archived, &["update", &a, "--confidence", "0.9"])
        .ok();
    let audit = env.run(&["audit", "--json"]).ok().json();
    let times: Vec<&str> = audit
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["at"].as_str())
        .collect();
    assert!(times.is_sorted(), "{audit}");
}

#[test]
fn pinned_entries_skip_every_transition_until_unpinned() {
    let env = Env::with_project();
    let a = env.add("a.subject", "pinned decision");
    let b = env.add("b.subject", "other decision");
    env.run(&["pin", &a, "--reason", "critical"]).ok();
    let r = run_at(&env, 1000);
    let t = transitions(&r);
    assert!(t.iter().all(|(id, _, _)| *id == b), "{r}");
    assert_eq!(r["pinned"], 1);
    let pinned = env.run(&["pinned", "--json"]).ok().json();
    assert_eq!(pinned[0]["id"], a.as_str());
    assert_eq!(pinned[0]["pinned_by"], "agent-7");
    assert_eq!(pinned[0]["pinned_at"], NOW);
    env.run_at(&day(1000), &["unpin", &a]).ok();
    // Unpinned: evaluated again from its current age.
    let r = run_at(&env, 1000);
    assert_eq!(
        transitions(&r),
        [(a, "active".to_owned(), "archived".to_owned())]
    );
}

#[test]
fn invalid_policies_are_refused_naming_the_key() {
    let env = Env::with_project();
    env.add("a.subject", "a decision");
    let path = env.root().join("ai-memory/demo/memlog.json");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut config: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    config["policies"]["lifecycle"]["decay"] = serde_json::json!({"lambda": -1});
    std::fs::write(&path, config.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let log = std::fs::read(env.log()).unwrap_or_default();
    let r = env.run(&["lifecycle", "run"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr
            .contains("`policies.lifecycle.decay.lambda`: must be greater than 0, not -1"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read(env.log()).unwrap_or_default(), log);
    // A custom table that leaves [0, 1].
    config["policies"]["lifecycle"]["decay"] =
        serde_json::json!({"function": "custom", "table": [{"days": 10, "score": 1.5}]});
    std::fs::write(&path, config.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["lifecycle", "run"]);
    assert!(
        r.stderr
            .contains("`policies.lifecycle.decay.table[0].score`: must be between 0 and 1"),
        "{}",
        r.stderr
    );
    // A valid linear decay with per-kind TTLs is taken.
    config["policies"]["lifecycle"]["decay"] =
        serde_json::json!({"function": "linear", "period_days": 20});
    config["policies"]["lifecycle"]["ttl_days"] = serde_json::json!({"decision": 300});
    std::fs::write(&path, config.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let r = run_at(&env, 15);
    let reason = r["transitions"][0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("linear(T=20.0 days)"), "{r}");
    assert!(reason.contains("effective TTL 300.0 days"), "{r}");
}

/// Counts of one are singular in the text output: one entry, one batch, one transition, one
/// event, one day; a context file written for the first time is "created".
#[test]
fn counts_of_one_are_singular() {
    let env = Env::with_project();
    env.add("a.subject", "a decision");
    let stats = env.run_at(&day(1), &["stats"]).ok();
    assert!(
        stats
            .stdout
            .contains("growth             1 created, 0 superseded over 1 day\n"),
        "{}",
        stats.stdout
    );
    let run = env.run_at(&day(100), &["lifecycle", "run"]).ok();
    assert!(
        run.stdout
            .contains("demo: 1 entry in 1 batch, 1 transition (archived 1)"),
        "{}",
        run.stdout
    );
    let report = env.run_at(&day(100), &["lifecycle", "report"]).ok();
    assert!(
        report
            .stdout
            .contains(&format!("last run         {} (1 entry, ", day(100))),
        "{}",
        report.stdout
    );
    assert!(
        report.stdout.contains("storage archived 1 entry, "),
        "{}",
        report.stdout
    );
    let export = env.run(&["export", "out.json"]).ok();
    assert!(
        export.stdout.starts_with("exported 1 entry of demo"),
        "{}",
        export.stdout
    );
    let events = env
        .run(&["export", "out.events", "--format", "events"])
        .ok();
    assert!(
        events.stdout.starts_with("exported 2 events"),
        "{}",
        events.stdout
    );
    let fork = env.run(&["fork", "demo", "copy"]).ok();
    assert!(fork.stdout.contains("(2 events)"), "{}", fork.stdout);
    let sync = env.run(&["sync-context", "demo"]).ok();
    assert!(
        sync.stdout.starts_with("created ai-context/demo.md (") && !sync.stdout.contains("exist"),
        "{}",
        sync.stdout
    );
}

/// A page of `list --archived` says where it is alike in text and JSON: the footer naming the
/// next page is a warning with `--json`, and a page past the end says how many there are
/// instead of that there are none.
#[test]
fn archived_pages_say_where_they_are_in_json_too() {
    let env = Env::with_project();
    for n in 1..=3 {
        env.add(&format!("old.n{n}"), &format!("Old cache note {n}"));
    }
    assert_eq!(run_at(&env, 100)["archived"], 3);
    let text = env.run(&["list", "--archived", "--limit", "1"]).ok();
    assert!(
        text.stdout
            .ends_with("(archived 1-1 of 3; next page: --offset 1)\n"),
        "{}",
        text.stdout
    );
    let json = env
        .run(&["--json", "list", "--archived", "--limit", "1"])
        .ok();
    assert_eq!(json.json().as_array().map(Vec::len), Some(1));
    assert_eq!(
        json.warnings(),
        ["archived 1-1 of 3; next page: --offset 1"],
        "{}",
        json.stdout
    );
    // The last page says nothing more, in either form.
    let last = env
        .run(&["--json", "list", "--archived", "--offset", "2"])
        .ok();
    assert_eq!(last.json().as_array().map(Vec::len), Some(1));
    assert!(last.warnings().is_empty(), "{}", last.stdout);
    let past_end = "no archived entries at --offset 5 (3 in all); give an --offset below 3";
    let text = env.run(&["list", "--archived", "--offset", "5"]).ok();
    assert_eq!(text.stdout.trim(), past_end);
    let json = env
        .run(&["--json", "list", "--archived", "--offset", "5"])
        .ok();
    assert_eq!(json.json(), serde_json::json!([]));
    assert_eq!(json.warnings(), [past_end], "{}", json.stdout);
    // None asked for: nothing, as `list --limit 0`.
    let none = env.run(&["list", "--archived", "--limit", "0"]).ok();
    assert_eq!(none.stdout.trim(), "no archived entries");
}

/// A dry run's report is the run's: `archived` counts the entries the run would leave archived.
#[test]
fn a_dry_run_reports_the_archived_count_the_run_would_leave() {
    let env = Env::with_project();
    env.add("a.subject", "a decision");
    env.add("b.subject", "b decision");
    let dry = env
        .run_at(&day(100), &["lifecycle", "run", "--dry-run", "--json"])
        .ok()
        .json();
    let real = run_at(&env, 100);
    assert_eq!(transitions(&dry), transitions(&real));
    assert_eq!(real["archived"], 2, "{real}");
    assert_eq!(dry["archived"], real["archived"], "{dry}");
    // Once the run was made, a dry run has nothing left to do and counts from the store.
    let again = env
        .run_at(&day(100), &["lifecycle", "run", "--dry-run", "--json"])
        .ok()
        .json();
    assert_eq!(again["archived"], 2, "{again}");
}

#[test]
fn dry_run_writes_nothing_and_a_failing_entry_is_skipped() {
    let env = Env::with_project();
    let a = env.add("a.subject", "a decision");
    let b = env.add("b.subject", "b decision");
    let log = std::fs::read(env.log()).unwrap_or_default();
    let dry = env
        .run_at(&day(100), &["lifecycle", "run", "--dry-run", "--json"])
        .ok()
        .json();
    assert_eq!(transitions(&dry).len(), 2);
    assert_eq!(std::fs::read(env.log()).unwrap_or_default(), log);
    assert!(
        !env.root()
            .join("ai-memory/demo/.memlog/lifecycle-runs.jsonl")
            .exists()
    );
    let r = env
        .command(&["lifecycle", "run", "--json"])
        .env("MEMLOG_NOW", day(100))
        .env("MEMLOG_TEST_LIFECYCLE_FAIL_ENTRY", &a)
        .output();
    let r = crate::common::output(r);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let report = r.json();
    assert_eq!(
        transitions(&report),
        [(b, "active".to_owned(), "archived".to_owned())]
    );
    assert_eq!(report["skipped"][0]["entry"], a.as_str());
    assert!(
        r.stdout.contains("injected evaluation failure"),
        "{}",
        r.stdout
    );
    // The report is kept for statistics.
    let metrics = env.run(&["lifecycle", "report", "--json"]).ok().json();
    assert_eq!(metrics["last_run"]["processed"], 2);
    assert_eq!(metrics["entries_by_lifecycle"]["archived"], 1);
    assert_eq!(metrics["storage"]["archived"]["entries"], 1);
    // The text names the transitions by state too, and a kind without ended entries has no
    // lifespan yet.
    env.run(&crate::common::add_args(
        ("learnings", "other"),
        "c.subject",
        "a learning",
        "Details.",
        "0.8",
        "code:src/lib.rs#L1-L9:where it happens",
    ))
    .ok();
    let text = env.run(&["lifecycle", "report"]).ok().stdout;
    assert!(
        text.contains("1 skipped; transitions: archived 1)"),
        "{text}"
    );
    assert!(
        text.contains("average lifespan n/a (none ended)") && !text.contains("- days"),
        "{text}"
    );
}

#[test]
fn purge_then_gc_removes_the_content_and_the_log_still_verifies() {
    let env = Env::with_project();
    let keep = env.add("keep.subject", "kept decision");
    let out = env
        .run(&[
            "add",
            "--section",
            "learnings",
            "--kind",
            "other",
            "--subject",
            "oops",
            "--scope",
            "repo",
            "--summary",
            "pasted by mistake",
            "--content",
            "internal-hostname-zebra-42 should never have been written",
            "--confidence",
            "0.8",
            "--evidence",
            "code:src/lib.rs#L1-L9:where",
        ])
        .ok();
    let id = out.stdout.trim().to_owned();
    env.run_at(
        &day(1),
        &["update", &id, "--content", "still zebra-42 here"],
    )
    .ok();
    let r = env
        .run_at(
            &day(2),
            &["purge", &id, "--reason", "confidential host name"],
        )
        .ok();
    assert!(r.stderr.contains("memlog gc"), "{}", r.stderr);
    let shown = show(&env, &id);
    assert_eq!(shown["purged"], true);
    assert_eq!(shown["content"], "");
    let history = env.run(&["history", &id, "--json"]).ok().stdout;
    assert!(!history.contains("zebra"), "{history}");
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    assert!(log.contains("zebra-42"));
    let before = (
        show(&env, &id),
        show(&env, &keep),
        env.run(&["audit", "--json"]).ok().stdout,
        history,
    );

    let original = log
        .lines()
        .find(|l| l.contains("should never have been written"))
        .unwrap_or_default()
        .to_owned();
    let dry = env.run(&["gc", "--dry-run", "--json"]).ok().json();
    assert_eq!(dry["tombstoned"], 2);
    assert_eq!(std::fs::read_to_string(env.log()).unwrap_or_default(), log);
    let gc = env.run(&["gc", "--json"]).ok().json();
    assert_eq!(gc["tombstoned"], 2, "{gc}");
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    assert!(!log.contains("zebra"), "{log}");
    assert_eq!(log.matches("\"purged_by\":").count(), 2);
    let verify = env.run(&["verify", "--json"]).ok().json();
    assert_eq!(verify["ok"], true, "{verify}");
    let after = (
        show(&env, &id),
        show(&env, &keep),
        env.run(&["audit", "--json"]).ok().stdout,
        env.run(&["history", &id, "--json"]).ok().stdout,
    );
    assert_eq!(before, after);
    // A rebuild from the rewritten log gives the same answers; gc again has nothing to do.
    env.run(&["rebuild"]).ok();
    assert_eq!(show(&env, &id), after.0);
    assert_eq!(env.run(&["gc", "--json"]).ok().json()["tombstoned"], 0);
    // An altered tombstone is caught.
    let tampered = log.replacen("\"kind\":\"other\"", "\"kind\":\"metric\"", 1);
    std::fs::write(env.log(), tampered).unwrap_or_else(|e| panic!("{e}"));
    let verify = env.run(&["verify", "--json"]).json();
    assert_eq!(verify["ok"], false);
    assert!(
        verify.to_string().contains("does not match the digest"),
        "{verify}"
    );
    // No command answers from it: the purge does not vouch for the altered line.
    for args in [vec!["show", id.as_str()], vec!["list"]] {
        let r = env.run(&args);
        assert_eq!(r.code, 6, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("does not match the digest"),
            "{}",
            r.stderr
        );
    }
    // Purging twice is refused.
    std::fs::write(env.log(), &log).unwrap_or_else(|e| panic!("{e}"));
    let again = env.run(&["purge", &id, "--reason", "again"]);
    assert_eq!(again.code, 3, "{}", again.stderr);
    // Any other change says the entry was purged, not what its blanked fields lack.
    for args in [vec!["supersede", id.as_str()], vec!["unpin", id.as_str()]] {
        let r = env.run(&args);
        assert_eq!(r.code, 3, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("was purged"), "{args:?}: {}", r.stderr);
    }
    // A merge that brings back a line gc removed: verify says so, and gc removes it again.
    std::fs::write(env.log(), format!("{log}{original}\n")).unwrap_or_else(|e| panic!("{e}"));
    let verify = env.run(&["verify", "--json"]).ok().json();
    assert_eq!(verify["ok"], true, "{verify}");
    assert!(
        verify["warnings"]
            .to_string()
            .contains("appears both whole and as a tombstone"),
        "{verify}"
    );
}

#[test]
fn expired_entries_are_purged_after_retention() {
    let env = Env::with_project();
    let a = env.add("a.subject", "a decision");
    run_at(&env, 100); // archived
    let t = transitions(&run_at(&env, 100 + 365));
    assert_eq!(
        t,
        [(a.clone(), "archived".to_owned(), "expired".to_owned())]
    );
    // Expired entries are listed on their own, as archived ones are.
    let listed = |flag: &str| -> Vec<String> {
        env.run_at(&day(100 + 365), &["list", flag, "--json"])
            .ok()
            .json()
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["id"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(listed("--expired"), std::slice::from_ref(&a));
    assert!(listed("--archived").is_empty());
    let quiet = run_at(&env, 100 + 365 + 29);
    assert!(transitions(&quiet).is_empty());
    assert_eq!(quiet["reclaimed_bytes"], 0, "{quiet}");
    let purging = run_at(&env, 100 + 365 + 30);
    let t = transitions(&purging);
    assert_eq!(t, [(a.clone(), "expired".to_owned(), "purged".to_owned())]);
    // The cleanup says what it reclaimed: at least the summary and content it removed.
    let reclaimed = purging["reclaimed_bytes"].as_u64().unwrap_or(0);
    let removed = "a decision".len() + "Details of the decision.".len();
    assert!(reclaimed >= removed as u64, "{purging}");
    assert_eq!(show(&env, &a)["purged"], true);
    let purged = env
        .run_at(&day(100 + 365 + 30), &["list", "--purged"])
        .ok()
        .stdout;
    assert!(
        purged.contains(&a) && !purged.contains("a decision"),
        "{purged}"
    );
    // Its audit trail outlives the purge.
    let audit = env.run(&["audit", &a, "--json"]).ok().json();
    assert!(audit.as_array().is_some_and(|a| a.len() >= 4), "{audit}");
    assert_eq!(env.run(&["verify"]).code, 0);
}

#[test]
fn freshness_lists_expiring_state_and_due_reviews() {
    let env = Env::with_project();
    let state = env
        .run(&[
            "add",
            "--section",
            "state",
            "--kind",
            "metric",
            "--subject",
            "deploy.freeze",
            "--scope",
            "repo",
            "--summary",
            "Deploys are frozen",
            "--content",
            "Until the audit.",
            "--confidence",
            "0.9",
            "--evidence",
            "doc:docs/freeze.md:notice",
            "--valid-from",
            "2026-11-20",
            "--valid-to",
            &day(3),
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    let reviewed = env.add("review.me", "reviewed monthly");
    env.run(&["update", &reviewed, "--review-interval", "30d"])
        .ok();
    let now = env.run(&["check-freshness", "--json"]).ok().json();
    assert_eq!(now[0]["id"], state.as_str());
    assert_eq!(now[0]["problem"], "expiring");
    assert_eq!(now.as_array().map(Vec::len), Some(1));
    let later = env
        .run_at(&day(31), &["check-freshness", "--json"])
        .ok()
        .json();
    let problems: Vec<&str> = later
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["problem"].as_str())
        .collect();
    assert_eq!(problems, ["expired", "review_due"]);
    // An hour after it expired: a tenth of a day rounds to none, said without a minus sign.
    let hour_after = (chrono::DateTime::parse_from_rfc3339(&day(3))
        .unwrap_or_else(|e| panic!("{e}"))
        + chrono::Duration::hours(1))
    .to_rfc3339();
    let text = env.run_at(&hour_after, &["check-freshness"]).ok().stdout;
    assert!(
        text.contains("(0.0 days ago)") && !text.contains("-0"),
        "{text}"
    );
    let json = env
        .run_at(&hour_after, &["check-freshness", "--json"])
        .ok()
        .stdout;
    assert!(json.contains("\"days\": 0.0"), "{json}");
    // A run archives the state entry past its valid_to.
    let t = transitions(&run_at(&env, 4));
    assert_eq!(t, [(state, "active".to_owned(), "archived".to_owned())]);
}

#[test]
fn evidence_checks_flag_and_clear_stale_paths() {
    let env = Env::with_project();
    let a = env.add("a.subject", "cites src/lib.rs#L1-L9");
    // A dry run says what it would do, and does nothing.
    let log = std::fs::read(env.log()).unwrap_or_default();
    let r = env.run(&["validate-evidence", "--dry-run"]);
    assert!(r.stdout.contains("1 would be marked stale"), "{}", r.stdout);
    assert_eq!(std::fs::read(env.log()).unwrap_or_default(), log);
    let r = env.run(&["validate-evidence", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.json()["marked_stale"][0], a.as_str());
    assert_eq!(show(&env, &a)["evidence_stale"], true);
    // Checking again changes nothing.
    let log = std::fs::read(env.log()).unwrap_or_default();
    assert_eq!(env.run(&["validate-evidence"]).code, 1);
    assert_eq!(std::fs::read(env.log()).unwrap_or_default(), log);
    // Too short for the anchor: still stale.
    std::fs::create_dir_all(env.root().join("src")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(env.root().join("src/lib.rs"), "one\ntwo\n").unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["validate-evidence"]);
    assert!(r.stdout.contains("has 2 lines"), "{}", r.stdout);
    std::fs::write(env.root().join("src/lib.rs"), "x\n".repeat(9))
        .unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&["validate-evidence", "--json"]).ok().json();
    assert_eq!(r["cleared"][0], a.as_str());
    assert_eq!(show(&env, &a)["evidence_stale"], false);
    let stats = env.run(&["lifecycle", "report", "--json"]).ok().json();
    assert_eq!(stats["stale_evidence"], 0);
}

#[test]
fn the_daemon_runs_on_a_schedule_and_stops_cleanly_on_sigterm() {
    let env = Env::with_project();
    env.add("a.subject", "a decision");
    let once = env
        .run_at(
            &day(100),
            &["lifecycle", "daemon", "--every", "1h", "--max-runs", "1"],
        )
        .ok();
    assert!(once.stdout.contains("1 transition ("), "{}", once.stdout);
    assert!(
        once.stderr.contains("stopped after 1 evaluation"),
        "{}",
        once.stderr
    );
    let child = env
        .command(&["lifecycle", "daemon", "--every", "1h"])
        .env("MEMLOG_NOW", day(200))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    // Wait for the first evaluation to be kept, then ask it to stop.
    let runs = env
        .root()
        .join("ai-memory/demo/.memlog/lifecycle-runs.jsonl");
    for _ in 0..200 {
        let n = std::fs::read_to_string(&runs).map_or(0, |t| t.lines().count());
        if n >= 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Meanwhile other commands are not blocked.
    assert_eq!(env.listed(), Some(0));
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(killed.success());
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("stopped after 1 evaluation"), "{stderr}");
    assert!(env.run(&["lifecycle", "daemon", "--every", "soon"]).code == 2);
    assert_eq!(
        env.run(&["lifecycle", "daemon", "--every", "1s", "--max-runs", "0"])
            .code,
        2
    );
    let zero = env.run(&["lifecycle", "daemon", "--every", "0s"]);
    assert_eq!(zero.code, 2);
    assert!(zero.stderr.contains("is zero"), "{}", zero.stderr);
}

#[test]
fn dropping_a_project_needs_confirmation_and_unpins_first() {
    let env = Env::with_project();
    let a = env.add("a.subject", "a decision");
    env.run(&["pin", &a]).ok();
    let r = env.run(&["drop", "demo"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--yes"));
    assert!(env.log().exists());
    let r = env.run(&["drop", "demo", "--yes", "--json"]).ok().json();
    assert_eq!(r["unpinned"][0], a.as_str());
    assert!(!env.log().exists());
    assert_eq!(env.run(&["drop", "global", "--yes"]).code, 3);
}

/// Transitions written on two branches and merged by git converge like every other event:
/// both merge orders give the same projections, and the log verifies.
#[test]
fn transitions_on_two_branches_merge_and_converge() {
    let env = Env::new();
    git(&env, &["init", "-q", "-b", "main"]);
    env.run(&["init", "demo"]).ok();
    let a = env.add("a.subject", "a decision");
    let b = env.add("b.subject", "b decision");
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "base"]);
    git(&env, &["checkout", "-qb", "left"]);
    env.run_at(&day(40), &["lifecycle", "run"]).ok();
    git(&env, &["commit", "-qam", "left run"]);
    git(&env, &["checkout", "-q", "main"]);
    env.run_at(&day(10), &["show", &a]).ok();
    env.run_at(&day(100), &["lifecycle", "run"]).ok();
    git(&env, &["commit", "-qam", "main run"]);
    git(&env, &["checkout", "-qb", "other", "left"]);
    git(&env, &["merge", "-q", "--no-edit", "main"]);
    let left_first = env.run(&["dump"]).ok().stdout;
    git(&env, &["checkout", "-q", "main"]);
    git(&env, &["merge", "-q", "--no-edit", "left"]);
    let main_first = env.run(&["dump"]).ok().stdout;
    assert_eq!(left_first, main_first);
    assert_eq!(env.run(&["verify"]).code, 0);
    env.run(&["rebuild"]).ok();
    assert_eq!(env.run(&["dump"]).ok().stdout, main_first);
    let archived = env.run(&["list", "--archived", "--json"]).ok().json();
    let mut ids: Vec<&str> = archived
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["id"].as_str())
        .collect();
    ids.sort_unstable();
    let mut expected = [a.as_str(), b.as_str()];
    expected.sort_unstable();
    assert_eq!(ids, expected);
}

#[test]
fn importance_extends_the_ttl_and_accesses_slow_decay() {
    let env = Env::with_project();
    let path = env.root().join("ai-memory/demo/memlog.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}"));
    let lifecycle = &mut config["policies"]["lifecycle"];
    lifecycle["importance"] = serde_json::json!({
        "weights": {"access_frequency": 0, "confidence": 1, "relationships": 0},
        "high_threshold": 0.85,
        "ttl_multiplier": 3
    });
    lifecycle["archive_size_warning"] = serde_json::json!(1);
    std::fs::write(&path, config.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let low = env.add("low.subject", "confidence 0.8");
    let high = env
        .run(&crate::common::add_args(
            ("decisions", "decision"),
            "high.subject",
            "confidence 0.9",
            "x",
            "0.9",
            "code:src/lib.rs#L1-L9:where",
        ))
        .ok()
        .stdout
        .trim()
        .to_owned();
    let read = env.add("read.subject", "read at day 30");
    env.run_at(&day(30), &["show", &read]).ok();
    let r = run_at(&env, 100);
    let mut t = transitions(&r);
    t.sort();
    // Read at day 30: 70 days since last use, below the TTL, decay 0.198: decaying. Never
    // read, `low` ran at twice the speed after 14 days and is archived at 100 days; `high`
    // (importance 0.9 >= 0.85) has three times the TTL and only decays.
    let mut expected = vec![
        (low, "active".to_owned(), "archived".to_owned()),
        (high.clone(), "active".to_owned(), "decaying".to_owned()),
        (read, "active".to_owned(), "decaying".to_owned()),
    ];
    expected.sort();
    assert_eq!(t, expected, "{r}");
    let reason = r["transitions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["entry"] == high.as_str())
        .and_then(|t| t["reason"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(
        reason.contains("effective TTL 270.0 days (kind decision TTL 90 days x3)"),
        "{reason}"
    );
    let r = env
        .run_at(&day(100), &["lifecycle", "run", "--dry-run", "--json"])
        .ok()
        .json();
    assert!(transitions(&r).is_empty(), "{r}");
    // Two archived entries are more than the configured warning size of 1.
    let more = env.run_at(&day(200), &["lifecycle", "run"]).ok();
    assert!(
        more.stderr.contains("archive_size_warning"),
        "{}",
        more.stderr
    );
    assert!(
        env.run(&["list", "--archived", "--json"])
            .ok()
            .json()
            .as_array()
            .is_some_and(|a| a.len() >= 2)
    );
}

#[test]
fn a_broken_access_log_never_fails_a_read_and_all_projects_run() {
    let env = Env::with_project();
    let a = env.add("a.subject", "a decision");
    let state = env.root().join("ai-memory/demo/.memlog");
    let log = state.join("access.jsonl");
    let _ = std::fs::remove_file(&log);
    std::fs::create_dir_all(log.join("not-a-file")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(show(&env, &a)["id"], a.as_str());
    let all = env
        .run_at(&day(100), &["lifecycle", "run", "--all", "--json"])
        .ok()
        .json();
    let projects: Vec<&str> = all
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["project"].as_str())
        .collect();
    assert_eq!(projects, ["demo", "global"]);
    assert_eq!(transitions(&all[0]).len(), 1);
}

/// The writer refuses any transition the state machine does not allow, naming both states,
/// and one whose `from` is not the entry's state; nothing is written.
#[test]
fn invalid_transitions_are_refused_naming_both_states() {
    use memlog::log::writer::{Change, WriteContext, write};
    use projections::Lifecycle;
    let env = Env::with_project();
    let a = env.add("a.subject", "a decision");
    let project = env.demo_project();
    let ctx = WriteContext {
        actor: "agent-7".into(),
        at: NOW.into(),
        lock_timeout: std::time::Duration::from_secs(10),
        dry_run: false,
        fail_after_append: false,
        clock: false,
    };
    let log = std::fs::read(env.log()).unwrap_or_default();
    let attempt = |from, to| {
        let change = Change::Transition {
            target: a.clone(),
            from,
            to,
            reason: "test".into(),
        };
        write(&project, &ctx, change.clone(), |_, _| Ok(change))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let e = attempt(Lifecycle::Active, Lifecycle::Expired);
    assert!(
        e.contains("from `active` to `expired` is not allowed"),
        "{e}"
    );
    assert!(e.contains("decaying, archived"), "{e}");
    let e = attempt(Lifecycle::Archived, Lifecycle::Active);
    assert!(e.contains("is `active`, not `archived`"), "{e}");
    assert_eq!(std::fs::read(env.log()).unwrap_or_default(), log);
    for (from, to) in memlog::lifecycle::machine::VALID {
        assert!(memlog::lifecycle::machine::check(from, to).is_ok());
    }
    for from in Lifecycle::ALL {
        for to in Lifecycle::ALL {
            let valid = memlog::lifecycle::machine::VALID.contains(&(*from, *to));
            assert_eq!(memlog::lifecycle::machine::check(*from, *to).is_ok(), valid);
        }
    }
}

/// `--explain` says why an archived entry that `--include-archived` added is scored by its
/// composite alone although the query has text: it is outside the text index.
#[test]
fn explain_says_why_an_archived_entry_is_scored_by_its_composite() {
    let env = Env::with_project();
    env.add("a.subject", "first decision about retries");
    run_at(&env, 100);
    let r = env
        .run_at(
            &day(100),
            &["query", "retries", "--include-archived", "--explain"],
        )
        .ok();
    assert!(
        r.stdout.contains(
            "= composite (archived, outside the text index: added by --include-archived after \
             the active results for holding retri; decay"
        ),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("no text"), "{}", r.stdout);
}

#[test]
fn queries_leave_archived_entries_out_unless_asked_and_record_accesses() {
    let env = Env::with_project();
    let a = env.add("a.subject", "first decision about retries");
    let b = env.add("b.subject", "second decision about queues");
    run_at(&env, 40);
    run_at(&env, 100);
    let later = day(100);
    let plain = env
        .run_at(&later, &["query", "retries", "--json"])
        .ok()
        .json();
    assert_eq!(plain.as_array().map(Vec::len), Some(0), "{plain}");
    let with = env
        .run_at(
            &later,
            &["query", "retries", "--include-archived", "--json"],
        )
        .ok()
        .json();
    let ids: Vec<&str> = with
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|h| h["id"].as_str())
        .collect();
    assert_eq!(ids, [a.as_str()], "{with}");
    assert_eq!(with[0]["lifecycle"], "archived", "{with}");
    // Without text, every archived entry that passes the filters.
    let all = env
        .run_at(&later, &["query", "--include-archived", "--json"])
        .ok()
        .json();
    assert_eq!(all.as_array().map(Vec::len), Some(2), "{all}");
    // Returned entries are recorded as accessed (locally, not in the log).
    let log = std::fs::read(env.log()).unwrap_or_default();
    env.add("c.subject", "third decision about retries");
    let accesses = env.root().join("ai-memory/demo/.memlog/access.jsonl");
    let before = std::fs::read_to_string(&accesses).unwrap_or_default();
    env.run(&["query", "third decision"]).ok();
    let after = std::fs::read_to_string(&accesses).unwrap_or_default();
    assert!(after.len() > before.len(), "no access recorded:\n{after}");
    assert!(!after.contains(&b) || before.contains(&b));
    assert!(std::fs::read(env.log()).unwrap_or_default().len() > log.len());
}

/// Content written beside a purge on another branch comes back with the merge: it is never
/// shown, `verify` says so, a second purge covers it so that `gc` removes it, and the conflict
/// it leaves can be cleared.
#[test]
fn content_written_beside_a_purge_can_be_purged_after_the_merge() {
    let env = Env::new();
    git(&env, &["init", "-q", "-b", "main"]);
    env.run(&["init", "demo"]).ok();
    let id = env.add("leak", "Content that will be purged");
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "base"]);
    git(&env, &["checkout", "-qb", "other"]);
    env.run(&[
        "update",
        &id,
        "--content",
        "PURGEDTEXT on a branch",
        "--reason",
        "r",
    ])
    .ok();
    git(&env, &["commit", "-qam", "other"]);
    git(&env, &["checkout", "-q", "main"]);
    env.run(&["purge", &id, "--reason", "mistake"]).ok();
    env.run(&["gc", "demo"]).ok();
    git(&env, &["commit", "-qam", "purged"]);
    git(&env, &["merge", "-q", "--no-edit", "other"]);

    let verify = env.run(&["verify"]);
    assert!(
        verify.stdout.contains("no purge covers") || verify.stderr.contains("no purge covers"),
        "{}{}",
        verify.stdout,
        verify.stderr
    );
    for args in [
        vec!["conflicts", "demo"],
        vec!["conflicts", "demo", "--json"],
    ] {
        let r = env.run(&args);
        assert!(!r.stdout.contains("PURGEDTEXT"), "{}", r.stdout);
    }
    // The conflict the concurrent write left is cleared without changing anything.
    env.run(&["resolve", &id, "--reason", "clear it"]).ok();
    assert_eq!(env.run(&["conflicts", "demo", "--check"]).code, 0);
    // A second purge covers the content that came back; gc removes it from the log.
    env.run(&["purge", &id, "--reason", "it came back"]).ok();
    env.run(&["gc", "demo"]).ok();
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    assert!(!log.contains("PURGEDTEXT"), "{log}");
    let verify = env.run(&["verify"]).ok();
    assert!(
        !verify.stdout.contains("no purge covers"),
        "{}",
        verify.stdout
    );
    // Nothing more to cover: a third purge is refused.
    assert_eq!(env.run(&["purge", &id, "--reason", "again"]).code, 3);
}

/// A write made on another branch after the purge (later in time) does not bring the content
/// back after the merge: not in `show`, `query`, `--as-of` a time before the purge, nor
/// `sync-context`.
#[test]
fn a_purge_stays_final_after_merging_a_later_update() {
    let env = Env::new();
    git(&env, &["init", "-q", "-b", "main"]);
    env.run_at("2026-11-22T10:00:00Z", &["init", "demo"]).ok();
    let id = env.add_at("2026-11-22T10:01:00Z", "leak", "ORIGSUMMARY", "0.9");
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "base"]);
    git(&env, &["checkout", "-qb", "purging"]);
    env.run_at("2026-11-30T00:00:00Z", &["purge", &id, "--reason", "leak"])
        .ok();
    env.run_at("2026-11-30T00:00:00Z", &["gc", "demo"]).ok();
    git(&env, &["commit", "-qam", "purge"]);
    git(&env, &["checkout", "-q", "main"]);
    env.run_at(
        "2026-12-01T00:00:00Z",
        &["update", &id, "--content", "LATERTEXT", "--reason", "u"],
    )
    .ok();
    git(&env, &["commit", "-qam", "update"]);
    git(&env, &["merge", "-q", "--no-edit", "purging"]);

    for args in [
        vec!["show", id.as_str(), "--json"],
        vec![
            "--as-of",
            "2026-11-25T00:00:00Z",
            "show",
            id.as_str(),
            "--json",
        ],
        vec![
            "--as-of",
            "2026-11-25T00:00:00Z",
            "history",
            id.as_str(),
            "--json",
        ],
        vec!["query", "LATERTEXT", "--json"],
        vec!["list", "--status", "all", "--json"],
        vec!["sync-context", "demo", "--dry-run"],
    ] {
        let r = env.run_at("2026-12-02T00:00:00Z", &args);
        for text in ["LATERTEXT", "ORIGSUMMARY", "Details of the decision"] {
            assert!(
                !r.stdout.contains(text) && !r.stderr.contains(text),
                "{args:?} shows {text}: {}{}",
                r.stdout,
                r.stderr
            );
        }
    }
    let shown = env.run(&["show", &id, "--json"]).ok();
    assert!(
        shown.stdout.contains("\"purged\": true"),
        "{}",
        shown.stdout
    );
}

/// A supersede made on another branch beside a purge copies the purged content into a new
/// entry: `verify` names it and how to purge it; the same supersede made before the purge (which
/// then saw the replacement) is not flagged.
#[test]
fn a_replacement_made_beside_a_purge_is_named_by_verify() {
    let env = Env::new();
    git(&env, &["init", "-q", "-b", "main"]);
    env.run_at("2026-11-22T10:00:00Z", &["init", "demo"]).ok();
    let id = env.add_at("2026-11-22T10:01:00Z", "leak", "Secretish", "0.9");
    let seen = env.add_at("2026-11-22T10:02:00Z", "seen", "Seen before purge", "0.9");
    env.run_at(
        "2026-11-22T10:03:00Z",
        &["supersede", &seen, "--summary", "Seen v2", "--reason", "s"],
    )
    .ok();
    env.run_at("2026-11-22T10:04:00Z", &["purge", &seen, "--reason", "r"])
        .ok();
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "base"]);
    git(&env, &["checkout", "-qb", "purging"]);
    env.run_at("2026-11-23T10:00:00Z", &["purge", &id, "--reason", "leak"])
        .ok();
    git(&env, &["commit", "-qam", "purge"]);
    git(&env, &["checkout", "-q", "main"]);
    let replaced = env.run_at(
        "2026-11-24T10:00:00Z",
        &[
            "supersede",
            &id,
            "--summary",
            "Secretish v2",
            "--reason",
            "s",
        ],
    );
    let replaced = replaced.ok().stdout;
    let new_id = replaced.split_whitespace().next().unwrap_or_default();
    git(&env, &["commit", "-qam", "supersede"]);
    git(&env, &["merge", "-q", "--no-edit", "purging"]);
    let verify = env.run(&["verify"]);
    let text = format!("{}{}", verify.stdout, verify.stderr);
    let flagged: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("may carry the purged content"))
        .collect();
    assert_eq!(flagged.len(), 1, "{text}");
    assert!(
        flagged[0].contains(&format!("replace purged entry {id}")),
        "{text}"
    );
    assert!(
        new_id.starts_with("m-") && flagged[0].contains(&format!("made {new_id} ")),
        "{replaced}: {text}"
    );
}

/// An archived entry comes back as it is at its next read, so a new entry that repeats its
/// subject, scope and summary is refused as a duplicate, naming it and how to restore it.
#[test]
fn an_entry_repeating_an_archived_one_is_a_duplicate() {
    let env = Env::with_project();
    let id = env.add_at(
        "2026-01-01T00:00:00Z",
        "auth.tokens",
        "Use 10-minute JWTs",
        "0.9",
    );
    env.run_at("2027-06-01T00:00:00Z", &["lifecycle", "run"])
        .ok();
    let shown = env.run_at("2027-06-01T00:00:00Z", &["list", "--archived", "--json"]);
    assert!(shown.stdout.contains(&id), "{}", shown.stdout);
    let mut args = crate::common::add_args(
        ("decisions", "decision"),
        "auth.tokens",
        "Use 10-minute JWTs",
        "Again.",
        "0.9",
        "code:src/lib.rs#L1-L9:where it happens",
    );
    args.push("--json");
    let r = env.run_at("2027-06-02T00:00:00Z", &args);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert!(
        format!("{}{}", r.stdout, r.stderr).contains(&format!("archived entry {id}")),
        "{}{}",
        r.stdout,
        r.stderr
    );
}

/// `lifecycle run --all` evaluates every project it can: a broken one is named, the others run.
#[test]
fn run_all_goes_on_past_a_broken_project() {
    let env = Env::new();
    for p in ["a", "b", "c"] {
        env.run(&["init", p]).ok();
        let subject = format!("s.{p}");
        let summary = format!("Entry of {p}");
        let mut args = crate::common::add_args(
            ("learnings", "other"),
            &subject,
            &summary,
            "Body.",
            "0.7",
            "code:src/lib.rs#L1-L9:where it happens",
        );
        args.push(p);
        env.run_at("2026-01-01T00:00:00Z", &args).ok();
    }
    let broken = env.root().join("ai-memory/b/events.jsonl");
    let mut log = std::fs::read_to_string(&broken).unwrap_or_default();
    log.push_str("{\"broken\n");
    std::fs::write(&broken, log).unwrap_or_else(|e| panic!("{e}"));
    let r = env.run_at(
        "2026-06-01T00:00:00Z",
        &["--json", "lifecycle", "run", "--all"],
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_default();
    let projects: Vec<&str> = v["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["project"].as_str())
        .collect();
    assert_eq!(projects, ["a", "c", "global"], "{}", r.stdout);
    assert!(r.stdout.contains("b: evaluation failed"), "{}", r.stdout);
}

/// A run stopped part way (a daemon's SIGTERM) counted only some entries: the storage figures
/// come from the last run that went through all of them.
#[test]
fn storage_figures_come_from_the_last_complete_run() {
    let env = Env::with_project();
    env.add("a", "first");
    env.add("b", "second");
    run_at(&env, 1);
    let runs = env
        .root()
        .join("ai-memory/demo/.memlog/lifecycle-runs.jsonl");
    let text = std::fs::read_to_string(&runs).unwrap_or_default();
    let mut partial: serde_json::Value =
        serde_json::from_str(text.lines().last().unwrap_or_default()).unwrap_or_default();
    partial["stopped"] = true.into();
    partial["storage"]["hot"]["entries"] = 1.into();
    std::fs::write(&runs, format!("{text}{partial}\n")).unwrap_or_else(|e| panic!("{e}"));
    let report = env.run(&["lifecycle", "report", "--json"]).ok().json();
    assert_eq!(report["storage"]["hot"]["entries"], 2, "{report}");
    assert_eq!(report["last_run"]["stopped"], true, "{report}");
    let text = env.run(&["lifecycle", "report"]).ok().stdout;
    assert!(text.contains("stopped before the end"), "{text}");
}

/// check-freshness's text columns line up whatever the lengths of the subjects and dates.
#[test]
fn check_freshness_columns_line_up() {
    let env = Env::with_project();
    for (subject, summary, to) in [
        ("a", "Short subject", "2026-11-24"),
        ("payments.checkout-latency", "Long subject", "2026-11-25"),
    ] {
        let mut args = crate::common::add_args(
            ("state", "metric"),
            subject,
            summary,
            "Measured.",
            "0.8",
            "code:src/lib.rs#L1-L9:here",
        );
        args.extend(["--valid-from", "2026-11-01", "--valid-to", to]);
        env.run(&args).ok();
    }
    let r = env.run(&["check-freshness"]).ok();
    let starts: Vec<Option<usize>> = ["Short subject", "Long subject"]
        .iter()
        .map(|summary| {
            r.stdout
                .lines()
                .find_map(|l| l.find(summary).map(|at| l[..at].chars().count()))
        })
        .collect();
    assert!(starts[0].is_some(), "{}", r.stdout);
    assert_eq!(starts[0], starts[1], "{}", r.stdout);
}

/// The latest record of entry `id`'s audit.
fn last_transition(env: &Env, id: &str) -> serde_json::Value {
    let audit = env.run(&["audit", id, "--json"]).ok().json();
    audit
        .as_array()
        .and_then(|a| a.last())
        .cloned()
        .unwrap_or_default()
}

/// A write whose time is the clock's, read when its command began, takes its time again once it
/// holds the write lock: one that waited for another write to the same entry is not refused as
/// dated before it. A time given with `--now` is kept as given, and such a write is refused.
#[test]
fn a_write_that_waited_for_the_lock_is_dated_when_it_holds_it() {
    use memlog::log::writer::{Change, WriteContext, write};
    let env = Env::with_project();
    let a = env.add("a.subject", "a decision");
    let project = env.demo_project();
    // The entry's create is at NOW; this write's command began before it.
    let ctx = |clock| WriteContext {
        actor: "agent-7".into(),
        at: "2026-01-01T00:00:00.000Z".into(),
        lock_timeout: std::time::Duration::from_secs(10),
        dry_run: false,
        fail_after_append: false,
        clock,
    };
    let pin = Change::Pin {
        target: a.clone(),
        reason: None,
    };
    let given = write(&project, &ctx(false), pin.clone(), |_, _| Ok(pin.clone()));
    let refused = given.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(refused.contains("has an event dated"), "{refused}");
    let written = write(&project, &ctx(true), pin.clone(), |_, _| Ok(pin.clone()))
        .unwrap_or_else(|e| panic!("{e}"));
    let event = written.events.first().cloned().unwrap_or_default();
    let line = std::fs::read_to_string(env.log()).unwrap_or_default();
    let at = line
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["id"] == event.as_str())
        .map(|v| v["at"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default();
    assert!(at.as_str() > NOW, "{at}");
    assert_eq!(env.run(&["verify"]).code, 0);
}
