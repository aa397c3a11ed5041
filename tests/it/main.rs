//! End-to-end tests of the `tokq` binary: recipes, output format, lineage, bad input, cluster.

mod bad_input;
mod claims;
mod classify;
mod util;
mod counters;
mod dedup;
mod durability;
mod filters;
mod large_documents;
mod lineage;
mod pack;
mod pieces;
mod quickstart;
mod report;
mod resume;
mod shared_tokenizers;
mod single_file;
mod s3;
mod statements;
mod web;
#[cfg(feature = "cluster")]
mod chaos;
#[cfg(feature = "cluster")]
mod cluster;
#[cfg(feature = "cluster")]
mod cluster_gate;
