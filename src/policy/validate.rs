//! Schema checks on what authors submit: required fields, closed vocabularies, lengths, ranges
//! and formats. Every problem names the field, the rule and the fix.

use crate::clock::normalize_time;
use crate::policy::Detection;
use projections::{EntryFields, Evidence, EvidenceType, Kind, Section, Status};
use serde::Serialize;
use serde_json::{Map, Value};

pub const MAX_SUMMARY_CHARS: usize = 300;
pub const MAX_CONTENT_CHARS: usize = 2000;
pub const MAX_SUBJECT_CHARS: usize = 200;
/// The longest scope: `service:` and a name of [`MAX_SERVICE_NAME_CHARS`] characters.
pub const MAX_SCOPE_CHARS: usize = "service:".len() + MAX_SERVICE_NAME_CHARS;
pub const MAX_SERVICE_NAME_CHARS: usize = 100;
pub const MAX_TAGS: usize = 32;
pub const MAX_TAG_CHARS: usize = 64;
pub const MAX_EVIDENCE: usize = 20;
pub const MAX_URI_CHARS: usize = 2048;
pub const MAX_NOTE_CHARS: usize = 500;
pub const MAX_RELATED: usize = 50;
pub const MAX_REASON_CHARS: usize = 500;

/// One thing wrong with a submission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The field, e.g. `summary` or `evidence[1].uri`.
    pub field: String,
    /// The rule: `required`, `type`, `enum`, `max_length`, `range`, `pattern`, `format`, `order`, `unknown_field`, `policy`.
    pub constraint: &'static str,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// A rejected submission: one or more problems.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{}", self.describe())]
pub struct Invalid {
    pub problems: Vec<Problem>,
    /// The secrets found in the submission, field and rule (never the value), for the security
    /// log: a write refused for any reason logs every one of them (see
    /// [`crate::log::writer::refused`]). No part of any output.
    #[serde(skip)]
    pub detections: Vec<Detection>,
}

impl Invalid {
    fn describe(&self) -> String {
        let parts: Vec<String> = self
            .problems
            .iter()
            .map(|p| format!("{}: {}", p.field, p.message))
            .collect();
        format!("invalid memory entry: {}", parts.join("; "))
    }

    /// One problem.
    pub fn one(
        field: impl Into<String>,
        constraint: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self {
            problems: vec![Problem {
                field: redact_secrets(&field.into()),
                constraint,
                message: redact_secrets(&message.into()),
            }],
            detections: Vec::new(),
        }
    }

    /// This refusal, with the secrets found in `text` (what was submitted as `field`, a value
    /// or a field's name, which the refusal echoes redacted) added as a problem and kept as
    /// detections: the refusal logs them, as any refused write logs the secrets in it.
    #[must_use]
    pub fn with_secrets_of(mut self, field: &str, text: &str) -> Self {
        let mut c = Checker::default();
        c.secrets(field, text, false);
        self.problems.extend(c.problems);
        self.detections.extend(c.detections);
        self
    }
}

/// Messages quote what was submitted (`kind` is `…`), and field paths name the keys submitted
/// (`entry.<key>`); a credential pasted into the wrong place must still never be echoed, so
/// anything the secret detector flags is replaced.
pub fn redact_secrets(message: &str) -> String {
    let findings = crate::policy::secret_scan::scan_text(message);
    if findings.is_empty() {
        return message.to_owned();
    }
    let mut out = String::with_capacity(message.len());
    let mut last = 0;
    for f in findings {
        out.push_str(&message[last..f.start]);
        out.push_str("[redacted]");
        last = f.end;
    }
    out.push_str(&message[last..]);
    out
}

/// [`redact_secrets`] on every string of `v` (an error's details, a logged query's filters).
pub fn redact_secrets_in(v: &mut Value) {
    match v {
        Value::String(s) => *s = redact_secrets(s),
        Value::Array(items) => items.iter_mut().for_each(redact_secrets_in),
        Value::Object(map) => {
            map.values_mut().for_each(redact_secrets_in);
            // A key can hold one too (`{"ghp_…": "x"}`): the object is made again only then.
            if map.keys().any(|k| redact_secrets(k) != *k) {
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(k, v)| (redact_secrets(&k), v))
                    .collect();
            }
        }
        _ => {}
    }
}

#[derive(Default)]
struct Checker {
    problems: Vec<Problem>,
    /// Problems past [`MAX_PROBLEMS`], counted, not kept.
    left_out: usize,
    /// Every secret found, also past [`MAX_PROBLEMS`]: each is logged.
    detections: Vec<Detection>,
}

/// Problems listed for one input; past them one more problem says how many were left out, so
/// that hostile input of any size gets an answer of a few lines.
const MAX_PROBLEMS: usize = 20;
/// Characters of one problem's message; an echoed value past them is cut.
const MAX_MESSAGE_CHARS: usize = 400;

impl Checker {
    /// The problems found, with the secrets found.
    fn into_invalid(self) -> Invalid {
        Invalid {
            problems: self.problems,
            detections: self.detections,
        }
    }

    /// `ok`, or the problems found.
    fn into_result<T>(self, ok: T) -> Result<T, Invalid> {
        if self.problems.is_empty() {
            Ok(ok)
        } else {
            Err(self.into_invalid())
        }
    }

