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
use super::postings::{self, BaseCursor, MaskCursor, Positions};
use super::rank::{self, Components, RankParams, Rule};
use super::scope::scope_match;
use super::text_index::{BASE_CHUNK, DOC_PREFIX, Posting, TextStats};
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
    /// Set when the entry replaced an entry whose concurrent changes are unresolved (two
    /// supersedes, or a supersede and a deprecation, merged from two branches): the entry it
    /// replaced. Its standing is disputed until `memlog resolve` settles that entry.
    pub disputed: Option<String>,
}

impl Hit {
    /// The notes shown with the entry, in every output alike: the rules that demoted or
    /// annotated it, then `global` (from `ai-memory/global/`), `related` (added by
    /// `--include-related`) and `disputed` (a replacement from an unresolved conflict).
    pub fn annotations(&self) -> Vec<&'static str> {
        self.rules
            .iter()
            .map(Rule::annotation)
            .chain(self.global.then_some("global"))
            .chain(self.related_to.as_ref().map(|_| "related"))
            .chain(self.disputed.as_ref().map(|_| "disputed"))
            .collect()
    }
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
    if words.is_empty() && req.text.as_deref().is_some_and(has_no_words) {
        // Text made only of stop words ("what is it") asks for nothing that can be matched:
        // answering with every entry by its composite score looked like a confident answer.
        return Ok(Answer {
            hits: Vec::new(),
            terms: Vec::new(),
            scanned: 0,
            matched: 0,
        });
    }
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
                    cands.push(candidate(req, src, id, f, 0, 0.0, 0));
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

    // Each candidate's decayed BM25F and composite score.
    let scope = req.filters.scope.as_deref();
    let partial: Vec<(f64, f64)> = cands
        .iter()
        .map(|c| {
            let decayed = if text {
                rank::decayed_by(c.bm25, c.decay)
            } else {
                0.0
            };
            (decayed, c.composite)
        })
        .collect();
    // The best decayed BM25F among entries that really pass the filters: relevance is relative
    // to it.
    let mut best = 0.0;
    if text {
        if req.filters.needs_confirmation() {
            let mut order: Vec<(f64, usize)> = partial
                .iter()
                .enumerate()
                .map(|(i, (d, _))| (*d, i))
                .collect();
            order.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
            for (d, i) in order {
                if load(cands.get(i))?.is_some() {
                    best = d;
                    break;
                }
            }
        } else {
            best = partial.iter().map(|p| p.0).fold(0.0, f64::max);
        }
    }

    // Components and rules are made for the few returned, from their entries' features; for
    // every candidate, only its score (the same value: `rank::composite` and
    // `rank::with_relevance` share its formulas, and the features are a function of the entry;
    // they do not read the word counts).
    let score_of = |c: &Candidate, entry: &EntryState| {
        let features = DocFeatures::for_ranking(entry);
        let rules = rank::rules(&features, &req.params);
        let sm = scope_match(features.scope_hash, scope);
        let comp = rank::composite(&features, sm, &rules, &req.params);
        let comp = if text {
            rank::with_relevance(comp, c.bm25, best)
        } else {
            comp
        };
        (comp, rules)
    };
    let mut scored: Vec<(f64, usize)> = partial
        .iter()
        .enumerate()
        .filter_map(|(i, &(decayed, composite))| {
            if !text {
                return Some((composite, i));
            }
            let relevance = rank::relevance(decayed, best);
            (relevance >= req.min_relevance).then(|| (rank::text_score(relevance, composite), i))
        })
        .collect();
    drop(partial);
    let order = |a: &(f64, usize), b: &(f64, usize)| {
        // Most pairs differ in score: their candidates need not be looked up.
        let by_score = b.0.total_cmp(&a.0);
        if req.order == Order::Score && by_score != std::cmp::Ordering::Equal {
            return by_score;
        }
        let (ca, cb) = (cands.get(a.1), cands.get(b.1));
        let first = match req.order {
            Order::Score => std::cmp::Ordering::Equal,
            Order::Confidence => cb
                .confidence
                .cmp(&ca.confidence)
                .then(cb.evidence_quality.cmp(&ca.evidence_quality)),
        };
        first
            .then(by_score)
            .then(cb.confidence.cmp(&ca.confidence))
            .then(cb.updated.cmp(&ca.updated))
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
        let (components, rules) = score_of(c, &entry);
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
            disputed: None,
        });
    }
    if req.include_related {
        add_related(sources, req, &mut hits)?;
    }
    mark_disputed(sources, &mut hits)?;
    Ok(Answer {
        hits,
        terms,
        scanned,
        matched,
    })
}

