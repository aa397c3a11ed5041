//! Hugging Face encoder classifiers on the CPU, in pure Rust: a model folder as the hub stores it
//! (`config.json`, `model.safetensors`, `tokenizer.json`, `tokenizer_config.json`) gives the
//! logits, predictions and pooled embeddings `transformers` computes in fp32 with
//! `AutoModelForSequenceClassification` and `AutoModel`: the tokenizer's special tokens,
//! truncation to the model's maximum length, the encoder, its pooling and head.
//!
//! Architectures: BERT (FineWeb-Edu's classifier), RoBERTa and XLM-RoBERTa ([`encoder`]),
//! DeBERTa-v2 and v3 ([`deberta`]), ModernBERT ([`modernbert`]), all behind [`transformer`],
//! and Model2Vec static embeddings ([`static_model`]), with the classification head the `model2vec`
//! package saves. Each document is one sequence with no padding, so its outputs never depend on
//! other documents; a loaded model is shared by every thread of a process ([`cached`]), each thread
//! computing on its own.

mod attention;
mod config;
mod deberta;
mod encoder;
mod input;
mod lanes;
mod modernbert;
mod ops;
mod packed;
mod static_model;
mod transformer;
mod weights;

use std::path::Path;
use std::sync::Arc;

pub use config::Problem;
use static_model::StaticModel;
use transformer::Transformer;

use crate::error::{Result, TokqError};
use crate::load::Cache;

/// What a scoped thread returned; its panic goes on in the caller.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// How [`Model::embed`] pools the last hidden states into one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean over every token, specials included (sentence-transformers' mean pooling).
    Mean,
    /// The first token's state (`[CLS]`, `<s>`).
    Cls,
    /// BERT's pooler: `tanh(W · h[CLS] + b)`, transformers' `pooler_output`.
    Pooler,
}

impl Pooling {
    /// The pooling a name gives: `mean`, `cls` or `pooler`.
    pub fn named(name: &str) -> std::result::Result<Self, String> {
        match name {
            "mean" => Ok(Self::Mean),
            "cls" => Ok(Self::Cls),
            "pooler" => Ok(Self::Pooler),
            other => Err(format!("pooling '{other}' is not mean, cls or pooler")),
        }
    }
}

/// A loaded model. Every method takes `&self`.
pub struct Model {
    dir: String,
    kind: Kind,
}

enum Kind {
    Transformer(Box<Transformer>),
    Static(StaticModel),
}

/// What went wrong inside a model folder: a file and why, or the tokenizer's own error.
pub(crate) enum Fault {
    File(String, String),
    Tokq(TokqError),
}

impl Fault {
    fn file(file: &str, cause: String) -> Self {
        Self::File(file.to_string(), cause)
    }
}

impl From<TokqError> for Fault {
    fn from(e: TokqError) -> Self {
        Self::Tokq(e)
    }
}

/// One label of a prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// The label's index in [`Model::labels`].
    pub label: usize,
    /// Its probability (softmax or sigmoid), or the raw score of a regression.
    pub score: f32,
}

impl Model {
    /// Loads the model folder `dir`; an error names the file at fault and what to do.
    pub fn load(spec: &str) -> Result<Self> {
        let fail = |dir: &str, file: &str, cause: String| TokqError::NeuralModel {
            dir: dir.to_string(),
            file: file.to_string(),
            cause,
        };
        let (dir, pin) = crate::load::model_spec(spec).map_err(|e| fail(spec, "", e))?;
        let fail = |file: &str, cause: String| fail(dir, file, cause);
        let path = Path::new(dir);
        if !path.is_dir() {
            return Err(fail("", "is not a folder: give the folder that holds config.json, model.safetensors and tokenizer.json (hf download ORG/NAME --local-dir DIR)".into()));
        }
        let config = crate::load::read_file(&path.join("config.json"))
            .map_err(|e| fail("config.json", e))?;
        let config = String::from_utf8_lossy(&config).into_owned();
        if !path.join("model.safetensors").exists() {
            let why = if path.join("pytorch_model.bin").exists()
                || path.join("model.safetensors.index.json").exists()
            {
                "missing: tokq reads one model.safetensors file; write one with transformers (model.save_pretrained(DIR, safe_serialization=True, max_shard_size=\"100GB\"))"
            } else {
                "missing: download the model's folder with hf download ORG/NAME --local-dir DIR"
            };
            return Err(fail("model.safetensors", why.into()));
        }
        let json: serde_json::Value = serde_json::from_str(&config)
            .map_err(|e| fail("config.json", format!("not JSON: {e}")))?;
        // model2vec writes `model_type` only for distilled models; its other folders have none.
        let kind = if matches!(
            json.get("model_type").map(|t| t.as_str()),
            None | Some(Some("model2vec"))
        ) {
            StaticModel::load(path, &json, pin).map(Kind::Static)
        } else {
            Transformer::load(path, &config, pin).map(|t| Kind::Transformer(Box::new(t)))
        };
        let kind = kind.map_err(|f| Self::error(dir, f))?;
        Ok(Self {
            dir: dir.to_string(),
            kind,
        })
    }

