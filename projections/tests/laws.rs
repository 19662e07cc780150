//! Property tests for the laws of the design: projections are a function of the *set* of events.

use projections::{
    EntryFields, Event, EventData, Evidence, EvidenceType, Kind, Section, Status, decode_line,
    project,
};
use proptest::prelude::*;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

fn fields(n: usize, subject: u8) -> EntryFields {
    EntryFields {
        section: Section::ALL[n % 4],
        kind: Kind::ALL[n % 8],
        subject: format!("svc-{subject}.module"),
        scope: ["repo", "org", "service:auth", "environment:prod"][n % 4].into(),
        summary: format!("Summary number {n} \"quoted\" é"),
        content: format!("Content {n}\nwith a second line"),
        tags: vec![format!("t{}", n % 3)],
        confidence: f64::from(u32::try_from(n % 11).unwrap_or(0)) / 10.0,
        evidence: vec![Evidence {
            kind: EvidenceType::ALL[n % 7],
            uri: format!("src/file{n}.rs"),
            note: "why".into(),
        }],
        related_entries: vec![],
        valid_from: None,
        valid_to: None,
        review_interval: None,
    }
}

/// One step of a simulated multi-writer history.
#[derive(Debug, Clone)]
struct Op {
    replica: usize,
    action: u8,
    a: u8,
    b: u8,
}

fn op() -> impl Strategy<Value = Op> {
    (0usize..3, 0u8..11, any::<u8>(), any::<u8>()).prop_map(|(replica, action, a, b)| Op {
        replica,
        action,
        a,
        b,
    })
}

/// Writers on three replicas (branches) create and change entries using the heads they can see,
/// and now and then merge another replica's events. Returns every replica's event set.
fn simulate(ops: &[Op]) -> Vec<Vec<Event>> {
    simulate_journaled(ops).0
}

/// [`simulate`], also returning the journal: every event a writer wrote (acknowledged), in
/// write order, recorded when it was written and independently of the replicas and merges.
fn simulate_journaled(ops: &[Op]) -> (Vec<Vec<Event>>, Vec<Event>) {
    let mut replicas: Vec<Vec<Event>> = vec![Vec::new(); 3];
    let mut journal: Vec<Event> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        // Few distinct seconds, so equal timestamps (ties broken by id) are common.
        let at = format!(
            "2026-01-01T00:{:02}:{:02}.000Z",
            i / 60 % 60,
            u32::from(op.a) % 7 + u32::try_from(i % 50).unwrap_or(0)
        );
        let actor = format!("agent-{}", op.replica);
        let r = op.replica;
        let entries: Vec<String> = {
            let p = project(&replicas[r]);
            p.entries.keys().cloned().collect()
        };
        let new = match op.action {
            0..=2 => Event::build(
                "",
                &actor,
                &at,
                vec![],
                EventData::Create {
                    fields: fields(i, op.b % 4),
                    status: if op.a % 5 == 0 {
                        Status::Draft
                    } else {
                        Status::Active
                    },
                },
            ),
            9 => {
                let other = usize::from(op.b) % 3;
                let theirs = replicas[other].clone();
                replicas[r].extend(theirs);
                continue;
            }
            _ if entries.is_empty() => continue,
            action => {
                let entry = &entries[usize::from(op.a) % entries.len()];
                let p = project(&replicas[r]);
                let Some(state) = p.entries.get(entry).and_then(|f| f.state.clone()) else {
                    continue;
                };
                let heads = state.heads.clone();
                let data = match action {
                    3 => {
                        let mut set = Map::new();
                        set.insert(
                            "confidence".into(),
                            Value::from(f64::from(op.b % 10) / 10.0),
                        );
                        EventData::Update { set, reason: None }
                    }
                    4 => {
                        if state.pinned {
                            EventData::Unpin { reason: None }
                        } else {
                            EventData::Pin {
                                reason: Some("keep".into()),
                            }
                        }
                    }
                    5 => EventData::Deprecate {
                        reason: Some("old".into()),
                    },
                    // The two-line form: `by` names an entry that already exists.
                    6 => EventData::Supersede {
                        by: entries[usize::from(op.b) % entries.len()].clone(),
                        reason: None,
                        replacement: None,
                    },
                    // The one-line form: the supersede creates its replacement.
                    10 => {
                        let e = Event::supersede_with_replacement(
                            entry,
                            &actor,
                            &at,
                            heads,
                            fields(i, op.b % 4),
                            if op.b % 5 == 0 {
                                Status::Draft
                            } else {
                                Status::Active
                            },
                            (op.b % 2 == 0).then(|| "replaced".to_owned()),
                        );
                        if let Ok(e) = e {
                            journal.push(e.clone());
                            replicas[r].push(e);
                        }
                        continue;
                    }
                    7 => EventData::Transition {
                        to: projections::Lifecycle::ALL[usize::from(op.b) % 4],
                        reason: "engine".into(),
                    },
                    _ => {
                        if !state.in_conflict() {
                            continue;
                        }
                        EventData::Resolve {
                            set: Map::new(),
                            reason: Some("merged".into()),
                        }
                    }
                };
                Event::build(entry, &actor, &at, heads, data)
            }
        };
        if let Ok(e) = new {
            journal.push(e.clone());
            replicas[r].push(e);
        }
    }
    (replicas, journal)
}

