//! Hugging Face encoder classifiers on the CPU, in pure Rust: a model folder as the hub stores it
//! (`config.json`, `model.safetensors`, `tokenizer.json`, `tokenizer_config.json`) gives the
//! logits, predictions and pooled embeddings `transformers` computes in fp32 with
//! `AutoModelForSequenceClassification` and `AutoModel`: the tokenizer's special tokens,
//! truncation to the model's maximum length, the encoder, its pooling and head.
//!
//! Architectures: BERT (FineWeb-Edu's classifier), RoBERTa and XLM-RoBERTa. Each document is one
//! sequence with no padding, so its outputs never depend on other documents; a loaded model is
//! shared by every thread of a process ([`cached`]), each thread computing on its own.

mod config;
mod encoder;
mod input;
mod ops;
mod weights;

use std::path::Path;
use std::sync::Arc;

pub use config::Problem;
use config::{Config, Family};
use encoder::Encoder;
use input::Input;
use ops::Linear;
use weights::Weights;

use crate::error::{Result, TokqError};
use crate::load::Cache;

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

/// The classification head over the first token.
enum Head {
    /// BERT: the pooler (`dense`, tanh), then `classifier`.
    Bert { classifier: Linear },
    /// RoBERTa: `classifier.dense`, tanh, `classifier.out_proj`.
    Roberta { dense: Linear, out: Linear },
}

/// A loaded model. Every method takes `&self`.
pub struct Model {
    dir: String,
    config: Config,
    input: Input,
    encoder: Encoder,
    pooler: Option<Linear>,
    head: Option<Head>,
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
    pub fn load(dir: &str) -> Result<Self> {
        let path = Path::new(dir);
        let fail = |file: &str, cause: String| TokqError::NeuralModel { dir: dir.to_string(), file: file.to_string(), cause };
        if !path.is_dir() {
            return Err(fail("", "is not a folder: give the folder that holds config.json, model.safetensors and tokenizer.json (hf download ORG/NAME --local-dir DIR)".into()));
        }
        let read = |file: &str| std::fs::read(path.join(file)).map_err(|e| fail(file, e.to_string()));
        let config = String::from_utf8_lossy(&read("config.json")?).into_owned();
        let config = Config::parse(&config).map_err(|e| fail("config.json", e))?;
        if !path.join("model.safetensors").exists() {
            let why = if path.join("pytorch_model.bin").exists() || path.join("model.safetensors.index.json").exists() {
                "missing: tokq reads one model.safetensors file; write one with transformers (model.save_pretrained(DIR, safe_serialization=True, max_shard_size=\"100GB\"))"
            } else {
                "missing: download the model's folder with hf download ORG/NAME --local-dir DIR"
            };
            return Err(fail("model.safetensors", why.into()));
        }
        let weights = Weights::parse(read("model.safetensors")?).map_err(|e| fail("model.safetensors", e))?;
        let input = Input::load(path, config.max_tokens(), config.vocab).map_err(|(file, cause)| TokqError::NeuralModel { dir: dir.to_string(), file, cause })?;
        let model = Self::build(&weights, config, input).map_err(|e| fail("model.safetensors", e))?;
        Ok(Self { dir: dir.to_string(), ..model })
    }

    fn build(w: &Weights, config: Config, input: Input) -> std::result::Result<Self, String> {
        let h = config.hidden;
        let n = config.labels.len();
        // A task model keeps the encoder under `bert.`/`roberta.`; a bare one at the top.
        let prefix = if w.has(&format!("{}.embeddings.word_embeddings.weight", config.prefix)) { format!("{}.", config.prefix) } else { String::new() };
        let encoder = Encoder::load(w, &config, &prefix)?;
        let pooler = w.has(&format!("{prefix}pooler.dense.weight")).then(|| Linear::load(w, &format!("{prefix}pooler.dense"), h, h)).transpose()?;
        let head = match config.family {
            Family::Bert if w.has("classifier.weight") => Some(Head::Bert { classifier: Linear::load(w, "classifier", h, n)? }),
            Family::Roberta if w.has("classifier.out_proj.weight") => {
                Some(Head::Roberta { dense: Linear::load(w, "classifier.dense", h, h)?, out: Linear::load(w, "classifier.out_proj", h, n)? })
            }
            _ => None,
        };
        if matches!(head, Some(Head::Bert { .. })) && pooler.is_none() {
            return Err(format!("a BERT classifier without {prefix}pooler.dense: the file holds only part of the model"));
        }
        Ok(Self { dir: String::new(), config, input, encoder, pooler, head })
    }

