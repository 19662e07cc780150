//! `apply`: Memory_Update objects, arrays of them, and AgentResults.

use super::{Ctx, ExitCode, Out};
use crate::error::{Error, Result};
use crate::log::writer::{Batch, Change, WriteContext, Written, write};
use crate::policy::validate::{
    EntryInput, Invalid, check_create, check_reason, entry_input_from_json, redact_secrets,
};
use crate::project::Project;
use crate::store::session::Session;
use crate::workspace::ProjectName;
use serde::Serialize;
use serde_json::{Value, json};
use std::io::{BufRead, Read, Write};

#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// [PROJECT] [FILE|-]: the project (default as for `add`) and the JSON file (default: stdin)
    #[arg(num_args = 0..=2, value_name = "PROJECT|FILE")]
    pub args: Vec<String>,
}

/// Largest input accepted, so a runaway pipe cannot exhaust memory.
const MAX_INPUT_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Serialize)]
struct Skipped {
    index: usize,
    /// Its line, when the input is JSON Lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    operation: Option<String>,
    code: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    problems: Vec<crate::policy::validate::Problem>,
}

/// The list of updates in any of the accepted shapes.
pub(super) fn updates_of(value: Value) -> Result<Vec<Value>> {
    match value {
        Value::Array(items) => Ok(items),
        Value::Object(mut map) if map.contains_key("memory_updates") => {
            match map.remove("memory_updates") {
                Some(Value::Array(items)) => Ok(items),
                Some(Value::Null) | None => Ok(Vec::new()),
                Some(_) => Err(Error::Invalid(Invalid::one(
                    "memory_updates",
                    "type",
                    "`memory_updates` must be an array of Memory_Update objects",
                ))),
            }
        }
        v @ Value::Object(_) => Ok(vec![v]),
        _ => Err(Error::Invalid(Invalid::one(
            "input",
            "type",
            "expected a Memory_Update object, an array of them, or an AgentResult with memory_updates",
        ))),
    }
}

/// The project a write goes to, and whether it is still to be created: a write to memory that
/// is not initialized initializes it ([`create_for_write`]), but only once something is
/// written, so that a refused write (to a mistyped project name above all) leaves nothing
/// behind.
pub(super) fn write_target(ctx: &Ctx, name: Option<&str>) -> Result<(Project, bool)> {
    match ctx.project(name) {
        Err(Error::NoProject { project, .. }) => {
            let ws = ctx.workspace()?;
            Ok((Project::new(&ws, ProjectName::new(&project)?), true))
        }
        other => other.map(|p| (p, false)),
    }
}

/// Initializes `project` for its first write, saying so on standard error.
pub(super) fn create_for_write(ctx: &Ctx, project: &Project) -> Result<Project> {
    let pname = &project.name;
    crate::project::init(&project.workspace, pname, &ctx.now())?;
    super::output::note(&format!(
        "project `{pname}` was not initialized: created ai-memory/{pname}/ with the default policies"
    ));
    Project::open(&project.workspace, pname.clone())
}

fn field_str(
    map: &serde_json::Map<String, Value>,
    key: &str,
) -> std::result::Result<Option<String>, Invalid> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Invalid::one(
            key,
            "type",
            format!("`{key}` must be a string"),
        )),
    }
}

/// Where updates go: a batch on an existing project, or (validating against a project that does
/// not exist yet) the checks that need no store.
pub(super) enum Sink<'b, 'a> {
    Batch(&'b mut Batch<'a>),
    NoProject(&'a Project, &'a WriteContext),
}

impl<'a> Sink<'_, 'a> {
    /// The project written to and the context written with (for [`crate::log::writer::refused`]).
    fn context(&self) -> (&'a Project, &'a WriteContext) {
        match self {
            Self::Batch(b) => b.context(),
            Self::NoProject(project, wctx) => (project, wctx),
        }
    }

    fn stage(
        &mut self,
        change: Change,
        check: impl FnOnce(&Session, Option<&projections::EntryState>) -> Result<Change>,
    ) -> Result<Written> {
        match self {
            Self::Batch(b) => b.stage(change, check),
            Self::NoProject(project, wctx) => write(project, wctx, change, check),
        }
    }

    /// A create whose content the policy already checked (see [`precheck`]).
    fn stage_create(&mut self, pre: Prechecked) -> Result<Written> {
        let Prechecked {
            fields,
            status,
            content,
            event,
        } = pre;
        let change = Change::Create {
            fields: fields.clone(),
            status,
        };
        let check = |_: &Session, _: Option<&projections::EntryState>| {
            Ok(Change::Create { fields, status })
        };
        match self {
            Self::Batch(b) => b.stage_checked(change, content, event, check),
            Self::NoProject(project, wctx) => write(project, wctx, change, check),
        }
    }
}

