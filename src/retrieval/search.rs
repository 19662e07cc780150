//! Answering a query over one or more stores (the project's and `global`'s): candidates from the
//! text index, filters, BM25F, the composite score, and the final order.
//!
//! With text, each query term's postings are scanned once per store; corpus statistics (entries,
//! average field lengths, document frequencies) are summed over the stores first, so an entry
//! scores the same whichever store holds it. Without text, every hot entry's feature record is
//! scanned. Either way the score of an entry is a function of the entry, the query, the corpus
//! statistics and `now` only.

use super::bm25;
use super::candidates::{Candidate, Candidates, Id};
use super::features::DocFeatures;
use super::filters::Filters;
use super::rank::{self, Components, RankParams, Rule};
use super::scope::scope_match;
use super::text_index::{
    BASE_CHUNK, Block, DOC_PREFIX, Posting, TextStats, base_key, block_prefix, for_each_in_base,
    for_each_inline, for_each_position, term_prefix,
};
use super::{tokenize, typo};
use crate::error::Result;
use crate::store::Store;
use projections::EntryState;
use serde::Serialize;
use std::collections::HashMap;

/// A store to search and where it comes from.
pub struct Source<'a> {
    pub store: &'a Store,
    pub project: String,
    /// True for `ai-memory/global/`.
    pub global: bool,
}

/// A validated query.
#[derive(Debug, Clone)]
pub struct Request {
    pub text: Option<String>,
    pub filters: Filters,
    /// At most [`super::filters::MAX_LIMIT`].
    pub limit: usize,
    pub include_related: bool,
    pub params: RankParams,
    pub order: Order,
    /// With text: leave out matches whose relevance is below this share of the best.
    pub min_relevance: f64,
}

/// The order of results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// By score (relevance and composite): queries and lists.
    Score,
    /// By confidence, then evidence quality, then score: an AgentTask's `memory_context`
    /// (requirements 8.3 and 8.8).
    Confidence,
}

/// One returned entry with everything that placed it.
#[derive(Debug, Clone)]
pub struct Hit {
    pub entry: EntryState,
    pub project: String,
    pub global: bool,
    pub components: Components,
    pub rules: Vec<Rule>,
    /// Query terms found in the entry.
    pub matched_terms: Vec<String>,
    /// Set when the entry is here because a result names it in `related_entries`.
    pub related_to: Option<String>,
}

/// How one word of the query was searched.
#[derive(Debug, Clone, Serialize)]
pub struct TermReport {
    pub word: String,
    /// The index term searched (the stem, or the stem of a one-letter correction).
    pub term: String,
    /// Entries holding the term, over all stores searched.
    pub df: u64,
    /// Set when the word itself is in no entry and a one-letter correction of it was used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrected_to: Option<String>,
}

/// The answer to a query.
#[derive(Debug, Clone)]
pub struct Answer {
    pub hits: Vec<Hit>,
    pub terms: Vec<TermReport>,
    /// Index records read (postings or feature records).
    pub scanned: usize,
    /// Candidates that passed the filters (and matched the text, with text); with a scope,
    /// subject or tag filter, an upper bound (those are confirmed only on returned entries).
    pub matched: usize,
}

/// A corrected term counts this much of a term typed right.
const CORRECTION_WEIGHT: f64 = 0.8;

