//! Finding which of many keywords a text holds: the prefilter of the rules.
//!
//! One Aho-Corasick automaton finds them all in one pass, but building it for a few hundred
//! keywords costs about a millisecond, a tenth of a single `add`; a substring search per keyword
//! costs microseconds on the few hundred bytes such a command scans. So a process searches
//! keyword by keyword until it has scanned [`AUTOMATON_FROM`] bytes, and builds the automaton
//! then. A bulk `apply` scans megabytes: past [`DFA_FROM`] bytes the process builds a DFA, some
//! milliseconds more to build and several times faster to run. All three answer the same.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes a process scans keyword by keyword before it builds the automaton.
const AUTOMATON_FROM: usize = 32 * 1024;

/// Bytes a process scans before it builds the DFA.
const DFA_FROM: usize = 1024 * 1024;

/// Bytes scanned by this process, over every keyword set.
static SCANNED: AtomicUsize = AtomicUsize::new(0);

/// A set of keywords, matched ignoring ASCII case.
pub(super) struct KeywordSet {
    /// In ASCII lowercase; a keyword's number is its position.
    words: Vec<String>,
    automaton: OnceLock<Option<AhoCorasick>>,
    dfa: OnceLock<Option<AhoCorasick>>,
}

impl KeywordSet {
    pub(super) fn new<'a>(words: impl IntoIterator<Item = &'a str>) -> Self {
        Self {
            words: words.into_iter().map(str::to_ascii_lowercase).collect(),
            automaton: OnceLock::new(),
            dfa: OnceLock::new(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.words.len()
    }

    /// The automaton for a process that has scanned `scanned` bytes: none below
    /// [`AUTOMATON_FROM`], then a non-contiguous NFA (cheap to build), then a DFA.
    fn automaton(&self, scanned: usize) -> Option<&AhoCorasick> {
        let (slot, kind) = if scanned >= DFA_FROM {
            (&self.dfa, AhoCorasickKind::DFA)
        } else if scanned >= AUTOMATON_FROM {
            (&self.automaton, AhoCorasickKind::NoncontiguousNFA)
        } else {
            return None;
        };
        slot.get_or_init(|| {
            AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::Standard)
                .kind(Some(kind))
                .build(&self.words)
                .ok()
        })
        .as_ref()
    }

    /// Calls `found` with the number of each keyword `text` holds (a keyword may be reported
    /// more than once).
    pub(super) fn each_in(&self, text: &str, mut found: impl FnMut(usize)) {
        let before = SCANNED.fetch_add(text.len(), Ordering::Relaxed);
        if let Some(automaton) = self.automaton(before + text.len()) {
            for m in automaton.find_overlapping_iter(text) {
                found(m.pattern().as_usize());
            }
            return;
        }
        self.each_in_by_search(text, found);
    }

    /// [`KeywordSet::each_in`] without the automaton.
    fn each_in_by_search(&self, text: &str, mut found: impl FnMut(usize)) {
        let lower = text.to_ascii_lowercase();
        for (i, w) in self.words.iter().enumerate() {
            if lower.contains(w.as_str()) {
                found(i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn by_automaton(k: &KeywordSet, text: &str, scanned: usize) -> Vec<usize> {
        let mut out: Vec<usize> = k
            .automaton(scanned)
            .map(|a| {
                a.find_overlapping_iter(text)
                    .map(|m| m.pattern().as_usize())
                    .collect()
            })
            .unwrap_or_default();
        out.sort_unstable();
        out.dedup();
        out
    }

    fn by_search(k: &KeywordSet, text: &str) -> Vec<usize> {
        let mut out = Vec::new();
        k.each_in_by_search(text, |i| out.push(i));
        out
    }

    proptest! {
        /// The search keyword by keyword finds exactly the keywords either automaton finds,
        /// in any case, overlapping or nested.
        #[test]
        fn every_way_finds_the_same_keywords(
            text in "[aAbBkK_ -]{0,60}",
            words in prop::collection::vec("[abk_-]{1,4}", 1..12),
        ) {
            let k = KeywordSet::new(words.iter().map(String::as_str));
            prop_assert_eq!(by_search(&k, &text), by_automaton(&k, &text, AUTOMATON_FROM));
            prop_assert_eq!(by_search(&k, &text), by_automaton(&k, &text, DFA_FROM));
        }
    }
}