fn union(sets: &[&[Event]]) -> Vec<Event> {
    sets.iter().flat_map(|s| s.iter().cloned()).collect()
}

fn shuffle<T: Clone>(items: &[T], seed: u64) -> Vec<T> {
    let mut v = items.to_vec();
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
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Law 1a: any permutation of the log's lines gives the same projections.
    #[test]
    fn permutation_invariance(ops in prop::collection::vec(op(), 1..60), seed in any::<u64>()) {
        let all = union(&simulate(&ops).iter().map(Vec::as_slice).collect::<Vec<_>>());
        prop_assert_eq!(project(&all), project(&shuffle(&all, seed)));
    }

    /// Law 1b: duplicated lines change nothing.
    #[test]
    fn duplication_invariance(ops in prop::collection::vec(op(), 1..60), seed in any::<u64>(), k in 0usize..20) {
        let all = union(&simulate(&ops).iter().map(Vec::as_slice).collect::<Vec<_>>());
        let mut dup = all.clone();
        dup.extend(shuffle(&all, seed).into_iter().take(k));
        prop_assert_eq!(project(&all), project(&shuffle(&dup, seed ^ 0x9e37)));
    }

    /// Law 2: merge (union of logs) is commutative, associative and idempotent.
    #[test]
    fn merge_laws(ops in prop::collection::vec(op(), 1..60)) {
        let r = simulate(&ops);
        let (a, b, c) = (r[0].as_slice(), r[1].as_slice(), r[2].as_slice());
        prop_assert_eq!(project(&union(&[a, b])), project(&union(&[b, a])));
        let ab = union(&[a, b]);
        let bc = union(&[b, c]);
        prop_assert_eq!(project(&union(&[&ab, c])), project(&union(&[a, &bc])));
        prop_assert_eq!(project(&union(&[a, a])), project(a));
    }

    /// Law 5: every acknowledged write is present after any sequence of merges and replays, and
    /// nothing appears that was never written; concurrent writes leave a visible conflict.
    ///
    /// Checked against the writers' journal, not against the merged logs: the replicas' logs are
    /// merged as git does (line union, any grouping and order, duplicated lines), replayed from
    /// their text, and every event of the journal must be accounted for in the history of each
    /// entry it is about (a version, or an anomaly the fold reports), every version and audit
    /// record must come from the journal, and the heads must be those of the journal's DAG.
    #[test]
    fn nothing_lost_nothing_invented(ops in prop::collection::vec(op(), 1..60), seed in any::<u64>(), k in 0usize..20) {
        let (r, journal) = simulate_journaled(&ops);
        // What the journal says, computed here without the crate's helpers.
        let about = |e: &Event| -> Vec<String> {
            let mut v = vec![e.entry.clone()];
            if let EventData::Supersede { by, replacement: Some(_), .. } = &e.data {
                v.push(by.clone());
            }
            v
        };
        let written: BTreeSet<String> = journal.iter().map(|e| e.id.clone()).collect();
        let mut of_entry: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for e in &journal {
            for x in about(e) {
                of_entry.entry(x).or_default().insert(e.id.clone());
            }
        }
        let created: BTreeSet<String> = journal.iter().filter_map(|e| match &e.data {
            EventData::Create { .. } => Some(e.entry.clone()),
            EventData::Supersede { by, replacement: Some(_), .. } => Some(by.clone()),
            _ => None,
        }).collect();
        let heads_of = |x: &str| -> Vec<String> {
            let ids = &of_entry[x];
            let named: BTreeSet<&String> = journal.iter().filter(|e| ids.contains(&e.id)).flat_map(|e| &e.parents).collect();
            ids.iter().filter(|id| !named.contains(id)).cloned().collect()
        };

        let lines = |events: &[Event]| -> Result<Vec<String>, TestCaseError> {
            events.iter().map(|e| e.to_line().map_err(|e| TestCaseError::fail(e.to_string()))).collect()
        };
        let (a, b, c) = (lines(&r[0])?, lines(&r[1])?, lines(&r[2])?);
        let cat = |parts: &[&[String]]| parts.concat();
        let mut dup = cat(&[&a, &b, &c]);
        dup.extend(shuffle(&dup, seed).into_iter().take(k));
        let merges = [
            cat(&[&a, &b, &c]),
            cat(&[&c, &b, &a]),
            cat(&[&cat(&[&a, &b]), &cat(&[&b, &c])]),
            shuffle(&dup, seed ^ 0x5bd1),
        ];
        for merged in &merges {
            let replayed: Vec<Event> = merged.iter()
                .map(|l| decode_line(l).map_err(|e| TestCaseError::fail(e.to_string())))
                .collect::<Result<_, _>>()?;
            let in_log: BTreeSet<String> = replayed.iter().map(|e| e.id.clone()).collect();
            prop_assert_eq!(&in_log, &written, "the merged log holds exactly the acknowledged events");
            let p = project(&replayed);
            let present: BTreeSet<String> = p.entries.iter().filter(|(_, f)| f.state.is_some()).map(|(k, _)| k.clone()).collect();
            prop_assert_eq!(&present, &created, "entries present = entries created");
            prop_assert!(p.entries.keys().all(|x| of_entry.contains_key(x)), "an entry no write is about");
            for (x, folded) in &p.entries {
                let accounted: Vec<&String> = folded.versions.iter().map(|v| &v.event)
                    .chain(folded.anomalies.iter().map(|(id, _)| id)).collect();
                let unique: BTreeSet<String> = accounted.iter().map(|id| (*id).clone()).collect();
                prop_assert_eq!(unique.len(), accounted.len(), "{}: an event counted twice", x);
                prop_assert_eq!(&unique, &of_entry[x], "{}: events lost or invented", x);
                prop_assert!(folded.audit.iter().all(|a| of_entry[x].contains(&a.event)));
                if let Some(s) = &folded.state {
                    prop_assert_eq!(s.version as usize, folded.versions.len());
                    prop_assert_eq!(&s.heads, &heads_of(x), "{}: heads", x);
                    // Several heads are a conflict unless the writers agreed.
                    prop_assert_eq!(s.in_conflict(), s.heads.len() > 1 && !s.agreed);
                    prop_assert!(!s.agreed || s.heads.len() > 1);
                }
            }
            let total: i64 = p.stats.entries_by_status.values().sum();
            prop_assert_eq!(total, i64::try_from(created.len()).unwrap_or(-1));
        }
    }

    /// The fold without snapshots (what the store keeps) gives the same state, versions and
    /// audit records as the full fold.
    #[test]
    fn lean_fold_equals_full_fold(ops in prop::collection::vec(op(), 1..60)) {
        let r = simulate(&ops);
        let all = union(&[&r[0], &r[1], &r[2]]);
        let refs: Vec<&Event> = all.iter().collect();
        for (entry, full) in project(&all).entries {
            let lean = projections::fold_entry_lean(&entry, &refs);
            prop_assert_eq!(&lean.state, &full.state);
            prop_assert_eq!(&lean.audit, &full.audit);
            let versions: Vec<(u32, &str)> = lean.versions.iter().map(|(n, e)| (*n, e.id.as_str())).collect();
            let expected: Vec<(u32, &str)> = full.versions.iter().map(|v| (v.version, v.event.as_str())).collect();
            prop_assert_eq!(versions, expected);
        }
    }

    /// Statistics maintained by delta equal statistics computed from scratch.
    #[test]
    fn stats_by_delta_equal_scratch(ops in prop::collection::vec(op(), 1..60)) {
        let r = simulate(&ops);
        let all = union(&[&r[0], &r[1], &r[2]]);
        let mut delta = projections::Stats::default();
        let mut seen: BTreeMap<String, projections::EntryState> = BTreeMap::new();
        for n in 1..=all.len() {
            let p = project(&all[..n]);
            for (id, f) in &p.entries {
                if let Some(old) = seen.remove(id) { delta.apply(&old, -1); }
                if let Some(s) = &f.state { delta.apply(s, 1); seen.insert(id.clone(), s.clone()); }
            }
        }
        prop_assert_eq!(delta, project(&all).stats);
    }

    /// Statistics are additive over disjoint sets of entries: merging the statistics of any
    /// split equals the statistics of the whole (what a parallel rebuild relies on).
    #[test]
    fn stats_merge_is_additive(ops in prop::collection::vec(op(), 1..60), cut in 0usize..100) {
        let r = simulate(&ops);
        let all = union(&[&r[0], &r[1], &r[2]]);
        let p = project(&all);
        let states: Vec<&projections::EntryState> = p.entries.values().filter_map(|f| f.state.as_ref()).collect();
        let cut = cut.min(states.len());
        let mut left = projections::Stats::default();
        let mut right = projections::Stats::default();
        for s in &states[..cut] { left.apply(s, 1); }
        for s in &states[cut..] { right.apply(s, 1); }
        left.merge(&right);
        prop_assert_eq!(left, p.stats);
    }

    /// Canonical encode/decode round-trip for arbitrary text and numbers.
    #[test]
    fn canonical_round_trip(summary in any::<String>(), content in ".{0,40}", tag in any::<String>(), conf in 0.0f64..=1.0, actor in "[a-z][a-z0-9-]{0,20}") {
        let mut f = fields(1, 1);
        f.summary = summary;
        f.content = content;
        f.tags = vec![tag];
        f.confidence = conf;
        let e = Event::build("", &actor, "2026-11-22T10:31:12.123Z", vec![], EventData::Create { fields: f, status: Status::Active })
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let line = e.to_line().map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(!line.contains('\n'));
        let back = decode_line(&line).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&back, &e);
        prop_assert_eq!(back.to_line().ok(), Some(line));
    }

    /// Any finite double survives the canonical number form exactly.
    #[test]
    fn numbers_round_trip(x in any::<f64>().prop_filter("finite", |x| x.is_finite())) {
        let mut s = String::new();
        projections::canonical::write_f64(&mut s, x).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back: f64 = serde_json::from_str(&s).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, if x == 0.0 { 0.0 } else { x });
    }

    /// Changing any single byte of a line is detected when the line is read.
    #[test]
    fn any_altered_byte_is_detected(pos in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let e = Event::build("", "agent-7", "2026-11-22T10:31:12.123Z", vec![], EventData::Create { fields: fields(3, 1), status: Status::Active })
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let line = e.to_line().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut bytes = line.clone().into_bytes();
        let i = pos.index(bytes.len());
        prop_assume!(bytes[i] != byte);
        bytes[i] = byte;
        if let Ok(altered) = String::from_utf8(bytes) {
            prop_assert!(decode_line(&altered).is_err(), "altered line accepted: {}", altered);
        }
    }
}

