//! The event format pinned down: golden hash vectors (current and legacy), the entry id
//! derivations recomputed the way docs/EVENT_FORMAT.md describes them, the one-line supersede,
//! and the edge cases on which the document and the code must agree.

use projections::canonical::to_canonical_string;
use projections::event::{EVENT_DOMAIN, is_entry_id};
use projections::{
    EntryFields, Event, EventData, EventError, Evidence, EvidenceType, Kind, Section, Status,
    decode_line, fold_entry, fold_entry_of, project,
};
use serde_json::{Map, Value};

const B32: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// Section 5 of the format, written out independently of the crate: `m-` and the first `chars`
/// five-bit groups of BLAKE3("memlog/entry/v1\n" + pre-image), most significant bit first.
fn spec_entry_id(pre_image: &str, chars: usize) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"memlog/entry/v1\n");
    hasher.update(pre_image.as_bytes());
    let bits: String = hasher
        .finalize()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:08b}"))
        .collect();
    let groups = (0..chars).map(|i| {
        let group = u8::from_str_radix(&bits[5 * i..5 * i + 5], 2).unwrap_or(0);
        char::from(B32[usize::from(group)])
    });
    std::iter::once("m-".to_owned())
        .chain(groups.map(String::from))
        .collect()
}

/// Section 4: BLAKE3("memlog/event/v1\n" + the line without its `id` member).
fn spec_event_id(line_without_id: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(EVENT_DOMAIN);
    hasher.update(line_without_id.as_bytes());
    hasher.finalize().to_hex().to_string()
}

fn without_member(line: &str, key: &str, value: &str) -> String {
    let member = format!("\"{key}\":\"{value}\",");
    assert!(line.contains(&member), "{member} not in {line}");
    line.replacen(&member, "", 1)
}

/// Gives an edited event object a correct `id` again, as a forger would, and returns its line.
fn rehash(mut value: Value) -> String {
    let Value::Object(map) = &mut value else {
        panic!("not an object")
    };
    map.remove("id");
    let body = to_canonical_string(&Value::Object(map.clone())).unwrap_or_default();
    map.insert("id".into(), Value::String(spec_event_id(&body)));
    to_canonical_string(&value).unwrap_or_default()
}

