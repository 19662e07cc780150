//! Text to index terms: lower-cased words, stop words dropped, each reduced to its English
//! Snowball (Porter 2) stem, so that "deploys", "deployed" and "deploying" are one term.
//!
//! The same function cuts entries and queries, so a query word finds every form of it.

use rust_stemmers::{Algorithm, Stemmer};
use std::sync::LazyLock;

/// Words longer than this are not indexed (hashes, base64 blobs): they never match a query.
pub const MAX_WORD_CHARS: usize = 40;

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// Words that carry no meaning for retrieval. Kept short on purpose: "not", "no" and numbers
/// stay, since "retry not idempotent" and "retry idempotent" are different memories.
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "being", "between", "both", "but", "by", "can", "could", "did", "do", "does",
    "doing", "during", "each", "for", "from", "further", "had", "has", "have", "having", "he",
    "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "itself", "just", "me", "more", "most", "my", "of", "on", "once", "only", "or", "other", "our",
    "ours", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that",
    "the", "their", "theirs", "them", "then", "there", "these", "they", "this", "those", "through",
    "to", "too", "under", "until", "up", "us", "very", "was", "we", "were", "what", "when",
    "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your",
    "yours",
];

/// A word of at most 7 bytes as one integer (its bytes and its length), so that looking it up
/// compares integers: a string comparison per step of a binary search made the stop-word test
/// a tenth of a rebuild, and still 6% with the comparisons cut to short words.
fn packed(word: &str) -> Option<u64> {
    let b = word.as_bytes();
    (b.len() <= 7).then(|| {
        b.iter()
            .fold(b.len() as u64, |acc, byte| (acc << 8) | u64::from(*byte))
    })
}

/// The stop words, packed and sorted.
static STOP_PACKED: LazyLock<Vec<u64>> = LazyLock::new(|| {
    let mut v: Vec<u64> = STOP_WORDS.iter().filter_map(|w| packed(w)).collect();
    v.sort_unstable();
    v
});

/// True when `word` (lower case) is a stop word.
pub fn is_stop_word(word: &str) -> bool {
    packed(word).is_some_and(|p| STOP_PACKED.binary_search(&p).is_ok())
}

/// Calls `f` with each word of `text`, lower-cased, in order, stop words and over-long words
/// left out. Allocates only for words that need lower-casing.
pub fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut lower = String::new();
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        // A word of at most MAX_WORD_CHARS bytes has at most that many characters.
        if w.is_empty() || (w.len() > MAX_WORD_CHARS && w.chars().count() > MAX_WORD_CHARS) {
            continue;
        }
        let word = if w.is_ascii() {
            if w.bytes().any(|b| b.is_ascii_uppercase()) {
                lower.clear();
                lower.push_str(w);
                lower.make_ascii_lowercase();
                lower.as_str()
            } else {
                w
            }
        } else {
            lower = w.to_lowercase();
            lower.as_str()
        };
        if !is_stop_word(word) {
            f(word);
        }
    }
}

/// The lower-cased words of `text`, in order, stop words and over-long words left out.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |w| out.push(w.to_owned()));
    out
}

/// The number of [`words`] of `text`, without allocating them.
pub fn count_words(text: &str) -> usize {
    let mut n = 0;
    for_each_word(text, |_| n += 1);
    n
}

/// The stem of one lower-cased word.
pub fn stem(word: &str) -> String {
    let stemmed = STEMMER.stem(word);
    match acronym_singular(&stemmed) {
        Some(one) => one.to_owned(),
        None => stemmed.into_owned(),
    }
}

/// The singular of an acronym's plural (`jwts`, `cpus`, `ssds`): Snowball keeps a final `s`
/// unless a vowel comes before the letter that precedes it, which acronyms seldom have.
fn acronym_singular(stem: &str) -> Option<&str> {
    let one = stem.strip_suffix('s')?;
    let b = one.as_bytes();
    let vowel = |c: &u8| b"aeiouy".contains(c);
    let (last, rest) = b.split_last()?;
    (b.len() >= 2 && b.is_ascii() && *last != b's' && !rest.iter().any(vowel)).then_some(one)
}

