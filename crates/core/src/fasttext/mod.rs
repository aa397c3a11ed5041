//! fastText supervised classifiers (`.bin`, and product-quantized `.ftz`), in pure Rust, giving
//! the labels and probabilities fastText's own Python `predict` gives: the same tokens, hashes,
//! float arithmetic and top-k order, for softmax, one-vs-all, negative-sampling and hierarchical
//! softmax models, with word and character n-grams. The text is one line: newlines separate
//! words like spaces, as callers of fastText replace them.
//!
//! A score is what fastText reports: `p + 1e-5` in float (fastText ranks by `log(p + 1e-5)` and
//! Python exponentiates it), so thresholds carried over from datatrove or DCLM decide the same.

mod dictionary;
mod file;
mod heap;
mod matrix;
mod output;

use std::sync::Arc;

use crate::error::{Result, TokqError};
use crate::load::Cache;
use dictionary::Dictionary;
use file::{Args, Reader};
use matrix::Matrix;
use output::Output;

/// A model file that cannot be used, and why; [`Model::from_bytes`] adds the file's name.
#[derive(Debug)]
struct ModelError(String);

/// fastText's label prefix, which tokq's labels go without.
const LABEL_PREFIX: &str = "__label__";

/// A loaded classifier. Prediction takes `&self`; one model serves every thread.
pub struct Model {
    args: Args,
    dict: Dictionary,
    input: Matrix,
    output: Matrix,
    loss: Output,
    labels: Vec<Arc<str>>,
}

/// One label of a prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// The label's index in [`Model::labels`].
    pub label: usize,
    /// fastText's probability for it (`p + 1e-5`, see the module docs).
    pub score: f32,
}

impl Model {
    /// Reads a model from the bytes of a `.bin` or `.ftz` file; `uri` names it in errors.
    pub fn from_bytes(uri: &str, bytes: &[u8]) -> Result<Self> {
        Self::parse(bytes).map_err(|ModelError(cause)| TokqError::Model { uri: uri.to_string(), cause })
    }

    /// Reads a model through the process's loader (local paths, or `s3://` in the engine); a
    /// `#sha256=HEX` after the path pins the file's hash ([`crate::load::model_spec`]).
    pub fn load(spec: &str) -> Result<Self> {
        let fail = |uri: &str, cause: String| TokqError::Model { uri: uri.to_string(), cause };
        let (uri, pin) = crate::load::model_spec(spec).map_err(|e| fail(spec, e))?;
        let bytes = crate::load::read_bytes(uri)?;
        crate::load::verify_weights(uri, &bytes, pin).map_err(|e| fail(uri, e))?;
        Self::from_bytes(uri, &bytes)
    }

    fn parse(bytes: &[u8]) -> Result<Self, ModelError> {
        let mut r = Reader::new(bytes);
        let args = Args::read(&mut r)?;
        let dict = Dictionary::read(&mut r, &args)?;
        let quantized = r.bool("the input matrix's quantization flag")?;
        let input = Matrix::read(&mut r, quantized, "the input matrix")?;
        let quantized_output = r.bool("the output matrix's quantization flag")? && quantized;
        let output = Matrix::read(&mut r, quantized_output, "the output matrix")?;
        let labels: Vec<Arc<str>> = dict
            .labels()
            .iter()
            .map(|l| {
                let l = String::from_utf8_lossy(l);
                Arc::from(l.strip_prefix(LABEL_PREFIX).unwrap_or(&l))
            })
            .collect();
        let loss = Output::new(args.loss, dict.label_counts())?;
        let shapes = [
            ("input", input.rows() >= dict.input_rows() && input.cols() == args.dim, dict.input_rows(), input.rows(), input.cols()),
            ("output", output.rows() >= loss.rows_needed(labels.len()) && output.cols() == args.dim, labels.len(), output.rows(), output.cols()),
        ];
        for (name, ok, need, rows, cols) in shapes {
            if !ok {
                return Err(ModelError(format!(
                    "the {name} matrix is {rows}x{cols}, but the dictionary needs {need} rows of {}: the file is corrupt",
                    args.dim
                )));
            }
        }
        Ok(Self { args, dict, input, output, loss, labels })
    }

    /// The labels, without fastText's `__label__` prefix, in the model's order.
    pub fn labels(&self) -> &[Arc<str>] {
        &self.labels
    }

    /// The index of a label (given with or without the `__label__` prefix).
    pub fn label_index(&self, label: &str) -> Option<usize> {
        let label = label.strip_prefix(LABEL_PREFIX).unwrap_or(label);
        self.labels.iter().position(|l| &**l == label)
    }

    /// The `k` most probable labels of `text`, best first (`k` at most the number of labels;
    /// `usize::MAX` for all that fastText reports). Empty when the text gives the model no input.
    pub fn predict(&self, text: &str, k: usize) -> Vec<Prediction> {
        let Some(hidden) = self.hidden(text) else { return Vec::new() };
        if k == 0 {
            return Vec::new();
        }
        self.loss
            .predict(&self.output, &hidden, self.labels.len(), k.min(self.labels.len()))
            .into_iter()
            .map(|(log_p, label)| Prediction { label, score: log_p.exp() })
            .collect()
    }

    /// The first of all labels fastText reports (`predict(text, usize::MAX)[0]`, datatrove's
    /// choice), found without ranking them all: the best two settle it unless they are within
    /// `1e-3` in log score, where fastText's pruning or its order among equals could matter.
    pub fn best(&self, text: &str) -> Option<Prediction> {
        let two = self.predict(text, 2);
        match two.as_slice() {
            [a, b] if a.score.ln() - b.score.ln() < 1e-3 => self.predict(text, usize::MAX).into_iter().next(),
            _ => two.into_iter().next(),
        }
    }

    /// fastText's probability of one label: its score among all labels fastText reports, 0 when
    /// fastText leaves it out (below `1e-5` under hierarchical softmax), as datatrove counts it.
    pub fn score(&self, text: &str, label: usize) -> f32 {
        let Some(hidden) = self.hidden(text) else { return 0.0 };
        self.loss.score_of(&self.output, &hidden, self.labels.len(), label).map_or(0.0, f32::exp)
    }

    /// The average of the text's input rows, or None when it has none.
    fn hidden(&self, text: &str) -> Option<Vec<f32>> {
        let rows = self.dict.line(text);
        if rows.is_empty() {
            return None;
        }
        let mut hidden = vec![0.0f32; self.args.dim];
        self.input.average_rows(&rows, &mut hidden);
        Some(hidden)
    }
}

static CACHE: Cache<Model> = Cache::new();

/// The model at `uri`, loaded on first use in this process and shared afterwards.
pub fn cached(uri: &str) -> Result<Arc<Model>> {
    CACHE.get_or_load(uri, Model::load)
}

#[cfg(test)]
mod tests;
