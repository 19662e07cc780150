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

/// Calls `f` with each word of `text`, in order, stop words and over-long words left out.
///
/// A word is a run of letters and digits, lower-cased, with the accents of Latin, Greek and
/// Cyrillic letters taken off (`Zürich` is `zurich`, `Straße` is `strasse`, text stored
/// decomposed reads as composed). Besides each word:
///
/// - a word whose case or letters and digits change inside it also gives its parts of two
///   characters or more (`ConnectionResetError`: `connection`, `reset`, `error`; `OOMKilled`:
///   `oom`, `killed`; `E1042`: `1042`);
/// - words joined by `-` or `_` also give the words joined (`kube-proxy`: `kubeproxy`),
///   numbers joined by `.` the number as written (`2.8.0`), and thousands separated by commas
///   the number without them (`48,210`: `48210`);
/// - Chinese, Japanese and Korean text, written without spaces, gives each pair of adjacent
///   characters (`渡辺健二`: `渡辺`, `辺健`, `健二`), or the character alone.
///
/// Entries and queries are cut alike, so each of these finds the other.
pub fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut emit = |w: &str| {
        if !w.is_empty() && !is_stop_word(w) {
            f(w);
        }
    };
    let mut words = Words::default();
    let mut compound = Joined::default();
    let mut number = Joined::default();
    let mut thousands = Joined::default();
    let mut rest = text;
    // Whether the previous run could continue a compound, and was a number.
    let mut prev: Option<(bool, bool)> = None;
    while let Some(start) = run_start(rest) {
        let (gap, from) = rest.split_at(start);
        let (run, after) = from.split_at(run_len(from));
        rest = after;
        words.run(run, &mut emit);
        let wordlike = run.is_ascii() || !run.chars().any(is_cjk);
        let digits = run.bytes().all(|b| b.is_ascii_digit());
        if wordlike {
            let joins = prev.is_some_and(|(w, _)| w) && (gap == "-" || gap == "_");
            compound.push(joins, run, "", &mut emit);
        } else {
            compound.finish(&mut emit);
        }
        if digits {
            let joins = prev.is_some_and(|(_, d)| d) && gap == ".";
            number.push(joins, run, ".", &mut emit);
            // Thousands separated by commas: `48,210` is also `48210`.
            let groups = thousands.runs > 0 && gap == "," && run.len() == 3;
            if groups || run.len() <= 3 {
                thousands.push(groups, run, "", &mut emit);
            } else {
                thousands.finish(&mut emit);
            }
        } else {
            number.finish(&mut emit);
            thousands.finish(&mut emit);
        }
        prev = Some((wordlike, digits));
    }
    compound.finish(&mut emit);
    number.finish(&mut emit);
    thousands.finish(&mut emit);
}

/// Where the first run of letters and digits of `text` starts. ASCII is read a byte at a time
/// (decoding every character was a tenth of indexing); from the first byte that is not ASCII,
/// characters are decoded.
fn run_start(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c >= 0x80 {
            return text.get(i..)?.find(char::is_alphanumeric).map(|p| i + p);
        }
        if c.is_ascii_alphanumeric() {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The length of the run of letters and digits (and characters invisible in a word) that
/// `from` starts with; as [`run_start`], ASCII a byte at a time.
fn run_len(from: &str) -> usize {
    let b = from.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c >= 0x80 {
            let rest = from.get(i..).unwrap_or_default();
            return rest
                .find(|c: char| !c.is_alphanumeric() && !is_invisible_in_word(c))
                .map_or(from.len(), |p| i + p);
        }
        if !c.is_ascii_alphanumeric() {
            return i;
        }
        i += 1;
    }
    b.len()
}

/// Runs joined one to the next (`kube-proxy`, `2.8.0`), lower-cased. A run is folded into the
/// joined word only once a second run joins it: most runs join nothing.
#[derive(Default)]
struct Joined<'a> {
    /// The last run, while it is the only one.
    first: &'a str,
    text: String,
    runs: usize,
}

impl<'a> Joined<'a> {
    /// Most runs joined into one word.
    const MAX_RUNS: usize = 6;

    /// Adds `run`, joined to the runs before it when `joins` (with `glue` between), else
    /// starting anew.
    fn push(&mut self, joins: bool, run: &'a str, glue: &str, emit: &mut impl FnMut(&str)) {
        if !joins || self.runs == Self::MAX_RUNS {
            self.finish(emit);
            self.first = run;
            self.runs = 1;
            return;
        }
        if self.runs == 1 {
            self.text.clear();
            fold_into(self.first, &mut self.text);
        }
        self.text.push_str(glue);
        fold_into(run, &mut self.text);
        self.runs += 1;
    }

