//! Printing results and errors, and the documented exit codes.

use crate::error::Error;
pub use crate::safe_text::{clip, safe};
use serde::Serialize;
use serde_json::{Value, json};
use std::io::Write;

/// Documented exit codes (docs/CLI.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Success.
    Ok = 0,
    /// The command ran and found problems (`verify`), or a batch had skipped items (`apply`).
    Problems = 1,
    /// Bad usage: unknown flag, bad argument value.
    Usage = 2,
    /// Input rejected: validation or a refused change; nothing was written.
    Rejected = 3,
    /// Not found: workspace, project or entry.
    NotFound = 4,
    /// A lock could not be taken in time.
    Locked = 5,
    /// The log or the store is damaged.
    Corrupt = 6,
    /// An I/O error.
    Io = 7,
}

/// Standard output that knows whether JSON was asked for. A closed pipe ends the program quietly.
/// A capturing `Out` keeps what a command prints instead, for the MCP server, which runs
/// commands in its own process and answers with what they printed.
///
/// Under `--json` nothing is printed while the command runs: what it gives to [`Out::json`] (and
/// any text it prints) is kept, and [`Out::finish`] prints it once, in the one JSON contract of
/// every command (docs/JSON.md): `{"success": true, "results": ..., "warnings": [...]}`, with
/// the warnings the command gave on the way, whenever it gave them.
pub struct Out {
    pub json: bool,
    sink: Sink,
    /// Under `--json`: the values given to [`Out::json`], and text printed meanwhile.
    results: Vec<Value>,
    text: Vec<u8>,
    /// Set by [`Out::report`]: the result's own `warnings` are part of the answer.
    own_warnings: bool,
}

enum Sink {
    Stdout(std::io::Stdout),
    Capture(Vec<u8>),
}

impl Out {
    pub fn new(json: bool) -> Self {
        Self {
            json,
            sink: Sink::Stdout(std::io::stdout()),
            results: Vec::new(),
            text: Vec::new(),
            own_warnings: false,
        }
    }

    /// An `Out` that keeps everything printed; read it back with [`Out::captured`].
    pub fn capture(json: bool) -> Self {
        Self {
            json,
            sink: Sink::Capture(Vec::new()),
            results: Vec::new(),
            text: Vec::new(),
            own_warnings: false,
        }
    }

    /// What a capturing `Out` was given (empty for standard output).
    pub fn captured(self) -> String {
        match self.sink {
            Sink::Capture(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Sink::Stdout(_) => String::new(),
        }
    }

    /// Prints one line of text (kept for the result under `--json`).
    pub fn line(&mut self, text: impl AsRef<str>) {
        if self.json {
            self.text.extend_from_slice(text.as_ref().as_bytes());
            self.text.push(b'\n');
            return;
        }
        self.emit(text.as_ref());
    }

    fn emit(&mut self, text: &str) {
        match &mut self.sink {
            Sink::Capture(buf) => {
                buf.extend_from_slice(text.as_bytes());
                buf.push(b'\n');
            }
            Sink::Stdout(stdout) => {
                let mut lock = stdout.lock();
                if writeln!(lock, "{text}").is_err() {
                    // Broken pipe (e.g. `memlog list | head`): not an error.
                    std::process::exit(0);
                }
            }
        }
    }

    /// The command's result: under `--json` kept for [`Out::finish`], otherwise printed as
    /// pretty JSON (`context` prints its AgentTask so without `--json`).
    pub fn json(&mut self, value: &impl Serialize) {
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        if self.json {
            self.results.push(value);
        } else {
            let text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| "null".into());
            self.emit(&text);
        }
    }

    /// [`Out::json`] for a report whose `warnings` are findings of its own (`verify`'s
    /// `{line, offset, problem}`): under `--json` they stay in `results`, and the envelope's
    /// `warnings` holds only the warnings the command gave.
    pub fn report(&mut self, value: &impl Serialize) {
        self.own_warnings = true;
        self.json(value);
    }