/// The log file as a replica appended it: one canonical line per event, in write order.
fn log_bytes(events: &[Event]) -> Result<Vec<u8>, TestCaseError> {
    let mut bytes = Vec::new();
    for e in events {
        let line = e
            .to_line()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
    }
    Ok(bytes)
}

/// What torn-tail recovery keeps of a log cut after `cut` bytes: every complete line.
fn recover(bytes: &[u8]) -> Result<Vec<Event>, TestCaseError> {
    let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let text =
        std::str::from_utf8(&bytes[..complete]).map_err(|e| TestCaseError::fail(e.to_string()))?;
    text.lines()
        .map(|l| decode_line(l).map_err(|e| TestCaseError::fail(e.to_string())))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A crash can cut the log at any byte; recovery drops the torn last line. A supersede is
    /// all or nothing: its replacement exists exactly when the superseded entry saw the
    /// supersede, and an entry and its replacement are never both active.
    #[test]
    fn supersede_survives_a_torn_tail_whole_or_not_at_all(ops in prop::collection::vec(op(), 1..50), replica in 0usize..3) {
        let replicas = simulate(&ops);
        let log = &replicas[replica];
        let bytes = log_bytes(log)?;
        let supersedes: Vec<(&str, &str, &str)> = log
            .iter()
            .filter_map(|e| match e.created_entry() {
                Some(b) if b != e.entry => Some((e.entry.as_str(), b, e.id.as_str())),
                _ => None,
            })
            .collect();
        let mut last_complete = None;
        for cut in 0..=bytes.len() {
            // Recovery only ever keeps whole lines: cuts within one line recover the same set.
            let complete = bytes[..cut].iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            if last_complete == Some(complete) {
                continue;
            }
            last_complete = Some(complete);
            let kept = recover(&bytes[..cut])?;
            let p = project(&kept);
            let state = |id: &str| p.entries.get(id).and_then(|f| f.state.as_ref());
            let active = |id: &str| state(id).is_some_and(|s| s.status == Status::Active);
            for (a, b, s) in &supersedes {
                let written = kept.iter().any(|e| e.id == *s);
                prop_assert_eq!(state(b).is_some(), written, "cut at {}", cut);
                if written {
                    prop_assert!(state(a).is_some_and(|s| s.status != Status::Active));
                }
                prop_assert!(!(active(a) && active(b)), "cut at {}: {} and its replacement {} both active", cut, a, b);
            }
        }
    }
}