/// What can be known of a create without the store: its checked fields and the policy's
/// verdict on their content (secrets above all, the slowest check of a create). A bulk `apply`
/// works it out on a second thread while the first stages the updates before it.
pub(super) struct Prechecked {
    fields: projections::EntryFields,
    status: projections::Status,
    content: crate::policy::Verdict,
    /// The create's event and line, built with the batch's actor and time.
    event: Option<(projections::Event, String)>,
}

/// The [`Prechecked`] part of `update` when it is a create that passes every check made
/// without the store; `None` for anything else (which [`apply_one`] then checks in full, and
/// reports).
pub(super) fn precheck(
    update: &Value,
    policy: &crate::policy::Policy,
    (actor, at): (&str, &str),
) -> Option<Prechecked> {
    let Value::Object(map) = update else {
        return None;
    };
    if map.get("operation").and_then(Value::as_str) != Some("create")
        || map.keys().any(|k| !UPDATE_FIELDS.contains(&k.as_str()))
        || field_str(map, "target_id").is_err()
        || check_reason(field_str(map, "reason").ok()?.as_deref()).is_err()
    {
        return None;
    }
    let input = entry_input_from_json(map.get("entry")?, "entry.").ok()?;
    let (fields, status) = check_create(&input).ok()?;
    let content = policy.check_entry(&fields, status, None);
    let data = projections::EventData::Create {
        fields: fields.clone(),
        status,
    };
    let event = projections::Event::build_with_line("", actor, at, Vec::new(), data).ok();
    Some(Prechecked {
        fields,
        status,
        content,
        event,
    })
}

/// Fields of a Memory_Update.
const UPDATE_FIELDS: [&str; 4] = ["operation", "entry", "target_id", "reason"];

/// Fields of a Memory_Update's `entry`.
const ENTRY_FIELDS: [&str; 14] = [
    "section",
    "kind",
    "subject",
    "scope",
    "summary",
    "content",
    "confidence",
    "evidence",
    "tags",
    "status",
    "valid_from",
    "valid_to",
    "review_interval",
    "related_entries",
];

/// Names a problem by its path in the Memory_Update (`entry.confidence`, not `confidence`),
/// whichever check found it, so that one input's problems are all named alike.
fn update_path(p: &mut crate::policy::validate::Problem) {
    let head = p.field.split(['.', '[']).next().unwrap_or_default();
    if ENTRY_FIELDS.contains(&head) {
        p.message = p
            .message
            .replace(&format!("`{head}"), &format!("`entry.{head}"));
        p.field = format!("entry.{}", p.field);
    }
}

/// Stages one update; returns the (not yet committed) result or why it was refused.
pub(super) fn apply_one(sink: &mut Sink<'_, '_>, update: &Value) -> Result<Written> {
    apply_prechecked(sink, update, None)
}

/// [`apply_one`], given what [`precheck`] found of `update`.
fn apply_prechecked(
    sink: &mut Sink<'_, '_>,
    update: &Value,
    pre: Option<Prechecked>,
) -> Result<Written> {
    let staged = match pre {
        Some(pre) => sink.stage_create(pre),
        None => apply_one_inner(sink, update),
    };
    staged.map_err(|e| match e {
        Error::Invalid(mut inv) => {
            inv.problems.iter_mut().for_each(update_path);
            Error::Invalid(inv)
        }
        other => other,
    })
}

