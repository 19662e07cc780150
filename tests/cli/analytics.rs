//! `memlog stats`: every field of the MemoryStatistics, properties 47, 48 and 50 on the real
//! binary, query patterns, expiry, the lifecycle metrics and bad input.

use crate::common::Env;
use serde_json::Value;

/// Adds an entry at `now` and returns its id.
#[expect(
    clippy::too_many_arguments,
    reason = "one test helper, every field named at the call"
)]
fn add_at(
    env: &Env,
    now: &str,
    actor: &str,
    section: &str,
    subject: &str,
    summary: &str,
    confidence: &str,
    evidence: &str,
    extra: &[&str],
) -> String {
    let kind = match section {
        "decisions" => "decision",
        "state" => "metric",
        _ => "other",
    };
    let mut args = crate::common::add_args(
        (section, kind),
        subject,
        summary,
        "Details.",
        confidence,
        evidence,
    );
    args.extend(["--actor", actor]);
    args.extend_from_slice(extra);
    env.run_at(now, &args).ok().stdout.trim().to_owned()
}

fn stats(env: &Env, now: &str, args: &[&str]) -> Value {
    let mut all = vec!["stats", "--json"];
    all.extend_from_slice(args);
    env.run_at(now, &all).ok().json()
}

/// Three days of entries by two agents, one superseded, one deprecated, one expiring soon.
pub fn scenario() -> (Env, Vec<String>) {
    let env = Env::with_project();
    let ids = vec![
        add_at(
            &env,
            "2026-11-01T09:00:00Z",
            "agent-1",
            "decisions",
            "auth",
            "Use JWTs",
            "0.9",
            "code:src/auth.rs#L1:token code",
            &[],
        ),
        add_at(
            &env,
            "2026-11-10T09:00:00Z",
            "agent-1",
            "learnings",
            "ci",
            "CI is slow on Mondays",
            "0.3",
            "log:logs/ci.log:timings",
            &[],
        ),
        add_at(
            &env,
            "2026-11-20T09:00:00Z",
            "agent-2",
            "state",
            "db",
            "Pool size is 20",
            "0.7",
            "artifact:deploy/db.yaml:config",
            &[
                "--valid-from",
                "2026-11-20T00:00:00Z",
                "--valid-to",
                "2026-11-25T12:00:00Z",
            ],
        ),
        add_at(
            &env,
            "2026-11-21T09:00:00Z",
            "agent-2",
            "observations",
            "cache",
            "Cache hit rate is 80%",
            "0.6",
            "doc:docs/cache.md:measure",
            &[],
        ),
    ];
    env.run_at(
        "2026-11-21T10:00:00Z",
        &[
            "supersede",
            &ids[0],
            "--summary",
            "Use 10-minute JWTs",
            "--reason",
            "review",
            "--actor",
            "agent-2",
        ],
    )
    .ok();
    env.run_at(
        "2026-11-21T11:00:00Z",
        &[
            "deprecate",
            &ids[1],
            "--reason",
            "fixed",
            "--actor",
            "agent-1",
        ],
    )
    .ok();
    (env, ids)
}

const NOW: &str = "2026-11-22T12:00:00Z";

