//! One pass over a log line for the common case: a valid event.
//!
//! The reference decoder ([`crate::event::reference_decode_line`]) parses a line into a generic
//! JSON value, encodes that value canonically and compares, then hashes freshly built strings.
//! This module reads the raw bytes once instead: it checks canonical form while it scans (the
//! fixed member order of an event, sorted keys, no whitespace, the RFC 8785 escapes and numbers),
//! decodes the data straight into typed fields, and hashes the line itself with the `id` member
//! (and, for an entry id, the `entry` member or `data.by`) left out.
//!
//! It only ever answers "valid, and here is the event" or "not sure": anything unusual (an escape
//! in a key, an unknown type, a hash that does not match, a number it would have to think about)
//! is left to the reference decoder, which then gives the same answer and the same error as
//! before. So the two decoders accept exactly the same lines, and a differential test holds the
//! fast one to giving the same event.

use crate::canonical::{MAX_SAFE_INTEGER, write_f64};
use crate::event::{
    ENTRY_DOMAIN, ENTRY_ID_CHARS, EVENT_DOMAIN, Event, EventData, entry_id_from_hash,
    expected_entry_id,
};
use crate::model::{EntryFields, EventType, Evidence, Kind, Section, Status};
use serde::Deserialize;

/// Deepest nesting the scanner follows; deeper lines go to the reference decoder (whose JSON
/// parser has its own limit).
const MAX_DEPTH: u32 = 64;

