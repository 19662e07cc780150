//! The merge matrix: two and three branches change one memory concurrently (supersede,
//! deprecate, pin, update of the same field) and write entries of their own; they are merged
//! in every order, with git's `merge=union` (what `init` commits) and with memlog's merge
//! driver (`memlog git install`). Every way ends in the same `memlog dump`, every acknowledged
//! write in the log, `verify` clean and the conflict listed by `memlog conflicts`.

use crate::common::{Env, git};
use std::collections::BTreeSet;

fn write(env: &Env, now: &str, args: &[&str]) -> (String, Vec<String>) {
    let mut args = args.to_vec();
    args.push("--json");
    let v = env.run_at(now, &args).ok().json();
    let events = v["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e.as_str().map(str::to_owned))
        .collect();
    (v["id"].as_str().unwrap_or_default().to_owned(), events)
}

fn add(env: &Env, now: &str, subject: &str) -> (String, Vec<String>) {
    let summary = format!("Decision on {subject}");
    let args = crate::common::add_args(
        ("decisions", "decision"),
        subject,
        &summary,
        "Details.",
        "0.85",
        "code:src/lib.rs#L1-L9:here",
    );
    write(env, now, &args)
}

fn log_ids(env: &Env) -> BTreeSet<String> {
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

/// A branch's name and its writes: (time, arguments).
type Branch<'a> = (&'a str, Vec<(&'a str, Vec<&'a str>)>);

/// The repository: a base commit with `shared`, then branches `a` (supersede + update of
/// another field), `b` (deprecate), `c` (pin, then update of confidence), each with an entry of
/// its own. Returns the shared entry and every acknowledged event.
fn branches(env: &Env, driver: bool) -> (String, BTreeSet<String>) {
    git(env, &["init", "-q", "-b", "main"]);
    env.run(&["init", "demo"]).ok();
    if driver {
        env.run(&["git", "install"]).ok();
    }
    let mut acked = BTreeSet::new();
    let (shared, e) = add(env, "2026-11-22T10:00:00Z", "shared");
    acked.extend(e);
    git(env, &["add", "-A"]);
    git(env, &["commit", "-qm", "base", "--no-verify"]);
    git(env, &["tag", "base"]);
    let steps: [Branch<'_>; 3] = [
        (
            "a",
            vec![
                (
                    "2026-11-23T09:00:00Z",
                    vec!["update", &shared, "--confidence", "0.95"],
                ),
                (
                    "2026-11-23T09:00:01Z",
                    vec!["supersede", &shared, "--summary", "Revised"],
                ),
            ],
        ),
        (
            "b",
            vec![(
                "2026-11-23T09:00:02Z",
                vec!["deprecate", &shared, "--reason", "gone"],
            )],
        ),
        (
            "c",
            vec![
                (
                    "2026-11-23T09:00:03Z",
                    vec!["pin", &shared, "--reason", "keep"],
                ),
                (
                    "2026-11-23T09:00:04Z",
                    vec!["update", &shared, "--confidence", "0.5"],
                ),
            ],
        ),
    ];
    for (i, (branch, writes)) in steps.iter().enumerate() {
        git(env, &["checkout", "-qb", branch, "base"]);
        for (now, args) in writes {
            acked.extend(write(env, now, args).1);
        }
        acked.extend(
            add(
                env,
                &format!("2026-11-23T10:00:0{i}Z"),
                &format!("{branch}.own"),
            )
            .1,
        );
        git(env, &["commit", "-qam", branch, "--no-verify"]);
    }
    (shared, acked)
}

/// Merges `order` into a new branch from `base` and checks the result; returns the dump.
fn merge_in(
    env: &Env,
    name: &str,
    order: &[&str],
    shared: &str,
    acked: &BTreeSet<String>,
) -> String {
    git(env, &["checkout", "-qb", name, "base"]);
    for b in order {
        git(
            env,
            &["merge", "-q", "--no-ff", "--no-edit", "--no-verify", b],
        );
    }
    assert_eq!(
        git(env, &["status", "--porcelain"]),
        "",
        "{name}: merged cleanly"
    );
    let in_log = log_ids(env);
    let verify = env.run(&["verify", "--json"]);
    assert_eq!(verify.code, 0, "{name}: {}", verify.stdout);
    let conflicts = env.run(&["conflicts", "--json"]).ok().json();
    let listed: Vec<&str> = conflicts
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["entry"].as_str())
        .collect();
    if order.len() > 1 {
        assert_eq!(listed, [shared], "{name}");
        assert_eq!(
            conflicts[0]["sides"].as_array().map(Vec::len),
            Some(order.len()),
            "{name}: one side per branch"
        );
    }
    assert!(in_log.is_subset(acked), "{name}: nothing invented");
    let dump = env.run(&["dump"]).ok().stdout;
    env.run(&["rebuild"]).ok();
    assert_eq!(
        env.run(&["dump"]).ok().stdout,
        dump,
        "{name}: store != rebuild"
    );
    dump
}

