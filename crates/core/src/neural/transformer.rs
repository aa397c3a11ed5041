//! A `transformers` encoder folder (BERT, RoBERTa, XLM-RoBERTa, ModernBERT): the model's tokenizer
//! and truncation, the encoder, BERT's pooler and the sequence-classification head, as
//! `AutoModelForSequenceClassification` and `AutoModel` compute them in fp32. Each document is
//! one sequence with no padding, so its outputs never depend on other documents.

use std::path::Path;
use std::sync::Arc;

use super::config::{Config, Family, Problem};
use super::deberta::DebertaEncoder;
use super::encoder::Encoder;
use super::input::Input;
use super::modernbert::ModernEncoder;
use super::ops::{Activation, LayerNorm, Linear};
use super::weights::Weights;
use super::{Fault, Pooling};

/// The classification head over the first token.
enum Head {
    /// BERT: the pooler (`dense`, tanh), then `classifier`.
    Bert { classifier: Linear },
    /// RoBERTa: `classifier.dense`, tanh, `classifier.out_proj`.
    Roberta { dense: Linear, out: Linear },
    /// DeBERTa-v2: `pooler.dense` over the first token, the pooler's activation, `classifier`.
    Deberta {
        dense: Linear,
        activation: Activation,
        classifier: Linear,
    },
    /// ModernBERT, over the first token or the mean of all (`classifier_pooling`):
    /// `head.dense`, the classifier activation, `head.norm`, then `classifier`.
    Modern {
        mean: bool,
        dense: Linear,
        activation: Activation,
        norm: LayerNorm,
        classifier: Linear,
    },
}

/// The encoder of a family.
enum Body {
    Bert(Encoder),
    Deberta(DebertaEncoder),
    Modern(ModernEncoder),
}

/// The encoder, its pooler and its head.
type Layers = (Body, Option<Linear>, Option<Head>);

/// A loaded encoder folder.
pub(crate) struct Transformer {
    config: Config,
    input: Input,
    body: Body,
    pooler: Option<Linear>,
    head: Option<Head>,
}

impl Transformer {
    /// The encoder folder `dir`, whose `config.json` holds `config`; the caller has checked that
    /// `model.safetensors` is there.
    pub(crate) fn load(dir: &Path, config: &str, pin: Option<&str>) -> Result<Self, Fault> {
        let config = Config::parse(config).map_err(|e| Fault::file("config.json", e))?;
        let (max_tokens, vocab) = (config.max_tokens(), config.vocab);
        // The tokenizer on a thread of its own from the start, beside the weights' reading and
        // packing: where a second partition waits for this model, its core does that work.
        let (input, layers) = std::thread::scope(|s| {
            let input = s.spawn(move || Input::load(dir, max_tokens, vocab));
            let layers = Self::load_layers(dir, pin, &config);
            (super::joined(input), layers)
        });
        // A file that does not read comes first, then a tokenizer that is not the model's, then
        // weights that are not what config.json describes.
        let layers = layers?;
        let input = input.map_err(|(file, cause)| Fault::File(file, cause))?;
        let (body, pooler, head) = layers.map_err(|e| Fault::file("model.safetensors", e))?;
        Ok(Self {
            config,
            input,
            body,
            pooler,
            head,
        })
    }

    /// The layers of `dir`'s weights, which are hashed meanwhile on another thread: a file that
    /// does not read, match its pin or parse (outer), or layers that do not fit the config (inner).
    fn load_layers(dir: &Path, pin: Option<&str>, config: &Config) -> Result<Result<Layers, String>, Fault> {
        let bytes = super::Model::weights(dir)?;
        let (hashed, layers) = std::thread::scope(|s| {
            let hashed = s.spawn(|| super::Model::verify(dir, &bytes, pin));
            let layers = Weights::parse(&bytes).map(|w| Self::build(&w, config));
            (super::joined(hashed), layers)
        });
        hashed?;
        layers.map_err(|e| Fault::file("model.safetensors", e))
    }

    /// The encoder, pooler and head the weights hold.
    fn build(w: &Weights, config: &Config) -> Result<Layers, String> {
        let h = config.hidden;
        let n = config.labels.len();
        // A task model keeps the encoder under `bert.`/`roberta.`/`model.`; a bare one at the top.
        let words = match &config.modern {
            Some(_) => "embeddings.tok_embeddings.weight",
            None => "embeddings.word_embeddings.weight",
        };
        let prefix = if w.has(&format!("{}.{words}", config.prefix)) {
            format!("{}.", config.prefix)
        } else {
            String::new()
        };
        let body = match (&config.modern, &config.deberta) {
            (Some(m), _) => Body::Modern(ModernEncoder::load(w, config, m, &prefix)?),
            (_, Some(d)) => Body::Deberta(DebertaEncoder::load(w, config, d, &prefix)?),
            _ => Body::Bert(Encoder::load(w, config, &prefix)?),
        };
        // DeBERTa's `pooler.dense` belongs to its classification head.
        let pooler = (config.deberta.is_none() && w.has(&format!("{prefix}pooler.dense.weight")))
            .then(|| Linear::load(w, &format!("{prefix}pooler.dense"), h, h))
            .transpose()?;
        let head = match config.family {
            Family::Bert if w.has("classifier.weight") => Some(Head::Bert {
                classifier: Linear::load(w, "classifier", h, n)?,
            }),
            Family::Roberta if w.has("classifier.out_proj.weight") => Some(Head::Roberta {
                dense: Linear::load(w, "classifier.dense", h, h)?,
                out: Linear::load(w, "classifier.out_proj", h, n)?,
            }),
            Family::Deberta if w.has("classifier.weight") => {
                let d = config.deberta.as_ref().ok_or("DeBERTa without its settings")?;
                Some(Head::Deberta {
                    dense: Linear::load(w, "pooler.dense", h, h)?,
                    activation: d.pooler_activation,
                    classifier: Linear::load(w, "classifier", h, n)?,
                })
            }
            Family::ModernBert if w.has("classifier.weight") => {
                let m = config.modern.as_ref().ok_or("ModernBERT without its settings")?;
                Some(Head::Modern {
                    mean: m.mean_pooling,
                    dense: Linear::load_with(w, "head.dense", h, h, m.classifier_bias)?,
                    activation: m.classifier_activation,
                    norm: LayerNorm::load_with(w, "head.norm", h, config.eps, m.norm_bias)?,
                    classifier: Linear::load(w, "classifier", h, n)?,
                })
            }
            _ => None,
        };
        if matches!(head, Some(Head::Bert { .. })) && pooler.is_none() {
            return Err(format!("a BERT classifier without {prefix}pooler.dense: the file holds only part of the model"));
        }
        Ok((body, pooler, head))
    }