    /// The label names, by id (`id2label`).
    pub fn labels(&self) -> &[Arc<str>] {
        &self.config.labels
    }

    /// What the logits mean.
    pub fn problem(&self) -> Problem {
        self.config.problem
    }

    /// Whether the folder holds a classification head ([`Model::logits`] needs one).
    pub fn has_head(&self) -> bool {
        self.head.is_some()
    }

    /// Whether the folder holds BERT's pooler ([`Pooling::Pooler`] needs it).
    pub fn has_pooler(&self) -> bool {
        self.pooler.is_some()
    }

    /// The last hidden states of `text` (`tokens x hidden`).
    fn hidden(&self, text: &str) -> Result<(Vec<f32>, usize)> {
        let (mut ids, mut types) = (Vec::new(), Vec::new());
        self.input.encode(text, &mut ids, &mut types)?;
        let states = self.encoder.forward(&ids, &types).map_err(|cause| TokqError::NeuralModel { dir: self.dir.clone(), file: "tokenizer.json".into(), cause })?;
        Ok((states, ids.len()))
    }

    /// The classifier's logits for `text`: one per label.
    pub fn logits(&self, text: &str) -> Result<Vec<f32>> {
        let Some(head) = &self.head else {
            return Err(TokqError::NeuralModel { dir: self.dir.clone(), file: "model.safetensors".into(), cause: "holds no classification head (classifier.*): use model_embed, or a ...ForSequenceClassification model".into() });
        };
        let (states, _) = self.hidden(text)?;
        let first = &states[..self.config.hidden];
        let mut a = Vec::new();
        let mut b = Vec::new();
        match head {
            Head::Bert { classifier } => {
                // `build` refuses a BERT head without its pooler.
                let pooler = self.pooler.as_ref().ok_or_else(|| TokqError::NeuralModel { dir: self.dir.clone(), file: "model.safetensors".into(), cause: "no pooler".into() })?;
                pooler.apply(first, 1, &mut a);
                a.iter_mut().for_each(|v| *v = v.tanh());
                classifier.apply(&a, 1, &mut b);
            }
            Head::Roberta { dense, out } => {
                dense.apply(first, 1, &mut a);
                a.iter_mut().for_each(|v| *v = v.tanh());
                out.apply(&a, 1, &mut b);
            }
        }
        Ok(b)
    }

    /// The `k` best labels of `text` with their probabilities (softmax; a sigmoid each for a
    /// multi-label model), best first; a regression gives its one label with the raw score.
    pub fn predict(&self, text: &str, k: usize) -> Result<Vec<Prediction>> {
        let mut scores = self.logits(text)?;
        match self.config.problem {
            Problem::Regression => {}
            Problem::SingleLabel => ops::softmax_rows(&mut scores, self.config.labels.len()),
            Problem::MultiLabel => scores.iter_mut().for_each(|v| *v = 1.0 / (1.0 + (-*v).exp())),
        }
        let mut out: Vec<Prediction> = scores.into_iter().enumerate().map(|(label, score)| Prediction { label, score }).collect();
        // Best first; ties keep the lower label id first, as a stable sort of torch's topk does.
        out.sort_by(|a, b| b.score.total_cmp(&a.score));
        out.truncate(k);
        Ok(out)
    }

    /// One vector for `text`, pooled from the last hidden states.
    pub fn embed(&self, text: &str, pooling: Pooling) -> Result<Vec<f32>> {
        let (states, tokens) = self.hidden(text)?;
        let h = self.config.hidden;
        Ok(match pooling {
            Pooling::Cls => states[..h].to_vec(),
            Pooling::Mean => {
                let mut sum = vec![0.0f32; h];
                for row in states.chunks_exact(h) {
                    sum.iter_mut().zip(row).for_each(|(s, v)| *s += v);
                }
                sum.iter().map(|s| s / tokens as f32).collect()
            }
            Pooling::Pooler => {
                let Some(pooler) = &self.pooler else {
                    return Err(TokqError::NeuralModel { dir: self.dir.clone(), file: "model.safetensors".into(), cause: "holds no pooler (pooler.dense): use pooling 'mean' or 'cls'".into() });
                };
                let mut out = Vec::new();
                pooler.apply(&states[..h], 1, &mut out);
                out.iter_mut().for_each(|v| *v = v.tanh());
                out
            }
        })
    }
}

static CACHE: Cache<Model> = Cache::new();

/// The model in `dir`, loaded on first use in this process and shared afterwards.
pub fn cached(dir: &str) -> Result<Arc<Model>> {
    CACHE.get_or_load(dir, Model::load)
}