    /// Raw writer for large outputs (kept as text under `--json`).
    pub fn raw(&mut self) -> Box<dyn Write + '_> {
        if self.json {
            return Box::new(&mut self.text);
        }
        match &mut self.sink {
            Sink::Capture(buf) => Box::new(buf),
            Sink::Stdout(stdout) => Box::new(stdout.lock()),
        }
    }

    /// What a command that then failed had answered (under `--json`), for the error's details.
    pub fn take_partial(&mut self) -> Option<Value> {
        match self.results.len() {
            0 => None,
            1 => self.results.pop(),
            _ => Some(Value::Array(std::mem::take(&mut self.results))),
        }
    }

    /// Under `--json`, prints the result of a command that succeeded in the one JSON contract.
    pub fn finish(&mut self) {
        if !self.json {
            return;
        }
        let results = match self.results.len() {
            0 if self.text.is_empty() => Value::Null,
            0 => Value::String(String::from_utf8_lossy(&self.text).trim_end().to_owned()),
            1 => self.results.pop().unwrap_or(Value::Null),
            _ => Value::Array(std::mem::take(&mut self.results)),
        };
        let body = if self.own_warnings {
            envelope_of_report(results, take_warnings())
        } else {
            envelope(results, take_warnings())
        };
        let text = serde_json::to_string_pretty(&body).unwrap_or_else(|_| "null".into());
        self.emit(&text);
    }
}

/// The success shape of the JSON contract: `results` is what the command answered (its own
/// `success` and top-level `warnings` keys taken out), `warnings` every warning it gave, each
/// `{"message", "field"?, "rule"?}`, once.
pub fn envelope(results: Value, given: Vec<String>) -> Value {
    envelope_with(results, given, true)
}

/// [`envelope`] for a report that keeps its own `warnings` key (see [`Out::report`]).
pub fn envelope_of_report(results: Value, given: Vec<String>) -> Value {
    envelope_with(results, given, false)
}

fn envelope_with(results: Value, given: Vec<String>, hoist: bool) -> Value {
    let mut warnings: Vec<Value> = Vec::new();
    let mut add = |w: Value| {
        let w = match w {
            Value::String(s) => json!({ "message": s }),
            Value::Object(m) => Value::Object(m),
            other => json!({ "message": other.to_string() }),
        };
        let message = w.get("message").cloned();
        if !warnings
            .iter()
            .any(|x| x.get("message") == message.as_ref())
        {
            warnings.push(w);
        }
    };
    let results = match results {
        Value::Object(mut m) => {
            m.remove("success");
            // A command's own warnings list joins the envelope's; any other `warnings` value is
            // part of its answer and stays.
            if hoist
                && m.get("warnings").is_some_and(Value::is_array)
                && let Some(Value::Array(ws)) = m.remove("warnings")
            {
                ws.into_iter().for_each(&mut add);
            }
            Value::Object(m)
        }
        other => other,
    };
    given.into_iter().map(Value::String).for_each(&mut add);
    json!({ "success": true, "results": results, "warnings": warnings })
}

