fn main() {
    let code = memlog::cli::main_with_args(std::env::args_os().collect(), "memlog");
    memlog::cli::report_peak_rss();
    std::process::exit(code);
}
