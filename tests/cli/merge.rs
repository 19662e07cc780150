use crate::common::{Env, Run, git};
use std::collections::BTreeSet;

/// Two branches of agents append to the same log; a real `git merge` unions the lines; nothing
/// is lost, a concurrent change to one memory shows as a conflict, and `resolve` clears it.
#[test]
fn real_git_merge_of_two_branches() {
    let env = Env::new();
    git(&env, &["init", "-q", "-b", "main"]);
    env.run(&["init", "demo"]).ok();
    let shared = env.add("shared.subject", "written before the branches split");
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "base"]);

    git(&env, &["checkout", "-qb", "agent-a"]);
    let a = env.add("a.only", "written on branch a");
    env.run_at(
        "2026-11-23T00:00:00Z",
        &["update", &shared, "--confidence", "0.9"],
    )
    .ok();
    git(&env, &["commit", "-qam", "a"]);

    git(&env, &["checkout", "-q", "main"]);
    let b = env.add("b.only", "written on branch b");
    env.run_at(
        "2026-11-23T00:00:01Z",
        &["update", &shared, "--confidence", "0.7"],
    )
    .ok();
    git(&env, &["commit", "-qam", "b"]);

    git(&env, &["merge", "-q", "--no-edit", "agent-a"]);
    assert!(!git(&env, &["status", "--porcelain"]).contains("UU"));

    let verify = env.run(&["verify", "--json"]).ok().json();
    assert_eq!(verify["ok"], true, "{verify}");
    assert_eq!(verify["conflicts"][0], shared.as_str());
    for (id, summary) in [
        (&shared, "written before the branches split"),
        (&a, "written on branch a"),
        (&b, "written on branch b"),
    ] {
        let shown = env.run(&["show", id, "--json"]).ok().json();
        assert_eq!(
            (shown["id"].as_str(), shown["summary"].as_str()),
            (Some(id.as_str()), Some(summary))
        );
    }
    let shown = env.run(&["show", &shared, "--json"]).ok().json();
    assert_eq!(shown["conflict"], true);
    assert_eq!(shown["heads"].as_array().map(Vec::len), Some(2));
    // The deterministic winner is the later write.
    assert_eq!(shown["confidence"], 0.7);

    // Other writes to an entry in conflict extend one head: the conflict stays visible, once.
    env.run_at(
        "2026-11-23T12:00:00Z",
        &["pin", &shared[2..], "--reason", "keep"],
    )
    .ok();
    let shown = env.run(&["show", &shared, "--json"]).ok().json();
    assert_eq!(
        (shown["conflict"].as_bool(), shown["pinned"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(shown["heads"].as_array().map(Vec::len), Some(2));

    env.run_at(
        "2026-11-24T00:00:00Z",
        &[
            "resolve",
            &shared,
            "--confidence",
            "0.9",
            "--reason",
            "a measured it",
        ],
    )
    .ok();
    let shown = env.run(&["show", &shared, "--json"]).ok().json();
    assert_eq!(shown["conflict"], false);
    assert_eq!(shown["confidence"], 0.9);
    let audit = env.run(&["audit", &shared, "--json"]).ok().json();
    let dims: Vec<String> = audit
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            format!(
                "{}:{}",
                r["dimension"].as_str().unwrap_or(""),
                r["to"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        dims.iter()
            .filter(|d| d.starts_with("conflict:"))
            .collect::<Vec<_>>(),
        ["conflict:open", "conflict:resolved"],
        "{dims:?}"
    );

    // The merged store equals a rebuild from the merged log.
    let before = env.run(&["dump"]).ok().stdout;
    env.run(&["rebuild"]).ok();
    assert_eq!(env.run(&["dump"]).ok().stdout, before);
}

/// The event ids a `--json` write printed.
fn events_of(r: &Run) -> Vec<String> {
    let v = r.json();
    let events: Vec<String> = v["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e.as_str().map(str::to_owned))
        .collect();
    assert!(!events.is_empty(), "a write printed no event: {v}");
    events
}

/// Runs a write at `now` with `--json`; returns the entry it wrote and its events.
fn write(env: &Env, now: &str, args: &[&str]) -> (String, Vec<String>) {
    let mut args = args.to_vec();
    args.push("--json");
    let r = env.run_at(now, &args).ok();
    let id = r.json()["id"].as_str().unwrap_or_default().to_owned();
    (id, events_of(&r))
}

fn add(env: &Env, now: &str, subject: &str, summary: &str) -> (String, Vec<String>) {
    let args = crate::common::add_args(
        ("decisions", "decision"),
        subject,
        summary,
        "Details.",
        "0.8",
        "code:src/lib.rs#L1-L9:where it happens",
    );
    write(env, now, &args)
}

/// Event ids in the log, each line checked to be a whole event.
fn log_ids(env: &Env) -> Vec<String> {
    std::fs::read_to_string(env.log())
        .unwrap_or_default()
        .lines()
        .map(|l| {
            projections::decode_line(l)
                .unwrap_or_else(|e| panic!("{e}: {l}"))
                .id
        })
        .collect()
}

/// A repository with `demo` initialized and committed (tagged `base`), with two entries:
/// `shared`, which every branch changes, and `other`.
fn base(env: &Env) -> (String, String, Vec<String>) {
    git(env, &["init", "-q", "-b", "main"]);
    env.run(&["init", "demo"]).ok();
    let attributes =
        std::fs::read_to_string(env.root().join("ai-memory/.gitattributes")).unwrap_or_default();
    assert!(
        attributes.contains("*/events.jsonl merge=union"),
        "{attributes}"
    );
    let (shared, mut acked) = add(env, "2026-11-22T10:00:00.000Z", "shared", "Shared decision");
    let (other, e) = add(env, "2026-11-22T10:00:01.000Z", "other", "Other decision");
    acked.extend(e);
    git(env, &["add", "-A"]);
    git(env, &["commit", "-qm", "base"]);
    git(env, &["tag", "base"]);
    (shared, other, acked)
}

/// Three branches from a common base change the same entry concurrently (supersede, deprecate,
/// pin then update) and create entries of their own. Merged into main in the order a, b, c and
/// in the order c, b, a with the union driver `memlog init` configures, both give byte-identical
/// projections; every acknowledged write is in the log; the conflict is shown with all three
/// heads.
#[test]
fn three_branches_merge_the_same_in_any_order() {
    let env = Env::new();
    let (shared, other, mut acked) = base(&env);
    let mut branch_heads = Vec::new();

    git(&env, &["checkout", "-qb", "a", "base"]);
    let (replacement, e) = write(
        &env,
        "2026-11-23T09:00:00.000Z",
        &[
            "supersede",
            &shared,
            "--summary",
            "Shared decision, revised",
            "--reason",
            "review",
        ],
    );
    branch_heads.extend(e.clone());
    acked.extend(e);
    acked.extend(
        write(
            &env,
            "2026-11-23T09:00:01.000Z",
            &["update", &other, "--confidence", "0.6"],
        )
        .1,
    );
    let (only_a, e) = add(&env, "2026-11-23T09:00:02.000Z", "a.only", "Written on a");
    acked.extend(e);
    git(&env, &["commit", "-qam", "a"]);

    git(&env, &["checkout", "-qb", "b", "base"]);
    let (_, e) = write(
        &env,
        "2026-11-23T09:00:00.000Z",
        &["deprecate", &shared, "--reason", "obsolete"],
    );
    branch_heads.extend(e.clone());
    acked.extend(e);
    let (only_b, e) = add(&env, "2026-11-23T09:00:03.000Z", "b.only", "Written on b");
    acked.extend(e);
    git(&env, &["commit", "-qam", "b"]);

    git(&env, &["checkout", "-qb", "c", "base"]);
    acked.extend(
        write(
            &env,
            "2026-11-23T09:00:00.000Z",
            &["pin", &shared, "--reason", "keep"],
        )
        .1,
    );
    let (_, e) = write(
        &env,
        "2026-11-23T09:00:04.000Z",
        &["update", &shared, "--confidence", "0.4", "--tag", "c"],
    );
    branch_heads.extend(e.clone());
    acked.extend(e);
    let (only_c, e) = add(&env, "2026-11-23T09:00:05.000Z", "c.only", "Written on c");
    acked.extend(e);
    git(&env, &["commit", "-qam", "c"]);

    let mut dumps = Vec::new();
    for (target, order) in [("main", ["a", "b", "c"]), ("reverse", ["c", "b", "a"])] {
        if target == "main" {
            git(&env, &["checkout", "-q", "main"]);
        } else {
            git(&env, &["checkout", "-qb", target, "base"]);
        }
        for branch in order {
            git(&env, &["merge", "-q", "--no-ff", "--no-edit", branch]);
        }
        assert_eq!(
            git(&env, &["status", "--porcelain"]),
            "",
            "{target}: merged cleanly"
        );

        // Every acknowledged write is in the merged log, nothing else is, and no line is lost
        // to a duplicate.
        let ids = log_ids(&env);
        let in_log: BTreeSet<&String> = ids.iter().collect();
        let written: BTreeSet<&String> = acked.iter().collect();
        assert_eq!(in_log, written, "{target}");
        assert_eq!(ids.len(), acked.len(), "{target}: duplicated lines");

        let verify = env.run(&["verify", "--json"]);
        assert_eq!(verify.code, 0, "{target}: {}", verify.stdout);
        let verify = verify.json();
        assert_eq!(verify["events"], acked.len(), "{target}: {verify}");
        assert_eq!(
            verify["conflicts"],
            serde_json::json!([shared]),
            "{target}: {verify}"
        );

        // The conflict on the shared entry is visible: one head per branch.
        let shown = env.run(&["show", &shared, "--json"]).ok().json();
        assert_eq!(shown["conflict"], true, "{target}: {shown}");
        let mut heads: Vec<String> = shown["heads"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|h| h.as_str().map(str::to_owned))
            .collect();
        heads.sort();
        let mut expected = branch_heads.clone();
        expected.sort();
        assert_eq!(heads, expected, "{target}");
        let audit = env.run(&["audit", &shared, "--json"]).ok().json();
        assert!(
            audit
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["dimension"] == "conflict" && r["to"] == "open"),
            "{target}: {audit}"
        );
        // Entries of every branch, the replacement included.
        for id in [&replacement, &only_a, &only_b, &only_c, &other] {
            assert_eq!(
                env.run(&["show", id, "--json"]).ok().json()["id"],
                id.as_str()
            );
        }

        // The store caught up across checkouts and merges equals a rebuild.
        let dump = env.run(&["dump"]).ok().stdout;
        env.run(&["rebuild"]).ok();
        assert_eq!(
            env.run(&["dump"]).ok().stdout,
            dump,
            "{target}: store != rebuild"
        );
        dumps.push(dump);
    }
    assert!(dumps[0].contains(&shared));
    assert_eq!(dumps[0], dumps[1], "merge order changed the projections");
}

/// A branch rebased onto, and a commit cherry-picked into, a branch whose log moved on: the
/// union driver keeps every line, the log verifies, and the store equals a rebuild.
#[test]
fn rebase_and_cherry_pick_keep_every_write() {
    let env = Env::new();
    let (shared, _other, mut acked) = base(&env);
    let base_events = acked.clone();

    git(&env, &["checkout", "-qb", "topic", "base"]);
    acked.extend(
        write(
            &env,
            "2026-11-23T09:00:00.000Z",
            &["update", &shared, "--confidence", "0.5"],
        )
        .1,
    );
    git(&env, &["commit", "-qam", "topic 1"]);
    let (picked, picked_events) = add(
        &env,
        "2026-11-23T09:00:01.000Z",
        "topic.two",
        "Second topic commit",
    );
    acked.extend(picked_events.clone());
    git(&env, &["commit", "-qam", "topic 2"]);

    git(&env, &["checkout", "-q", "main"]);
    let mut main_events = write(
        &env,
        "2026-11-23T10:00:00.000Z",
        &["pin", &shared, "--reason", "keep"],
    )
    .1;
    main_events.extend(
        add(
            &env,
            "2026-11-23T10:00:01.000Z",
            "main.one",
            "Written on main",
        )
        .1,
    );
    acked.extend(main_events.clone());
    git(&env, &["commit", "-qam", "main"]);

    // Cherry-pick the second topic commit into main: its line joins main's log.
    git(&env, &["cherry-pick", "topic~0"]);
    assert_eq!(
        env.run(&["show", &picked, "--json"]).ok().json()["id"],
        picked.as_str()
    );
    // The union may also carry the picked commit's context (the first topic commit's line):
    // anything in the log was written somewhere, and everything main wrote is there.
    let main_ids: BTreeSet<String> = log_ids(&env).into_iter().collect();
    let all: BTreeSet<String> = acked.iter().cloned().collect();
    assert!(main_ids.is_subset(&all), "{main_ids:?}");
    for e in base_events.iter().chain(&main_events).chain(&picked_events) {
        assert!(main_ids.contains(e), "{e} is missing after the cherry-pick");
    }
    assert_eq!(env.run(&["verify"]).code, 0);

    // Rebase topic onto main: every write of both is in the log, and the concurrent
    // update and pin of the shared entry show as a conflict.
    git(&env, &["checkout", "-q", "topic"]);
    git(&env, &["rebase", "-q", "main"]);
    assert_eq!(git(&env, &["status", "--porcelain"]), "");
    let ids = log_ids(&env);
    assert_eq!(
        ids.iter().collect::<BTreeSet<_>>(),
        acked.iter().collect::<BTreeSet<_>>()
    );
    // A line added on both sides (the picked one) may come back twice: harmless, and said.
    let verify = env.run(&["verify", "--json"]);
    assert_eq!(verify.code, 0, "{}", verify.stdout);
    let verify = verify.json();
    assert_eq!(verify["conflicts"], serde_json::json!([shared]));
    assert_eq!(verify["events"], acked.len());
    assert_eq!(
        verify["duplicate_lines"],
        ids.len() - acked.len(),
        "{verify}"
    );
    let dump = env.run(&["dump"]).ok().stdout;
    env.run(&["rebuild"]).ok();
    assert_eq!(env.run(&["dump"]).ok().stdout, dump);
}

/// The branch that purged an entry and ran `gc` rewrote its lines as tombstones; the other
/// branch still holds them whole, as the common ancestor did. With memlog's driver installed,
/// neither a rebase onto that branch (which runs no hook) nor a merge of it (whose hook refuses
/// purged content) brings the purged text back: the ancestor's line that one side rewrote is
/// not taken from the other, and the tombstone wins over the whole line.
#[test]
fn purged_content_stays_out_of_a_rebase_and_a_merge_with_the_driver() {
    let env = Env::new();
    git(&env, &["init", "-q", "-b", "main"]);
    env.run(&["init", "demo"]).ok();
    env.run(&["git", "install"]).ok();
    env.add("kept", "Kept entry");
    let leak = env.add("leak", "Pasted secret sentence");
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "base"]);
    git(&env, &["checkout", "-qb", "feature"]);
    let feature = env.add("feature", "Feature work");
    git(&env, &["commit", "-qam", "feature"]);
    git(&env, &["checkout", "-q", "main"]);
    env.run(&["purge", &leak, "--reason", "credential"]).ok();
    env.run(&["gc", "demo"]).ok();
    git(&env, &["commit", "-qam", "purge and gc"]);
    let committed = |rev: &str| {
        git(
            &env,
            &["show", &format!("{rev}:ai-memory/demo/events.jsonl")],
        )
    };
    assert!(!committed("main").contains("Pasted secret sentence"));

    // A merge of main into a branch of feature: the hook lets it through, nothing comes back.
    git(&env, &["checkout", "-qb", "merged", "feature"]);
    git(&env, &["merge", "-q", "--no-edit", "main"]);
    // A rebase of feature onto main: no hook runs, and nothing comes back either.
    git(&env, &["checkout", "-q", "feature"]);
    git(&env, &["rebase", "-q", "main"]);
    for branch in ["merged", "feature"] {
        git(&env, &["checkout", "-q", branch]);
        let log = committed("HEAD");
        assert!(!log.contains("Pasted secret sentence"), "{branch}: {log}");
        let verify = env.run(&["verify", "--json"]);
        assert_eq!(verify.code, 0, "{branch}: {}", verify.stdout);
        assert_eq!(verify.json()["warnings"], serde_json::json!([]), "{branch}");
        assert_eq!(
            env.run(&["show", &feature, "--json"]).ok().json()["summary"],
            "Feature work"
        );
        assert_eq!(
            env.run(&["show", &leak, "--json"]).ok().json()["summary"],
            ""
        );
    }
}

/// With the driver installed, a cherry-pick of an update without the commit that created its
/// entry keeps the create the picked commit's log holds (the common ancestor of such a pick
/// holds it too, and the target lacks it: no reason to drop it), and the log verifies.
#[test]
fn a_cherry_pick_with_the_driver_keeps_the_lines_the_target_lacks() {
    let env = Env::new();
    git(&env, &["init", "-q", "-b", "main"]);
    env.run(&["init", "demo"]).ok();
    env.run(&["git", "install"]).ok();
    env.add("kept", "Kept entry");
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "base"]);
    git(&env, &["checkout", "-qb", "feature"]);
    let x = env.add("feature", "Feature entry");
    git(&env, &["commit", "-qam", "create"]);
    env.run(&["update", &x, "--confidence", "0.95", "--reason", "measured"])
        .ok();
    git(&env, &["commit", "-qam", "update"]);
    git(&env, &["checkout", "-q", "main"]);
    env.add("main", "Main entry");
    git(&env, &["commit", "-qam", "main work"]);
    git(&env, &["cherry-pick", "feature"]);
    let verify = env.run(&["verify"]);
    assert_eq!(verify.code, 0, "{}", verify.stdout);
    assert_eq!(
        env.run(&["show", &x, "--json"]).ok().json()["confidence"],
        0.95
    );
}
