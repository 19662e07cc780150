//! The lines between the client and the MCP library. The library drops a line that is not JSON
//! without an answer (so a client waits forever); JSON-RPC answers it with a parse error. Every
//! line the client sends passes through here first: JSON goes on to the library, anything else
//! is answered `-32700` (id null), a line longer than [`MAX_LINE`] `-32600`, JSON that is not a
//! message the library can take (a batch, no `method`, another `jsonrpc` version) `-32600` with
//! its id, and a tool call whose `arguments` is not an object `-32602` (the library would say the
//! method is unknown), as is a tool call without `params`, or whose `name` is missing or not a
//! string. A blank line is no JSON either: it is answered `-32700` like any other. Every error
//! answer carries an `id` (null when the request's cannot be read), as JSON-RPC requires, and
//! the library's `-32601` (whose message is the bare method name) says `unknown method`. The
//! library's answers and these go out one whole line at a time.

use serde_json::{Value, json};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest request read, as for `memlog apply`'s input.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// Room in each pipe between here and the library.
const PIPE: usize = 1 << 20;

type Out = Arc<Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

async fn write_line(out: &Out, line: &[u8]) -> std::io::Result<()> {
    let mut out = out.lock().await;
    out.write_all(line).await?;
    if line.last() != Some(&b'\n') {
        out.write_all(b"\n").await?;
    }
    out.flush().await
}

fn error_line(id: &Value, code: i64, message: &str) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes()
}

/// Why `v` is not a request, notification or response the library can take, and the id to
/// answer with (the request's, when it is a string or a number).
fn invalid_request(v: &Value) -> Option<(Value, &'static str)> {
    let Some(m) = v.as_object() else {
        let why = if v.is_array() {
            "Invalid Request: batches are not supported; send one request per line"
        } else {
            "Invalid Request: a request is a JSON object"
        };
        return Some((Value::Null, why));
    };
    let id = match m.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some((id, "Invalid Request: `jsonrpc` must be \"2.0\""));
    }
    let response = m.contains_key("result") || m.contains_key("error");
    if !response && !m.get("method").is_some_and(Value::is_string) {
        return Some((id, "Invalid Request: `method` is missing or not a string"));
    }
    None
}

/// The library's answer `line`, amended: an error answer without an id gets `"id": null` (the
/// library answers some requests it cannot read so), and a `-32601`, whose message is the bare
/// method name, says that the method is unknown.
fn amended(line: &[u8]) -> Vec<u8> {
    let Ok(Value::Object(mut m)) = serde_json::from_slice::<Value>(line) else {
        return line.to_vec();
    };
    let Some(error) = m.get_mut("error") else {
        return line.to_vec();
    };
    if error["code"] == -32601
        && let Some(method) = error["message"].as_str()
    {
        // A method name that looks like a credential is not repeated.
        let message = if crate::policy::secret_scan::scan_text(method).is_empty() {
            format!("Method not found: unknown method `{method}`")
        } else {
            "Method not found: unknown method (not repeated: its name looks like a credential)"
                .to_owned()
        };
        error["message"] = message.into();
    }
    m.entry("id").or_insert(Value::Null);
    Value::Object(m).to_string().into_bytes()
}