    /// The label names, by id (`id2label`).
    pub(crate) fn labels(&self) -> &[Arc<str>] {
        &self.config.labels
    }

    /// What the logits mean.
    pub(crate) fn problem(&self) -> Problem {
        self.config.problem
    }

    /// Whether the folder holds a classification head.
    pub(crate) fn has_head(&self) -> bool {
        self.head.is_some()
    }

    /// Whether the folder holds BERT's pooler.
    pub(crate) fn has_pooler(&self) -> bool {
        self.pooler.is_some()
    }

    /// The last hidden states of `text` (`tokens x hidden`; the first token's alone with
    /// `first_only`) and its number of tokens.
    fn hidden(&self, text: &str, first_only: bool) -> Result<(Vec<f32>, usize), Fault> {
        let (mut ids, mut types) = (Vec::new(), Vec::new());
        self.input.encode(text, &mut ids, &mut types)?;
        let states = match &self.body {
            Body::Bert(e) => e.forward(&ids, &types, first_only),
            Body::Deberta(e) => e.forward(&ids, &types, first_only),
            Body::Modern(e) => e.forward(&ids, first_only),
        };
        let states = states.map_err(|e| Fault::file("tokenizer.json", e))?;
        Ok((states, ids.len()))
    }

    /// The `[CLS]` state through BERT's pooler: `tanh(W · h + b)`.
    fn pool(&self, first: &[f32]) -> Result<Vec<f32>, Fault> {
        let pooler = self.pooler.as_ref().ok_or_else(|| {
            Fault::file(
                "model.safetensors",
                "holds no pooler (pooler.dense): use pooling 'mean' or 'cls'".into(),
            )
        })?;
        let mut out = Vec::new();
        pooler.apply(first, 1, &mut out);
        out.iter_mut().for_each(|v| *v = v.tanh());
        Ok(out)
    }

    /// The classifier's logits for `text`: one per label.
    pub(crate) fn logits(&self, text: &str) -> Result<Vec<f32>, Fault> {
        let Some(head) = &self.head else {
            return Err(Fault::file("model.safetensors", "holds no classification head (classifier.*): use model_embed, or a ...ForSequenceClassification model".into()));
        };
        let mean = matches!(head, Head::Modern { mean: true, .. });
        let (states, tokens) = self.hidden(text, !mean)?;
        let first = &states[..self.config.hidden];
        let mut out = Vec::new();
        match head {
            Head::Deberta {
                dense,
                activation,
                classifier,
            } => {
                let mut a = Vec::new();
                dense.apply(first, 1, &mut a);
                activation.apply(&mut a);
                classifier.apply(&a, 1, &mut out);
            }
            Head::Modern {
                mean,
                dense,
                activation,
                norm,
                classifier,
            } => {
                let pooled = if *mean {
                    mean_rows(&states, self.config.hidden, tokens)
                } else {
                    first.to_vec()
                };
                let mut a = Vec::new();
                dense.apply(&pooled, 1, &mut a);
                activation.apply(&mut a);
                norm.apply(&mut a);
                classifier.apply(&a, 1, &mut out);
            }
            Head::Bert { classifier } => classifier.apply(&self.pool(first)?, 1, &mut out),
            Head::Roberta { dense, out: proj } => {
                let mut a = Vec::new();
                dense.apply(first, 1, &mut a);
                a.iter_mut().for_each(|v| *v = v.tanh());
                proj.apply(&a, 1, &mut out);
            }
        }
        Ok(out)
    }

    /// One vector for `text`, pooled from the last hidden states.
    pub(crate) fn embed(&self, text: &str, pooling: Pooling) -> Result<Vec<f32>, Fault> {
        let (states, tokens) = self.hidden(text, pooling != Pooling::Mean)?;
        let h = self.config.hidden;
        Ok(match pooling {
            Pooling::Cls => states[..h].to_vec(),
            Pooling::Mean => mean_rows(&states, h, tokens),
            Pooling::Pooler => self.pool(&states[..h])?,
        })
    }
}

/// The mean of the `tokens` rows of `states` (each `h` wide).
fn mean_rows(states: &[f32], h: usize, tokens: usize) -> Vec<f32> {
    let mut sum = vec![0.0f32; h];
    for row in states.chunks_exact(h) {
        sum.iter_mut().zip(row).for_each(|(s, v)| *s += v);
    }
    sum.iter().map(|s| s / tokens as f32).collect()
}
