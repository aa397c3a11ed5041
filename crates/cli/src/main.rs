//! The `tokq` command: everything it does lives in the library, which Python's `tokq` console
//! script runs too.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(tokq::main_from(std::env::args_os()))
}
