//! Answering a query over one or more stores (the project's and `global`'s): candidates from the
//! text index, filters, BM25F, the composite score, and the final order.
//!
//! With text, each query term's postings are scanned once per store; corpus statistics (entries,
//! average field lengths, document frequencies) are summed over the stores first, so an entry
//! scores the same whichever store holds it. Without text, every hot entry's feature record is
//! scanned. Either way the score of an entry is a function of the entry, the query, the corpus
//! statistics and `now` only.

use super::bm25;
use super::features::DocFeatures;
use super::filters::Filters;
use super::rank::{self, Components, RankParams, Rule};
use super::scope::scope_match;
use super::text_index::{DOC_PREFIX, Posting, TextStats, term_prefix};
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

struct Candidate {
    src: usize,
    id: String,
    features: DocFeatures,
    bm25: f64,
    matched: Vec<u16>,
}

/// Runs `req` over `sources`.
///
/// # Errors
/// When a store cannot be read.
pub fn search(sources: &[Source<'_>], req: &Request) -> Result<Answer> {
    let words = req.text.as_deref().map(tokenize::words).unwrap_or_default();
    let mut scanned = 0;
    let mut terms = Vec::new();
    let mut cands: Vec<Candidate> = Vec::new();
    let text = !words.is_empty();
    if text {
        cands = text_candidates(sources, req, &words, &mut terms, &mut scanned)?;
    } else {
        for (src, s) in sources.iter().enumerate() {
            s.store.scan_index(DOC_PREFIX, |id, value| {
                scanned += 1;
                if let Some(f) = DocFeatures::decode(value)
                    && req.filters.admits(&f, req.params.now)
                {
                    cands.push(Candidate {
                        src,
                        id: String::from_utf8_lossy(id).into_owned(),
                        features: f,
                        bm25: 0.0,
                        matched: Vec::new(),
                    });
                }
                true
            })?;
        }
    }

    let mut loaded: HashMap<(usize, String), Option<EntryState>> = HashMap::new();
    let mut load = |src: usize, id: &str| -> Result<Option<EntryState>> {
        if let Some(s) = loaded.get(&(src, id.to_owned())) {
            return Ok(s.clone());
        }
        let s = sources[src].store.hot_entries(&[id])?.pop();
        let ok = s.filter(|s| req.filters.confirms(s));
        loaded.insert((src, id.to_owned()), ok.clone());
        Ok(ok)
    };

    // The best BM25F among entries that really pass the filters: relevance is relative to it.
    let mut best = 0.0;
    if text {
        let mut order: Vec<usize> = (0..cands.len()).collect();
        order.sort_by(|&a, &b| cands[b].bm25.total_cmp(&cands[a].bm25));
        for i in order {
            let c = &cands[i];
            if !req.filters.needs_confirmation() || load(c.src, &c.id)?.is_some() {
                best = c.bm25;
                break;
            }
        }
    }

    let mut scored: Vec<(Components, Vec<Rule>, usize)> = cands
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let rules = rank::rules(&c.features, &req.params);
            let sm = scope_match(c.features.scope_hash, req.filters.scope.as_deref());
            let comp = rank::composite(&c.features, sm, &rules, &req.params);
            let comp = if text {
                rank::with_relevance(comp, c.bm25, best)
            } else {
                comp
            };
            (comp, rules, i)
        })
        .filter(|(comp, _, _)| comp.relevance.is_none_or(|r| r >= req.min_relevance))
        .collect();
    scored.sort_by(|a, b| {
        let (ca, cb) = (&cands[a.2], &cands[b.2]);
        let first = match req.order {
            Order::Score => std::cmp::Ordering::Equal,
            Order::Confidence => cb.features.confidence.cmp(&ca.features.confidence).then(
                cb.features
                    .evidence_quality
                    .cmp(&ca.features.evidence_quality),
            ),
        };
        first
            .then(b.0.score.total_cmp(&a.0.score))
            .then(cb.features.confidence.cmp(&ca.features.confidence))
            .then(cb.features.updated.cmp(&ca.features.updated))
            .then(sources[ca.src].global.cmp(&sources[cb.src].global))
            .then(ca.id.cmp(&cb.id))
    });

    let matched = scored.len();
    let mut hits = Vec::new();
    for (comp, rules, i) in scored {
        if hits.len() >= req.limit {
            break;
        }
        let c = &cands[i];
        let Some(entry) = load(c.src, &c.id)? else {
            continue;
        };
        hits.push(Hit {
            entry,
            project: sources[c.src].project.clone(),
            global: sources[c.src].global,
            components: comp,
            rules,
            matched_terms: c.matched.iter().map(|&t| terms_term(&terms, t)).collect(),
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

fn terms_term(terms: &[TermReport], i: u16) -> String {
    terms
        .get(usize::from(i))
        .map(|t| t.term.clone())
        .unwrap_or_default()
}

/// Candidates of a text query: every entry holding at least one query term and passing the
/// filters, with its BM25F.
fn text_candidates(
    sources: &[Source<'_>],
    req: &Request,
    words: &[String],
    terms: &mut Vec<TermReport>,
    scanned: &mut usize,
) -> Result<Vec<Candidate>> {
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
    let mut by_id: HashMap<(usize, String), usize> = HashMap::new();
    let mut cands: Vec<Candidate> = Vec::new();
    let mut seen_terms: Vec<String> = Vec::new();
    for word in words {
        let stem = tokenize::stem(word);
        if seen_terms.contains(&stem) {
            continue;
        }
        seen_terms.push(stem.clone());
        let (mut postings, mut df) = postings_of(sources, req, &stem, scanned)?;
        let mut term = stem.clone();
        let mut weight = 1.0;
        let mut corrected_to = None;
        if df == 0
            && let Some((fixed, fixed_term)) = typo::correction(sources, word)?
            && !seen_terms.contains(&fixed_term)
        {
            (postings, df) = postings_of(sources, req, &fixed_term, scanned)?;
            seen_terms.push(fixed_term.clone());
            term = fixed_term;
            weight = CORRECTION_WEIGHT;
            corrected_to = Some(fixed);
        }
        let t = u16::try_from(terms.len()).unwrap_or(u16::MAX);
        terms.push(TermReport {
            word: word.clone(),
            term,
            df,
            corrected_to,
        });
        #[expect(clippy::cast_precision_loss, reason = "document counts fit easily")]
        let idf = bm25::idf(docs, df as f64) * weight;
        for (src, id, p) in postings {
            let score = bm25::term_score(idf, bm25::field_frequency(p.tf, &p.features, average));
            let slot = *by_id.entry((src, id.clone())).or_insert_with(|| {
                cands.push(Candidate {
                    src,
                    id,
                    features: p.features,
                    bm25: 0.0,
                    matched: Vec::new(),
                });
                cands.len() - 1
            });
            cands[slot].bm25 += score;
            cands[slot].matched.push(t);
        }
    }
    Ok(cands)
}

type Postings = Vec<(usize, String, Posting)>;

/// The postings of `term` that pass the cheap filters, and the term's document frequency over
/// all entries of all sources (filters do not change corpus statistics).
fn postings_of(
    sources: &[Source<'_>],
    req: &Request,
    term: &str,
    scanned: &mut usize,
) -> Result<(Postings, u64)> {
    let prefix = term_prefix(term);
    let mut out = Vec::new();
    let mut df = 0;
    for (src, s) in sources.iter().enumerate() {
        s.store.scan_index(&prefix, |id, value| {
            *scanned += 1;
            df += 1;
            if let Some(p) = Posting::decode(value)
                && req.filters.admits(&p.features, req.params.now)
            {
                out.push((src, String::from_utf8_lossy(id).into_owned(), p));
            }
            true
        })?;
    }
    Ok((out, df))
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