/// A byte range of the line.
#[derive(Clone, Copy, Debug)]
struct Span {
    start: usize,
    end: usize,
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn eat(&mut self, literal: &[u8]) -> Option<()> {
        let end = self.i.checked_add(literal.len())?;
        (self.b.get(self.i..end)? == literal).then(|| self.i = end)
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Moves to the first byte that is a quote, a backslash or a control character, eight bytes
    /// at a time (or to the last few bytes of the line, which are read one by one).
    ///
    /// Each test flags a byte of the word with its high bit; the lowest flag of each is exact
    /// (a borrow can only flag bytes above the first true one), so the lowest flag of the three
    /// is the first byte that is not plain. Strings are mostly short (keys, enum values), and a
    /// byte-by-byte loop after a failed block test cost about 15 instructions a byte.
    fn skip_plain(&mut self) {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
        while let Some(word) = self.b.get(self.i..).and_then(|b| b.first_chunk::<8>()) {
            let w = u64::from_le_bytes(*word);
            let control = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
            let special =
                control | zero(w ^ (ONES * u64::from(b'"'))) | zero(w ^ (ONES * u64::from(b'\\')));
            if special != 0 {
                self.i += (special.trailing_zeros() / 8) as usize;
                return;
            }
            self.i += 8;
        }
    }

    /// A canonical string; returns the span of its contents and whether it holds an escape.
    fn string(&mut self) -> Option<(Span, bool)> {
        self.eat(b"\"")?;
        let start = self.i;
        let mut escaped = false;
        loop {
            self.skip_plain();
            let c = self.peek()?;
            match c {
                b'"' => {
                    let span = Span { start, end: self.i };
                    self.i += 1;
                    return Some((span, escaped));
                }
                b'\\' => {
                    escaped = true;
                    self.i += 1;
                    match self.peek()? {
                        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 1,
                        b'u' => {
                            // Only control characters without a short escape are written as
                            // `\u00xx`, in lowercase.
                            let hex = self.b.get(self.i + 1..self.i + 5)?;
                            let digit = |d: u8| match d {
                                b'0'..=b'9' => Some(d - b'0'),
                                b'a'..=b'f' => Some(d - b'a' + 10),
                                _ => None,
                            };
                            if hex[0] != b'0' || hex[1] != b'0' {
                                return None;
                            }
                            let value = digit(hex[2])? * 16 + digit(hex[3])?;
                            if value >= 0x20 || matches!(value, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                                return None;
                            }
                            self.i += 5;
                        }
                        _ => return None,
                    }
                }
                0x00..=0x1f => return None,
                _ => self.i += 1,
            }
        }
    }

    /// A number in its canonical form.
    fn number(&mut self) -> Option<()> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                while matches!(self.peek(), Some(b'0'..=b'9')) {
                    self.i += 1;
                }
            }
            _ => return None,
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            integer = false;
            self.i += 1;
            self.digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            integer = false;
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.digits()?;
        }
        let token = std::str::from_utf8(self.b.get(start..self.i)?).ok()?;
        if integer {
            // `0` or no leading zero (the grammar above), not `-0`, and a safe magnitude.
            let magnitude = token.strip_prefix('-').unwrap_or(token);
            let safe = magnitude.len() <= 16
                && magnitude
                    .parse::<u64>()
                    .is_ok_and(|n| n <= MAX_SAFE_INTEGER);
            return (safe && token != "-0").then_some(());
        }
        let value: f64 = token.parse().ok()?;
        if !value.is_finite() || (value.abs() > MAX_SAFE_INTEGER as f64 && value.abs() < 1e21) {
            return None;
        }
        let mut canonical = String::with_capacity(24);
        write_f64(&mut canonical, value).ok()?;
        (canonical == token).then_some(())
    }

    fn digits(&mut self) -> Option<()> {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        (self.i > start).then_some(())
    }

    fn value(&mut self, depth: u32) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' => self.object(depth + 1).map(|_| ()),
            b'[' => self.array(depth + 1),
            b't' => self.eat(b"true"),
            b'f' => self.eat(b"false"),
            b'n' => self.eat(b"null"),
            _ => self.number(),
        }
    }

    fn array(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b"[")?;
        if self.eat(b"]").is_some() {
            return Some(());
        }
        loop {
            self.value(depth)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An object whose keys are plain (no escapes, no characters whose UTF-8 and UTF-16 orders
    /// differ) and strictly increasing. Returns the span of the whole object and the spans of its
    /// first member's key and value.
    fn object(&mut self, depth: u32) -> Option<(Span, Option<(Span, Span)>)> {
        if depth > MAX_DEPTH {
            return None;
        }
        let start = self.i;
        self.eat(b"{")?;
        let mut first = None;
        if self.eat(b"}").is_none() {
            let mut previous: Option<&[u8]> = None;
            loop {
                let (key, escaped) = self.string()?;
                let key_bytes = self.b.get(key.start..key.end)?;
                if escaped
                    || key_bytes.iter().any(|&c| c >= 0xEE)
                    || previous.is_some_and(|p| p >= key_bytes)
                {
                    return None;
                }
                previous = Some(key_bytes);
                self.eat(b":")?;
                let value_start = self.i;
                self.value(depth)?;
                if first.is_none() {
                    first = Some((
                        key,
                        Span {
                            start: value_start,
                            end: self.i,
                        },
                    ));
                }
                match self.peek()? {
                    b',' => self.i += 1,
                    b'}' => {
                        self.i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        Some((Span { start, end: self.i }, first))
    }

    /// A string member value without escapes, as text.
    /// The plain strings of an array whose `[` was just read, through its `]`.
    fn string_list(&mut self) -> Option<Vec<&'a str>> {
        let mut items = Vec::new();
        if self.eat(b"]").is_some() {
            return Some(items);
        }
        loop {
            items.push(self.plain_string()?);
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(items);
                }
                _ => return None,
            }
        }
    }

    fn plain_string(&mut self) -> Option<&'a str> {
        let (span, escaped) = self.string()?;
        if escaped {
            return None;
        }
        std::str::from_utf8(self.b.get(span.start..span.end)?).ok()
    }
}

/// The data of a create, read straight into its fields: [`EntryFields`] plus `status`, with the
/// same defaults and the same refusal of unknown keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateData {
    section: Section,
    kind: Kind,
    subject: String,
    scope: String,
    summary: String,
    content: String,
    #[serde(default)]
    tags: Vec<String>,
    confidence: f64,
    #[serde(default)]
    evidence: Vec<Evidence>,
    #[serde(default)]
    related_entries: Vec<String>,
    #[serde(default)]
    valid_from: Option<String>,
    #[serde(default)]
    valid_to: Option<String>,
    #[serde(default)]
    review_interval: Option<String>,
    status: Status,
}

