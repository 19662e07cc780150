//! `memlog dashboard`: frames rendered with ratatui's test backend at 80x24 and 160x48 (through
//! `--once` on the real binary, fixed clock and data), the colour thresholds of property 51,
//! `NO_COLOR`, the keys, an empty project and a terminal too small.

use crate::analytics::scenario;
use crate::common::Env;
use memlog::analytics::dashboard::render::{self, Panel};
use memlog::analytics::dashboard::{Action, App, Loaded};
use memlog::analytics::statistics::{LifecycleInputs, MemoryStatistics, ProjectPart};
use memlog::analytics::{DateRange, RangeSpec};
use projections::stats::Counters;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::time::Duration;

macro_rules! snap {
    ($name:expr, $value:expr) => {
        insta::with_settings!({ snapshot_path => "../../snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!($name, $value);
        });
    };
}

const NOW: &str = "2026-11-22T12:00:00Z";

fn once(env: &Env, args: &[&str]) -> String {
    let mut all = vec!["dashboard", "--once"];
    all.extend_from_slice(args);
    env.run_at(NOW, &all).ok().stdout
}

fn with_queries() -> Env {
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
    env
}

#[test]
fn frame_80x24() {
    let env = with_queries();
    let frame = once(&env, &["--range", "30d"]);
    assert_eq!(frame.lines().count(), 24);
    assert!(frame.lines().all(|l| l.chars().count() <= 80));
    snap!("dashboard_80x24", frame);
}

#[test]
fn frame_160x48() {
    let env = with_queries();
    let frame = once(&env, &["--range", "30d", "--size", "160x48"]);
    assert_eq!(frame.lines().count(), 48);
    snap!("dashboard_160x48", frame);
}

/// Queries that filter by neither subject nor scope are counted in the panel's title; its
/// table, which ranks those filters, says so rather than that nothing was logged.
#[test]
fn queries_without_subject_or_scope_are_not_called_unlogged() {
    let (env, _) = scenario();
    env.run_at("2026-11-21T12:00:00Z", &["query", "jwt"]).ok();
    let frame = once(&env, &["--range", "30d"]);
    assert!(frame.contains("Queries: 1"), "{frame}");
    assert!(frame.contains("no subject/scope"), "{frame}");
    assert!(!frame.contains("no queries logged"), "{frame}");
}

#[test]
fn frame_of_an_empty_project() {
    let env = Env::with_project();
    snap!("dashboard_empty_80x24", once(&env, &[]));
    snap!("dashboard_empty_160x48", once(&env, &["--size", "160x48"]));
}

#[test]
fn all_projects_show_their_sum_and_project_names() {
    let env = with_queries();
    env.run(&["init", "other"]).ok();
    env.run_at(
        NOW,
        &[
            "add",
            "--project",
            "other",
            "--section",
            "decisions",
            "--kind",
            "decision",
            "--subject",
            "x",
            "--scope",
            "repo",
            "--summary",
            "Other decision",
            "--content",
            "c",
            "--confidence",
            "0.8",
            "--evidence",
            "code:src/x.rs#L1:x",
        ],
    )
    .ok();
    let frame = once(&env, &["--all", "--range", "30d", "--size", "160x48"]);
    assert!(frame.contains("Project: all projects"), "{frame}");
    assert!(frame.contains("Total 6 |"), "{frame}");
    assert!(frame.contains("other/m-"), "{frame}");
    assert!(frame.contains("p project"), "{frame}");
}

