//! `memlog mcp`: memory as Model Context Protocol tools over standard input and output.
//!
//! Each tool call runs the command it stands for inside this process ([`crate::cli::invoke`]),
//! so a tool checks, writes and answers exactly as the command line does. Nothing is held
//! between calls: every call opens the project, takes the store lock for its own length and
//! releases it, so `memlog` processes can write beside a running server.

mod framing;
pub mod tools;

use crate::cli::envelope;
use crate::cli::invoke::{Invocation, invoke};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// What the server tells a client about itself when it connects.
const INSTRUCTIONS: &str = "memlog is this repository's durable memory: decisions, state, \
observations and learnings recorded by agents, with evidence. Query it before deciding \
anything (`query`, or `context` with your task and memory_enabled true at the start of a \
task). Record what you learned with \
`create`; when an entry is no longer right, `supersede` it (replacement) or `deprecate` it (no \
replacement) rather than creating a contradicting one. Results are {success, results, \
warnings}; failures are {success: false, error: {code, message, details}}.";

/// The server: the global options every call runs with (workspace, project, actor, clock).
#[derive(Clone)]
pub struct Server {
    base: Arc<Vec<String>>,
    default_project: Option<String>,
    tools: Arc<Vec<tools::ToolDef>>,
    /// Tool calls run one at a time, in the order they take their turn (a fair, first-come
    /// lock): every call of a server works on the same stores and their file locks, so calls
    /// run side by side only waited for one another, each thread polling a lock another
    /// thread of the same process held (hundreds of pipelined calls timed out that way).
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl Server {
    /// A server whose calls run with `global_args` (e.g. `--workspace DIR`), and on
    /// `default_project` when a call names none.
    pub fn new(global_args: Vec<String>, default_project: Option<String>) -> Self {
        Self {
            base: Arc::new(global_args),
            default_project,
            tools: Arc::new(tools::all()),
            turn: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// The tools as MCP describes them.
    pub fn tool_list(&self) -> Vec<Tool> {
        self.tools
            .iter()
            .map(|t| {
                let schema = serde_json::to_value((t.schema)()).unwrap_or_else(|_| json!({}));
                let object = match schema {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                Tool::new(t.name, t.description, object).with_annotations(
                    ToolAnnotations::new()
                        .read_only(t.read_only)
                        .destructive(false)
                        .open_world(false),
                )
            })
            .collect()
    }

    /// Runs one tool call: the JSON result format, or the JSON error format as a tool error.
    pub fn call(&self, name: &str, arguments: Option<Map<String, Value>>) -> (bool, Value) {
        let Some(tool) = self.tools.iter().find(|t| t.name == name) else {
            let names: Vec<&str> = self.tools.iter().map(|t| t.name).collect();
            // A name that looks like a credential is not repeated.
            let shown = if crate::policy::secret_scan::scan_text(name).is_empty() {
                name
            } else {
                "[redacted]"
            };
            return (
                false,
                usage(
                    format!(
                        "there is no tool `{shown}`; the tools are {}",
                        names.join(", ")
                    ),
                    json!({"tool": shown}),
                ),
            );
        };
        let arguments = arguments.unwrap_or_default();
        if let Some(body) = unknown_arguments(tool, &arguments) {
            return (false, body);
        }
        let args_value = Value::Object(arguments);
        let (project, argv) = match (tool.argv)(args_value.clone()) {
            Ok(x) => x,
            Err(e) => {
                return (
                    false,
                    usage(
                        format!("tool `{name}`: {e}; see the tool's input schema"),
                        json!({"tool": name, "field": e.field, "constraint": e.constraint}),
                    ),
                );
            }
        };
        let mut args = vec!["memlog".to_owned(), "--json".to_owned()];
        args.extend(self.base.iter().cloned());
        if let Some(p) = project.or_else(|| self.default_project.clone()) {
            args.push(format!("--project={p}"));
        }
        let input = argv.input.clone();
        args.extend(argv.into_args());
        let inv = invoke(args, input);
        respond(tool, &args_value, inv)
    }
}

fn usage(message: String, details: Value) -> Value {
    json!({"success": false, "error": {"code": "USAGE_ERROR", "message": message, "details": details}})
}

/// Names every argument the tool's schema does not have, so that a misspelt filter is an error
/// instead of being ignored.
fn unknown_arguments(tool: &tools::ToolDef, arguments: &Map<String, Value>) -> Option<Value> {
    let schema = serde_json::to_value((tool.schema)()).ok()?;
    let known = schema.get("properties")?.as_object()?;
    let unknown: Vec<&String> = arguments
        .keys()
        .filter(|k| !known.contains_key(*k))
        .collect();
    if unknown.is_empty() {
        return None;
    }
    let mut allowed: Vec<&String> = known.keys().collect();
    allowed.sort();
    // A name that looks like a credential is not repeated.
    let (named, secret): (Vec<&String>, Vec<&String>) = unknown
        .iter()
        .partition(|k| crate::policy::secret_scan::scan_text(k).is_empty());
    let mut what = match named.len() {
        0 => String::new(),
        _ => format!(
            "unknown argument{} {}",
            if unknown.len() == 1 { "" } else { "s" },
            named
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if !secret.is_empty() {
        let n = secret.len();
        let count = match (named.is_empty(), n) {
            (true, 1) => "an unknown argument".to_owned(),
            (true, n) => format!("{n} unknown arguments"),
            (false, n) => format!(", and {n} more"),
        };
        what.push_str(&count);
        what.push_str(if n == 1 {
            " (not repeated: its name looks like a credential)"
        } else {
            " (not repeated: their names look like credentials)"
        });
    }
    Some(usage(
        format!(
            "tool `{}`: {what}; the arguments are {}",
            tool.name,
            allowed
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        json!({"tool": tool.name, "field": named.first(), "constraint": "unknown_argument"}),
    ))
}

/// The result of a call in the one JSON contract: `{success, results, warnings}`, or the error.
fn respond(tool: &tools::ToolDef, args: &Value, inv: Invocation) -> (bool, Value) {
    if let Some(mut error) = inv.error {
        if let Some(message) = error["error"]["message"].as_str() {
            let message = in_tool_terms(tool, message);
            // The command line's errors name an option; the tool's name its argument, in the
            // details too, as the errors of the arguments themselves do.
            if let Some(field) = named_argument(tool, &message)
                && error["error"]["details"]
                    .get("field")
                    .is_none_or(Value::is_null)
            {
                if !error["error"]["details"].is_object() {
                    error["error"]["details"] = json!({});
                }
                error["error"]["details"]["field"] = field.into();
            }
            error["error"]["message"] = message.into();
        }
        details_in_tool_terms(tool, &mut error["error"]["details"]);
        return (false, error);
    }
    let text = inv.stdout.trim_end();
    let mut body = match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) if v.get("success").is_some() && v.get("results").is_some() => v,
        Ok(v) => envelope(v, Vec::new()),
        Err(_) => envelope(Value::String(text.to_owned()), Vec::new()),
    };
    let mut more = inv.warnings;
    if let Some(post) = tool.post {
        post(args, &mut body["results"], &mut more);
    }
    if !more.is_empty() {
        // Merged by the contract's own rule (each message once).
        let mut with = envelope(Value::Null, more);
        let mut all = body["warnings"].as_array().cloned().unwrap_or_default();
        for w in with["warnings"]
            .as_array_mut()
            .map(std::mem::take)
            .unwrap_or_default()
        {
            if !all.iter().any(|x| x.get("message") == w.get("message")) {
                all.push(w);
            }
        }
        body["warnings"] = Value::Array(all);
    }
    // Warnings, too, name the tool's arguments rather than the command line's options.
    for w in body["warnings"].as_array_mut().into_iter().flatten() {
        if let Some(message) = w["message"].as_str() {
            w["message"] = in_tool_terms(tool, message).into();
        }
        if let Some(field) = w.get("field").and_then(Value::as_str) {
            w["field"] = field_in_tool_terms(tool, field).into();
        }
    }
    (true, body)
}

/// The fields of a memory entry that a tool takes under another name.
const ENTRY_FIELD_ARGUMENTS: [(&str, &str); 1] = [("related_entries", "related")];

/// The names of the tool's arguments.
fn argument_names(tool: &tools::ToolDef) -> Vec<String> {
    let schema = serde_json::to_value((tool.schema)()).unwrap_or_default();
    schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The entry fields of [`ENTRY_FIELD_ARGUMENTS`] that `tool` takes as another argument.
fn renamed_fields(tool: &tools::ToolDef) -> Vec<(&'static str, &'static str)> {
    let names = argument_names(tool);
    let has = |n: &str| names.iter().any(|x| x == n);
    ENTRY_FIELD_ARGUMENTS
        .into_iter()
        .filter(|(field, argument)| has(argument) && !has(field))
        .collect()
}

/// A field path of the command (`related_entries[0]`) as the tool's argument (`related[0]`).
fn field_in_tool_terms(tool: &tools::ToolDef, field: &str) -> String {
    for (name, argument) in renamed_fields(tool) {
        if let Some(rest) = field.strip_prefix(name)
            && (rest.is_empty() || rest.starts_with(['[', '.']))
        {
            return format!("{argument}{rest}");
        }
    }
    field.to_owned()
}

/// The details of a command's error in the tool's terms: fields named by the tool's arguments,
/// in the problems too, and nothing of the command line (its usage line, its option).
fn details_in_tool_terms(tool: &tools::ToolDef, details: &mut Value) {
    let Some(d) = details.as_object_mut() else {
        return;
    };
    d.remove("usage");
    if let Some(argument) = d.remove("argument").as_ref().and_then(Value::as_str) {
        // clap's `--from <DATE>`: the tool's `from`, if it has one.
        let flag = argument.split(' ').next().unwrap_or(argument);
        let name = flag.trim_start_matches('-').replace('-', "_");
        if flag.starts_with("--") && argument_names(tool).contains(&name) {
            d.insert("argument".into(), name.into());
        }
    }
    if let Some(field) = d.get("field").and_then(Value::as_str) {
        let field = field_in_tool_terms(tool, field);
        d.insert("field".into(), field.into());
    }
    for p in d
        .get_mut("problems")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(field) = p.get("field").and_then(Value::as_str) {
            p["field"] = field_in_tool_terms(tool, field).into();
        }
        if let Some(message) = p.get("message").and_then(Value::as_str) {
            p["message"] = in_tool_terms(tool, message).into();
        }
    }
}

/// clap quotes an option with the name of its value (`'--range <RANGE>'`): the bare option,
/// which [`in_tool_terms`] then names as the tool's argument.
fn unquoted_options(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find("'--") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let Some(j) = after.find('\'') else {
            out.push_str(&rest[i..]);
            rest = "";
            break;
        };
        let inner = &after[..j];
        let (flag, value) = inner.split_once(' ').unwrap_or((inner, ""));
        let is_flag = flag.len() > 2
            && flag[2..]
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        let is_value = value.is_empty()
            || (value.starts_with('<') && value.ends_with('>') && !value.contains(' '));
        if is_flag && is_value {
            out.push_str(flag);
        } else {
            out.push_str(&rest[i..=i + j + 1]);
        }
        rest = &after[j + 1..];
    }
    out.push_str(rest);
    out
}

/// The argument an error message in the tool's terms names first: `` `limit` `` or, for the
/// task of `context`, `` the task's `scope` `` (as `task.scope`).
fn named_argument(tool: &tools::ToolDef, message: &str) -> Option<String> {
    let names = argument_names(tool);
    let mut found: Vec<(usize, String)> = names
        .into_iter()
        .filter_map(|n| message.find(&format!("`{n}`")).map(|at| (at, n)))
        .collect();
    for field in ["scope", "subject", "goal"] {
        if let Some(at) = message.find(&format!("the task's `{field}`")) {
            found.push((at, format!("task.{field}")));
        }
    }
    found.sort();
    found.into_iter().next().map(|(_, n)| n)
}

/// An error message of the command line in the tool's terms: its options become the tool's
/// arguments (`--min-confidence` is `min_confidence`), and the command line's usage line, which
/// a client cannot use, goes.
fn in_tool_terms(tool: &tools::ToolDef, message: &str) -> String {
    let mut out = message.replace(
        "--project NAME (or MEMLOG_PROJECT)",
        "the `project` argument",
    );
    if let Some(i) = out.find("; usage: ") {
        out.truncate(i);
    }
    out = unquoted_options(&out);
    for (field, argument) in renamed_fields(tool) {
        out = out.replace(field, argument);
    }
    let mut names = argument_names(tool);
    // Longer names first: `--min-confidence` before a `--min` that may prefix it.
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    for name in names {
        let flag = format!("--{}", name.replace('_', "-"));
        // A positional argument goes by its value's name (`PATH`).
        let positional = format!("`{}`", name.to_uppercase());
        out = out
            .replace(&format!("`{flag}`"), &format!("`{name}`"))
            .replace(&flag, &format!("`{name}`"))
            .replace(&positional, &format!("`{name}`"));
    }
    out
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("memlog", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let server = self.clone();
        let name = request.name.to_string();
        let turn = self.turn.clone().lock_owned().await;
        // Commands block (file locks, fsync): run them off the protocol's thread.
        let (ok, body) = tokio::task::spawn_blocking(move || {
            let _turn = turn;
            server.call(&name, request.arguments)
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("tool call failed: {e}"), None))?;
        let text = serde_json::to_string_pretty(&body).unwrap_or_default();
        let mut result = if ok {
            CallToolResult::success(vec![ContentBlock::text(text)])
        } else {
            CallToolResult::error(vec![ContentBlock::text(text)])
        };
        result.structured_content = Some(body);
        Ok(result.into())
    }
}

/// Serves MCP on standard input and output until the client disconnects.
///
/// # Errors
/// When the runtime cannot start or the connection fails.
pub fn serve(server: Server) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(framing::framed(
        tokio::io::stdin(),
        tokio::io::stdout(),
        |input, output| async move {
            let running = server
                .serve((input, output))
                .await
                .map_err(std::io::Error::other)?;
            running.waiting().await.map_err(std::io::Error::other)?;
            Ok(())
        },
    ))
}