/// Marks the hits that replaced an entry in conflict (see [`Hit::disputed`]). The conflict
/// index of each store names the entries in conflict (none, nearly always: one seek).
///
/// # Errors
/// When a store cannot be read.
pub fn mark_disputed(sources: &[Source<'_>], hits: &mut [Hit]) -> Result<()> {
    for s in sources {
        let in_conflict = s.store.ids_with("conflict", "true")?;
        if in_conflict.is_empty() {
            continue;
        }
        let mut replaced: HashMap<String, String> = HashMap::new();
        for id in in_conflict {
            if let Some(state) = s.store.entry(&id)? {
                let competing = crate::log::writer::competing_replacements(s.store, &state)?;
                for by in &competing {
                    // What a side's branch replaced its replacement with since is that side's
                    // outcome, as disputed as the replacement was.
                    if let Some(end) = crate::log::writer::line_end(s.store, by, &competing)? {
                        replaced.insert(end.id, id.clone());
                    }
                    replaced.insert(by.clone(), id.clone());
                }
            }
        }
        for h in hits.iter_mut().filter(|h| h.project == s.project) {
            if let Some(of) = replaced.get(&h.entry.id) {
                h.disputed = Some(of.clone());
            }
        }
    }
    Ok(())
}

/// The entries of `sources` superseded concurrently whose replacements all gave way to one
/// another, so that none of them is active (two resolves that chose different winners, merged
/// from two branches): each with its project and the replacements. A query finds none of those
/// entries, so it says why.
///
/// # Errors
/// When a store cannot be read.
pub fn without_outcome(sources: &[Source<'_>]) -> Result<Vec<(String, String, Vec<String>)>> {
    let mut out = Vec::new();
    for s in sources {
        for id in s.store.ids_with("conflict", "true")? {
            let Some(state) = s.store.entry(&id)? else {
                continue;
            };
            let competing = crate::log::writer::competing_replacements(s.store, &state)?;
            if competing.len() < 2 {
                continue;
            }
            let mut any = false;
            for by in &competing {
                any |= crate::log::writer::line_end(s.store, by, &competing)?.is_some();
            }
            if !any {
                out.push((s.project.clone(), id, competing));
            }
        }
    }
    Ok(out)
}

/// True when `text` is not blank but holds no word that is searched (only stop words,
/// punctuation or over-long words).
pub fn has_no_words(text: &str) -> bool {
    !text.trim().is_empty() && tokenize::count_words(text) == 0
}

/// The searched terms an entry holds, in query order (for queries of more than 64 terms).
fn matched_terms(entry: &EntryState, terms: &[TermReport]) -> Vec<String> {
    let have = super::text_index::analyze(entry);
    terms
        .iter()
        .filter(|t| have.holds(&t.term))
        .map(|t| t.term.clone())
        .collect()
}

/// A term of a text query as searched.
struct Searched {
    term: String,
    /// 1, or [`CORRECTION_WEIGHT`] for a correction.
    weight: f64,
    /// Bit of [`Candidate::matched`] (0 past the 64th term).
    bit: u64,
}

/// The state of one text query while its postings are gathered.
struct Gathering<'a> {
    req: &'a Request,
    average: [f64; 4],
    scanned: usize,
    /// Document frequency of each searched term over all sources.
    dfs: Vec<u64>,
    /// Candidates found so far, per source.
    own: Vec<Candidates>,
    rows: u32,
    /// Per searched term that some source holds by positions: the saturated frequency of the
    /// term in each candidate found while walking those positions, by row.
    columns: Vec<Vec<f64>>,
}

impl Gathering<'_> {
    fn saturated(&self, p: &Posting) -> f64 {
        bm25::saturate(bm25::field_frequency(p.tf, &p.features, self.average))
    }

    /// A new candidate of source `src`, appended to its newest run.
    fn push(&mut self, src: usize, id: Id, features: DocFeatures, bit: u64, pending: f64) -> u32 {
        let row = self.rows;
        self.rows += 1;
        self.own[src].push(candidate(self.req, src, id, features, bit, pending, row));
        row
    }

    /// Walks the positions of the terms `common` (each with its positions in source `src`'s
    /// blocks, all ascending) together, so that each chunk of the base table is read once for
    /// all of them. Entries are found in position order, which is id order. A long walk is cut
    /// into ranges of positions walked on the cores at once (a broad query's walk, reading and
    /// decoding 100,000 entries' features, was two thirds of its time on one core); each range
    /// makes a run, numbered after the ranges before it, so the candidates, their rows and
    /// their sums are those of one walk.
    fn walk(
        &mut self,
        src: usize,
        s: &Source<'_>,
        masks: &[Vec<u8>],
        common: &[(usize, Positions)],
        searched: &[Searched],
    ) -> Result<()> {
        let parts = split_walk(common);
        let walk =
            |part: &[Span<'_>]| walk_range(self.req, self.average, src, s, masks, part, searched);
        let walked: Vec<Result<Walked>> = match parts.split_first() {
            Some((first, rest)) if !rest.is_empty() => std::thread::scope(|scope| {
                let others: Vec<_> = rest.iter().map(|part| scope.spawn(|| walk(part))).collect();
                let mut all = vec![walk(first)];
                for h in others {
                    all.push(match h.join() {
                        Ok(r) => r,
                        Err(panic) => std::panic::resume_unwind(panic),
                    });
                }
                all
            }),
            _ => parts.iter().map(|part| walk(part)).collect(),
        };
        for w in walked {
            let mut w = w?;
            let offset = self.rows;
            for c in w.cands.iter_mut() {
                c.row += offset;
            }
            self.own[src].append(w.cands);
            for (column, part) in self.columns.iter_mut().zip(w.columns) {
                if column.is_empty() && offset == 0 {
                    *column = part;
                } else if !part.is_empty() {
                    column.resize(offset as usize, 0.0);
                    column.extend(part);
                }
            }
            for (df, part) in self.dfs.iter_mut().zip(w.dfs) {
                *df += part;
            }
            self.scanned += w.scanned;
            self.rows += w.rows;
        }
        Ok(())
    }

    /// Adds one ordered stream of term `t`'s postings in source `src` (ids ascending): a
    /// candidate already held is updated in place (one forward pass over each run), a new one
    /// joins a run of its own. Leaves each candidate's saturated frequency of the term in
    /// `pending`.
    fn stream(
        &mut self,
        src: usize,
        t: usize,
        bit: u64,
        each: impl FnOnce(&mut dyn FnMut(&[u8], Posting) -> bool) -> Result<()>,
    ) -> Result<()> {
        let held = self.own[src].runs();
        self.own[src].start_run();
        let mut at = vec![0; held];
        each(&mut |key, p| {
            self.scanned += 1;
            self.dfs[t] += 1;
            let Some(id) = Id::new(key) else {
                return true;
            };
            let pending = self.saturated(&p);
            if let Some(c) = self.own[src].find(&mut at, (src, &id)) {
                c.pending += pending;
                c.matched |= bit;
            } else if self.req.filters.admits(&p.features, self.req.params.now) {
                self.push(src, id, p.features, bit, pending);
            }
            true
        })
    }
}

/// A new candidate, with its decay and composite score (see [`Candidate::composite`]).
fn candidate(
    req: &Request,
    src: usize,
    id: Id,
    features: DocFeatures,
    matched: u64,
    pending: f64,
    row: u32,
) -> Candidate {
    let sm = scope_match(features.scope_hash, req.filters.scope.as_deref());
    Candidate {
        src,
        id,
        confidence: features.confidence,
        evidence_quality: features.evidence_quality,
        updated: features.updated,
        bm25: 0.0,
        pending,
        matched,
        row,
        decay: rank::decay(&features, &req.params),
        composite: rank::composite_score(&features, sm, &req.params),
    }
}

/// What a walk over a range of positions found.
struct Walked {
    /// In position order, one run; rows numbered from 0.
    cands: Candidates,
    /// Per searched term, the term's saturated frequency in each candidate, by row.
    columns: Vec<Vec<f64>>,
    /// Per searched term, the live postings walked.
    dfs: Vec<u64>,
    scanned: usize,
    rows: u32,
}

/// A searched term's positions (ascending, with its frequencies) within one range.
type Span<'a> = (usize, &'a [(u32, [u8; 4])]);

