//! Text analysis shared by the quality filters: word splitting that matches the references.

pub mod affix;
pub mod udf;
pub mod words;
