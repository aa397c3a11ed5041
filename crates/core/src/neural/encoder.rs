//! The BERT-family encoder (BERT, RoBERTa, XLM-RoBERTa): embeddings, then layers of
//! self-attention and feed-forward, each followed by a residual sum and a layer norm, as
//! `transformers` computes them in fp32 at inference (dropout off).
//!
//! One document is one sequence: no padding, so no attention mask, and a document's hidden
//! states do not depend on which documents share its batch.

use super::config::{Config, Family};
use super::ops::{gemm, softmax_rows, LayerNorm, Linear};
use super::weights::Weights;

/// One transformer layer.
struct Layer {
    qkv: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    up: Linear,
    down: Linear,
    output_norm: LayerNorm,
}

/// The encoder's weights and shape.
pub(crate) struct Encoder {
    config: Config,
    words: Vec<f32>,
    positions: Vec<f32>,
    types: Vec<f32>,
    norm: LayerNorm,
    layers: Vec<Layer>,
}

/// Buffers reused across a document's layers.
#[derive(Default)]
struct Scratch {
    qkv: Vec<f32>,
    context: Vec<f32>,
    scores: Vec<f32>,
    projected: Vec<f32>,
    inner: Vec<f32>,
}

impl Encoder {
    /// The encoder's tensors under `prefix` (`bert.` in a task model, empty in a bare one).
    pub(crate) fn load(w: &Weights, config: &Config, prefix: &str) -> Result<Self, String> {
        let c = config;
        let (h, eps) = (c.hidden, c.eps);
        let e = |name: &str| format!("{prefix}embeddings.{name}");
        let layer = |i: usize| -> Result<Layer, String> {
            let p = format!("{prefix}encoder.layer.{i}.");
            let qkv = ["query", "key", "value"]
                .map(|n| Linear::load(w, &format!("{p}attention.self.{n}"), h, h));
            let [q, k, v] = qkv;
            Ok(Layer {
                qkv: Linear::stack(vec![q?, k?, v?]),
                attention_out: Linear::load(w, &format!("{p}attention.output.dense"), h, h)?,
                attention_norm: LayerNorm::load(
                    w,
                    &format!("{p}attention.output.LayerNorm"),
                    h,
                    eps,
                )?,
                up: Linear::load(w, &format!("{p}intermediate.dense"), h, c.intermediate)?,
                down: Linear::load(w, &format!("{p}output.dense"), c.intermediate, h)?,
                output_norm: LayerNorm::load(w, &format!("{p}output.LayerNorm"), h, eps)?,
            })
        };
        Ok(Self {
            words: w.take(&e("word_embeddings.weight"), &[c.vocab, h])?,
            positions: w.take(&e("position_embeddings.weight"), &[c.positions, h])?,
            types: w.take(&e("token_type_embeddings.weight"), &[c.type_vocab, h])?,
            norm: LayerNorm::load(w, &e("LayerNorm"), h, eps)?,
            layers: (0..c.layers).map(layer).collect::<Result<_, _>>()?,
            config: config.clone(),
        })
    }

    /// The position of each token: from 0 for BERT; for RoBERTa, counted from the padding id
    /// over non-padding tokens, padding tokens keeping the padding id itself.
    fn position_ids(&self, ids: &[u32]) -> Vec<usize> {
        let pad = self.config.pad_id;
        match self.config.family {
            Family::Bert => (0..ids.len()).collect(),
            Family::Roberta => {
                let mut seen = 0;
                ids.iter()
                    .map(|&id| {
                        seen += usize::from(id != pad);
                        if id == pad {
                            pad as usize
                        } else {
                            pad as usize + seen
                        }
                    })
                    .collect()
            }
        }
    }

    /// The last hidden states of one sequence (`ids.len() x hidden`, row-major). `ids` and
    /// `types` come from [`super::input::Input`], which keeps them within the tables.
    pub(crate) fn forward(&self, ids: &[u32], types: &[u32]) -> Result<Vec<f32>, String> {
        let (t, h) = (ids.len(), self.config.hidden);
        let mut x = Vec::with_capacity(t * h);
        for ((&id, &ty), pos) in ids.iter().zip(types).zip(self.position_ids(ids)) {
            let (word, ty, pos) = (
                row(&self.words, h, id as usize, "token id")?,
                row(&self.types, h, ty as usize, "type id")?,
                row(&self.positions, h, pos, "position")?,
            );
            // transformers adds the type embedding to the word's, then the position's.
            x.extend(word.iter().zip(ty).zip(pos).map(|((w, t), p)| (w + t) + p));
        }
        self.norm.apply(&mut x);
        let mut s = Scratch::default();
        for layer in &self.layers {
            self.layer(layer, &mut x, t, &mut s);
        }
        Ok(x)
    }

    fn layer(&self, l: &Layer, x: &mut [f32], t: usize, s: &mut Scratch) {
        let (h, heads) = (self.config.hidden, self.config.heads);
        let d = h / heads;
        l.qkv.apply(x, t, &mut s.qkv);
        s.context.clear();
        s.context.resize(t * h, 0.0);
        s.scores.resize(t * t, 0.0);
        let scale = 1.0 / (d as f32).sqrt();
        let stride = l.qkv.outputs();
        for head in 0..heads {
            let (q, k, v) = (
                &s.qkv[head * d..],
                &s.qkv[h + head * d..],
                &s.qkv[2 * h + head * d..],
            );
            // scores = q·kᵀ / √d, each row a query's weights over the keys.
            gemm(
                t,
                d,
                t,
                scale,
                q,
                (stride, 1),
                k,
                (1, stride),
                0.0,
                &mut s.scores,
                t,
            );
            softmax_rows(&mut s.scores, t);
            gemm(
                t,
                t,
                d,
                1.0,
                &s.scores,
                (t, 1),
                v,
                (stride, 1),
                0.0,
                &mut s.context[head * d..],
                h,
            );
        }
        l.attention_out.apply(&s.context, t, &mut s.projected);
        residual(x, &s.projected);
        l.attention_norm.apply(x);
        l.up.apply(x, t, &mut s.inner);
        self.config.activation.apply(&mut s.inner);
        l.down.apply(&s.inner, t, &mut s.projected);
        residual(x, &s.projected);
        l.output_norm.apply(x);
    }
}

/// Row `i` of a `width`-wide table, or an error naming what indexed it.
fn row<'a>(table: &'a [f32], width: usize, i: usize, what: &str) -> Result<&'a [f32], String> {
    table
        .get(i * width..(i + 1) * width)
        .ok_or_else(|| format!("{what} {i} is outside the model's table"))
}

/// `x += y`, element by element.
fn residual(x: &mut [f32], y: &[f32]) {
    x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
}