thread_local! {
    /// Warnings of the command running on this thread, for the JSON result.
    static WARNINGS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Set while a command runs for the MCP server: nothing goes to the terminal.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Set under `--json`: warnings go into the JSON document only (notes still go to stderr).
    static WARNINGS_IN_JSON: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A confidence in a table's four columns: two decimals, or, for a value outside 0 to 1 that a
/// merged log can bring (memlog writes none), in scientific notation rather than 300 digits.
pub fn confidence_cell(confidence: f64) -> String {
    if (0.0..=1.0).contains(&confidence) {
        format!("{confidence:.2}")
    } else {
        format!("{confidence:.0e}")
    }
}

/// Prints a warning line on standard error (not under `--json`) and keeps it for the JSON
/// result.
pub fn warn(text: &str) {
    let text = safe(text);
    if !QUIET.get() && !WARNINGS_IN_JSON.get() {
        let _ = writeln!(std::io::stderr(), "warning: {text}");
    }
    WARNINGS.with_borrow_mut(|w| w.push(text));
}

/// Under `--json`, warnings are only kept for the JSON document.
pub fn set_warnings_in_json(json: bool) {
    WARNINGS_IN_JSON.set(json);
}

/// The warnings given so far on this thread, emptied.
pub fn take_warnings() -> Vec<String> {
    WARNINGS.with_borrow_mut(std::mem::take)
}

/// While `quiet`, warnings and notes are only kept, not printed on standard error.
pub fn set_quiet(quiet: bool) {
    QUIET.set(quiet);
}

/// Prints a `--debug` line on standard error (also under the MCP server, whose log it is).
pub fn debug(text: &str) {
    // A debug line quotes what memlog read (a whole configuration, a query): a credential in
    // it is never echoed.
    let text = crate::policy::validate::redact_secrets(text);
    let _ = writeln!(std::io::stderr(), "debug: {}", safe(&text));
}

/// Prints an informational line on standard error. Under the MCP server, which has no
/// terminal, it is kept with the warnings instead: the tool result is all a client sees.
pub fn note(text: &str) {
    if QUIET.get() {
        WARNINGS.with_borrow_mut(|w| w.push(safe(text)));
    } else {
        let _ = writeln!(std::io::stderr(), "note: {}", safe(text));
    }
}

/// The requirement's error code for a rejected entry: secrets first, then evidence.
pub fn invalid_code(inv: &crate::policy::validate::Invalid) -> &'static str {
    let codes: Vec<&str> = inv
        .problems
        .iter()
        .map(|p| constraint_code(p.constraint))
        .collect();
    ["SECRET_DETECTED", "EVIDENCE_INVALID"]
        .into_iter()
        .find(|c| codes.contains(c))
        .unwrap_or("VALIDATION_ERROR")
}

/// The error code of one problem, by its constraint.
pub fn constraint_code(constraint: &str) -> &'static str {
    match constraint {
        "secret" => "SECRET_DETECTED",
        "evidence_uri" | "evidence_strength" => "EVIDENCE_INVALID",
        _ => "VALIDATION_ERROR",
    }
}

/// The error code of the JSON error format for `e`.
pub fn error_code(e: &Error) -> &'static str {
    classify(e).1
}

fn classify(e: &Error) -> (ExitCode, &'static str, Value) {
    match e {
        Error::Invalid(inv) => {
            let first = inv.problems.first();
            (
                ExitCode::Rejected,
                invalid_code(inv),
                json!({
                    "field": first.map(|p| p.field.clone()),
                    "constraint": first.map(|p| p.constraint),
                    "problems": inv.problems,
                }),
            )
        }
        Error::Rejected { .. } => (ExitCode::Rejected, "VALIDATION_ERROR", json!({})),
        Error::BadProjectName { name, why } => (
            ExitCode::Rejected,
            "VALIDATION_ERROR",
            json!({"field": "project", "constraint": "project_name", "value": name, "reason": why}),
        ),
        Error::Usage(_) => (ExitCode::Usage, "USAGE_ERROR", json!({})),
        Error::NoWorkspace { start } => (ExitCode::NotFound, "NOT_FOUND", json!({"start": start})),
        Error::NoProject { project, root } => (
            ExitCode::NotFound,
            "NOT_FOUND",
            json!({"project": project, "workspace": root}),
        ),
        Error::AmbiguousProject { .. } => {
            (ExitCode::Usage, "USAGE_ERROR", json!({"field": "project"}))
        }
        Error::NotFound { project, prefix } => (
            ExitCode::NotFound,
            "NOT_FOUND",
            json!({"project": project, "id": prefix}),
        ),
        Error::AmbiguousId {
            project,
            prefix,
            candidates,
        } => (
            ExitCode::Rejected,
            "QUERY_ERROR",
            json!({"project": project, "id": prefix, "candidates": candidates}),
        ),
        Error::LockTimeout { what, path, waited } => (
            ExitCode::Locked,
            "LOCK_TIMEOUT",
            json!({"lock": what, "path": path, "waited_ms": waited.as_millis()}),
        ),
        Error::CorruptLog {
            path, line, offset, ..
        } => (
            ExitCode::Corrupt,
            "CORRUPT_LOG",
            json!({"file": path, "line": line, "offset": offset}),
        ),
        Error::CorruptFile { path, .. } => {
            (ExitCode::Corrupt, "CORRUPT_LOG", json!({"file": path}))
        }
        Error::Store { path, .. } => (ExitCode::Corrupt, "STORAGE_ERROR", json!({"store": path})),
        Error::Event(_) => (ExitCode::Rejected, "VALIDATION_ERROR", json!({})),
        Error::Io(_) => (ExitCode::Io, "STORAGE_ERROR", json!({})),
        Error::InvalidConfig {
            path,
            project,
            problems,
        } => (
            ExitCode::Rejected,
            "VALIDATION_ERROR",
            json!({"file": path, "project": project, "constraint": "config_schema", "problems": problems}),
        ),
    }
}

