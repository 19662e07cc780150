//! `memlog conflicts`: both sides of every entry that concurrent writers left with two heads.

use crate::common::{Env, git};
use serde_json::json;

/// A time after every branch's writes: a change is not dated before its entry's latest event.
const AFTER_THE_BRANCHES: &str = "2026-11-24T00:00:00Z";

macro_rules! snapshot {
    ($name:expr, $value:expr) => {
        insta::with_settings!({ snapshot_path => "../../snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!($name, $value);
        });
    };
}

/// Two branches change the same entry; after a real `git merge` the conflict lists both sides
/// with who, when and what each set, the fields they disagree on and the merged value;
/// `resolve` clears it.
#[test]
fn conflicts_show_both_sides_until_resolved() {
    let env = Env::new();
    let id = crate::common::committed_entry(&env, ".", "auth.tokens", "Use JWTs");
    assert_eq!(
        env.run(&["conflicts", "--json"]).ok().json(),
        serde_json::json!([])
    );
    assert!(
        env.run(&["conflicts"])
            .ok()
            .stdout
            .contains("no conflicts in demo")
    );

    git(&env, &["checkout", "-qb", "a"]);
    env.command(&["update", &id, "--confidence", "0.9"])
        .env("MEMLOG_ACTOR", "agent-a")
        .env("MEMLOG_NOW", "2026-11-23T00:00:00Z")
        .output()
        .ok();
    git(&env, &["commit", "-qam", "a"]);
    git(&env, &["checkout", "-q", "main"]);
    env.command(&[
        "update",
        &id,
        "--confidence",
        "0.7",
        "--summary",
        "Use short JWTs",
    ])
    .env("MEMLOG_ACTOR", "agent-b")
    .env("MEMLOG_NOW", "2026-11-23T00:00:01Z")
    .output()
    .ok();
    git(&env, &["commit", "-qam", "b"]);
    git(&env, &["merge", "-q", "--no-edit", "a"]);

    let list = env.run(&["conflicts", "--json"]).ok().json();
    let c = &list[0];
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(c["entry"], id.as_str());
    assert_eq!(c["disputed"], serde_json::json!(["confidence"]));
    assert_eq!(c["current"]["confidence"], 0.7);
    assert_eq!(c["current"]["summary"], "Use short JWTs");
    assert_eq!(c["base"].as_array().map(Vec::len), Some(1));
    let sides: Vec<(String, String, String)> = c["sides"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            (
                s["actors"][0].as_str().unwrap_or("").to_owned(),
                s["events"][0]["at"].as_str().unwrap_or("").to_owned(),
                s["set"].to_string(),
            )
        })
        .collect();
    assert!(
        sides.contains(&(
            "agent-a".into(),
            "2026-11-23T00:00:00.000Z".into(),
            r#"{"confidence":0.9}"#.into()
        )),
        "{sides:?}"
    );
    assert!(
        sides.contains(&(
            "agent-b".into(),
            "2026-11-23T00:00:01.000Z".into(),
            r#"{"confidence":0.7,"summary":"Use short JWTs"}"#.into()
        )),
        "{sides:?}"
    );
    let text = env.run(&["conflicts"]).ok().stdout;
    snapshot!("conflicts", text.clone());
    assert!(text.contains("disputed: confidence"), "{text}");
    assert!(text.contains("set confidence = 0.9"), "{text}");
    assert!(text.contains("by agent-b"), "{text}");
    assert_eq!(env.run(&["conflicts", "--check"]).code, 1);

    env.run_at(
        AFTER_THE_BRANCHES,
        &[
            "resolve",
            &id,
            "--confidence",
            "0.9",
            "--reason",
            "measured",
        ],
    )
    .ok();
    assert_eq!(
        env.run(&["conflicts", "--json"]).ok().json(),
        serde_json::json!([])
    );
    assert_eq!(env.run(&["conflicts", "--check"]).code, 0);
}