    /// Gives the joined word, if more than one run made it.
    fn finish(&mut self, emit: &mut impl FnMut(&str)) {
        if self.runs >= 2 && self.text.chars().count() <= MAX_WORD_CHARS {
            emit(&self.text);
        }
        self.runs = 0;
    }
}

/// Buffers for the words of one run.
#[derive(Default)]
struct Words {
    word: String,
    part: String,
    chars: Vec<char>,
}

impl Words {
    /// The words of one run of letters and digits: its Chinese, Japanese and Korean stretches
    /// in pairs of characters, the rest as words with their parts.
    fn run(&mut self, run: &str, emit: &mut impl FnMut(&str)) {
        // The common case: a lower-case ASCII word.
        if run.bytes().all(|b| b.is_ascii_lowercase()) {
            if run.len() <= MAX_WORD_CHARS {
                emit(run);
            }
            return;
        }
        let mut rest = run;
        while !rest.is_empty() {
            let cjk = rest.chars().next().is_some_and(is_cjk);
            let len = rest.find(|c: char| is_cjk(c) != cjk).unwrap_or(rest.len());
            let (piece, after) = rest.split_at(len);
            if cjk {
                self.pairs(piece, emit);
            } else {
                self.word(piece, emit);
            }
            rest = after;
        }
    }

    fn pairs(&mut self, piece: &str, emit: &mut impl FnMut(&str)) {
        self.chars.clear();
        self.chars.extend(piece.chars());
        if let [one] = self.chars[..] {
            self.word.clear();
            self.word.push(one);
            emit(&self.word);
        }
        for pair in self.chars.windows(2) {
            self.word.clear();
            self.word.extend(pair);
            emit(&self.word);
        }
    }

    fn word(&mut self, piece: &str, emit: &mut impl FnMut(&str)) {
        // A word of at most MAX_WORD_CHARS bytes has at most that many characters.
        if piece.len() > MAX_WORD_CHARS && piece.chars().count() > MAX_WORD_CHARS {
            return;
        }
        self.word.clear();
        fold_into(piece, &mut self.word);
        emit(&self.word);
        let mut parts = Parts::of(piece).peekable();
        let Some(first) = parts.next() else {
            return;
        };
        if parts.peek().is_none() && first.len() == piece.len() {
            return;
        }
        for part in std::iter::once(first).chain(parts) {
            if part.chars().nth(1).is_some() {
                self.part.clear();
                fold_into(part, &mut self.part);
                emit(&self.part);
            }
        }
    }
}

/// The parts of a word at its changes of case and between letters and digits: `getUserById`
/// is `get User By Id`, `OOMKilled` `OOM Killed`, `E1042` `E 1042`.
struct Parts<'a> {
    rest: &'a str,
}

impl<'a> Parts<'a> {
    fn of(word: &'a str) -> Self {
        Self { rest: word }
    }
}

impl<'a> Iterator for Parts<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let mut chars = self.rest.char_indices().peekable();
        let (_, first) = chars.next()?;
        let mut prev = first;
        let mut end = self.rest.len();
        while let Some((i, c)) = chars.next() {
            let next_lower = chars.peek().is_some_and(|(_, n)| n.is_lowercase());
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase() && c.is_uppercase() && next_lower)
                || (prev.is_numeric() != c.is_numeric());
            if boundary {
                end = i;
                break;
            }
            prev = c;
        }
        let (part, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(part)
    }
}

/// Characters that belong to the word they stand in without showing in it: combining accents
/// (text stored decomposed, `Zu\u{308}rich`), zero-width spaces and joiners, the soft hyphen.
/// They continue a run of letters and are dropped from its words.
fn is_invisible_in_word(c: char) -> bool {
    matches!(u32::from(c), 0x0300..=0x036F | 0x00AD | 0x200B..=0x200D | 0x2060 | 0xFEFF)
}

/// True for the characters of scripts written without spaces between words: Chinese
/// characters, Japanese kana, Korean syllables.
fn is_cjk(c: char) -> bool {
    matches!(u32::from(c),
        0x3040..=0x30FF | 0x31F0..=0x31FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF
        | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFF66..=0xFF9F | 0x20000..=0x2FFFF)
}