#[test]
fn every_field_of_the_memory_statistics_is_there() {
    let (env, _) = scenario();
    let doc = stats(&env, NOW, &[]);
    assert_eq!(doc["project"], "demo");
    assert_eq!(doc["computed_at"], "2026-11-22T12:00:00.000Z");
    let s = &doc["statistics"];
    for field in [
        "total_entries",
        "entries_by_section",
        "entries_by_status",
        "entries_by_kind",
        "avg_confidence",
        "confidence_distribution",
        "evidence_type_distribution",
        "low_confidence_count",
        "stale_evidence_count",
        "entries_created_over_time",
        "entries_superseded_over_time",
        "entries_by_agent",
        "most_active_agents",
        "recent_operations",
        "most_queried_subjects",
        "most_queried_scopes",
        "query_frequency_over_time",
        "superseded_percentage",
        "entries_approaching_expiry",
        "compaction_candidates",
        "lifecycle",
        "entries_by_lifecycle",
    ] {
        assert!(s.get(field).is_some(), "missing {field}: {s}");
    }
    // 4 created + 1 replacement; one superseded, one deprecated.
    assert_eq!(s["total_entries"], 5, "{s}");
    assert_eq!(s["entries_by_status"]["superseded"], 1);
    assert_eq!(s["entries_by_status"]["deprecated"], 1);
    assert_eq!(s["compaction_candidates"], 1);
    assert_eq!(s["superseded_percentage"], 20.0);
    assert_eq!(s["low_confidence_count"], 1);
    assert_eq!(s["most_active_agents"][0]["agent"], "agent-2");
    assert_eq!(s["most_active_agents"][0]["count"], 3);
    let ops: Vec<&str> = s["recent_operations"]
        .as_array()
        .map(|a| a.iter().filter_map(|o| o["operation"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        ops,
        [
            "deprecate",
            "supersede",
            "create",
            "create",
            "create",
            "create"
        ]
    );
    assert_eq!(s["recent_operations"][1]["summary"], "Use JWTs", "{s}");
    assert_eq!(s["lifecycle"]["entries_by_lifecycle"]["active"], 5);
    assert_eq!(
        s["lifecycle"]["last_run"],
        Value::Null,
        "never a made-up value"
    );
}

/// Property 47 on the real binary: total = entries listed, sections sum to it, the average
/// confidence is the mean of the entries' confidences.
#[test]
fn totals_sections_and_average_match_the_entries() {
    let (env, _) = scenario();
    let s = stats(&env, NOW, &[])["statistics"].clone();
    let listed = env
        .run_at(NOW, &["list", "--status", "all", "--json"])
        .ok()
        .json();
    let entries = listed.as_array().cloned().unwrap_or_default();
    assert_eq!(s["total_entries"], entries.len());
    let sections: i64 = s["entries_by_section"]
        .as_object()
        .map(|m| m.values().filter_map(Value::as_i64).sum())
        .unwrap_or(-1);
    assert_eq!(sections, i64::try_from(entries.len()).unwrap_or(0));
    #[expect(clippy::cast_precision_loss, reason = "a handful of entries")]
    let mean = entries
        .iter()
        .filter_map(|e| e["confidence"].as_f64())
        .sum::<f64>()
        / entries.len() as f64;
    let avg = s["avg_confidence"].as_f64().unwrap_or(-1.0);
    assert!((avg - mean).abs() < 1e-4, "{avg} vs {mean}");
}

/// Property 48: a range counts only the entries created in it, and the time series cover its
/// days only.
#[test]
fn date_ranges_exclude_what_is_outside() {
    let (env, _) = scenario();
    let week = stats(&env, NOW, &["--range", "7d"]);
    assert_eq!(week["range"]["from"], "2026-11-16");
    assert_eq!(week["range"]["to"], "2026-11-22");
    let s = &week["statistics"];
    // Created 11-20, 11-21 and the replacement on 11-21.
    assert_eq!(s["total_entries"], 3, "{s}");
    let series = s["entries_created_over_time"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(series.len(), 7);
    assert!(series.iter().all(|d| {
        d["date"]
            .as_str()
            .is_some_and(|d| ("2026-11-16"..="2026-11-22").contains(&d))
    }));
    assert_eq!(
        series
            .iter()
            .filter_map(|d| d["count"].as_i64())
            .sum::<i64>(),
        3
    );
    let between = stats(&env, NOW, &["--from", "2026-11-01", "--to", "2026-11-10"]);
    assert_eq!(between["statistics"]["total_entries"], 2);
    assert_eq!(between["statistics"]["entries_by_agent"]["agent-1"], 2);
    assert_eq!(
        between["statistics"]["entries_by_agent"].get("agent-2"),
        None
    );
    let nothing = stats(&env, NOW, &["--from", "2025-01-01", "--to", "2025-01-31"]);
    assert_eq!(nothing["statistics"]["total_entries"], 0);
    assert_eq!(nothing["statistics"]["avg_confidence"], 0.0);
    let month = stats(&env, NOW, &["--range", "30d"]);
    assert_eq!(month["statistics"]["total_entries"], 5);
}

/// Property 48 for the access distribution too: accesses count for the entries created in the
/// range only.
#[test]
fn date_ranges_count_the_accesses_of_their_entries_only() {
    let (env, ids) = scenario();
    // The entry of 2026-11-01 is read twice.
    for _ in 0..2 {
        env.run_at("2026-11-21T00:00:00Z", &["show", &ids[0]]).ok();
    }
    let buckets = |args: &[&str]| {
        stats(&env, NOW, args)["statistics"]["lifecycle"]["access_frequency_distribution"].clone()
    };
    let all = buckets(&[]);
    assert_eq!(all["1-4"], 1, "{all}");
    assert_eq!(all["0"], 4, "{all}");
    let between = buckets(&["--from", "2026-11-01", "--to", "2026-11-10"]);
    assert_eq!(between["1-4"], 1, "{between}");
    assert_eq!(between["0"], 1, "{between}");
    let week = buckets(&["--range", "7d"]);
    assert_eq!(week["1-4"], 0, "{week}");
    assert_eq!(week["0"], 3, "{week}");
    let nothing = buckets(&["--from", "2025-01-01", "--to", "2025-01-31"]);
    assert_eq!(
        nothing,
        serde_json::json!({"0": 0, "1-4": 0, "5-19": 0, "20+": 0})
    );
    // Debug builds only: the same answers when the creation days are read in one scan of the
    // feature records, as for many entries read (an archived entry read from its state).
    env.run_at("2026-11-21T00:00:00Z", &["show", &ids[1]]).ok();
    for range in [
        vec!["--from", "2026-11-01", "--to", "2026-11-10"],
        vec!["--range", "7d"],
        vec!["--from", "2026-11-21"],
        vec!["--to", "2026-11-20"],
    ] {
        let mut args = vec!["stats", "--json"];
        args.extend_from_slice(&range);
        let scanned = crate::common::output(
            env.command(&args)
                .env("MEMLOG_NOW", NOW)
                .env("MEMLOG_TEST_SMALL_BATCHES", "1")
                .output(),
        )
        .ok()
        .json();
        assert_eq!(scanned, stats(&env, NOW, &range), "{range:?}");
    }
}

#[test]
fn entries_approaching_expiry_and_past_valid_to() {
    let (env, ids) = scenario();
    let s = stats(&env, NOW, &[])["statistics"].clone();
    let expiring = s["entries_approaching_expiry"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(expiring.len(), 1, "{s}");
    assert_eq!(expiring[0]["entry_id"], ids[2].as_str());
    assert_eq!(expiring[0]["valid_to"], "2026-11-25T12:00:00.000Z");
    assert_eq!(expiring[0]["days_remaining"], 3);
    assert_eq!(s["health"]["expiry"], "warn");
    // Whatever the date range: an entry made before it expires all the same (the dashboard's
    // default range is the last 7 days).
    for range in [&["--from", "2026-11-21"][..], &["--to", "2026-11-10"]] {
        let r = stats(&env, NOW, range)["statistics"].clone();
        assert_eq!(
            r["entries_approaching_expiry"], s["entries_approaching_expiry"],
            "{range:?}"
        );
        assert_eq!(r["health"]["expiry"], "warn", "{range:?}");
        let later = stats(&env, "2026-11-26T00:00:00Z", range)["statistics"].clone();
        assert_eq!(later["lifecycle"]["entries_past_valid_to"], 1, "{range:?}");
    }
    // Once valid_to has passed, it no longer approaches: it is past, and that is an issue.
    let later = stats(&env, "2026-11-26T00:00:00Z", &[])["statistics"].clone();
    assert_eq!(later["entries_approaching_expiry"], serde_json::json!([]));
    assert_eq!(later["lifecycle"]["entries_past_valid_to"], 1);
    assert_eq!(later["health"]["expiry"], "bad");
    // Same day, a moment after valid_to.
    let same_day = stats(&env, "2026-11-25T12:00:01Z", &[])["statistics"].clone();
    assert_eq!(
        same_day["lifecycle"]["entries_past_valid_to"], 1,
        "{same_day}"
    );
}

#[test]
fn query_patterns_come_from_the_query_log() {
    let (env, _) = scenario();
    env.run_at(
        "2026-11-21T12:00:00Z",
        &["query", "jwt", "--subject", "auth"],
    )
    .ok();
    env.run_at(
        "2026-11-22T08:00:00Z",
        &["query", "--subject", "auth", "--scope", "service:api"],
    )
    .ok();
    env.run_at("2026-11-22T09:00:00Z", &["query", "--subject", "db"])
        .ok();
    let s = stats(&env, NOW, &[])["statistics"].clone();
    assert_eq!(s["query_count"], 3, "{s}");
    assert_eq!(s["most_queried_subjects"][0]["subject"], "auth");
    assert_eq!(s["most_queried_subjects"][0]["count"], 2);
    assert_eq!(s["most_queried_scopes"][0]["scope"], "service:api");
    let per_day: Vec<(String, i64)> = s["query_frequency_over_time"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|d| {
                    (
                        d["date"].as_str().unwrap_or("").to_owned(),
                        d["count"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        per_day,
        [("2026-11-21".to_owned(), 1), ("2026-11-22".to_owned(), 2)]
    );
    let today = stats(&env, NOW, &["--range", "1d"])["statistics"].clone();
    assert_eq!(today["query_count"], 2);
}

/// Property 50: one project's statistics hold only its entries; `--all` adds them up.
#[test]
fn projects_are_kept_apart_and_all_adds_them_up() {
    let (env, _) = scenario();
    env.run(&["init", "other"]).ok();
    add_at(
        &env,
        NOW,
        "agent-9",
        "decisions",
        "x",
        "Other project decision",
        "0.8",
        "code:src/x.rs#L1:x",
        &["--project", "other"],
    );
    assert_eq!(
        stats(&env, NOW, &["demo"])["statistics"]["total_entries"],
        5
    );
    let other = stats(&env, NOW, &["other"]);
    assert_eq!(other["statistics"]["total_entries"], 1);
    assert_eq!(other["statistics"]["entries_by_agent"].get("agent-1"), None);
    let all = stats(&env, NOW, &["--all"]);
    assert_eq!(all["project"], "all");
    assert_eq!(all["statistics"]["total_entries"], 6);
    assert_eq!(
        all["projects"],
        serde_json::json!(["demo", "global", "other"])
    );
    assert_eq!(
        all["statistics"]["recent_operations"][0]["project"],
        "other"
    );
}

#[test]
fn stats_survive_a_rebuild_unchanged() {
    let (env, _) = scenario();
    let before = stats(&env, NOW, &["--range", "30d"]);
    env.run(&["rebuild"]).ok();
    assert_eq!(stats(&env, NOW, &["--range", "30d"]), before);
}

#[test]
fn the_summary_for_people_names_the_key_numbers() {
    let (env, _) = scenario();
    let out = env.run_at(NOW, &["stats"]).ok().stdout;
    for needle in [
        "entries            5 (5 not archived, expired or purged)",
        "average confidence 0.68 [warn]",
        "stale evidence     0 [ok]",
        "expiring in 7 days 1 [warn]",
        "most active agents agent-2 3, agent-1 2",
        "deprecate",
    ] {
        assert!(out.contains(needle), "{needle:?} not in\n{out}");
    }
}

#[test]
fn bad_ranges_are_refused_and_change_nothing() {
    let (env, _) = scenario();
    let log = std::fs::read(env.log()).unwrap_or_default();
    for (args, needle) in [
        (vec!["stats", "--range", "7x"], "use 7d, 30d, all"),
        (
            vec!["stats", "--from", "2026-11-22", "--to", "2026-11-01"],
            "is after --to",
        ),
        (vec!["stats", "--from", "last week"], "not an ISO 8601 time"),
        (
            vec!["stats", "--from", "0001-01-01", "--to", "9999-12-31"],
            "at most 3660 days",
        ),
        (
            vec!["stats", "--range", "7d", "--from", "2026-11-01"],
            "cannot be used with",
        ),
        (vec!["stats", "demo", "--all"], "cannot be used with"),
        (vec!["stats", "nope"], "nope"),
    ] {
        let r = env.run_at(NOW, &args);
        assert_ne!(r.code, 0, "{args:?} succeeded");
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
    }
    assert_eq!(std::fs::read(env.log()).unwrap_or_default(), log);
}

/// A daily series never has more than 3660 days, whatever the dates of the entries: an entry
/// dated far in the past and one far in the future leave the series at the 3660 days ending
/// today, and a range of exactly 3660 days is accepted.
#[test]
fn entries_dated_far_away_keep_the_series_bounded() {
    let env = Env::with_project();
    for now in ["0001-01-01T00:00:00Z", "9999-12-31T00:00:00Z", NOW] {
        add_at(
            &env,
            now,
            "agent-1",
            "decisions",
            "auth",
            &format!("Entry of {now}"),
            "0.9",
            "code:src/auth.rs#L1:token code",
            &[],
        );
    }
    let days = |s: &Value| -> Vec<String> {
        s["statistics"]["entries_created_over_time"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|d| d["date"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    for args in [&[][..], &["--from", "0001-01-01"], &["--to", "9999-12-31"]] {
        let s = stats(&env, NOW, args);
        assert_eq!(s["statistics"]["total_entries"], 3, "{args:?}");
        let d = days(&s);
        assert_eq!(d.len(), 3660, "{args:?}");
        assert_eq!(d.last().map(String::as_str), Some("2026-11-22"), "{args:?}");
        assert_eq!(
            d.first().map(String::as_str),
            Some("2016-11-15"),
            "{args:?}"
        );
    }
    let widest = stats(&env, NOW, &["--from", "2016-11-15", "--to", "2026-11-22"]);
    assert_eq!(days(&widest).len(), 3660);
}

/// Where the entries span more than 3660 days, the text summary's growth still counts every
/// entry of the range (and every supersession), over every day the range spans: only the daily
/// series are clipped.
#[test]
fn growth_counts_every_entry_when_the_series_is_clipped() {
    let env = Env::with_project();
    add_at(
        &env,
        "2026-06-01T00:00:00Z",
        "agent-1",
        "decisions",
        "auth",
        "Use JWTs",
        "0.9",
        "code:src/auth.rs#L1:token code",
        &[],
    );
    let late = add_at(
        &env,
        "2040-01-01T00:00:00Z",
        "agent-1",
        "learnings",
        "cache",
        "Note of 2040",
        "0.8",
        "doc:docs/cache.md:note",
        &[],
    );
    // Outside the 3660 days of the series, like the entry it supersedes and the one it creates.
    env.run_at(
        "2040-01-01T01:00:00Z",
        &[
            "supersede",
            &late,
            "--summary",
            "Note of 2040, revised",
            "--reason",
            "review",
        ],
    )
    .ok();
    let json = stats(&env, "2026-06-02T00:00:00Z", &[]);
    assert_eq!(json["statistics"]["total_entries"], 3);
    let text = env.run_at("2026-06-02T00:00:00Z", &["stats"]).ok().stdout;
    // 2026-06-01 to 2040-01-01, both included.
    assert!(
        text.lines()
            .any(|l| l == "growth             3 created, 1 superseded over 4963 days"),
        "{text}"
    );
}

#[test]
fn an_empty_project_has_zero_statistics() {
    let env = Env::with_project();
    let s = stats(&env, NOW, &["--range", "7d"])["statistics"].clone();
    assert_eq!(s["total_entries"], 0);
    assert_eq!(s["avg_confidence"], 0.0);
    assert_eq!(s["health"]["overall"], Value::Null);
    assert_eq!(s["recent_operations"], serde_json::json!([]));
    assert_eq!(
        s["entries_created_over_time"].as_array().map(Vec::len),
        Some(7)
    );
}

/// The JSON Schema of docs/ANALYTICS.md, between its markers.
fn documented_schema() -> Value {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/ANALYTICS.md"))
        .unwrap_or_else(|e| panic!("docs/ANALYTICS.md: {e}"));
    let start = doc.find("<!-- schema:start -->\n```json\n").map(|i| i + 30);
    let end = doc.find("```\n<!-- schema:end -->");
    let (Some(start), Some(end)) = (start, end) else {
        panic!("schema markers missing in docs/ANALYTICS.md")
    };
    serde_json::from_str(&doc[start..end]).unwrap_or_else(|e| panic!("schema: {e}"))
}

/// The parts of JSON Schema the documented schema uses: type, enum, required, properties,
/// additionalProperties, items and local `$ref`s.
fn check(schema: &Value, root: &Value, v: &Value, at: &str) -> Vec<String> {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        return check(&root["$defs"][name], root, v, at);
    }
    let mut errors = Vec::new();
    let type_name = match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    if let Some(t) = schema.get("type") {
        let allowed: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let ok =
            allowed.contains(&type_name) || (type_name == "integer" && allowed.contains(&"number"));
        if !ok {
            errors.push(format!("{at}: {type_name} is not {allowed:?}"));
            return errors;
        }
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array)
        && !values.contains(v)
    {
        errors.push(format!("{at}: {v} not in {values:?}"));
    }
    if let Value::Object(map) = v {
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(n) = name.as_str().filter(|n| !map.contains_key(*n)) {
                errors.push(format!("{at}: missing {n}"));
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, child) in map {
            match (
                props.and_then(|p| p.get(k)),
                schema.get("additionalProperties"),
            ) {
                (Some(s), _) => errors.extend(check(s, root, child, &format!("{at}.{k}"))),
                (None, Some(Value::Bool(false))) => errors.push(format!("{at}: undocumented {k}")),
                (None, Some(s)) if s.is_object() => {
                    errors.extend(check(s, root, child, &format!("{at}.{k}")))
                }
                _ => {}
            }
        }
    }
    if let (Value::Array(items), Some(s)) = (v, schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            errors.extend(check(s, root, item, &format!("{at}[{i}]")));
        }
    }
    errors
}

/// The output keeps to the documented schema: nothing missing, nothing undocumented.
#[test]
fn the_output_follows_the_documented_json_schema() {
    let schema = documented_schema();
    let (env, _) = scenario();
    env.run_at(
        "2026-11-22T08:00:00Z",
        &["query", "--subject", "auth", "--scope", "repo"],
    )
    .ok();
    env.run(&["init", "other"]).ok();
    let empty = Env::with_project();
    for (env, args) in [
        (&env, vec!["demo"]),
        (&env, vec!["demo", "--range", "7d"]),
        (&env, vec!["--all"]),
        (&empty, vec![]),
    ] {
        let doc = stats(env, NOW, &args);
        let errors = check(&schema, &schema, &doc, "$");
        assert!(errors.is_empty(), "{args:?}: {errors:#?}");
    }
    // The checker itself catches a missing and an undocumented field.
    let mut bad = stats(&env, NOW, &["demo"]);
    bad["statistics"]["surprise"] = Value::from(1);
    if let Some(m) = bad["statistics"].as_object_mut() {
        m.remove("total_entries");
    }
    let errors = check(&schema, &schema, &bad, "$");
    assert_eq!(errors.len(), 2, "{errors:?}");
}

/// The store's statistics and latest operations equal the pure projection of the log's events,
/// after incremental writes and after a rebuild.
#[test]
fn the_store_holds_the_projection_of_the_log() {
    let (env, _) = scenario();
    let project = || {
        let ws = memlog::workspace::Workspace::at(env.root()).unwrap_or_else(|e| panic!("{e}"));
        let name = memlog::workspace::ProjectName::new("demo").unwrap_or_else(|e| panic!("{e}"));
        memlog::project::Project::new(&ws, name)
    };
    let text = std::fs::read_to_string(env.log()).unwrap_or_default();
    let events: Vec<projections::Event> = text
        .lines()
        .map(|l| projections::decode_line(l).unwrap_or_else(|e| panic!("{e:?}")))
        .collect();
    let expected = projections::project(&events);
    assert_eq!(expected.recent_operations.0.len(), 6);
    for when in ["incremental", "rebuilt"] {
        if when == "rebuilt" {
            env.run(&["rebuild"]).ok();
        }
        let session = crate::common::session(&project());
        let store = session.store();
        assert_eq!(store.stats().ok().as_ref(), Some(&expected.stats), "{when}");
        assert_eq!(
            store.recent_operations().ok().as_ref(),
            Some(&expected.recent_operations),
            "{when}"
        );
        for (from, to) in [
            (Some("2026-11-10"), Some("2026-11-20")),
            (None, Some("2026-11-10")),
            (Some("2026-11-21"), None),
            (Some("2026-11-22"), Some("2026-11-30")),
            (None, None),
        ] {
            assert_eq!(
                store.stats_created_between(from, to).ok(),
                Some(expected.stats.created_between(from, to)),
                "{when}: {from:?}..{to:?}"
            );
        }
    }
}

/// A range open at one side is labelled as open: `--from` alone also takes the entries dated
/// after today, so it does not read "to now".
#[test]
fn stats_labels_a_range_open_at_one_side_as_open() {
    let env = Env::with_project();
    for now in ["2026-06-01T00:00:00Z", "2040-01-01T00:00:00Z"] {
        add_at(
            &env,
            now,
            "agent-1",
            "decisions",
            "auth",
            &format!("Entry of {now}"),
            "0.9",
            "code:src/auth.rs#L1:token code",
            &[],
        );
    }
    for (args, range, entries) in [
        (["--from", "2026-01-01"], "from 2026-01-01 on", 2),
        (["--to", "2030-01-01"], "up to 2030-01-01", 1),
    ] {
        let mut all = vec!["stats"];
        all.extend(args);
        let text = env.run_at("2026-06-02T00:00:00Z", &all).ok().stdout;
        assert!(
            text.lines()
                .any(|l| l == format!("range              {range}")),
            "{args:?}: {text}"
        );
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("entries            {entries} "))),
            "{args:?}: {text}"
        );
    }
}

/// `stats --from --to` names the range once; `--help` names every `git` subcommand.
#[test]
fn stats_names_a_date_range_once_and_help_names_every_git_subcommand() {
    let env = Env::with_project();
    let r = env
        .run(&["stats", "--from", "2026-11-01", "--to", "2026-11-15"])
        .ok();
    assert!(
        r.stdout
            .lines()
            .any(|l| l == "range              2026-11-01 to 2026-11-15"),
        "{}",
        r.stdout
    );
    let help = env.run(&["--help"]).ok().stdout;
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("`memlog git pre-commit`"), "{help}");
}