fn apply_one_inner(sink: &mut Sink<'_, '_>, update: &Value) -> Result<Written> {
    let Value::Object(map) = update else {
        return Err(Error::Invalid(Invalid::one(
            "update",
            "type",
            "a Memory_Update must be a JSON object",
        )));
    };
    // An update refused by the schema checks logs the secrets they found, as the write policy
    // logs those it finds: in its values, and in the names of fields it does not know. (The
    // operation is named only when it is one: it is logged.)
    let (project, wctx) = sink.context();
    let operation = map
        .get("operation")
        .and_then(Value::as_str)
        .filter(|op| matches!(*op, "create" | "supersede" | "deprecate"))
        .unwrap_or("apply");
    let refused = |e| crate::log::writer::refused(project, wctx, operation, e);
    for key in map.keys() {
        if !UPDATE_FIELDS.contains(&key.as_str()) {
            return Err(refused(
                Invalid::one(
                    key.as_str(),
                    "unknown_field",
                    format!(
                        "unknown Memory_Update field `{key}`; use operation, entry, target_id, \
                         reason"
                    ),
                )
                .with_secrets_of(key, key),
            ));
        }
    }
    let op = field_str(map, "operation")?.ok_or_else(|| {
        Invalid::one(
            "operation",
            "required",
            "`operation` is required: create, supersede or deprecate",
        )
    })?;
    let target = field_str(map, "target_id")?;
    let reason = field_str(map, "reason")?;
    check_reason(reason.as_deref()).map_err(refused)?;
    let input = match map.get("entry") {
        Some(v) => entry_input_from_json(v, "entry.").map_err(refused)?,
        None => EntryInput::default(),
    };
    let need_target = || {
        Invalid::one(
            "target_id",
            "required",
            format!("`target_id` is required for {op}"),
        )
    };
    match op.as_str() {
        "create" => {
            if map.get("entry").is_none() {
                return Err(Error::Invalid(Invalid::one(
                    "entry",
                    "required",
                    "`entry` is required for create",
                )));
            }
            let (fields, status) = check_create(&input).map_err(refused)?;
            sink.stage(
                Change::Create {
                    fields: fields.clone(),
                    status,
                },
                |_, _| Ok(Change::Create { fields, status }),
            )
        }
        "supersede" => {
            let target = target.ok_or_else(need_target)?;
            if map.get("entry").is_none() {
                return Err(Error::Invalid(Invalid::one(
                    "entry",
                    "required",
                    "`entry` (the replacement) is required for supersede",
                )));
            }
            sink.stage(
                Change::Deprecate {
                    target,
                    reason: None,
                },
                |_, state| {
                    let old =
                        state.ok_or_else(|| Error::Usage("supersede needs a target".into()))?;
                    let merged = super::write_ops::inherit(&input, old);
                    let (fields, status) = check_create(&merged).map_err(refused)?;
                    Ok(Change::Supersede {
                        target: old.id.clone(),
                        fields,
                        status,
                        reason: reason.clone(),
                    })
                },
            )
        }
        "deprecate" => {
            let target = target.ok_or_else(need_target)?;
            sink.stage(
                Change::Deprecate {
                    target,
                    reason: reason.clone(),
                },
                |_, state| {
                    Ok(Change::Deprecate {
                        target: state.map(|s| s.id.clone()).unwrap_or_default(),
                        reason: reason.clone(),
                    })
                },
            )
        }
        other => Err(refused(
            Invalid::one(
                "operation",
                "enum",
                format!(
                    "`operation` is `{}`; use create, supersede or deprecate",
                    other.escape_debug()
                ),
            )
            .with_secrets_of("operation", other),
        )),
    }
}

/// A lone argument names a file when it exists, or looks like one (a path or a `.json` name), so
/// that a mistyped file name is reported as missing instead of read as a project name.
fn looks_like_file(arg: &str) -> bool {
    let path = std::path::Path::new(arg);
    path.is_file()
        || arg.contains('/')
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json") || e.eq_ignore_ascii_case("jsonl"))
}

/// `[PROJECT] [FILE|-]`: one argument is a file when it is `-` or [`looks_like_file`].
pub(super) fn project_and_file(args: &[String]) -> (Option<&str>, Option<&str>) {
    match args {
        [] => (None, None),
        [one] if one == "-" || looks_like_file(one) => (None, Some(one.as_str())),
        [one] => (Some(one.as_str()), None),
        [p, f, ..] => (Some(p.as_str()), Some(f.as_str())),
    }
}

/// The updates of an input, read as they come: JSON Lines (one update per line, any number of
/// lines, in bounded memory), or one JSON document (an update, an array, an AgentResult) of at
/// most [`MAX_INPUT_BYTES`].
pub(super) struct Updates {
    lines: Option<Box<dyn std::io::BufRead + Send>>,
    document: std::vec::IntoIter<Value>,
    /// The document was a single object (not an array or a stream).
    pub single_object: bool,
    next_line: usize,
    /// The first line of JSON Lines: its number, and its update or why it is not one.
    first: Option<(usize, Result<Value>)>,
}