/// The position lists of one range of positions.
type Part<'a> = Vec<Span<'a>>;

/// The lists of `common` cut into consecutive ranges of positions, one per core when the walk
/// is long ([`crate::store::tuning::split_walk_from`] postings): at equal shares of the longest
/// list, moved back to the start of a chunk of the base table where that keeps the ranges
/// apart, so that no chunk is read by two threads.
fn split_walk(common: &[(usize, Positions)]) -> Vec<Part<'_>> {
    let whole = || common.iter().map(|(t, l)| (*t, l.as_slice())).collect();
    let asked: usize = common.iter().map(|(_, l)| l.len()).sum();
    let threads = crate::parallel::threads();
    let Some(longest) = common.iter().map(|(_, l)| l).max_by_key(|l| l.len()) else {
        return vec![whole()];
    };
    if threads < 2 || asked < crate::store::tuning::split_walk_from() {
        return vec![whole()];
    }
    let mut starts = vec![0];
    for i in 1..threads {
        let Some(&(p, _)) = longest.get(longest.len() * i / threads) else {
            continue;
        };
        let at_chunk = p - p % BASE_CHUNK;
        let start = if starts.last().is_some_and(|&s| at_chunk > s) {
            at_chunk
        } else {
            p
        };
        if starts.last().is_some_and(|&s| start > s) {
            starts.push(start);
        }
    }
    (0..starts.len())
        .map(|k| {
            common
                .iter()
                .map(|(t, l)| {
                    let from = l.partition_point(|p| p.0 < starts[k]);
                    let to = starts
                        .get(k + 1)
                        .map_or(l.len(), |&end| l.partition_point(|p| p.0 < end));
                    (*t, l.get(from..to).unwrap_or_default())
                })
                .collect()
        })
        .collect()
}

