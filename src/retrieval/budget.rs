//! Rendering chosen entries as a prompt prefix within a token budget.
//!
//! Tokens are estimated without a tokenizer, conservatively for the BPE tokenizers of current
//! models: each run of letters counts one token per 4 letters (rounded up), each run of digits
//! one per 2 digits (rounded up), every other non-space character one token, and whitespace
//! nothing. English prose comes out about 10 to 30 % above what a BPE tokenizer counts, and ids,
//! paths and numbers (where tokenizers split most) are counted high, so a prompt within the
//! estimate is within the budget.
//!
//! Entries are added in rank order while the whole output (header, entries and the line saying
//! how many were left out) fits; the first entry that does not fit ends the list, so truncation
//! always drops the lower-ranked entries. When not even the first entry fits, the line names the
//! budget it needs instead. The output never exceeds the budget: when not even the header and
//! that line fit, it is empty, and the caller is told the budget needed.

use super::rank::Rule;
use super::search::Hit;
use crate::safe_text::clip;

/// Default budget (requirement 8.2 of the retrieval-context document).
pub const DEFAULT_BUDGET: usize = 1200;

/// The estimated number of tokens of `text`.
pub fn estimate_tokens(text: &str) -> usize {
    #[derive(PartialEq, Clone, Copy)]
    enum Run {
        None,
        Letters,
        Digits,
    }
    let mut tokens = 0;
    let mut run = Run::None;
    let mut len = 0usize;
    let close = |run: Run, len: usize| match run {
        Run::None => 0,
        Run::Letters => len.div_ceil(4),
        Run::Digits => len.div_ceil(2),
    };
    for c in text.chars() {
        let kind = if c.is_alphabetic() {
            Run::Letters
        } else if c.is_numeric() {
            Run::Digits
        } else {
            Run::None
        };
        if kind != run {
            tokens += close(run, len);
            run = kind;
            len = 0;
        }
        match kind {
            Run::None if !c.is_whitespace() => tokens += 1,
            Run::None => {}
            _ => len += 1,
        }
    }
    tokens + close(run, len)
}

fn confidence_label(c: f64) -> &'static str {
    if c >= 0.8 {
        "high"
    } else if c >= 0.5 {
        "medium"
    } else {
        "low"
    }
}

fn date(ts: &str) -> &str {
    ts.get(..10).unwrap_or(ts)
}

/// One entry as prompt lines.
pub fn render_entry(n: usize, h: &Hit) -> String {
    let e = &h.entry;
    let f = &e.fields;
    let mut evidence: Vec<String> = Vec::new();
    for ev in f.evidence.iter().take(2) {
        evidence.push(format!("{} {}", ev.kind.as_str(), clip(&ev.uri, 80)));
    }
    if f.evidence.len() > 2 {
        evidence.push(format!("+{} more", f.evidence.len() - 2));
    }
    let mut notes = Vec::new();
    for r in &h.rules {
        notes.push(match r {
            Rule::ApproachingExpiry { valid_to_in_days } => {
                format!("expires in {valid_to_in_days:.1} days")
            }
            Rule::Expired { expired_days_ago } => {
                format!("expired {expired_days_ago:.1} days ago")
            }
            Rule::StaleEvidence => "evidence may be stale".into(),
            Rule::LowConfidence => "low confidence".into(),
            Rule::NotCurrent { status } => (*status).into(),
        });
    }
    if h.global {
        notes.push("global memory".into());
    }
    if let Some(of) = &h.disputed {
        notes.push(format!(
            "disputed: one of the competing outcomes of {of}, not yet resolved"
        ));
    }
    let mut text = format!(
        "{n}. [{}/{}] {}\n   confidence {:.2} ({}); evidence ({}): {}; by {}, {} {}; scope {}; subject {}; id {}",
        f.section.as_str(),
        f.kind.as_str(),
        clip(&f.summary, 300),
        f.confidence,
        confidence_label(f.confidence),
        f.evidence.len(),
        if evidence.is_empty() {
            "none".into()
        } else {
            evidence.join(", ")
        },
        clip(&e.created_by, 40),
        if e.updated_at == e.created_at {
            "recorded"
        } else {
            "updated"
        },
        date(&e.updated_at),
        clip(&f.scope, 60),
        clip(&f.subject, 80),
        e.id,
    );
    if let Some(to) = &f.valid_to {
        text.push_str(&format!("; valid until {}", date(to)));
    }
    // What the kind of memory needs besides its summary: a procedure its ordered steps, an
    // experience its outcome and where it happened (the date and agent are on the line above).
    if f.kind == projections::Kind::RunbookStep {
        text.push_str(&format!("\n   steps: {}", clip(&f.content, 400)));
    } else if f.kind == projections::Kind::Incident {
        // The project first: after the outcome's own text it read as part of it.
        text.push_str(&format!(
            "\n   project {}; outcome: {}",
            clip(&h.project, 64),
            clip(&f.content, 300)
        ));
    }
    if !notes.is_empty() {
        text.push_str(&format!("\n   note: {}", notes.join("; ")));
    }
    text.push('\n');
    text
}