/// Reads `input` line by line: JSON to `library`, anything else answered on `out`.
async fn pass_requests(
    input: impl AsyncRead + Unpin,
    mut library: impl AsyncWrite + Unpin,
    out: Out,
) -> std::io::Result<()> {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await?;
        if n == 0 {
            return Ok(());
        }
        if line.len() > MAX_LINE && line.last() != Some(&b'\n') {
            // The rest of the line is part of the same refused request.
            loop {
                let buf = input.fill_buf().await?;
                if buf.is_empty() {
                    break;
                }
                if let Some(i) = buf.iter().position(|b| *b == b'\n') {
                    input.consume(i + 1);
                    break;
                }
                let all = buf.len();
                input.consume(all);
            }
            let message = format!("Invalid Request: longer than {} MiB", MAX_LINE >> 20);
            write_line(&out, &error_line(&Value::Null, -32600, &message)).await?;
            continue;
        }
        let refused = match serde_json::from_slice::<Value>(&line) {
            // No JSON either; said plainly rather than as an end of input.
            Err(_) if line.iter().all(u8::is_ascii_whitespace) => Some(error_line(
                &Value::Null,
                -32700,
                "Parse error: a blank line is no JSON-RPC message; send one JSON request per line",
            )),
            Ok(v) => refusal(&v),
            // Valid JSON nested deeper than the parser goes: a request that can still be
            // answered by its id.
            Err(e) if e.to_string().starts_with("recursion limit exceeded") => Some(error_line(
                &top_level_id(&line).unwrap_or(Value::Null),
                -32600,
                "Invalid Request: nested more than 127 levels deep",
            )),
            Err(e) => Some(error_line(
                &Value::Null,
                -32700,
                &format!("Parse error: {e}"),
            )),
        };
        match refused {
            Some(answer) => write_line(&out, &answer).await?,
            None => {
                library.write_all(&line).await?;
                if line.last() != Some(&b'\n') {
                    library.write_all(b"\n").await?;
                }
                library.flush().await?;
            }
        }
    }
}