impl Updates {
    /// Opens `path` (`-` or `None`: stdin) and decides its shape.
    ///
    /// # Errors
    /// Unreadable input, a document that is not JSON or too large.
    pub(super) fn open(path: Option<&str>) -> Result<Self> {
        let mut reader: Box<dyn std::io::BufRead + Send> = match path {
            None | Some("-") => {
                if path.is_none() && super::invoke::stdin_is_terminal() {
                    return Err(Error::Usage(
                        "no input: give a JSON file, or pipe the JSON in (`-` reads stdin)".into(),
                    ));
                }
                Box::new(std::io::BufReader::new(super::invoke::stdin()))
            }
            Some(p) => {
                let path = std::path::Path::new(p);
                if path.is_dir() {
                    let e = std::io::Error::from(std::io::ErrorKind::IsADirectory);
                    return Err(Error::input(path, e));
                }
                let file = std::fs::File::open(path).map_err(|e| Error::input(path, e))?;
                Box::new(std::io::BufReader::new(file))
            }
        };
        let mut first = Vec::new();
        // Line numbers count blank lines too, as an editor shows them.
        let mut first_number = 0;
        loop {
            first.clear();
            first_number += 1;
            if (&mut reader)
                .take(MAX_INPUT_BYTES as u64 + 1)
                .read_until(b'\n', &mut first)?
                == 0
            {
                return Ok(Self::document(Vec::new(), false));
            }
            if !first.iter().all(u8::is_ascii_whitespace) {
                break;
            }
        }
        if first.starts_with(BOM) {
            return Err(bom_error(
                if first_number == 1 {
                    None
                } else {
                    Some(first_number)
                },
                path,
            ));
        }
        // A first line that is a whole JSON value except for a key stated twice is still the
        // first line of JSON Lines (or the whole input): refused alone, with its line number.
        let (first_value, first_error) = match super::strict_json::from_slice(&first) {
            Ok(v) => (Some(v), None),
            Err(e) if serde_json::from_slice::<serde::de::IgnoredAny>(&first).is_ok() => {
                (Some(Value::Null), Some(line_error(first_number, &e)))
            }
            Err(_) => (None, None),
        };
        if let Some(value) = first_value {
            let mut probe = Vec::new();
            let mut probe_number = first_number;
            loop {
                probe.clear();
                probe_number += 1;
                // At most one byte past the limit: a longer line is refused when it is read
                // as an update, without holding it.
                if (&mut reader)
                    .take(MAX_INPUT_BYTES as u64 + 1)
                    .read_until(b'\n', &mut probe)?
                    == 0
                {
                    // The whole input was one line: one document.
                    if let Some(e) = first_error {
                        return Err(e);
                    }
                    let single = value.is_object() && value.get("memory_updates").is_none();
                    return Ok(Self::document(updates_of(value)?, single));
                }
                if !probe.iter().all(u8::is_ascii_whitespace) {
                    break;
                }
            }
            // Several lines, the first a whole JSON value: JSON Lines.
            let rest = std::io::Cursor::new(probe).chain(reader);
            let mut me = Self::document(Vec::new(), false);
            me.first = Some((first_number, first_error.map_or(Ok(value), Err)));
            me.lines = Some(Box::new(std::io::BufReader::new(rest)));
            me.next_line = probe_number;
            return Ok(me);
        }
        // One document over several lines.
        let first_len = first.len();
        let mut buf = first;
        (&mut reader)
            .take(MAX_INPUT_BYTES as u64 + 1)
            .read_to_end(&mut buf)?;
        let whole = (buf.len() <= MAX_INPUT_BYTES)
            .then(|| super::strict_json::from_slice(&buf).ok())
            .flatten();
        if whole.is_none()
            && let Some(e) = damaged_first_line(&buf[..first_len], &buf[first_len..])
        {
            // JSON Lines whose first line is damaged (cut short, say): that line is refused
            // alone and the others applied, as any other line that is not JSON.
            let rest = std::io::Cursor::new(buf.split_off(first_len)).chain(reader);
            let mut me = Self::document(Vec::new(), false);
            me.first = Some((first_number, Err(line_error(first_number, &e))));
            me.lines = Some(Box::new(std::io::BufReader::new(rest)));
            me.next_line = first_number + 1;
            return Ok(me);
        }
        if let Some(value) = whole {
            let single = value.is_object() && value.get("memory_updates").is_none();
            return Ok(Self::document(updates_of(value)?, single));
        }
        if buf.len() > MAX_INPUT_BYTES {
            return Err(Error::Invalid(Invalid::one(
                "input",
                "max_length",
                "input is one JSON document larger than 16 MiB; give JSON Lines instead (one \
                 Memory_Update per line), which has no size limit",
            )));
        }
        let text = String::from_utf8(buf)
            .map_err(|_| Error::Invalid(Invalid::one("input", "format", "input is not UTF-8")))?;
        let value: Value = super::strict_json::from_slice(text.as_bytes()).map_err(|e| {
            Error::Invalid(Invalid::one(
                "input",
                "format",
                format!(
                    "input is not valid JSON: {}",
                    super::strict_json::message(&e)
                ),
            ))
        })?;
        let single = value.is_object() && value.get("memory_updates").is_none();
        Ok(Self::document(updates_of(value)?, single))
    }

    fn document(items: Vec<Value>, single_object: bool) -> Self {
        Self {
            lines: None,
            document: items.into_iter(),
            single_object,
            next_line: 0,
            first: None,
        }
    }

    /// The next update, or why its line is not one, with the number of its line in JSON Lines
    /// (blank lines counted, as an editor shows them); an update of a JSON document has none.
    pub(super) fn next_update(&mut self) -> Option<(Option<usize>, Result<Value>)> {
        if let Some((number, item)) = self.first.take() {
            return Some((Some(number), item));
        }
        if let Some(v) = self.document.next() {
            return Some((None, Ok(v)));
        }
        let reader = self.lines.as_mut()?;
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader
                .take(MAX_INPUT_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
            {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some((None, Err(e.into()))),
            }
            let number = self.next_line;
            self.next_line += 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if line.len() > MAX_INPUT_BYTES {
                // The rest of the line is part of this one refused update: read past it
                // unkept, so that none of it is taken for an update of its own.
                if line.last() != Some(&b'\n')
                    && let Err(e) = skip_past_newline(reader)
                {
                    return Some((Some(number), Err(e.into())));
                }
                return Some((
                    Some(number),
                    Err(Error::Invalid(Invalid::one(
                        "input",
                        "max_length",
                        format!(
                            "line {number} is longer than 16 MiB; split it into one Memory_Update \
                         per line"
                        ),
                    ))),
                ));
            }
            if line.starts_with(BOM) {
                return Some((Some(number), Err(bom_error(Some(number), None))));
            }
            let update = super::strict_json::from_slice(&line).map_err(|e| line_error(number, &e));
            return Some((Some(number), update));
        }
    }
}

