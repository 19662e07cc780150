//! `--as-of`: read commands answer from the events the log held then; writes refuse it; the
//! project's own store is left alone.

use crate::common::Env;

fn write_json(env: &Env, now: &str, args: &[&str]) -> serde_json::Value {
    let mut args = args.to_vec();
    args.push("--json");
    env.run_at(now, &args).ok().json()
}

#[test]
fn reads_answer_from_the_past_and_writes_refuse() {
    let env = Env::with_project();
    let first = write_json(
        &env,
        "2026-11-20T10:00:00Z",
        &crate::common::add_args(
            ("decisions", "decision"),
            "db",
            "Use Postgres",
            "Because.",
            "0.6",
            "code:src/db.rs#L1-L2:the pool",
        ),
    );
    let id = first["id"].as_str().unwrap_or_default().to_owned();
    let first_event = first["events"][0].as_str().unwrap_or_default().to_owned();
    write_json(
        &env,
        "2026-11-21T10:00:00Z",
        &["update", &id, "--confidence", "0.9"],
    );
    env.run_at("2026-11-22T10:00:00Z", &["pin", &id]).ok();
    let now = env.run(&["dump"]).ok().stdout;

    let past = env
        .run(&["show", &id, "--json", "--as-of", "2026-11-20T23:59:59Z"])
        .ok()
        .json();
    assert_eq!(
        (past["confidence"].as_f64(), past["pinned"].as_bool()),
        (Some(0.6), Some(false))
    );
    let by_event = env
        .run(&["show", &id, "--json", "--as-of", &first_event[..12]])
        .ok()
        .json();
    assert_eq!(by_event["version"], 1);
    let mid = env
        .run(&["history", &id, "--json", "--as-of", "2026-11-21"])
        .ok()
        .json();
    assert_eq!(
        mid.as_array().map(Vec::len),
        Some(1),
        "midnight of the 21st"
    );
    let day = env
        .run(&["history", &id, "--json", "--as-of", "2026-11-21T10:00:00Z"])
        .ok()
        .json();
    assert_eq!(day.as_array().map(Vec::len), Some(2));
    let before = env
        .run(&["list", "--json", "--as-of", "2026-11-01"])
        .ok()
        .json();
    assert_eq!(before, serde_json::json!([]));
    let audit = env
        .run(&["audit", "--json", "--as-of", "2026-11-21T12:00:00Z"])
        .ok()
        .json();
    assert!(
        !audit.to_string().contains("\"pin\""),
        "the pin came later: {audit}"
    );
    // As of now, the past store equals the current one.
    assert_eq!(
        env.run(&["dump", "--as-of", "2026-11-23T00:00:00Z"])
            .ok()
            .stdout,
        now
    );
    // The project's store was not touched, and only the kept stores are left behind.
    assert_eq!(env.run(&["dump"]).ok().stdout, now);
    let kept = kept_stores(&env);
    assert_eq!(kept.len(), 1, "{kept:?}");

    // Writes refuse it and change nothing.
    let log = std::fs::read(env.log()).unwrap_or_default();
    let refused = env.run(&[
        "update",
        &id,
        "--confidence",
        "0.1",
        "--as-of",
        "2026-11-21",
    ]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("--as-of"), "{}", refused.stderr);
    assert_eq!(std::fs::read(env.log()).unwrap_or_default(), log);

    // Commands that check the present state refuse it too, without speaking of writing.
    for command in ["verify", "health"] {
        let refused = env.run(&["--as-of", "2026-11-21", command]);
        assert_eq!(refused.code, 2, "{}", refused.stderr);
        assert!(
            refused.stderr.contains("no read command") && !refused.stderr.contains("write"),
            "{command}: {}",
            refused.stderr
        );
    }
}

/// The stores `--as-of` left in `.memlog/as-of/`: the kept ones (`kept-…`); anything else (a
/// scratch store) fails the test.
fn kept_stores(env: &Env) -> Vec<String> {
    let dir = env.root().join("ai-memory/demo/.memlog/as-of");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let stores: Vec<String> = names
        .iter()
        .filter(|n| !n.ends_with(".lock") && !n.ends_with(".built"))
        .cloned()
        .collect();
    assert!(stores.iter().all(|n| n.starts_with("kept-")), "{names:?}");
    stores
}