/// Words whose stems each thread remembers: the vocabulary of a project repeats, and stemming
/// was a large share of indexing.
const STEM_CACHE_WORDS: usize = 1 << 16;

thread_local! {
    static STEMS: std::cell::RefCell<rustc_hash::FxHashMap<Box<str>, Box<str>>> =
        std::cell::RefCell::new(rustc_hash::FxHashMap::default());
}

/// Calls `f` with each index term of `text`, in order (repeated terms repeated).
pub fn for_each_term(text: &str, mut f: impl FnMut(&str)) {
    STEMS.with_borrow_mut(|cache| {
        for_each_word(text, |w| {
            if let Some(t) = cache.get(w) {
                f(t);
                return;
            }
            let t: Box<str> = stem(w).into();
            f(&t);
            if cache.len() >= STEM_CACHE_WORDS {
                cache.clear();
            }
            cache.insert(w.into(), t);
        });
    });
}

/// The index terms of `text`, in order (repeated terms repeated).
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, |t| out.push(t.to_owned()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stop word is found, and no other word: each fits the packed form, and the
    /// packing tells apart words that differ in a byte or in length.
    #[test]
    fn stop_words_are_exactly_the_list() {
        for w in STOP_WORDS {
            assert!(w.len() <= 7 && is_stop_word(w), "{w}");
        }
        for w in [
            "", "b", "aa", "ab", "abou", "abouts", "ands", "the\0", "\0the", "thee", "th",
            "deploy", "between1", "zzzzzzz",
        ] {
            assert!(!is_stop_word(w), "{w:?}");
        }
    }

    #[test]
    fn forms_of_a_word_share_a_stem() {
        for group in [
            &["deploy", "deploys", "deployed", "deploying"][..],
            &["retry", "retries", "retried"],
            &["connection", "connections"],
            &["cache", "caches", "cached", "caching"],
            &["jwt", "jwts"],
            &["cpu", "cpus"],
            &["ssd", "ssds"],
            &["api", "apis"],
            &["url", "urls"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(
                stems.iter().all(|s| s == &stems[0]),
                "{group:?} -> {stems:?}"
            );
        }
    }

    #[test]
    fn only_plurals_of_acronyms_lose_their_s() {
        for (word, stem_of) in [
            ("jwts", "jwt"),
            ("k8s", "k8"),
            ("status", "status"),
            ("class", "class"),
            ("yes", "yes"),
            ("s", "s"),
            ("ss", "ss"),
            ("gps", "gp"),
        ] {
            assert_eq!(stem(word), stem_of, "{word}");
        }
    }

    #[test]
    fn the_fast_paths_agree_with_the_plain_definition() {
        let texts = [
            "The API-gateway retries, with back-off!",
            "ÀB ΣΑΣ Straße THE And x1 a",
            &"y".repeat(MAX_WORD_CHARS),
            &"é".repeat(MAX_WORD_CHARS),
            &"é".repeat(MAX_WORD_CHARS + 1),
        ];
        for text in texts {
            let plain: Vec<String> = text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty() && w.chars().count() <= MAX_WORD_CHARS)
                .map(str::to_lowercase)
                .filter(|w| STOP_WORDS.binary_search(&w.as_str()).is_err())
                .collect();
            assert_eq!(words(text), plain, "{text}");
            assert_eq!(count_words(text), plain.len());
            let stems: Vec<String> = plain.iter().map(|w| stem(w)).collect();
            assert_eq!(terms(text), stems);
            assert_eq!(terms(text), stems, "the second time from the cache");
        }
    }

    #[test]
    fn terms_drop_stop_words_and_punctuation() {
        assert_eq!(
            terms("The API-gateway retries, with back-off!"),
            vec!["api", "gateway", "retri", "back", "off"]
        );
        assert!(terms(&"x".repeat(MAX_WORD_CHARS + 1)).is_empty());
        assert_eq!(terms("Ünïcode Straße"), vec!["ünïcode", "straße"]);
    }
}