/// A UTF-8 byte order mark: JSON has none (RFC 8259), and the parser would only say "expected
/// value at line 1 column 1".
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An input (or its line `number`) that starts with a byte order mark, named with the fix: the
/// words of the log reader's message.
fn bom_error(number: Option<usize>, path: Option<&str>) -> Error {
    let fix = match (number, path) {
        (Some(n), _) => format!("remove those 3 bytes from line {n}"),
        (None, Some(p)) if p != "-" => format!(
            "remove those 3 bytes, e.g. `sed -i '1s/^\\xEF\\xBB\\xBF//' {}`",
            p.escape_debug()
        ),
        (None, _) => "remove those 3 bytes, e.g. pipe the input through \
                      `sed '1s/^\\xEF\\xBB\\xBF//'`"
            .to_owned(),
    };
    Error::Invalid(Invalid::one(
        "input",
        "format",
        format!(
            "{} starts with a UTF-8 byte order mark (EF BB BF, added by an editor): {fix}",
            number.map_or_else(|| "the input".to_owned(), |n| format!("line {n}"))
        ),
    ))
}

/// Whether an input that is not one JSON document is JSON Lines with a damaged first line: the
/// first line starts an object, is not one, and does not open a container for the lines after
/// it (`{"memory_updates": [`), and the next lines that are not blank (two, or the one there
/// is) are each a whole Memory_Update (an object with an `operation`). Then the first line's error. A document
/// printed over several lines, even cut short, has neither: its elements end in commas, or its
/// first line is `{` or `[` alone or opens a list; it is refused whole, and nothing is written.
fn damaged_first_line(first: &[u8], rest: &[u8]) -> Option<serde_json::Error> {
    let trimmed = first.trim_ascii();
    if !trimmed.starts_with(b"{") || trimmed.ends_with(b"{") || trimmed.ends_with(b"[") {
        return None;
    }
    let next: Vec<&[u8]> = rest
        .split(|b| *b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty())
        .take(2)
        .collect();
    let is_update = |l: &&[u8]| {
        super::strict_json::from_slice(l)
            .is_ok_and(|v| v.get("operation").is_some_and(Value::is_string))
    };
    if next.is_empty() || !next.iter().all(is_update) {
        return None;
    }
    super::strict_json::from_slice(first).err()
}

/// Why line `number` of JSON Lines is not an update.
fn line_error(number: usize, e: &serde_json::Error) -> Error {
    // serde_json places the problem within the line it was given, its newline included: "at
    // line 1 column 2", or "at line 2 column 0" for a line that ends too soon.
    let text = super::strict_json::message(e);
    let within = format!(" at line {} column {}", e.line(), e.column());
    let problem = match text.strip_suffix(&within) {
        Some(problem) if e.line() == 1 => format!("{problem} at column {}", e.column()),
        Some(problem) => format!("{problem} at the end of the line"),
        None => text,
    };
    Error::Invalid(Invalid::one(
        "input",
        "format",
        format!("line {number} is not valid JSON: {problem}"),
    ))
}

/// Reads past the next newline (or to the end), keeping nothing.
fn skip_past_newline(reader: &mut dyn std::io::BufRead) -> std::io::Result<()> {
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        if let Some(i) = buf.iter().position(|b| *b == b'\n') {
            reader.consume(i + 1);
            return Ok(());
        }
        let n = buf.len();
        reader.consume(n);
    }
}

/// Skipped updates kept in full; beyond them only index and code are kept, so that a hostile
/// input of any size costs bounded memory.
const SKIPPED_IN_FULL: usize = 1000;
/// Skipped updates named in the human summary.
const SKIPPED_SHOWN: usize = 10;

/// One applied update, as reported.
#[derive(Debug, Serialize)]
struct Applied {
    index: usize,
    /// Its line, when the input is JSON Lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    superseded: Option<String>,
    events: Vec<String>,
    warnings: Vec<crate::policy::Warning>,
}

impl Applied {
    fn of(place: Place, w: Written) -> Self {
        Self {
            index: place.index,
            line: place.line,
            id: w.id,
            superseded: w.superseded,
            events: w.events,
            warnings: w.warnings,
        }
    }
}

/// What an apply run did so far; reported whatever stops it.
#[derive(Default)]
struct Report {
    applied: Vec<Applied>,
    /// Places of staged updates, in staging order, matched to written results on commit.
    staged: Vec<Place>,
    skipped: Vec<Skipped>,
    skipped_count: usize,
    warnings: Vec<crate::policy::Warning>,
    /// The first refusal, returned as the command's error when the input was one update.
    first_error: Option<Error>,
}

