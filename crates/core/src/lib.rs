//! tokq's text cores, with no query engine underneath: each function takes `&str` and returns a
//! plain value, so it can be unit-tested, benchmarked and fuzzed on its own. `tokq-udfs` wraps
//! them as DataFusion functions.
//!
//! - [`text`]: cleaning, normalization, spaCy-exact words, sentences, language ID.
//! - [`quality`]: datatrove's Gopher, C4 and FineWeb filters with its reason strings, and chains.
//! - [`dedup`]: exact hashes, datatrove-exact MinHash signatures, LSH bands, shingle Jaccard.
//! - [`fasttext`]: fastText classifiers (language ID, quality), identical to fastText.
//! - [`neural`]: Hugging Face encoder classifiers (BERT, RoBERTa), as transformers computes them.
//! - [`tokenize`]: tokenizer specs, tokq's byte-level BPE encoder and the reference encoders.
//! - [`pack`]: padding-free sequence packing; [`shuffle`]: the global shuffle key.
//! - [`web`]: URL parts and datatrove's URL filter, WARC records, HTML main text.
//! - [`load`]: where tokenizer and model files come from; [`error`]: [`TokqError`], which names
//!   the file, line or value at fault; [`guard`]: a dependency's panic turned into an error.
//!
//! ```
//! use tokq_core::quality::{gopher::GopherQuality, Doc, Filter};
//!
//! let filter = GopherQuality::default();
//! let verdict = filter.check(&Doc::new("too short"));
//! assert_eq!(verdict.reason(), Some("gopher_short_doc"));
//! ```

#![warn(missing_docs)]

pub mod dedup;
pub mod error;
pub mod fasttext;
pub mod guard;
mod hint;
#[cfg(target_arch = "x86_64")]
mod lanes;
pub mod load;
pub mod neural;
pub mod pack;
pub mod quality;
pub mod shuffle;
pub mod text;
pub mod tokenize;
pub mod web;

#[cfg(test)]
mod fuzz;

pub use error::{Result, TokqError};
