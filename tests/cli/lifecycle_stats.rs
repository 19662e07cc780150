//! The lifecycle engine's figures in `stats`, the dashboard and `health`: the last run report
//! (`.memlog/lifecycle-runs.jsonl`) and the access counts (the access log).

use crate::common::{Env, NOW};
use serde_json::Value;

const DAY_40: &str = "2027-01-01T10:31:12.123Z";
const DAY_80: &str = "2027-02-10T10:31:12.123Z";

fn lifecycle(env: &Env, now: &str) -> Value {
    env.run_at(now, &["stats", "--json"]).ok().json()["statistics"]["lifecycle"].clone()
}

fn health(env: &Env, now: &str) -> Value {
    env.run_at(now, &["health", "--json"]).ok().json()[0].clone()
}

#[test]
fn stats_dashboard_and_health_show_the_last_lifecycle_run() {
    let env = Env::with_project();
    env.add("a.subject", "first decision");
    env.add("b.subject", "second decision");

    // Before any run: no run, said as such.
    let l = lifecycle(&env, NOW);
    assert!(l["last_run"].is_null(), "{l}");
    let h = health(&env, NOW);
    assert!(h["last_lifecycle_run"].is_null(), "{h}");
    assert!(
        h["last_lifecycle_run_note"]
            .as_str()
            .unwrap_or_default()
            .starts_with("never"),
        "{h}"
    );

    // A run 40 days on turns both entries to decaying.
    let report = env
        .run_at(DAY_40, &["lifecycle", "run", "--json"])
        .ok()
        .json();
    let ran_at = report["now"].as_str().unwrap_or_default().to_owned();
    assert_eq!(ran_at, DAY_40, "{report}");
    let l = lifecycle(&env, DAY_40);
    assert_eq!(l["last_run"]["at"], DAY_40, "{l}");
    assert_eq!(l["last_run"]["transitions"]["decaying"], 2, "{l}");
    assert_eq!(l["last_run"]["purged"], 0, "{l}");

    let h = health(&env, DAY_40);
    assert_eq!(h["last_lifecycle_run"], DAY_40, "{h}");
    let note = h["last_lifecycle_run_note"].as_str().unwrap_or_default();
    assert!(note.starts_with(DAY_40), "{note}");
    assert!(note.contains("2 entries, 2 transitions"), "{note}");
    let text = env.run_at(DAY_40, &["health"]).ok().stdout;
    assert!(
        text.contains(&format!("last lifecycle run    {DAY_40}")),
        "{text}"
    );

    let frame = env
        .run_at(DAY_40, &["dashboard", "--once", "--size", "160x48"])
        .ok()
        .stdout;
    assert!(frame.contains("last run 2027-01-01"), "{frame}");
    assert!(!frame.contains("last run: not available"), "{frame}");

    // A dry run writes no report: the last run stays the one that wrote.
    env.run_at(DAY_80, &["lifecycle", "run", "--dry-run", "--json"])
        .ok();
    assert_eq!(lifecycle(&env, DAY_80)["last_run"]["at"], DAY_40);
    assert_eq!(health(&env, DAY_80)["last_lifecycle_run"], DAY_40);

    // The statistics for people name the run too.
    let text = env.run_at(DAY_40, &["stats"]).ok().stdout;
    assert!(
        text.contains(&format!("last run           {DAY_40}")),
        "{text}"
    );
}

#[test]
fn stats_count_the_accesses_of_the_access_log() {
    let env = Env::with_project();
    let a = env.add("a.subject", "first decision");
    env.add("b.subject", "second decision");
    env.add("c.subject", "third decision");

    let l = lifecycle(&env, NOW);
    let d = &l["access_frequency_distribution"];
    assert_eq!(d["0"], 3, "{l}");
    assert_eq!(d["1-4"], 0, "{l}");

    for _ in 0..5 {
        env.run(&["show", &a, "--json"]).ok();
    }
    let l = lifecycle(&env, NOW);
    let d = &l["access_frequency_distribution"];
    assert_eq!(d["0"], 2, "{l}");
    assert_eq!(d["5-19"], 1, "{l}");

    // Accesses after --now do not count at --now.
    let l = lifecycle(&env, "2026-11-01T00:00:00.000Z");
    assert_eq!(l["access_frequency_distribution"]["5-19"], 0, "{l}");

    let text = env.run(&["stats"]).ok().stdout;
    assert!(
        text.contains("accesses           0 2, 1-4 0, 5-19 1, 20+ 0"),
        "{text}"
    );
    let frame = env
        .run(&["dashboard", "--once", "--size", "160x48"])
        .ok()
        .stdout;
    assert!(frame.contains("accessed: 0:2 1-4:0 5-19:1"), "{frame}");
}

