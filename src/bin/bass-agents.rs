//! `bass-agents memory <command>`: the same commands as `memlog <command>`, for users of that CLI.

use std::io::Write;

const USAGE: &str = "Usage: bass-agents memory <command> [args]

Durable, auditable memory for AI agents, kept as a content-addressed event log in git.
The memory commands are those of `memlog`: run `bass-agents memory --help` for the list.

Options:
  -h, --help     Print this help
  -V, --version  Print the version";

fn main() {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match args.get(1).and_then(|a| a.to_str()) {
        Some("memory") => {
            args.remove(1);
            std::process::exit(memlog::cli::main_with_args(args, "bass-agents memory"));
        }
        Some("-h" | "--help" | "help") => {
            let _ = writeln!(std::io::stdout(), "{USAGE}");
            std::process::exit(0);
        }
        Some("-V" | "--version") => {
            let _ = writeln!(
                std::io::stdout(),
                "bass-agents {}",
                env!("CARGO_PKG_VERSION")
            );
            std::process::exit(0);
        }
        Some(other) => {
            let _ = writeln!(
                std::io::stderr(),
                "error: unknown command `{other}`: the commands are under `memory`, e.g. \
                 `bass-agents memory list`\n\n{USAGE}"
            );
        }
        None => {
            let _ = writeln!(std::io::stderr(), "{USAGE}");
        }
    }
    std::process::exit(2);
}
