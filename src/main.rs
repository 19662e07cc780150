fn main() {
    let code = memlog::cli::main_with_args(std::env::args_os().collect(), "memlog");
    std::process::exit(code);
}