impl Report {
    fn committed(&mut self, c: crate::log::writer::Committed) {
        let places = std::mem::take(&mut self.staged);
        for (place, w) in places.into_iter().zip(c.written) {
            self.applied.push(Applied::of(place, w));
        }
        self.warnings.extend(c.store_warning);
    }

    /// Records a refused update. What it echoes of the input (its operation, the target id a
    /// not-found names) is redacted: it is printed, and kept in `.memlog/apply-log.jsonl`.
    fn skip(&mut self, place: Place, operation: Option<String>, e: Error) {
        self.skipped_count += 1;
        let full = self.skipped.len() < SKIPPED_IN_FULL;
        self.skipped.push(Skipped {
            index: place.index,
            line: place.line,
            operation: operation.as_deref().map(redact_secrets),
            code: super::output::error_code(&e),
            message: if full {
                redact_secrets(&e.to_string())
            } else {
                String::new()
            },
            problems: match &e {
                Error::Invalid(inv) if full => inv.problems.clone(),
                _ => Vec::new(),
            },
        });
        self.first_error.get_or_insert(e);
    }
}

/// Updates read and prechecked ahead of the one being staged.
const READ_AHEAD: usize = 256;

pub fn run(ctx: &Ctx, args: ApplyArgs, out: &mut Out) -> Result<ExitCode> {
    let (project_name, file) = project_and_file(&args.args);
    let updates = Updates::open(file)?;
    let single_object = updates.single_object;
    let (project, missing) = write_target(ctx, project_name)?;
    let wctx = ctx.write_context_for(&project, "apply")?;
    // The project once created for the first update that passes (see below).
    let created;
    let mut batch = if missing {
        None
    } else {
        let batch = Batch::open(&project, &wctx)?;
        if let Some(q) = &batch.session().report.quarantined {
            super::output::warn(&super::quarantine_message(q));
        }
        Some(batch)
    };
    // Other threads read, parse and precheck the updates (see `precheck`) while this one
    // stages them in order. They are not waited for: when staging stops early the reader may
    // be blocked reading a pipe that stays open, and it stops at its next update once
    // `receive` is gone.
    let policy = batch.as_ref().map_or_else(
        || std::sync::Arc::new(crate::policy::Policy::defaults()),
        Batch::policy,
    );
    let (send, receive) = crossbeam_channel::bounded(READ_AHEAD);
    // The batch's time: the clock read under the write lock, when no --now is given.
    let author = (
        wctx.actor.clone(),
        batch
            .as_ref()
            .map_or_else(|| wctx.at.clone(), |b| b.at().to_owned()),
    );
    let reader = std::thread::spawn(move || read_and_precheck(updates, &policy, &author, &send));
    let mut in_order = InOrder {
        receive,
        early: std::collections::BTreeMap::new(),
        next: 0,
    };
    let mut run = Run::default();
    // A project that is not initialized is created only for an update that passes the checks
    // that need no store; the updates refused before it are reported as any others.
    let project = if missing {
        let dry = WriteContext {
            dry_run: true,
            ..wctx.clone()
        };
        let first = check_until_one_passes(&project, &dry, &mut in_order, &mut run);
        match first {
            Some(first) => {
                created = create_for_write(ctx, &project)?;
                let opened = Batch::open(&created, &wctx)?;
                stage_all(
                    batch.insert(opened),
                    std::iter::once(first).chain(&mut in_order),
                    &mut run,
                );
                &created
            }
            None => &project,
        }
    } else if let Some(batch) = batch.as_mut() {
        stage_all(batch, &mut in_order, &mut run);
        &project
    } else {
        &project
    };
    drop(in_order);
    if run.stopped.is_none() {
        // Every update was received, so the reader has finished (or failed: then the input
        // was not read to its end, and nothing more may be committed as if it had been).
        if let Err(panic) = reader.join() {
            std::panic::resume_unwind(panic);
        }
    }
    finish_run(ctx, project, batch, run, single_object, out)
}

/// Checks updates against a project that does not exist yet (the checks that need no store),
/// recording those refused, until one passes: that one is returned, to be staged once the
/// project is created. `None` when none passed or reading stopped.
fn check_until_one_passes(
    project: &Project,
    dry: &WriteContext,
    updates: &mut impl Iterator<Item = ReadUpdate>,
    run: &mut Run,
) -> Option<ReadUpdate> {
    for ReadUpdate { line, item, pre } in updates.by_ref() {
        let this = Place {
            index: run.index,
            line,
        };
        run.index += 1;
        let operation = operation_of(&item);
        let checked = item.and_then(|update| {
            apply_one(&mut Sink::NoProject(project, dry), &update).map(|_| update)
        });
        match checked {
            Ok(update) => {
                // Staged again, for real, under the same number.
                run.index -= 1;
                return Some(ReadUpdate {
                    line,
                    item: Ok(update),
                    pre,
                });
            }
            Err(e) if stops(&e) => {
                run.stopped = Some(e);
                return None;
            }
            Err(e) => run.report.skip(this, operation, e),
        }
    }
    None
}