    /// The secrets in `text`, the value of `field` (an evidence URI when `uri`): one problem
    /// (the first finding) and one detection per finding.
    fn secrets(&mut self, field: &str, text: &str, uri: bool) {
        let findings = if uri {
            crate::policy::secret_scan::scan_uri(text)
        } else {
            crate::policy::secret_scan::scan_text(text)
        };
        let Some(f) = findings.first() else { return };
        self.push(
            field,
            "secret",
            format!(
                "looks like {} {} (rule {}); credentials must never be stored in memory: \
                 remove it and refer to where it is kept instead",
                crate::policy::article(f.description),
                f.description,
                f.rule
            ),
        );
        // The field's path may hold the secret itself (an unknown field's name).
        let field = redact_secrets(field);
        self.detections.extend(findings.iter().map(|f| Detection {
            field: field.clone(),
            rule: f.rule,
        }));
    }

    fn push(
        &mut self,
        field: impl Into<String>,
        constraint: &'static str,
        message: impl Into<String>,
    ) {
        if self.problems.len() > MAX_PROBLEMS {
            if let Some(last) = self.problems.last_mut() {
                self.left_out += 1;
                last.message = format!(
                    "{} more problems not listed; fix the ones above first",
                    self.left_out
                );
            }
            return;
        }
        // Redacted before they are cut: a cut secret is no longer recognised.
        let field: String = redact_secrets(&field.into());
        let mut message = redact_secrets(&message.into());
        if message.chars().count() > MAX_MESSAGE_CHARS {
            message = message.chars().take(MAX_MESSAGE_CHARS).collect::<String>() + "…";
        }
        let field = if field.chars().count() > MAX_MESSAGE_CHARS / 4 {
            field
                .chars()
                .take(MAX_MESSAGE_CHARS / 4)
                .collect::<String>()
                + "…"
        } else {
            field
        };
        if self.problems.len() == MAX_PROBLEMS {
            self.left_out = 1;
            self.problems.push(Problem {
                field: "input".into(),
                constraint: "too_many_problems",
                message: "1 more problem not listed; fix the ones above first".into(),
            });
            return;
        }
        self.problems.push(Problem {
            field,
            constraint,
            message,
        });
    }

    fn text(&mut self, field: &str, value: &str, max: usize, required: bool) {
        let n = value.chars().count();
        if required && value.trim().is_empty() {
            self.push(field, "required", format!("`{field}` must not be empty"));
        }
        if n > max {
            self.push(
                field,
                "max_length",
                format!("`{field}` has {n} characters; the limit is {max}: shorten it"),
            );
        }
    }

    fn no_control(&mut self, field: &str, value: &str, allow_newlines: bool) {
        let mut bad = value
            .chars()
            .filter(|&c| c.is_control() && !(allow_newlines && matches!(c, '\n' | '\t' | '\r')));
        let Some(first) = bad.next() else { return };
        // A line break is the common case (text pasted from a chat or a file): say so.
        let line_breaks_only =
            matches!(first, '\n' | '\r') && bad.all(|c| matches!(c, '\n' | '\r'));
        let message = match (line_breaks_only, field) {
            (true, "summary") => "`summary` contains a line break; it must be one line: join the lines, or move the rest to `content`".to_owned(),
            (true, _) => format!("`{field}` contains a line break; it must be one line: join the lines"),
            (false, _) => format!("`{field}` contains control characters: remove them"),
        };
        self.push(field, "format", message);
    }

    /// Refuses text that hides or reorders itself. In every field, the characters shown as
    /// spaces ([`crate::safe_text::is_unsafe`]): bidirectional overrides, isolates and marks,
    /// zero-width spaces, the byte order mark. In a `name` (a subject, a tag, an evidence URI),
    /// every invisible character ([`crate::safe_text::is_invisible`]), the zero-width joiners
    /// that prose keeps for emoji and scripts included. Control characters are
    /// [`Checker::no_control`]'s.
    fn no_hidden(&mut self, field: &str, value: &str, name: bool) {
        use crate::safe_text::{describe_invisible, is_invisible, is_unsafe};
        let hidden = |c: char| !c.is_control() && if name { is_invisible(c) } else { is_unsafe(c) };
        // Every character, once, in the order met: all of them are to be removed.
        let mut found: Vec<char> = Vec::new();
        for c in value.chars().filter(|&c| hidden(c)) {
            if !found.contains(&c) {
                found.push(c);
            }
        }
        for c in found {
            self.push(
                field,
                "format",
                format!(
                    "`{field}` contains U+{:04X}, {}: remove it{}",
                    u32::from(c),
                    describe_invisible(c),
                    if name {
                        " (a subject, tag or evidence URI holds only visible characters)"
                    } else {
                        ""
                    }
                ),
            );
        }
    }
}

/// True when `scope` is `repo`, `org`, `customer`, `service:<name>` or `environment:<prod|staging>`.
pub fn is_valid_scope(scope: &str) -> bool {
    match scope.split_once(':') {
        None => matches!(scope, "repo" | "org" | "customer"),
        Some(("service", name)) => {
            !name.is_empty()
                && name.len() <= MAX_SERVICE_NAME_CHARS
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        }
        Some(("environment", env)) => matches!(env, "prod" | "staging"),
        Some(_) => false,
    }
}