fn read_data(kind: EventType, data: &str) -> Option<EventData> {
    if kind == EventType::Create {
        let mut d: CreateData = serde_json::from_str(data).ok()?;
        // A replay holds every event at once: no spare capacity in the lists.
        d.tags.shrink_to_fit();
        d.evidence.shrink_to_fit();
        d.related_entries.shrink_to_fit();
        return Some(EventData::Create {
            fields: EntryFields {
                section: d.section,
                kind: d.kind,
                subject: d.subject,
                scope: d.scope,
                summary: d.summary,
                content: d.content,
                tags: d.tags,
                confidence: d.confidence,
                evidence: d.evidence,
                related_entries: d.related_entries,
                valid_from: d.valid_from,
                valid_to: d.valid_to,
                review_interval: d.review_interval,
            },
            status: d.status,
        });
    }
    // The other types are rarer and small: read them exactly as the reference decoder does.
    let value: serde_json::Value = serde_json::from_str(data).ok()?;
    EventData::from_value(kind, value).ok()
}

fn hash_without(domain: &[u8], line: &[u8], mut cuts: Vec<Span>) -> Option<blake3::Hash> {
    cuts.sort_by_key(|c| c.start);
    let mut hasher = blake3::Hasher::new();
    hasher.update(domain);
    let mut from = 0;
    for cut in cuts {
        hasher.update(line.get(from..cut.start)?);
        from = cut.end;
    }
    hasher.update(line.get(from..)?);
    Some(hasher.finalize())
}

/// Decodes a valid event line in one pass; `None` when the line is not a valid event *or* takes
/// a case this reader leaves to the reference decoder.
pub(crate) fn decode_valid_line(line: &str) -> Option<Event> {
    decode_fast(line, true)
}

/// [`decode_valid_line`] without the hash checks, for a line already verified.
pub(crate) fn decode_verified_line(line: &str) -> Option<Event> {
    decode_fast(line, false)
}

fn decode_fast(line: &str, verify_ids: bool) -> Option<Event> {
    let mut s = Scanner {
        b: line.as_bytes(),
        i: 0,
    };
    s.eat(b"{\"actor\":")?;
    let (actor_span, actor_escaped) = s.string()?;
    s.eat(b",\"at\":")?;
    let at = s.plain_string()?;
    s.eat(b",\"data\":")?;
    let (data, first_member) = s.object(1)?;
    // The `entry` member, comma first, is what a create's entry id leaves out.
    let entry_member_start = s.i;
    s.eat(b",\"entry\":")?;
    let entry = s.plain_string()?;
    // The `id` member with the comma after it is what the event id leaves out.
    s.eat(b",")?;
    let id_member_start = s.i;
    s.eat(b"\"id\":")?;
    let id = s.plain_string()?;
    s.eat(b",")?;
    let id_member_end = s.i;
    s.eat(b"\"parents\":[")?;
    let parents = s.string_list()?.into_iter().map(str::to_owned).collect();
    s.eat(b",\"type\":")?;
    let type_name = s.plain_string()?;
    s.eat(b",\"v\":1}")?;
    if s.i != line.len() {
        return None;
    }
    let kind = EventType::parse(type_name)?;
    let actor = if actor_escaped {
        // Rare: let serde_json undo the escapes of the whole literal.
        serde_json::from_str::<String>(line.get(actor_span.start - 1..=actor_span.end)?).ok()?
    } else {
        line.get(actor_span.start..actor_span.end)?.to_owned()
    };
    let event = Event {
        id: id.to_owned(),
        entry: entry.to_owned(),
        actor,
        at: at.to_owned(),
        parents,
        data: read_data(kind, line.get(data.start..data.end)?)?,
    };
    event.check_fields().ok()?;
    if !verify_ids {
        return Some(event);
    }

    let bytes = line.as_bytes();
    let id_member = Span {
        start: id_member_start,
        end: id_member_end,
    };
    let computed = hash_without(EVENT_DOMAIN, bytes, vec![id_member])?;
    if computed.to_hex().as_str() != event.id {
        return None;
    }
    match &event.data {
        EventData::Create { .. } => {
            // Without `entry` and `id`: from the comma before `"entry"` to the one before
            // `"parents"`.
            let cut = Span {
                start: entry_member_start,
                end: id_member_end - 1,
            };
            let hash = hash_without(ENTRY_DOMAIN, bytes, vec![cut])?;
            if expected_entry_id(&hash, &event.entry) != event.entry {
                return None;
            }
        }
        EventData::Supersede {
            by,
            replacement: Some(_),
            ..
        } => {
            // `by` sorts first in the data of a supersede; it and its comma are left out.
            let (key, value) = first_member?;
            if bytes.get(key.start..key.end)? != b"by" || bytes.get(value.end) != Some(&b',') {
                return None;
            }
            let by_member = Span {
                start: key.start - 1,
                end: value.end + 1,
            };
            let hash = hash_without(ENTRY_DOMAIN, bytes, vec![by_member, id_member])?;
            if entry_id_from_hash(&hash, ENTRY_ID_CHARS) != *by {
                return None;
            }
        }
        _ => {}
    }
    Some(event)
}

