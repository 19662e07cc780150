//! The candidates of a query: fixed-size records with their entry id inline, kept in chunks in
//! (source, id) order, and a cursor that reads a list once while handing its emptied chunks to
//! the next list, so that merging one more word's postings holds about one list at a time.

use super::features::DocFeatures;

/// An entry id held inline: a broad query has a candidate per entry, and an allocation per
/// candidate was a tenth of its time. Entry ids are at most 28 bytes (`m-` and 26 characters).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Id {
    len: u8,
    bytes: [u8; 28],
}

impl Id {
    /// `None` for a key that cannot be an entry id.
    pub(super) fn new(id: &[u8]) -> Option<Self> {
        let mut bytes = [0; 28];
        bytes.get_mut(..id.len())?.copy_from_slice(id);
        Some(Self {
            len: u8::try_from(id.len()).ok()?,
            bytes,
        })
    }

    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    pub(super) fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }
}

impl Ord for Id {
    /// The order of the store's keys.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl PartialOrd for Id {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// An entry that passed the cheap filters (and holds a query term, with text).
#[derive(Clone, Copy)]
pub(super) struct Candidate {
    pub(super) src: usize,
    pub(super) id: Id,
    pub(super) features: DocFeatures,
    pub(super) bm25: f64,
    /// The saturated frequency of the term being added (its BM25F contribution before the
    /// idf, which is known only once every posting of the term has been counted).
    pub(super) pending: f64,
    /// Bit `i` set when the entry holds the query's `i`-th term (the first 64).
    pub(super) matched: u64,
}

/// Candidates in (source, id) order, in chunks, so that a merge hands the chunks of the old
/// list to the new one as it goes and a broad query holds about one list at a time.
#[derive(Default)]
pub(super) struct Candidates {
    pub(super) chunks: Vec<Vec<Candidate>>,
    pub(super) len: usize,
    /// Emptied chunks of an older list, used before allocating.
    pub(super) spare: Vec<Vec<Candidate>>,
}

const CHUNK: usize = 4096;

impl Candidates {
    pub(super) fn push(&mut self, c: Candidate) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(c),
            _ => {
                let mut chunk = self
                    .spare
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(CHUNK));
                chunk.push(c);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    pub(super) fn get(&self, i: usize) -> &Candidate {
        &self.chunks[i / CHUNK][i % CHUNK]
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Candidate> {
        self.chunks.iter().flatten()
    }
}

/// Reads a list of candidates once, in order, giving each emptied chunk to `spare`.
pub(super) struct Cursor {
    pub(super) chunks: Vec<Vec<Candidate>>,
    chunk: usize,
    at: usize,
}

impl Cursor {
    pub(super) fn new(c: Candidates) -> Self {
        Self {
            chunks: c.chunks,
            chunk: 0,
            at: 0,
        }
    }

    pub(super) fn peek(&self) -> Option<Candidate> {
        self.chunks.get(self.chunk)?.get(self.at).copied()
    }

    /// The next candidate, when `want` accepts it.
    pub(super) fn next_if(
        &mut self,
        spare: &mut Vec<Vec<Candidate>>,
        want: impl Fn(&Candidate) -> bool,
    ) -> Option<Candidate> {
        let c = self.peek().filter(|c| want(c))?;
        self.at += 1;
        if self.at == self.chunks[self.chunk].len() {
            let mut done = std::mem::take(&mut self.chunks[self.chunk]);
            done.clear();
            spare.push(done);
            self.chunk += 1;
            self.at = 0;
        }
        Some(c)
    }
}