/// Why `scope` is not valid (see [`is_valid_scope`]): the constraint broken and a message that
/// names it and the fix; `None` for a valid scope.
fn scope_problem(scope: &str) -> Option<(&'static str, String)> {
    if is_valid_scope(scope) {
        return None;
    }
    if let Some(("service", name)) = scope.split_once(':')
        && !name.is_empty()
    {
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if let Some(c) = name.chars().find(|c| !allowed(*c)) {
            return Some((
                "pattern",
                format!(
                    "`scope` names a service with `{}` in it; a service name holds only \
                     letters, digits, `-`, `_` and `.`",
                    c.escape_debug()
                ),
            ));
        }
        return Some((
            "max_length",
            format!(
                "`scope` names a service of {} characters; a service name has at most \
                 {MAX_SERVICE_NAME_CHARS}",
                name.chars().count()
            ),
        ));
    }
    Some((
        "pattern",
        format!(
            "`scope` is `{}`; use repo, org, customer, service:<name> or environment:<prod|staging>",
            scope.escape_debug()
        ),
    ))
}

/// True for an ISO 8601 duration such as `P30D`, `P2W`, `PT12H`, `P1M`, or the short forms
/// `30d`, `2w`, `12h`.
pub fn is_valid_interval(s: &str) -> bool {
    // The unit first: only then is the byte before it a character boundary.
    let short = |s: &str| {
        s.len() >= 2
            && matches!(s.as_bytes().last(), Some(b'd' | b'w' | b'h'))
            && s[..s.len() - 1].bytes().all(|b| b.is_ascii_digit())
    };
    let iso = |s: &str| {
        let Some(rest) = s.strip_prefix('P') else {
            return false;
        };
        let (date, time) = rest.split_once('T').unwrap_or((rest, ""));
        let parts_ok = |part: &str, units: &str| {
            let mut digits = 0;
            for c in part.chars() {
                if c.is_ascii_digit() {
                    digits += 1;
                } else if units.contains(c) && digits > 0 {
                    digits = 0;
                } else {
                    return false;
                }
            }
            digits == 0
        };
        !(date.is_empty() && time.is_empty())
            && parts_ok(date, "YMWD")
            && parts_ok(time, "HMS")
            && (!s.contains('T') || !time.is_empty())
    };
    short(s) || iso(s)
}

/// An entry as submitted: every field optional, checked by [`check_create`] or [`check_patch`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EntryInput {
    pub section: Option<String>,
    pub kind: Option<String>,
    pub subject: Option<String>,
    pub scope: Option<String>,
    pub summary: Option<String>,
    pub content: Option<String>,
    pub tags: Option<Vec<String>>,
    pub confidence: Option<f64>,
    pub evidence: Option<Vec<EvidenceInput>>,
    pub status: Option<String>,
    pub valid_from: Option<Option<String>>,
    pub valid_to: Option<Option<String>>,
    pub review_interval: Option<Option<String>>,
    pub related_entries: Option<Vec<String>>,
}

/// Evidence as submitted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvidenceInput {
    pub kind: Option<String>,
    pub uri: Option<String>,
    pub note: Option<String>,
}

const ENTRY_KEYS: &[&str] = &[
    "section",
    "kind",
    "subject",
    "scope",
    "summary",
    "content",
    "tags",
    "confidence",
    "evidence",
    "status",
    "valid_from",
    "valid_to",
    "review_interval",
    "related_entries",
];

/// Keys of a Memory_Entry that are bookkeeping: accepted in input (so an exported entry can be
/// fed back) but never taken from it.
const IGNORED_KEYS: &[&str] = &[
    "id",
    "superseded_by",
    "created_by",
    "created_at",
    "updated_at",
];

