//! End-to-end tests of the `tokq` binary: recipes, output format, lineage, bad input, cluster.

mod bad_input;
mod claims;
mod classify;
mod util;
mod counters;
mod dedup;
mod durability;
mod filters;
mod html_truth;
mod hub;
mod large_documents;
mod lineage;
mod maps;
mod models;
mod pack;
mod pieces;
mod quickstart;
mod report;
mod resume;
mod shared_tokenizers;
mod single_file;
mod statements;
mod subdoc;
mod tokenizer_cache;
mod web;
// The slow tier (`--features tokq/slow-tests`, as `.ci/run` runs it).
#[cfg(feature = "slow-tests")]
mod chaos;
#[cfg(feature = "slow-tests")]
mod cluster;
#[cfg(feature = "slow-tests")]
mod cluster_gate;
#[cfg(feature = "slow-tests")]
mod cluster_tls;
#[cfg(feature = "slow-tests")]
mod s3;
