//! What ranking and filtering need of an entry, small and fixed-size, so a query can score
//! thousands of candidates from the text index without decoding a single entry.
//!
//! [`DocFeatures::of`] is a pure function of the entry's state: the features stored in the text
//! index and the features computed from an entry read whole are the same value, so a score never
//! depends on how its entry was found.

use projections::{EntryState, Kind, Section, Status};

/// Text fields, in the order of term-frequency and length arrays.
pub const FIELDS: [&str; 4] = ["summary", "content", "subject", "tags"];
pub const F_SUMMARY: usize = 0;
pub const F_CONTENT: usize = 1;
pub const F_SUBJECT: usize = 2;
pub const F_TAGS: usize = 3;

/// Ranking and filtering features of one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocFeatures {
    /// Confidence in millionths.
    pub confidence: u32,
    /// Quality of the best evidence, in tenths (code/artifact 10, ticket/doc 8, log/screenshot 6,
    /// assumption 4; none 0).
    pub evidence_quality: u8,
    pub evidence_stale: bool,
    /// Pinned entries do not decay in ranking (see `rank::decay`).
    pub pinned: bool,
    pub status: Status,
    pub section: Section,
    pub kind: Kind,
    /// Unix milliseconds.
    pub created: i64,
    pub updated: i64,
    /// Unix milliseconds, when the entry has a `valid_to`.
    pub valid_to: Option<i64>,
    /// [`hash`] of the scope and of the subject: a cheap pre-filter, confirmed on the entry.
    pub scope_hash: u64,
    pub subject_hash: u64,
    /// One bit per tag ([`tag_bit`]): an entry can have all the wanted tags only if it has all
    /// their bits.
    pub tag_bits: u64,
    /// Words per text field, for length normalization.
    pub lens: [u16; 4],
}

/// FNV-1a, 64 bits: stable across versions and platforms, unlike the std hasher.
pub fn hash(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The bit a tag sets in [`DocFeatures::tag_bits`].
pub fn tag_bit(tag: &str) -> u64 {
    1 << (hash(tag) % 64)
}

/// Unix milliseconds of a stored or given timestamp (timestamps have millisecond precision,
/// and expiry is decided to the millisecond); `None` when it does not parse.
pub fn unix_millis(text: &str) -> Option<i64> {
    crate::clock::parse_time(text)
        .ok()
        .map(|t| t.timestamp_millis())
}

fn words_u16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

impl DocFeatures {
    /// The features of an entry.
    pub fn of(s: &EntryState) -> Self {
        let f = &s.fields;
        let tags_text = f.tags.join(" ");
        Self::with_lens(
            s,
            [
                super::tokenize::count_words(&f.summary),
                super::tokenize::count_words(&f.content),
                super::tokenize::count_words(&f.subject),
                super::tokenize::count_words(&tags_text),
            ],
        )
    }

    /// The features of an entry that ranking and filtering use: all but the word counts of
    /// its fields (left 0), which only the BM25 length normalization reads, from the index.
    pub fn for_ranking(s: &EntryState) -> Self {
        Self::with_lens(s, [0; 4])
    }

    /// The features of an entry whose fields' word counts are known (summary, content, subject,
    /// tags): what indexing computes anyway, so the words are not cut twice.
    pub fn with_lens(s: &EntryState, lens: [usize; 4]) -> Self {
        let f = &s.fields;
        let best = f
            .evidence
            .iter()
            .map(|e| e.kind.quality())
            .fold(0.0_f64, f64::max);
        Self {
            confidence: u32::try_from(projections::model::confidence_micros(f.confidence))
                .unwrap_or(0),
            evidence_quality: quality_tenths(best),
            evidence_stale: s.evidence_stale,
            pinned: s.pinned,
            status: s.status,
            section: f.section,
            kind: f.kind,
            created: unix_millis(&s.created_at).unwrap_or(0),
            updated: unix_millis(&s.updated_at).unwrap_or(0),
            valid_to: f.valid_to.as_deref().and_then(unix_millis),
            scope_hash: hash(&f.scope),
            subject_hash: hash(&f.subject),
            tag_bits: f.tags.iter().fold(0, |acc, t| acc | tag_bit(t)),
            lens: lens.map(words_u16),
        }
    }

    pub fn confidence(&self) -> f64 {
        f64::from(self.confidence) / 1_000_000.0
    }

    pub fn evidence_quality(&self) -> f64 {
        f64::from(self.evidence_quality) / 10.0
    }

    /// Encoded size in bytes.
    pub const SIZE: usize = 4 + 1 + 1 + 3 + 8 * 3 + 8 * 3 + 2 * 4;

    /// Fixed-size little-endian encoding. One byte holds the flags: bit 0 stale evidence,
    /// bit 1 pinned.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.confidence.to_le_bytes());
        out.push(self.evidence_quality);
        out.push(u8::from(self.evidence_stale) | (u8::from(self.pinned) << 1));
        out.push(index_of(Status::ALL, self.status));
        out.push(index_of(Section::ALL, self.section));
        out.push(index_of(Kind::ALL, self.kind));
        out.extend_from_slice(&self.created.to_le_bytes());
        out.extend_from_slice(&self.updated.to_le_bytes());
        out.extend_from_slice(&self.valid_to.unwrap_or(i64::MIN).to_le_bytes());
        out.extend_from_slice(&self.scope_hash.to_le_bytes());
        out.extend_from_slice(&self.subject_hash.to_le_bytes());
        out.extend_from_slice(&self.tag_bits.to_le_bytes());
        for l in self.lens {
            out.extend_from_slice(&l.to_le_bytes());
        }
    }

    /// Decodes [`DocFeatures::encode`]'s bytes; `None` when they are not such bytes.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let mut r = Reader(b);
        let confidence = u32::from_le_bytes(r.take()?);
        let [evidence_quality] = r.take::<1>()?;
        let [flags] = r.take::<1>()?;
        if flags > 3 {
            return None;
        }
        let [status] = r.take::<1>()?;
        let [section] = r.take::<1>()?;
        let [kind] = r.take::<1>()?;
        let created = i64::from_le_bytes(r.take()?);
        let updated = i64::from_le_bytes(r.take()?);
        let valid_to = i64::from_le_bytes(r.take()?);
        let scope_hash = u64::from_le_bytes(r.take()?);
        let subject_hash = u64::from_le_bytes(r.take()?);
        let tag_bits = u64::from_le_bytes(r.take()?);
        let mut lens = [0u16; 4];
        for l in &mut lens {
            *l = u16::from_le_bytes(r.take()?);
        }
        Some(Self {
            confidence,
            evidence_quality,
            evidence_stale: flags & 1 != 0,
            pinned: flags & 2 != 0,
            status: *Status::ALL.get(usize::from(status))?,
            section: *Section::ALL.get(usize::from(section))?,
            kind: *Kind::ALL.get(usize::from(kind))?,
            created,
            updated,
            valid_to: (valid_to != i64::MIN).then_some(valid_to),
            scope_hash,
            subject_hash,
            tag_bits,
            lens,
        })
    }
}