/// Runs `req` over `sources`.
///
/// # Errors
/// When a store cannot be read.
pub fn search(sources: &[Source<'_>], req: &Request) -> Result<Answer> {
    let words = req.text.as_deref().map(tokenize::words).unwrap_or_default();
    let mut scanned = 0;
    let mut terms = Vec::new();
    let text = !words.is_empty();
    let cands = if text {
        text_candidates(sources, req, &words, &mut terms, &mut scanned)?
    } else {
        let mut cands = Candidates::default();
        for (src, s) in sources.iter().enumerate() {
            s.store.scan_index(DOC_PREFIX, |id, value| {
                scanned += 1;
                if let Some(f) = DocFeatures::decode(value)
                    && req.filters.admits(&f, req.params.now)
                    && let Some(id) = Id::new(id)
                {
                    cands.push(Candidate {
                        src,
                        id,
                        features: f,
                        bm25: 0.0,
                        pending: 0.0,
                        matched: 0,
                    });
                }
                true
            })?;
        }
        cands
    };

    let mut loaded: HashMap<(usize, Id), Option<EntryState>> = HashMap::new();
    let mut load = |c: &Candidate| -> Result<Option<EntryState>> {
        if let Some(s) = loaded.get(&(c.src, c.id)) {
            return Ok(s.clone());
        }
        let s = sources[c.src].store.hot_entries(&[c.id.as_str()])?.pop();
        let ok = s.filter(|s| req.filters.confirms(s));
        loaded.insert((c.src, c.id), ok.clone());
        Ok(ok)
    };

    // The best decayed BM25F among entries that really pass the filters: relevance is relative
    // to it.
    let decayed = |c: &Candidate| rank::decayed(c.bm25, &c.features, &req.params);
    let mut best = 0.0;
    if text {
        if req.filters.needs_confirmation() {
            let mut order: Vec<(f64, usize)> = cands
                .iter()
                .enumerate()
                .map(|(i, c)| (decayed(c), i))
                .collect();
            order.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
            for (d, i) in order {
                if load(cands.get(i))?.is_some() {
                    best = d;
                    break;
                }
            }
        } else {
            best = cands.iter().map(decayed).fold(0.0, f64::max);
        }
    }

    let score_of = |c: &Candidate| {
        let rules = rank::rules(&c.features, &req.params);
        let sm = scope_match(c.features.scope_hash, req.filters.scope.as_deref());
        let comp = rank::composite(&c.features, sm, &rules, &req.params);
        let comp = if text {
            rank::with_relevance(comp, c.bm25, best)
        } else {
            comp
        };
        (comp, rules)
    };
    // Only the score is kept for every candidate; components and rules are made again for
    // the few returned.
    let mut scored: Vec<(f64, usize)> = cands
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let (comp, _) = score_of(c);
            comp.relevance
                .is_none_or(|r| r >= req.min_relevance)
                .then_some((comp.score, i))
        })
        .collect();
    let order = |a: &(f64, usize), b: &(f64, usize)| {
        let (ca, cb) = (cands.get(a.1), cands.get(b.1));
        let first = match req.order {
            Order::Score => std::cmp::Ordering::Equal,
            Order::Confidence => cb.features.confidence.cmp(&ca.features.confidence).then(
                cb.features
                    .evidence_quality
                    .cmp(&ca.features.evidence_quality),
            ),
        };
        first
            .then(b.0.total_cmp(&a.0))
            .then(cb.features.confidence.cmp(&ca.features.confidence))
            .then(cb.features.updated.cmp(&ca.features.updated))
            .then(sources[ca.src].global.cmp(&sources[cb.src].global))
            .then(ca.id.cmp(&cb.id))
    };

    let matched = scored.len();
    let mut hits = Vec::new();
    // The order is total, so sorting only the head (and the rest when entries that fail
    // confirmation use it up) returns what a full sort would.
    let head = (req.limit * 2 + 16).min(scored.len());
    if head < scored.len() {
        scored.select_nth_unstable_by(head, order);
    }
    scored[..head].sort_unstable_by(order);
    let mut next = 0;
    while hits.len() < req.limit && next < scored.len() {
        if next == head {
            scored[head..].sort_unstable_by(order);
        }
        let c = cands.get(scored[next].1);
        next += 1;
        let Some(entry) = load(c)? else {
            continue;
        };
        let (components, rules) = score_of(c);
        let matched_terms = if !text {
            Vec::new()
        } else if terms.len() <= 64 {
            (0..terms.len())
                .filter(|&t| c.matched & (1 << t) != 0)
                .map(|t| terms[t].term.clone())
                .collect()
        } else {
            matched_terms(&entry, &terms)
        };
        hits.push(Hit {
            entry,
            project: sources[c.src].project.clone(),
            global: sources[c.src].global,
            components,
            rules,
            matched_terms,
            related_to: None,
        });
    }
    if req.include_related {
        add_related(sources, req, &mut hits)?;
    }
    Ok(Answer {
        hits,
        terms,
        scanned,
        matched,
    })
}

