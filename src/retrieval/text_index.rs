//! The text index: a projection like the others, derived from each hot entry's state and kept
//! in the store's index keyspace, so it is rebuilt from the log and updated by delta with the
//! entry (its old keys removed, its new keys written). It is never part of the log.
//!
//! | key                          | value                                             |
//! |------------------------------|---------------------------------------------------|
//! | `doc\0<entry id>`            | the entry's [`DocFeatures`]                       |
//! | `tbase\0<chunk>`             | ids and features of [`BASE_CHUNK`] rebuilt entries |
//! | `tblk\0<term>\0<first>`      | a block of up to [`BLOCK_POSTINGS`] postings      |
//! | `text\0<term>\0<entry id>`   | term frequency per field (4 bytes), then features |
//! | `tmask\0<entry id>`          | nothing: the entry's postings in blocks are stale |
//!
//! A rebuild numbers the entries in id order (their *positions*) and writes each term's
//! postings as blocks, in entry order, in one of two forms (the block's first byte says which):
//!
//! - **inline** ([`INLINE_BLOCK`], keyed by the block's first entry id): each posting holds the
//!   entry id, the term frequencies and the entry's features, so scoring the candidates of a
//!   rare term needs nothing else;
//! - **positions** ([`POSITION_BLOCK`], keyed by the block's first position, big-endian): each
//!   posting holds the distance from the previous position and the term frequencies, three or
//!   four bytes, and the entry's id and features are read from the base table (`tbase`: the id
//!   and features of every position, in chunks of [`BASE_CHUNK`], the chunk number big-endian),
//!   a chunk once per query, in order (see `retrieval::postings`).
//!
//! A term found in at least one entry in [`POSITIONS_FROM_SHARE`] (and in at least 1,024
//! entries, [`crate::store::tuning::positions_from_df`]) is written by positions. Such a term's postings would read
//! most chunks of the base table anyway, and written inline they were most of a store's bytes
//! (64 bytes of features and a 27-byte id in each of millions of postings: nine tenths of the
//! store, and of what a rebuild compresses and writes). A rare term stays inline: the entries it
//! names are scattered over the positions, and reading a chunk of the base table for each of
//! them made a query matching a few thousand entries four times slower.
//!
//! Later writes keep the blocks and the base table, write the postings of the entries they
//! change one by one (`text`, with the entry's features), and mask the entry's postings in the
//! blocks (`tmask`), which may be stale. So the postings of a term are those of its blocks whose
//! entry is not masked, then its `text` records; the two never name the same entry. The next
//! rebuild (or a compaction, `crate::store::compact`, once a store has grown by a quarter since
//! it was built) folds everything into blocks again. [`crate::store::Store::dump`] prints the
//! postings so, one per entry, whatever the layout.
//!
//! Corpus statistics for BM25 (entries, total words per field) are [`TextStats`], kept by delta
//! beside the store's other statistics; document frequencies are counted from the postings a query scans anyway.

use super::features::{DocFeatures, F_CONTENT, F_SUBJECT, F_SUMMARY, F_TAGS};
use super::tokenize;
use projections::EntryState;
use serde::{Deserialize, Serialize};

/// Key prefix of the per-entry feature records.
pub const DOC_PREFIX: &[u8] = b"doc\0";
/// Key prefix of the postings written one by one.
pub const TERM_PREFIX: &[u8] = b"text\0";
/// Key prefix of the blocks of postings a rebuild writes.
pub const BLOCK_PREFIX: &[u8] = b"tblk\0";
/// Key prefix of the base table: ids and features of the entries a rebuild indexed.
pub const BASE_PREFIX: &[u8] = b"tbase\0";
/// Key prefix of the masks of entries whose postings in blocks are stale.
pub const MASK_PREFIX: &[u8] = b"tmask\0";
/// Whether an index key (after the index range's prefix) is one of the text index's: they have
/// a range of their own in the store.
pub fn is_text_key(key: &[u8]) -> bool {
    [
        DOC_PREFIX,
        TERM_PREFIX,
        BLOCK_PREFIX,
        BASE_PREFIX,
        MASK_PREFIX,
    ]
    .iter()
    .any(|p| key.starts_with(p))
}
/// Postings in one block.
pub const BLOCK_POSTINGS: usize = 512;
/// Positions in one chunk of the base table.
pub const BASE_CHUNK: u32 = 1024;
/// First byte of a block whose postings hold ids and features.
pub const INLINE_BLOCK: u8 = b'i';
/// First byte of a block whose postings hold positions in the base table.
pub const POSITION_BLOCK: u8 = b'p';
/// A term in at least one hot entry in this many is written by positions, when it is in at
/// least [`crate::store::tuning::positions_from_df`] entries (1,024).
pub const POSITIONS_FROM_SHARE: usize = 8;

