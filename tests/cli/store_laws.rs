//! Law 3 on the real store: a log fed to the fjall store in arbitrary chunks, one session
//! (process) per chunk, then rewritten the ways git rewrites it, always projects to what the pure
//! fold of its set of events gives, and to what a store rebuilt from scratch holds.
//!
//! The histories are written by three simulated writers, each on its own replica, with every
//! event type the writer produces (create, one-event supersede, two-line legacy supersede,
//! deprecate, update of several fields, pin, unpin, resolve) and legacy ten-character entry ids.
//! Every history holds at least one conflict (two writers extending the same head) and one
//! resolve whose parents are both heads; the test asserts the fold saw them.

use crate::common::{session, store_dump, temp_project};
use memlog::project::Project;
use memlog::store::Store;
use projections::{
    Dimension, EntryFields, EntryState, Event, EventData, EventType, Evidence, EvidenceType, Kind,
    Lifecycle, Section, Status, decode_line, project,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Actor names of equal length, so that an event re-signed by another writer keeps its length.
const ACTORS: [&str; 3] = ["agent-0", "agent-1", "agent-2"];

fn fields(n: usize, v: u8) -> EntryFields {
    EntryFields {
        section: Section::ALL[usize::from(v) % Section::ALL.len()],
        kind: Kind::ALL[n % Kind::ALL.len()],
        subject: format!("svc-{}.module", v % 4),
        scope: ["repo", "org", "service:auth", "environment:prod"][n % 4].into(),
        summary: format!("Entry number {n}"),
        content: format!("Content of entry {n}\nsecond line"),
        tags: vec![format!("t{}", v % 3)],
        confidence: f64::from(v % 11) / 10.0,
        evidence: vec![Evidence {
            kind: EvidenceType::ALL[n % EvidenceType::ALL.len()],
            uri: format!("src/file{n}.rs"),
            note: "why".into(),
        }],
        related_entries: vec![],
        valid_from: None,
        valid_to: None,
        review_interval: None,
    }
}

/// The same create with the ten-character entry id of logs written before ids grew to 130 bits
/// (the first twelve characters of the long id), and its event id recomputed.
fn legacy(create: &Event) -> Event {
    let mut value = create.to_value().unwrap_or_else(|e| panic!("{e}"));
    let short = create.entry[..12].to_owned();
    if let Value::Object(map) = &mut value {
        map.remove("id");
        map.insert("entry".into(), Value::String(short));
    }
    let body =
        projections::canonical::to_canonical_string(&value).unwrap_or_else(|e| panic!("{e}"));
    let mut hasher = blake3::Hasher::new();
    hasher.update(projections::event::EVENT_DOMAIN);
    hasher.update(body.as_bytes());
    if let Value::Object(map) = &mut value {
        map.insert(
            "id".into(),
            Value::String(hasher.finalize().to_hex().to_string()),
        );
    }
    let line =
        projections::canonical::to_canonical_string(&value).unwrap_or_else(|e| panic!("{e}"));
    decode_line(&line).unwrap_or_else(|e| panic!("legacy create does not verify: {e}"))
}

/// What an `update` sets, by `v`: one or two fields of several types, or the status.
fn update_set(v: u8) -> Map<String, Value> {
    let set = match v % 7 {
        0 => json!({"confidence": f64::from(v % 101) / 100.0}),
        1 => json!({"tags": [format!("t{}", v % 3), "x"]}),
        2 => json!({"summary": format!("Summary changed to {v}")}),
        3 => json!({"valid_to": format!("2027-0{}-01T00:00:00.000Z", 1 + v % 9)}),
        4 => json!({"review_interval": format!("P{}D", 1 + v % 90)}),
        5 => json!({"status": if v.is_multiple_of(2) { "draft" } else { "active" }}),
        _ => json!({"subject": format!("moved-{}", v % 5), "scope": "org"}),
    };
    match set {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// One step of the random part of a history.
#[derive(Debug, Clone)]
struct Step {
    writer: usize,
    action: u8,
    pick: usize,
    v: u8,
}

fn step() -> impl Strategy<Value = Step> {
    (0usize..3, 0u8..12, any::<usize>(), any::<u8>()).prop_map(|(writer, action, pick, v)| Step {
        writer,
        action,
        pick,
        v,
    })
}

/// Three writers, each with its own replica of the log, and the record of every event they
/// wrote (acknowledged), in write order.
#[derive(Default)]
struct Writers {
    views: [Vec<Event>; 3],
    seen: [BTreeSet<String>; 3],
    acked: Vec<Event>,
    clock: usize,
}

impl Writers {
    /// Three writes share each timestamp, so ties broken by event id are common.
    fn at(&mut self) -> String {
        let t = self.clock / 3;
        self.clock += 1;
        format!(
            "2026-11-22T10:{:02}:{:02}.{:03}Z",
            t / 60 % 60,
            t % 60,
            (t * 7) % 1000
        )
    }

    fn write(&mut self, w: usize, e: Event) {
        self.seen[w].insert(e.id.clone());
        self.views[w].push(e.clone());
        self.acked.push(e);
    }

    /// Writer `w` merges another replica's log (a pull).
    fn pull(&mut self, w: usize, from: usize) {
        let theirs = self.views[from].clone();
        for e in theirs {
            if self.seen[w].insert(e.id.clone()) {
                self.views[w].push(e);
            }
        }
    }

    fn state(&self, w: usize, entry: &str) -> Option<EntryState> {
        project(&self.views[w])
            .entries
            .get(entry)
            .and_then(|f| f.state.clone())
    }

    fn entries(&self, w: usize) -> Vec<String> {
        project(&self.views[w])
            .entries
            .into_iter()
            .filter(|(_, f)| f.state.is_some())
            .map(|(id, _)| id)
            .collect()
    }

    fn build(&mut self, w: usize, entry: &str, parents: Vec<String>, data: EventData) -> Event {
        let at = self.at();
        Event::build(entry, ACTORS[w], &at, parents, data).unwrap_or_else(|e| panic!("{e}"))
    }

    fn create(&mut self, w: usize, v: u8) -> String {
        let n = self.acked.len();
        let e = self.build(
            w,
            "",
            vec![],
            EventData::Create {
                fields: fields(n, v),
                status: if v.is_multiple_of(5) {
                    Status::Draft
                } else {
                    Status::Active
                },
            },
        );
        let e = if v.is_multiple_of(4) { legacy(&e) } else { e };
        let id = e.entry.clone();
        self.write(w, e);
        id
    }

    /// Writer `w` changes `entry` the way the CLI would, from what its replica shows; the
    /// writer's preconditions apply (nothing is pinned twice, nothing superseded twice).
    /// Returns false when the change does not apply.
    fn change(&mut self, w: usize, action: u8, entry: &str, v: u8) -> bool {
        let Some(state) = self.state(w, entry) else {
            return false;
        };
        let heads = state.heads.clone();
        let replaceable = matches!(state.status, Status::Active | Status::Draft);
        let n = self.acked.len();
        let data = match action {
            // One event: the supersede creates its replacement.
            0 if replaceable => {
                let at = self.at();
                let reason = (v.is_multiple_of(2)).then(|| "replaced".to_owned());
                let e = Event::supersede_with_replacement(
                    entry,
                    ACTORS[w],
                    &at,
                    heads,
                    fields(n, v),
                    Status::Active,
                    reason,
                )
                .unwrap_or_else(|e| panic!("{e}"));
                self.write(w, e);
                return true;
            }
            // Two lines, as older versions wrote it: a create, then a supersede naming it.
            1 if replaceable => {
                let by = self.create(w, v | 1);
                EventData::Supersede {
                    by,
                    reason: Some("legacy".into()),
                    replacement: None,
                }
            }
            2 if replaceable => EventData::Deprecate {
                reason: (v.is_multiple_of(2)).then(|| "old".to_owned()),
            },
            3 => EventData::Update {
                set: update_set(v),
                reason: (v.is_multiple_of(3)).then(|| "edit".to_owned()),
            },
            4 if state.pinned => EventData::Unpin { reason: None },
            4 => EventData::Pin {
                reason: Some("keep".into()),
            },
            // Archival and restore: the entry's life ends and resumes (lifespan statistics).
            6 => EventData::Transition {
                to: if state.lifecycle == Lifecycle::Archived {
                    Lifecycle::Active
                } else {
                    Lifecycle::Archived
                },
                reason: "lifecycle".into(),
            },
            // Joins the heads, whether they disagree (a conflict) or agreed.
            5 if state.heads.len() > 1 => EventData::Resolve {
                set: if v.is_multiple_of(2) {
                    Map::new()
                } else {
                    update_set(v)
                },
                reason: Some("merged".into()),
            },
            _ => return false,
        };
        let e = self.build(w, entry, heads, data);
        self.write(w, e);
        true
    }

    fn random(&mut self, s: &Step) {
        let w = s.writer;
        match s.action {
            0..=1 => {
                self.create(w, s.v);
            }
            2..=8 => {
                let entries = self.entries(w);
                if entries.is_empty() {
                    self.create(w, s.v);
                    return;
                }
                let entry = entries[s.pick % entries.len()].clone();
                let action = match s.action {
                    2 => 0,
                    3 => 1,
                    4 => 2,
                    5 => 3,
                    6 => 6,
                    7 => 4,
                    _ => 5,
                };
                self.change(w, action, &entry, s.v);
            }
            _ => self.pull(w, (w + 1 + s.pick % 2) % 3),
        }
    }

    /// Two writers extend the same head of one entry with different changes (a conflict); the
    /// third pulls both and resolves it with parents = both heads.
    fn conflict_and_resolve(&mut self, v: u8) {
        let (r, a, b) = (
            usize::from(v) % 3,
            (usize::from(v) + 1) % 3,
            (usize::from(v) + 2) % 3,
        );
        let entry = self.create(a, 3);
        self.pull(b, a);
        // supersede vs deprecate vs update vs pin, in every pairing.
        let ops = [0u8, 2, 3, 4];
        let first = ops[usize::from(v / 3) % 4];
        let mut second = ops[usize::from(v / 12) % 4];
        if first == second && matches!(first, 2 | 4) {
            // Two deprecations, or two pins, agree: no conflict. An update disagrees.
            second = 3;
        }
        assert!(self.change(a, first, &entry, v));
        assert!(self.change(b, second, &entry, v.wrapping_add(1)));
        self.pull(r, a);
        self.pull(r, b);
        let heads = self.state(r, &entry).map(|s| s.heads).unwrap_or_default();
        assert_eq!(heads.len(), 2, "the scripted conflict has two heads");
        assert!(self.change(r, 5, &entry, v));
    }
}

/// Every history: the random steps with the scripted conflict and resolve at position `at`.
fn history(steps: &[Step], at: usize, v: u8) -> Writers {
    let mut w = Writers::default();
    let at = at % (steps.len() + 1);
    for s in &steps[..at] {
        w.random(s);
    }
    w.conflict_and_resolve(v);
    for s in &steps[at..] {
        w.random(s);
    }
    w
}

fn lines_of(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.to_line().unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

fn text(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut x = seed | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = usize::try_from(x % (i as u64 + 1)).unwrap_or(0);
        v.swap(i, j);
    }
}

/// The events in the log file, decoded here, independently of the store.
fn events_in(p: &Project) -> Vec<Event> {
    std::fs::read_to_string(p.log_path())
        .unwrap_or_else(|e| panic!("{e}"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| decode_line(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The store holds exactly the pure fold of `events`: entries, states (status, heads, fields),
/// versions, audit records, statistics, index dimensions and the events themselves.
fn assert_store_is_the_fold(store: &Store, events: &[Event], when: &str) {
    let p = project(events);
    let ids: BTreeSet<&str> = events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(store.event_count().ok(), Some(ids.len()), "{when}: events");
    let expected: BTreeMap<&str, &EntryState> = p
        .entries
        .iter()
        .filter_map(|(id, f)| f.state.as_ref().map(|s| (id.as_str(), s)))
        .collect();
    let stored = store
        .ids_with_prefix("m-", usize::MAX)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        stored.iter().map(String::as_str).collect::<Vec<_>>(),
        expected.keys().copied().collect::<Vec<_>>(),
        "{when}: entries"
    );
    for (id, folded) in &p.entries {
        let state = store.entry(id).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            state.as_ref(),
            folded.state.as_ref(),
            "{when}: state of {id}"
        );
        let mut versions = folded.versions.clone();
        projections::fill_changes(&mut versions);
        assert_eq!(
            store.versions(id).unwrap_or_else(|e| panic!("{e}")),
            versions,
            "{when}: versions of {id}"
        );
        assert_eq!(
            store.audit(Some(id)).unwrap_or_else(|e| panic!("{e}")),
            folded.audit,
            "{when}: audit of {id}"
        );
    }
    assert_eq!(store.stats().ok().as_ref(), Some(&p.stats), "{when}: stats");
    let hot = |keep: &dyn Fn(&EntryState) -> bool| -> Vec<String> {
        expected
            .values()
            .filter(|s| !s.is_cold() && keep(s))
            .map(|s| s.id.clone())
            .collect()
    };
    let index = |dim: &str, value: &str| {
        let mut ids = store.ids_with(dim, value).unwrap_or_else(|e| panic!("{e}"));
        ids.sort();
        ids
    };
    for status in Status::ALL {
        assert_eq!(
            index("status", status.as_str()),
            hot(&|s| s.status == *status),
            "{when}: index status={status:?}"
        );
    }
    assert_eq!(
        index("conflict", "true"),
        hot(&|s| s.in_conflict()),
        "{when}: index conflict"
    );
    assert_eq!(
        index("pinned", "true"),
        hot(&|s| s.pinned),
        "{when}: index pinned"
    );
}

/// Opens a session on the log as it is (an incremental catch-up), checks the store against the
/// fold of the file's events and against a store built in a fresh directory from the same set
/// (in another order); returns the dump.
/// Stores built from scratch are cached by event set: a set seen before is not built again.
fn checkpoint(
    p: &Project,
    seed: u64,
    when: &str,
    fresh: &mut BTreeMap<BTreeSet<String>, String>,
) -> String {
    let events = events_in(p);
    let s = session(p);
    assert_store_is_the_fold(s.store(), &events, when);
    let incremental = store_dump(&s);
    drop(s);
    let set: BTreeSet<String> = events.iter().map(|e| e.id.clone()).collect();
    let rebuilt = fresh.entry(set).or_insert_with(|| {
        let (_dir, fresh) = temp_project();
        let mut lines = lines_of(&events);
        shuffle(&mut lines, seed);
        std::fs::write(fresh.log_path(), text(&lines)).unwrap_or_else(|e| panic!("{e}"));
        store_dump(&session(&fresh))
    });
    assert_eq!(
        &incremental, rebuilt,
        "{when}: incremental store != store built from scratch"
    );
    incremental
}

/// Replaces the log as git does: a new file renamed over it.
fn rename_over(p: &Project, content: &str) {
    let tmp = p.log_path().with_extension("jsonl.new");
    std::fs::write(&tmp, content).unwrap_or_else(|e| panic!("{e}"));
    std::fs::rename(&tmp, p.log_path()).unwrap_or_else(|e| panic!("{e}"));
}

/// Rewrites the log in place with content of the same length, and puts its modification time
/// back, as a fast tool within one timestamp tick would leave it.
fn rewrite_in_place(p: &Project, content: &str) {
    use std::io::{Seek, Write};
    let path = p.log_path();
    let before = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        before.len(),
        content.len() as u64,
        "not a same-length rewrite"
    );
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{e}"));
    f.seek(std::io::SeekFrom::Start(0))
        .unwrap_or_else(|e| panic!("{e}"));
    f.write_all(content.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    if let Ok(mtime) = before.modified() {
        let _ = f.set_modified(mtime);
    }
    f.sync_all().unwrap_or_else(|e| panic!("{e}"));
}

/// The same event written by another writer: another event of exactly the same length.
fn resigned(e: &Event) -> Option<Event> {
    let actor = ACTORS
        .iter()
        .find(|a| **a != e.actor)
        .copied()
        .unwrap_or(ACTORS[0]);
    let other = Event::build(&e.entry, actor, &e.at, e.parents.clone(), e.data.clone()).ok()?;
    let other = if e.entry.len() < other.entry.len() {
        legacy(&other)
    } else {
        other
    };
    (other.to_line().ok()?.len() == e.to_line().ok()?.len()).then_some(other)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn store_equals_fold_through_chunks_and_git_rewrites(
        steps in prop::collection::vec(step(), 6..36),
        scripted_at in any::<usize>(),
        v in any::<u8>(),
        cuts in prop::collection::vec((any::<prop::sample::Index>(), any::<bool>()), 1..6),
        seed in any::<u64>(),
        dups in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        victim in any::<prop::sample::Index>(),
        small in any::<bool>(),
    ) {
        // With tiny thresholds, the same history takes every catch-up strategy (chunked
        // writes, a replay for a large growth); the law holds either way.
        if small {
            memlog::store::tuning::shrink_for_tests();
        } else {
            memlog::store::tuning::restore_defaults();
        }
        let w = history(&steps, scripted_at, v);
        // The history holds a fork (two events of one entry on the same parent), a resolve
        // naming two heads, and the fold shows the conflict.
        let fork = w.acked.iter().any(|a| w.acked.iter().any(|b| {
            a.id != b.id && a.entry == b.entry && a.parents.iter().any(|p| b.parents.contains(p))
        }));
        let resolve = w.acked.iter().any(|e| e.event_type() == EventType::Resolve && e.parents.len() >= 2);
        let opened = project(&w.acked).entries.values().flat_map(|f| &f.audit)
            .any(|a| a.dimension == Dimension::Conflict && a.to == "open");
        prop_assert!(fork && resolve && opened, "fork {}, resolve {}, conflict shown {}", fork, resolve, opened);

        // The log of writers 0 and 1 (in write order) reaches the store first; writer 2's
        // replica is merged in later.
        let ours: Vec<Event> = w.acked.iter()
            .filter(|e| w.seen[0].contains(&e.id) || w.seen[1].contains(&e.id))
            .cloned().collect();
        let ours_lines = lines_of(&ours);
        let (_dir, p) = temp_project();
        let mut fresh = BTreeMap::new();

        // Appended in chunks, one session per chunk; a chunk sometimes lacks only its last
        // newline, which the next session adds back.
        let mut bounds: Vec<(usize, bool)> = cuts.iter().map(|(i, nl)| (i.index(ours_lines.len() + 1), *nl)).collect();
        bounds.push((ours_lines.len(), true));
        bounds.sort_unstable();
        let mut written = 0;
        for (upto, drop_newline) in bounds {
            if upto <= written {
                continue;
            }
            let mut chunk = text(&ours_lines[written..upto]);
            if drop_newline {
                chunk.pop();
            }
            memlog::log::durable::append(&p.log_path(), chunk.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
            written = upto;
            let s = session(&p);
            if drop_newline {
                prop_assert_eq!(s.report.quarantined.as_ref().map(|q| q.kept), Some(true));
            }
            assert_store_is_the_fold(s.store(), &ours[..upto], &format!("after {upto} lines"));
        }
        prop_assert_eq!(std::fs::read_to_string(p.log_path()).ok(), Some(text(&ours_lines)));
        checkpoint(&p, seed, "chunks", &mut fresh);

        // A merge: the union with writer 2's replica, reordered, lines duplicated, renamed over.
        let mut merged = ours_lines.clone();
        for l in lines_of(&w.views[2]) {
            if !merged.contains(&l) {
                merged.push(l);
            }
        }
        for d in &dups {
            merged.push(merged[d.index(merged.len())].clone());
        }
        shuffle(&mut merged, seed.rotate_left(17));
        rename_over(&p, &text(&merged));
        checkpoint(&p, seed ^ 1, "merge", &mut fresh);

        // A checkout of an older commit (events go away), then back.
        rename_over(&p, &text(&ours_lines[..ours_lines.len() / 2]));
        checkpoint(&p, seed ^ 2, "checkout older", &mut fresh);
        rename_over(&p, &text(&merged));
        let merged_dump = checkpoint(&p, seed ^ 3, "checkout back", &mut fresh);

        // Same length, same inode, same mtime: two lines of equal length trade places (the
        // same set), then one line is replaced by another event of the same length.
        if let Some((i, j)) = (0..merged.len())
            .flat_map(|i| (i + 1..merged.len()).map(move |j| (i, j)))
            .find(|&(i, j)| merged[i].len() == merged[j].len() && merged[i] != merged[j])
        {
            let mut swapped = merged.clone();
            swapped.swap(i, j);
            rewrite_in_place(&p, &text(&swapped));
            prop_assert_eq!(checkpoint(&p, seed ^ 4, "swap in place", &mut fresh), merged_dump.clone());
        }
        let current: Vec<String> = std::fs::read_to_string(p.log_path()).unwrap_or_default().lines().map(str::to_owned).collect();
        let start = victim.index(current.len());
        let replaced = (0..current.len()).map(|k| (start + k) % current.len()).find_map(|k| {
            let e = decode_line(&current[k]).ok()?;
            // Another event, not merely another copy of one the log holds.
            resigned(&e)
                .filter(|o| o.to_line().is_ok_and(|l| !current.contains(&l)))
                .map(|o| (k, o))
        });
        prop_assert!(replaced.is_some(), "some line can be re-signed");
        if let Some((k, other)) = replaced {
            let mut edited = current.clone();
            edited[k] = other.to_line().unwrap_or_default();
            rewrite_in_place(&p, &text(&edited));
            let edited_dump = checkpoint(&p, seed ^ 5, "line replaced in place", &mut fresh);
            prop_assert_ne!(&edited_dump, &merged_dump);
        }

        // An explicit rebuild of the same directory changes nothing.
        let mut s = session(&p);
        let before = store_dump(&s);
        s.rebuild().unwrap_or_else(|e| panic!("{e}"));
        prop_assert_eq!(store_dump(&s), before);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Law 3 through a compaction: the log up to some line reaches the store one session at a
    /// time, a compaction builds a new store from the log up to a later line, more lines are
    /// appended (and applied to the old store, or not) before it swaps the new store in, and the
    /// store is then the fold of the whole log, byte for byte the store a rebuild makes. When
    /// the log is rewritten instead of appended to in between, the new store is not swapped in
    /// and the store is still the fold.
    #[test]
    fn a_compacted_store_is_the_fold_whatever_was_written_meanwhile(
        steps in prop::collection::vec(step(), 6..30),
        scripted_at in any::<usize>(),
        v in any::<u8>(),
        cuts in (any::<prop::sample::Index>(), any::<prop::sample::Index>()),
        applied_meanwhile in any::<bool>(),
        rewritten in any::<bool>(),
        seed in any::<u64>(),
    ) {
        memlog::store::tuning::restore_defaults();
        let w = history(&steps, scripted_at, v);
        let lines = lines_of(&w.acked);
        let (a, b) = {
            let (x, y) = (cuts.0.index(lines.len() + 1), cuts.1.index(lines.len() + 1));
            (x.min(y), x.max(y))
        };
        let (_dir, p) = temp_project();
        let append = |from: usize, to: usize| {
            memlog::log::durable::append(&p.log_path(), text(&lines[from..to]).as_bytes())
                .unwrap_or_else(|e| panic!("{e}"));
        };
        append(0, a);
        drop(session(&p));
        append(a, b);
        let built = memlog::store::compact::build(&p)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no other compaction runs"));
        if rewritten && b >= 2 {
            // The lines in another order, as a checkout or a merge writes them.
            let mut other = lines[..b].to_vec();
            shuffle(&mut other, seed);
            other.rotate_left(1);
            prop_assume!(other != lines[..b]);
            rename_over(&p, &text(&other));
            let outcome = memlog::store::compact::install(&p, built, std::time::Duration::from_secs(10))
                .unwrap_or_else(|e| panic!("{e}"));
            prop_assert_eq!(outcome, memlog::store::compact::Outcome::Stale);
            let s = session(&p);
            assert_store_is_the_fold(s.store(), &w.acked[..b], "after a stale compaction");
            return Ok(());
        }
        append(b, lines.len());
        if applied_meanwhile {
            drop(session(&p));
        }
        let outcome = memlog::store::compact::install(&p, built, std::time::Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{e}"));
        let caught_up = lines[b..].iter().collect::<BTreeSet<_>>().len();
        prop_assert_eq!(
            outcome,
            memlog::store::compact::Outcome::Compacted {
                built: lines[..b].iter().collect::<BTreeSet<_>>().len(),
                caught_up,
            }
        );
        let mut s = session(&p);
        assert_store_is_the_fold(s.store(), &w.acked, "after the compaction");
        let compacted = store_dump(&s);
        s.rebuild().unwrap_or_else(|e| panic!("{e}"));
        prop_assert_eq!(store_dump(&s), compacted);
    }
}