/// What to say when a budget holds no entry at all, naming the budget that holds the first
/// (`needed`): "lower-ranked entries were left out" would be wrong when every one was.
pub fn too_small_for_any(budget: usize, needed: usize) -> String {
    format!(
        "the token budget of {budget} is too small for any entry: the first needs a budget of \
         {needed}"
    )
}

/// A prompt prefix rendered within a budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The prompt prefix (empty when not even the header fits).
    pub text: String,
    /// How many entries it holds.
    pub entries: usize,
    /// When there were entries but the budget is too small for any and the text could not say
    /// so (not even the header and that line fit): the budget the first entry needs, for the
    /// caller to say elsewhere.
    pub unsaid_need: Option<usize>,
}

/// The prompt prefix for `hits` (in rank order) within `budget` estimated tokens.
pub fn render(project: &str, hits: &[Hit], budget: usize) -> Rendered {
    let header = format!(
        "## Memory for project {}\nPrior knowledge recorded by agents, most confident first. Run `memlog show <id>` for an entry's full content.\n\n",
        clip(project, 64)
    );
    let omitted = |k: usize| {
        if k == 0 {
            String::new()
        } else {
            format!(
                "({k} lower-ranked {} left out to fit the token budget)\n",
                if k == 1 { "entry" } else { "entries" }
            )
        }
    };
    let header_cost = estimate_tokens(&header);
    let Some(first) = hits.first() else {
        let text = if header_cost <= budget {
            header
        } else {
            String::new()
        };
        return Rendered {
            text,
            entries: 0,
            unsaid_need: None,
        };
    };
    let mut out = header;
    let mut used = header_cost;
    let mut kept = 0;
    for (i, h) in hits.iter().enumerate() {
        let block = render_entry(i + 1, h);
        let cost = estimate_tokens(&block);
        let rest = hits.len() - i - 1;
        if used + cost + estimate_tokens(&omitted(rest)) > budget {
            break;
        }
        out.push_str(&block);
        used += cost;
        kept += 1;
    }
    if kept > 0 {
        out.push_str(&omitted(hits.len() - kept));
        return Rendered {
            text: out,
            entries: kept,
            unsaid_need: None,
        };
    }
    // No entry fits: "lower-ranked entries left out" would be wrong, and the budget that shows
    // the first entry is easy to name, in the prompt when it fits there, else to the caller.
    let needed = header_cost
        + estimate_tokens(&render_entry(1, first))
        + estimate_tokens(&omitted(hits.len() - 1));
    let too_small = format!("({})\n", too_small_for_any(budget, needed));
    if header_cost + estimate_tokens(&too_small) <= budget {
        out.push_str(&too_small);
        return Rendered {
            text: out,
            entries: 0,
            unsaid_need: None,
        };
    }
    Rendered {
        text: String::new(),
        entries: 0,
        unsaid_need: Some(needed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_counts_runs() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("word"), 1);
        assert_eq!(estimate_tokens("words"), 2);
        assert_eq!(estimate_tokens("2026-11-22"), 2 + 1 + 1 + 1 + 1);
        assert_eq!(estimate_tokens("a b"), 2);
    }
}

#[cfg(test)]
mod budget_props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The estimate is additive enough that a rendering within it never exceeds the budget.
        #[test]
        fn concatenation_never_costs_less(a in ".{0,80}", b in ".{0,80}") {
            let joined = a.clone() + &b;
            prop_assert!(estimate_tokens(&joined) <= estimate_tokens(&a) + estimate_tokens(&b));
        }
    }
}
