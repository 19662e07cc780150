//! The entry flags shared by `add`, `supersede` and `update`, and `--evidence` parsing.

use crate::policy::validate::{EntryInput, EvidenceInput, Invalid};

// Fields of a memory entry, as flags. (Not a doc comment: clap would take it for the help of
// the subcommands that flatten it.)
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EntryFlags {
    /// decisions | state | observations | learnings
    #[arg(long)]
    pub section: Option<String>,
    /// decision | requirement | invariant | incident | metric | hypothesis | runbook_step | other
    #[arg(long)]
    pub kind: Option<String>,
    /// Canonical entity key, e.g. auth-service.token-refresh
    #[arg(long)]
    pub subject: Option<String>,
    /// repo | org | customer | service:<name> | environment:<prod|staging>
    #[arg(long)]
    pub scope: Option<String>,
    /// One or two sentences, at most 300 characters
    #[arg(long)]
    pub summary: Option<String>,
    /// The full text, at most 2000 characters
    #[arg(long)]
    pub content: Option<String>,
    /// Confidence from 0.0 to 1.0
    #[arg(long, allow_negative_numbers = true, value_parser = super::numbers::fraction)]
    pub confidence: Option<f64>,
    /// Evidence as TYPE:URI:NOTE (repeatable), or a JSON object {"type","uri","note"}
    #[arg(long, value_name = "TYPE:URI:NOTE")]
    pub evidence: Vec<String>,
    /// A tag (repeatable)
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// When the entry becomes valid (ISO 8601)
    #[arg(long, value_name = "TIME")]
    pub valid_from: Option<String>,
    /// When the entry expires (ISO 8601)
    #[arg(long, value_name = "TIME")]
    pub valid_to: Option<String>,
    /// How often to review the entry: ISO 8601 duration (P30D) or 30d / 2w / 12h
    #[arg(long, value_name = "DURATION")]
    pub review_interval: Option<String>,
    /// Id of a related entry (repeatable, full ids)
    #[arg(long = "related", value_name = "ID")]
    pub related: Vec<String>,
    /// active (default) or draft
    #[arg(long)]
    pub status: Option<String>,
}

/// Splits `TYPE:URI[:NOTE]`. The note is the text after the last `:` when that text is not a
/// number (a line or port) and has no `/` (a path or URL); write notes with `/` or `:` through
/// the JSON form or `memlog apply`.
pub fn parse_evidence(raw: &str) -> Result<EvidenceInput, Invalid> {
    if raw.trim_start().starts_with('{') {
        let value: serde_json::Value = serde_json::from_str(raw).map_err(|e| {
            Invalid::one(
                "evidence",
                "format",
                format!("--evidence JSON is malformed: {e}"),
            )
        })?;
        let wrapped = serde_json::json!({ "evidence": [value] });
        let input = crate::policy::validate::entry_input_from_json(&wrapped, "")?;
        return Ok(input.evidence.and_then(|mut v| v.pop()).unwrap_or_default());
    }
    let Some((kind, rest)) = raw.split_once(':') else {
        return Err(Invalid::one(
            "evidence",
            "format",
            format!(
                "--evidence `{}` is not TYPE:URI:NOTE (e.g. code:src/auth.rs#L10:token refresh logic)",
                raw.escape_debug()
            ),
        ));
    };
    let (uri, note) = match rest.rsplit_once(':') {
        Some((uri, note))
            if !uri.is_empty()
                && !note.is_empty()
                && !note.contains('/')
                && !note.chars().all(|c| c.is_ascii_digit())
                && !uri.ends_with(':') =>
        {
            (uri, Some(note.trim().to_owned()))
        }
        _ => (rest, None),
    };
    Ok(EvidenceInput {
        kind: Some(kind.to_owned()),
        uri: Some(uri.to_owned()),
        note,
    })
}

impl EntryFlags {
    /// The flags as an entry input; only flags given are set.
    pub fn to_input(&self) -> Result<EntryInput, Invalid> {
        let mut problems = Vec::new();
        let mut unparsed = Vec::new();
        let mut evidence = Vec::new();
        for raw in &self.evidence {
            match parse_evidence(raw) {
                Ok(e) => evidence.push(e),
                Err(inv) => {
                    // The flag is scanned for secrets whole, below.
                    problems.extend(
                        inv.problems
                            .into_iter()
                            .filter(|p| p.constraint != "secret"),
                    );
                    unparsed.push(raw.as_str());
                }
            }
        }
        let nonempty = |v: &Vec<String>| (!v.is_empty()).then(|| v.clone());
        let input = EntryInput {
            section: self.section.clone(),
            kind: self.kind.clone(),
            subject: self.subject.clone(),
            scope: self.scope.clone(),
            summary: self.summary.clone(),
            content: self.content.clone(),
            tags: nonempty(&self.tags),
            confidence: self.confidence,
            evidence: (!evidence.is_empty()).then_some(evidence),
            status: self.status.clone(),
            valid_from: self.valid_from.clone().map(Some),
            valid_to: self.valid_to.clone().map(Some),
            review_interval: self.review_interval.clone().map(Some),
            related_entries: nonempty(&self.related),
        };
        if problems.is_empty() {
            Ok(input)
        } else {
            Err(crate::policy::validate::refuse_before_checks(
                problems, &input, &unparsed,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(raw: &str) -> (Option<String>, Option<String>, Option<String>) {
        let e = parse_evidence(raw).unwrap_or_default();
        (e.kind, e.uri, e.note)
    }

    #[test]
    fn evidence_flag_forms() {
        assert_eq!(
            split("code:src/main.rs#L10:entry point"),
            (
                Some("code".into()),
                Some("src/main.rs#L10".into()),
                Some("entry point".into())
            )
        );
        assert_eq!(
            split("code:src/main.rs:42"),
            (Some("code".into()), Some("src/main.rs:42".into()), None)
        );
        assert_eq!(
            split("ticket:https://github.com/o/r/issues/12"),
            (
                Some("ticket".into()),
                Some("https://github.com/o/r/issues/12".into()),
                None
            )
        );
        assert_eq!(
            split("ticket:https://github.com/o/r/issues/12:tracking issue"),
            (
                Some("ticket".into()),
                Some("https://github.com/o/r/issues/12".into()),
                Some("tracking issue".into())
            )
        );
        assert_eq!(
            split(r#"{"type":"doc","uri":"docs/adr/1.md","note":"see: a/b"}"#),
            (
                Some("doc".into()),
                Some("docs/adr/1.md".into()),
                Some("see: a/b".into())
            )
        );
        assert!(parse_evidence("nocolon").is_err());
    }
}