/// Appends `word` lower-cased to `out`, with the accents of Latin, Greek and Cyrillic letters
/// taken off.
fn fold_into(word: &str, out: &mut String) {
    if word.is_ascii() {
        out.extend(word.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        return;
    }
    for c in word.chars() {
        let code = u32::from(c);
        if is_invisible_in_word(c) {
            continue;
        }
        if (0xFB00..=0xFB4F).contains(&code) || (0xFF00..=0xFF65).contains(&code) {
            // Ligatures (`ﬁ`) and full-width forms (`ＡＰＩ`): their plain letters.
            unicode_normalization::char::decompose_compatible(c, |d| out.extend(d.to_lowercase()));
            continue;
        }
        if code < 0x0530 || (0x1E00..=0x1FFF).contains(&code) {
            if let Some(plain) = unaccented(c) {
                out.push_str(plain);
                continue;
            }
            unicode_normalization::char::decompose_canonical(c, |d| {
                if !(0x0300..=0x036F).contains(&u32::from(d)) {
                    out.extend(d.to_lowercase());
                }
            });
        } else {
            out.extend(c.to_lowercase());
        }
    }
}

/// Letters that carry their accent in themselves rather than by decomposition.
fn unaccented(c: char) -> Option<&'static str> {
    Some(match c {
        'ß' | 'ẞ' => "ss",
        'ø' | 'Ø' => "o",
        'æ' | 'Æ' => "ae",
        'œ' | 'Œ' => "oe",
        'ł' | 'Ł' => "l",
        'đ' | 'Đ' | 'ð' | 'Ð' => "d",
        'þ' | 'Þ' => "th",
        'ı' => "i",
        // Greek sigma is written `ς` at the end of a word, `σ` elsewhere, `Σ` in capitals.
        'ς' => "σ",
        _ => return None,
    })
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

/// Each thread's words and their stems, the stems numbered: the words of an entry are looked up
/// once each, and its terms counted by number, not hashed and compared again as strings.
#[derive(Default)]
struct Vocabulary {
    /// Word → the number of its stem.
    words: rustc_hash::FxHashMap<Box<str>, u32>,
    /// Number → stem.
    stems: Vec<Box<str>>,
    /// Stem → number: consulted only for a word not seen before.
    numbers: rustc_hash::FxHashMap<Box<str>, u32>,
}

impl Vocabulary {
    fn number(&mut self, word: &str) -> u32 {
        if let Some(n) = self.words.get(word) {
            return *n;
        }
        let stem = stem(word);
        let n = match self.numbers.get(stem.as_str()) {
            Some(n) => *n,
            None => {
                let n = u32::try_from(self.stems.len()).unwrap_or(u32::MAX);
                self.stems.push(stem.as_str().into());
                self.numbers.insert(stem.into(), n);
                n
            }
        };
        self.words.insert(word.into(), n);
        n
    }
}

thread_local! {
    static VOCABULARY: std::cell::RefCell<Vocabulary> =
        std::cell::RefCell::new(Vocabulary::default());
}

/// Calls `f` with the position of the text in `texts`, the number and the index term of each
/// term of each text, in order (repeated terms repeated). Within one call a term has one
/// number, and two terms two numbers; numbers mean nothing across calls.
pub fn for_each_numbered_term<'t>(
    texts: impl IntoIterator<Item = &'t str>,
    mut f: impl FnMut(usize, u32, &str),
) {
    VOCABULARY.with_borrow_mut(|v| {
        if v.words.len() >= STEM_CACHE_WORDS {
            *v = Vocabulary::default();
        }
        for (i, text) in texts.into_iter().enumerate() {
            for_each_word(text, |w| {
                let n = v.number(w);
                f(i, n, v.stems.get(n as usize).map_or("", |t| t));
            });
        }
    });
}