/// Reads an `entry` object of a Memory_Update, checking JSON types field by field.
///
/// # Errors
/// [`Invalid`] naming every field of the wrong type and every unknown field.
pub fn entry_input_from_json(value: &Value, field_prefix: &str) -> Result<EntryInput, Invalid> {
    let mut c = Checker::default();
    let name = |k: &str| format!("{field_prefix}{k}");
    let Value::Object(map) = value else {
        return Err(Invalid::one(
            field_prefix.trim_end_matches('.'),
            "type",
            "must be a JSON object",
        ));
    };
    let mut input = EntryInput::default();
    for (key, v) in map {
        let field = name(key);
        let string = |c: &mut Checker| match v {
            Value::String(s) => Some(s.clone()),
            _ => {
                c.push(&field, "type", format!("`{field}` must be a string"));
                None
            }
        };
        let nullable = |c: &mut Checker| match v {
            Value::Null => Some(None),
            Value::String(s) => Some(Some(s.clone())),
            _ => {
                c.push(
                    &field,
                    "type",
                    format!("`{field}` must be a string or null"),
                );
                None
            }
        };
        let strings = |c: &mut Checker| match v {
            Value::Array(items) if items.iter().all(Value::is_string) => Some(
                items
                    .iter()
                    .filter_map(|i| i.as_str().map(str::to_owned))
                    .collect(),
            ),
            _ => {
                c.push(
                    &field,
                    "type",
                    format!("`{field}` must be an array of strings"),
                );
                None
            }
        };
        match key.as_str() {
            "section" => input.section = string(&mut c),
            "kind" => input.kind = string(&mut c),
            "subject" => input.subject = string(&mut c),
            "scope" => input.scope = string(&mut c),
            "summary" => input.summary = string(&mut c),
            "content" => input.content = string(&mut c),
            "status" => input.status = string(&mut c),
            "tags" => input.tags = strings(&mut c),
            "related_entries" => input.related_entries = strings(&mut c),
            "valid_from" => input.valid_from = nullable(&mut c),
            "valid_to" => input.valid_to = nullable(&mut c),
            "review_interval" => input.review_interval = nullable(&mut c),
            "confidence" => match v.as_f64() {
                Some(f) => input.confidence = Some(f),
                None => c.push(
                    &field,
                    "type",
                    format!("`{field}` must be a number from 0.0 to 1.0"),
                ),
            },
            "evidence" => input.evidence = evidence_from_json(v, &field, &mut c),
            k if IGNORED_KEYS.contains(&k) => {}
            _ => {
                c.push(
                    &field,
                    "unknown_field",
                    format!(
                        "unknown field `{key}`; known fields: {}",
                        ENTRY_KEYS.join(", ")
                    ),
                );
                // Refused, the name is still echoed (redacted) and must be logged as any
                // secret in a refused write is.
                c.secrets(&field, key, false);
            }
        }
    }
    if !c.problems.is_empty() {
        // The fields that were read are scanned all the same: a secret is reported, and
        // logged, whatever else is wrong.
        secret_problems(&mut c, &input);
    }
    c.into_result(input)
}

fn evidence_from_json(v: &Value, field: &str, c: &mut Checker) -> Option<Vec<EvidenceInput>> {
    let Value::Array(items) = v else {
        c.push(
            field,
            "type",
            format!("`{field}` must be an array of {{type, uri, note}} objects"),
        );
        return None;
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let f = format!("{field}[{i}]");
        let Value::Object(map) = item else {
            c.push(
                &f,
                "type",
                format!("`{f}` must be an object with type, uri and note"),
            );
            continue;
        };
        let mut e = EvidenceInput::default();
        for (k, v) in map {
            let slot = match k.as_str() {
                "type" => &mut e.kind,
                "uri" => &mut e.uri,
                "note" => &mut e.note,
                _ => {
                    c.push(
                        format!("{f}.{k}"),
                        "unknown_field",
                        format!("unknown evidence field `{k}`; use type, uri and note"),
                    );
                    c.secrets(&format!("{f}.{k}"), k, false);
                    continue;
                }
            };
            match v {
                Value::String(s) => *slot = Some(s.clone()),
                _ => c.push(
                    format!("{f}.{k}"),
                    "type",
                    format!("`{f}.{k}` must be a string"),
                ),
            }
        }
        out.push(e);
    }
    Some(out)
}

fn check_evidence(c: &mut Checker, items: &[EvidenceInput]) -> Vec<Evidence> {
    if items.len() > MAX_EVIDENCE {
        c.push(
            "evidence",
            "max_length",
            format!("at most {MAX_EVIDENCE} evidence objects"),
        );
    }
    let mut out = Vec::new();
    for (i, e) in items.iter().enumerate() {
        let f = format!("evidence[{i}]");
        let kind = match e.kind.as_deref() {
            None => {
                c.push(
                    format!("{f}.type"),
                    "required",
                    format!("`{f}.type` is required ({})", EvidenceType::choices()),
                );
                None
            }
            Some(k) => {
                let parsed = EvidenceType::parse(k);
                if parsed.is_none() {
                    c.push(
                        format!("{f}.type"),
                        "enum",
                        format!(
                            "`{f}.type` is `{}`; use one of {}",
                            k.escape_debug(),
                            EvidenceType::choices()
                        ),
                    );
                    c.secrets(&format!("{f}.type"), k, false);
                }
                parsed
            }
        };
        // An assumption is stated, not located: it needs no URI.
        let assumption = kind == Some(EvidenceType::Assumption);
        for (name, value, max) in [
            ("uri", &e.uri, MAX_URI_CHARS),
            ("note", &e.note, MAX_NOTE_CHARS),
        ] {
            let field = format!("{f}.{name}");
            let required = !(assumption && name == "uri");
            match value {
                None if required => c.push(&field, "required", format!("`{field}` is required")),
                None => {}
                Some(v) => {
                    c.text(&field, v, max, required);
                    c.no_control(&field, v, false);
                    c.no_hidden(&field, v, name == "uri");
                }
            }
        }
        let uri = if assumption {
            Some(e.uri.clone().unwrap_or_default())
        } else {
            e.uri.clone()
        };
        if let (Some(kind), Some(uri), Some(note)) = (kind, &uri, &e.note) {
            out.push(Evidence {
                kind,
                uri: uri.clone(),
                note: note.clone(),
            });
        }
    }
    out
}

