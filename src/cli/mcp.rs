//! `memlog mcp`: serve memory as MCP tools over standard input and output (see docs/MCP.md).

use super::{Ctx, ExitCode, Out};
use crate::error::{Error, Result};

// Options of `memlog mcp`: the global --workspace, --project, --actor, --now and
// --lock-timeout apply to every tool call. (Not a doc comment: clap would take it for the
// subcommand's help.)
#[derive(Debug, clap::Args)]
pub struct McpArgs {}

pub fn run(ctx: &Ctx, _args: McpArgs, _out: &mut Out) -> Result<ExitCode> {
    let g = &ctx.global;
    let mut base = Vec::new();
    if let Some(dir) = &g.workspace {
        // Refused now rather than on every call.
        if !dir.is_dir() {
            return Err(Error::Usage(format!(
                "mcp --workspace {}: no such directory; give the repository that holds (or will \
                 hold) ai-memory/",
                dir.display()
            )));
        }
        let dir = std::path::absolute(dir)?;
        base.push(format!("--workspace={}", dir.display()));
    }
    // The actor is checked once here, then recorded on every write.
    base.push(format!("--actor={}", ctx.actor()?));
    if let Some(now) = &g.now {
        base.push(format!("--now={now}"));
    }
    base.push(format!("--lock-timeout={}", g.lock_timeout));
    if g.debug {
        // The active configuration, logged once at start (calls do not repeat it).
        if let Err(e) = ctx.project(None) {
            super::output::debug(&format!("no configuration to log: {e}"));
        }
    }
    // Paths in tool calls are relative to the workspace root, wherever the server started.
    if let Ok(ws) = ctx.workspace() {
        std::env::set_current_dir(ws.root())?;
    }
    let server = crate::mcp::Server::new(base, g.project.clone());
    crate::mcp::serve(server)?;
    Ok(ExitCode::Ok)
}