/// Whether a rebuild writes the postings of a term found in `df` of `entries` hot entries by
/// positions rather than inline, `from_df` being [`crate::store::tuning::positions_from_df`]
/// (read by the caller: it is a setting of the caller's thread).
pub fn by_positions(df: usize, entries: usize, from_df: usize) -> bool {
    df >= from_df && df.saturating_mul(POSITIONS_FROM_SHARE) >= entries
}

/// The key prefix of all blocks of `term`.
pub fn block_prefix(term: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(BLOCK_PREFIX.len() + term.len() + 1);
    k.extend_from_slice(BLOCK_PREFIX);
    k.extend_from_slice(term.as_bytes());
    k.push(0);
    k
}

/// The key (after the index range's prefix) of the block of `term` whose first posting is
/// `first` (an entry id for an inline block, a big-endian position for one by positions).
pub fn block_key(term: &str, first: &[u8]) -> Vec<u8> {
    let mut k = block_prefix(term);
    k.extend_from_slice(first);
    k
}

/// A block's postings, by form (see the module's documentation).
pub enum Block<'a> {
    Inline(&'a [u8]),
    Positions(&'a [u8]),
}

impl<'a> Block<'a> {
    /// `None` for a value that is not a block.
    pub fn of(value: &'a [u8]) -> Option<Self> {
        match value.split_first()? {
            (&INLINE_BLOCK, rest) => Some(Self::Inline(rest)),
            (&POSITION_BLOCK, rest) => Some(Self::Positions(rest)),
            _ => None,
        }
    }
}

/// Appends one posting to an inline block (started with [`INLINE_BLOCK`]): the id's length (one
/// byte), the id, the term frequencies, the encoded features.
pub fn push_inline(block: &mut Vec<u8>, id: &[u8], tf: &[u8; 4], features: &[u8]) {
    block.push(u8::try_from(id.len()).unwrap_or(u8::MAX));
    block.extend_from_slice(id);
    block.extend_from_slice(tf);
    block.extend_from_slice(features);
}

/// Visits the postings of an inline block (after its first byte) in order, while `visit`
/// returns true; `None` when the bytes are not such postings.
pub fn for_each_inline(
    mut block: &[u8],
    mut visit: impl FnMut(&[u8], Posting) -> bool,
) -> Option<()> {
    while let Some((&len, rest)) = block.split_first() {
        let len = usize::from(len);
        let id = rest.get(..len)?;
        let end = len + 4 + DocFeatures::SIZE;
        let posting = Posting::decode(rest.get(len..end)?)?;
        if !visit(id, posting) {
            break;
        }
        block = rest.get(end..)?;
    }
    Some(())
}

/// The key of the mask of entry `id`.
pub fn mask_key(id: &str) -> Vec<u8> {
    [MASK_PREFIX, id.as_bytes()].concat()
}

/// The key (after the index range's prefix) of chunk `chunk` of the base table.
pub fn base_key(chunk: u32) -> Vec<u8> {
    [BASE_PREFIX, &chunk.to_be_bytes()].concat()
}

/// Appends one position to a chunk of the base table: the id's length (one byte), the id, then
/// 1 and the encoded features for an entry that has some (a hot one), 0 for one that has none.
pub fn push_to_base(chunk: &mut Vec<u8>, id: &[u8], features: Option<&[u8]>) {
    chunk.push(u8::try_from(id.len()).unwrap_or(u8::MAX));
    chunk.extend_from_slice(id);
    match features {
        Some(f) => {
            chunk.push(1);
            chunk.extend_from_slice(f);
        }
        None => chunk.push(0),
    }
}

/// Visits the positions of a chunk of the base table in order, with the id and the features
/// (`None` for an entry without); `None` when the bytes are not such a chunk.
pub fn for_each_in_base(
    mut chunk: &[u8],
    mut visit: impl FnMut(&[u8], Option<DocFeatures>),
) -> Option<()> {
    while let Some((&len, rest)) = chunk.split_first() {
        let len = usize::from(len);
        let id = rest.get(..len)?;
        let (&has, rest) = rest.get(len..)?.split_first()?;
        match has {
            0 => {
                visit(id, None);
                chunk = rest;
            }
            1 => {
                visit(
                    id,
                    Some(DocFeatures::decode(rest.get(..DocFeatures::SIZE)?)?),
                );
                chunk = rest.get(DocFeatures::SIZE..)?;
            }
            _ => return None,
        }
    }
    Some(())
}

/// The offset of each position of a chunk of the base table, in order, in `out`; `None` when
/// the bytes are not such a chunk or an id is longer than `max_id` (the features are decoded only
/// by [`base_at`], for the positions asked for).
pub fn base_offsets(chunk: &[u8], max_id: usize, out: &mut Vec<u32>) -> Option<()> {
    let mut at = 0usize;
    while let Some(&len) = chunk.get(at) {
        let len = usize::from(len);
        if len > max_id {
            return None;
        }
        out.push(u32::try_from(at).ok()?);
        let has = *chunk.get(at + 1 + len)?;
        at += 2 + len;
        match has {
            0 => {}
            1 => {
                chunk.get(at..at + DocFeatures::SIZE)?;
                at += DocFeatures::SIZE;
            }
            _ => return None,
        }
    }
    Some(())
}

/// The id and features of the position at `offset` of a chunk (see [`base_offsets`]); the
/// features `None` for an entry without; `None` when they do not decode.
pub fn base_at(chunk: &[u8], offset: usize) -> Option<(&[u8], Option<DocFeatures>)> {
    let len = usize::from(*chunk.get(offset)?);
    let id = chunk.get(offset + 1..offset + 1 + len)?;
    let rest = chunk.get(offset + 1 + len..)?;
    match rest.split_first()? {
        (0, _) => Some((id, None)),
        (1, f) => Some((id, Some(DocFeatures::decode(f.get(..DocFeatures::SIZE)?)?))),
        _ => None,
    }
}

/// Writes a number in 7-bit groups, low first, the high bit set on all but the last.
fn push_varint(out: &mut Vec<u8>, mut n: u32) {
    while n >= 0x80 {
        out.push(u8::try_from(n & 0x7f).unwrap_or_default() | 0x80);
        n >>= 7;
    }
    out.push(u8::try_from(n).unwrap_or_default());
}

fn take_varint(b: &mut &[u8]) -> Option<u32> {
    let mut n: u32 = 0;
    for shift in (0..35).step_by(7) {
        let (&byte, rest) = b.split_first()?;
        *b = rest;
        n |= u32::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

/// Appends one posting to a block by positions (started with [`POSITION_BLOCK`]): the distance
/// from the previous posting's position (from 0 for a block's first), then a byte whose bits 0
/// to 3 tell which fields hold the term, then the term's frequency in each of those fields.
pub fn push_position(block: &mut Vec<u8>, previous: Option<u32>, position: u32, tf: &[u8; 4]) {
    push_varint(block, position - previous.unwrap_or(0));
    let mut fields = 0u8;
    for (i, n) in tf.iter().enumerate() {
        if *n != 0 {
            fields |= 1 << i;
        }
    }
    block.push(fields);
    block.extend(tf.iter().filter(|n| **n != 0));
}

/// Visits the postings of a block by positions (after its first byte) in order, as positions
/// with their term frequencies, while `visit` returns true; `None` when the bytes are not such
/// postings.
pub fn for_each_position(
    mut block: &[u8],
    mut visit: impl FnMut(u32, [u8; 4]) -> bool,
) -> Option<()> {
    let mut position: Option<u32> = None;
    while !block.is_empty() {
        let delta = take_varint(&mut block)?;
        let at = match position {
            None => delta,
            Some(p) if delta > 0 => p.checked_add(delta)?,
            Some(_) => return None,
        };
        position = Some(at);
        let (&fields, rest) = block.split_first()?;
        if fields > 0xf {
            return None;
        }
        block = rest;
        let mut tf = [0u8; 4];
        for (i, slot) in tf.iter_mut().enumerate() {
            if fields & (1 << i) != 0 {
                let (&n, rest) = block.split_first()?;
                *slot = n;
                block = rest;
            }
        }
        if !visit(at, tf) {
            break;
        }
    }
    Some(())
}

/// The key prefix of all postings of `term`.
pub fn term_prefix(term: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(TERM_PREFIX.len() + term.len() + 1);
    k.extend_from_slice(TERM_PREFIX);
    k.extend_from_slice(term.as_bytes());
    k.push(0);
    k
}

/// What indexing makes of an entry's text: its terms with their frequency per field, in the
/// order first found, and its features (whose field lengths are counted from the same words).
/// Nothing needs the terms sorted (postings are gathered by term, records are written by key),
/// and sorting them by their text was 4% of a rebuild.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// The terms, one after the other: one allocation an entry rather than one a term (a
    /// rebuild analyzes millions of terms, and freed them on another thread).
    text: String,
    /// Each term's end in `text` (it starts where the one before ends) and its frequencies.
    ends: Vec<(u32, [u8; 4])>,
    pub features: DocFeatures,
}

/// Cuts each text field of an entry once.
pub fn analyze(s: &EntryState) -> Analysis {
    let f = &s.fields;
    let tags = f.tags.join(" ");
    let fields = [
        f.summary.as_str(),
        f.content.as_str(),
        f.subject.as_str(),
        tags.as_str(),
    ];
    debug_assert_eq!(
        [F_SUMMARY, F_CONTENT, F_SUBJECT, F_TAGS],
        [0, 1, 2, 3],
        "fields in the order of the arrays"
    );
    // Counted by the term's number; each term's text copied once.
    let mut slot_of: rustc_hash::FxHashMap<u32, usize> = rustc_hash::FxHashMap::default();
    let mut ends: Vec<(u32, [u8; 4])> = Vec::new();
    let mut text = String::new();
    let mut lens = [0usize; 4];
    tokenize::for_each_numbered_term(fields, |field, number, term| {
        lens[field] += 1;
        let slot = *slot_of.entry(number).or_insert_with(|| {
            text.push_str(term);
            ends.push((u32::try_from(text.len()).unwrap_or(u32::MAX), [0; 4]));
            ends.len() - 1
        });
        if let Some(count) = ends.get_mut(slot).and_then(|(_, tf)| tf.get_mut(field)) {
            *count = count.saturating_add(1);
        }
    });
    Analysis {
        text,
        ends,
        features: DocFeatures::with_lens(s, lens),
    }
}

impl Analysis {
    /// Each term with its frequencies per field (summary, content, subject, tags), in the
    /// order first found.
    pub fn tfs(&self) -> impl Iterator<Item = (&str, [u8; 4])> {
        let mut start = 0;
        self.ends.iter().map(move |&(end, tf)| {
            let end = end as usize;
            let term = self.text.get(start..end).unwrap_or_default();
            start = end;
            (term, tf)
        })
    }

    /// Whether the entry holds `term`.
    pub fn holds(&self, term: &str) -> bool {
        self.tfs().any(|(t, _)| t == term)
    }

    /// The text-index records of entry `id`: its feature record and one posting per term.
    pub fn records(&self, id: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut encoded = Vec::with_capacity(DocFeatures::SIZE);
        self.features.encode(&mut encoded);
        let mut out = Vec::with_capacity(self.ends.len() + 1);
        let mut doc = DOC_PREFIX.to_vec();
        doc.extend_from_slice(id.as_bytes());
        out.push((doc, encoded.clone()));
        for (term, tf) in self.tfs() {
            let mut key = term_prefix(term);
            key.extend_from_slice(id.as_bytes());
            let mut value = Vec::with_capacity(4 + encoded.len());
            value.extend_from_slice(&tf);
            value.extend_from_slice(&encoded);
            out.push((key, value));
        }
        out
    }
}

/// The text-index records of a hot entry: its feature record and one posting per term.
pub fn text_keys(s: &EntryState) -> Vec<(Vec<u8>, Vec<u8>)> {
    analyze(s).records(&s.id)
}

/// A decoded posting.
#[derive(Debug, Clone, Copy)]
pub struct Posting {
    pub tf: [u8; 4],
    pub features: DocFeatures,
}

impl Posting {
    /// Decodes a posting value; `None` when it is not one.
    pub fn decode(value: &[u8]) -> Option<Self> {
        let (tf, rest) = value.split_first_chunk::<4>()?;
        Some(Self {
            tf: *tf,
            features: DocFeatures::decode(rest)?,
        })
    }
}

/// Corpus statistics of the text index, kept by delta: hot entries and words per field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextStats {
    pub docs: i64,
    pub words: [i64; 4],
}

impl TextStats {
    /// Adds (`sign` 1) or removes (`sign` -1) an entry's contribution; cold entries have none.
    pub fn apply(&mut self, s: &EntryState, sign: i64) {
        if !s.is_cold() {
            self.apply_features(&DocFeatures::of(s), sign);
        }
    }

    /// [`TextStats::apply`] for a hot entry whose features are known.
    pub fn apply_features(&mut self, f: &DocFeatures, sign: i64) {
        self.docs += sign;
        for (w, l) in self.words.iter_mut().zip(f.lens) {
            *w += sign * i64::from(l);
        }
    }

    pub fn merge(&mut self, other: &Self) {
        self.docs += other.docs;
        for (w, o) in self.words.iter_mut().zip(other.words) {
            *w += o;
        }
    }

    /// Average words per field (at least a small positive number, for empty corpora).
    pub fn average_lengths(&self) -> [f64; 4] {
        #[expect(
            clippy::cast_precision_loss,
            reason = "corpus sizes are far below 2^52"
        )]
        let docs = self.docs.max(1) as f64;
        #[expect(
            clippy::cast_precision_loss,
            reason = "corpus sizes are far below 2^52"
        )]
        self.words.map(|w| (w.max(0) as f64 / docs).max(0.5))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features() -> DocFeatures {
        DocFeatures {
            confidence: 1,
            evidence_quality: 8,
            evidence_stale: false,
            pinned: true,
            status: projections::Status::Active,
            section: projections::Section::Decisions,
            kind: projections::Kind::Decision,
            created: 5,
            updated: 6,
            valid_to: None,
            scope_hash: 7,
            subject_hash: 8,
            tag_bits: 9,
            lens: [1, 2, 3, 4],
        }
    }

    #[test]
    fn inline_block_round_trip() {
        let f = features();
        let mut encoded = Vec::new();
        f.encode(&mut encoded);
        let mut block = vec![INLINE_BLOCK];
        let ids = ["m-0000000001", "m-00000000000000000000000002"];
        for (i, id) in ids.iter().enumerate() {
            let n = u8::try_from(i).unwrap_or_default();
            push_inline(&mut block, id.as_bytes(), &[n, 0, 0, 1], &encoded);
        }
        let Some(Block::Inline(postings)) = Block::of(&block) else {
            panic!("an inline block");
        };
        let mut seen = Vec::new();
        let whole = for_each_inline(postings, |id, p| {
            seen.push((String::from_utf8_lossy(id).into_owned(), p.tf, p.features));
            true
        });
        assert!(whole.is_some());
        assert_eq!(
            seen,
            vec![
                (ids[0].to_owned(), [0, 0, 0, 1], f),
                (ids[1].to_owned(), [1, 0, 0, 1], f)
            ]
        );
        // A cut block is not a block, nor is one of an unknown form.
        assert!(for_each_inline(&postings[..postings.len() - 3], |_, _| true).is_none());
        assert!(Block::of(b"x").is_none());
        assert!(matches!(
            Block::of(&[POSITION_BLOCK]),
            Some(Block::Positions([]))
        ));
    }

    #[test]
    fn rare_terms_stay_inline() {
        let from = crate::store::tuning::positions_from_df();
        assert_eq!(from, 1024);
        assert!(!by_positions(1023, 1024, from));
        assert!(by_positions(1024, 8192, from));
        assert!(!by_positions(1024, 8193, from));
        assert!(by_positions(100_000, 100_000, from));
    }

    #[test]
    fn base_round_trip() {
        let f = features();
        let mut encoded = Vec::new();
        f.encode(&mut encoded);
        let mut chunk = Vec::new();
        push_to_base(&mut chunk, b"m-0000000001", Some(&encoded));
        push_to_base(&mut chunk, b"m-00000000000000000000000002", None);
        let mut seen = Vec::new();
        let whole = for_each_in_base(&chunk, |id, f| {
            seen.push((String::from_utf8_lossy(id).into_owned(), f));
        });
        assert!(whole.is_some());
        assert_eq!(
            seen,
            vec![
                ("m-0000000001".to_owned(), Some(f)),
                ("m-00000000000000000000000002".to_owned(), None)
            ]
        );
        // A cut chunk is not a chunk.
        assert!(for_each_in_base(&chunk[..20], |_, _| ()).is_none());
        // Read by offsets, position by position, it holds the same.
        let mut offsets = Vec::new();
        assert!(base_offsets(&chunk, 28, &mut offsets).is_some());
        let by_offset: Vec<_> = offsets
            .iter()
            .filter_map(|o| base_at(&chunk, *o as usize))
            .map(|(id, f)| (String::from_utf8_lossy(id).into_owned(), f))
            .collect();
        assert_eq!(by_offset, seen);
        for cut in 1..chunk.len() {
            let mut out = Vec::new();
            assert_eq!(
                base_offsets(&chunk[..cut], 28, &mut out).is_some(),
                for_each_in_base(&chunk[..cut], |_, _| ()).is_some(),
                "cut at {cut}"
            );
        }
        // An id longer than the reader holds makes the chunk unreadable.
        assert!(base_offsets(&chunk, 12, &mut Vec::new()).is_none());
    }

    proptest::proptest! {
        /// Whatever the positions (ascending) and frequencies, a block gives back exactly what
        /// was put in it, and a block cut anywhere but between postings is refused.
        #[test]
        fn position_block_round_trip(
            postings in proptest::collection::btree_map(0u32..u32::MAX, proptest::array::uniform4(0u8..=255), 0..300),
        ) {
            let postings: Vec<(u32, [u8; 4])> = postings.into_iter().collect();
            let mut block = Vec::new();
            let mut previous = None;
            let mut ends = vec![0];
            for (p, tf) in &postings {
                push_position(&mut block, previous, *p, tf);
                previous = Some(*p);
                ends.push(block.len());
            }
            let mut seen = Vec::new();
            let whole = for_each_position(&block, |p, tf| {
                seen.push((p, tf));
                true
            });
            proptest::prop_assert!(whole.is_some());
            proptest::prop_assert_eq!(&seen, &postings);
            for cut in 0..block.len() {
                if !ends.contains(&cut) {
                    proptest::prop_assert!(for_each_position(&block[..cut], |_, _| true).is_none());
                }
            }
        }
    }

    #[test]
    fn posting_round_trip() {
        let f = DocFeatures {
            confidence: 900_000,
            evidence_quality: 10,
            evidence_stale: true,
            pinned: true,
            status: projections::Status::Draft,
            section: projections::Section::State,
            kind: projections::Kind::RunbookStep,
            created: 1,
            updated: -2,
            valid_to: Some(3),
            scope_hash: 4,
            subject_hash: 5,
            tag_bits: 6,
            lens: [7, 8, 9, 10],
        };
        let mut v = vec![1, 2, 3, 4];
        f.encode(&mut v);
        assert_eq!(v.len(), 4 + DocFeatures::SIZE);
        let p = Posting::decode(&v).unwrap_or_else(|| panic!("decodes"));
        assert_eq!(p.tf, [1, 2, 3, 4]);
        assert_eq!(p.features, f);
        assert!(Posting::decode(&v[..10]).is_none());
    }
}
