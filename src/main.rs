// The rebuild of a large log allocates millions of small strings on several threads, where
// mimalloc is markedly faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let code = memlog::cli::main_with_args(std::env::args_os().collect(), "memlog");
    memlog::cli::report_peak_rss();
    std::process::exit(code);
}
