//! Deduplication: `text_hash` for exact duplicates, MinHash signatures and LSH bands for near
//! duplicates (datatrove's `MinhashDedupSignature`, bit for bit), and exact shingle Jaccard for
//! verifying candidate pairs. Clustering runs as SQL rounds in the runner (`CREATE COMPONENTS`).
//! Below the document, `spans` hashes and removes repeated spans of sentences or lines
//! (datatrove's `SentenceDedup`), `ngrams` removes paragraphs most of whose word n-grams were
//! seen before (`bff`'s fuzzy mode, as DCLM runs it), `bloom` counts hashes in bounded memory (a counting Bloom filter
//! that narrows the exact count), and `decont` finds evaluation items' n-grams in training text
//! (datatrove's `NGramsDecontIndexer` and `NGramsDecontFilter`). `substrings` strikes repeated
//! spans of tokens (Lee et al.'s exact-substring dedup) through the same span machinery.

pub mod bloom;
pub mod decont;
pub mod hash;
pub mod minhash;
pub mod ngrams;
pub mod permutations;
pub mod spans;
pub mod substrings;
mod xxh64;
