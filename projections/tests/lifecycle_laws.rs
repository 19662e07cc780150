//! Property tests for lifecycle events: purge and its tombstones, archive and restore.

use projections::{
    EntryFields, Event, EventData, Evidence, EvidenceType, Kind, Lifecycle, Section, Status,
    decode_line, fold_entry_of, project, tombstone,
};
use proptest::prelude::*;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

fn fields(n: u8) -> EntryFields {
    EntryFields {
        section: Section::ALL[usize::from(n) % 4],
        kind: Kind::ALL[usize::from(n) % 8],
        subject: format!("svc-{n}.module"),
        scope: "repo".into(),
        summary: format!("Summary {n} with zebra-{n}"),
        content: format!("Content {n}\nzebra-{n} on a second line"),
        tags: vec![format!("t{}", n % 3)],
        confidence: f64::from(n % 11) / 10.0,
        evidence: vec![Evidence {
            kind: EvidenceType::Code,
            uri: format!("src/zebra{n}.rs"),
            note: "why".into(),
        }],
        related_entries: vec!["m-0000000000".into()],
        valid_from: None,
        valid_to: None,
        review_interval: None,
    }
}

fn at(i: usize) -> String {
    format!("2026-01-01T00:{:02}:{:02}.000Z", i / 60 % 60, i % 60)
}

/// A linear history of one entry: a create, then changes chosen by `ops`.
fn history(seed: u8, ops: &[u8]) -> Vec<Event> {
    let mut events: Vec<Event> = Vec::new();
    let Ok(create) = Event::build(
        "",
        "agent-1",
        &at(0),
        vec![],
        EventData::Create {
            fields: fields(seed),
            status: Status::Active,
        },
    ) else {
        return events;
    };
    let entry = create.entry.clone();
    let mut head = create.id.clone();
    events.push(create);
    let mut lifecycle = Lifecycle::Active;
    let mut pinned = false;
    for (i, op) in ops.iter().enumerate() {
        let data = match op % 6 {
            0 => {
                let mut set = Map::new();
                set.insert("content".into(), Value::from(format!("zebra update {i}")));
                set.insert("confidence".into(), Value::from(0.5));
                EventData::Update { set, reason: None }
            }
            1 => {
                let mut set = Map::new();
                set.insert("summary".into(), Value::from(format!("zebra summary {i}")));
                EventData::Update {
                    set,
                    reason: Some("edit".into()),
                }
            }
            2 | 3 => {
                let to = match lifecycle {
                    Lifecycle::Active if op % 2 == 0 => Lifecycle::Decaying,
                    Lifecycle::Active | Lifecycle::Decaying => Lifecycle::Archived,
                    Lifecycle::Archived => Lifecycle::Active,
                    Lifecycle::Expired => continue,
                };
                lifecycle = to;
                EventData::Transition {
                    to,
                    reason: format!("decay score 0.{i}"),
                }
            }
            4 => {
                pinned = !pinned;
                if pinned {
                    EventData::Pin { reason: None }
                } else {
                    EventData::Unpin { reason: None }
                }
            }
            _ => EventData::EvidenceChecked {
                stale: vec![format!("src/zebra{seed}.rs")],
            },
        };
        if let Ok(e) = Event::build(&entry, "agent-2", &at(i + 1), vec![head.clone()], data) {
            head = e.id.clone();
            events.push(e);
        }
    }
    events
}

