//! The one-pass line reader against the reference decoder: on valid lines, mutated lines and
//! hand-made edge cases, `decode_line` must give exactly what `reference_decode_line` gives (the
//! same event, or the same error).

use projections::event::reference_decode_line;
use projections::{
    EntryFields, Event, EventData, Evidence, EvidenceType, Kind, Lifecycle, Section, Status,
    decode_line,
};
use proptest::prelude::*;
use serde_json::{Map, Value};

fn agree(line: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        decode_line(line),
        reference_decode_line(line),
        "line: {}",
        line
    );
    Ok(())
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,30}",
        any::<String>(),
        "[\\x00-\\x1f\"\\\\/\u{7f}\u{e000}\u{ffff}\u{10000}é]{0,8}",
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn fields() -> impl Strategy<Value = EntryFields> {
    (
        (0usize..4, 0usize..8, text(), text(), text(), text()),
        (
            prop::collection::vec(text(), 0..3),
            prop_oneof![
                0.0f64..=1.0,
                any::<f64>().prop_filter("finite", |f| f.is_finite())
            ],
            prop::collection::vec((0usize..7, text(), text()), 0..2),
            prop::option::of(text()),
            (
                prop::collection::vec(text(), 0..2),
                prop::option::of(text()),
                prop::option::of(text()),
            ),
        ),
    )
        .prop_map(
            |(
                (section, kind, subject, scope, summary, content),
                (tags, confidence, ev, valid, (related_entries, review_interval, valid_to)),
            )| {
                EntryFields {
                    section: Section::ALL[section],
                    kind: Kind::ALL[kind],
                    subject,
                    scope,
                    summary,
                    content,
                    tags,
                    confidence,
                    evidence: ev
                        .into_iter()
                        .map(|(k, uri, note)| Evidence {
                            kind: EvidenceType::ALL[k],
                            uri,
                            note,
                        })
                        .collect(),
                    related_entries,
                    valid_from: valid,
                    valid_to,
                    review_interval,
                }
            },
        )
}

const TARGET: &str = "m-s2bgnsgj84zxh4vqk51fq7naym";
const PARENT: &str = "0000000000000000000000000000000000000000000000000000000000000001";

fn event() -> impl Strategy<Value = Option<Event>> {
    event_with_line().prop_map(|built| built.map(|(event, _)| event))
}

/// An event and the line [`Event::build_with_line`] made with it.
fn event_with_line() -> impl Strategy<Value = Option<(Event, String)>> {
    let data = prop_oneof![
        (fields(), any::<bool>()).prop_map(|(fields, draft)| EventData::Create {
            fields,
            status: if draft { Status::Draft } else { Status::Active },
        }),
        (
            prop::collection::btree_map(
                prop_oneof![
                    Just("confidence".to_owned()),
                    Just("tags".to_owned()),
                    text()
                ],
                json_value(),
                0..3
            ),
            prop::option::of(text())
        )
            .prop_map(|(set, reason)| EventData::Update {
                set: set.into_iter().collect(),
                reason,
            }),
        (fields(), prop::option::of(text())).prop_map(|(fields, reason)| {
            EventData::Supersede {
                by: String::new(),
                reason,
                replacement: Some(projections::Replacement {
                    fields,
                    status: Status::Active,
                }),
            }
        }),
        prop::option::of(text()).prop_map(|reason| EventData::Deprecate { reason }),
        text().prop_map(|reason| EventData::Transition {
            to: Lifecycle::Archived,
            reason
        }),
        prop::collection::vec(text(), 0..3).prop_map(|stale| EventData::EvidenceChecked { stale }),
    ];
    (data, "[a-z][a-z0-9 \"\\\\-]{0,12}", any::<bool>()).prop_map(|(data, actor, parent)| {
        let parents = if parent && !matches!(data, EventData::Create { .. }) {
            vec![PARENT.to_owned()]
        } else {
            vec![]
        };
        Event::build_with_line(TARGET, &actor, "2026-11-22T10:31:12.123Z", parents, data).ok()
    })
}

