//! The MCP tools of the lifecycle, git and transfer commands, driven by raw JSON-RPC lines
//! against `memlog mcp`: each answer is checked against the JSON Schema of the command the tool
//! runs (docs/schemas/commands/), as the Python client does for the others.

use crate::common::Env;
use serde_json::{Value, json};
use std::io::{BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout};

struct Client {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next: u64,
}

impl Client {
    /// `memlog mcp` with the global options `args`, initialized.
    fn start(env: &Env, args: &[&str]) -> Self {
        let (child, stdin, lines) = env.mcp(args);
        Self::initialized(child, stdin, lines)
    }

    /// A client of the server `child` talks to, once initialized.
    fn initialized(child: Child, stdin: ChildStdin, lines: Lines<BufReader<ChildStdout>>) -> Self {
        let mut c = Self {
            child,
            stdin,
            lines,
            next: 1,
        };
        c.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}),
        );
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        c
    }

    fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").unwrap_or_else(|e| panic!("{e}"));
        self.stdin.flush().unwrap_or_else(|e| panic!("{e}"));
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        for line in self.lines.by_ref() {
            let line = line.unwrap_or_else(|e| panic!("{e}"));
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if v["id"] == id {
                return v;
            }
        }
        panic!("the server closed its output before answering {method}");
    }

    /// Calls `tool` and checks its answer against the schema of `command`.
    #[track_caller]
    fn call(&mut self, tool: &str, command: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let body = r["result"]["structuredContent"].clone();
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(format!("docs/schemas/commands/{command}.schema.json"));
        let schema: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}")))
                .unwrap_or_else(|e| panic!("{e}"));
        let problems = memlog::cli::json_schema::problems(&schema, &body);
        assert!(
            problems.is_empty(),
            "tool {tool}: {}\n{body}",
            problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert_eq!(
            r["result"]["isError"] == true,
            body["success"] == false,
            "{r}"
        );
        body
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_lifecycle_git_and_transfer_tools_run_their_commands() {
    let env = Env::with_project();
    let id = env.add("auth.tokens", "Use short-lived tokens");
    let other = env.add("auth.refresh", "Refresh in the gateway");
    let mut c = Client::start(&env, &[]);

    let tools = c.request("tools/list", json!({}));
    let listed: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    for name in [
        "lifecycle_run",
        "lifecycle_report",
        "pinned",
        "purge",
        "check_freshness",
        "validate_evidence",
        "conflicts",
        "resolve",
        "sync_context",
        "export",
        "import",
        "stats",
    ] {
        assert!(listed.contains(&name), "{name} missing from {listed:?}");
    }

    // A dry run writes nothing: no run report afterwards.
    let v = c.call("lifecycle_run", "lifecycle-run", json!({"dry_run": true}));
    assert_eq!(v["results"]["dry_run"], true, "{v}");
    let v = c.call("lifecycle_report", "lifecycle-report", json!({}));
    assert!(v["results"]["last_run"].is_null(), "{v}");
    let v = c.call("lifecycle_run", "lifecycle-run", json!({}));
    assert_eq!(v["results"]["processed"], 2, "{v}");
    let v = c.call("lifecycle_report", "lifecycle-report", json!({}));
    assert_eq!(v["results"]["last_run"]["processed"], 2, "{v}");

    let v = c.call("stats", "stats", json!({"range": "7d"}));
    assert_eq!(v["results"]["range"]["label"], "7d", "{v}");
    assert!(
        v["results"]["statistics"]["lifecycle"]["last_run"].is_object(),
        "{v}"
    );
    let v = c.call("stats", "stats", json!({"range": "soon"}));
    assert_eq!(v["error"]["code"], "USAGE_ERROR", "{v}");

    env.run(&["pin", &id, "--reason", "core"]).ok();
    let v = c.call("pinned", "pinned", json!({}));
    assert_eq!(v["results"][0]["id"], id.as_str(), "{v}");

    let v = c.call("check_freshness", "check-freshness", json!({}));
    assert!(v["results"].is_array(), "{v}");
    let v = c.call(
        "validate_evidence",
        "validate-evidence",
        json!({"dry_run": true}),
    );
    assert_eq!(
        v["results"]["entries"].as_array().map(Vec::len),
        Some(2),
        "{v}"
    );

    let v = c.call("conflicts", "conflicts", json!({}));
    assert_eq!(v["results"], json!([]), "{v}");
    // Nothing to resolve: a refusal in the error format.
    let v = c.call("resolve", "resolve", json!({"id": id, "reason": "none"}));
    assert_eq!(v["success"], false, "{v}");

    let v = c.call("sync_context", "sync-context", json!({"check": true}));
    assert_eq!(v["results"]["up_to_date"], false, "{v}");
    let v = c.call("sync_context", "sync-context", json!({}));
    assert_eq!(v["results"]["written"], true, "{v}");

    let v = c.call(
        "export",
        "export",
        json!({"project": "demo", "path": "out/demo.jsonl", "format": "jsonl"}),
    );
    assert_eq!(v["results"]["entries"], 2, "{v}");
    env.run(&["init", "copy"]).ok();
    let v = c.call(
        "import",
        "import",
        json!({"project": "copy", "path": "out/demo.jsonl"}),
    );
    assert_eq!(
        v["results"]["imported"].as_array().map(Vec::len),
        Some(2),
        "{v}"
    );
    let v = c.call("import", "import", json!({"project": "copy", "path": "-"}));
    assert_eq!(v["error"]["code"], "USAGE_ERROR", "{v}");
    // Keys an evidence object does not have are refused, as by `apply`.
    let v = c.call(
        "create",
        "add",
        json!({"project": "copy", "section": "learnings", "kind": "other", "subject": "a.b",
            "scope": "repo", "summary": "s", "content": "c", "confidence": 0.8,
            "evidence": [{"type": "doc", "uri": "docs/a.md", "note": "n", "extra": 1}]}),
    );
    assert_eq!(v["error"]["code"], "USAGE_ERROR", "{v}");
    // A tool reads inside the workspace only, links resolved.
    let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::copy(
        env.root().join("out/demo.jsonl"),
        outside.path().join("demo.jsonl"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path(), env.root().join("outdir"))
            .unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(env.root().join("out"), env.root().join("indir"))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let v = c.call(
        "import",
        "import",
        json!({"project": "copy", "path": "indir/demo.jsonl"}),
    );
    assert_eq!(v["success"], true, "{v}");
    for path in [
        "/etc/passwd",
        "../outside.jsonl",
        "out/../../outside.jsonl",
        "outdir/demo.jsonl",
    ] {
        let v = c.call("import", "import", json!({"project": "copy", "path": path}));
        assert_eq!(v["error"]["code"], "USAGE_ERROR", "{path}: {v}");
    }
    // Nor is git's.
    std::fs::create_dir_all(env.root().join(".git")).unwrap_or_else(|e| panic!("{e}"));
    let v = c.call(
        "export",
        "export",
        json!({"project": "demo", "path": ".git/HEAD", "format": "events"}),
    );
    assert_eq!(v["error"]["code"], "USAGE_ERROR", "{v}");
    assert!(!env.root().join(".git/HEAD").exists());
    // Nor is a file named after a credential written.
    let v = c.call(
        "export",
        "export",
        json!({"project": "demo", "path": "ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE0000", "format": "jsonl"}),
    );
    assert_eq!(v["error"]["code"], "USAGE_ERROR", "{v}");
    assert!(!v.to_string().contains("ghp_FAKE"), "{v}");
    assert!(
        !env.root()
            .join("ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE0000")
            .exists()
    );

    let v = c.call(
        "purge",
        "purge",
        json!({"id": other, "reason": "pasted by mistake", "dry_run": true, "project": "demo"}),
    );
    assert_eq!(v["results"]["id"], other.as_str(), "{v}");
    assert_eq!(
        env.run(&["--project", "demo", "list", "--json"])
            .ok()
            .json()
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    let v = c.call(
        "purge",
        "purge",
        json!({"id": other, "reason": "pasted by mistake", "project": "demo"}),
    );
    assert_eq!(v["success"], true, "{v}");
    let v = c.call(
        "purge",
        "purge",
        json!({"id": "m-zzzzzzzzzz", "reason": "x", "project": "demo"}),
    );
    assert_eq!(v["error"]["code"], "NOT_FOUND", "{v}");
}

#[test]
fn export_and_import_work_on_the_servers_project_when_a_call_names_none() {
    let env = Env::with_project();
    env.add("auth.tokens", "Use short-lived tokens");
    env.run(&["init", "copy"]).ok();
    let mut c = Client::start(&env, &["--project", "demo"]);
    let v = c.call(
        "export",
        "export",
        json!({"path": "out/demo.jsonl", "format": "jsonl"}),
    );
    assert_eq!(v["results"]["entries"], 1, "{v}");
    let v = c.call(
        "import",
        "import",
        json!({"path": "out/demo.jsonl", "project": "copy"}),
    );
    assert_eq!(
        v["results"]["imported"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );
    // Into the server's project: the entry is there already.
    let v = c.call("import", "import", json!({"path": "out/demo.jsonl"}));
    assert_eq!(
        v["results"]["skipped"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );
    // The command line takes the project the same way.
    let r = env
        .run(&["--project", "copy", "export", "out/copy.json", "--json"])
        .ok();
    assert_eq!(r.json()["entries"], 1, "{}", r.stdout);
}

/// A server started elsewhere with `--workspace` takes tool paths relative to the workspace
/// root, as MCP.md says, not to the directory it was started in.
#[test]
fn tool_paths_are_relative_to_the_workspace_root() {
    let env = Env::with_project();
    env.add("auth.tokens", "Use short-lived tokens");
    let elsewhere = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = env.root().display().to_string();
    let mut command = env.command(&["--workspace", &root, "--project", "demo", "mcp"]);
    let mut child = command
        .current_dir(elsewhere.path())
        .env_remove("MEMLOG_WORKSPACE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("stdout"));
    let mut c = Client::initialized(
        child,
        stdin,
        std::io::BufRead::lines(BufReader::new(stdout)),
    );
    let v = c.call(
        "export",
        "export",
        json!({"path": "out.jsonl", "format": "jsonl"}),
    );
    assert_eq!(v["results"]["entries"], 1, "{v}");
    assert!(env.root().join("out.jsonl").is_file());
    assert!(!elsewhere.path().join("out.jsonl").exists());
}

/// A directory import over MCP reads no file that a link leads out of the workspace to.
#[cfg(unix)]
#[test]
fn a_directory_import_reads_no_link_leading_outside() {
    let env = Env::with_project();
    let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let record = json!({"section": "learnings", "kind": "other", "subject": "o.s",
        "scope": "repo", "summary": "OUTSIDE record", "content": "x", "confidence": 0.9,
        "evidence": [{"type": "code", "uri": "a", "note": "n"}]});
    std::fs::write(outside.path().join("o.json"), record.to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = env.root().join("in");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(outside.path().join("o.json"), dir.join("a.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut c = Client::start(&env, &["--project", "demo"]);
    let v = c.call("import", "import", json!({"path": "in"}));
    assert_eq!(v["results"]["imported"], json!([]), "{v}");
    assert!(
        v["results"]["rejected"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("outside the workspace")),
        "{v}"
    );
    assert!(!env.run(&["list"]).ok().stdout.contains("OUTSIDE"));
}

/// Calls sent without waiting for answers all succeed, and run in the order they were sent:
/// a query sent right behind a create sees it. (Run side by side, hundreds of them timed out
/// waiting for the store lock their own server held.)
#[test]
fn pipelined_calls_all_succeed_in_order() {
    let env = Env::with_project();
    let mut c = Client::start(&env, &["--project", "demo", "--lock-timeout", "2000"]);
    let n: u64 = 120;
    for i in 0..n {
        let (name, args) = if i % 2 == 0 {
            (
                "create",
                json!({"section": "learnings", "kind": "other", "subject": format!("s.{i}"),
                       "scope": "repo", "summary": format!("Pipelined note {i}"),
                       "content": "x", "confidence": 0.9,
                       "evidence": [{"type": "code", "uri": "src/a.rs", "note": "n"}]}),
            )
        } else {
            (
                "query",
                json!({"text": format!("pipelined note {}", i - 1)}),
            )
        };
        c.send(
            json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call",
                      "params": {"name": name, "arguments": args}}),
        );
    }
    let mut answers = std::collections::HashMap::new();
    for line in c.lines.by_ref() {
        let v: Value = serde_json::from_str(&line.unwrap_or_default()).unwrap_or_default();
        if let Some(id) = v["id"].as_u64() {
            answers.insert(id, v);
        }
        if answers.len() as u64 == n {
            break;
        }
    }
    for i in 0..n {
        let r = &answers[&(1000 + i)];
        assert_ne!(r["result"]["isError"], true, "call {i}: {r}");
        if i % 2 == 1 {
            let body = &r["result"]["structuredContent"];
            let summaries: Vec<&str> = body["results"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|h| h["summary"].as_str())
                .collect();
            let wanted = format!("Pipelined note {}", i - 1);
            assert!(summaries.contains(&wanted.as_str()), "call {i}: {body}");
        }
    }
}

/// What the command line says as a note reaches an MCP client as a warning: after a purge, that
/// the content stays in the log until `gc`.
#[test]
fn notes_reach_the_client_as_warnings() {
    let env = Env::with_project();
    let id = env.add("leak", "Pasted by mistake");
    let mut c = Client::start(&env, &["--project", "demo"]);
    let v = c.call("purge", "purge", json!({"id": id, "reason": "mistake"}));
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("gc"), "{v}");
}

/// A tool without arguments refuses one it does not know, as every other tool does.
#[test]
fn a_tool_without_arguments_refuses_unknown_ones() {
    let env = Env::with_project();
    let mut c = Client::start(&env, &["--project", "demo"]);
    let r = c.request(
        "tools/call",
        json!({"name": "projects", "arguments": {"x": 1}}),
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(r.to_string().contains("x"), "{r}");
}

/// Errors found by the command behind a tool name the tool's argument, in the message and in
/// `details.field`, the task's fields included.
#[test]
fn command_errors_name_the_argument_in_the_details() {
    let env = Env::with_project();
    let mut c = Client::start(&env, &["--project", "demo"]);
    let r = c.request(
        "tools/call",
        json!({"name": "query", "arguments": {"text": "x", "min_confidence": -0.5}}),
    );
    let error = &r["result"]["structuredContent"]["error"];
    assert_eq!(error["details"]["field"], "min_confidence", "{r}");
    let r = c.request(
        "tools/call",
        json!({"name": "context", "arguments": {"task": {"goal": "deploy", "memory_enabled": true, "scope": "bad"}}}),
    );
    let error = &r["result"]["structuredContent"]["error"];
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("the task's `scope`"),
        "{r}"
    );
    assert_eq!(error["details"]["field"], "task.scope", "{r}");
}

/// An unknown tool is named, unless its name looks like a credential.
#[test]
fn an_unknown_tool_named_like_a_credential_is_not_repeated() {
    let env = Env::with_project();
    let mut c = Client::start(&env, &["--project", "demo"]);
    let fake = format!("ghp_{}", "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4");
    let r = c.request("tools/call", json!({"name": fake, "arguments": {}}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(!r.to_string().contains(&fake), "{r}");
    let r = c.request("tools/call", json!({"name": "qurey", "arguments": {}}));
    assert!(r.to_string().contains("there is no tool `qurey`"), "{r}");
}

/// A private key pasted into the `create` tool's arguments is redacted whole, its body and END
/// line included, in what the tool answers.
#[test]
fn the_create_tool_redacts_a_private_key_whole() {
    use crate::common::{FAKE_KEY_BODY, fake_key_block};
    let env = Env::with_project();
    let mut c = Client::start(&env, &["--project", "demo"]);
    let key = fake_key_block(true);
    let r = c.request(
        "tools/call",
        json!({"name": "create", "arguments": {"section": "learnings", "kind": key,
            "subject": "s", "scope": key, "summary": "s", "content": "c", "confidence": 0.9,
            "valid_from": key, "evidence": [{"type": "doc", "uri": "docs/a.md", "note": "n"}]}}),
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r.to_string();
    assert!(text.contains("`kind` is `[redacted]`"), "{r}");
    assert!(
        !text.contains(FAKE_KEY_BODY) && !text.contains("END RSA"),
        "{r}"
    );
}

/// Errors name the tool's arguments, not the command line's options.
#[test]
fn errors_name_the_tools_arguments() {
    let env = Env::with_project();
    let mut c = Client::start(&env, &["--project", "demo"]);
    let v = c.call("query", "query", json!({"text": "x", "limit": 0}));
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`limit`") && !message.contains("--limit"),
        "{v}"
    );
    let v = c.call(
        "query",
        "query",
        json!({"text": "x", "min_confidence": 1, "max_confidence": 0}),
    );
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`min_confidence`") && !message.contains("--"),
        "{v}"
    );
}

/// The query tool's schema states the bounds the server checks.
#[test]
fn the_query_schema_states_the_limit_bounds() {
    let env = Env::with_project();
    let mut c = Client::start(&env, &["--project", "demo"]);
    let r = c.request("tools/list", json!({}));
    let query = r["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["name"] == "query")
        .cloned()
        .unwrap_or_default();
    let limit = &query["inputSchema"]["properties"]["limit"];
    assert_eq!(limit["minimum"], 1, "{limit}");
    assert_eq!(limit["maximum"], 50, "{limit}");
}

/// A fake token, as an agent might paste into the wrong argument.
const TOKEN: &str = "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5";

/// An argument of the wrong type or value is named by its JSON path with what it must be, and
/// its value is never repeated (a credential pasted into the wrong argument stays unsaid).
#[test]
fn argument_errors_name_the_argument_and_never_repeat_its_value() {
    let env = Env::with_project();
    let mut c = Client::start(&env, &["--project", "demo"]);
    let evidence = |e: Value| json!({"summary": "s", "evidence": [e]});
    // (tool, command, arguments, path named, words of the message, value never repeated)
    let cases = [
        (
            "query",
            json!({"text": "token", "limit": TOKEN}),
            "limit",
            "`limit` must be a whole number from 0 to 4294967295, not a string",
            TOKEN,
        ),
        (
            "query",
            json!({"text": "token", "min_confidence": TOKEN}),
            "min_confidence",
            "`min_confidence` must be a number, not a string",
            TOKEN,
        ),
        (
            "list",
            json!({"section": {"x": TOKEN}}),
            "section",
            "`section` must be an array, not an object",
            TOKEN,
        ),
        (
            "create",
            json!({"summary": 31337}),
            "summary",
            "`summary` must be a string, not an integer",
            "31337",
        ),
        (
            "create",
            json!({"evidence": {"uri": TOKEN}}),
            "evidence",
            "`evidence` must be an array, not an object",
            TOKEN,
        ),
        (
            "update",
            json!({"id": "m-1", "evidence": [{"type": "code", "uri": 31337, "note": "n"}]}),
            "evidence[0].uri",
            "`evidence[0].uri` must be a string, not an integer",
            "31337",
        ),
        (
            "context",
            json!({"task": {}, "format": TOKEN}),
            "format",
            "`format` must be one of `json`, `prompt`",
            TOKEN,
        ),
        (
            "context",
            json!({"task": {}, "format": 31337}),
            "format",
            "`format` must be one of `json`, `prompt`",
            "31337",
        ),
        (
            "import",
            json!({"path": "x.json", "conflict_strategy": TOKEN}),
            "conflict_strategy",
            "`conflict_strategy` must be one of `skip`, `merge`, `overwrite`",
            TOKEN,
        ),
        (
            "show",
            json!({"id": ["m-1", TOKEN]}),
            "id",
            "`id` must be a string, not an array",
            TOKEN,
        ),
        (
            "audit",
            json!({"limit": -31337}),
            "limit",
            "`limit` must be a whole number from 0 to 4294967295",
            "31337",
        ),
        (
            "create",
            evidence(json!({"type": "code", "uri": "src/a.rs", "note": "n", TOKEN: 1})),
            "evidence[0]",
            "an unknown argument in `evidence[0]`; the arguments there are `type`, `uri`, `note`",
            TOKEN,
        ),
    ];
    for (tool, args, path, words, value) in cases {
        let v = c.call(
            tool,
            match tool {
                "create" => "add",
                "context" => "context",
                other => other,
            },
            args.clone(),
        );
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(v["error"]["code"], "USAGE_ERROR", "{tool} {args}: {v}");
        assert!(message.contains(words), "{tool} {args}: {message}");
        assert_eq!(v["error"]["details"]["field"], path, "{tool} {args}: {v}");
        assert!(!v.to_string().contains(value), "{tool} {args}: {v}");
    }
    // An unknown field that is not a credential is named.
    let v = c.call(
        "create",
        "add",
        evidence(json!({"type": "code", "uri": "src/a.rs", "note": "n", "line": 1})),
    );
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("unknown argument `evidence[0].line`"),
        "{v}"
    );
    // An unknown top-level argument named like a credential is not repeated either.
    let v = c.call("query", "query", json!({"text": "x", TOKEN: 1, "limt": 2}));
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("unknown arguments `limt`, and 1 more"),
        "{v}"
    );
    assert!(!v.to_string().contains(TOKEN), "{v}");
    let v = c.call("query", "query", json!({TOKEN: 1}));
    assert!(!v.to_string().contains(TOKEN), "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("an unknown argument"),
        "{v}"
    );
}

/// The list tool says in `warnings` when entries were left out, in the tool's terms.
#[test]
fn the_list_tool_says_when_entries_were_left_out() {
    let env = Env::with_project();
    for i in 0..3 {
        env.add(&format!("auth.step{i}"), "A step");
    }
    let mut c = Client::start(&env, &["--project", "demo"]);
    let v = c.call("list", "list", json!({"limit": 2}));
    assert_eq!(v["results"].as_array().map(Vec::len), Some(2), "{v}");
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains("showing 2 of 3 entries; use `limit` N or `all`"),
        "{v}"
    );
    let v = c.call("list", "list", json!({"limit": 3}));
    assert_eq!(v["warnings"], json!([]), "{v}");
}

/// A query budget too small for even the first result says so and names the budget the first
/// result needs (which then holds it), rather than that lower-ranked results were left out.
#[test]
fn a_query_budget_too_small_for_any_result_names_the_budget_needed() {
    let env = Env::with_project();
    for i in 0..3 {
        env.add(&format!("auth.step{i}"), "Rotate the signing keys");
    }
    let mut c = Client::start(&env, &["--project", "demo"]);
    let all = c.call("query", "query", json!({"text": "signing keys"}));
    let first = all["results"][0].clone();
    let needed = memlog::retrieval::budget::estimate_tokens(&first.to_string());
    let v = c.call(
        "query",
        "query",
        json!({"text": "signing keys", "budget": 5}),
    );
    assert_eq!(v["results"], json!([]), "{v}");
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains(&format!(
            "the token budget of 5 is too small for any entry: the first needs a budget of {needed}"
        )),
        "{v}"
    );
    assert!(!warnings.contains("lower-ranked"), "{v}");
    let v = c.call(
        "query",
        "query",
        json!({"text": "signing keys", "budget": needed}),
    );
    assert_eq!(v["results"].as_array().map(Vec::len), Some(1), "{v}");
    assert!(
        v["warnings"]
            .to_string()
            .contains("2 lower-ranked results were left out"),
        "{v}"
    );
}

/// The create tool refuses a bidirectional override as `add` does, naming the field and the
/// character.
#[test]
fn the_create_tool_refuses_a_bidirectional_override() {
    let env = Env::with_project();
    let mut c = Client::start(&env, &["--project", "demo"]);
    let body = c.call(
        "create",
        "add",
        json!({"section": "learnings", "kind": "other", "subject": "s", "scope": "repo",
               "summary": "admin \u{202e}eurt = nimda", "content": "c", "confidence": 0.7,
               "evidence": [{"type": "doc", "uri": "d.md", "note": "n"}]}),
    );
    assert_eq!(body["success"], false, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("`summary` contains U+202E"), "{body}");
}

/// Errors of the command behind a tool name the tool's arguments only: an entry's
/// `related_entries` is the tool's `related`, clap's `'--range <RANGE>'` is `range`, and
/// neither the command line's usage line nor its options are in the details.
#[test]
fn command_errors_speak_of_the_tools_arguments_only() {
    let env = Env::with_project();
    let id = env.add("a", "first");
    let mut c = Client::start(&env, &["--project", "demo"]);
    let entry = json!({"section": "learnings", "kind": "other", "subject": "s", "scope": "repo",
        "summary": "x", "content": "c", "confidence": 0.7, "related": ["x"],
        "evidence": [{"type": "doc", "uri": "d.md", "note": "n"}]});
    let created = c.call("create", "add", entry);
    let updated = c.call("update", "update", json!({"id": id, "related": ["x"]}));
    for body in [&created, &updated] {
        let error = &body["error"];
        assert_eq!(error["details"]["field"], "related[0]", "{body}");
        assert_eq!(
            error["details"]["problems"][0]["field"], "related[0]",
            "{body}"
        );
        assert!(!body.to_string().contains("related_entries"), "{body}");
    }
    let body = c.call(
        "stats",
        "stats",
        json!({"range": "7d", "from": "2026-01-01"}),
    );
    let error = &body["error"];
    assert_eq!(
        error["message"], "the argument `range` cannot be used with `from`",
        "{body}"
    );
    assert!(error["details"].get("usage").is_none(), "{body}");
    assert!(!body.to_string().contains("--"), "{body}");
    let before = std::fs::read_dir(env.root()).map(Iterator::count).ok();
    let body = c.call("export", "export", json!({"path": ""}));
    assert_eq!(body["error"]["code"], "USAGE_ERROR", "{body}");
    assert_eq!(body["error"]["details"]["field"], "path", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("`path` is empty")),
        "{body}"
    );
    assert_eq!(
        std::fs::read_dir(env.root()).map(Iterator::count).ok(),
        before
    );
}
