//! Text analysis shared by the quality filters, with Python's and spaCy's semantics where the
//! reference filters depend on them.

pub mod affix;
pub mod charsets;
pub mod clean;
pub mod language;
mod pieces;
pub mod py;
pub mod sentences;
pub mod words;
