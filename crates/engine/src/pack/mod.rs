//! Packing as a query stage: [`exec::PackExec`] runs `tokq_core::pack::Packer` over a stream of
//! tokenized rows, and [`table`] exposes it as the `pack_tokens` table function.

pub mod exec;
pub mod table;