/// Calls `f` with each index term of `text`, in order (repeated terms repeated).
pub fn for_each_term(text: &str, mut f: impl FnMut(&str)) {
    for_each_numbered_term([text], |_, _, term| f(term));
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

    proptest::proptest! {
        /// Runs are found where decoding every character finds them, whatever the mix of
        /// ASCII, accented letters, invisible characters and punctuation.
        #[test]
        fn runs_are_found_as_by_characters(
            text in "[a-zA-Z0-9 .,_\\-éßΣ渡\u{301}\u{200b}!]{0,24}",
        ) {
            let start = text.find(char::is_alphanumeric);
            proptest::prop_assert_eq!(run_start(&text), start);
            if let Some(start) = start {
                let from = &text[start..];
                let len = from
                    .find(|c: char| !c.is_alphanumeric() && !is_invisible_in_word(c))
                    .unwrap_or(from.len());
                proptest::prop_assert_eq!(run_len(from), len);
            }
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

    /// Counting, stemming and the stem cache agree with the words.
    #[test]
    fn terms_are_the_stems_of_the_words() {
        let texts = [
            "The API-gateway retries, with back-off!",
            "ÀB ΣΑΣ Straße THE And x1 a",
            "getUserById 2.8.0 渡辺健二 kube-proxy",
            &"y".repeat(MAX_WORD_CHARS),
            &"é".repeat(MAX_WORD_CHARS),
            &"é".repeat(MAX_WORD_CHARS + 1),
        ];
        for text in texts {
            let words = words(text);
            assert_eq!(count_words(text), words.len());
            assert!(words.iter().all(|w| !is_stop_word(w)), "{text}");
            let stems: Vec<String> = words.iter().map(|w| stem(w)).collect();
            assert_eq!(terms(text), stems);
            assert_eq!(terms(text), stems, "the second time from the cache");
        }
    }

    /// The words of runs that change case or join letters and digits, of joined runs, of
    /// accented letters and of text without spaces.
    #[test]
    fn words_find_their_parts_their_joins_and_their_plain_letters() {
        for (text, want) in [
            (
                "ConnectionResetError",
                &["connectionreseterror", "connection", "reset", "error"][..],
            ),
            ("getUserById", &["getuserbyid", "get", "user", "id"]),
            (
                "OOMKilled E1042",
                &["oomkilled", "oom", "killed", "e1042", "1042"],
            ),
            ("k8s", &["k8s"]),
            ("kube-proxy", &["kube", "proxy", "kubeproxy"]),
            ("rate_limit", &["rate", "limit", "ratelimit"]),
            ("rate - limit", &["rate", "limit"]),
            ("version 2.8.0.", &["version", "2", "8", "0", "2.8.0"]),
            ("48,210 images", &["48", "210", "images", "48210"]),
            ("1,2,3 and 1,2345", &["1", "2", "3", "1", "2345"]),
            (
                "Amélie Zürich İstanbul Straße",
                &["amelie", "zurich", "istanbul", "strasse"],
            ),
            ("Cafe\u{301} CAFÉ naïve", &["cafe", "cafe", "naive"]),
            ("渡辺健二 語", &["渡辺", "辺健", "健二", "語"]),
            ("日本語API", &["日本", "本語", "api"]),
            ("Zu\u{308}rich e\u{301}cole", &["zurich", "ecole"]),
            ("ΟΔΟΣ οδός", &["οδοσ", "οδοσ"]),
            ("ﬁle ＡＰＩ de\u{200b}ploy", &["file", "api", "deploy"]),
        ] {
            assert_eq!(words(text), want, "{text}");
        }
        assert!(words(&"x".repeat(MAX_WORD_CHARS + 1)).is_empty());
    }

    /// A query of one part, join or pair finds what holds the whole, and the other way round.
    #[test]
    fn a_query_finds_the_forms_of_a_word() {
        for (entry, query) in [
            ("ConnectionResetError", "connection reset error"),
            ("OOMKilled", "oom killed"),
            ("kube-proxy", "kubeproxy"),
            ("kubeproxy", "kube-proxy"),
            ("error E1042", "1042"),
            ("Zürich", "Zurich"),
            ("Amelie", "Amélie"),
            ("渡辺健二", "渡辺"),
            ("release 2.8.0", "2.8.0"),
            ("2,950 images/s", "2950"),
        ] {
            let have = terms(entry);
            assert!(
                terms(query).iter().any(|t| have.contains(t)),
                "{entry} / {query}: {have:?} {:?}",
                terms(query)
            );
        }
    }

    #[test]
    fn terms_drop_stop_words_and_punctuation() {
        assert_eq!(
            terms("The API-gateway retries, with back-off!"),
            vec![
                "api",
                "gateway",
                "retri",
                "apigateway",
                "back",
                "off",
                "backoff"
            ]
        );
        assert!(terms(&"x".repeat(MAX_WORD_CHARS + 1)).is_empty());
        assert_eq!(terms("Ünïcode Straße"), vec!["unicod", "strass"]);
    }
}