/// The exit code and the JSON error format of `e`, with any credential redacted.
pub fn error_body(e: &Error) -> (i32, Value) {
    let (code, name, mut details) = classify(e);
    // Errors quote their input (an id, a value, a path); never echo a credential, nor more of
    // an input than a reader can use (redacted first, so a cut never splits a credential).
    let message = cut_message(&crate::policy::validate::redact_secrets(&e.to_string()));
    crate::policy::validate::redact_secrets_in(&mut details);
    cut_strings_in(&mut details);
    (
        code as i32,
        json!({"success": false, "error": {"code": name, "message": message, "details": details}}),
    )
}

/// Every string of an error's details cut as [`cut_message`] cuts the message: a detail that
/// quotes a value of five megabytes says so in a line.
fn cut_strings_in(v: &mut Value) {
    match v {
        Value::String(s) => *s = cut_message(s),
        Value::Array(items) => items.iter_mut().for_each(cut_strings_in),
        Value::Object(map) => map.values_mut().for_each(cut_strings_in),
        _ => {}
    }
}

/// The longest error message printed, in characters.
const MAX_MESSAGE_CHARS: usize = 2000;

/// `message`, cut to [`MAX_MESSAGE_CHARS`] with a note of how much was left out: an error that
/// quotes a megabyte of input says so in a line.
fn cut_message(message: &str) -> String {
    let total = message.chars().count();
    if total <= MAX_MESSAGE_CHARS {
        return message.to_owned();
    }
    let kept: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
    format!("{kept}… ({} more characters)", total - MAX_MESSAGE_CHARS)
}

/// Prints an error (JSON on stdout under `--json`, text on stderr otherwise) and returns the exit code.
#[allow(
    dead_code,
    reason = "the entry point for code that reports an error outside `main_with_args`"
)]
pub fn report_error(e: &Error, json_mode: bool) -> i32 {
    report_error_after(e, json_mode, None)
}

/// [`report_error`] for a command that had already answered part of its work (an `apply` that
/// wrote some updates before failing): under `--json` that answer is the error's
/// `details.partial_results`.
pub fn report_error_after(e: &Error, json_mode: bool, partial: Option<Value>) -> i32 {
    let (code, mut body) = error_body(e);
    if let (Some(p), Some(details)) = (partial, body["error"]["details"].as_object_mut()) {
        details.insert("partial_results".into(), p);
    }
    let warnings = take_warnings();
    if json_mode && !warnings.is_empty() {
        // Said before the error and, under `--json`, nowhere else.
        body["warnings"] = warnings
            .into_iter()
            .map(|message| json!({ "message": message }))
            .collect();
    }
    if json_mode {
        let _ = writeln!(
            std::io::stdout(),
            "{}",
            serde_json::to_string_pretty(&body).unwrap_or_default()
        );
    } else {
        let message = body["error"]["message"].as_str().unwrap_or_default();
        let _ = writeln!(std::io::stderr(), "error: {}", safe(message));
    }
    code
}