/// A summary of access counts written by an older version (a JSON object) counts as before,
/// and the next read replaces it with the current form, which counts the same; reads recorded
/// after the fold are added on top of it.
#[test]
fn an_older_access_summary_counts_the_same_and_is_replaced() {
    let env = Env::with_project();
    let a = env.add("a.subject", "first decision");
    let b = env.add("b.subject", "second decision");
    env.add("c.subject", "third decision");
    let state = env.root().join("ai-memory/demo/.memlog");
    fs_err::create_dir_all(&state).unwrap_or_else(|e| panic!("{e}"));
    let old = serde_json::json!({
        a.clone(): {"count": 7, "first": "2026-11-01T00:00:00.000Z", "last": "2026-11-02T00:00:00.000Z"},
        b.clone(): {"count": 2, "first": "2026-11-01T00:00:00.000Z", "last": "2026-11-02T00:00:00.000Z"},
    });
    fs_err::write(state.join("access-summary.json"), old.to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    let expected = |l: &Value| {
        let d = &l["access_frequency_distribution"];
        (d["0"].clone(), d["1-4"].clone(), d["5-19"].clone())
    };
    let before = lifecycle(&env, NOW);
    assert_eq!(
        expected(&before),
        (1.into(), 1.into(), 1.into()),
        "{before}"
    );
    let report = env
        .run_at(NOW, &["lifecycle", "report", "--json"])
        .ok()
        .json();
    // `show` records a read and folds the older summary into the current form.
    env.run(&["show", &b, "--json"]).ok();
    assert!(!state.join("access-summary.json").exists());
    let text = fs_err::read_to_string(state.join("access-summary.tsv")).unwrap_or_default();
    assert!(text.starts_with("memlog-access-summary 1\t"), "{text}");
    // b now has three reads: still in 1-4; a report of the same time reads as before.
    let after = lifecycle(&env, NOW);
    assert_eq!(expected(&after), expected(&before), "{after}");
    assert_eq!(
        env.run_at(NOW, &["lifecycle", "report", "--json"])
            .ok()
            .json(),
        report
    );
    for _ in 0..2 {
        env.run(&["show", &b, "--json"]).ok();
    }
    let d = lifecycle(&env, NOW)["access_frequency_distribution"].clone();
    assert_eq!(
        (d["1-4"].clone(), d["5-19"].clone()),
        (0.into(), 2.into()),
        "{d}"
    );
}

/// The run history keeps each report's transitions counted by state, not listed (a run over
/// every entry of a large project listed each, and every `stats` read them); a report kept
/// before with its transitions listed reads the same, and is kept counted by the next run.
#[test]
fn the_run_history_keeps_transitions_counted() {
    let env = Env::with_project();
    env.add("a.subject", "first decision");
    env.add("b.subject", "second decision");
    env.run_at(DAY_40, &["lifecycle", "run"]).ok();
    let runs = env
        .root()
        .join("ai-memory/demo/.memlog/lifecycle-runs.jsonl");
    let text = std::fs::read_to_string(&runs).unwrap_or_default();
    let kept: Value = serde_json::from_str(text.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(
        kept["transitions"],
        serde_json::json!({"decaying": 2}),
        "{kept}"
    );
    assert_eq!(kept["skipped"], 0, "{kept}");
    // A report as kept before: its transitions listed.
    let mut listed = kept.clone();
    listed["transitions"] = serde_json::json!([
        {"entry": "m-a", "from": "active", "to": "decaying", "reason": "r"},
        {"entry": "m-b", "from": "active", "to": "decaying", "reason": "r"},
    ]);
    listed["skipped"] = serde_json::json!([]);
    std::fs::write(&runs, format!("{listed}\n")).unwrap_or_else(|e| panic!("{e}"));
    let l = lifecycle(&env, DAY_40);
    assert_eq!(l["last_run"]["transitions"]["decaying"], 2, "{l}");
    env.run_at(DAY_80, &["lifecycle", "run"]).ok();
    let text = std::fs::read_to_string(&runs).unwrap_or_default();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(!text.contains("\"transitions\":["), "{text}");
}