/// The purge of the entry of `events`, listing the tombstone digest of each event that holds
/// its content.
fn purge(events: &[Event], at_index: usize) -> (Event, BTreeMap<String, Event>) {
    let entry = events[0].entry.clone();
    let mut redacted = BTreeMap::new();
    let mut digests = BTreeMap::new();
    for e in events {
        if let Some(r) = tombstone::redact(e, &entry) {
            digests.insert(
                e.id.clone(),
                tombstone::digest(&r).unwrap_or_else(|e| panic!("{e}")),
            );
            redacted.insert(e.id.clone(), r);
        }
    }
    let head = events.last().map(|e| e.id.clone()).unwrap_or_default();
    let p = Event::build(
        &entry,
        "agent-3",
        &at(at_index),
        vec![head],
        EventData::Purge {
            reason: "leaked".into(),
            redacted: digests,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (p, redacted)
}

proptest! {
    /// Purge then gc: replacing every covered event by its tombstone gives the same
    /// projections (state, every version, audit), the tombstone lines decode and their
    /// digests match the purge, and no purged text is left in the log.
    #[test]
    fn purge_and_gc_keep_the_projections_minus_the_content(
        seed in any::<u8>(), ops in prop::collection::vec(any::<u8>(), 0..12), shuffle in any::<bool>(),
    ) {
        let mut events = history(seed, &ops);
        let (p, redacted) = purge(&events, ops.len() + 1);
        events.push(p.clone());
        let entry = events[0].entry.clone();
        let before = fold_entry_of(&entry, &events);
        let mut lines = Vec::new();
        let mut after_events = Vec::new();
        for e in &events {
            match redacted.get(&e.id) {
                Some(r) => {
                    let line = tombstone::line(r, &p.id).unwrap_or_else(|e| panic!("{e}"));
                    let decoded = decode_line(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
                    prop_assert_eq!(&decoded, r);
                    let (purge_id, rest) = tombstone::split(&line).unwrap_or_default();
                    prop_assert_eq!(&purge_id, &p.id);
                    let EventData::Purge { redacted: d, .. } = &p.data else { unreachable!() };
                    prop_assert_eq!(Some(&tombstone::digest_of_line(&rest)), d.get(&e.id));
                    lines.push(line);
                    after_events.push(decoded);
                }
                None => {
                    lines.push(e.to_line().unwrap_or_default());
                    after_events.push(e.clone());
                }
            }
        }
        if shuffle {
            after_events.reverse();
        }
        let after = fold_entry_of(&entry, &after_events);
        prop_assert_eq!(&before, &after);
        prop_assert!(after.state.as_ref().is_some_and(|s| s.purged));
        for v in &after.versions {
            prop_assert!(!serde_json::to_string(&v.state).unwrap_or_default().contains("zebra"));
        }
        let log = lines.join("\n");
        prop_assert!(!log.contains("zebra"), "{}", log);
        prop_assert_eq!(project(&events).stats, project(&after_events).stats);
    }

    /// A purge is final: whatever was written beside it on another branch (updates, pins,
    /// transitions, later than the purge or earlier), the union's state and every version of
    /// the entry hold no summary, content or evidence, in any order of the lines.
    #[test]
    fn nothing_written_beside_a_purge_shows_its_content(
        seed in any::<u8>(), ops in prop::collection::vec(any::<u8>(), 1..12),
        fork in any::<prop::sample::Index>(), shuffle in any::<bool>(),
    ) {
        let events = history(seed, &ops);
        let k = 1 + fork.index(events.len());
        let (p, _) = purge(&events[..k], k);
        let mut all = events.clone();
        all.push(p);
        if shuffle {
            all.reverse();
        }
        let folded = fold_entry_of(&events[0].entry, &all);
        let state = folded.state.unwrap_or_else(|| panic!("no state"));
        prop_assert!(state.purged);
        prop_assert!(!serde_json::to_string(&state).unwrap_or_default().contains("zebra"));
        for v in &folded.versions {
            prop_assert!(!serde_json::to_string(&v.state).unwrap_or_default().contains("zebra"));
        }
    }

    /// Archiving and restoring (any number of times, pins in between) keeps every field and
    /// relationship of the entry.
    #[test]
    fn archive_then_restore_preserves_every_field(seed in any::<u8>(), rounds in 1usize..5) {
        let ops: Vec<u8> = (0..rounds).flat_map(|_| [3u8, 3, 4]).collect();
        let events = history(seed, &ops);
        let folded = fold_entry_of(&events[0].entry, &events);
        let state = folded.state.unwrap_or_else(|| panic!("no state"));
        prop_assert_eq!(&state.fields, &fields(seed));
        prop_assert_eq!(state.status, Status::Active);
        prop_assert!(matches!(state.lifecycle, Lifecycle::Active | Lifecycle::Archived));
    }
}

#[test]
fn a_tombstone_must_carry_no_content() {
    let events = history(7, &[0]);
    let (p, _) = purge(&events, 5);
    // A "tombstone" that still holds the content is refused by the line decoder.
    let Value::Object(mut map) = events[0].to_value().unwrap_or_default() else {
        panic!("not an object");
    };
    map.insert("purged_by".into(), Value::from(p.id.clone()));
    let line = projections::canonical::map_to_canonical_string(&map).unwrap_or_default();
    let err = decode_line(&line)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("must carry no summary, content or evidence"),
        "{err}"
    );
}

fn shuffled(events: &[Event], seed: u64) -> Vec<Event> {
    let mut v = events.to_vec();
    let mut x = seed | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = usize::try_from(x % (i as u64 + 1)).unwrap_or(0);
        v.swap(i, j);
    }
    v
}

proptest! {
    /// Lifecycle events keep the one invariant: several entries' histories with transitions,
    /// pins, evidence checks and purges project the same in any order and with duplicates.
    #[test]
    fn lifecycle_events_are_a_set(
        histories in prop::collection::vec((any::<u8>(), prop::collection::vec(any::<u8>(), 0..8), any::<bool>()), 1..4),
        seed in any::<u64>(), dup in 0usize..10,
    ) {
        let mut all = Vec::new();
        for (i, (s, ops, purged)) in histories.iter().enumerate() {
            let mut events = history(s.wrapping_add(u8::try_from(i).unwrap_or(0)), ops);
            if *purged {
                let (p, _) = purge(&events, ops.len() + 1);
                events.push(p);
            }
            all.extend(events);
        }
        let mut mixed = shuffled(&all, seed);
        let extra: Vec<Event> = mixed.iter().take(dup).cloned().collect();
        mixed.extend(extra);
        prop_assert_eq!(project(&all), project(&mixed));
    }
}

/// Two branches that made the same change of an entry (both archived it, both pinned it, both
/// set a field to the same value) agree: several heads, no conflict, in any order of the log,
/// and the next write, which builds on every head, joins them. A fork that changed something
/// on one side only, or the same field to different values, stays a conflict.
#[test]
fn concurrent_writers_that_agree_leave_no_conflict() {
    let event = |entry: &str, actor: &str, i: usize, parents: &[&str], data: EventData| {
        Event::build(
            entry,
            actor,
            &at(i),
            parents.iter().map(|p| (*p).to_owned()).collect(),
            data,
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let create = event(
        "",
        "a",
        0,
        &[],
        EventData::Create {
            fields: fields(1),
            status: Status::Active,
        },
    );
    let entry = create.entry.clone();
    let archive = |actor: &str, i: usize| {
        event(
            &entry,
            actor,
            i,
            &[&create.id],
            EventData::Transition {
                to: Lifecycle::Archived,
                reason: format!("unused, by {actor}"),
            },
        )
    };
    let set = |actor: &str, i: usize, confidence: f64| {
        let mut set = Map::new();
        set.insert("confidence".into(), Value::from(confidence));
        event(
            &entry,
            actor,
            i,
            &[&create.id],
            EventData::Update { set, reason: None },
        )
    };
    let state = |events: &[&Event]| {
        let all: Vec<Event> = events.iter().map(|e| (*e).clone()).collect();
        fold_entry_of(&entry, &all)
            .state
            .unwrap_or_else(|| panic!("no state"))
    };

    let (a, b) = (archive("a", 1), archive("b", 2));
    for order in [[&create, &a, &b], [&b, &create, &a]] {
        let s = state(&order);
        assert_eq!(s.heads.len(), 2);
        assert!(s.agreed && !s.in_conflict(), "{s:?}");
        assert_eq!(s.lifecycle, Lifecycle::Archived);
    }
    let (same_a, same_b) = (set("a", 1, 0.8), set("b", 2, 0.8));
    assert!(!state(&[&create, &same_a, &same_b]).in_conflict());
    // The next write builds on both heads: one head again.
    let pin = event(
        &entry,
        "c",
        3,
        &[&a.id, &b.id],
        EventData::Pin { reason: None },
    );
    let s = state(&[&create, &a, &b, &pin]);
    assert_eq!(
        (s.heads.len(), s.agreed, s.in_conflict()),
        (1, false, false)
    );

    // Disagreement: different values, or a change on one side only.
    let other = set("b", 2, 0.7);
    assert!(state(&[&create, &same_a, &other]).in_conflict());
    assert!(state(&[&create, &a, &other]).in_conflict());
    // Agreed, then one line goes on alone: a conflict, with its audit record.
    let more = event(&entry, "b", 4, &[&b.id], EventData::Pin { reason: None });
    let s = state(&[&create, &a, &b, &more]);
    assert!(s.in_conflict(), "{s:?}");
    let audit = projections::fold_entry_of(
        &entry,
        &[create.clone(), a.clone(), b.clone(), more.clone()],
    )
    .audit;
    assert!(audit.iter().any(|r| r.to == "open"), "{audit:?}");
}
