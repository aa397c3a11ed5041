//! Model2Vec static embeddings, as the `model2vec` package (0.10) computes them in
//! `StaticModel.encode`: the folder's tokenizer without special tokens, the text cut to
//! `max_length` tokens (`config.json`, 512 where it says nothing, none where it says null: first to
//! that many times the vocabulary's median token length in characters, then the first ids), the
//! unknown token dropped, each id's row of the embedding matrix (through the vocabulary-quantization
//! mapping and times the per-token weight where the folder has them), their mean, and the unit norm
//! where `config.json` says `normalize`. No special tokens and no attention: a document costs its
//! tokenization and one row sum per token.
//!
//! A classifier is the package's `StaticModelPipeline` as 0.10 saves it: `head.safetensors`
//! (`head.{i}.weight`, `head.{i}.bias`, PyTorch's `out x in`) and `config.json`'s `head_config`
//! (`n_layers`, the output `activation`, the `classes`), a ReLU between layers. The older
//! `pipeline.skops` (scikit-learn through skops) is refused with the one-line conversion.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::ops::Linear;
use super::weights::Weights;
use super::{Fault, Problem};
use crate::tokenize::hf::model_vocab;
use crate::tokenize::{cached, EncodeOptions, Tokenizer, DEFAULT_CHUNK_BYTES};

/// The most tokens `encode` reads of a text where `config.json` does not say (model2vec's default).
const MAX_TOKENS: usize = 512;

/// A loaded Model2Vec folder.
pub(crate) struct StaticModel {
    tokenizer: Arc<Tokenizer>,
    /// `rows x dim`, row-major.
    vectors: Vec<f32>,
    dim: usize,
    /// Token id to row, where the vocabulary is quantized (`mapping`).
    mapping: Option<Vec<u32>>,
    /// A weight per token id (`weights`).
    weights: Option<Vec<f32>>,
    /// The tokenizer model's unknown token, dropped from every text.
    unk: Option<u32>,
    normalize: bool,
    /// The most tokens read of a text, and the most characters that can give them.
    max: Option<(usize, usize)>,
    head: Option<Head>,
}

/// `StaticModelPipeline`'s MLP over the embedding.
struct Head {
    layers: Vec<Linear>,
    problem: Problem,
    labels: Vec<Arc<str>>,
}

impl Head {
    /// The head of a folder whose `config.json` is `config`, where it has `head.safetensors`.
    fn load(dir: &Path, config: &Value, dim: usize) -> Result<Option<Self>, Fault> {
        if !dir.join("head.safetensors").exists() {
            if dir.join("pipeline.skops").exists() {
                return Err(Fault::file(
                    "pipeline.skops",
                    "model2vec's old head format (scikit-learn): convert it once with model2vec 0.10, python -c \"from model2vec.inference import convert_legacy_pipeline as c; c('DIR').save_pretrained('DIR')\"".into(),
                ));
            }
            return Ok(None);
        }
        let fail = |e: String| Fault::file("head.safetensors", e);
        let bytes = crate::load::read_file(&dir.join("head.safetensors")).map_err(fail)?;
        let w = Weights::parse(&bytes).map_err(fail)?;
        let head = &config["head_config"];
        let bad = |e: String| Fault::file("config.json", e);
        let n = head["n_layers"].as_u64().unwrap_or(0) as usize;
        let mut layers = Vec::with_capacity(n);
        let mut inputs = dim;
        for i in 0..n {
            let name = format!("head.{i}");
            let outputs =
                match w.shape(&format!("{name}.weight")) {
                    Some(&[out, _]) => out,
                    _ => return Err(fail(format!(
                        "no 2-d tensor '{name}.weight' for layer {i} of head_config's n_layers {n}"
                    ))),
                };
            layers.push(Linear::load(&w, &name, inputs, outputs).map_err(fail)?);
            inputs = outputs;
        }
        let problem = match head["activation"].as_str().unwrap_or("identity") {
            "softmax" => Problem::SingleLabel,
            "sigmoid" => Problem::MultiLabel,
            "identity" => Problem::Regression,
            other => {
                return Err(bad(format!(
                    "head_config's activation '{other}' is not softmax, sigmoid or identity"
                )))
            }
        };
        let labels: Vec<Arc<str>> = match head["classes"].as_array() {
            Some(classes) => classes
                .iter()
                .map(|c| Arc::from(c.as_str().map_or_else(|| c.to_string(), str::to_string)))
                .collect(),
            None => (0..inputs)
                .map(|i| Arc::from(format!("LABEL_{i}")))
                .collect(),
        };
        if labels.len() != inputs {
            return Err(bad(format!(
                "head_config names {} classes for a head of {inputs} outputs",
                labels.len()
            )));
        }
        Ok(Some(Self {
            layers,
            problem,
            labels,
        }))
    }

