//! The lines between the client and the MCP library. The library drops a line that is not JSON
//! without an answer (so a client waits forever); JSON-RPC answers it with a parse error. Every
//! line the client sends passes through here first: JSON goes on to the library, anything else
//! is answered `-32700` (id null), a line longer than [`MAX_LINE`] `-32600`, and a tool call
//! whose `arguments` is not an object `-32602` (the library would say the method is unknown).
//! The library's answers and these go out one whole line at a time.

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

fn error_line(code: i64, message: &str) -> Vec<u8> {
    serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes()
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
            write_line(&out, &error_line(-32600, &message)).await?;
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<serde_json::Value>(&line) {
            // The library takes a call whose `arguments` is not an object for an unknown
            // method: it is a call with invalid params.
            Ok(v)
                if v.get("id").is_some()
                    && v["method"] == "tools/call"
                    && v["params"]
                        .get("arguments")
                        .is_some_and(|a| !a.is_object() && !a.is_null()) =>
            {
                let answer = serde_json::json!({"jsonrpc": "2.0", "id": v["id"], "error": {
                    "code": -32602,
                    "message": "Invalid params: `arguments` must be an object"}});
                write_line(&out, answer.to_string().as_bytes()).await?;
            }
            Ok(_) => {
                library.write_all(&line).await?;
                if line.last() != Some(&b'\n') {
                    library.write_all(b"\n").await?;
                }
                library.flush().await?;
            }
            Err(e) => write_line(&out, &error_line(-32700, &format!("Parse error: {e}"))).await?,
        }
    }
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
        write_line(&out, &line).await?;
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