/// The searched terms an entry holds, in query order (for queries of more than 64 terms).
fn matched_terms(entry: &EntryState, terms: &[TermReport]) -> Vec<String> {
    let have = super::text_index::analyze(entry).tfs;
    terms
        .iter()
        .filter(|t| {
            have.binary_search_by(|(h, _)| h.as_str().cmp(&t.term))
                .is_ok()
        })
        .map(|t| t.term.clone())
        .collect()
}

/// Candidates of a text query: every entry holding at least one query term and passing the
/// filters, with its BM25F. Each term's postings arrive in (source, id) order, so they are
/// merged into the candidates found so far by one linear merge, with no hashing.
fn text_candidates(
    sources: &[Source<'_>],
    req: &Request,
    words: &[String],
    terms: &mut Vec<TermReport>,
    scanned: &mut usize,
) -> Result<Candidates> {
    let mut stats = TextStats::default();
    for s in sources {
        stats.merge(&s.store.text_stats()?);
    }
    #[expect(
        clippy::cast_precision_loss,
        reason = "corpus sizes are far below 2^52"
    )]
    let docs = stats.docs.max(0) as f64;
    let average = stats.average_lengths();
    let masks = masks(sources)?;
    let mut cands = Candidates::default();
    let mut seen_terms: Vec<String> = Vec::new();
    for word in words {
        let stem = tokenize::stem(word);
        if seen_terms.contains(&stem) {
            continue;
        }
        seen_terms.push(stem.clone());
        let bit = 1u64
            .checked_shl(u32::try_from(terms.len()).unwrap_or(64))
            .unwrap_or(0);
        let mut df = add_term(
            sources, &masks, req, &stem, bit, &average, &mut cands, scanned,
        )?;
        let mut term = stem.clone();
        let mut weight = 1.0;
        let mut corrected_to = None;
        if df == 0
            && let Some((fixed, fixed_term)) = typo::correction(sources, &masks, word)?
            && !seen_terms.contains(&fixed_term)
        {
            df = add_term(
                sources,
                &masks,
                req,
                &fixed_term,
                bit,
                &average,
                &mut cands,
                scanned,
            )?;
            seen_terms.push(fixed_term.clone());
            term = fixed_term;
            weight = CORRECTION_WEIGHT;
            corrected_to = Some(fixed);
        }
        terms.push(TermReport {
            word: word.clone(),
            term,
            df,
            corrected_to,
        });
        #[expect(clippy::cast_precision_loss, reason = "document counts fit easily")]
        let idf = bm25::idf(docs, df as f64) * weight;
        for c in cands.iter_mut() {
            c.bm25 += idf * c.pending;
            c.pending = 0.0;
        }
    }
    Ok(cands)
}

/// One position of the base table.
#[derive(Clone, Copy)]
struct Slot {
    id: Id,
    /// `None` for an entry that was cold when the table was written.
    features: Option<DocFeatures>,
}

/// The chunk of a source's base table at hand: the positions of a term's blocks ascend, so one
/// chunk is held at a time, read again by a later term rather than kept (a broad query that kept
/// every chunk it read spent a fifth of its time having fresh pages cleared for them).
#[derive(Default)]
struct BaseCursor {
    chunk: Option<u32>,
    slots: Vec<Slot>,
}

