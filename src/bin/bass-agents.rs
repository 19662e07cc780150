//! `bass-agents memory <command>`: the same commands as `memlog <command>`, for users of that CLI.

use std::io::Write;

fn main() {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "memory") {
        args.remove(1);
        std::process::exit(memlog::cli::main_with_args(args, "bass-agents memory"));
    }
    let _ = writeln!(
        std::io::stderr(),
        "usage: bass-agents memory <command> [args]\n\nThe memory commands are those of `memlog`; run `bass-agents memory --help`."
    );
    std::process::exit(2);
}