/// A supersede on one branch and a deprecate on another: the sides name the status each set
/// and the replacement.
#[test]
fn supersede_against_deprecate_is_listed() {
    let env = Env::new();
    let id = crate::common::committed_entry(&env, ".", "cache.policy", "Cache for a minute");
    git(&env, &["checkout", "-qb", "a"]);
    let replaced = env
        .run_at(
            "2026-11-23T00:00:00Z",
            &["supersede", &id, "--summary", "Cache for an hour", "--json"],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    git(&env, &["commit", "-qam", "a"]);
    git(&env, &["checkout", "-q", "main"]);
    env.run_at(
        "2026-11-23T00:00:01Z",
        &["deprecate", &id, "--reason", "no cache"],
    )
    .ok();
    git(&env, &["commit", "-qam", "b"]);
    git(&env, &["merge", "-q", "--no-edit", "a"]);

    let list = env.run(&["conflicts", "--json"]).ok().json();
    let sets: Vec<String> = list[0]["sides"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["set"].to_string())
        .collect();
    assert!(
        sets.iter()
            .any(|s| s.contains("\"superseded\"") && s.contains(&replaced)),
        "{sets:?}"
    );
    assert!(
        sets.iter().any(|s| s.contains("\"deprecated\"")),
        "{sets:?}"
    );
    assert_eq!(list[0]["disputed"][0], "status", "{list}");

    // The replacement the deprecation left behind is one outcome of the conflict, not a settled
    // fact: annotated and warned about in query and context.
    let r = env.run(&["--json", "query", "cache hour"]);
    let hit = r.ok().json()[0].clone();
    assert_eq!(hit["id"], replaced.as_str(), "{hit}");
    assert_eq!(hit["annotations"], serde_json::json!(["disputed"]), "{hit}");
    let r = env.run(&["query", "cache hour", "--explain"]).ok();
    assert!(
        r.stdout.contains(&format!("rule disputed: replaces {id}")),
        "{}",
        r.stdout
    );
    assert!(r.stderr.contains("competing outcomes"), "{}", r.stderr);

    // Accepting the merge would leave the replacement active beside a deprecated entry that no
    // longer names it: resolve asks for a choice, and either choice settles it.
    let refused = env.run_at(
        AFTER_THE_BRANCHES,
        &["resolve", &id, "--reason", "deprecation stands"],
    );
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(&format!("--winner {replaced}")),
        "{}",
        refused.stderr
    );
    assert_eq!(
        env.run(&["conflicts", "--json"])
            .ok()
            .json()
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    env.run_at(
        AFTER_THE_BRANCHES,
        &["deprecate", &replaced, "--reason", "the cache was removed"],
    )
    .ok();
    env.run_at(
        AFTER_THE_BRANCHES,
        &["resolve", &id, "--reason", "deprecation stands"],
    )
    .ok();
    assert_eq!(
        env.run(&["conflicts", "--json"]).ok().json(),
        serde_json::json!([])
    );
    assert_eq!(
        env.run(&["--json", "query", "cache hour"]).ok().json(),
        serde_json::json!([])
    );
}

/// A repository where entry `id` ("Use one queue") was superseded on branch `a` by `ra` and on
/// `main` by `rb`, and `a` merged into `main`: (workspace, id, ra, rb).
fn superseded_on_two_branches() -> (Env, String, String, String) {
    let env = Env::new();
    let id = crate::common::committed_entry(&env, ".", "queue", "Use one queue");
    let supersede = |now: &str, summary: &str| {
        env.run_at(now, &["supersede", &id, "--summary", summary, "--json"])
            .ok()
            .json()["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    git(&env, &["checkout", "-qb", "a"]);
    let ra = supersede("2026-11-23T00:00:00Z", "Use two queues");
    git(&env, &["commit", "-qam", "a"]);
    git(&env, &["checkout", "-q", "main"]);
    let rb = supersede("2026-11-23T00:00:01Z", "Use a stream");
    git(&env, &["commit", "-qam", "b"]);
    git(&env, &["merge", "-q", "--no-edit", "a"]);
    (env, id, ra, rb)
}

/// Two branches supersede the same entry: each side names its own replacement, the merge's
/// current value is the later one, and `resolve --winner` settles it.
#[test]
fn concurrent_supersedes_show_each_replacement() {
    let (env, id, ra, rb) = superseded_on_two_branches();

    let c = env.run(&["conflicts", "--json"]).ok().json();
    let by: Vec<String> = c[0]["sides"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["set"]["superseded_by"].as_str().unwrap_or("").to_owned())
        .collect();
    let mut want = vec![ra.clone(), rb.clone()];
    want.sort();
    let mut got = by.clone();
    got.sort();
    assert_eq!(got, want, "{c}");
    assert_eq!(c[0]["disputed"], serde_json::json!(["superseded_by"]));
    assert_eq!(c[0]["current"]["superseded_by"], rb.as_str());
    // Both replacements are active, each marked as a competing outcome.
    let found = env.run(&["--json", "query", "queues stream"]).ok().json();
    let disputed: Vec<&str> = found
        .as_array()
        .into_iter()
        .flatten()
        .filter(|h| h["annotations"] == serde_json::json!(["disputed"]))
        .filter_map(|h| h["id"].as_str())
        .collect();
    assert_eq!(disputed.len(), 2, "{found}");
    env.run_at(AFTER_THE_BRANCHES, &["resolve", &id, "--winner", &ra])
        .ok();
    let after = env.run(&["--json", "query", "queues stream"]).ok().json();
    assert!(
        after
            .as_array()
            .into_iter()
            .flatten()
            .all(|h| h["annotations"] == serde_json::json!([])),
        "{after}"
    );
    assert_eq!(
        env.run(&["conflicts", "--json"]).ok().json(),
        serde_json::json!([])
    );
}

/// Two branches settle the same concurrent supersedes with different winners, and merge: each
/// replacement is then superseded by the other and none is active. The entry shows the conflict
/// (the two resolves), and `resolve --winner` on it makes the winner active again.
#[test]
fn resolves_that_chose_different_winners_are_settled_by_another() {
    let (env, id, ra, rb) = superseded_on_two_branches();
    git(&env, &["checkout", "-qb", "alice"]);
    env.run_at("2026-11-24T00:00:00Z", &["resolve", &id, "--winner", &ra])
        .ok();
    git(&env, &["commit", "-qam", "alice"]);
    git(&env, &["checkout", "-q", "main"]);
    env.run_at("2026-11-24T01:00:00Z", &["resolve", &id, "--winner", &rb])
        .ok();
    git(&env, &["commit", "-qam", "bob"]);
    git(&env, &["merge", "-q", "--no-edit", "alice"]);
    let status = |entry: &str| env.run(&["show", entry, "--json"]).ok().json()["status"].clone();
    assert_eq!(
        (status(&ra), status(&rb)),
        (json!("superseded"), json!("superseded"))
    );
    let c = env.run(&["conflicts", "--json"]).ok().json();
    assert_eq!(c[0]["entry"], id.as_str(), "{c}");
    // No query finds either replacement now: every query says why, and `conflicts` too.
    let query = env.run(&["query", "queues"]).ok();
    let conflicts = env.run(&["conflicts"]).ok();
    for run in [&query, &conflicts] {
        assert!(
            run.stderr.contains("none of them is active")
                && run
                    .stderr
                    .contains(&format!("memlog resolve {id} --winner ID")),
            "{}",
            run.stderr
        );
    }
    env.run_at("2026-11-25T00:00:00Z", &["resolve", &id, "--winner", &ra])
        .ok();
    assert!(
        !env.run(&["query", "queues"])
            .ok()
            .stderr
            .contains("none of them"),
        "settled, nothing is said"
    );
    assert_eq!(
        (status(&ra), status(&rb)),
        (json!("active"), json!("superseded"))
    );
    let shown = env.run(&["show", &rb, "--json"]).ok().json();
    assert_eq!(shown["superseded_by"], ra.as_str(), "{shown}");
    assert_eq!(env.run(&["conflicts", "--json"]).ok().json(), json!([]));
    let found = env.run(&["--json", "query", "queues"]).ok().json();
    assert_eq!(found[0]["id"], ra.as_str(), "{found}");
    assert_eq!(env.run(&["verify"]).code, 0);
}

/// A side that went on after the fork (its replacement superseded again on its branch) is
/// disputed by its newest entry, which `resolve --winner` may keep, or supersede when the other
/// side wins: no entry of the losing side stays active beside the winner.
#[test]
fn a_side_that_went_on_after_the_fork_is_disputed_and_settled_by_its_newest_entry() {
    let env = Env::new();
    let id = crate::common::committed_entry(&env, ".", "queue", "Use one queue");
    let supersede = |now: &str, of: &str, summary: &str| {
        env.run_at(now, &["supersede", of, "--summary", summary, "--json"])
            .ok()
            .json()["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    git(&env, &["checkout", "-qb", "a"]);
    let ra = supersede("2026-11-23T00:00:00Z", &id, "Use two queues");
    let newer = supersede("2026-11-23T00:01:00Z", &ra, "Use three queues");
    git(&env, &["commit", "-qam", "a"]);
    git(&env, &["checkout", "-q", "main"]);
    let rb = supersede("2026-11-23T00:00:30Z", &id, "Use a stream");
    git(&env, &["commit", "-qam", "b"]);
    git(&env, &["merge", "-q", "--no-edit", "a"]);
    git(&env, &["branch", "-q", "before"]);

    let found = env.run(&["--json", "query", "queues stream"]).ok().json();
    let mut disputed: Vec<&str> = found
        .as_array()
        .into_iter()
        .flatten()
        .filter(|h| h["annotations"] == json!(["disputed"]))
        .filter_map(|h| h["id"].as_str())
        .collect();
    disputed.sort_unstable();
    let mut want = vec![newer.as_str(), rb.as_str()];
    want.sort_unstable();
    assert_eq!(disputed, want, "{found}");

    let active = |env: &Env| -> Vec<String> {
        let listed = env
            .run(&["--json", "list", "--status", "active"])
            .ok()
            .json();
        let mut ids: Vec<String> = listed
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["id"].as_str().map(str::to_owned))
            .collect();
        ids.sort_unstable();
        ids
    };
    // The other side wins: the newest entry of the losing side gives way too.
    env.run_at(AFTER_THE_BRANCHES, &["resolve", &id, "--winner", &rb])
        .ok();
    assert_eq!(active(&env), vec![rb.clone()]);
    assert_eq!(env.run(&["conflicts", "--json"]).ok().json(), json!([]));
    // The side that went on wins, by its newest entry.
    git(&env, &["reset", "-q", "--hard", "before"]);
    env.run_at(AFTER_THE_BRANCHES, &["resolve", &id, "--winner", &newer])
        .ok();
    assert_eq!(active(&env), vec![newer.clone()]);
    let shown = env.run(&["show", &rb, "--json"]).ok().json();
    assert_eq!(shown["superseded_by"], newer.as_str(), "{shown}");
    assert_eq!(env.run(&["verify"]).code, 0);
}

/// Two branches that made the same change of an entry (both pinned it, both deprecated it)
/// agree: after the merge the entry has two heads but no conflict, `conflicts --check` passes,
/// `verify` lists nothing, and the next write joins the heads. A different change on one side
/// is still a conflict.
#[test]
fn branches_that_made_the_same_change_leave_no_conflict() {
    let env = Env::new();
    let pinned = crate::common::committed_entry(&env, ".", "queue", "Use one queue");
    let deprecated = crate::common::committed_entry(&env, ".", "cache", "Cache for an hour");
    let disputed = crate::common::committed_entry(&env, ".", "retry", "Retry three times");
    // On each branch: the same pin and deprecation, and a different confidence.
    let changes = |now: &str, reason: &str, confidence: &str| {
        env.run_at(now, &["pin", &pinned, "--reason", reason]).ok();
        env.run_at(now, &["deprecate", &deprecated, "--reason", reason])
            .ok();
        env.run_at(now, &["update", &disputed, "--confidence", confidence])
            .ok();
        git(&env, &["commit", "-qam", reason]);
    };
    git(&env, &["checkout", "-qb", "a"]);
    changes("2026-11-23T00:00:00Z", "a", "0.6");
    git(&env, &["checkout", "-q", "main"]);
    changes("2026-11-23T00:00:05Z", "b", "0.7");
    git(&env, &["merge", "-q", "--no-edit", "a"]);

    let c = env.run(&["conflicts", "--json"]).ok().json();
    let listed: Vec<&str> = c
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["entry"].as_str())
        .collect();
    assert_eq!(listed, vec![disputed.as_str()], "{c}");
    for agreed in [&pinned, &deprecated] {
        let shown = env.run(&["show", agreed, "--json"]).ok().json();
        assert_eq!(shown["heads"].as_array().map(Vec::len), Some(2), "{shown}");
        assert_eq!(shown["conflict"], false, "{shown}");
    }
    let verified = env.run(&["verify"]);
    assert!(
        !verified.stdout.contains(&pinned) && verified.stdout.contains(&disputed),
        "{}",
        verified.stdout
    );
    // The next write names both heads: one head again.
    env.run_at(AFTER_THE_BRANCHES, &["unpin", &pinned]).ok();
    let shown = env.run(&["show", &pinned, "--json"]).ok().json();
    assert_eq!(shown["heads"].as_array().map(Vec::len), Some(1), "{shown}");
    env.run_at(AFTER_THE_BRANCHES, &["resolve", &disputed]).ok();
    assert_eq!(env.run(&["conflicts", "--check"]).code, 0);
}

/// A purged entry's fork is never an agreement: a content edit written beside the purge on
/// another branch stays a conflict after `gc` rewrote it as its tombstone (which replays as the
/// event it stands for, its content aside).
#[test]
fn gc_does_not_turn_a_conflict_of_a_purged_entry_into_an_agreement() {
    let env = Env::new();
    let id = crate::common::committed_entry(&env, ".", "wiki", "Wiki password note");
    git(&env, &["checkout", "-qb", "b"]);
    env.run_at(
        "2026-11-23T00:00:20Z",
        &["update", &id, "--content", "Reworded note", "--reason", "b"],
    )
    .ok();
    git(&env, &["commit", "-qam", "b"]);
    git(&env, &["checkout", "-q", "main"]);
    env.run_at(
        "2026-11-23T00:00:10Z",
        &["purge", &id, "--reason", "secret"],
    )
    .ok();
    git(&env, &["commit", "-qam", "a"]);
    git(&env, &["merge", "-q", "--no-edit", "b"]);
    let conflict = |env: &Env| env.run(&["show", &id, "--json"]).ok().json()["conflict"].clone();
    assert_eq!(conflict(&env), true);
    env.run_at(
        "2026-11-23T00:01:00Z",
        &["purge", &id, "--reason", "secret again"],
    )
    .ok();
    assert_eq!(conflict(&env), true);
    env.run_at("2026-11-23T00:01:01Z", &["gc"]).ok();
    assert_eq!(conflict(&env), true, "gc changed what the events say");
}

/// An archived entry (out of the active indexes) in conflict is listed too, now and as of a
/// past time.
#[test]
fn an_archived_entry_in_conflict_is_listed() {
    let env = Env::with_project();
    let id = env.add("old", "Archived in conflict");
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    let create = projections::decode_line(log.lines().next().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}"));
    let build = |at: &str, parents: Vec<String>, data: projections::EventData| {
        projections::Event::build(&id, "agent-x", at, parents, data)
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let set = |c: f64| {
        let mut m = serde_json::Map::new();
        m.insert("confidence".into(), c.into());
        projections::EventData::Update {
            set: m,
            reason: None,
        }
    };
    let a = build(
        "2026-11-23T00:00:00.000Z",
        vec![create.id.clone()],
        set(0.9),
    );
    let b = build(
        "2026-11-23T00:00:01.000Z",
        vec![create.id.clone()],
        set(0.7),
    );
    let archive = build(
        "2026-11-23T00:00:02.000Z",
        vec![a.id.clone()],
        projections::EventData::Transition {
            to: projections::Lifecycle::Archived,
            reason: "idle".into(),
        },
    );
    let mut text = log.clone();
    for e in [&a, &b, &archive] {
        text.push_str(&e.to_line().unwrap_or_else(|e| panic!("{e}")));
        text.push('\n');
    }
    std::fs::write(env.log(), text).unwrap_or_else(|e| panic!("{e}"));
    // Cold (out of the active indexes), read through `dump`: `show` may restore an archived
    // entry.
    let dump = env.run(&["dump"]).ok().stdout;
    assert!(
        dump.lines().any(|l| l.starts_with(&format!("cold\t{id}"))),
        "{dump}"
    );
    for args in [
        &["conflicts", "--json"][..],
        &["conflicts", "--json", "--as-of", "2026-11-23T00:00:05Z"][..],
    ] {
        let listed = env.run(args).ok().json();
        assert_eq!(listed[0]["entry"], id.as_str(), "{args:?}: {listed}");
    }
    let before = env
        .run(&["conflicts", "--json", "--as-of", "2026-11-23T00:00:00.500Z"])
        .ok()
        .json();
    assert_eq!(before, serde_json::json!([]), "one head then");
}

/// Two branches record the same thing: the command that catches up with the merge warns once,
/// and `conflicts` keeps naming the pair, and the one to keep (the more confident), until the
/// other is settled.
#[test]
fn duplicates_from_a_merge_stay_listed_until_settled() {
    let env = Env::new();
    crate::common::committed_entry(&env, ".", "base", "Base entry");
    git(&env, &["checkout", "-qb", "a"]);
    let strong = env.add_at(crate::common::NOW, "same", "Same thing", "0.9");
    git(&env, &["commit", "-qam", "a"]);
    git(&env, &["checkout", "-q", "main"]);
    let weak = env.add_at("2026-11-22T11:00:00Z", "same", "Same thing", "0.7");
    git(&env, &["commit", "-qam", "b"]);
    git(&env, &["merge", "-q", "--no-edit", "a"]);

    let first = env.run(&["list"]).ok();
    assert!(first.stderr.contains("1 pair(s)"), "{}", first.stderr);
    assert!(
        first
            .stderr
            .contains(&format!("keep the more relevant ({strong})")),
        "{}",
        first.stderr
    );
    assert!(!env.run(&["list"]).ok().stderr.contains("pair(s)"));
    let warnings = env.run(&["--json", "conflicts"]).ok().warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains(&format!("keep {strong}"))
            && warnings[0].contains(&format!("`memlog deprecate {weak} ")),
        "{warnings:?}"
    );
    assert_eq!(env.run(&["conflicts", "--check"]).code, 1);
    env.run_at(
        AFTER_THE_BRANCHES,
        &["deprecate", &weak, "--reason", "duplicate"],
    )
    .ok();
    assert!(env.run(&["--json", "conflicts"]).ok().warnings().is_empty());
    env.run(&["conflicts", "--check"]).ok();
}

/// Two branches that purged the same entry and ran `gc` leave two tombstones of its events
/// once merged: `verify` says so, and not that purged content came back.
#[test]
fn two_branches_that_purged_the_same_entry_leave_two_tombstones_not_a_leak() {
    let env = Env::new();
    let id = crate::common::committed_entry(&env, ".", "wiki", "Wiki password note");
    git(&env, &["checkout", "-qb", "a"]);
    env.run_at("2026-11-23T00:00:10Z", &["purge", &id, "--reason", "a"])
        .ok();
    env.run_at("2026-11-23T00:00:11Z", &["gc"]).ok();
    git(&env, &["commit", "-qam", "a"]);
    git(&env, &["checkout", "-q", "main"]);
    env.run_at("2026-11-23T00:00:20Z", &["purge", &id, "--reason", "b"])
        .ok();
    env.run_at("2026-11-23T00:00:21Z", &["gc"]).ok();
    git(&env, &["commit", "-qam", "b"]);
    git(&env, &["merge", "-q", "--no-edit", "a"]);
    let verified = env.run(&["verify"]);
    assert!(
        verified.stdout.contains("appears as two tombstones")
            && !verified.stdout.contains("purged content came back"),
        "{}",
        verified.stdout
    );
}

/// Three branches supersede one entry, three more resolve it each with its own winner, and all
/// merge: every replacement is then superseded concurrently by two winners (in conflict
/// itself). One `resolve --winner` settles it all: the winner active, every other replacement
/// superseded by it, no conflict left.
#[test]
fn one_resolve_settles_the_resolves_of_three_branches() {
    let env = Env::new();
    let id = crate::common::committed_entry(&env, ".", "queue", "Use one queue");
    let mut replacements = Vec::new();
    for (i, branch) in ["a", "b", "c"].iter().enumerate() {
        git(&env, &["checkout", "-q", "main"]);
        git(&env, &["checkout", "-qb", branch]);
        let now = format!("2026-11-23T00:00:0{i}Z");
        let summary = format!("Use {branch} queues");
        let r = env
            .run_at(&now, &["supersede", &id, "--summary", &summary, "--json"])
            .ok()
            .json()["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        git(&env, &["commit", "-qam", branch]);
        replacements.push(r);
    }
    git(&env, &["checkout", "-q", "main"]);
    for branch in ["a", "b", "c"] {
        git(&env, &["merge", "-q", "--no-edit", branch]);
    }
    for (i, winner) in replacements.iter().enumerate() {
        git(&env, &["checkout", "-q", "main"]);
        git(&env, &["checkout", "-qb", &format!("r{i}")]);
        let now = format!("2026-11-24T00:00:0{i}Z");
        env.run_at(&now, &["resolve", &id, "--winner", winner]).ok();
        git(&env, &["commit", "-qam", &format!("r{i}")]);
    }
    git(&env, &["checkout", "-q", "main"]);
    for i in 0..3 {
        git(&env, &["merge", "-q", "--no-edit", &format!("r{i}")]);
    }
    assert_ne!(env.run(&["conflicts", "--json"]).ok().json(), json!([]));
    let winner = &replacements[1];
    env.run_at(
        "2026-11-25T00:00:00Z",
        &["resolve", &id, "--winner", winner],
    )
    .ok();
    assert_eq!(env.run(&["conflicts", "--json"]).ok().json(), json!([]));
    let listed = env
        .run(&["--json", "list", "--status", "active"])
        .ok()
        .json();
    let active: Vec<&str> = listed
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["id"].as_str())
        .collect();
    assert_eq!(active, vec![winner.as_str()], "{listed}");
    assert_eq!(env.run(&["verify"]).code, 0);
}