fn quality_tenths(q: f64) -> u8 {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "evidence quality is in [0, 1]"
    )]
    let t = (q.clamp(0.0, 1.0) * 10.0).round() as u8;
    t
}

fn index_of<T: PartialEq>(all: &[T], v: T) -> u8 {
    u8::try_from(all.iter().position(|x| *x == v).unwrap_or(0)).unwrap_or(0)
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Encoding then decoding gives the same features, whatever the flags (stale evidence,
        /// pinned share one byte) and values; a flags byte no encoder writes is refused.
        #[test]
        fn encode_decode_round_trip(
            confidence in 0u32..=1_000_000,
            evidence_quality in 0u8..=10,
            evidence_stale in any::<bool>(),
            pinned in any::<bool>(),
            status in 0usize..Status::ALL.len(),
            section in 0usize..Section::ALL.len(),
            kind in 0usize..Kind::ALL.len(),
            created in any::<i64>(),
            updated in any::<i64>(),
            valid_to in prop::option::of(any::<i64>().prop_filter("the none marker", |v| *v != i64::MIN)),
            hashes in any::<(u64, u64, u64)>(),
            lens in any::<[u16; 4]>(),
        ) {
            let f = DocFeatures {
                confidence,
                evidence_quality,
                evidence_stale,
                pinned,
                status: Status::ALL[status],
                section: Section::ALL[section],
                kind: Kind::ALL[kind],
                created,
                updated,
                valid_to,
                scope_hash: hashes.0,
                subject_hash: hashes.1,
                tag_bits: hashes.2,
                lens,
            };
            let mut bytes = Vec::new();
            f.encode(&mut bytes);
            prop_assert_eq!(bytes.len(), DocFeatures::SIZE);
            prop_assert_eq!(DocFeatures::decode(&bytes), Some(f));
            bytes[5] = 4;
            prop_assert_eq!(DocFeatures::decode(&bytes), None);
        }
    }
}
