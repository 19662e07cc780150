use crate::common::{Env, session, store_dump};
use memlog::project::Project;
use memlog::store::session::Session;
use proptest::prelude::*;
use std::time::Duration;

/// The store after an incremental catch-up with the log.
fn dump(project: &Project) -> String {
    store_dump(&session(project))
}

/// The store after throwing the projections away and replaying the whole log.
fn rebuilt_dump(project: &Project) -> String {
    let mut s = session(project);
    s.rebuild().unwrap_or_else(|e| panic!("{e}"));
    store_dump(&s)
}

fn project(env: &Env) -> Project {
    env.demo_project()
}

/// A small history written through the CLI, one process per command.
fn history(env: &Env) -> Vec<String> {
    let a = env.add("a", "first");
    let b = env.add("b", "second");
    env.run_at("2026-11-23T00:00:00Z", &["pin", &a]).ok();
    env.run_at(
        "2026-11-23T01:00:00Z",
        &["update", &b, "--confidence", "0.3", "--tag", "x"],
    )
    .ok();
    env.run_at(
        "2026-11-23T02:00:00Z",
        &["supersede", &a, "--summary", "third"],
    )
    .ok();
    env.run_at("2026-11-23T03:00:00Z", &["deprecate", &b]).ok();
    let lines: Vec<String> = std::fs::read_to_string(env.log())
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    // Two creates, a pin, an update, a supersede (one event) and a deprecate.
    assert_eq!(lines.len(), 6, "{lines:#?}");
    lines
}

