//! Running one command inside this process, its input given and its output kept: how the MCP
//! server calls exactly the code the command line runs, with the same checks and the same JSON,
//! without starting a process per request.

use super::output::{self, Out};
use super::{Cli, Ctx};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::io::Read;

thread_local! {
    /// Standard input of the command running on this thread, when it is given as text.
    static INPUT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// What one command did.
#[derive(Debug)]
pub struct Invocation {
    /// The exit code the command line would have returned.
    pub code: i32,
    /// What it printed on standard output.
    pub stdout: String,
    /// The JSON error format when it failed (then `stdout` is empty).
    pub error: Option<Value>,
    /// Warnings it gave.
    pub warnings: Vec<String>,
}

/// Standard input for a command: the text given to [`invoke`], else the process's own.
pub(super) fn stdin() -> Box<dyn Read + Send> {
    match INPUT.with_borrow(Clone::clone) {
        Some(text) => Box::new(std::io::Cursor::new(text.into_bytes())),
        None => Box::new(std::io::stdin()),
    }
}

/// Reads `reader` to its end, or answers `None` as soon as it holds more than `limit` bytes:
/// an endless input (`/dev/zero`, a pipe that never closes) stops there instead of filling
/// memory.
///
/// # Errors
/// When reading fails.
pub(crate) fn read_at_most(reader: impl Read, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    reader.take(limit + 1).read_to_end(&mut buf)?;
    Ok((buf.len() as u64 <= limit).then_some(buf))
}

/// Whether standard input is a terminal (never when the input was given as text).
pub(super) fn stdin_is_terminal() -> bool {
    INPUT.with_borrow(Option::is_none) && std::io::IsTerminal::is_terminal(&std::io::stdin())
}

/// Runs `args` (program name first) as the command line would, with `input` as standard input
/// (empty when `None`: the process's own standard input is never read), printing nothing.
/// A panic in a command is reported as an internal error, never passed on.
pub fn invoke(args: Vec<String>, input: Option<String>) -> Invocation {
    INPUT.with_borrow_mut(|i| *i = Some(input.unwrap_or_default()));
    output::set_quiet(true);
    output::take_warnings();
    let json = args.iter().any(|a| a == "--json");
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(args, json)));
    let warnings = output::take_warnings();
    output::set_quiet(false);
    INPUT.with_borrow_mut(|i| *i = None);
    super::compact::start_due();
    match result {
        Ok(mut inv) => {
            inv.warnings = warnings;
            inv
        }
        Err(_) => Invocation {
            code: super::ExitCode::Io as i32,
            stdout: String::new(),
            error: Some(json!({"success": false, "error": {
                "code": "INTERNAL_ERROR",
                "message": "the command failed unexpectedly; the server keeps running. Run the same command with `memlog` to see the details",
                "details": {},
            }})),
            warnings,
        },
    }
}

fn run(args: Vec<String>, json: bool) -> Invocation {
    let failed = |code: i32, body: Value| Invocation {
        code,
        stdout: String::new(),
        error: Some(body),
        warnings: Vec::new(),
    };
    let matches = match Cli::command_with_name("memlog").try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => return failed(super::ExitCode::Usage as i32, output::usage_error_body(&e)),
    };
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return failed(super::ExitCode::Usage as i32, output::usage_error_body(&e)),
    };
    let mut out = Out::capture(json);
    let sources = super::Sources::of(&matches);
    match Ctx::new(cli.global, sources).and_then(|ctx| super::run(&ctx, cli.command, &mut out)) {
        Ok(code) => Invocation {
            code: {
                out.finish();
                code as i32
            },
            stdout: out.captured(),
            error: None,
            warnings: Vec::new(),
        },
        Err(e) => {
            crate::store::session::mark_damaged(&e);
            let (code, mut body) = output::error_body(&e);
            if let (Some(p), Some(details)) =
                (out.take_partial(), body["error"]["details"].as_object_mut())
            {
                details.insert("partial_results".into(), p);
            }
            failed(code, body)
        }
    }
}