/// The `id` member of the top-level object of `line` when it is a number or a string, found
/// without parsing what is nested (which may be too deep to parse).
fn top_level_id(line: &[u8]) -> Option<Value> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let start = i;
                i += 1;
                while i < line.len() && line[i] != b'"' {
                    i += if line[i] == b'\\' { 2 } else { 1 };
                }
                let key = line.get(start..=i)?;
                let rest = line.get(i + 1..).unwrap_or_default();
                let colon = rest.iter().position(|b| !b.is_ascii_whitespace());
                if depth == 1
                    && key == b"\"id\""
                    && let Some(colon) = colon
                    && rest.get(colon) == Some(&b':')
                {
                    let mut stream = serde_json::Deserializer::from_slice(rest.get(colon + 1..)?)
                        .into_iter::<Value>();
                    return match stream.next()? {
                        Ok(v @ (Value::Number(_) | Value::String(_))) => Some(v),
                        _ => None,
                    };
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The answer to a JSON message the library must not see, if `v` is one.
fn refusal(v: &Value) -> Option<Vec<u8>> {
    if let Some((id, why)) = invalid_request(v) {
        return Some(error_line(&id, -32600, why));
    }
    // The library answers a request it cannot read with a bare "Invalid request" and a null
    // id, so that a client cannot tell which call failed: the reason and the id are given here.
    // (A notification, without an id, gets no answer.)
    let id = v.get("id")?;
    if id.is_number() && id.as_i64().is_none() {
        return Some(error_line(
            id,
            -32600,
            "Invalid Request: a numeric `id` must be an integer from -2^63 to 2^63-1; use a \
             smaller integer or a string",
        ));
    }
    if let Some(why) = unreadable_params(v) {
        return Some(error_line(id, -32602, &why));
    }
    // The library takes a tool call whose params it cannot read for an unknown method: it is
    // a call with invalid params.
    if v["method"] != "tools/call" {
        return None;
    }
    let params = &v["params"];
    let why = if !params.is_object() {
        "Invalid params: `params` must be an object with the `name` of the tool to call"
    } else if params.get("name").is_none_or(Value::is_null) {
        "Invalid params: `name` is missing: give the name of the tool to call (see tools/list)"
    } else if !params["name"].is_string() {
        "Invalid params: `name` must be a string, the name of the tool to call (see tools/list)"
    } else if params
        .get("arguments")
        .is_some_and(|a| !a.is_object() && !a.is_null())
    {
        "Invalid params: `arguments` must be an object"
    } else {
        return None;
    };
    Some(error_line(&v["id"], -32602, why))
}

/// Why the `params` of request `v` cannot be read, for any method: `params` that is not an
/// object, a `_meta` that is not one, or an `initialize` without the members it needs (which
/// the library answered as an unknown method).
fn unreadable_params(v: &Value) -> Option<String> {
    let method = v["method"].as_str().unwrap_or_default();
    let params = v.get("params").filter(|p| !p.is_null());
    if let Some(p) = params
        && !p.is_object()
    {
        return Some(format!(
            "Invalid params: `params` of `{}` must be an object",
            method.escape_debug()
        ));
    }
    if params
        .and_then(|p| p.get("_meta"))
        .is_some_and(|m| !m.is_object() && !m.is_null())
    {
        return Some("Invalid params: `params._meta` must be an object".into());
    }
    if method == "initialize" {
        let p = params.cloned().unwrap_or(Value::Null);
        let wanted = [
            ("protocolVersion", Value::is_string as fn(&Value) -> bool),
            ("capabilities", Value::is_object),
            ("clientInfo", Value::is_object),
        ];
        let missing: Vec<&str> = wanted
            .iter()
            .filter(|(name, ok)| !p.get(*name).is_some_and(ok))
            .map(|(name, _)| *name)
            .collect();
        if !missing.is_empty() {
            return Some(format!(
                "Invalid params: `initialize` needs `protocolVersion` (a string), \
                 `capabilities` and `clientInfo` (objects); missing or of the wrong type: {}",
                missing.join(", ")
            ));
        }
    }
    None
}

/// Copies the library's answers to `out`, line by line.
async fn pass_answers(library: impl AsyncRead + Unpin, out: Out) -> std::io::Result<()> {
    let mut library = BufReader::new(library);
    let mut line = Vec::new();
    loop {
        line.clear();
        if library.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        write_line(&out, &amended(&line)).await?;
    }
}

/// Runs `serve` on pipes framed as above between it and `input` / `output`; returns when the
/// client has closed its input and every answer is written.
///
/// # Errors
/// When reading or writing fails, or `serve` does.
pub async fn framed<F, Fut>(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Send + Unpin + 'static,
    serve: F,
) -> std::io::Result<()>
where
    F: FnOnce(tokio::io::DuplexStream, tokio::io::DuplexStream) -> Fut,
    Fut: std::future::Future<Output = std::io::Result<()>>,
{
    let out: Out = Arc::new(Mutex::new(Box::new(output)));
    let (to_library, library_in) = tokio::io::duplex(PIPE);
    let (library_out, from_library) = tokio::io::duplex(PIPE);
    let requests = tokio::spawn(pass_requests(input, to_library, Arc::clone(&out)));
    let answers = tokio::spawn(pass_answers(from_library, out));
    let served = serve(library_in, library_out).await;
    let joined = |r: Result<std::io::Result<()>, tokio::task::JoinError>| {
        r.map_err(std::io::Error::other).and_then(|r| r)
    };
    // The library has stopped (its input ended): every answer it wrote is in the pipe.
    let answered = joined(answers.await);
    requests.abort();
    served.and(answered)
}

#[cfg(test)]
mod tests {
    use super::top_level_id;
    use serde_json::{Value, json};

    #[test]
    fn the_top_level_id_is_found_past_any_depth() {
        let deep = format!("{}1{}", "[".repeat(500), "]".repeat(500));
        for (line, id) in [
            (
                format!(r#"{{"jsonrpc":"2.0","id":7,"params":{{"x":{deep}}}}}"#),
                json!(7),
            ),
            (
                format!(r#"{{"params":{{"id":1,"x":{deep}}},"id" : "a\"b"}}"#),
                json!("a\"b"),
            ),
            (format!(r#"{{"x":{deep}}}"#), Value::Null),
            (
                format!(r#"{{"id":{{"nested":1}},"x":{deep}}}"#),
                Value::Null,
            ),
        ] {
            assert_eq!(
                top_level_id(line.as_bytes()).unwrap_or(Value::Null),
                id,
                "{}",
                &line[..60]
            );
        }
    }
}