/// Prints a usage error from clap (help and version go to stdout with exit 0).
pub fn clap_error(e: &clap::Error, json_mode: bool) -> i32 {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            2
        } else {
            0
        };
    }
    // clap quotes the offending argument, which could be a credential typed in the wrong place.
    let text = crate::policy::validate::redact_secrets(&e.to_string());
    if json_mode {
        let _ = writeln!(
            std::io::stdout(),
            "{}",
            serde_json::to_string_pretty(&usage_error_body(e)).unwrap_or_default()
        );
    } else if text == e.to_string() {
        let _ = e.print();
    } else {
        let _ = write!(std::io::stderr(), "{text}");
    }
    ExitCode::Usage as i32
}

/// The JSON error format of a usage error: the message names the problem, clap's tip and the
/// command's usage line, so that it can be fixed without running `--help`.
pub fn usage_error_body(e: &clap::Error) -> Value {
    let text = crate::policy::validate::redact_secrets(&e.to_string());
    let mut problem = String::new();
    let mut tips = Vec::new();
    let mut usage = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(rest) = line.strip_prefix("error:") {
            problem = rest.trim().to_owned();
        } else if let Some(rest) = line.strip_prefix("tip:") {
            tips.push(rest.trim().to_owned());
        } else if let Some(rest) = line.strip_prefix("Usage:") {
            usage = Some(rest.trim().to_owned());
        }
    }
    if problem.is_empty() {
        problem = e.kind().to_string();
    }
    let mut message = problem;
    for tip in &tips {
        message.push_str("; ");
        message.push_str(tip);
    }
    if let Some(u) = &usage {
        message.push_str(&format!("; usage: {u}"));
    }
    let argument = e
        .get(clap::error::ContextKind::InvalidArg)
        .map(|a| crate::policy::validate::redact_secrets(&a.to_string()));
    json!({"success": false, "error": {"code": "USAGE_ERROR", "message": message, "details": {
        "kind": e.kind().to_string(),
        "argument": argument,
        "usage": usage,
    }}})
}

#[cfg(test)]
mod contract_laws {
    use super::envelope;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-z ]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("success".to_owned()),
                        Just("warnings".to_owned()),
                        "[a-z]{1,6}"
                    ],
                    inner,
                    0..4
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever a command answers and warns, the success shape is the same three keys,
        /// `results` never carries the envelope's own keys at its top, and each warning
        /// message appears once.
        #[test]
        fn every_success_has_one_shape(value in any_json(), given in prop::collection::vec("[a-c]{1,2}", 0..6)) {
            let body = envelope(value.clone(), given.clone());
            let keys: Vec<&String> = body.as_object().map(|m| m.keys().collect()).unwrap_or_default();
            prop_assert_eq!(keys, ["results", "success", "warnings"]);
            prop_assert_eq!(&body["success"], &json!(true));
            if let Value::Object(m) = &body["results"] {
                prop_assert!(!m.contains_key("success"));
                prop_assert!(!m.contains_key("warnings") || !value["warnings"].is_array());
            } else {
                prop_assert_eq!(&body["results"], &value);
            }
            let messages: Vec<&Value> = body["warnings"]
                .as_array()
                .map(|w| w.iter().map(|x| &x["message"]).collect())
                .unwrap_or_default();
            let mut unique = messages.clone();
            unique.dedup();
            unique.sort_by_key(|v| v.to_string());
            unique.dedup();
            prop_assert_eq!(unique.len(), messages.len());
            for g in &given {
                prop_assert!(messages.contains(&&json!(g)));
            }
        }
    }
}

#[cfg(test)]
mod cells {
    use super::confidence_cell;
    use proptest::prelude::*;

    proptest! {
        /// A confidence cell is at most seven characters whatever the number (a forged event's
        /// 1e308 included), and two decimals for every confidence memlog writes.
        #[test]
        fn a_confidence_cell_stays_narrow(c in any::<f64>(), valid in 0.0_f64..=1.0) {
            prop_assert!(confidence_cell(c).chars().count() <= 7, "{}", confidence_cell(c));
            prop_assert_eq!(confidence_cell(valid), format!("{valid:.2}"));
        }
    }
}
