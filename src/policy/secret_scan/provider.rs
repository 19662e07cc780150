//! Provider token rules: one per credential format of about 220 services, derived from the
//! gitleaks rule set (see `provider_rules.rs` and `generate_rules.py`).
//!
//! Each rule has keywords, and a text is only matched against the rules whose keywords it holds:
//! one Aho-Corasick pass over the text finds them all, so ordinary prose costs one linear scan
//! and no regex at all. Each rule's pattern is compiled the first time its keyword appears.
//! A match then passes, in order: the rule's minimum entropy, the shared placeholder test, and
//! the allowlists (the rule's own and the global one) as gitleaks applies them.

use regex::bytes::Regex;
use std::sync::{LazyLock, OnceLock};

use super::keywords::KeywordSet;
use super::provider_rules::{GLOBAL_ALLOW, RULES};

/// What an allowlist's regexes are matched against.
#[derive(Clone, Copy)]
pub(super) enum Target {
    /// The secret (the capture group).
    Secret,
    /// The whole match, including the name it was assigned to.
    Match,
    /// The line the match is on.
    Line,
}

/// Values a rule does not report: any regex that matches the target, or any stopword that the
/// secret contains (case-insensitive).
pub(super) struct Allow {
    pub(super) target: Target,
    pub(super) regexes: &'static [&'static str],
    pub(super) stopwords: &'static [&'static str],
}

pub(super) struct ProviderRule {
    pub(super) id: &'static str,
    pub(super) description: &'static str,
    pub(super) pattern: &'static str,
    /// Lowercase text that every match contains.
    pub(super) keywords: &'static [&'static str],
    /// Minimum Shannon entropy of the secret, in bits per character (0: none).
    pub(super) entropy: f64,
    /// Which capture group is the secret (0: the first that matched, else the whole match).
    pub(super) secret_group: usize,
    pub(super) allow: &'static [Allow],
}

/// Every provider rule: (id, description).
pub(super) fn rules() -> impl Iterator<Item = (&'static str, &'static str)> {
    RULES.iter().map(|r| (r.id, r.description))
}

/// One provider finding: (rule index, id, description, start, end), byte offsets of the secret.
pub(super) type Hit = (usize, &'static str, &'static str, usize, usize);

struct Prefilter {
    keywords: KeywordSet,
    /// For each keyword, the rules it selects.
    rules_of: Vec<Vec<usize>>,
    /// Rules without keywords: always tried.
    always: Vec<usize>,
}

static PREFILTER: LazyLock<Prefilter> = LazyLock::new(|| {
    let mut words: Vec<&str> = Vec::new();
    let mut rules_of: Vec<Vec<usize>> = Vec::new();
    let mut always = Vec::new();
    for (i, rule) in RULES.iter().enumerate() {
        if rule.keywords.is_empty() {
            always.push(i);
        }
        for k in rule.keywords {
            match words.iter().position(|w| w == k) {
                Some(p) => rules_of[p].push(i),
                None => {
                    words.push(k);
                    rules_of.push(vec![i]);
                }
            }
        }
    }
    Prefilter {
        keywords: KeywordSet::new(words),
        rules_of,
        always,
    }
});

/// A rule's compiled pattern and allowlist regexes (one list per allowlist).
struct Compiled {
    pattern: Option<Regex>,
    allow: Vec<Vec<Option<Regex>>>,
}

/// One slot per rule, filled the first time the rule's keyword appears.
static COMPILED: LazyLock<Vec<OnceLock<Compiled>>> =
    LazyLock::new(|| RULES.iter().map(|_| OnceLock::new()).collect());

static GLOBAL: LazyLock<Vec<Option<Regex>>> =
    LazyLock::new(|| GLOBAL_ALLOW.regexes.iter().map(|p| compile(p)).collect());

fn compiled(i: usize) -> Option<&'static Compiled> {
    let rule = RULES.get(i)?;
    Some(COMPILED.get(i)?.get_or_init(|| {
        Compiled {
            pattern: compile(rule.pattern),
            allow: rule
                .allow
                .iter()
                .map(|a| a.regexes.iter().map(|p| compile(p)).collect())
                .collect(),
        }
    }))
}

/// A pattern that does not compile is a defect of the generated table, caught by the tests
/// (which compile every rule); at run time that one rule is skipped rather than taking the whole
/// scan down.
fn compile(pattern: &str) -> Option<Regex> {
    regex::bytes::RegexBuilder::new(pattern)
        .size_limit(1 << 24)
        .build()
        .ok()
}