fn permutations(items: &[&'static str]) -> Vec<Vec<&'static str>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for (i, first) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, first);
            out.push(p);
        }
    }
    out
}

/// Events of the branches in `order` plus the base.
fn expected(env: &Env, order: &[&str]) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for b in order.iter().copied().chain(["base"]) {
        let text = git(env, &["show", &format!("{b}:ai-memory/demo/events.jsonl")]);
        ids.extend(
            text.lines()
                .filter_map(|l| projections::decode_line(l).ok())
                .map(|e| e.id),
        );
    }
    ids
}

#[test]
fn every_order_union_and_driver_give_one_dump() {
    let mut dumps_by_set: std::collections::BTreeMap<String, BTreeSet<String>> =
        std::collections::BTreeMap::new();
    for driver in [false, true] {
        let env = Env::new();
        let (shared, acked) = branches(&env, driver);
        let orders: Vec<Vec<&str>> = permutations(&["a", "b", "c"])
            .into_iter()
            .chain([
                vec!["a", "b"],
                vec!["b", "a"],
                vec!["c", "a"],
                vec!["a", "c"],
            ])
            .collect();
        for order in orders {
            let name = format!(
                "m-{}-{}",
                if driver { "driver" } else { "union" },
                order.join("")
            );
            let dump = merge_in(&env, &name, &order, &shared, &acked);
            // Every acknowledged write of the merged branches is there.
            let want = expected(&env, &order);
            assert_eq!(log_ids(&env), want, "{name}");
            let mut set: Vec<&str> = order.clone();
            set.sort_unstable();
            dumps_by_set.entry(set.join("")).or_default().insert(dump);
        }
    }
    for (set, dumps) in &dumps_by_set {
        assert_eq!(
            dumps.len(),
            1,
            "branches {set}: merge order or driver changed the projections"
        );
    }
}

/// The driver keeps our lines in place, adds theirs once each, drops nothing, and a merge
/// followed by more writes, a rebase and a cherry-pick all stay consistent.
#[test]
fn driver_merge_then_more_writes_rebase_and_cherry_pick() {
    let env = Env::new();
    let (shared, acked) = branches(&env, true);
    git(&env, &["checkout", "-qb", "work", "base"]);
    git(&env, &["merge", "-q", "--no-edit", "--no-verify", "a"]);
    let before = std::fs::read_to_string(env.log()).unwrap_or_default();
    git(&env, &["merge", "-q", "--no-edit", "--no-verify", "b"]);
    let after = std::fs::read_to_string(env.log()).unwrap_or_default();
    assert!(after.starts_with(&before), "our lines stay where they were");
    assert_eq!(
        after.lines().count(),
        after.lines().collect::<BTreeSet<_>>().len(),
        "no duplicated line"
    );
    // More writes after the merge: resolve the conflict (keeping branch a's replacement over
    // b's deprecation: the choice is named), then a new entry.
    let conflicts = env.run(&["conflicts", "--json"]).ok().json();
    let replacement = conflicts[0]["sides"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|side| side["set"]["superseded_by"].as_str())
        .unwrap_or_default()
        .to_owned();
    let mut acked = acked;
    acked.extend(
        write(
            &env,
            "2026-11-24T00:00:00Z",
            &[
                "resolve",
                &shared,
                "--winner",
                &replacement,
                "--reason",
                "keep a",
            ],
        )
        .1,
    );
    acked.extend(add(&env, "2026-11-24T00:00:01Z", "after.merge").1);
    git(&env, &["commit", "-qam", "after merge", "--no-verify"]);
    assert_eq!(
        env.run(&["conflicts", "--json"]).ok().json(),
        serde_json::json!([])
    );

    // Rebase c onto the merged branch, and cherry-pick c's last commit into a copy of base.
    git(&env, &["checkout", "-qb", "c2", "c"]);
    git(&env, &["rebase", "-q", "work"]);
    assert_eq!(git(&env, &["status", "--porcelain"]), "");
    let ids = log_ids(&env);
    assert!(ids.is_subset(&acked));
    assert_eq!(ids, expected(&env, &["a", "b", "c", "work"]));
    assert_eq!(env.run(&["verify"]).code, 0);
    let conflicts = env.run(&["conflicts", "--json"]).ok().json();
    assert_eq!(
        conflicts[0]["entry"],
        shared.as_str(),
        "c's pin and update conflict anew"
    );

    git(&env, &["checkout", "-qb", "picked", "work"]);
    git(&env, &["cherry-pick", "c"]);
    assert_eq!(env.run(&["verify"]).code, 0);
    let dump = env.run(&["dump"]).ok().stdout;
    env.run(&["rebuild"]).ok();
    assert_eq!(env.run(&["dump"]).ok().stdout, dump);
}