/// Edits that keep a line looking like JSON but may break canonical form or the hashes.
fn mutate(line: &str, how: u8, at: usize, byte: u8) -> String {
    let mut bytes = line.as_bytes().to_vec();
    let i = at % bytes.len().max(1);
    match how % 8 {
        0 => bytes[i] = byte,
        1 => bytes.insert(i, byte),
        2 => {
            bytes.remove(i);
        }
        3 => bytes.insert(i, b' '),
        4 => {
            return line.replacen("0.", "0.0", 1).replacen(":1}", ":1.0}", 1);
        }
        5 => {
            return line
                .replacen("\\n", "\\u000a", 1)
                .replacen("\\\"", "\\u0022", 1);
        }
        6 => return line.replacen(",\"at\":", ",\"at\" :", 1),
        _ => {
            let c = line
                .chars()
                .nth(i % line.chars().count().max(1))
                .unwrap_or('a');
            return line.replacen(c, "\\u00e9", 1);
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn valid_lines_decode_the_same(e in event()) {
        let Some(e) = e else { return Ok(()) };
        let line = e.to_line().map_err(|e| TestCaseError::fail(e.to_string()))?;
        // (The event itself may hold a -0.0 that its line writes as 0.)
        let decoded = decode_line(&line).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(decoded.to_line().ok(), Some(line.clone()));
        agree(&line)?;
    }

    /// The line a write appends is made from the encoding its id hashes: it must be the
    /// event's canonical line, and read back as the same event.
    #[test]
    fn built_lines_are_the_canonical_lines(built in event_with_line()) {
        let Some((e, line)) = built else { return Ok(()) };
        prop_assert_eq!(Some(line.clone()), e.to_line().ok());
        let decoded = decode_line(&line).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(decoded.id, e.id);
        prop_assert_eq!(decoded.entry, e.entry);
    }

    #[test]
    fn mutated_lines_decode_the_same(e in event(), how in any::<u8>(), at in any::<usize>(), byte in any::<u8>()) {
        let Some(e) = e else { return Ok(()) };
        let line = e.to_line().map_err(|e| TestCaseError::fail(e.to_string()))?;
        agree(&mutate(&line, how, at, byte))?;
    }

    #[test]
    fn arbitrary_json_decodes_the_same(v in json_value()) {
        agree(&v.to_string())?;
        if let Ok(c) = projections::canonical::to_canonical_string(&v) {
            agree(&c)?;
        }
    }
}

/// Lines built by hand around the edges of canonical form.
#[test]
fn edge_cases_decode_the_same() {
    let base = Event::build(
        TARGET,
        "agent",
        "2026-11-22T10:31:12.123Z",
        vec![PARENT.to_owned()],
        EventData::Update {
            set: [("confidence".to_owned(), Value::from(0.5))]
                .into_iter()
                .collect(),
            reason: Some("r".into()),
        },
    )
    .map(|e| e.to_line().unwrap_or_default())
    .unwrap_or_default();
    let variants = [
        base.clone(),
        base.replacen("0.5", "5e-1", 1),
        base.replacen("0.5", "0.50", 1),
        base.replacen("0.5", "1", 1),
        base.replacen("0.5", "-0", 1),
        base.replacen("0.5", "01", 1),
        base.replacen("0.5", "9007199254740992", 1),
        base.replacen("0.5", "9007199254740991", 1),
        base.replacen("0.5", "1e400", 1),
        base.replacen("0.5", "1E+21", 1),
        base.replacen("0.5", "1e+21", 1),
        base.replacen("\"r\"", "\"\\/\"", 1),
        base.replacen("\"r\"", "\"\\u001f\"", 1),
        base.replacen("\"r\"", "\"\\u001F\"", 1),
        base.replacen("\"r\"", "\"\\u000a\"", 1),
        base.replacen("\"r\"", "\"\u{7f}\"", 1),
        base.replacen(",\"v\":1}", ",\"v\":2}", 1),
        base.replacen(",\"v\":1}", ",\"v\":1} ", 1),
        base.replacen("\"type\":\"update\"", "\"type\":\"upgrade\"", 1),
        base.replacen("{\"actor\"", "{\"actor\":\"x\",\"actor\"", 1),
        base.replacen("\"reason\"", "\"reason\":\"a\",\"reason\"", 1),
        base.replacen(
            "{\"confidence\"",
            "{\"a\":[[[[[[[[[[[[1]]]]]]]]]]]],\"confidence\"",
            1,
        ),
        String::new(),
        "{}".into(),
        "[]".into(),
        "null".into(),
    ];
    for line in variants {
        assert_eq!(
            decode_line(&line),
            reference_decode_line(&line),
            "line: {line}"
        );
    }
}