    /// The head's outputs for an embedding (the embedding itself for a head of no layers).
    fn logits(&self, embedding: Vec<f32>) -> Vec<f32> {
        let mut x = embedding;
        let mut y = Vec::new();
        for (i, layer) in self.layers.iter().enumerate() {
            layer.apply(&x, 1, &mut y);
            if i + 1 < self.layers.len() {
                y.iter_mut().for_each(|v| *v = v.max(0.0));
            }
            std::mem::swap(&mut x, &mut y);
        }
        x
    }
}

impl StaticModel {
    /// The model of `dir`, whose `config.json` is `config`; an error names the file at fault.
    pub(crate) fn load(dir: &Path, config: &Value, pin: Option<&str>) -> Result<Self, Fault> {
        let tokenizer_file = dir.join("tokenizer.json");
        let json = crate::load::read_file(&tokenizer_file)
            .map_err(|e| Fault::file("tokenizer.json", e))?;
        let json: Value = serde_json::from_slice(&json)
            .map_err(|e| Fault::file("tokenizer.json", format!("not JSON: {e}")))?;
        let vocab = Vocabulary::of(&json);
        let unk = vocab.unknown(&json);
        let tokenizer = cached(&tokenizer_file.display().to_string())
            .map_err(|e| Fault::file("tokenizer.json", e.to_string()))?;

        let bytes = super::Model::weights(dir)?;
        super::Model::verify(dir, &bytes, pin)?;
        let w = Weights::parse(&bytes).map_err(|e| Fault::file("model.safetensors", e))?;
        let fail = |e: String| Fault::file("model.safetensors", e);
        let (rows, dim) = match w.shape("embeddings") {
            Some(&[rows, dim]) if rows > 0 && dim > 0 => (rows, dim),
            Some(shape) => return Err(fail(format!("tensor 'embeddings' has shape {shape:?}, not [tokens, dims]"))),
            None => return Err(fail("no tensor 'embeddings': not a Model2Vec folder, and config.json names no model_type for another architecture".into())),
        };
        let vectors = w.take("embeddings", &[rows, dim]).map_err(fail)?;
        let tokens = vocab.size;
        let mapping = w
            .shape("mapping")
            .is_some()
            .then(|| w.take_indices("mapping", &[tokens], rows))
            .transpose()
            .map_err(fail)?;
        if mapping.is_none() && rows != tokens {
            return Err(fail(format!("{rows} embeddings for the tokenizer's {tokens} tokens, and no 'mapping' between them: the tokenizer is not the model's")));
        }
        let weights = w
            .shape("weights")
            .is_some()
            .then(|| w.take("weights", &[tokens]))
            .transpose()
            .map_err(fail)?;
        let head = Head::load(dir, config, dim)?;
        Ok(Self {
            head,
            tokenizer,
            vectors,
            dim,
            mapping,
            weights,
            unk,
            normalize: config["normalize"].as_bool().unwrap_or(false),
            max: match &config["max_length"] {
                Value::Null if config.get("max_length").is_some() => None,
                v => {
                    let tokens = v.as_u64().map_or(MAX_TOKENS, |n| n as usize);
                    Some((tokens, tokens.saturating_mul(vocab.median_length)))
                }
            },
        })
    }

    /// The head's classes (none without a head).
    pub(crate) fn labels(&self) -> &[Arc<str>] {
        self.head.as_ref().map_or(&[], |h| &h.labels)
    }

    /// What the head's outputs mean.
    pub(crate) fn problem(&self) -> Problem {
        self.head
            .as_ref()
            .map_or(Problem::Regression, |h| h.problem)
    }

    /// Whether the folder holds a classification head.
    pub(crate) fn has_head(&self) -> bool {
        self.head.is_some()
    }

    /// The head's outputs for `text`, before its activation.
    pub(crate) fn logits(&self, text: &str) -> Result<Vec<f32>, Fault> {
        let head = self.head.as_ref().ok_or_else(|| Fault::file("head.safetensors", "missing: this Model2Vec folder gives embeddings only (model_embed); a classifier is saved by model2vec's StaticModelPipeline".into()))?;
        Ok(head.logits(self.embed(text)?))
    }

