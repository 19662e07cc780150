//! Recognising a known event line without decoding it.
//!
//! A canonical line is its body (the event without `id`) with `"id":"<64 hex>",` inserted just
//! before the top-level `"parents"` member, which is the last `,"parents":[` of the line (nothing
//! after it can contain that text). So the id can be read off the line, and the line's body
//! spliced out and hashed, without parsing JSON. When that hash equals the id and the store
//! already holds an event with this id, the line is byte for byte the line the store decoded and
//! verified before: blake3 makes any other body hash differently.

use projections::event::EVENT_DOMAIN;

const PARENTS: &[u8] = b",\"parents\":[";
const ID_KEY: &[u8] = b"\"id\":\"";
const ID_HEX: usize = 64;

/// The id stated by a canonical line and whether the line's body hashes to it; `None` when the
/// line does not have the shape of a canonical event line (decode it to learn why).
pub fn stated_id(line: &[u8]) -> Option<(&str, bool)> {
    let (id, key_start, p) = id_at(line)?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(EVENT_DOMAIN);
    hasher.update(&line[..key_start]);
    hasher.update(&line[p + 1..]);
    let ok = hasher.finalize().to_hex().as_str() == id;
    Some((id, ok))
}

/// The id a canonical line states, without checking that its body hashes to it: enough to
/// tell which events a file holds (a line that lies about its id is found when it is read).
pub fn stated_id_unchecked(line: &[u8]) -> Option<&str> {
    id_at(line).map(|(id, _, _)| id)
}

/// The stated id, where its key starts, and where `,"parents":[` starts.
fn id_at(line: &[u8]) -> Option<(&str, usize, usize)> {
    let p = line.windows(PARENTS.len()).rposition(|w| w == PARENTS)?;
    let id_start = p.checked_sub(ID_HEX + 1)?;
    let key_start = id_start.checked_sub(ID_KEY.len())?;
    if line.get(key_start..id_start)? != ID_KEY || line.get(p - 1) != Some(&b'"') {
        return None;
    }
    let id = std::str::from_utf8(&line[id_start..p - 1]).ok()?;
    if !id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    Some((id, key_start, p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use projections::{EntryFields, Event, EventData, Kind, Section, Status};

    fn line() -> String {
        let fields: EntryFields = serde_json::from_value(serde_json::json!({
            "section": "decisions", "kind": "decision", "subject": "a.b", "scope": "repo",
            "summary": "has \"parents\":[ inside", "content": ",\"parents\":[\"x\"]",
            "confidence": 0.5
        }))
        .expect("fields");
        let _ = (Section::Decisions, Kind::Decision);
        Event::build(
            "",
            "t",
            "2026-01-01T00:00:00.000Z",
            vec![],
            EventData::Create {
                fields,
                status: Status::Active,
            },
        )
        .expect("event")
        .to_line()
        .expect("line")
    }

    #[test]
    fn reads_and_verifies_the_id_of_a_canonical_line() {
        let l = line();
        let decoded = projections::decode_line(&l).expect("decodes");
        assert_eq!(stated_id(l.as_bytes()), Some((decoded.id.as_str(), true)));
    }

    #[test]
    fn any_changed_byte_fails_the_hash_or_the_shape() {
        let l = line().into_bytes();
        for i in 0..l.len() {
            let mut t = l.clone();
            t[i] ^= 0x01;
            assert!(
                !matches!(stated_id(&t), Some((_, true))),
                "byte {i} changed and the line still verified"
            );
        }
    }
}