#[test]
fn bad_options_are_refused() {
    let env = Env::with_project();
    for (args, needle) in [
        (vec!["dashboard", "--once", "--size", "80"], "WIDTHxHEIGHT"),
        (vec!["dashboard", "--once", "--size", "60x20"], "from 80x24"),
        (vec!["dashboard", "--refresh", "0"], "--refresh"),
        (vec!["dashboard", "--size", "80x24"], "--once"),
        (
            vec!["dashboard", "--once", "--range", "week"],
            "use 7d, 30d, all",
        ),
    ] {
        let r = env.run_at(NOW, &args);
        assert_ne!(r.code, 0, "{args:?}");
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
    }
    // Without a terminal the live dashboard says what to do instead.
    let r = env.run_at(NOW, &["dashboard"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("--once"), "{}", r.stderr);
}

/// Statistics with a given average confidence (over 10 entries) and stale evidence count.
fn fixture(avg_tenths: i64, stale: i64, expiring: bool) -> MemoryStatistics {
    let mut c = Counters {
        total_entries: 10,
        hot_entries: 10,
        confidence_micros_sum: avg_tenths * 1_000_000,
        stale_evidence_count: stale,
        ..Counters::default()
    };
    c.entries_by_section.insert("decisions".into(), 10);
    c.entries_by_lifecycle.insert("active".into(), 10);
    c.entries_created_per_day.insert("2026-11-22".into(), 10);
    c.confidence_distribution.insert("0.6-0.8".into(), 10);
    let range = DateRange {
        label: "7d".into(),
        from: Some("2026-11-16".into()),
        to: Some("2026-11-22".into()),
        today: "2026-11-22".parse().unwrap_or_default(),
    };
    let mut part = ProjectPart {
        project: "demo".into(),
        counters: c,
        ..ProjectPart::default()
    };
    if expiring {
        part.expiring
            .push(memlog::analytics::statistics::ExpiringEntry {
                entry_id: "m-abcdefghij".into(),
                summary: "Token config".into(),
                valid_to: "2026-11-24T00:00:00.000Z".into(),
                days_remaining: 1,
                project: "demo".into(),
            });
    }
    MemoryStatistics::build(&[part], &range, LifecycleInputs::default())
}

fn app_with(stats: MemoryStatistics, color: bool) -> App {
    let mut app = App::new(
        vec!["demo".into()],
        RangeSpec::Last(7),
        Duration::from_secs(30),
        color,
    );
    app.take(Ok(Loaded {
        stats,
        at: "2026-11-22T12:00:00.000Z".into(),
        range: "7d (2026-11-16..2026-11-22)".into(),
    }));
    app
}

/// The first rows of a frame, text and colours (`g` green, `y` yellow, `r` red).
fn summary_rows(app: &App) -> String {
    let buffer = render::render_buffer(&app.screen(), 80, 24);
    let text: Vec<String> = render::buffer_text(&buffer)
        .lines()
        .take(3)
        .map(str::to_owned)
        .collect();
    let colours: Vec<String> = render::buffer_colours(&buffer)
        .lines()
        .take(3)
        .map(str::to_owned)
        .collect();
    text.iter()
        .zip(&colours)
        .map(|(t, c)| format!("{t}\n{c}\n"))
        .collect()
}

/// Property 51 in the frame: green, yellow and red, each with its label.
#[test]
fn colour_thresholds() {
    let cases = [
        ("healthy", fixture(9, 0, false)),
        ("warnings", fixture(6, 2, true)),
        ("issues", fixture(4, 7, false)),
    ];
    let mut out = String::new();
    for (name, stats) in cases {
        out.push_str(&format!(
            "== {name}\n{}",
            summary_rows(&app_with(stats, true))
        ));
    }
    snap!("dashboard_colour_thresholds", out);
    let green = summary_rows(&app_with(fixture(9, 0, false), true));
    assert!(
        green.contains("0.90 [ok]") && green.contains("Stale 0 [ok]"),
        "{green}"
    );
    let red = summary_rows(&app_with(fixture(4, 7, false), true));
    assert!(
        red.contains("0.40 [bad]") && red.contains("Stale 7 [bad]"),
        "{red}"
    );
}

#[test]
fn no_color_keeps_the_labels_and_drops_every_colour() {
    let app = app_with(fixture(4, 7, true), false);
    let buffer = render::render_buffer(&app.screen(), 160, 48);
    assert!(
        render::buffer_colours(&buffer)
            .chars()
            .all(|c| c == '.' || c == '\n')
    );
    let text = render::buffer_text(&buffer);
    assert!(
        text.contains("[bad]") && text.contains("Expiry 1 [warn]"),
        "{text}"
    );
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

#[test]
fn keys() {
    let mut app = app_with(fixture(9, 0, false), true);
    assert_eq!(app.key(key(KeyCode::Char('q'))), Action::Quit);
    assert_eq!(
        app.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
        Action::Quit
    );
    assert_eq!(app.key(key(KeyCode::Char('r'))), Action::Reload);
    assert_eq!(app.key(key(KeyCode::Char('f'))), Action::Reload);
    assert_eq!(app.range, RangeSpec::Last(30));
    app.key(key(KeyCode::Char('f')));
    assert_eq!(app.range, RangeSpec::All);
    // One project: `p` explains instead of switching.
    assert_eq!(app.key(key(KeyCode::Char('p'))), Action::Nothing);
    assert!(app.status.as_deref().is_some_and(|s| s.contains("--all")));
    assert_eq!(app.focus, Panel::Operations);
    app.key(key(KeyCode::Right));
    assert_eq!(app.focus, Panel::Expiry);
    app.key(key(KeyCode::Left));
    app.key(key(KeyCode::Left));
    assert_eq!(app.focus, Panel::Agents);
    app.key(key(KeyCode::Char('h')));
    assert!(app.help);
    let frame = render::buffer_text(&render::render_buffer(&app.screen(), 80, 24));
    assert!(
        frame.contains("Help") && frame.contains("next date range"),
        "{frame}"
    );
    // Every line of the help fits inside its box, at the smallest size the dashboard draws.
    assert!(frame.contains("nothing is locked meanwhile."), "{frame}");
    app.key(key(KeyCode::Char('h')));
    assert!(!app.help);
    // With several projects `p` cycles through them and back to all.
    let mut all = App::new(
        vec!["all projects".into(), "a".into(), "b".into()],
        RangeSpec::Last(7),
        Duration::from_secs(30),
        true,
    );
    for expected in ["a", "b", "all projects"] {
        assert_eq!(all.key(key(KeyCode::Char('p'))), Action::Reload);
        assert_eq!(all.target_name(), expected);
    }
}

#[test]
fn arrows_scroll_the_focused_table_within_its_rows() {
    let mut stats = fixture(9, 0, false);
    stats.recent_operations = (0..20)
        .map(|i| memlog::analytics::statistics::RecentOperation {
            timestamp: format!("2026-11-22T10:{i:02}:00.000Z"),
            operation: "create".into(),
            entry_id: format!("m-{i:02}aaaaaaaa"),
            agent: "agent-1".into(),
            summary: format!("Entry {i}"),
            project: "demo".into(),
        })
        .collect();
    let mut app = app_with(stats, false);
    let first = render::buffer_text(&render::render_buffer(&app.screen(), 80, 24));
    assert!(
        first.contains("Entry 0") && first.contains("1/20"),
        "{first}"
    );
    app.key(key(KeyCode::Down));
    app.key(key(KeyCode::Down));
    let scrolled = render::buffer_text(&render::render_buffer(&app.screen(), 80, 24));
    assert!(
        scrolled.contains("Entry 2") && scrolled.contains("3/20"),
        "{scrolled}"
    );
    for _ in 0..3 {
        app.key(key(KeyCode::Down));
    }
    let moved = render::buffer_text(&render::render_buffer(&app.screen(), 80, 24));
    assert!(
        !moved.contains("Entry 0 ") && moved.contains("Entry 5") && moved.contains("6/20"),
        "{moved}"
    );
    for _ in 0..50 {
        app.key(key(KeyCode::Down));
    }
    let bottom = render::buffer_text(&render::render_buffer(&app.screen(), 80, 24));
    assert!(
        bottom.contains("Entry 19") && bottom.contains("20/20"),
        "{bottom}"
    );
    app.key(key(KeyCode::Home));
    assert_eq!(app.scroll[0], 0);
}

#[test]
fn a_failed_refresh_keeps_the_last_statistics_and_says_why() {
    let mut app = app_with(fixture(9, 0, false), true);
    app.take(Err(memlog::Error::Usage("store busy".into())));
    let frame = render::buffer_text(&render::render_buffer(&app.screen(), 80, 24));
    assert!(
        frame.contains("refresh failed") && frame.contains("Total 10"),
        "{frame}"
    );
}

/// Wide characters take their two columns once (the frame stays its size), and a stored
/// bidirectional override reaches the terminal as a space, as in every other command.
#[test]
fn wide_and_bidirectional_text_keeps_the_frame() {
    let env = Env::with_project();
    let id = env.add("cjk", "日本語のサマリー 🚀🔥 long enough to be cut");
    env.forge_update(
        &id,
        "2026-11-22T11:00:00.000Z",
        serde_json::json!({"summary": "pay \u{202e}evil\u{202c} ok"}),
    );
    let frame = once(&env, &["--size", "120x40"]);
    assert!(!frame.contains('\u{202e}'), "{frame}");
    let widest = frame
        .lines()
        .map(|l| {
            l.chars()
                .map(|c| unicode_width::UnicodeWidthChar::width(c).unwrap_or(0))
                .sum::<usize>()
        })
        .max()
        .unwrap_or(0);
    assert!(widest <= 120, "{widest}: {frame}");
}

/// A growth series that spans years is labelled with whole dates.
#[test]
fn a_series_over_years_shows_its_years() {
    let env = Env::with_project();
    env.add_at("2024-03-01T00:00:00Z", "old", "An old entry", "0.9");
    env.add("new", "A new entry");
    let frame = once(&env, &["--range", "all", "--size", "120x40"]);
    assert!(
        frame.contains("2024-03-01") && frame.contains("2026-11-22"),
        "{frame}"
    );
}

/// With several projects, an expiring entry's row names its project.
#[test]
fn expiring_rows_name_their_project_with_all() {
    let env = Env::new();
    for p in ["alpha", "beta"] {
        env.run(&["init", p]).ok();
        let mut args = crate::common::add_args(
            ("state", "metric"),
            "pool",
            "Pool size is 20",
            "Body.",
            "0.9",
            "artifact:deploy/db.yaml:pool size",
        );
        args.extend([
            "--valid-from",
            "2026-11-20T00:00:00Z",
            "--valid-to",
            "2026-11-25T00:00:00Z",
            p,
        ]);
        env.run(&args).ok();
    }
    let frame = once(&env, &["--all", "--size", "160x48"]);
    // Rows of the expiry panel (days left, then the entry), not of recent operations.
    for p in ["2d  alpha/m-", "2d  beta/m-"] {
        assert!(frame.contains(p), "{p}: {frame}");
    }
    // `stats --all` names them the same way.
    let text = env.run_at(NOW, &["stats", "--all"]).ok().stdout;
    for p in ["2d  alpha/m-", "2d  beta/m-"] {
        assert!(text.contains(p), "{p}: {text}");
    }
}
