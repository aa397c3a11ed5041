//! Links the `tokq` binary with identical code folding (`--icf=all`) where the linker is
//! rustc's own lld: the default on x86_64 Linux since Rust 1.90, so only there, and only when
//! no other linker and no link flags are configured (GNU ld has no such option). Generic code instantiated alike in
//! many crates (the drop glue of sqlparser's AST, Arrow's kernels, futures' state machines) is
//! then kept once: 6.4 MB off the release binary (docs/build.md). Rust promises no distinct
//! addresses for distinct functions, so folding them changes no behaviour; the tests run the
//! folded binary.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let target = std::env::var("TARGET").unwrap_or_default();
    let linker_configured = std::env::var_os("RUSTC_LINKER").is_some()
        || std::env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|flags| flags.contains("link"));
    if target == "x86_64-unknown-linux-gnu" && !linker_configured {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
    }
}