fn check_time(c: &mut Checker, field: &str, value: Option<&String>) -> Option<String> {
    let v = value?;
    match normalize_time(v) {
        Ok(t) => Some(t),
        Err(m) => {
            c.push(field, "format", m);
            None
        }
    }
}

fn check_common(c: &mut Checker, input: &EntryInput) {
    if let Some(s) = &input.subject {
        c.text("subject", s, MAX_SUBJECT_CHARS, true);
        c.no_control("subject", s, false);
        c.no_hidden("subject", s, true);
    }
    if let Some(s) = &input.summary {
        c.text("summary", s, MAX_SUMMARY_CHARS, true);
        c.no_control("summary", s, false);
        c.no_hidden("summary", s, false);
    }
    if let Some(s) = &input.content {
        c.text("content", s, MAX_CONTENT_CHARS, true);
        c.no_control("content", s, true);
        c.no_hidden("content", s, false);
    }
    if let Some(s) = &input.scope
        && let Some((constraint, message)) = scope_problem(s)
    {
        c.push("scope", constraint, message);
    }
    if let Some(tags) = &input.tags {
        if tags.len() > MAX_TAGS {
            c.push("tags", "max_length", format!("at most {MAX_TAGS} tags"));
        }
        for (i, t) in tags.iter().enumerate() {
            let f = format!("tags[{i}]");
            c.text(&f, t, MAX_TAG_CHARS, true);
            c.no_control(&f, t, false);
            c.no_hidden(&f, t, true);
        }
    }
    if let Some(conf) = input.confidence
        && !(conf.is_finite() && (0.0..=1.0).contains(&conf))
    {
        c.push(
            "confidence",
            "range",
            format!("`confidence` is {conf}; use a number from 0.0 to 1.0"),
        );
    }
    if let Some(related) = &input.related_entries {
        if related.len() > MAX_RELATED {
            c.push(
                "related_entries",
                "max_length",
                format!("at most {MAX_RELATED} related entries"),
            );
        }
        for (i, r) in related.iter().enumerate() {
            if !projections::event::is_entry_id(r) {
                c.push(
                    format!("related_entries[{i}]"),
                    "format",
                    format!(
                        "`{}` is not a full entry id like m-9avyae89jr0fnr67sw0cgkjmcg",
                        r.escape_debug()
                    ),
                );
            } else if let Some(first) = related[..i].iter().position(|o| o == r) {
                c.push(
                    format!("related_entries[{i}]"),
                    "duplicate",
                    format!("`{r}` is already related_entries[{first}]; name each entry once"),
                );
            }
        }
    }
    if let Some(Some(r)) = &input.review_interval
        && !is_valid_interval(r)
    {
        c.push("review_interval", "format", format!(
            "`review_interval` is `{}`; use an ISO 8601 duration such as P30D or PT12H, or 30d / 2w / 12h",
            r.escape_debug()
        ));
        // Refused as no duration, the value is still echoed (redacted) and must be logged as
        // any secret in a refused write is.
        c.secrets("review_interval", r, false);
    }
}

fn parse_enum<T>(
    c: &mut Checker,
    field: &str,
    value: Option<&String>,
    parse: fn(&str) -> Option<T>,
    choices: String,
) -> Option<T> {
    match value {
        None => {
            c.push(
                field,
                "required",
                format!("`{field}` is required ({choices})"),
            );
            None
        }
        Some(v) => {
            let parsed = parse(v);
            if parsed.is_none() {
                c.push(
                    field,
                    "enum",
                    format!("`{field}` is `{}`; use one of {choices}", v.escape_debug()),
                );
                // Refused, the value is still echoed (redacted) and must be logged as any
                // secret in a refused write is.
                c.secrets(field, v, false);
            }
            parsed
        }
    }
}