    /// The embedding of `text`: zeros where it has no known token.
    pub(crate) fn embed(&self, text: &str) -> crate::Result<Vec<f32>> {
        let mut ids = Vec::new();
        match self.max {
            Some((tokens, chars)) => {
                let cut = text
                    .char_indices()
                    .nth(chars)
                    .map_or(text.len(), |(at, _)| at);
                self.tokenizer.encode_head(&text[..cut], tokens, &mut ids)?;
            }
            None => self.tokenizer.encode_into(
                text,
                &EncodeOptions::default(),
                DEFAULT_CHUNK_BYTES,
                &mut ids,
            )?,
        }
        // Every id the tokenizer gives is below its vocabulary's size, which the tables were
        // checked against at load, so each has a weight and a row.
        let kept = ids.into_iter().filter(|&id| Some(id) != self.unk);
        let mut sum = vec![0.0f64; self.dim];
        let mut count = 0usize;
        for id in kept {
            let row = self
                .mapping
                .as_ref()
                .map_or(id as usize, |m| m[id as usize] as usize);
            let scale = self
                .weights
                .as_ref()
                .map_or(1.0, |w| f64::from(w[id as usize]));
            let vector = &self.vectors[row * self.dim..(row + 1) * self.dim];
            sum.iter_mut()
                .zip(vector)
                .for_each(|(s, &v)| *s += f64::from(v) * scale);
            count += 1;
        }
        if count == 0 {
            return Ok(vec![0.0; self.dim]);
        }
        sum.iter_mut().for_each(|s| *s /= count as f64);
        if self.normalize {
            // model2vec adds 1e-32 to the norm, which only matters for a zero vector.
            let norm = sum.iter().map(|s| s * s).sum::<f64>().sqrt() + 1e-32;
            sum.iter_mut().for_each(|s| *s /= norm);
        }
        Ok(sum.into_iter().map(|s| s as f32).collect())
    }
}

/// What `model2vec` reads of the tokenizer's vocabulary (`get_vocab()`, added tokens included).
struct Vocabulary {
    /// Token strings to ids.
    ids: rustc_hash::FxHashMap<String, u32>,
    /// One past the largest id.
    size: usize,
    /// The median length in characters of the tokens, rounded down, at least 1.
    median_length: usize,
}

impl Vocabulary {
    fn of(json: &Value) -> Self {
        let mut ids = model_vocab(json);
        for t in json["added_tokens"].as_array().into_iter().flatten() {
            if let (Some(content), Some(id)) = (
                t["content"].as_str(),
                t["id"].as_u64().and_then(|id| u32::try_from(id).ok()),
            ) {
                ids.insert(content.to_string(), id);
            }
        }
        let size = ids.values().max().map_or(0, |&id| id as usize + 1);
        let mut lengths: Vec<usize> = ids.keys().map(|t| t.chars().count()).collect();
        lengths.sort_unstable();
        // numpy's median: the middle one, or the mean of the middle two; int() rounds it down.
        let n = lengths.len();
        let median = match n {
            0 => 1,
            _ if n % 2 == 1 => lengths[n / 2],
            _ => (lengths[n / 2 - 1] + lengths[n / 2]) / 2,
        };
        Self {
            ids,
            size,
            median_length: median.max(1),
        }
    }

    /// The id of the tokenizer model's unknown token, which model2vec drops: WordPiece, BPE and
    /// WordLevel name it (`unk_token`, none where it is not in the vocabulary), Unigram numbers it.
    fn unknown(&self, json: &Value) -> Option<u32> {
        let model = &json["model"];
        match model["type"].as_str() {
            Some("Unigram") => model["unk_id"]
                .as_u64()
                .and_then(|id| u32::try_from(id).ok()),
            _ => self.ids.get(model["unk_token"].as_str()?).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_length_is_numpys_rounded_down() {
        let json = serde_json::json!({"model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "a": 1, "bc": 2, "##de": 3}}});
        let v = Vocabulary::of(&json);
        // Lengths 1, 2, 4, 5: (2 + 4) / 2.
        assert_eq!((v.size, v.median_length), (4, 3));
        assert_eq!(v.unknown(&json), Some(0));
        let unigram = serde_json::json!({"model": {"type": "Unigram", "unk_id": 1, "vocab": [["ab", -1.0], ["<unk>", 0.0]]}});
        assert_eq!(Vocabulary::of(&unigram).unknown(&unigram), Some(1));
        let bpe =
            serde_json::json!({"model": {"type": "BPE", "unk_token": null, "vocab": {"a": 0}}});
        assert_eq!(Vocabulary::of(&bpe).unknown(&bpe), None);
    }
}