/// The indices of the rules worth trying on `text`, in table order, each once.
fn candidates(text: &str) -> Vec<usize> {
    let pre = &*PREFILTER;
    // Most texts hold no keyword: gathered as found and sorted, rather than marked among all
    // the rules and collected from every mark (a tenth of scanning a short text).
    let mut selected = pre.always.clone();
    pre.keywords.each_in(text, |k| {
        selected.extend(pre.rules_of.get(k).into_iter().flatten().copied());
    });
    selected.sort_unstable();
    selected.dedup();
    selected
}

/// Provider tokens in `text`.
pub(super) fn scan(text: &str) -> Vec<Hit> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    for i in candidates(text) {
        let rule = &RULES[i];
        let Some(compiled) = compiled(i) else {
            continue;
        };
        let Some(re) = compiled.pattern.as_ref() else {
            continue;
        };
        for caps in re.captures_iter(bytes) {
            let Some(whole) = caps.get(0) else { continue };
            let secret = if rule.secret_group > 0 {
                caps.get(rule.secret_group)
            } else {
                (1..caps.len()).find_map(|g| caps.get(g).filter(|m| !m.is_empty()))
            }
            .unwrap_or(whole);
            let (start, end) = char_span(text, secret.start(), secret.end());
            let value = &text[start..end];
            if value.is_empty() {
                continue;
            }
            if rule.entropy > 0.0 && super::entropy(value) < rule.entropy {
                continue;
            }
            // A rule whose keyword starts the value knows it by its format (`glpat-`,
            // `sk-ant-api03`); the others by the name it is given (see `is_example_value`).
            let lower = value.to_ascii_lowercase();
            let format = rule
                .keywords
                .iter()
                .any(|k| lower.starts_with(&k.to_ascii_lowercase()));
            if super::is_placeholder(value) || super::is_example_value(value, format) {
                continue;
            }
            // gitleaks' match begins with the name the value is assigned to (the pattern's
            // leading `[\w.-]{0,50}?`, dropped for speed); allowlists of the match expect it.
            let name_start = text.as_bytes()[..whole.start()]
                .iter()
                .rev()
                .take(50)
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
                .count();
            let (ws, we) = char_span(text, whole.start() - name_start, whole.end());
            if rule.id == "generic-api-key"
                && (super::names_no_secret(&text[ws..start])
                    || super::is_namespaced_key(&text[..start]))
            {
                continue;
            }
            let line = line_of(text, ws, we);
            let rule_allows = rule.allow.iter().zip(&compiled.allow).any(|(a, res)| {
                let target = match a.target {
                    Target::Secret => value,
                    Target::Match => &text[ws..we],
                    Target::Line => line,
                };
                allowed(a, res, value, target)
            });
            if rule_allows || global_allows(value, format) {
                continue;
            }
            out.push((i, rule.id, named(rule.description), start, end));
        }
    }
    out
}