fn parse(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

fn golden_fields() -> EntryFields {
    EntryFields {
        section: Section::Decisions,
        kind: Kind::Decision,
        subject: "auth.tokens".into(),
        scope: "service:auth".into(),
        summary: "Use short-lived JWTs".into(),
        content: "Tokens live 15 minutes.".into(),
        tags: vec!["security".into()],
        confidence: 0.9,
        evidence: vec![Evidence {
            kind: EvidenceType::Code,
            uri: "src/auth/token.rs#L10-L40".into(),
            note: "token issuing".into(),
        }],
        related_entries: vec![],
        valid_from: None,
        valid_to: None,
        review_interval: None,
    }
}

fn golden_create() -> Event {
    Event::build(
        "",
        "agent-7",
        "2026-11-22T10:31:12.123Z",
        vec![],
        EventData::Create {
            fields: golden_fields(),
            status: Status::Active,
        },
    )
    .unwrap_or_else(|e| panic!("golden event does not build: {e}"))
}

fn golden_supersede(create: &Event) -> Event {
    let mut fields = golden_fields();
    fields.summary = "Use 10-minute JWTs".into();
    fields.content = "Tokens live 10 minutes.".into();
    Event::supersede_with_replacement(
        &create.entry,
        "agent-8",
        "2026-11-24T09:00:00.000Z",
        vec![create.id.clone()],
        fields,
        Status::Active,
        Some("security review".into()),
    )
    .unwrap_or_else(|e| panic!("golden supersede does not build: {e}"))
}

fn line(e: &Event) -> String {
    e.to_line().unwrap_or_else(|err| panic!("{err}"))
}

/// Golden vectors: these ids are part of the format. If this test fails, the encoding or the
/// hashing changed, and every existing log would stop verifying.
#[test]
fn golden_hash_vectors() {
    let create = golden_create();
    assert_eq!(create.entry, "m-p8bhx3hjz7asjahngzrk8zy9dg");
    assert_eq!(
        create.id,
        "eef022dcab94092319e9f864727b0ae60b34b4426ef5a431613f0f9cf0f06da6"
    );
    let pin = Event::build(
        &create.entry,
        "agent-8",
        "2026-11-23T08:00:00.000Z",
        vec![create.id.clone()],
        EventData::Pin {
            reason: Some("critical".into()),
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        pin.id,
        "738b9de9d634e396a288e94081cff563f3fa7975f68a8016ad86f7efe3064071"
    );
    assert_eq!(
        line(&pin),
        format!(
            "{{\"actor\":\"agent-8\",\"at\":\"2026-11-23T08:00:00.000Z\",\"data\":{{\"reason\":\"critical\"}},\"entry\":\"{}\",\"id\":\"{}\",\"parents\":[\"{}\"],\"type\":\"pin\",\"v\":1}}",
            create.entry, pin.id, create.id
        )
    );
    let sup = golden_supersede(&create);
    let EventData::Supersede { by, .. } = &sup.data else {
        panic!("not a supersede")
    };
    assert_eq!(by, "m-0gz6jat39yh7jqtpefey3hsbxc");
    assert_eq!(
        sup.id,
        "967c6b09450eadd82776bf541dfa0ec2961830ce9178d26e904822007e2d8835"
    );
    assert_eq!(
        line(&sup),
        r#"{"actor":"agent-8","at":"2026-11-24T09:00:00.000Z","data":{"by":"m-0gz6jat39yh7jqtpefey3hsbxc","reason":"security review","replacement":{"confidence":0.9,"content":"Tokens live 10 minutes.","evidence":[{"note":"token issuing","type":"code","uri":"src/auth/token.rs#L10-L40"}],"kind":"decision","related_entries":[],"review_interval":null,"scope":"service:auth","section":"decisions","status":"active","subject":"auth.tokens","summary":"Use 10-minute JWTs","tags":["security"],"valid_from":null,"valid_to":null}},"entry":"m-p8bhx3hjz7asjahngzrk8zy9dg","id":"967c6b09450eadd82776bf541dfa0ec2961830ce9178d26e904822007e2d8835","parents":["eef022dcab94092319e9f864727b0ae60b34b4426ef5a431613f0f9cf0f06da6"],"type":"supersede","v":1}"#
    );
}

/// The derivations, recomputed from the lines as section 5 describes them (text operations on
/// the canonical line), agree with the crate.
#[test]
fn derivations_follow_the_document() {
    let create = golden_create();
    let l = line(&create);
    let no_id = without_member(&l, "id", &create.id);
    assert_eq!(spec_event_id(&no_id), create.id);
    let pre = without_member(&no_id, "entry", &create.entry);
    assert_eq!(spec_entry_id(&pre, 26), create.entry);
    // The legacy id of the same content is the first ten characters of the long one.
    assert_eq!(spec_entry_id(&pre, 10), create.entry[..12]);

    let sup = golden_supersede(&create);
    let EventData::Supersede { by, .. } = &sup.data else {
        panic!("not a supersede")
    };
    let l = line(&sup);
    let no_id = without_member(&l, "id", &sup.id);
    assert_eq!(spec_event_id(&no_id), sup.id);
    let pre = without_member(&no_id, "by", by);
    assert!(pre.contains(",\"data\":{\"reason\":\"security review\",\"replacement\":{"));
    assert_eq!(&spec_entry_id(&pre, 26), by);
}

/// Lines written before entry ids grew to 130 bits: the examples of the format document and
/// the former golden vectors. They must verify and replay unchanged, forever.
const LEGACY_LOG: &[&str] = &[
    r#"{"actor":"agent-7","at":"2026-11-22T10:31:12.123Z","data":{"confidence":0.9,"content":"Tokens live 15 minutes.","evidence":[{"note":"token issuing","type":"code","uri":"src/auth/token.rs#L10-L40"}],"kind":"decision","related_entries":[],"review_interval":null,"scope":"service:auth","section":"decisions","status":"active","subject":"auth.tokens","summary":"Use short-lived JWTs","tags":[],"valid_from":null,"valid_to":null},"entry":"m-s2bgnsgj84","id":"e305c1ff9917a031aa8ed0809a69d0e5d1a5d26e0860b19bce1d7f5a6f1c881b","parents":[],"type":"create","v":1}"#,
    r#"{"actor":"agent-b","at":"2026-11-23T09:30:00.000Z","data":{"reason":"security review","set":{"content":"Tokens live 10 minutes."}},"entry":"m-s2bgnsgj84","id":"2bef4358570b3a284f51b5f80f7dd4e836b7c85ee46474e08c691364464a6735","parents":["e305c1ff9917a031aa8ed0809a69d0e5d1a5d26e0860b19bce1d7f5a6f1c881b"],"type":"update","v":1}"#,
    r#"{"actor":"agent-a","at":"2026-11-23T09:00:00.000Z","data":{"reason":"load test confirms","set":{"confidence":0.95}},"entry":"m-s2bgnsgj84","id":"fcee479bac45ac4e256f63738f5034e2436569d7bbb9d555525f208a0a7a1b62","parents":["e305c1ff9917a031aa8ed0809a69d0e5d1a5d26e0860b19bce1d7f5a6f1c881b"],"type":"update","v":1}"#,
    r#"{"actor":"agent-7","at":"2026-11-23T10:00:00.000Z","data":{"reason":"keep both changes","set":{}},"entry":"m-s2bgnsgj84","id":"5422645cedca638481c2868277b5369b0970309aa4374084ae1923325cbe01e5","parents":["2bef4358570b3a284f51b5f80f7dd4e836b7c85ee46474e08c691364464a6735","fcee479bac45ac4e256f63738f5034e2436569d7bbb9d555525f208a0a7a1b62"],"type":"resolve","v":1}"#,
    r#"{"actor":"agent-7","at":"2026-11-22T10:31:12.123Z","data":{"confidence":0.9,"content":"Tokens live 15 minutes.","evidence":[{"note":"token issuing","type":"code","uri":"src/auth/token.rs#L10-L40"}],"kind":"decision","related_entries":[],"review_interval":null,"scope":"service:auth","section":"decisions","status":"active","subject":"auth.tokens","summary":"Use short-lived JWTs","tags":["security"],"valid_from":null,"valid_to":null},"entry":"m-p8bhx3hjz7","id":"6a53ced9ede5676b5280f9db4d1ba61feb622c240cd844fd6c76780bd228f07a","parents":[],"type":"create","v":1}"#,
    r#"{"actor":"agent-8","at":"2026-11-23T08:00:00.000Z","data":{"reason":"critical"},"entry":"m-p8bhx3hjz7","id":"c12640ebf23cc56e5c676d1a3283a0b8c0664cf1ac8a8f08853765370da2b760","parents":["6a53ced9ede5676b5280f9db4d1ba61feb622c240cd844fd6c76780bd228f07a"],"type":"pin","v":1}"#,
    // A two-line supersede: `by` names an entry created by its own line.
    r#"{"actor":"agent-7","at":"2026-11-24T09:00:00.000Z","data":{"by":"m-p8bhx3hjz7","reason":"tagged copy"},"entry":"m-s2bgnsgj84","id":"cc831465b2808bf75b3f4c5be4c548f83523161d84e0d46a1b348eba2ee51140","parents":["5422645cedca638481c2868277b5369b0970309aa4374084ae1923325cbe01e5"],"type":"supersede","v":1}"#,
];

#[test]
fn legacy_vectors_still_verify_and_replay() {
    let events: Vec<Event> = LEGACY_LOG
        .iter()
        .map(|l| decode_line(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for (l, e) in LEGACY_LOG.iter().zip(&events) {
        assert_eq!(&line(e), l, "a legacy line does not round-trip");
        assert_eq!(e.entry.len(), 12);
        if let EventData::Create { .. } = e.data {
            let pre = without_member(&without_member(l, "id", &e.id), "entry", &e.entry);
            assert_eq!(spec_entry_id(&pre, 10), e.entry);
        }
    }
    let p = project(&events);
    let first = p.entries["m-s2bgnsgj84"]
        .state
        .clone()
        .unwrap_or_else(|| panic!("no state"));
    assert_eq!(first.fields.content, "Tokens live 10 minutes.");
    assert!((first.fields.confidence - 0.95).abs() < 1e-12);
    assert_eq!(first.status, Status::Superseded);
    assert_eq!(first.superseded_by.as_deref(), Some("m-p8bhx3hjz7"));
    assert_eq!(first.version, 5);
    assert!(!first.in_conflict());
    let second = p.entries["m-p8bhx3hjz7"]
        .state
        .clone()
        .unwrap_or_else(|| panic!("no state"));
    assert!(second.pinned);
    assert_eq!(second.status, Status::Active);
    assert_eq!(p.entries.len(), 2);
}

#[test]
fn both_lengths_of_entry_id_are_checked_against_the_content() {
    let legacy = LEGACY_LOG[0];
    let e = decode_line(legacy).unwrap_or_else(|e| panic!("{e}"));
    let pre = without_member(&without_member(legacy, "id", &e.id), "entry", &e.entry);
    // The same content with the long form of its id is just as valid.
    let mut long = parse(legacy);
    long["entry"] = Value::String(spec_entry_id(&pre, 26));
    let long = rehash(long);
    let decoded = decode_line(&long).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(decoded.entry, spec_entry_id(&pre, 26));
    assert!(decoded.entry.starts_with("m-s2bgnsgj84"));
    // Any other id of either length is refused, naming the id of that length.
    for (stated, computed) in [
        ("m-s2bgnsgj85", "m-s2bgnsgj84".to_owned()),
        ("m-s2bgnsgj840000000000000000", spec_entry_id(&pre, 26)),
    ] {
        let mut forged = parse(legacy);
        forged["entry"] = Value::String(stated.into());
        let got = decode_line(&rehash(forged));
        assert_eq!(
            got,
            Err(EventError::EntryIdMismatch {
                stated: stated.into(),
                computed
            })
        );
    }
    // Neither a truncated long id nor a lengthened legacy one is an entry id.
    let mut odd = parse(legacy);
    odd["entry"] = Value::String("m-s2bgnsgj84a".into());
    assert!(matches!(
        decode_line(&rehash(odd)),
        Err(EventError::BadEntryId(_))
    ));
}

#[test]
fn entry_ids_have_ten_or_twenty_six_characters() {
    assert!(is_entry_id("m-s2bgnsgj84"));
    assert!(is_entry_id("m-p8bhx3hjz7asjahngzrk8zy9dg"));
    for bad in [
        "m-s2bgnsgj8",
        "m-s2bgnsgj84a",
        "m-p8bhx3hjz7asjahngzrk8zy9d",
        "m-p8bhx3hjz7asjahngzrk8zy9dg0",
        "m-S2BGNSGJ84",
        "m-s2bgnsgj8i",
        "m-s2bgnsgj8l",
        "m-s2bgnsgj8o",
        "m-s2bgnsgj8u",
        "x-s2bgnsgj84",
        "s2bgnsgj84",
    ] {
        assert!(!is_entry_id(bad), "{bad}");
    }
}

#[test]
fn supersede_is_one_event_projecting_onto_both_entries() {
    let create = golden_create();
    let a = create.entry.clone();
    let sup = golden_supersede(&create);
    let b = sup
        .created_entry()
        .unwrap_or_else(|| panic!("creates nothing"))
        .to_owned();
    assert_eq!(b.len(), 28);
    assert_eq!(
        sup.entries().collect::<Vec<_>>(),
        vec![a.as_str(), b.as_str()]
    );
    assert!(sup.projects_onto(&a) && sup.projects_onto(&b));
    assert_eq!(decode_line(&line(&sup)).as_ref(), Ok(&sup));

    let p = project(&[sup.clone(), create.clone()]);
    let old = p.entries[&a].state.clone().unwrap_or_else(|| panic!("A"));
    let new = p.entries[&b].state.clone().unwrap_or_else(|| panic!("B"));
    assert_eq!(old.status, Status::Superseded);
    assert_eq!(old.superseded_by.as_deref(), Some(b.as_str()));
    assert_eq!(old.superseded_at.as_deref(), Some(sup.at.as_str()));
    assert_eq!(old.status_reason.as_deref(), Some("security review"));
    assert_eq!(new.id, b);
    assert_eq!(new.status, Status::Active);
    assert_eq!(new.fields.summary, "Use 10-minute JWTs");
    assert_eq!(
        (new.created_by.as_str(), new.created_at.as_str()),
        ("agent-8", sup.at.as_str())
    );
    assert_eq!(new.version, 1);
    assert_eq!(new.heads, vec![sup.id.clone()]);
    assert!(!new.in_conflict());
    // B's first version is the supersede event; the audit has both status transitions.
    let fb = &p.entries[&b];
    assert_eq!(fb.versions.len(), 1);
    assert_eq!(fb.versions[0].event, sup.id);
    let audit = |f: &projections::Folded| {
        f.audit
            .iter()
            .map(|r| (r.from.clone(), r.to.clone(), r.event.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        audit(fb),
        vec![("none".into(), "active".into(), sup.id.clone())]
    );
    assert_eq!(
        audit(&p.entries[&a]),
        vec![
            ("none".into(), "active".into(), create.id.clone()),
            ("active".into(), "superseded".into(), sup.id.clone())
        ]
    );
    assert_eq!(p.stats.total_entries, 2);
    assert_eq!(p.stats.entries_by_status.get("active"), Some(&1));
    assert_eq!(p.stats.entries_by_status.get("superseded"), Some(&1));

    // Folding by entry, told or inferred, gives the same as `project`.
    assert_eq!(&fold_entry_of(&b, &[create.clone(), sup.clone()]), fb);
    assert_eq!(&fold_entry(std::slice::from_ref(&sup)), fb);
    assert_eq!(&fold_entry(&[sup.clone(), create.clone()]), &p.entries[&a]);
}

#[test]
fn later_events_of_the_replacement_build_on_the_supersede() {
    let create = golden_create();
    let sup = golden_supersede(&create);
    let b = sup.created_entry().unwrap_or_default().to_owned();
    let draft = Event::supersede_with_replacement(
        &create.entry,
        "agent-9",
        "2026-11-24T09:00:00.000Z",
        vec![create.id.clone()],
        golden_fields(),
        Status::Draft,
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(draft.created_entry(), sup.created_entry());
    let mut set = Map::new();
    set.insert("confidence".into(), Value::from(0.5));
    let update = Event::build(
        &b,
        "agent-8",
        "2026-11-25T09:00:00.000Z",
        vec![sup.id.clone()],
        EventData::Update { set, reason: None },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let pin = Event::build(
        &create.entry,
        "agent-8",
        "2026-11-25T09:00:00.000Z",
        vec![sup.id.clone()],
        EventData::Pin { reason: None },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let p = project(&[update.clone(), pin.clone(), sup.clone(), create.clone()]);
    let new = p.entries[&b].state.clone().unwrap_or_else(|| panic!("B"));
    assert_eq!(new.version, 2);
    assert_eq!(new.heads, vec![update.id.clone()]);
    assert!((new.fields.confidence - 0.5).abs() < 1e-12);
    assert!(!new.pinned, "an event of A must not reach B");
    let old = p.entries[&create.entry]
        .state
        .clone()
        .unwrap_or_else(|| panic!("A"));
    assert_eq!(old.heads, vec![pin.id.clone()]);
    assert!(old.pinned);
    // A draft replacement is created as a draft.
    let p = project(&[draft.clone(), create]);
    let d = draft.created_entry().unwrap_or_default();
    assert_eq!(
        p.entries[d].state.as_ref().map(|s| s.status),
        Some(Status::Draft)
    );
}

#[test]
fn two_line_supersede_still_builds_and_replays() {
    let create = golden_create();
    let mut other = golden_fields();
    other.summary = "Another".into();
    let winner = Event::build(
        "",
        "agent-7",
        "2026-11-22T10:31:12.123Z",
        vec![],
        EventData::Create {
            fields: other,
            status: Status::Active,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let sup = Event::build(
        &create.entry,
        "agent-7",
        "2026-11-23T10:31:12.123Z",
        vec![create.id.clone()],
        EventData::Supersede {
            by: winner.entry.clone(),
            reason: Some("resolved in favour of the other".into()),
            replacement: None,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        sup.entries().collect::<Vec<_>>(),
        vec![create.entry.as_str()]
    );
    assert_eq!(sup.created_entry(), None);
    assert!(!line(&sup).contains("replacement"));
    let p = project(&[sup.clone(), winner.clone(), create.clone()]);
    assert_eq!(p.entries.len(), 2);
    let loser = p.entries[&create.entry]
        .state
        .clone()
        .unwrap_or_else(|| panic!("A"));
    assert_eq!(loser.superseded_by.as_deref(), Some(winner.entry.as_str()));
    assert_eq!(p.entries[&winner.entry].versions.len(), 1);
}

#[test]
fn a_replacement_id_that_does_not_match_the_content_is_refused() {
    let sup = golden_supersede(&golden_create());
    let by = sup.created_entry().unwrap_or_default().to_owned();
    // Another `by`, with the event id recomputed: the line alone shows the forgery.
    let mut forged = parse(&line(&sup));
    forged["data"]["by"] = Value::String("m-0000000000000000000000000a".into());
    assert_eq!(
        decode_line(&rehash(forged)),
        Err(EventError::ReplacementIdMismatch {
            stated: "m-0000000000000000000000000a".into(),
            computed: by.clone()
        })
    );
    // Edited replacement content, id recomputed but `by` kept.
    let mut edited = parse(&line(&sup));
    edited["data"]["replacement"]["summary"] = Value::String("Use 60-minute JWTs".into());
    assert!(matches!(
        decode_line(&rehash(edited)),
        Err(EventError::ReplacementIdMismatch { .. })
    ));
    // The short form is not allowed for a replacement (it never existed in older logs).
    let mut short = parse(&line(&sup));
    short["data"]["by"] = Value::String(by[..12].to_owned());
    assert!(matches!(
        decode_line(&rehash(short)),
        Err(EventError::BadData { .. })
    ));
    // `null` is neither form.
    let mut null = parse(&line(&sup));
    null["data"]["replacement"] = Value::Null;
    assert!(matches!(
        decode_line(&rehash(null)),
        Err(EventError::BadData { .. })
    ));
    // A replacement is created active or draft, like any new entry.
    let mut superseded = parse(&line(&sup));
    superseded["data"]["replacement"]["status"] = Value::String("superseded".into());
    assert!(matches!(
        decode_line(&rehash(superseded)),
        Err(EventError::BadData { .. })
    ));
    let mut unknown = parse(&line(&sup));
    unknown["data"]["replacement"]["colour"] = Value::String("red".into());
    assert!(matches!(
        decode_line(&rehash(unknown)),
        Err(EventError::BadData { .. })
    ));
    let built = Event::supersede_with_replacement(
        "m-s2bgnsgj84",
        "agent-7",
        "2026-11-22T10:31:12.123Z",
        vec![],
        golden_fields(),
        Status::Deprecated,
        None,
    );
    assert!(matches!(built, Err(EventError::BadData { .. })));
}

/// Section 3: an integer token must lie within ±(2^53 − 1), however large; the refusal names
/// the token as written.
#[test]
fn integer_tokens_beyond_the_safe_range_are_refused() {
    let l = line(&golden_create());
    for token in [
        "9007199254740992",
        "18446744073709551615",
        "18446744073709551616",
        "100000000000000000000",
        "999999999999999999999",
        "123456789012345678901234567890",
    ] {
        let big = l.replace("\"confidence\":0.9", &format!("\"confidence\":{token}"));
        assert_eq!(
            decode_line(&big),
            Err(EventError::Canonical(
                projections::canonical::CanonicalError::UnsafeInteger(token.into())
            )),
            "{token}"
        );
    }
    // In range, the number passes the canonical check (the stale id is what fails).
    let safe = l.replace("\"confidence\":0.9", "\"confidence\":9007199254740991");
    assert!(matches!(
        decode_line(&safe),
        Err(EventError::IdMismatch { .. })
    ));
    // A writer cannot produce such a token either.
    let mut f = golden_fields();
    f.confidence = 1e20;
    let built = Event::build(
        "",
        "agent-7",
        "2026-11-22T10:31:12.123Z",
        vec![],
        EventData::Create {
            fields: f,
            status: Status::Active,
        },
    );
    assert!(matches!(built, Err(EventError::Canonical(_))));
}

/// Section 6.2: years 0001 to 9999, seconds 00 to 59.
#[test]
fn timestamps_have_no_year_zero_and_no_leap_second() {
    let build = |at: &str| {
        Event::build(
            "",
            "agent-7",
            at,
            vec![],
            EventData::Create {
                fields: golden_fields(),
                status: Status::Active,
            },
        )
    };
    assert!(build("0001-01-01T00:00:00.000Z").is_ok());
    assert!(build("9999-12-31T23:59:59.999Z").is_ok());
    for at in ["0000-01-01T00:00:00.000Z", "2016-12-31T23:59:60.000Z"] {
        assert_eq!(build(at), Err(EventError::BadTimestamp(at.into())));
        let mut v = parse(&line(&golden_create()));
        v["at"] = Value::String(at.into());
        assert_eq!(
            decode_line(&rehash(v)),
            Err(EventError::BadTimestamp(at.into()))
        );
    }
}

/// Section 11.2: heads are structural. A second create for an entry id (only a hash collision or
/// a forged log can hold one) cannot be applied, and it is a head all the same, wherever it falls
/// in replay order.
#[test]
fn a_second_create_is_a_head() {
    let first = golden_create();
    let mut second = first.clone();
    second.at = "2026-11-23T00:00:00.000Z".into();
    second.id = "f".repeat(64);
    for events in [
        vec![first.clone(), second.clone()],
        vec![second.clone(), first.clone()],
    ] {
        let folded = fold_entry(&events);
        let state = folded.state.clone().unwrap_or_else(|| panic!("no state"));
        let mut both = vec![first.id.clone(), second.id.clone()];
        both.sort();
        assert_eq!(state.heads, both);
        assert_eq!(projections::order::heads(&events), both);
        assert!(state.in_conflict());
        assert_eq!(state.version, 1);
        assert_eq!(folded.anomalies.len(), 1);
        assert_eq!(folded.anomalies[0].0, second.id);
    }
}

#[test]
fn unknown_versions_and_types_are_refused_not_misread() {
    let l = line(&golden_create());
    let v2 = l.replace("\"v\":1", "\"v\":2");
    assert!(matches!(
        decode_line(&v2),
        Err(EventError::UnsupportedVersion(2))
    ));
    // A version past ±(2^53 - 1) is named as the integer it is, as in any other key.
    for big in ["9007199254740992", "100000000000000000000"] {
        let err = decode_line(&l.replace("\"v\":1", &format!("\"v\":{big}")))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains(&format!("integer {big} is outside")), "{err}");
    }
    let odd = l.replace("\"type\":\"create\"", "\"type\":\"teleport\"");
    assert!(matches!(decode_line(&odd), Err(EventError::UnknownType(_))));
    let spaced = l.replacen(',', ", ", 1);
    assert!(matches!(
        decode_line(&spaced),
        Err(EventError::NotCanonical)
    ));
}

#[test]
fn a_byte_order_mark_is_named() {
    let err = projections::decode_line("\u{feff}{\"v\":1}")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("byte order mark"), "{err}");
}