#[test]
fn incremental_catch_up_across_processes_equals_rebuild() {
    let env = Env::with_project();
    history(&env);
    let p = project(&env);
    let incremental = dump(&p);
    assert!(incremental.contains("entries\tm-"));
    assert_eq!(incremental, rebuilt_dump(&p));
    // A deleted .memlog/ is not an error: it is rebuilt, to the same bytes.
    std::fs::remove_dir_all(p.state_dir()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(dump(&p), incremental);
}

#[test]
fn truncation_at_every_byte_offset_recovers_the_longest_complete_prefix() {
    // Nothing else writes these logs: no need to watch each torn tail for a writer.
    memlog::log::durable::watch_torn_tails_for(Duration::ZERO);
    let env = Env::with_project();
    let lines = history(&env);
    let full = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    let p = project(&env);
    // Every offset through the recovery path itself (fast); every 97th also through a full
    // store session, which must then hold exactly the complete lines.
    for cut in 0..=full.len() {
        let _ = std::fs::remove_file(p.quarantine_path());
        std::fs::create_dir_all(p.state_dir()).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(p.log_path(), &full.as_bytes()[..cut]).unwrap_or_else(|e| panic!("{e}"));
        // A last line that lacks only its newline is a whole event: it is kept, newline added.
        let whole = cut < full.len()
            && full.as_bytes()[cut] == b'\n'
            && cut > 0
            && full.as_bytes()[cut - 1] != b'\n';
        let kept_len = if whole { cut + 1 } else { cut };
        let complete = full[..kept_len].matches('\n').count();
        let prefix_len = full[..kept_len].rfind('\n').map_or(0, |i| i + 1);
        if cut % 97 == 0 || cut == full.len() {
            let _ = std::fs::remove_dir_all(p.store_dir());
            let session = Session::open(&p, Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            assert_eq!(
                session.store().event_count().unwrap_or(usize::MAX),
                complete,
                "cut at {cut}"
            );
        } else {
            memlog::store::session::recover_torn_tail(&p)
                .unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            let buf = memlog::log::read::read_complete(&p.log_path(), 0)
                .unwrap_or_else(|e| panic!("{e}"));
            let events = memlog::log::read::decode_all(&p.log_path(), &buf, 1, 0)
                .unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            assert_eq!(events.len(), complete, "cut at {cut}");
        }
        let kept = std::fs::read(p.log_path()).unwrap_or_default();
        assert_eq!(kept, full.as_bytes()[..prefix_len].to_vec(), "cut at {cut}");
        let q = std::fs::read(p.quarantine_path()).unwrap_or_default();
        if prefix_len < kept_len {
            assert_eq!(
                q,
                format!("{}\n", &full[prefix_len..cut]).into_bytes(),
                "cut at {cut}"
            );
        } else {
            assert!(q.is_empty(), "cut at {cut}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Law 3: applying the log in arbitrary chunks, one store session (process) per chunk,
    /// then rewriting it in another order (a merge), equals a full rebuild.
    #[test]
    fn chunked_and_rewritten_logs_equal_rebuild(cuts in prop::collection::vec(0usize..8, 1..5), seed in any::<u64>()) {
        let env = Env::with_project();
        let lines = history(&env);
        let p = project(&env);
        let reference = rebuilt_dump(&p);
        let _ = std::fs::remove_dir_all(p.state_dir());
        std::fs::write(p.log_path(), "").unwrap_or_else(|e| panic!("{e}"));
        let mut written = 0;
        for c in cuts.iter().chain(std::iter::once(&lines.len())) {
            let upto = (*c).clamp(written, lines.len());
            let chunk: String = lines[written..upto].iter().map(|l| format!("{l}\n")).collect();
            memlog::log::durable::append(&p.log_path(), chunk.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
            written = upto;
            drop(dump(&p));
        }
        prop_assert_eq!(&dump(&p), &reference);
        // Rewrite: same set, another order, one line duplicated (what a union merge can produce).
        let mut shuffled = lines.clone();
        let n = shuffled.len();
        for i in (1..n).rev() {
            let j = usize::try_from((seed.rotate_left(u32::try_from(i % 64).unwrap_or(0))) % (i as u64 + 1)).unwrap_or(0);
            shuffled.swap(i, j);
        }
        shuffled.push(lines[usize::try_from(seed % n as u64).unwrap_or(0)].clone());
        std::fs::write(p.log_path(), shuffled.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap_or_else(|e| panic!("{e}"));
        prop_assert_eq!(&dump(&p), &reference);
    }
}

/// A JSON Lines import of `n` creates, then supersedes of two of them, each line distinct.
fn import_lines(n: usize) -> String {
    let mut text = String::new();
    for i in 0..n {
        let entry = serde_json::json!({
            "section": "learnings", "kind": "other",
            "subject": format!("bulk.{}", i % 7), "scope": "repo",
            "summary": format!("bulk entry {i} about retries and queues"),
            "content": "Imported in bulk.", "confidence": 0.5 + (i % 5) as f64 / 10.0,
            "evidence": [{"type": "ticket", "uri": "https://github.com/acme/app/issues/1", "note": "n"}],
        });
        text.push_str(&serde_json::json!({"operation": "create", "entry": entry}).to_string());
        text.push('\n');
    }
    text
}

#[test]
fn a_bulk_import_takes_every_catch_up_path_to_the_same_store() {
    // Tiny thresholds: appends of three updates, catch-ups in chunks of two events, a replay
    // of the whole log once an import outgrows the store. The default run takes none of them.
    let run = |small: bool| {
        let env = Env::with_project();
        env.add("seed", "an entry before the import");
        let input = env.root().join("import.jsonl");
        std::fs::write(&input, import_lines(40)).unwrap_or_else(|e| panic!("{e}"));
        let path = input.to_string_lossy().into_owned();
        let mut cmd = env.command(&["apply", "demo", &path, "--json"]);
        if small {
            cmd.env("MEMLOG_TEST_SMALL_BATCHES", "1");
        }
        let report = crate::common::output(cmd.output()).ok().json();
        // A second, smaller import after it: an incremental catch-up in chunks.
        let more = env.root().join("more.jsonl");
        let tail: String = import_lines(45)
            .lines()
            .skip(40)
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&more, tail).unwrap_or_else(|e| panic!("{e}"));
        let mut cmd = env.command(&["apply", "demo", &more.to_string_lossy(), "--json"]);
        if small {
            cmd.env("MEMLOG_TEST_SMALL_BATCHES", "1");
        }
        crate::common::output(cmd.output()).ok();
        let p = project(&env);
        (report, dump(&p), rebuilt_dump(&p))
    };
    let (report, small, small_rebuilt) = run(true);
    let (default_report, default, default_rebuilt) = run(false);
    assert_eq!(
        small, small_rebuilt,
        "incremental != rebuilt with tiny thresholds"
    );
    assert_eq!(default, default_rebuilt);
    assert_eq!(small, default, "the thresholds changed the store");
    assert_eq!(report, default_report, "the thresholds changed the report");
    assert!(small.matches("entries\tm-").count() >= 46, "{small}");
}

/// A credential that reached the log without memlog's checks stays redacted through a bulk
/// import's replay of the whole log, which scans again only the entries the store it replaces
/// had found holding one (every other line was scanned when applied, or checked by the import).
#[test]
fn a_credential_in_the_log_stays_redacted_through_a_bulk_imports_replay() {
    const FAKE_TOKEN: &str = crate::common::PULLED_TOKEN;
    let env = Env::with_project();
    let id = env.add("auth.deploy", "Deploy token policy");
    env.forge_credential(&id);
    // The store applies the pulled line (and redacts it) before the import.
    assert!(!env.run(&["list"]).ok().stdout.contains(FAKE_TOKEN));
    let input = env.root().join("import.jsonl");
    std::fs::write(&input, import_lines(40)).unwrap_or_else(|e| panic!("{e}"));
    let mut cmd = env.command(&["apply", "demo", &input.to_string_lossy()]);
    // Tiny thresholds: the import outgrows the store, which is replayed from the whole log.
    cmd.env("MEMLOG_TEST_SMALL_BATCHES", "1");
    crate::common::output(cmd.output()).ok();
    for args in [
        vec!["show", id.as_str()],
        vec!["dump"],
        vec!["query", "deploy"],
    ] {
        let r = env.run(&args).ok();
        assert!(
            !r.stdout.contains(FAKE_TOKEN),
            "{args:?} printed: {}",
            r.stdout
        );
    }
    assert!(
        env.run(&["show", &id])
            .ok()
            .stdout
            .contains("deploy token [redacted]")
    );
    let health = env.run(&["health"]);
    assert!(
        health.stdout.contains(&format!("memlog purge {id}")),
        "{}",
        health.stdout
    );
}

/// `dump` prints one record per line, keyspace, key and value apart by tabs: a binary value
/// (the text index's postings and features) is printed as hex, not as raw bytes that broke its
/// line and were replaced where they were not UTF-8.
#[test]
fn dump_prints_one_record_per_line() {
    let env = Env::with_project();
    history(&env);
    let out = env.run(&["dump"]).ok().stdout;
    let keyspaces = [
        "audit",
        "cold",
        "entries",
        "entry_events",
        "events",
        "index",
        "meta",
        "versions",
    ];
    let mut binary = 0;
    for line in out.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        assert!(
            fields.len() == 3 && keyspaces.contains(&fields[0]),
            "not a record: {line:?}"
        );
        assert!(!line.contains('\u{fffd}'), "a lossy value: {line:?}");
        if let Some(hex) = fields[2].strip_prefix("hex:") {
            binary += 1;
            assert!(
                hex.len() % 2 == 0 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
                "{line:?}"
            );
        }
    }
    assert!(binary > 0, "no binary value in {out}");
}

/// A confidence of `-0.0` is written to the log as `0` (its canonical form): the writer's store
/// holds what a replay of that line gives, not the sign it was given with.
#[test]
fn a_negative_zero_is_projected_as_the_log_holds_it() {
    let env = Env::with_project();
    let update = r#"{"operation":"create","entry":{"section":"decisions","kind":"decision","subject":"o.cn","scope":"repo","summary":"s","content":"c","evidence":[{"type":"doc","uri":"README.md","note":"n"}],"confidence":-0.0}}"#;
    let id = crate::common::stdin_run(&env, &["apply", "-"], update.as_bytes())
        .ok()
        .stdout
        .trim()
        .to_owned();
    env.run(&["update", &id, "--confidence=-0", "--reason", "again"])
        .ok();
    let project = project(&env);
    assert_eq!(dump(&project), rebuilt_dump(&project));
    let shown = env.run(&["show", &id, "--json"]).ok().json();
    assert!(
        shown["confidence"]
            .as_f64()
            .is_some_and(f64::is_sign_positive),
        "{shown}"
    );
}
