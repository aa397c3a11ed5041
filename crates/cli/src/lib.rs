//! The `tokq` command as a library: recipes, the runner, tokq's Parquet writer, and the
//! Ballista roles. `main.rs` only parses arguments and reports errors.

#[cfg(feature = "cluster")]
pub mod cluster;
pub mod components;
pub mod manifest;
pub mod recipe;
pub mod report;
pub mod runner;
pub mod session;
pub mod sink;