/// Checks a new entry and returns its fields and initial status.
///
/// # Errors
/// [`Invalid`] with every problem found.
pub fn check_create(input: &EntryInput) -> Result<(EntryFields, Status), Invalid> {
    let mut c = Checker::default();
    let section = parse_enum(
        &mut c,
        "section",
        input.section.as_ref(),
        Section::parse,
        Section::choices(),
    );
    let kind = parse_enum(
        &mut c,
        "kind",
        input.kind.as_ref(),
        Kind::parse,
        Kind::choices(),
    );
    let status = match input.status.as_deref() {
        None | Some("active") => Some(Status::Active),
        Some("draft") => Some(Status::Draft),
        Some(s) => {
            c.push(
                "status",
                "enum",
                format!(
                    "a new entry's `status` is `{}`; use active or draft",
                    s.escape_debug()
                ),
            );
            None
        }
    };
    for (field, v) in [
        ("subject", &input.subject),
        ("scope", &input.scope),
        ("summary", &input.summary),
        ("content", &input.content),
    ] {
        if v.is_none() {
            c.push(field, "required", format!("`{field}` is required"));
        }
    }
    if input.confidence.is_none() {
        c.push(
            "confidence",
            "required",
            "`confidence` is required (a number from 0.0 to 1.0)",
        );
    }
    check_common(&mut c, input);
    let evidence = check_evidence(&mut c, input.evidence.as_deref().unwrap_or_default());
    if status == Some(Status::Active) && input.evidence.as_ref().is_none_or(Vec::is_empty) {
        c.push("evidence", "required", "an active entry needs at least one evidence object {type, uri, note}; add --evidence TYPE:URI:NOTE, or create it with status draft");
    }
    let valid_from = check_time(
        &mut c,
        "valid_from",
        input.valid_from.as_ref().and_then(Option::as_ref),
    );
    let valid_to = check_time(
        &mut c,
        "valid_to",
        input.valid_to.as_ref().and_then(Option::as_ref),
    );
    if section == Some(Section::State)
        && (valid_from.is_none() || valid_to.is_none())
        && c.problems.iter().all(|p| !p.field.starts_with("valid_"))
    {
        c.push(
            "valid_to",
            "required",
            "entries in section `state` need both valid_from and valid_to",
        );
    }
    if let (Some(f), Some(t)) = (&valid_from, &valid_to)
        && f > t
    {
        c.push(
            "valid_to",
            "order",
            format!("`valid_to` ({t}) is before `valid_from` ({f})"),
        );
    }
    if !c.problems.is_empty() {
        // The write policy cannot run on an entry that does not parse, but its most important
        // check, secrets, needs only text: report those problems too, all at once.
        secret_problems(&mut c, input);
        return Err(c.into_invalid());
    }
    let (Some(section), Some(kind), Some(status)) = (section, kind, status) else {
        return Err(Invalid::one("entry", "required", "incomplete entry"));
    };
    Ok((
        EntryFields {
            section,
            kind,
            subject: input.subject.clone().unwrap_or_default(),
            scope: input.scope.clone().unwrap_or_default(),
            summary: input.summary.clone().unwrap_or_default(),
            content: input.content.clone().unwrap_or_default(),
            tags: input.tags.clone().unwrap_or_default(),
            confidence: input.confidence.map_or(0.0, positive_zero),
            evidence,
            related_entries: input.related_entries.clone().unwrap_or_default(),
            valid_from,
            valid_to,
            review_interval: input.review_interval.clone().flatten(),
        },
        status,
    ))
}

/// The secrets in every text of `input`, as the write policy finds them in an entry's fields
/// ([`crate::policy::Policy::check_entry`]), for input that did not pass the schema checks.
fn secret_problems(c: &mut Checker, input: &EntryInput) {
    for (name, value) in [
        ("subject", &input.subject),
        ("scope", &input.scope),
        ("summary", &input.summary),
        ("content", &input.content),
    ] {
        if let Some(v) = value {
            c.secrets(name, v, false);
        }
    }
    for (i, tag) in input.tags.iter().flatten().enumerate() {
        c.secrets(&format!("tags[{i}]"), tag, false);
    }
    for (i, e) in input.evidence.iter().flatten().enumerate() {
        if let Some(uri) = &e.uri {
            c.secrets(&format!("evidence[{i}].uri"), uri, true);
        }
        if let Some(note) = &e.note {
            c.secrets(&format!("evidence[{i}].note"), note, false);
        }
    }
}

/// `problems` found before [`check_create`] or [`check_patch`] could run (an `--evidence` flag
/// that does not parse), with the secrets in the rest of `input` and in the `unparsed` evidence:
/// they are reported, and logged, whatever else is wrong.
pub fn refuse_before_checks(
    problems: Vec<Problem>,
    input: &EntryInput,
    unparsed: &[&str],
) -> Invalid {
    let mut c = Checker {
        problems,
        ..Checker::default()
    };
    secret_problems(&mut c, input);
    for raw in unparsed {
        c.secrets("evidence", raw, false);
    }
    c.into_invalid()
}

/// Checks a change to an existing entry and returns the `set` map of an update event, given the
/// entry's current fields (to check the result as a whole, e.g. `valid_from` ≤ `valid_to`).
///
/// # Errors
/// [`Invalid`] with every problem found, or when nothing would change.
/// `-0.0` as `0.0`: the log's canonical form writes both as `0`, so the entry a write projects
/// must hold what a replay of its line gives (`-0.0` showed as `-0.00` in the writer's store
/// and `0.00` in every rebuilt one).
fn positive_zero(x: f64) -> f64 {
    if x == 0.0 { 0.0 } else { x }
}