/// A read `--as-of` keeps the store of its selection for the next read of the same moment,
/// which answers the same from it; a selection that changed (an event written into that past
/// since) gets a store of its own; a purge removes the kept stores; only the last selection's
/// store is kept, and no scratch store is left.
#[test]
fn as_of_keeps_the_store_of_a_selection_and_no_more() {
    let env = Env::with_project();
    env.add_at("2026-11-20T10:00:00Z", "db", "Use Postgres", "0.9");
    let cut = "2026-11-21T00:00:00Z";
    let first = env.run(&["list", "--json", "--as-of", cut]).ok().json();
    assert_eq!(first.as_array().map(Vec::len), Some(1), "{first}");
    assert_eq!(kept_stores(&env).len(), 1);
    let again = env.run(&["list", "--json", "--as-of", cut]).ok().json();
    assert_eq!(again, first);
    assert_eq!(
        kept_stores(&env).len(),
        1,
        "the same selection, the same store"
    );

    // Another writer's entry dated before the cut (a clock behind, or a merge): the past that
    // the log holds changed, and the answer with it.
    env.add_at("2026-11-20T12:00:00Z", "cache", "Use Redis", "0.9");
    let changed = env.run(&["list", "--json", "--as-of", cut]).ok().json();
    assert_eq!(changed.as_array().map(Vec::len), Some(2), "{changed}");

    // A purge is final for the past too: no store kept from before it may still hold what it
    // removed.
    let id = changed[0]["id"].as_str().unwrap_or_default().to_owned();
    let summary = changed[0]["summary"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!kept_stores(&env).is_empty());
    env.run(&["purge", &id, "--reason", "confidential host name"])
        .ok();
    assert!(kept_stores(&env).is_empty(), "{:?}", kept_stores(&env));
    let after = env.run(&["show", &id, "--json", "--as-of", cut]);
    assert!(
        !after.stdout.contains(&summary) && !after.stderr.contains(&summary),
        "{}{}",
        after.stdout,
        after.stderr
    );

    for cut in [
        "2026-11-20T11:00:00Z",
        "2026-11-20T13:00:00Z",
        "2026-11-19T00:00:00Z",
    ] {
        env.run(&["list", "--as-of", cut]).ok();
        let kept = kept_stores(&env);
        assert_eq!(kept.len(), 1, "{kept:?}");
    }
}

#[test]
fn bad_as_of_values_are_usage_errors() {
    let env = Env::with_project();
    env.add("x", "An entry");
    for bad in ["yesterday", "2026-13-01"] {
        let r = env.run(&["list", "--as-of", bad]);
        assert_eq!(r.code, 2, "{bad}: {}", r.stderr);
        assert!(r.stderr.contains("event id"), "{}", r.stderr);
    }
    let r = env.run(&["list", "--as-of", "abcdef0123"]);
    assert_eq!(r.code, 4, "no such event: {}", r.stderr);
}

/// `dump --as-of T` equals the dump of a workspace whose log holds only the events written at
/// or before T, for every T between the writes: the past is answered from the events alone.
#[test]
fn as_of_equals_a_store_of_the_events_held_then() {
    let env = Env::with_project();
    let a = env.add("db", "Use Postgres");
    let times = [
        "2026-11-23T10:00:00Z",
        "2026-11-23T11:00:00Z",
        "2026-11-23T12:00:00Z",
        "2026-11-23T13:00:00Z",
    ];
    env.run_at(times[0], &["update", &a, "--confidence", "0.9"])
        .ok();
    let b = env
        .run_at(
            times[1],
            &["supersede", &a, "--summary", "Use Postgres 16", "--json"],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    env.run_at(times[2], &["pin", &b]).ok();
    env.run_at(times[3], &["deprecate", &b, "--reason", "moved"])
        .ok();
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    for cut in [
        "2026-11-22T00:00:00.000Z",
        "2026-11-23T10:30:00.000Z",
        "2026-11-23T11:00:00.000Z",
        "2026-11-23T12:59:59.999Z",
        "2026-11-24T00:00:00.000Z",
    ] {
        let held: String = log
            .lines()
            .filter(|l| projections::decode_line(l).is_ok_and(|e| e.at.as_str() <= cut))
            .map(|l| format!("{l}\n"))
            .collect();
        let past = Env::with_project();
        std::fs::write(past.log(), held).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            env.run(&["dump", "--as-of", cut]).ok().stdout,
            past.run(&["dump"]).ok().stdout,
            "as of {cut}"
        );
    }
}
