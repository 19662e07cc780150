//! `memlog mcp`: driven by the official MCP Python SDK (tests/mcp_client.py, in the virtual
//! environment `.ci/run` makes at target/mcp-venv), and by raw JSON-RPC lines for a clean
//! shutdown.

use crate::common::{Env, bin};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// The Python of the test virtual environment: $MEMLOG_MCP_PYTHON, else target/mcp-venv.
fn venv_python() -> PathBuf {
    if let Some(p) = std::env::var_os("MEMLOG_MCP_PYTHON") {
        return PathBuf::from(p);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mcp-venv/bin/python")
}

#[test]
#[expect(
    clippy::print_stderr,
    reason = "a skipped test says why, in the test output"
)]
fn the_official_python_client_creates_queries_and_is_refused_a_credential() {
    let python = venv_python();
    if !python.is_file() {
        let has_python3 = Command::new("python3").arg("--version").output().is_ok();
        eprintln!(
            "SKIPPED mcp client test: {} (python3 {}); `.ci/run` creates it with \
             `python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install mcp jsonschema`",
            if has_python3 {
                format!("no virtual environment at {}", python.display())
            } else {
                "python3 is not installed".to_owned()
            },
            if has_python3 { "found" } else { "missing" },
        );
        return;
    }
    let env = Env::with_project();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(bin())
        .arg(env.root())
        .current_dir(env.root())
        .env_remove("MEMLOG_PROJECT")
        .env_remove("MEMLOG_WORKSPACE")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("ok"),
        "tests/mcp_client.py failed\nstdout: {stdout}\nstderr: {stderr}"
    );
}

/// Reads JSON-RPC lines until the response with `id`.
fn response(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    id: u64,
) -> serde_json::Value {
    for line in lines {
        let line = line.unwrap_or_else(|e| panic!("{e}"));
        let v: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {line}"));
        if v["id"] == id {
            return v;
        }
    }
    panic!("the server closed its output before answering request {id}");
}