/// What grouping events by entry needs of a line: the event's id, entry and parents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header<'a> {
    pub id: &'a str,
    pub entry: &'a str,
    pub parents: Vec<&'a str>,
}

/// The [`Header`] of a line verified before (see [`crate::event::decode_verified_line`]), read
/// without decoding its data: a replay reads every line twice, and the first read only groups
/// the events by entry. `None` for a line this reader does not take, and for a supersede (its
/// data may name the entry it creates, a second entry the event projects onto): decode those.
pub fn trusted_header(line: &str) -> Option<Header<'_>> {
    let mut s = Scanner {
        b: line.as_bytes(),
        i: 0,
    };
    s.eat(b"{\"actor\":")?;
    s.string()?;
    s.eat(b",\"at\":")?;
    s.plain_string()?;
    s.eat(b",\"data\":")?;
    s.object(1)?;
    s.eat(b",\"entry\":")?;
    let entry = s.plain_string()?;
    s.eat(b",\"id\":")?;
    let id = s.plain_string()?;
    s.eat(b",\"parents\":[")?;
    let parents = s.string_list()?;
    s.eat(b",\"type\":")?;
    let kind = EventType::parse(s.plain_string()?)?;
    s.eat(b",\"v\":1}")?;
    if s.i != line.len() || kind == EventType::Supersede {
        return None;
    }
    Some(Header { id, entry, parents })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::reference_decode_line;
    use crate::model::{EvidenceType, Lifecycle};
    use crate::{Replacement, Section};

    fn fields() -> EntryFields {
        EntryFields {
            section: Section::Decisions,
            kind: Kind::Decision,
            subject: "auth.tokens".into(),
            scope: "repo".into(),
            summary: "Use \"short\" tokens\n\u{1}\u{7f} é \u{e000}".into(),
            content: "x".repeat(100),
            tags: vec!["a".into(), "b\\c".into()],
            confidence: 0.25,
            evidence: vec![Evidence {
                kind: EvidenceType::Code,
                uri: "src/a.rs".into(),
                note: "n".into(),
            }],
            related_entries: vec![],
            valid_from: Some("2026-01-01T00:00:00Z".into()),
            valid_to: None,
            review_interval: None,
        }
    }

    /// The one-pass reader really takes the common lines (and agrees with the reference).
    #[test]
    fn valid_lines_take_the_fast_path() {
        let at = "2026-11-22T10:31:12.123Z";
        let create = Event::build(
            "",
            "agent \"7\"",
            at,
            vec![],
            EventData::Create {
                fields: fields(),
                status: Status::Active,
            },
        );
        let Ok(create) = create else {
            panic!("create does not build")
        };
        let parents = vec![create.id.clone()];
        let data = [
            EventData::Update {
                set: [("confidence".to_owned(), serde_json::Value::from(1e-7))]
                    .into_iter()
                    .collect(),
                reason: Some("r".into()),
            },
            EventData::Supersede {
                by: String::new(),
                reason: None,
                replacement: Some(Replacement {
                    fields: fields(),
                    status: Status::Draft,
                }),
            },
            EventData::Transition {
                to: Lifecycle::Decaying,
                reason: "old".into(),
            },
            EventData::EvidenceChecked { stale: vec![] },
        ];
        let mut events = vec![create.clone()];
        for d in data {
            match Event::build(&create.entry, "a", at, parents.clone(), d) {
                Ok(e) => events.push(e),
                Err(e) => panic!("{e}"),
            }
        }
        for e in events {
            let line = e.to_line().unwrap_or_default();
            assert_eq!(decode_valid_line(&line).as_ref(), Some(&e), "{line}");
            // The header read alone names what the whole decoding does; a supersede is left
            // to it (its data may name a second entry).
            let header = trusted_header(&line);
            if matches!(e.data, EventData::Supersede { .. }) {
                assert_eq!(header, None, "{line}");
            } else {
                let parents: Vec<&str> = e.parents.iter().map(String::as_str).collect();
                let expected = Header {
                    id: &e.id,
                    entry: &e.entry,
                    parents,
                };
                assert_eq!(header, Some(expected), "{line}");
            }
            assert_eq!(reference_decode_line(&line), Ok(e));
        }
    }

    /// A line the header reader takes is one whose structure is an event's: cut short or
    /// with a member out of order, it is left to the decoder.
    #[test]
    fn the_header_reader_takes_only_whole_event_lines() {
        let at = "2026-11-22T10:31:12.123Z";
        let Ok(e) = Event::build(
            "",
            "a",
            at,
            vec![],
            EventData::Create {
                fields: fields(),
                status: Status::Active,
            },
        ) else {
            panic!("create does not build")
        };
        let line = e.to_line().unwrap_or_default();
        assert!(trusted_header(&line).is_some());
        for cut in [1, line.len() / 2, line.len() - 1] {
            assert_eq!(trusted_header(&line[..cut]), None, "cut at {cut}");
        }
        let swapped = line.replacen("\"actor\":\"a\",", "", 1).replacen(
            "\"v\":1}",
            "\"v\":1,\"actor\":\"a\"}",
            1,
        );
        assert_eq!(trusted_header(&swapped), None);
    }

    proptest::proptest! {
        /// Skipping plain bytes stops exactly where a byte-by-byte scan finds the first quote,
        /// backslash or control character, or within the last seven bytes when there is none
        /// before them; whatever the bytes (multi-byte UTF-8, bytes at 0x1f/0x20, 0x80 and up).
        #[test]
        fn skipping_plain_bytes_stops_at_the_first_special_one(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::Just(b'"'),
                    proptest::prelude::Just(b'\\'),
                    0u8..0x21,
                    0x20u8..=0xff,
                    0x5bu8..0x5e,
                    0xa0u8..0xa3,
                ],
                0..80,
            ),
            from in 0usize..80,
        ) {
            let from = from.min(bytes.len());
            let mut s = Scanner { b: &bytes, i: from };
            s.skip_plain();
            let first = bytes[from..]
                .iter()
                .position(|&c| c < 0x20 || c == b'"' || c == b'\\')
                .map(|p| from + p);
            match first {
                Some(at) if at + 8 <= bytes.len() || s.i == at => proptest::prop_assert_eq!(s.i, at),
                _ => {
                    proptest::prop_assert!(s.i + 8 > bytes.len(), "stopped early at {}", s.i);
                    proptest::prop_assert!(first.is_none_or(|at| s.i <= at));
                }
            }
        }
    }
}
