//! One-letter typo tolerance: a query word that is in no entry is replaced by the most frequent
//! indexed word one slip of the fingers away (see [`edits`]). Only words of four letters or more
//! are corrected, and only when the word itself matches nothing, so correct words are never
//! second-guessed.
//!
//! Only slips people make count: a word one arbitrary edit from an indexed one is most often
//! another word ("election" and "selection", "stale" and "stage", "leader" and "header"), and
//! correcting it made a question about something memory does not hold answer with whatever
//! shared a near-spelling.

use super::search::Source;
use super::tokenize;
use crate::error::Result;

const ALPHABET: &str = "abcdefghijklmnopqrstuvwxyz";
const MIN_CHARS: usize = 4;
const KEYBOARD: [&str; 3] = ["qwertyuiop", "asdfghjkl", "zxcvbnm"];
const VOWELS: &str = "aeiouy";

/// The row and column of a letter on a QWERTY keyboard.
fn key(c: char) -> Option<(usize, usize)> {
    KEYBOARD
        .iter()
        .enumerate()
        .find_map(|(row, keys)| keys.find(c).map(|col| (row, col)))
}

/// True when keys `a` and `b` touch on a QWERTY keyboard (each row sits half a key to the
/// right of the one above).
fn adjacent(a: char, b: char) -> bool {
    let (Some((ra, ca)), Some((rb, cb))) = (key(a), key(b)) else {
        return false;
    };
    match ra.abs_diff(rb) {
        0 => ca.abs_diff(cb) == 1,
        1 => {
            let (upper, lower) = if ra < rb { (ca, cb) } else { (cb, ca) };
            upper == lower || upper == lower + 1
        }
        _ => false,
    }
}

/// True when typing `typed` for `meant` is a slip: a neighbouring key, or one vowel for another.
fn near(typed: char, meant: char) -> bool {
    adjacent(typed, meant) || (VOWELS.contains(typed) && VOWELS.contains(meant))
}

/// The words that `word` may be a slip of, in a fixed order, without duplicates: two letters
/// swapped; a letter typed twice or with its neighbouring key (`depploy`, `deplpoy`), but not
/// in front of the word; a letter left out, but the first (`deply`); a letter replaced by a
/// neighbouring key or a vowel by another (`deplot`, `idempotancy`).
///
/// The first letter is where a word differs from another word, not where fingers slip: a
/// letter added in front is no more a slip than the first one left out (`selection` is not
/// `election` typed with the `s` beside the `e`, nor `rate` a `crate` missing its `c`). A first
/// letter typed twice is still one (`ddeploy`: the second `d` is the extra one).
pub fn edits(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let mut out = Vec::new();
    let s = |v: &[char]| v.iter().collect::<String>();
    for i in 1..chars.len() {
        let extra = chars[i];
        let beside = [i.checked_sub(1), Some(i + 1)]
            .into_iter()
            .flatten()
            .filter_map(|j| chars.get(j));
        if beside
            .into_iter()
            .any(|&n| n == extra || adjacent(n, extra))
        {
            let mut v = chars.clone();
            v.remove(i);
            out.push(s(&v));
        }
    }
    for i in 0..chars.len().saturating_sub(1) {
        let mut v = chars.clone();
        v.swap(i, i + 1);
        out.push(s(&v));
    }
    for i in 1..=chars.len() {
        for c in ALPHABET.chars() {
            let mut v = chars.clone();
            v.insert(i, c);
            out.push(s(&v));
        }
    }
    for i in 0..chars.len() {
        for c in ALPHABET.chars() {
            if chars[i] != c && near(chars[i], c) {
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
/// and some slip of it is written in an indexed entry; the most frequent term wins, then the
/// first in order.
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
    let mut found: Vec<(u64, String, String)> = Vec::new();
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
        if df > 0 {
            found.push((df, candidate, term));
        }
    }
    // Stable: of equal frequencies, the first in order.
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    for (_, candidate, term) in found {
        if written(sources, masks, &term, &candidate)? {
            return Ok(Some((candidate, term)));
        }
    }
    Ok(None)
}

/// Entries a correction is looked for in.
const SAMPLE: usize = 8;

/// True when some entry holding `term` writes `word`, as it is or with an ending (`deploy` in
/// "deploys"). A slip's stem can be an indexed term that no entry spells that way: `parking`
/// slipped to `pariing`, whose stem `pari` is that of "Paris".
fn written(
    sources: &[Source<'_>],
    masks: &super::postings::Masks,
    term: &str,
    word: &str,
) -> Result<bool> {
    let none = Vec::new();
    for (src, s) in sources.iter().enumerate() {
        let mut ids: Vec<String> = Vec::new();
        let mut take = |id: &[u8], _| {
            ids.push(String::from_utf8_lossy(id).into_owned());
            ids.len() < SAMPLE
        };
        super::postings::for_each_single(s.store, term, &mut take)?;
        super::postings::for_each_in_blocks(
            s.store,
            masks.get(src).unwrap_or(&none),
            term,
            &mut take,
        )?;
        let ids: Vec<&str> = ids.iter().take(SAMPLE).map(String::as_str).collect();
        for entry in s.store.hot_entries(&ids)? {
            let f = &entry.fields;
            let mut seen = false;
            for text in [&f.summary, &f.content, &f.subject]
                .into_iter()
                .chain(&f.tags)
            {
                tokenize::for_each_word(text, |w| seen |= w.starts_with(word));
            }
            if seen {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_cover_each_kind_of_typo() {
        for (typed, meant) in [
            ("deplyo", "deploy"),
            ("depploy", "deploy"),
            ("ddeploy", "deploy"),
            ("deplpoy", "deploy"),
            ("deply", "deploy"),
            ("certificat", "certificate"),
            ("deplot", "deploy"),
            ("idempotancy", "idempotency"),
            ("kuberentes", "kubernetes"),
        ] {
            assert!(
                edits(typed).contains(&meant.to_owned()),
                "{typed} -> {meant}"
            );
        }
        assert!(!edits("cache").contains(&"cache".to_owned()));
    }

    /// Words one arbitrary edit from another word, but no slip of the fingers from it, either
    /// way: `selection` is `election` with an `s` typed before it, `s` beside `e`.
    #[test]
    fn other_words_are_not_slips() {
        for (word, other) in [
            ("election", "selection"),
            ("stale", "stage"),
            ("leader", "header"),
            ("mock", "lock"),
            ("bread", "break"),
            ("rate", "crate"),
        ] {
            for (typed, meant) in [(word, other), (other, word)] {
                assert!(
                    !edits(typed).contains(&meant.to_owned()),
                    "{typed} -> {meant}"
                );
            }
        }
    }

    #[test]
    fn keys_touch_as_on_a_keyboard() {
        for (a, b) in [
            ('q', 'w'),
            ('a', 'q'),
            ('a', 'w'),
            ('g', 't'),
            ('g', 'y'),
            ('g', 'b'),
            ('m', 'k'),
        ] {
            assert!(adjacent(a, b) && adjacent(b, a), "{a}{b}");
        }
        for (a, b) in [
            ('q', 'e'),
            ('a', 'e'),
            ('l', 'h'),
            ('m', 'l'),
            ('d', 'k'),
            ('z', 'q'),
        ] {
            assert!(!adjacent(a, b), "{a}{b}");
        }
    }
}