/// An error that stops a run (reading the input or the log failed) rather than refusing one
/// update.
fn stops(e: &Error) -> bool {
    matches!(
        e,
        Error::LockTimeout { .. } | Error::Io(_) | Error::Store { .. } | Error::CorruptLog { .. }
    )
}

fn operation_of(item: &Result<Value>) -> Option<String> {
    item.as_ref()
        .ok()
        .and_then(|u| u.get("operation"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// An update as read: the number of its line in JSON Lines, the update or why it is not one,
/// and its [`Prechecked`] part.
struct ReadUpdate {
    line: Option<usize>,
    item: Result<Value>,
    pre: Option<Prechecked>,
}

/// Where an update is in the input: its number (from 1) and, in JSON Lines, its line.
#[derive(Debug, Clone, Copy)]
struct Place {
    index: usize,
    line: Option<usize>,
}

impl std::fmt::Display for Place {
    /// `update 2 (line 5)`, or `update 2` in a JSON document.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "update {}", self.index)?;
        if let Some(line) = self.line {
            write!(f, " (line {line})")?;
        }
        Ok(())
    }
}

/// Reads `updates` and sends each on with its number (from 0) and its [`Prechecked`] part. The
/// prechecks (the secret scan above all) cost more than the staging that waits for them, so
/// they run on as many threads as the machine has cores: the updates arrive out of order, and
/// [`InOrder`] puts them back.
fn read_and_precheck(
    mut updates: Updates,
    policy: &crate::policy::Policy,
    (actor, at): &(String, String),
    send: &crossbeam_channel::Sender<(usize, ReadUpdate)>,
) {
    let author = (actor.as_str(), at.as_str());
    let workers = crate::parallel::threads();
    let mut n = 0;
    if workers < 2 {
        while let Some((line, item)) = updates.next_update() {
            let pre = item.as_ref().ok().and_then(|u| precheck(u, policy, author));
            if send.send((n, ReadUpdate { line, item, pre })).is_err() {
                break;
            }
            n += 1;
        }
        return;
    }
    let (to_check, unchecked) =
        crossbeam_channel::bounded::<(usize, (Option<usize>, Result<Value>))>(READ_AHEAD);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let unchecked = unchecked.clone();
            scope.spawn(move || {
                for (n, (line, item)) in unchecked {
                    let pre = item.as_ref().ok().and_then(|u| precheck(u, policy, author));
                    if send.send((n, ReadUpdate { line, item, pre })).is_err() {
                        break;
                    }
                }
            });
        }
        drop(unchecked);
        while let Some(item) = updates.next_update() {
            if to_check.send((n, item)).is_err() {
                break;
            }
            n += 1;
        }
        // The end of the input: the checkers stop once they have checked what was sent.
        drop(to_check);
    });
}

/// The updates [`read_and_precheck`] sends, in the order read.
struct InOrder {
    receive: crossbeam_channel::Receiver<(usize, ReadUpdate)>,
    /// Updates that came before one read earlier; at most as many as are in flight.
    early: std::collections::BTreeMap<usize, ReadUpdate>,
    next: usize,
}

impl Iterator for InOrder {
    type Item = ReadUpdate;

    fn next(&mut self) -> Option<ReadUpdate> {
        loop {
            if let Some(read) = self.early.remove(&self.next) {
                self.next += 1;
                return Some(read);
            }
            let (n, read) = self.receive.recv().ok()?;
            self.early.insert(n, read);
        }
    }
}

/// What a run did so far, the error that stopped it if one did, and the number the next update
/// will have (updates are numbered from 1, as people count them).
struct Run {
    report: Report,
    stopped: Option<Error>,
    index: usize,
}

impl Default for Run {
    fn default() -> Self {
        Self {
            report: Report::default(),
            stopped: None,
            index: 1,
        }
    }
}

/// Stages `updates` in order, appending every few thousand, recording what was done in `run`.
fn stage_all(batch: &mut Batch<'_>, updates: impl Iterator<Item = ReadUpdate>, run: &mut Run) {
    let report = &mut run.report;
    for ReadUpdate { line, item, pre } in updates {
        let this = Place {
            index: run.index,
            line,
        };
        run.index += 1;
        let operation = operation_of(&item);
        let result =
            item.and_then(|update| apply_prechecked(&mut Sink::Batch(batch), &update, pre));
        // Staging may have committed earlier updates (a later one touched their entry).
        let forced = batch.take_written();
        if !forced.written.is_empty() {
            let keep = report
                .staged
                .split_off(report.staged.len().min(forced.written.len()));
            report.committed(forced);
            report.staged = keep;
        }
        match result {
            Ok(_) => report.staged.push(this),
            Err(e) if stops(&e) => {
                run.stopped = Some(e);
                break;
            }
            Err(e) => report.skip(this, operation, e),
        }
        if batch.staged() >= crate::store::tuning::append_every() {
            match batch.append() {
                Ok(c) => report.committed(c),
                Err(e) => {
                    run.stopped = Some(e);
                    break;
                }
            }
        }
    }
}