/// Walks the positions of one range of `common` in source `src` (see [`Gathering::walk`]).
fn walk_range(
    req: &Request,
    average: [f64; 4],
    src: usize,
    s: &Source<'_>,
    masks: &[Vec<u8>],
    common: &[Span<'_>],
    searched: &[Searched],
) -> Result<Walked> {
    let mut w = Walked {
        cands: Candidates::default(),
        columns: vec![Vec::new(); searched.len()],
        dfs: vec![0; searched.len()],
        scanned: 0,
        rows: 0,
    };
    w.cands.start_run();
    let mut heads = vec![0; common.len()];
    let asked = common.iter().map(|(_, list)| list.len()).sum();
    let first = common
        .iter()
        .filter_map(|(_, list)| list.first().map(|p| p.0))
        .min()
        .unwrap_or(0);
    let last = common
        .iter()
        .filter_map(|(_, list)| list.last().map(|p| p.0))
        .max()
        .unwrap_or(0);
    // Sized once: grown a posting at a time, the columns were copied at every doubling.
    for (t, _) in common {
        w.columns[*t].reserve(asked);
    }
    let mut cursor = BaseCursor::for_walk(asked, last.saturating_sub(first));
    let mut masked = MaskCursor::new(masks);
    while let Some(position) = common
        .iter()
        .zip(&heads)
        .filter_map(|((_, list), &h)| list.get(h).map(|p| p.0))
        .min()
    {
        let live = cursor.live(s.store, &mut masked, position)?;
        let mut row = None;
        for ((t, list), h) in common.iter().zip(heads.iter_mut()) {
            while let Some(&(at, tf)) = list.get(*h)
                && at == position
            {
                *h += 1;
                let Some((id, features)) = live else {
                    continue;
                };
                w.scanned += 1;
                w.dfs[*t] += 1;
                let row = match row {
                    Some(row) => row,
                    None if req.filters.admits(&features, req.params.now) => {
                        let r = w.rows;
                        w.rows += 1;
                        w.cands.push(candidate(req, src, id, features, 0, 0.0, r));
                        row = Some(r);
                        r
                    }
                    None => continue,
                };
                let sat = bm25::saturate(bm25::field_frequency(tf, &features, average));
                let column = &mut w.columns[*t];
                column.resize(w.rows as usize, 0.0);
                column[row as usize] += sat;
                if let Some(c) = w.cands.last_mut() {
                    c.matched |= searched[*t].bit;
                }
            }
        }
    }
    Ok(w)
}

/// Candidates of a text query: every entry holding at least one query term and passing the
/// filters, with its BM25F.
///
/// Each source's common terms (those written by positions) are walked together first; then, term
/// by term in query order, the postings of that term read any other way (inline blocks, postings
/// written one by one) are merged in, and the term's idf, known once all its postings are
/// counted, is applied. So an entry's BM25F is summed in query order whichever way its postings
/// were read, and a store answers the same whatever its layout.
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
    let masks = postings::masks(sources)?;
    let first = terms.len();
    let searched = searched_terms(sources, &masks, words, terms)?;
    let none = Vec::new();
    let masks_of = |src: usize| masks.get(src).unwrap_or(&none);
    let mut g = Gathering {
        req,
        average: stats.average_lengths(),
        scanned: 0,
        dfs: vec![0; searched.len()],
        own: sources.iter().map(|_| Candidates::default()).collect(),
        rows: 0,
        columns: vec![Vec::new(); searched.len()],
    };
    // Which terms each source holds by positions.
    let mut walked = vec![vec![false; searched.len()]; sources.len()];
    for (src, s) in sources.iter().enumerate() {
        let mut common = Vec::new();
        for (t, term) in searched.iter().enumerate() {
            if postings::by_positions(s.store, &term.term)? == Some(true) {
                walked[src][t] = true;
                common.push((t, postings::positions(s.store, &term.term)?));
            }
        }
        if !common.is_empty() {
            g.walk(src, s, masks_of(src), &common, &searched)?;
        }
    }
    for (t, term) in searched.iter().enumerate() {
        for (src, s) in sources.iter().enumerate() {
            if !walked[src][t] {
                g.stream(src, t, term.bit, |visit| {
                    postings::for_each_in_blocks(s.store, masks_of(src), &term.term, visit)
                })?;
            }
            g.stream(src, t, term.bit, |visit| {
                postings::for_each_single(s.store, &term.term, visit)
            })?;
        }
        #[expect(clippy::cast_precision_loss, reason = "document counts fit easily")]
        let idf = bm25::idf(docs, g.dfs[t] as f64) * term.weight;
        let column = &g.columns[t];
        for c in g.own.iter_mut().flat_map(Candidates::iter_mut) {
            let walked = column.get(c.row as usize).copied().unwrap_or(0.0);
            c.bm25 += idf * (c.pending + walked);
            c.pending = 0.0;
        }
        terms[first + t].df = g.dfs[t];
    }
    *scanned += g.scanned;
    let mut cands = Candidates::default();
    for own in g.own {
        cands.append(own);
    }
    Ok(cands)
}