    /// The bytes of `dir`'s `model.safetensors`, mapped: loading converts them once (packed
    /// or f32 tensors), so the file is never also copied whole into the heap.
    pub(crate) fn weights(dir: &Path) -> Result<crate::load::FileBytes, Fault> {
        let file = dir.join("model.safetensors");
        crate::load::map_file(&file).map_err(|e| Fault::file("model.safetensors", e))
    }

    /// Checks `bytes`, `dir`'s weights, against the folder's pin, and records their hash.
    pub(crate) fn verify(dir: &Path, bytes: &[u8], pin: Option<&str>) -> Result<(), Fault> {
        crate::load::verify_weights(&dir.to_string_lossy(), bytes, pin).map_err(|e| Fault::file("model.safetensors", e))
    }

    fn error(dir: &str, fault: Fault) -> TokqError {
        match fault {
            Fault::File(file, cause) => TokqError::NeuralModel {
                dir: dir.to_string(),
                file,
                cause,
            },
            Fault::Tokq(e) => e,
        }
    }

    /// The label names, by id (`id2label`, or the Model2Vec head's classes).
    pub fn labels(&self) -> &[Arc<str>] {
        match &self.kind {
            Kind::Transformer(t) => t.labels(),
            Kind::Static(s) => s.labels(),
        }
    }

    /// What the logits mean.
    pub fn problem(&self) -> Problem {
        match &self.kind {
            Kind::Transformer(t) => t.problem(),
            Kind::Static(s) => s.problem(),
        }
    }

    /// Whether the folder holds a classification head ([`Model::logits`] needs one).
    pub fn has_head(&self) -> bool {
        match &self.kind {
            Kind::Transformer(t) => t.has_head(),
            Kind::Static(s) => s.has_head(),
        }
    }

    /// The poolings [`Model::embed`] can do: a static model has only its mean.
    pub fn can_pool(&self, pooling: Pooling) -> bool {
        match &self.kind {
            Kind::Transformer(t) => pooling != Pooling::Pooler || t.has_pooler(),
            Kind::Static(_) => pooling == Pooling::Mean,
        }
    }

    /// The classifier's logits for `text`: one per label.
    pub fn logits(&self, text: &str) -> Result<Vec<f32>> {
        match &self.kind {
            Kind::Transformer(t) => t.logits(text),
            Kind::Static(s) => s.logits(text),
        }
        .map_err(|f| Self::error(&self.dir, f))
    }

    /// The `k` best labels of `text` with their probabilities (softmax; a sigmoid each for a
    /// multi-label model), best first; a regression gives its one label with the raw score.
    pub fn predict(&self, text: &str, k: usize) -> Result<Vec<Prediction>> {
        let mut scores = self.logits(text)?;
        match self.problem() {
            Problem::Regression => {}
            Problem::SingleLabel => ops::softmax_rows(&mut scores, self.labels().len()),
            Problem::MultiLabel => scores
                .iter_mut()
                .for_each(|v| *v = 1.0 / (1.0 + (-*v).exp())),
        }
        let mut out: Vec<Prediction> = scores
            .into_iter()
            .enumerate()
            .map(|(label, score)| Prediction { label, score })
            .collect();
        // Best first; ties keep the lower label id first, as a stable sort of torch's topk does.
        out.sort_by(|a, b| b.score.total_cmp(&a.score));
        out.truncate(k);
        Ok(out)
    }

    /// One vector for `text`: pooled from a transformer's last hidden states, or a static
    /// model's mean of token vectors (which ignores `pooling`; see [`Model::can_pool`]).
    pub fn embed(&self, text: &str, pooling: Pooling) -> Result<Vec<f32>> {
        match &self.kind {
            Kind::Transformer(t) => t.embed(text, pooling),
            Kind::Static(s) => s.embed(text).map_err(Fault::from),
        }
        .map_err(|f| Self::error(&self.dir, f))
    }
}

static CACHE: Cache<Model> = Cache::new();

/// The model in `dir`, loaded on first use in this process and shared afterwards.
pub fn cached(dir: &str) -> Result<Arc<Model>> {
    CACHE.get_or_load(dir, Model::load)
}