pub fn check_patch(
    input: &EntryInput,
    current: &EntryFields,
) -> Result<Map<String, Value>, Invalid> {
    let mut c = Checker::default();
    let mut set = Map::new();
    check_common(&mut c, input);
    let mut put = |k: &str, v: Value| {
        set.insert(k.to_owned(), v);
    };
    if let Some(s) = &input.section {
        if let Some(v) = Section::parse(s) {
            put("section", Value::from(v.as_str()))
        } else {
            c.push(
                "section",
                "enum",
                format!("use one of {}", Section::choices()),
            );
        }
    }
    if let Some(s) = &input.kind {
        if let Some(v) = Kind::parse(s) {
            put("kind", Value::from(v.as_str()))
        } else {
            c.push("kind", "enum", format!("use one of {}", Kind::choices()));
        }
    }
    if let Some(s) = &input.status {
        match s.as_str() {
            "active" | "draft" => put("status", Value::from(s.as_str())),
            _ => c.push("status", "enum", "an update may set status to active or draft; use supersede or deprecate for the others"),
        }
    }
    for (k, v) in [
        ("subject", &input.subject),
        ("scope", &input.scope),
        ("summary", &input.summary),
        ("content", &input.content),
    ] {
        if let Some(v) = v {
            put(k, Value::from(v.as_str()));
        }
    }
    if let Some(t) = &input.tags {
        put("tags", Value::from(t.clone()));
    }
    if let Some(r) = &input.related_entries {
        put("related_entries", Value::from(r.clone()));
    }
    if let Some(conf) = input.confidence {
        put(
            "confidence",
            serde_json::Number::from_f64(positive_zero(conf)).map_or(Value::Null, Value::Number),
        );
    }
    if let Some(items) = &input.evidence {
        let ev = check_evidence(&mut c, items);
        put("evidence", serde_json::to_value(ev).unwrap_or(Value::Null));
    }
    let mut valid_from = current.valid_from.clone();
    let mut valid_to = current.valid_to.clone();
    for (field, value, slot) in [
        ("valid_from", &input.valid_from, &mut valid_from),
        ("valid_to", &input.valid_to, &mut valid_to),
    ] {
        match value {
            Some(Some(v)) => {
                if let Some(t) = check_time(&mut c, field, Some(v)) {
                    put(field, Value::from(t.as_str()));
                    *slot = Some(t);
                }
            }
            Some(None) => {
                put(field, Value::Null);
                *slot = None;
            }
            None => {}
        }
    }
    if let Some(r) = &input.review_interval {
        put(
            "review_interval",
            r.as_deref().map_or(Value::Null, Value::from),
        );
    }
    if let (Some(f), Some(t)) = (&valid_from, &valid_to)
        && f > t
    {
        c.push(
            "valid_to",
            "order",
            format!("`valid_to` ({t}) would be before `valid_from` ({f})"),
        );
    }
    let section = input
        .section
        .as_deref()
        .and_then(Section::parse)
        .unwrap_or(current.section);
    if section == Section::State && (valid_from.is_none() || valid_to.is_none()) {
        c.push(
            "valid_to",
            "required",
            "entries in section `state` need both valid_from and valid_to",
        );
    }
    if !c.problems.is_empty() {
        secret_problems(&mut c, input);
        return Err(c.into_invalid());
    }
    if set.is_empty() {
        return Err(Invalid::one(
            "entry",
            "required",
            "nothing to change: give at least one field (e.g. --valid-to, --summary)",
        ));
    }
    Ok(set)
}

impl EntryInput {
    /// The fields of an entry (and its status, when given) as if submitted: what an
    /// `import` or `merge-project` checks again, as `add` and `update` check what they get.
    pub fn of(fields: &EntryFields, status: Option<Status>) -> Self {
        Self {
            section: Some(fields.section.as_str().to_owned()),
            kind: Some(fields.kind.as_str().to_owned()),
            subject: Some(fields.subject.clone()),
            scope: Some(fields.scope.clone()),
            summary: Some(fields.summary.clone()),
            content: Some(fields.content.clone()),
            tags: Some(fields.tags.clone()),
            confidence: Some(fields.confidence),
            evidence: Some(
                fields
                    .evidence
                    .iter()
                    .map(|e| EvidenceInput {
                        kind: Some(e.kind.as_str().to_owned()),
                        uri: Some(e.uri.clone()),
                        note: Some(e.note.clone()),
                    })
                    .collect(),
            ),
            status: status.map(|s| s.as_str().to_owned()),
            valid_from: Some(fields.valid_from.clone()),
            valid_to: Some(fields.valid_to.clone()),
            review_interval: Some(fields.review_interval.clone()),
            related_entries: Some(fields.related_entries.clone()),
        }
    }
}

/// Checks the fields and status an event written elsewhere gives a new entry (a `create`, a
/// `supersede`'s replacement) as [`check_create`] checks those of `memlog add`; its times must
/// also be written as memlog writes them.
///
/// # Errors
/// [`Invalid`] with every problem found.
pub fn check_recorded_create(fields: &EntryFields, status: Status) -> Result<(), Invalid> {
    let (checked, _) = check_create(&EntryInput::of(fields, Some(status)))?;
    let mut c = Checker::default();
    for (field, given, written) in [
        ("valid_from", &fields.valid_from, &checked.valid_from),
        ("valid_to", &fields.valid_to, &checked.valid_to),
    ] {
        let value = |t: &Option<String>| t.as_deref().map(Value::from);
        not_as_written(&mut c, field, value(given), value(written));
    }
    c.into_result(())
}

/// Checks the values an event written elsewhere (an `update`, a `resolve`) sets on an entry
/// whose fields were `current` as [`check_patch`] checks those of `memlog update`; its times
/// must also be written as memlog writes them. An empty `set` sets nothing to check.
///
/// # Errors
/// [`Invalid`] with every problem found.
pub fn check_recorded_set(set: &Map<String, Value>, current: &EntryFields) -> Result<(), Invalid> {
    if set.is_empty() {
        return Ok(());
    }
    let input = entry_input_from_json(&Value::Object(set.clone()), "")?;
    let checked = check_patch(&input, current)?;
    let mut c = Checker::default();
    // The times are what the check rewrites (numbers are compared as numbers elsewhere).
    for field in ["valid_from", "valid_to"] {
        if let Some(given) = set.get(field) {
            not_as_written(
                &mut c,
                field,
                Some(given.clone()),
                checked.get(field).cloned(),
            );
        }
    }
    c.into_result(())
}