impl BaseCursor {
    /// The slot at `position`; `None` when the store's base table has no such position or its
    /// chunk does not decode (the posting is then skipped, like one in a block that does not
    /// decode).
    fn slot(&mut self, store: &Store, position: u32) -> Result<Option<&Slot>> {
        let chunk = position / BASE_CHUNK;
        if self.chunk != Some(chunk) {
            self.chunk = Some(chunk);
            self.slots.clear();
            if let Some(bytes) = store.index_value(&base_key(chunk))? {
                let mut whole = true;
                let slots = &mut self.slots;
                let decoded = for_each_in_base(&bytes, |id, features| match Id::new(id) {
                    Some(id) => slots.push(Slot { id, features }),
                    None => whole = false,
                });
                if decoded.is_none() || !whole {
                    self.slots.clear();
                }
            }
        }
        Ok(self.slots.get((position % BASE_CHUNK) as usize))
    }
}

/// Ids whose postings in blocks are masked, per source, in order.
pub(super) type Masks = Vec<Vec<Vec<u8>>>;

/// The masks of every source.
///
/// # Errors
/// When a store cannot be read.
pub(super) fn masks(sources: &[Source<'_>]) -> Result<Masks> {
    sources.iter().map(|s| s.store.text_masks()).collect()
}

/// Tells which ids of one source's blocks are masked. The ids of a term's blocks arrive in
/// order, so the cursor only moves forward: one comparison per posting instead of a binary
/// search (a broad query checks 200,000 postings against the masks of every entry changed
/// since the last rebuild). An id out of order puts the cursor back by a binary search, so the
/// answer never depends on the order.
struct MaskCursor<'a> {
    masks: &'a [Vec<u8>],
    at: usize,
}

impl<'a> MaskCursor<'a> {
    fn new(masks: &'a [Vec<u8>]) -> Self {
        Self { masks, at: 0 }
    }

    fn masked(&mut self, id: &[u8]) -> bool {
        use std::cmp::Ordering;
        if self.masks.is_empty() {
            return false;
        }
        if self.at > 0 && self.masks[self.at - 1].as_slice() >= id {
            self.at = self.masks.partition_point(|m| m.as_slice() < id);
        }
        while let Some(m) = self.masks.get(self.at) {
            match m.as_slice().cmp(id) {
                Ordering::Less => self.at += 1,
                Ordering::Equal => {
                    self.at += 1;
                    return true;
                }
                Ordering::Greater => return false,
            }
        }
        false
    }
}

