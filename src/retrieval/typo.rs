//! One-letter typo tolerance: a query word that is in no entry is replaced by the most frequent
//! indexed word one edit away (a letter deleted, inserted, replaced, or two letters swapped).
//! Only words of four letters or more are corrected, and only when the word itself matches
//! nothing, so correct words are never second-guessed.

use super::search::Source;
use super::tokenize;
use crate::error::Result;

const ALPHABET: &str = "abcdefghijklmnopqrstuvwxyz";
const MIN_CHARS: usize = 4;

/// Every word one edit from `word`, in a fixed order, without duplicates.
pub fn edits(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let mut out = Vec::new();
    let s = |v: &[char]| v.iter().collect::<String>();
    for i in 0..chars.len() {
        let mut v = chars.clone();
        v.remove(i);
        out.push(s(&v));
    }
    for i in 0..chars.len().saturating_sub(1) {
        let mut v = chars.clone();
        v.swap(i, i + 1);
        out.push(s(&v));
    }
    for i in 0..=chars.len() {
        for c in ALPHABET.chars() {
            let mut v = chars.clone();
            v.insert(i, c);
            out.push(s(&v));
        }
    }
    for i in 0..chars.len() {
        for c in ALPHABET.chars() {
            if chars[i] != c {
                let mut v = chars.clone();
                v[i] = c;
                out.push(s(&v));
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|w| w != word && seen.insert(w.clone()));
    out
}

/// The correction of `word` (the corrected word and its index term) when `word` is long enough
/// and some word one edit away is indexed; the most frequent one wins, then the first in order.
///
/// # Errors
/// When a store cannot be read.
pub(super) fn correction(
    sources: &[Source<'_>],
    masks: &super::postings::Masks,
    word: &str,
) -> Result<Option<(String, String)>> {
    if word.chars().count() < MIN_CHARS || !word.chars().all(|c| c.is_ascii_lowercase()) {
        return Ok(None);
    }
    let mut best: Option<(u64, String, String)> = None;
    let mut tried = std::collections::HashSet::new();
    for candidate in edits(word) {
        if tokenize::is_stop_word(&candidate) {
            continue;
        }
        let term = tokenize::stem(&candidate);
        if !tried.insert(term.clone()) {
            continue;
        }
        let df = super::postings::document_frequency(sources, masks, &term)?;
        if df > 0 && best.as_ref().is_none_or(|(d, _, _)| df > *d) {
            best = Some((df, candidate, term));
        }
    }
    Ok(best.map(|(_, w, t)| (w, t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_cover_each_kind_of_typo() {
        let e = edits("cache");
        for w in ["cach", "ccahe", "cacha", "caches", "acche"] {
            assert!(e.contains(&w.to_owned()), "{w}");
        }
        assert!(!e.contains(&"cache".to_owned()));
    }
}