/// The terms of a text query, reported in `terms`: each word's stem once, or, for a word whose
/// stem no entry holds, a one-letter correction of it.
fn searched_terms(
    sources: &[Source<'_>],
    masks: &postings::Masks,
    words: &[String],
    terms: &mut Vec<TermReport>,
) -> Result<Vec<Searched>> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for word in words {
        let stem = tokenize::stem(word);
        if seen.contains(&stem) {
            continue;
        }
        seen.push(stem.clone());
        let mut term = stem;
        let mut weight = 1.0;
        let mut corrected_to = None;
        if !postings::held(sources, masks, &term)?
            && let Some((fixed, fixed_term)) = typo::correction(sources, masks, word)?
            && !seen.contains(&fixed_term)
        {
            seen.push(fixed_term.clone());
            term = fixed_term;
            weight = CORRECTION_WEIGHT;
            corrected_to = Some(fixed);
        }
        let bit = 1u64
            .checked_shl(u32::try_from(out.len()).unwrap_or(64))
            .unwrap_or(0);
        terms.push(TermReport {
            word: word.clone(),
            term: term.clone(),
            df: 0,
            corrected_to,
        });
        out.push(Searched { term, weight, bit });
    }
    Ok(out)
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
                disputed: None,
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
    if req.text.as_deref().is_some_and(has_no_words) {
        return Ok(Vec::new());
    }
    let wanted: Vec<String> = req.text.as_deref().map(tokenize::terms).unwrap_or_default();
    let mut hits: Vec<(f64, Hit)> = Vec::new();
    for s in sources {
        let found = crate::lifecycle::archive::archived_matching(s.store, |e| {
            req.filters.admits(&DocFeatures::of(e), req.params.now) && req.filters.confirms(e)
        })?;
        for entry in found {
            let terms = super::text_index::analyze(&entry);
            let matched: Vec<String> = wanted.iter().filter(|t| terms.holds(t)).cloned().collect();
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
                    disputed: None,
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
