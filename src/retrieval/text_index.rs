//! The text index: a projection like the others, derived from each hot entry's state and kept
//! in the store's index keyspace, so it is rebuilt from the log and updated by delta with the
//! entry (its old keys removed, its new keys written). It is never part of the log.
//!
//! | key                          | value                                             |
//! |------------------------------|---------------------------------------------------|
//! | `doc\0<entry id>`            | the entry's [`DocFeatures`]                       |
//! | `tblk\0<term>\0<first id>`   | a block of up to [`BLOCK_POSTINGS`] postings      |
//! | `text\0<term>\0<entry id>`   | term frequency per field (4 bytes), then features |
//! | `tmask\0<entry id>`          | nothing: the entry's postings in blocks are stale |
//!
//! A rebuild writes each term's postings as blocks, in entry-id order: a few records per term
//! instead of one per entry, which is what makes a rebuild and the scan of a common word cheap.
//! Later writes keep the blocks and write the postings of the entries they change one by one
//! (`text`), and mask the entry's postings in the blocks (`tmask`), which may be stale. So the
//! postings of a term are those of its blocks whose entry is not masked, then its `text`
//! records; the two never name the same entry. The next rebuild folds everything into blocks
//! again. [`crate::store::Store::dump`] prints the postings so, one per entry, whatever the
//! layout.
//!
//! Every posting carries the features of its entry, so scoring the candidates of a query is
//! one ordered scan per query term, with no lookup per candidate. (Postings of term frequencies
//! alone, with the features read from the `doc` records, made the store a third smaller but a
//! query matching a few thousand entries twice as slow: those reads are random.) Corpus
//! statistics for BM25
//! (entries, total words per field) are [`TextStats`], kept by delta beside the store's other
//! statistics; document frequencies are counted from the postings a query scans anyway.

use super::features::{DocFeatures, F_CONTENT, F_SUBJECT, F_SUMMARY, F_TAGS};
use super::tokenize;
use projections::EntryState;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Key prefix of the per-entry feature records.
pub const DOC_PREFIX: &[u8] = b"doc\0";
/// Key prefix of the postings written one by one.
pub const TERM_PREFIX: &[u8] = b"text\0";
/// Key prefix of the blocks of postings a rebuild writes.
pub const BLOCK_PREFIX: &[u8] = b"tblk\0";
/// Key prefix of the masks of entries whose postings in blocks are stale.
pub const MASK_PREFIX: &[u8] = b"tmask\0";
/// Postings in one block.
pub const BLOCK_POSTINGS: usize = 128;

/// The key prefix of all blocks of `term`.
pub fn block_prefix(term: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(BLOCK_PREFIX.len() + term.len() + 1);
    k.extend_from_slice(BLOCK_PREFIX);
    k.extend_from_slice(term.as_bytes());
    k.push(0);
    k
}

/// The key of the mask of entry `id`.
pub fn mask_key(id: &str) -> Vec<u8> {
    [MASK_PREFIX, id.as_bytes()].concat()
}

/// Appends one posting to a block: the id's length (one byte), the id, the term frequencies,
/// the encoded features.
pub fn push_to_block(block: &mut Vec<u8>, id: &[u8], tf: &[u8; 4], features: &[u8]) {
    block.push(u8::try_from(id.len()).unwrap_or(u8::MAX));
    block.extend_from_slice(id);
    block.extend_from_slice(tf);
    block.extend_from_slice(features);
}

/// Visits the postings of a block in order, while `visit` returns true; `None` when the bytes
/// are not a block.
pub fn for_each_in_block(
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

/// The key prefix of all postings of `term`.
pub fn term_prefix(term: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(TERM_PREFIX.len() + term.len() + 1);
    k.extend_from_slice(TERM_PREFIX);
    k.extend_from_slice(term.as_bytes());
    k.push(0);
    k
}

/// What indexing makes of an entry's text: its terms with their frequency per field, in term
/// order, and its features (whose field lengths are counted from the same words).
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    pub tfs: Vec<(String, [u8; 4])>,
    pub features: DocFeatures,
}

/// Cuts each text field of an entry once.
pub fn analyze(s: &EntryState) -> Analysis {
    let f = &s.fields;
    let tags = f.tags.join(" ");
    let mut tfs: BTreeMap<String, [u8; 4]> = BTreeMap::new();
    let mut lens = [0usize; 4];
    for (field, text) in [
        (F_SUMMARY, f.summary.as_str()),
        (F_CONTENT, f.content.as_str()),
        (F_SUBJECT, f.subject.as_str()),
        (F_TAGS, tags.as_str()),
    ] {
        tokenize::for_each_term(text, |term| {
            lens[field] += 1;
            let slot = match tfs.get_mut(term) {
                Some(counts) => &mut counts[field],
                None => &mut tfs.entry(term.to_owned()).or_default()[field],
            };
            *slot = slot.saturating_add(1);
        });
    }
    Analysis {
        tfs: tfs.into_iter().collect(),
        features: DocFeatures::with_lens(s, lens),
    }
}

/// Term frequencies of each text field of an entry, by term.
pub fn term_frequencies(s: &EntryState) -> BTreeMap<String, [u8; 4]> {
    analyze(s).tfs.into_iter().collect()
}

impl Analysis {
    /// The text-index records of entry `id`: its feature record and one posting per term.
    pub fn records(&self, id: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut encoded = Vec::with_capacity(DocFeatures::SIZE);
        self.features.encode(&mut encoded);
        let mut out = Vec::with_capacity(self.tfs.len() + 1);
        let mut doc = DOC_PREFIX.to_vec();
        doc.extend_from_slice(id.as_bytes());
        out.push((doc, encoded.clone()));
        for (term, tf) in &self.tfs {
            let mut key = term_prefix(term);
            key.extend_from_slice(id.as_bytes());
            let mut value = Vec::with_capacity(4 + encoded.len());
            value.extend_from_slice(tf);
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

    #[test]
    fn block_round_trip() {
        let f = DocFeatures {
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
        };
        let mut features = Vec::new();
        f.encode(&mut features);
        let mut block = Vec::new();
        let ids = ["m-0000000001", "m-00000000000000000000000002"];
        for (i, id) in ids.iter().enumerate() {
            let n = u8::try_from(i).unwrap_or_default();
            push_to_block(&mut block, id.as_bytes(), &[n, 0, 0, 1], &features);
        }
        let mut seen = Vec::new();
        let whole = for_each_in_block(&block, |id, p| {
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
        // A cut block is not a block.
        assert!(for_each_in_block(&block[..block.len() - 3], |_, _| true).is_none());
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
