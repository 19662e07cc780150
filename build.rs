//! Links the `memlog` executable as position-dependent on Linux: its tens of thousands of
//! relocations are then resolved when it is linked instead of each time it starts, which every
//! short command (and every agent's call) pays for. See docs/PERFORMANCE.md.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
