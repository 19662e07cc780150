//! Decay in ranking (requirement 1.4 of the lifecycle requirements: similarity multiplied by the
//! decay score) and the live lifecycle figures of `stats` (average lifespan and archival rate per
//! kind, storage per tier), incrementally and after `rebuild`. Every command has a fixed `--now`.

use crate::common::{Env, NOW};
use serde_json::Value;

/// `NOW` plus whole days, as `--now` takes it.
fn day(n: i64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339(NOW)
        .unwrap_or_else(|e| panic!("{e}"))
        .with_timezone(&chrono::Utc);
    (base + chrono::Duration::days(n)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn query(env: &Env, now: &str, text: &str) -> Vec<Value> {
    env.run_at(now, &["query", text, "--json", "--explain"])
        .ok()
        .json()
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn ids(hits: &[Value]) -> Vec<String> {
    hits.iter()
        .map(|h| h["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn hit<'a>(hits: &'a [Value], id: &str) -> &'a Value {
    hits.iter()
        .find(|h| h["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {hits:?}"))
}

#[test]
fn an_old_entry_ranks_below_an_equally_relevant_fresh_one_because_of_decay() {
    let env = Env::with_project();
    // The old entry is the more confident one: without decay its composite would win.
    let old = env.add_at(NOW, "cache.alpha", "Cache eviction uses LRU alpha", "1.0");
    let fresh = env.add_at(
        &day(60),
        "cache.bravo",
        "Cache eviction uses LRU bravo",
        "0.7",
    );

    let hits = query(&env, &day(60), "eviction");
    assert_eq!(ids(&hits), vec![fresh.clone(), old.clone()], "{hits:?}");
    let (o, f) = (&hit(&hits, &old)["explain"], &hit(&hits, &fresh)["explain"]);
    // Equally relevant (the same BM25F), the old one has the better composite, yet ranks lower:
    // its relevance is its BM25F weighted by its decay, over the best such product (the fresh
    // one's).
    assert_eq!(o["bm25"], f["bm25"], "{hits:?}");
    // Decay takes at most a fifth of it: 0.8 + 0.2 x 0.25.
    assert_eq!(o["relevance"], 0.85, "{o}");
    assert_eq!(f["relevance"], 1.0, "{f}");
    assert!(
        o["composite"].as_f64() > f["composite"].as_f64(),
        "{hits:?}"
    );
    // 60 days at the default 30-day half-life: a quarter.
    assert_eq!(o["decay"], 0.25, "{o}");
    assert_eq!(f["decay"], 1.0, "{f}");
    let expect = 0.7 * 0.85 + 0.3 * o["composite"].as_f64().unwrap_or_default();
    assert!(
        (o["score"].as_f64().unwrap_or_default() - expect).abs() < 1e-3,
        "{o}"
    );

    // Pinned, the old entry does not decay and its better composite wins again.
    env.run_at(&day(60), &["pin", &old]).ok();
    let hits = query(&env, &day(60), "eviction");
    assert_eq!(ids(&hits), vec![old.clone(), fresh.clone()], "{hits:?}");
    assert_eq!(hit(&hits, &old)["explain"]["decay"], 1.0);

    // Without text there is nothing to multiply: the composite alone orders the list.
    env.run_at(&day(60), &["unpin", &old]).ok();
    let listed = env
        .run_at(&day(60), &["query", "--json", "--explain"])
        .ok()
        .json();
    let listed = listed.as_array().cloned().unwrap_or_default();
    assert_eq!(ids(&listed), vec![old.clone(), fresh], "{listed:?}");
    let o = &hit(&listed, &old)["explain"];
    assert_eq!(o["decay"], 0.25, "{o}");
    assert_eq!(o["score"], o["composite"], "{o}");
}

#[test]
fn explain_shows_the_decay_of_each_result() {
    let env = Env::with_project();
    env.add_at(NOW, "cache.alpha", "Cache eviction uses LRU alpha", "0.9");
    let text = env
        .run_at(&day(30), &["query", "eviction", "--explain"])
        .ok()
        .stdout;
    // Alone, the old entry is still the best match: relevance is normalized after the decay,
    // so a corpus old as a whole ranks as it did when it was new.
    assert!(
        text.contains("x relevance 1.0000 + 0.3 x composite"),
        "{text}"
    );
    assert!(
        text.contains("x (0.8 + 0.2 x decay 0.5000) / best of the same among matches"),
        "{text}"
    );
    assert!(
        text.contains(
            "decay 0.5000 = policies.lifecycle decay function at the days since last use 2026-11-22T10:31:12.123Z"
        ),
        "{text}"
    );
    let listed = env.run_at(&day(30), &["query", "--explain"]).ok().stdout;
    assert!(
        listed.contains("(no text: decay 0.5000 not applied)"),
        "{listed}"
    );
}

/// A project whose policy decays linearly over 40 days.
fn with_linear_decay_over_40_days() -> Env {
    let env = Env::with_project();
    let config = env.root().join("ai-memory/demo/memlog.json");
    let text = std::fs::read_to_string(&config).unwrap_or_else(|e| panic!("{e}"));
    let mut doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    doc["policies"]["lifecycle"]["decay"] =
        serde_json::json!({"function": "linear", "period_days": 40});
    std::fs::write(&config, doc.to_string()).unwrap_or_else(|e| panic!("{e}"));
    env
}

#[test]
fn the_decay_function_of_the_policy_is_the_one_ranking_uses() {
    let env = with_linear_decay_over_40_days();
    let id = env.add_at(NOW, "cache.alpha", "Cache eviction uses LRU alpha", "0.9");
    let hits = query(&env, &day(10), "eviction");
    // Linear over 40 days, 10 days on: 0.75.
    assert_eq!(hit(&hits, &id)["explain"]["decay"], 0.75, "{hits:?}");
}

#[test]
fn a_corpus_past_the_end_of_a_linear_decay_still_ranks_by_relevance() {
    let env = with_linear_decay_over_40_days();
    let answer = env.add_at(
        NOW,
        "cache.redis",
        "Redis cache eviction policy is allkeys-lru",
        "0.7",
    );
    // More confident, and only names the word in passing.
    let lunch = env.add_at(
        NOW,
        "team.lunch",
        "Team lunch is on Friday, next to the redis rack and the cache of snacks",
        "0.95",
    );
    // 90 days on, both have decayed to nothing: relevance still decides, as on the first day.
    let hits = query(&env, &day(90), "redis cache eviction");
    assert_eq!(ids(&hits), [answer.clone(), lunch], "{hits:?}");
    assert!(
        hit(&hits, &answer)["explain"]["relevance"].as_f64() == Some(1.0),
        "{hits:?}"
    );
}

fn lifecycle_stats(env: &Env, now: &str) -> Value {
    env.run_at(now, &["stats", "--json"]).ok().json()["statistics"]["lifecycle"].clone()
}

#[test]
fn lifespans_archival_rates_and_tiers_are_live_and_survive_a_rebuild() {
    let env = Env::with_project();
    let a = env.add("a.subject", "first decision");
    let b = env.add("b.subject", "second decision");
    env.add("c.subject", "third decision");

    // Nothing has ended: no lifespans; every entry hot.
    let l = lifecycle_stats(&env, NOW);
    assert_eq!(
        l["average_lifespan_days_by_kind"],
        serde_json::json!({}),
        "{l}"
    );
    assert_eq!(l["storage_by_tier"]["hot"]["entries"], 3, "{l}");
    assert_eq!(l["storage_by_tier"]["cold"]["entries"], 0, "{l}");

    // Deprecated 10 days after creation: a lifespan of 10 days, live without any lifecycle run.
    env.run_at(
        &day(10),
        &["deprecate", &a, "--reason", "replaced by a policy"],
    )
    .ok();
    let l = lifecycle_stats(&env, &day(10));
    assert_eq!(l["ended_by_kind"]["decision"], 1, "{l}");
    assert_eq!(l["average_lifespan_days_by_kind"]["decision"], 10.0, "{l}");
    assert!(l["last_run"].is_null(), "{l}");
    // `lifecycle report` reads the same counters.
    let report = env
        .run_at(&day(10), &["lifecycle", "report", "--json"])
        .ok()
        .json();
    assert_eq!(
        report["average_lifespan_days"]["decision"], 10.0,
        "{report}"
    );
    assert_eq!(report["archival_rate"]["decision"], 0.0, "{report}");

    // A lifecycle run 120 days on archives the other two (TTL 90 days): they ended then, and
    // the deprecated one keeps its 10 days (it ended at its deprecation).
    env.run_at(&day(120), &["lifecycle", "run", "--json"]).ok();
    let l = lifecycle_stats(&env, &day(120));
    assert_eq!(l["ended_by_kind"]["decision"], 3, "{l}");
    let avg = l["average_lifespan_days_by_kind"]["decision"]
        .as_f64()
        .unwrap_or_default();
    assert!((avg - (10.0 + 120.0 + 120.0) / 3.0).abs() < 0.01, "{l}");
    assert_eq!(l["archival_rate_by_kind"]["decision"], 100.0, "{l}");
    assert_eq!(l["storage_by_tier"]["hot"]["entries"], 0, "{l}");
    assert_eq!(l["storage_by_tier"]["cold"]["entries"], 3, "{l}");
    let cold_bytes = l["storage_by_tier"]["cold"]["bytes"].as_i64().unwrap_or(0);
    assert!(cold_bytes > 0, "{l}");

    // Reading an archived entry restores it: it is live again and leaves the average.
    env.run_at(&day(121), &["show", &b]).ok();
    let l = lifecycle_stats(&env, &day(121));
    assert_eq!(l["ended_by_kind"]["decision"], 2, "{l}");
    assert_eq!(l["storage_by_tier"]["hot"]["entries"], 1, "{l}");

    // The text output says the same: the deprecated entry (10 days) and the one still archived
    // (120 days) have ended; two of three decisions are archived (the deprecated one was too).
    let text = env.run_at(&day(121), &["stats"]).ok().stdout;
    assert!(
        text.contains("lifespan           decision 65 days (2 ended, 66.67% archived)"),
        "{text}"
    );
    assert!(text.contains("storage            hot 1 entries"), "{text}");

    // The whole statistics document is the same after a rebuild from the log.
    let before = env.run_at(&day(121), &["stats", "--json"]).ok().json();
    env.run_at(&day(121), &["rebuild"]).ok();
    let after = env.run_at(&day(121), &["stats", "--json"]).ok().json();
    assert_eq!(before["statistics"], after["statistics"]);
}

fn listed_ids(env: &Env, now: &str, args: &[&str]) -> Vec<String> {
    let v = env.run_at(now, args).ok().json();
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|e| e["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `pinned` and `list --archived` read the cold index, which follows every move between the
/// tiers: archival, pinning while archived, restore by a read, expiry, and a rebuild.
#[test]
fn pinned_and_archived_listings_follow_the_cold_index() {
    let env = Env::with_project();
    let mut ids = vec![
        env.add("a.subject", "first decision"),
        env.add("b.subject", "second decision"),
        env.add("c.subject", "third decision"),
    ];
    ids.sort();
    let (a, b, c) = (ids[0].clone(), ids[1].clone(), ids[2].clone());
    env.run_at(&day(120), &["lifecycle", "run", "--json"]).ok();
    let archived = ["list", "--archived", "--json"];
    assert_eq!(listed_ids(&env, &day(120), &archived), ids);
    assert_eq!(
        listed_ids(
            &env,
            &day(120),
            &[
                "list",
                "--archived",
                "--offset",
                "1",
                "--limit",
                "1",
                "--json"
            ]
        ),
        [b.as_str()]
    );

    // Pinned while archived: listed by `pinned` from the cold side.
    env.run_at(&day(121), &["pin", &c]).ok();
    assert_eq!(
        listed_ids(&env, &day(121), &["pinned", "--json"]),
        [c.as_str()]
    );

    // A read restores `a`: it leaves the archive listing.
    env.run_at(&day(122), &["show", &a]).ok();
    assert_eq!(
        listed_ids(&env, &day(122), &archived),
        [b.clone(), c.clone()]
    );

    // A year on, `b` expires (archive retention 365 days) and leaves the listing; `a`, unused
    // since its restore, is archived again; `c` is pinned and stays archived.
    env.run_at(&day(500), &["lifecycle", "run", "--json"]).ok();
    let now_archived = vec![a.clone(), c.clone()];
    assert_eq!(listed_ids(&env, &day(500), &archived), now_archived);
    assert_eq!(
        listed_ids(&env, &day(500), &["pinned", "--json"]),
        [c.as_str()]
    );

    // The same after a rebuild from the log.
    env.run_at(&day(500), &["rebuild"]).ok();
    assert_eq!(listed_ids(&env, &day(500), &archived), now_archived);
    assert_eq!(listed_ids(&env, &day(500), &["pinned", "--json"]), [c]);
}

/// `pinned` shows each entry's real status: one superseded since it was pinned says so, in its
/// text as in its JSON, and an archived one also names its lifecycle state.
#[test]
fn pinned_shows_the_status_of_a_superseded_entry() {
    let env = Env::with_project();
    let old = env.add("a.subject", "first decision");
    let kept = env.add("b.subject", "second decision");
    env.run(&["pin", &old]).ok();
    env.run(&["pin", &kept]).ok();
    env.run(&["supersede", &old, "--summary", "first decision, revised"])
        .ok();
    let json = env.run(&["pinned", "--json"]).ok().json();
    assert_eq!(json[0]["status"], "superseded", "{json}");
    let text = env.run(&["pinned"]).ok().stdout;
    let line = |id: &str| {
        text.lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("{id} not in {text}"))
            .to_owned()
    };
    assert!(line(&old).contains("  superseded "), "{text}");
    assert!(!line(&old).contains("active"), "{text}");
    assert!(line(&kept).contains("  active "), "{text}");
    // Pinned while archived: still active, and archived.
    let cold = env.add("c.subject", "third decision");
    env.run_at(&day(120), &["lifecycle", "run", "--json"]).ok();
    env.run_at(&day(121), &["pin", &cold]).ok();
    let text = env.run_at(&day(121), &["pinned"]).ok().stdout;
    assert!(text.contains("  superseded "), "{text}");
    let cold_line = text
        .lines()
        .find(|l| l.starts_with(&cold))
        .unwrap_or_default();
    assert!(cold_line.contains("  active (archived) "), "{text}");
}