/// Visits the postings of `term` in every source as two runs, each in (source, id) order: the
/// postings in blocks (masked entries left out), then those written one by one (see
/// [`super::text_index`]); the two never name the same entry.
fn for_each_run(
    sources: &[Source<'_>],
    masks: &Masks,
    term: &str,
    mut run: impl FnMut(
        &mut dyn FnMut(&mut dyn FnMut(usize, &[u8], Posting)) -> Result<()>,
    ) -> Result<()>,
) -> Result<()> {
    // A run that no source holds is not run at all: merging it would copy every candidate.
    let holds = |prefix: &[u8]| -> Result<bool> {
        let mut found = false;
        for s in sources {
            s.store.scan_index(prefix, |_, _| {
                found = true;
                false
            })?;
            if found {
                break;
            }
        }
        Ok(found)
    };
    let blocks = block_prefix(term);
    if holds(&blocks)? {
        run(&mut |visit| {
            for (src, s) in sources.iter().enumerate() {
                let none = Vec::new();
                let mut masked = MaskCursor::new(masks.get(src).unwrap_or(&none));
                let mut cursor = BaseCursor::default();
                let mut failed = None;
                s.store.scan_index(&blocks, |_, value| {
                    // A block that does not decode is skipped like a posting that does not.
                    let _ = match Block::of(value) {
                        Some(Block::Inline(postings)) => for_each_inline(postings, |id, p| {
                            if !masked.masked(id) {
                                visit(src, id, p);
                            }
                            true
                        }),
                        Some(Block::Positions(postings)) => {
                            for_each_position(postings, |position, tf| {
                                match cursor.slot(s.store, position) {
                                    Ok(Some(Slot {
                                        id,
                                        features: Some(features),
                                    })) if !masked.masked(id.as_bytes()) => {
                                        let p = Posting {
                                            tf,
                                            features: *features,
                                        };
                                        visit(src, id.as_bytes(), p);
                                    }
                                    Ok(_) => {}
                                    Err(e) => {
                                        failed = Some(e);
                                        return false;
                                    }
                                }
                                true
                            })
                        }
                        None => None,
                    };
                    failed.is_none()
                })?;
                if let Some(e) = failed {
                    return Err(e);
                }
            }
            Ok(())
        })?;
    }
    // The postings written one by one are few (the entries changed since the last rebuild):
    // gathered in one scan rather than probed for and then scanned.
    let single = term_prefix(term);
    let mut singles: Vec<(usize, Vec<u8>, Posting)> = Vec::new();
    for (src, s) in sources.iter().enumerate() {
        s.store.scan_index(&single, |id, value| {
            if let Some(p) = Posting::decode(value) {
                singles.push((src, id.to_vec(), p));
            }
            true
        })?;
    }
    if !singles.is_empty() {
        run(&mut |visit| {
            for (src, id, p) in &singles {
                visit(*src, id, *p);
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Entries holding `term` over all sources.
///
/// # Errors
/// When a store cannot be read.
pub(super) fn document_frequency(sources: &[Source<'_>], masks: &Masks, term: &str) -> Result<u64> {
    let mut df = 0;
    for_each_run(sources, masks, term, |each| each(&mut |_, _, _| df += 1))?;
    Ok(df)
}

/// Adds the postings of `term` that pass the cheap filters to `cands`: a candidate already
/// held is updated in place (both are in (source, id) order, so each run of postings is one
/// pass), a new one joins a run of its own. Leaves each candidate's saturated frequency of the
/// term in `pending`; returns the term's document frequency over all entries of all sources
/// (filters do not change corpus statistics).
#[expect(
    clippy::too_many_arguments,
    reason = "one query's state, passed down once"
)]
fn add_term(
    sources: &[Source<'_>],
    masks: &Masks,
    req: &Request,
    term: &str,
    bit: u64,
    average: &[f64; 4],
    cands: &mut Candidates,
    scanned: &mut usize,
) -> Result<u64> {
    let mut df = 0;
    let held = cands.runs();
    for_each_run(sources, masks, term, |each| {
        // Each run of postings is ordered on its own; the runs never name the same entry.
        cands.start_run();
        let mut at = vec![0; held];
        each(&mut |src, key, p| {
            *scanned += 1;
            df += 1;
            let Some(id) = Id::new(key) else {
                return;
            };
            let pending = bm25::saturate(bm25::field_frequency(p.tf, &p.features, *average));
            if let Some(c) = cands.find(&mut at, (src, &id)) {
                c.pending += pending;
                c.matched |= bit;
            } else if req.filters.admits(&p.features, req.params.now) {
                cands.push(Candidate {
                    src,
                    id,
                    features: p.features,
                    bm25: 0.0,
                    pending,
                    matched: bit,
                });
            }
        })
    })?;
    Ok(df)
}

/// Appends the entries that results name in `related_entries` (once each, at most
/// [`super::filters::MAX_LIMIT`] results in all), whatever their status.
fn add_related(sources: &[Source<'_>], req: &Request, hits: &mut Vec<Hit>) -> Result<()> {
    let src_of = |h: &Hit| {
        sources
            .iter()
            .position(|s| s.project == h.project)
            .unwrap_or(0)
    };
    let mut i = 0;
    while i < hits.len() {
        let from = hits[i].entry.id.clone();
        let src = src_of(&hits[i]);
        let related = hits[i].entry.fields.related_entries.clone();
        for id in related {
            if hits.len() >= super::filters::MAX_LIMIT {
                return Ok(());
            }
            if hits.iter().any(|h| h.entry.id == id) {
                continue;
            }
            let Some(entry) = sources[src].store.entry(&id)? else {
                continue;
            };
            let f = DocFeatures::of(&entry);
            let rules = rank::rules(&f, &req.params);
            let sm = scope_match(f.scope_hash, req.filters.scope.as_deref());
            hits.push(Hit {
                entry,
                project: sources[src].project.clone(),
                global: sources[src].global,
                components: rank::composite(&f, sm, &rules, &req.params),
                rules,
                matched_terms: Vec::new(),
                related_to: Some(from.clone()),
            });
        }
        i += 1;
    }
    Ok(())
}

/// Archived entries that pass `req`'s filters and, for a text query, hold at least one of its
/// terms: what `--include-archived` adds after the active answer. Archived entries are outside
/// the text index, so they are read from the cold records (a scan) and ranked by the share of
/// query terms they hold, then by the usual composite.
///
/// # Errors
/// When a store cannot be read.
pub fn archived_hits(sources: &[Source<'_>], req: &Request, limit: usize) -> Result<Vec<Hit>> {
    let wanted: Vec<String> = req.text.as_deref().map(tokenize::terms).unwrap_or_default();
    let mut hits: Vec<(f64, Hit)> = Vec::new();
    for s in sources {
        let found = crate::lifecycle::archive::archived_matching(s.store, |e| {
            req.filters.admits(&DocFeatures::of(e), req.params.now) && req.filters.confirms(e)
        })?;
        for entry in found {
            let terms = super::text_index::analyze(&entry);
            let matched: Vec<String> = wanted
                .iter()
                .filter(|t| terms.tfs.iter().any(|(have, _)| have == *t))
                .cloned()
                .collect();
            if !wanted.is_empty() && matched.is_empty() {
                continue;
            }
            #[expect(clippy::cast_precision_loss, reason = "a handful of query terms")]
            let share = if wanted.is_empty() {
                1.0
            } else {
                matched.len() as f64 / wanted.len() as f64
            };
            let f = terms.features;
            let rules = rank::rules(&f, &req.params);
            let sm = scope_match(f.scope_hash, req.filters.scope.as_deref());
            let components = rank::composite(&f, sm, &rules, &req.params);
            hits.push((
                share,
                Hit {
                    entry,
                    project: s.project.clone(),
                    global: s.global,
                    components,
                    rules,
                    matched_terms: matched,
                    related_to: None,
                },
            ));
        }
    }
    hits.sort_by(|(sa, a), (sb, b)| {
        sb.total_cmp(sa)
            .then(b.components.score.total_cmp(&a.components.score))
            .then(a.entry.id.cmp(&b.entry.id))
    });
    Ok(hits.into_iter().take(limit).map(|(_, h)| h).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cursor answers as a binary search does, for ids in order, repeated or out of order.
    #[test]
    fn the_mask_cursor_answers_as_a_search_does() {
        let masks: Vec<Vec<u8>> = [b"b".as_slice(), b"d", b"dd", b"f", b"x"]
            .iter()
            .map(|m| m.to_vec())
            .collect();
        let sequences: [&[&[u8]]; 4] = [
            &[b"a", b"b", b"c", b"d", b"dd", b"e", b"f", b"g", b"x", b"y"],
            &[b"b", b"b", b"d", b"d", b"x"],
            &[b"x", b"b", b"f", b"a", b"dd", b"d", b"z"],
            &[b"y", b"z"],
        ];
        for ids in sequences {
            let mut cursor = MaskCursor::new(&masks);
            for id in ids {
                let expected = masks.binary_search_by(|m| m.as_slice().cmp(id)).is_ok();
                assert_eq!(
                    cursor.masked(id),
                    expected,
                    "{:?} in {ids:?}",
                    String::from_utf8_lossy(id)
                );
            }
        }
        assert!(!MaskCursor::new(&[]).masked(b"a"));
    }
}