/// A value accepted only in the form it is written in after checking (a time as
/// `2026-11-22T10:31:12.123Z`): an event carries it as it was written.
fn not_as_written(c: &mut Checker, field: &str, given: Option<Value>, written: Option<Value>) {
    if given != written {
        let show = |v: Option<Value>| v.map_or_else(|| "null".to_owned(), |v| v.to_string());
        c.push(
            field,
            "format",
            format!(
                "`{field}` is {}, which memlog writes as {}; an event keeps the value it was \
                 written with: make the change with memlog instead of importing this event",
                show(given),
                show(written)
            ),
        );
    }
}

/// Checks a free-text reason (deprecate, pin, supersede). A reason that passes is scanned for
/// secrets by the write policy ([`crate::policy::Policy::check_free_text`]); one that does not
/// is scanned here, so that a secret in it is reported and logged all the same.
///
/// # Errors
/// [`Invalid`] when it is too long or has control characters.
pub fn check_reason(reason: Option<&str>) -> Result<(), Invalid> {
    let mut c = Checker::default();
    if let Some(r) = reason {
        c.text("reason", r, MAX_REASON_CHARS, true);
        c.no_control("reason", r, false);
        c.no_hidden("reason", r, false);
        if !c.problems.is_empty() {
            c.secrets("reason", r, false);
        }
    }
    c.into_result(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_break_is_named_as_such() {
        let mut c = Checker::default();
        c.no_control("summary", "first line\nsecond line", false);
        c.no_control("subject", "a\r\nb", false);
        c.no_control("summary", "bell\u{7}\n", false);
        c.no_control("content", "two\nlines\tand a tab", true);
        let messages: Vec<&str> = c.problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "`summary` contains a line break; it must be one line: join the lines, or move the rest to `content`",
                "`subject` contains a line break; it must be one line: join the lines",
                "`summary` contains control characters: remove them",
            ]
        );
    }

    /// Every hidden character of a field is named, each once, in the order met: all of them
    /// are to be removed, so the first alone would leave the writer guessing.
    #[test]
    fn every_hidden_character_is_named() {
        let mut c = Checker::default();
        c.no_hidden("content", "a\u{200b}b\u{202e}c\u{200b}d", false);
        let messages: Vec<&str> = c.problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(
            messages[0].starts_with("`content` contains U+200B"),
            "{messages:?}"
        );
        assert!(
            messages[1].starts_with("`content` contains U+202E"),
            "{messages:?}"
        );
    }

    #[test]
    fn scopes() {
        for ok in [
            "repo",
            "org",
            "customer",
            "service:auth",
            "service:billing-api",
            "environment:prod",
            "environment:staging",
        ] {
            assert!(is_valid_scope(ok), "{ok}");
        }
        for bad in [
            "",
            "repos",
            "service:",
            "service:a b",
            "environment:dev",
            "team:x",
            "Repo",
        ] {
            assert!(!is_valid_scope(bad), "{bad}");
            assert!(scope_problem(bad).is_some(), "{bad}");
        }
        // The message names what is wrong: the length, a character, or the pattern.
        let long = format!("service:{}", "s".repeat(MAX_SERVICE_NAME_CHARS + 1));
        let at_most = format!("at most {MAX_SERVICE_NAME_CHARS}");
        assert!(is_valid_scope(&long[..long.len() - 1]));
        assert!(matches!(scope_problem(&long), Some(("max_length", m)) if m.contains(&at_most)));
        assert!(
            matches!(scope_problem("service:a b"), Some(("pattern", m)) if m.contains("` ` in it"))
        );
        assert!(
            matches!(scope_problem("team:x"), Some(("pattern", m)) if m.contains("service:<name>"))
        );
        assert_eq!(scope_problem("service:auth"), None);
    }

    #[test]
    fn intervals() {
        for ok in [
            "P30D", "P2W", "PT12H", "P1Y2M", "P1DT2H", "30d", "2w", "12h",
        ] {
            assert!(is_valid_interval(ok), "{ok}");
        }
        for bad in [
            "",
            "P",
            "PT",
            "30",
            "d",
            "P1H",
            "monthly",
            "P1DT",
            "30\u{e9}",
            "\u{e9}",
            "P3\u{e9}",
            "3\u{1f600}",
        ] {
            assert!(!is_valid_interval(bad), "{bad}");
        }
    }

    proptest::proptest! {
        /// Intervals come straight from users: any text is answered, never a panic, and only a
        /// valid one has a length.
        #[test]
        fn any_text_is_an_interval_or_not(s in "[0-9]{0,3}\\PC{0,3}[dwhPTYMDHS\u{e9}\u{1f600}]?") {
            let valid = is_valid_interval(&s);
            let millis = crate::lifecycle::freshness::interval_millis(&s);
            proptest::prop_assert!(valid || millis.is_none());
        }
    }
}