/// What a provider rule's description names, for a message that reads "looks like a …": the
/// descriptions are sentences ("Uncovered a GitHub Personal Access Token, potentially leading
/// to …"), and quoted whole they read "looks like an Uncovered a GitHub …". A description that
/// does not shorten to a name gives "credential".
fn named(description: &'static str) -> &'static str {
    let mut t = description;
    for verb in [
        "Uncovered ",
        "Identified ",
        "Detected ",
        "Discovered ",
        "Found ",
    ] {
        if let Some(rest) = t.strip_prefix(verb) {
            t = rest;
            break;
        }
    }
    for lead in ["a pattern that resembles ", "a pattern resembling "] {
        if let Some(rest) = t.strip_prefix(lead) {
            t = rest;
        }
    }
    while let Some(rest) = ["a ", "an ", "possible ", "potential "]
        .iter()
        .find_map(|lead| t.strip_prefix(lead))
    {
        t = rest;
    }
    let cut = [
        ",",
        ". ",
        " which",
        " posing",
        " that ",
        " potentially",
        " risking",
        " leading",
        " could ",
        " exposing",
        " enabling",
        " allowing",
    ]
    .iter()
    .filter_map(|c| t.find(c))
    .min()
    .unwrap_or(t.len());
    let name = t[..cut].trim_end_matches('.');
    if name.contains(' ') && !name.contains(" is ") {
        name
    } else {
        "credential"
    }
}

/// Whether `value` is one the global allowlist passes or a known public value (a vendor's
/// sample key): what [`is_allowlisted`] passes before the providers' own allowlists, which
/// pass shapes (letters alone, say) that are no token of theirs but can be a password.
pub(super) fn is_known_value(value: &str, format: bool) -> bool {
    if global_allows(value, format) {
        return true;
    }
    // Long stopwords are known public values (a sample key in a vendor's docs), not words.
    let lower = value.to_ascii_lowercase();
    RULES
        .iter()
        .flat_map(|r| r.allow)
        .flat_map(|a| a.stopwords)
        .any(|w| w.len() >= 20 && lower.contains(w))
}

/// Whether a value found by another rule is one that gitleaks lists as a known non-secret:
/// its global allowlist, and the rules' allowlists of exact values (public sample keys).
pub(super) fn is_allowlisted(value: &str, format: bool) -> bool {
    if is_known_value(value, format) {
        return true;
    }
    RULES.iter().enumerate().any(|(i, rule)| {
        rule.allow.iter().enumerate().any(|(k, a)| {
            matches!(a.target, Target::Secret)
                && a.stopwords.is_empty()
                && !a.regexes.is_empty()
                && compiled(i)
                    .and_then(|c| c.allow.get(k))
                    .is_some_and(|res| allowed(a, res, value, value))
        })
    })
}

/// gitleaks' global allowlist: its patterns of templates and variables, and its stopwords (a
/// value holding the alphabet, `abcdefghijklmnopqrstuvwxyz`) except for a value in a token
/// format of its own (`format`, see [`super::is_example_value`]), which is a token however it
/// was typed.
fn global_allows(value: &str, format: bool) -> bool {
    if format {
        let no_stopwords = Allow {
            stopwords: &[],
            ..GLOBAL_ALLOW
        };
        allowed(&no_stopwords, &GLOBAL, value, value)
    } else {
        allowed(&GLOBAL_ALLOW, &GLOBAL, value, value)
    }
}

/// Widens a byte span to character boundaries.
fn char_span(text: &str, mut start: usize, mut end: usize) -> (usize, usize) {
    while start > 0 && !text.is_char_boundary(start) {
        start -= 1;
    }
    while end < text.len() && !text.is_char_boundary(end) {
        end += 1;
    }
    (start, end.min(text.len()))
}

fn line_of(text: &str, start: usize, end: usize) -> &str {
    let from = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let to = text[end..].find('\n').map_or(text.len(), |i| end + i);
    &text[from..to]
}

fn allowed(allow: &Allow, regexes: &[Option<Regex>], secret: &str, target: &str) -> bool {
    regexes
        .iter()
        .flatten()
        .any(|re| re.is_match(target.as_bytes()))
        || (!allow.stopwords.is_empty() && {
            let lower = secret.to_ascii_lowercase();
            allow.stopwords.iter().any(|w| lower.contains(w))
        })
}

/// Whether every rule's pattern and allowlist compiles (for the tests).
#[cfg(test)]
pub(super) fn uncompilable() -> Vec<String> {
    let mut bad = Vec::new();
    for rule in RULES {
        if let Err(e) = regex::bytes::RegexBuilder::new(rule.pattern)
            .size_limit(1 << 24)
            .build()
        {
            bad.push(format!("{}: {e}", rule.id));
        }
        for a in rule.allow.iter().chain(std::iter::once(&GLOBAL_ALLOW)) {
            for p in a.regexes {
                if let Err(e) = Regex::new(p) {
                    bad.push(format!("{} allowlist: {e}", rule.id));
                }
            }
        }
    }
    bad
}

#[cfg(test)]
mod named_tests {
    /// Every provider rule's description reads as a name after "looks like a": no leading
    /// verb, no sentence after it.
    #[test]
    fn every_description_names_a_credential() {
        for (_, description) in super::rules() {
            let name = super::named(description);
            assert!(
                !name.is_empty()
                    && name.len() <= 60
                    && !name.contains(',')
                    && !["Uncovered", "Identified", "Detected", "Discovered", "Found"]
                        .iter()
                        .any(|v| name.starts_with(v)),
                "{description} -> {name}"
            );
        }
        assert_eq!(
            super::named(
                "Uncovered a GitHub Personal Access Token, potentially leading to unauthorized \
                 repository access and sensitive content exposure."
            ),
            "GitHub Personal Access Token"
        );
    }
}