/// Why a supersede is one line: written as a create of the replacement and a supersede of the
/// old entry, a cut between the two lines leaves both entries active.
#[test]
fn a_two_line_supersede_can_be_cut_in_half() {
    let build = |entry: &str, parents: Vec<String>, data| {
        Event::build(entry, "agent-7", "2026-11-22T10:31:12.123Z", parents, data)
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let old = build(
        "",
        vec![],
        EventData::Create {
            fields: fields(1, 1),
            status: Status::Active,
        },
    );
    let replacement = build(
        "",
        vec![],
        EventData::Create {
            fields: fields(2, 1),
            status: Status::Active,
        },
    );
    let sup = build(
        &old.entry,
        vec![old.id.clone()],
        EventData::Supersede {
            by: replacement.entry.clone(),
            reason: None,
            replacement: None,
        },
    );
    let bytes =
        log_bytes(&[old.clone(), replacement.clone(), sup]).unwrap_or_else(|e| panic!("{e}"));
    let both_active = (0..=bytes.len()).any(|cut| {
        let kept = recover(&bytes[..cut]).unwrap_or_else(|e| panic!("{e}"));
        let p = project(&kept);
        [&old.entry, &replacement.entry].iter().all(|id| {
            p.entries
                .get(*id)
                .and_then(|f| f.state.as_ref())
                .is_some_and(|s| s.status == Status::Active)
        })
    });
    assert!(both_active);
}