/// Commits what is staged and reports the whole run. Without a batch nothing was written (the
/// project was never created).
fn finish_run(
    ctx: &Ctx,
    project: &Project,
    batch: Option<Batch<'_>>,
    run: Run,
    single_object: bool,
    out: &mut Out,
) -> Result<ExitCode> {
    let Run {
        mut report,
        mut stopped,
        index,
    } = run;
    if let Some(batch) = batch {
        if stopped.is_none() {
            match batch.finish() {
                Ok(c) => report.committed(c),
                Err(e) => stopped = Some(e),
            }
        } else {
            drop(batch);
        }
        // The updates are in the log whatever happens to this record of the skipped ones: a
        // failure to keep it is a warning, so that the output still lists what was written.
        if let Err(e) = log_skipped(ctx, project, &report.skipped) {
            report.warnings.push(crate::policy::Warning {
                field: "apply-log".into(),
                rule: "apply_log_unwritten",
                message: format!(
                    "the skipped updates could not be recorded in .memlog/apply-log.jsonl \
                     ({e}); the output lists them"
                ),
            });
        }
    }
    report.staged.clear();
    // `index` is the number the next update would have had: 2 after exactly one.
    let single = single_object && index == 2;
    if let Some(e) = stopped {
        if report.applied.is_empty() {
            return Err(e);
        }
        // Part of the input was written: say exactly what, then the error.
        print_report(ctx, &report, out, single);
        return Err(e);
    }
    if single
        && report.applied.is_empty()
        && let Some(e) = report.first_error.take()
    {
        // One update, refused: its error is the command's error.
        return Err(e);
    }
    if index == 1 {
        // An empty input is no error, but silence would leave the user wondering (on standard
        // error, so `--json` output stays one document).
        super::output::note("no updates in the input; nothing was written");
    }
    print_report(ctx, &report, out, single);
    Ok(if report.skipped_count > 0 && report.applied.is_empty() {
        ExitCode::Rejected
    } else if report.skipped_count == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Problems
    })
}

fn print_report(ctx: &Ctx, report: &Report, out: &mut Out, _single: bool) {
    if out.json {
        out.json(&json!({
            "success": report.skipped_count == 0,
            "applied": report.applied,
            "skipped": report.skipped,
            "warnings": report.warnings,
        }));
        return;
    }
    let _ = ctx;
    let mut said = std::collections::BTreeSet::new();
    // The ids in one write: a line at a time, standard output made a system call per update.
    let mut ids = String::with_capacity(report.applied.len() * 30);
    for a in &report.applied {
        for w in &a.warnings {
            // A warning about the project (its size) is said once, not once per update.
            if w.field == "project" && !said.insert(w.rule) {
                continue;
            }
            let place = Place {
                index: a.index,
                line: a.line,
            };
            super::output::warn(&format!("{place}: {}: {}", w.field, w.message));
        }
        ids.push_str(&a.id);
        if let Some(old) = &a.superseded {
            ids.push_str(" (supersedes ");
            ids.push_str(old);
            ids.push(')');
        }
        ids.push('\n');
    }
    if !ids.is_empty() && out.raw().write_all(ids.as_bytes()).is_err() {
        // Broken pipe (`memlog apply ... | head`): not an error, as for every other output.
        std::process::exit(0);
    }
    for w in &report.warnings {
        super::output::warn(&w.message);
    }
    for s in report.skipped.iter().take(SKIPPED_SHOWN) {
        let place = Place {
            index: s.index,
            line: s.line,
        };
        super::output::warn(&format!(
            "skipped {place}: {}",
            super::output::safe(&s.message)
        ));
    }
    if report.skipped_count > 0 {
        super::output::warn(&format!(
            "{} applied, {} skipped{}; `--json` lists every skipped update, and \
             .memlog/apply-log.jsonl keeps them",
            report.applied.len(),
            report.skipped_count,
            if report.skipped_count > SKIPPED_SHOWN {
                format!(" (the first {SKIPPED_SHOWN} shown)")
            } else {
                String::new()
            }
        ));
    }
}

/// Skipped updates are recorded in `.memlog/apply-log.jsonl` for later debugging.
fn log_skipped(ctx: &Ctx, project: &Project, skipped: &[Skipped]) -> Result<()> {
    if skipped.is_empty() {
        return Ok(());
    }
    project.ensure_state_dir()?;
    let actor = redact_secrets(&ctx.actor().unwrap_or_default());
    let mut bytes = Vec::new();
    for s in skipped {
        let mut line = json!({"at": ctx.now(), "actor": actor, "index": s.index, "operation": s.operation, "code": s.code, "message": s.message});
        if let Some(number) = s.line {
            line["line"] = json!(number);
        }
        bytes.extend_from_slice(line.to_string().as_bytes());
        bytes.push(b'\n');
    }
    crate::log::durable::append_record(&project.state_dir().join("apply-log.jsonl"), &bytes)?
        .1
        .sync()
}
