//! The candidates of a query: fixed-size records with their entry id inline, kept in runs in
//! (source, id) order that later words of the query update in place.

/// An entry id held inline: a broad query has a candidate per entry, and an allocation per
/// candidate was a tenth of its time. Entry ids are at most 28 bytes (`m-` and 26 characters).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Id {
    len: u8,
    bytes: [u8; 28],
}

impl Id {
    /// The longest id held.
    pub(super) const MAX_LEN: usize = 28;

    /// `None` for a key that cannot be an entry id.
    pub(super) fn new(id: &[u8]) -> Option<Self> {
        let mut bytes = [0; Self::MAX_LEN];
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
///
/// It keeps of the entry's features only what ordering every candidate needs (its scores,
/// and the confidence, evidence and update time that break ties): a broad query holds one
/// per entry, and with the whole features it held 17 MB at 100,000 entries, a fifth of its
/// time spent faulting in fresh pages. The rules and components of a returned entry come
/// from its features computed again from the entry (the same value: see
/// [`super::features::DocFeatures::for_ranking`]).
#[derive(Clone, Copy)]
pub(super) struct Candidate {
    pub(super) src: usize,
    pub(super) id: Id,
    /// Confidence in millionths, as in the features.
    pub(super) confidence: u32,
    /// Quality of the best evidence, in tenths, as in the features.
    pub(super) evidence_quality: u8,
    /// Unix milliseconds.
    pub(super) updated: i64,
    pub(super) bm25: f64,
    /// The saturated frequency of the term being added (its BM25F contribution before the
    /// idf, which is known only once every posting of the term has been counted).
    pub(super) pending: f64,
    /// Bit `i` set when the entry holds the query's `i`-th term (the first 64).
    pub(super) matched: u64,
    /// The candidate's number in its query, in the order found: its row in the columns of
    /// saturated frequencies that a query keeps for its common terms.
    pub(super) row: u32,
    /// The entry's decay in ranking and its composite score: functions of the entry and the
    /// request alone, computed where the candidate is found (on the cores, for a walk).
    pub(super) decay: f64,
    pub(super) composite: f64,
}

/// Candidates in runs, each in (source, id) order, no entry in two runs, each run in chunks:
/// the first word of a query makes a run, and each later word updates the candidates it finds
/// in place and makes a run of the ones it adds. Nothing is copied or moved once pushed (a merge
/// into a new list copied every candidate once per word, into fresh pages: a tenth of a query
/// that matches a few thousand entries).
#[derive(Default)]
pub(super) struct Candidates {
    runs: Vec<Run>,
}

#[derive(Default)]
struct Run {
    chunks: Vec<Vec<Candidate>>,
    len: usize,
}

const CHUNK: usize = 1024;

impl Run {
    fn get(&self, i: usize) -> &Candidate {
        &self.chunks[i / CHUNK][i % CHUNK]
    }

    fn get_mut(&mut self, i: usize) -> &mut Candidate {
        &mut self.chunks[i / CHUNK][i % CHUNK]
    }

    /// The first position from `start` on whose key is not below `key`, found by galloping:
    /// the postings written one by one that a broad query adds to a run of 100,000 candidates
    /// are a few hundred, and stepping through every candidate to reach them was a fifth of
    /// its time.
    fn lower_bound_from(&self, start: usize, key: (usize, &Id)) -> usize {
        let below = |i: usize| (self.get(i).src, &self.get(i).id) < key;
        if start >= self.len || !below(start) {
            return start;
        }
        // `below(lo)` holds throughout; `hi` is past the end or not below.
        let (mut lo, mut step) = (start, 1);
        let mut hi = loop {
            let next = lo + step;
            if next >= self.len {
                break self.len;
            }
            if !below(next) {
                break next;
            }
            lo = next;
            step *= 2;
        };
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if below(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi
    }
}

impl Candidates {
    /// Appends `c` to the newest run, after every candidate in it.
    pub(super) fn push(&mut self, c: Candidate) {
        if self.runs.is_empty() {
            self.runs.push(Run::default());
        }
        if let Some(run) = self.runs.last_mut() {
            match run.chunks.last_mut() {
                Some(last) if last.len() < CHUNK => last.push(c),
                _ => {
                    let mut chunk = Vec::with_capacity(CHUNK);
                    chunk.push(c);
                    run.chunks.push(chunk);
                }
            }
            run.len += 1;
        }
    }

    /// Starts a new run: what [`Candidates::push`] adds from now on is ordered apart from the
    /// candidates already held.
    pub(super) fn start_run(&mut self) {
        if self.runs.last().is_none_or(|r| r.len > 0) {
            self.runs.push(Run::default());
        }
    }

    /// The number of runs: [`Candidates::find`] searches as many as it is given positions.
    pub(super) fn runs(&self) -> usize {
        self.runs.len()
    }

    /// The candidate for `(src, id)` among the first runs, one per position in `at`. `at` holds
    /// a position per run, and keys asked for must ascend while it is kept (start again from
    /// zeros for keys that start over).
    pub(super) fn find(&mut self, at: &mut [usize], key: (usize, &Id)) -> Option<&mut Candidate> {
        let mut found = None;
        for (r, (run, pos)) in self.runs.iter().zip(at.iter_mut()).enumerate() {
            *pos = run.lower_bound_from(*pos, key);
            if *pos < run.len && (run.get(*pos).src, &run.get(*pos).id) == key {
                found = Some((r, *pos));
                break;
            }
        }
        let (r, pos) = found?;
        Some(self.runs[r].get_mut(pos))
    }

    /// Moves the runs of `other` after those held: `other` must hold no entry held here.
    pub(super) fn append(&mut self, other: Self) {
        self.runs
            .extend(other.runs.into_iter().filter(|r| r.len > 0));
    }

    /// The candidate pushed last.
    pub(super) fn last_mut(&mut self) -> Option<&mut Candidate> {
        self.runs.last_mut()?.chunks.last_mut()?.last_mut()
    }

    /// The `i`-th candidate, counting run after run.
    pub(super) fn get(&self, mut i: usize) -> &Candidate {
        for run in &self.runs {
            if i < run.len {
                return run.get(i);
            }
            i -= run.len;
        }
        panic!("candidate {i} past the end")
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Candidate> {
        self.runs.iter().flat_map(|r| r.chunks.iter().flatten())
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Candidate> {
        self.runs
            .iter_mut()
            .flat_map(|r| r.chunks.iter_mut().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn candidate(n: u16) -> Candidate {
        Candidate {
            src: 0,
            id: Id::new(format!("m-{n:05}").as_bytes()).unwrap_or_else(|| panic!("id")),
            confidence: 0,
            evidence_quality: 0,
            updated: 0,
            bm25: 0.0,
            pending: 0.0,
            matched: 0,
            row: 0,
            decay: 1.0,
            composite: 0.0,
        }
    }

    proptest! {
        /// Whatever runs hold the candidates, a search by ascending keys finds exactly the ones
        /// held, and enumeration reaches each once.
        #[test]
        fn find_sees_every_run(
            runs in proptest::collection::vec(proptest::collection::btree_set(0u16..3000, 0..1500), 1..4),
            asked in proptest::collection::btree_set(0u16..3000, 0..300),
        ) {
            let mut held = std::collections::BTreeSet::new();
            let mut cands = Candidates::default();
            for run in &runs {
                cands.start_run();
                for n in run.iter().filter(|n| held.insert(**n)) {
                    cands.push(candidate(*n));
                }
            }
            let mut at = vec![0; cands.runs()];
            for n in &asked {
                let c = candidate(*n);
                let found = cands.find(&mut at, (0, &c.id)).map(|f| f.id.as_str().to_owned());
                prop_assert_eq!(found, held.contains(n).then(|| c.id.as_str().to_owned()));
            }
            let listed: Vec<&str> = cands.iter().map(|c| c.id.as_str()).collect();
            let mut sorted = listed.clone();
            sorted.sort_unstable();
            sorted.dedup();
            prop_assert_eq!(sorted.len(), held.len());
            for (i, id) in listed.iter().enumerate() {
                prop_assert_eq!(cands.get(i).id.as_str(), *id);
            }
        }
    }
}
