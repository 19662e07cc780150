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

/// True when `word` (lower case) is a stop word.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// The lower-cased words of `text`, in order, stop words and over-long words left out.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && w.chars().count() <= MAX_WORD_CHARS)
        .map(str::to_lowercase)
        .filter(|w| !is_stop_word(w))
        .collect()
}

/// The stem of one lower-cased word.
pub fn stem(word: &str) -> String {
    STEMMER.stem(word).into_owned()
}

/// The index terms of `text`, in order (repeated terms repeated).
pub fn terms(text: &str) -> Vec<String> {
    words(text).iter().map(|w| stem(w)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOP_WORDS);
    }

    #[test]
    fn forms_of_a_word_share_a_stem() {
        for group in [
            &["deploy", "deploys", "deployed", "deploying"][..],
            &["retry", "retries", "retried"],
            &["connection", "connections"],
            &["cache", "caches", "cached", "caching"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(
                stems.iter().all(|s| s == &stems[0]),
                "{group:?} -> {stems:?}"
            );
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