#[test]
fn the_server_answers_json_rpc_and_exits_when_its_input_closes() {
    let env = Env::with_project();
    let (mut child, mut stdin, mut lines) = env.mcp(&[]);
    let mut send = |v: serde_json::Value| {
        writeln!(stdin, "{v}").unwrap_or_else(|e| panic!("{e}"));
        stdin.flush().unwrap_or_else(|e| panic!("{e}"));
    };
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}),
    );
    let init = response(&mut lines, 1);
    assert_eq!(init["result"]["serverInfo"]["name"], "memlog", "{init}");
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let tools = response(&mut lines, 2);
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{tools}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for expected in [
        "query",
        "create",
        "supersede",
        "deprecate",
        "context",
        "validate",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    // Arguments of the wrong type are a tool error, and the server goes on.
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "query", "arguments": {"limit": "many"}}}),
    );
    let bad = response(&mut lines, 3);
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert_eq!(
        bad["result"]["structuredContent"]["error"]["code"], "USAGE_ERROR",
        "{bad}"
    );
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "stats", "arguments": {}}}),
    );
    let stats = response(&mut lines, 4);
    assert_eq!(
        stats["result"]["structuredContent"]["success"], true,
        "{stats}"
    );
    // Lines that are not JSON get a parse error (id null), and the server goes on.
    for raw in [
        "not json",
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{"limit":1e400}}}"#,
    ] {
        writeln!(stdin, "{raw}").unwrap_or_else(|e| panic!("{e}"));
    }
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"list","arguments":[1,2]}}}}"#
    )
    .unwrap_or_else(|e| panic!("{e}"));
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":5,"method":"ping"}}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    stdin.flush().unwrap_or_else(|e| panic!("{e}"));
    let mut parse_errors = 0;
    let mut invalid_params = 0;
    loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("the server stopped"))
            .unwrap_or_else(|e| panic!("{e}"));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}"));
        if v["error"]["code"] == -32700 {
            assert!(v["id"].is_null(), "{v}");
            parse_errors += 1;
        }
        if v["id"] == 6 {
            assert_eq!(v["error"]["code"], -32602, "{v}");
            invalid_params += 1;
        }
        if v["id"] == 5 {
            break;
        }
    }
    assert_eq!((parse_errors, invalid_params), (2, 1));

    drop(stdin);
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("{e}")) {
            assert!(status.success(), "the server exited with {status}");
            break;
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the server did not exit after its input closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn every_invalid_request_is_answered_with_its_id() {
    let env = Env::with_project();
    let (mut child, mut stdin, mut lines) = env.mcp(&[]);
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{{"name":"list","arguments":{{"x":{}1{}}}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    // Each line and the id its answer carries.
    let cases = [
        (deep.as_str(), json!(13)),
        (r#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#, json!(null)),
        (r#"{"jsonrpc":"2.0","id":9}"#, json!(9)),
        (r#"{"jsonrpc":"1.0","id":10,"method":"ping"}"#, json!(10)),
        (r#"{"id":"eleven","method":"ping"}"#, json!("eleven")),
        (r#"{"jsonrpc":"2.0","id":12,"method":7}"#, json!(12)),
        (r#"{"jsonrpc":"2.0","id":{"x":1}}"#, json!(null)),
        ("42", json!(null)),
    ];
    for (line, _) in &cases {
        writeln!(stdin, "{line}").unwrap_or_else(|e| panic!("{e}"));
    }
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":99,"method":"ping"}}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    stdin.flush().unwrap_or_else(|e| panic!("{e}"));
    let mut answers = Vec::new();
    for line in lines.by_ref() {
        let v: serde_json::Value =
            serde_json::from_str(&line.unwrap_or_else(|e| panic!("{e}"))).unwrap_or_default();
        if v["id"] == 99 {
            break;
        }
        answers.push(v);
    }
    assert_eq!(answers.len(), cases.len(), "{answers:?}");
    for (v, (line, id)) in answers.iter().zip(&cases) {
        assert_eq!(v["error"]["code"], -32600, "{line}: {v}");
        assert_eq!(v.get("id"), Some(id), "{line}: {v}");
    }
    assert!(
        answers[1]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("batches are not supported")),
        "{}",
        answers[1]
    );
    drop(stdin);
    let _ = child.wait();
}

/// A tool call without a readable `name` (or without `params`) is a call with invalid params,
/// naming what is wrong; an unknown method says so; a blank line, which is no JSON, gets a parse
/// error: every line gets an answer.
#[test]
fn bad_tool_calls_unknown_methods_and_blank_lines_are_answered() {
    let env = Env::with_project();
    let (mut child, mut stdin, mut lines) = env.mcp(&[]);
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
    )
    .unwrap_or_else(|e| panic!("{e}"));
    stdin.flush().unwrap_or_else(|e| panic!("{e}"));
    response(&mut lines, 1);
    for line in [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"ping","params":[]}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":5}"#,
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"list","arguments":{},"_meta":5}}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"initialize","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#,
        "",
        "   ",
    ] {
        writeln!(stdin, "{line}").unwrap_or_else(|e| panic!("{e}"));
    }
    drop(stdin);
    let answers: Vec<serde_json::Value> = lines
        .map(|l| serde_json::from_str(&l.unwrap_or_else(|e| panic!("{e}"))).unwrap_or_default())
        .collect();
    let _ = child.wait();
    let answer = |id: u64| {
        answers
            .iter()
            .find(|v| v["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {answers:?}"))
    };
    for (id, named) in [
        (2, "`name` is missing"),
        (3, "`name` must be a string"),
        (4, "`params`"),
        (6, "`params` of `ping` must be an object"),
        (7, "`params` of `tools/list` must be an object"),
        (8, "`params._meta` must be an object"),
        (
            9,
            "missing or of the wrong type: protocolVersion, capabilities, clientInfo",
        ),
    ] {
        let v = answer(id);
        assert_eq!(v["error"]["code"], -32602, "{v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(named), "{v}");
    }
    let huge = answers
        .iter()
        .find(|v| v["id"] == json!(18_446_744_073_709_551_615_u64))
        .unwrap_or_else(|| panic!("no answer to the huge id: {answers:?}"));
    assert_eq!(huge["error"]["code"], -32600, "{huge}");
    let v = answer(5);
    assert_eq!(v["error"]["code"], -32601, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown method `x`")),
        "{v}"
    );
    let blank: Vec<&serde_json::Value> = answers
        .iter()
        .filter(|v| v["id"].is_null() && v["error"]["code"] == -32700)
        .collect();
    assert_eq!(blank.len(), 2, "{answers:?}");
}

#[test]
fn a_missing_workspace_is_refused_before_serving() {
    let env = Env::new();
    let r = env.run(&["mcp", "--workspace", "/nonexistent/memlog-ws"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("mcp --workspace /nonexistent/memlog-ws"),
        "{}",
        r.stderr
    );
}
