//! The BERT-family encoder (BERT, RoBERTa, XLM-RoBERTa): embeddings, then layers of
//! self-attention and feed-forward, each followed by a residual sum and a layer norm, as
//! `transformers` computes them in fp32 at inference (dropout off).
//!
//! One document is one sequence: no padding, so no attention mask, and a document's hidden
//! states do not depend on which documents share its batch.

use std::ops::Range;

use super::config::{Config, Family};
use super::attention::{attend, Scratch};
use super::ops::{Activation, LayerNorm, Linear};
use super::weights::Weights;

/// One post-norm transformer layer (BERT's, and DeBERTa's around its own attention scores).
pub(super) struct Layer {
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

impl Layer {
    /// The layer under `p` (`encoder.layer.3.`), its query, key and value projections named
    /// `qkv` under `attention.self.`.
    pub(super) fn load(w: &Weights, c: &Config, p: &str, qkv: [&str; 3]) -> Result<Self, String> {
        let (h, eps) = (c.hidden, c.eps);
        let qkv = qkv.map(|n| format!("{p}attention.self.{n}"));
        Ok(Self {
            qkv: Linear::load_stacked(w, &qkv, h, h)?,
            attention_out: Linear::load(w, &format!("{p}attention.output.dense"), h, h)?,
            attention_norm: LayerNorm::load(w, &format!("{p}attention.output.LayerNorm"), h, eps)?,
            up: Linear::load(w, &format!("{p}intermediate.dense"), h, c.intermediate)?,
            down: Linear::load(w, &format!("{p}output.dense"), c.intermediate, h)?,
            output_norm: LayerNorm::load(w, &format!("{p}output.LayerNorm"), h, eps)?,
        })
    }

    /// The queries, keys and values of `x` (`t` rows) into `s.qkv`.
    pub(super) fn project(&self, x: &[f32], t: usize, s: &mut Scratch) {
        self.qkv.apply(x, t, &mut s.qkv);
    }

    /// One block of the projections (`0..h` the queries, `h..2h` the keys) of `x` into `out`:
    /// DeBERTa's relative embeddings through the shared content projections.
    pub(super) fn project_part(&self, x: &[f32], t: usize, block: Range<usize>, out: &mut Vec<f32>) {
        self.qkv.apply_part(x, t, block, out);
    }

    /// The rest of the layer, once the attention's context is in `s.context`: its projection, a
    /// residual sum and norm, the feed-forward, a residual sum and norm.
    pub(super) fn finish(&self, activation: Activation, x: &mut [f32], t: usize, s: &mut Scratch) {
        self.attention_out.apply(&s.context, t, &mut s.projected);
        residual(x, &s.projected);
        self.attention_norm.apply(x);
        self.up.apply(x, t, &mut s.inner);
        activation.apply(&mut s.inner);
        self.down.apply(&s.inner, t, &mut s.projected);
        residual(x, &s.projected);
        self.output_norm.apply(x);
    }
}

impl Encoder {
    /// The encoder's tensors under `prefix` (`bert.` in a task model, empty in a bare one).
    pub(crate) fn load(w: &Weights, config: &Config, prefix: &str) -> Result<Self, String> {
        let c = config;
        let (h, eps) = (c.hidden, c.eps);
        let e = |name: &str| format!("{prefix}embeddings.{name}");
        let layer = |i: usize| {
            Layer::load(w, c, &format!("{prefix}encoder.layer.{i}."), ["query", "key", "value"])
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
            Family::Bert | Family::ModernBert | Family::Deberta => (0..ids.len()).collect(),
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

    /// The last hidden states of one sequence (`ids.len() x hidden`, row-major), or the first
    /// token's alone with `first_only`: the last layer then computes the attention, projection
    /// and feed-forward of that token only (a quarter of a 4-layer encoder's work), to the same
    /// bits (every kernel computes a row as it does among others). `ids` and `types` come from
    /// [`super::input::Input`], which keeps them within the tables.
    pub(crate) fn forward(&self, ids: &[u32], types: &[u32], first_only: bool) -> Result<Vec<f32>, String> {
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
        let layers = self.layers.len();
        Scratch::with(|s| {
            for (i, layer) in self.layers.iter().enumerate() {
                let rows = if first_only && i + 1 == layers { 1 } else { t };
                self.layer(layer, &mut x, (t, rows), s);
            }
        });
        if first_only {
            x.truncate(h);
        }
        Ok(x)
    }

    /// A layer over `t` tokens, whose first `rows` come out.
    fn layer(&self, l: &Layer, x: &mut [f32], (t, rows): (usize, usize), s: &mut Scratch) {
        l.project(x, t, s);
        attend(s, (t, rows), self.config.heads, None, None);
        l.finish(self.config.activation, &mut x[..rows * self.config.hidden], rows, s);
    }
}

/// Row `i` of a `width`-wide table, or an error naming what indexed it.
pub(super) fn row<'a>(table: &'a [f32], width: usize, i: usize, what: &str) -> Result<&'a [f32], String> {
    table
        .get(i * width..(i + 1) * width)
        .ok_or_else(|| format!("{what} {i} is outside the model's table"))
}

/// `x += y`, element by element.
pub(super) fn residual(x: &mut [f32], y: &[f32]) {
    x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
}
