//! The DeBERTa-v2 encoder (DeBERTa-v2 and v3, Nemotron-CC's quality classifiers), as
//! `transformers`' `DebertaV2Model` computes it in fp32 at inference: embeddings without absolute
//! positions (by default), then BERT's post-norm layers whose attention scores add two
//! disentangled terms, content-to-position (`c2p`: a query against the relative embedding of its
//! distance to the key) and position-to-content (`p2c`: the key against the embedding of the
//! opposite distance), distances folded into log buckets; an optional convolution after the first
//! layer (DeBERTa-v2 xlarge).

use super::attention::{attend, Bias, Scratch};
use super::config::{Config, Deberta};
use super::encoder::{residual, row, Layer};
use super::ops::{gemm, transposed, Activation, LayerNorm, Linear};
use super::weights::Weights;

/// The convolution over tokens after the first layer: `conv_kernel_size` taps, the same padding
/// either side, one group.
struct Conv {
    /// Per tap, the `h x h` weights transposed (`in x out`).
    taps: Vec<Vec<f32>>,
    bias: Vec<f32>,
    activation: Activation,
    norm: LayerNorm,
}

/// A loaded DeBERTa-v2 encoder.
pub(crate) struct DebertaEncoder {
    hidden: usize,
    heads: usize,
    activation: Activation,
    settings: Deberta,
    words: Vec<f32>,
    positions: Option<Vec<f32>>,
    types: Option<Vec<f32>>,
    embed_proj: Option<Linear>,
    norm: LayerNorm,
    layers: Vec<Layer>,
    /// Per layer, the relative embeddings through the position key and query projections
    /// (`2·span x h` each): they depend on the weights alone, so they are computed once.
    position_keys: Vec<Vec<f32>>,
    position_queries: Vec<Vec<f32>>,
    conv: Option<Conv>,
}

/// A relative distance `i - j` as DeBERTa's embedding index: folded into log buckets past half
/// of `buckets` (in f32, as transformers' `make_log_bucket_position`), then shifted by `span` and
/// clamped into the `2·span` embeddings.
fn relative_index(delta: i64, s: &Deberta) -> usize {
    let span = s.span() as i64;
    let mut r = delta;
    if s.buckets > 0 && s.max_relative > 0 {
        let mid = s.buckets as i64 / 2;
        let abs = if -mid < delta && delta < mid { mid - 1 } else { delta.abs() };
        if abs > mid {
            let ratio = ((s.max_relative - 1) as f64 / mid as f64) as f32;
            let log = ((abs as f32 / mid as f32).ln() / ratio.ln() * (mid - 1) as f32).ceil();
            r = (log + mid as f32) as i64 * delta.signum();
        }
    }
    (r + span).clamp(0, 2 * span - 1) as usize
}

impl DebertaEncoder {
    /// The encoder's tensors under `prefix` (`deberta.` in a task model, empty in a bare one).
    pub(crate) fn load(w: &Weights, c: &Config, s: &Deberta, prefix: &str) -> Result<Self, String> {
        let (h, eps) = (c.hidden, c.eps);
        let e = |name: &str| format!("{prefix}embeddings.{name}");
        let layers: Vec<Layer> = (0..c.layers)
            .map(|i| {
                let p = format!("{prefix}encoder.layer.{i}.");
                Layer::load(w, c, &p, ["query_proj", "key_proj", "value_proj"])
            })
            .collect::<Result<_, _>>()?;
        let (mut position_keys, mut position_queries) = (Vec::new(), Vec::new());
        if s.relative && (s.c2p || s.p2c) {
            let rows = 2 * s.span();
            let mut rel = w.take(&format!("{prefix}encoder.rel_embeddings.weight"), &[rows, h])?;
            if s.norm_relative {
                LayerNorm::load(w, &format!("{prefix}encoder.LayerNorm"), h, eps)?.apply(&mut rel);
            }
            for (i, layer) in layers.iter().enumerate() {
                // Shared keys: the content projections; otherwise the layer's own position ones.
                let (keys, queries) = if s.share_key {
                    let part = |block: std::ops::Range<usize>, wanted: bool| {
                        let mut out = Vec::new();
                        if wanted {
                            layer.project_part(&rel, rows, block, &mut out);
                        }
                        out
                    };
                    (part(h..2 * h, s.c2p), part(0..h, s.p2c))
                } else {
                    let p = format!("{prefix}encoder.layer.{i}.attention.self.");
                    let project = |name: &str, wanted: bool| -> Result<Vec<f32>, String> {
                        let mut out = Vec::new();
                        if wanted {
                            Linear::load(w, &format!("{p}{name}"), h, h)?.apply(&rel, rows, &mut out);
                        }
                        Ok(out)
                    };
                    (project("pos_key_proj", s.c2p)?, project("pos_query_proj", s.p2c)?)
                };
                position_keys.push(keys);
                position_queries.push(queries);
            }
        }
        let conv = (s.conv_kernel > 0)
            .then(|| -> Result<Conv, String> {
                let k = s.conv_kernel;
                let weight = w.take(&format!("{prefix}encoder.conv.conv.weight"), &[h, h, k])?;
                // PyTorch's Conv1d weight is `out x in x tap`.
                let taps = (0..k).map(|tap| transposed(&weight, h, h, k, tap)).collect();
                Ok(Conv {
                    taps,
                    bias: w.take(&format!("{prefix}encoder.conv.conv.bias"), &[h])?,
                    activation: s.conv_activation,
                    norm: LayerNorm::load(w, &format!("{prefix}encoder.conv.LayerNorm"), h, eps)?,
                })
            })
            .transpose()?;
        let width = s.embedding;
        Ok(Self {
            hidden: h,
            heads: c.heads,
            activation: c.activation,
            words: w.take(&e("word_embeddings.weight"), &[c.vocab, width])?,
            positions: s
                .absolute
                .then(|| w.take(&e("position_embeddings.weight"), &[c.positions, width]))
                .transpose()?,
            types: (c.type_vocab > 0)
                .then(|| w.take(&e("token_type_embeddings.weight"), &[c.type_vocab, width]))
                .transpose()?,
            embed_proj: (width != h)
                .then(|| Linear::load_with(w, &e("embed_proj"), width, h, false))
                .transpose()?,
            norm: LayerNorm::load(w, &e("LayerNorm"), h, eps)?,
            layers,
            position_keys,
            position_queries,
            conv,
            settings: s.clone(),
        })
    }

    /// The last hidden states of one sequence (`ids.len() x hidden`, row-major), or the first
    /// token's alone with `first_only`, as [`super::encoder::Encoder::forward`] (but for a last
    /// layer that is also the first with a convolution after it, which mixes neighbouring rows).
    pub(crate) fn forward(&self, ids: &[u32], types: &[u32], first_only: bool) -> Result<Vec<f32>, String> {
        let (t, h, width) = (ids.len(), self.hidden, self.settings.embedding);
        let mut x = Vec::with_capacity(t * width);
        for (pos, (&id, &ty)) in ids.iter().zip(types).enumerate() {
            let start = x.len();
            x.extend_from_slice(row(&self.words, width, id as usize, "token id")?);
            // transformers adds the position embedding to the word's, then the type's.
            if let Some(p) = &self.positions {
                residual(&mut x[start..], row(p, width, pos, "position")?);
            }
            if let Some(types) = &self.types {
                residual(&mut x[start..], row(types, width, ty as usize, "type id")?);
            }
        }
        if let Some(proj) = &self.embed_proj {
            let mut out = Vec::new();
            proj.apply(&x, t, &mut out);
            x = out;
        }
        self.norm.apply(&mut x);
        let embeddings = self.conv.as_ref().map(|_| x.clone());
        let indices: Vec<usize> = (-(t as i64 - 1)..t as i64)
            .map(|delta| relative_index(delta, &self.settings))
            .collect();
        // One for every layer, so that its buffers are allocated once per document.
        let mut bias = Relative {
            d: h / self.heads,
            t,
            settings: &self.settings,
            keys: &[],
            queries: &[],
            indices: &indices,
            c2p: Vec::new(),
            p2c: Vec::new(),
            p2c_head: None,
        };
        let layers = self.layers.len();
        let first_only = first_only && !(layers == 1 && self.conv.is_some());
        Scratch::with(|s| {
            for (i, layer) in self.layers.iter().enumerate() {
                let rows = if first_only && i + 1 == layers { 1 } else { t };
                layer.project(&x, t, s);
                bias.keys = self.position_keys.get(i).map_or(&[], |k| k);
                bias.queries = self.position_queries.get(i).map_or(&[], |q| q);
                bias.p2c_head = None;
                attend(s, (t, rows), self.heads, None, Some(&mut bias));
                layer.finish(self.activation, &mut x[..rows * h], rows, s);
                if let (0, Some(conv), Some(e)) = (i, &self.conv, &embeddings) {
                    conv.apply(e, &mut x, t);
                }
            }
        });
        if first_only {
            x.truncate(h);
        }
        Ok(x)
    }
}

impl Conv {
    /// `LayerNorm(x + act(conv(embeddings)))`, as transformers' `ConvLayer` after the first layer.
    fn apply(&self, embeddings: &[f32], x: &mut [f32], t: usize) {
        let h = self.bias.len();
        let k = self.taps.len();
        let pad = (k - 1) / 2;
        let mut out: Vec<f32> = self.bias.iter().copied().cycle().take(t * h).collect();
        for (tap, weights) in self.taps.iter().enumerate() {
            // Output row r reads input row r + tap - pad; rows outside the sequence are zeros.
            let first = pad.saturating_sub(tap);
            let last = (t + pad).saturating_sub(tap).min(t);
            if first >= last {
                continue;
            }
            let input = first + tap - pad;
            gemm(
                last - first,
                h,
                h,
                1.0,
                &embeddings[input * h..],
                (h, 1),
                weights,
                (h, 1),
                1.0,
                &mut out[first * h..],
                h,
            );
        }
        self.activation.apply(&mut out);
        residual(x, &out);
        self.norm.apply(x);
    }
}

/// DeBERTa's relative terms for one layer: `c2p[i, j] = q_i · K_rel[idx(i - j)]` and
/// `p2c[i, j] = k_j · Q_rel[idx(i - j)]`, each divided by the scale's root, over the embedding
/// rows the sequence's distances reach.
struct Relative<'a> {
    d: usize,
    t: usize,
    settings: &'a Deberta,
    keys: &'a [f32],
    queries: &'a [f32],
    /// `indices[delta + t - 1]`: the embedding row of distance `delta`, rising with it.
    indices: &'a [usize],
    c2p: Vec<f32>,
    /// Every key's `p2c` terms of one head (`p2c_head`), read by each of its query blocks.
    p2c: Vec<f32>,
    p2c_head: Option<usize>,
}

impl Relative<'_> {
    /// `√(head_dim · (1 + c2p + p2c))`, in f32 as transformers computes it.
    fn root(&self) -> f32 {
        let terms = 1 + usize::from(self.settings.c2p) + usize::from(self.settings.p2c);
        (self.d as f32 * terms as f32).sqrt()
    }
}

impl Bias for Relative<'_> {
    fn scale(&self, _head_dim: usize) -> f32 {
        1.0 / self.root()
    }

    fn add(&mut self, qkv: &[f32], head: usize, first: usize, k0: usize, keys: usize, scores: &mut [f32]) {
        // `pos_att_type` sets the scale even without `relative_attention`, which adds the terms;
        // with neither term there is nothing to add.
        let s = self.settings;
        if !s.relative || !(s.c2p || s.p2c) {
            return;
        }
        let (d, t) = (self.d, self.t);
        let h = qkv.len() / t / 3;
        let rows = scores.len() / keys;
        // The embedding rows any distance of the sequence reaches: a contiguous range.
        let lo = self.indices[0];
        let span = self.indices[2 * t - 2] - lo + 1;
        let root = self.root();
        let term = |out: &mut Vec<f32>, m: usize, a: &[f32], rel: &[f32]| {
            out.clear();
            out.resize(m * span, 0.0);
            gemm(m, d, span, 1.0, a, (3 * h, 1), &rel[lo * h + head * d..], (1, h), 0.0, out, span);
        };
        if self.settings.c2p {
            term(&mut self.c2p, rows, &qkv[first * 3 * h + head * d..], self.keys);
        }
        if self.settings.p2c && self.p2c_head != Some(head) {
            self.p2c_head = Some(head);
            term(&mut self.p2c, t, &qkv[h + head * d..], self.queries);
        }
        for (r, row) in scores.chunks_exact_mut(keys).enumerate() {
            let i = first + r;
            for (c, score) in row.iter_mut().enumerate() {
                let j = k0 + c;
                let idx = self.indices[i + t - 1 - j] - lo;
                // transformers sums the terms, each over the root, then adds them to q·k.
                let mut rel = 0.0;
                if self.settings.c2p {
                    rel += self.c2p[r * span + idx] / root;
                }
                if self.settings.p2c {
                    rel += self.p2c[j * span + idx] / root;
                }
                *score += rel;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(buckets: usize, max_relative: usize) -> Deberta {
        Deberta {
            relative: true,
            c2p: true,
            p2c: true,
            buckets,
            max_relative,
            share_key: true,
            norm_relative: true,
            absolute: false,
            embedding: 8,
            conv_kernel: 0,
            conv_activation: Activation::Tanh,
            pooler_activation: Activation::Gelu,
        }
    }

    #[test]
    fn distances_fold_into_log_buckets_as_transformers_does() {
        // DeBERTa-v3's settings (256 buckets over 512 positions); the expected rows were printed
        // by transformers' make_log_bucket_position(..) + 256, clamped to 0..512.
        let s = settings(256, 512);
        let got: Vec<usize> = [0, 1, -1, 127, 128, 129, 200, 300, 511, -511, -129]
            .iter()
            .map(|&d| relative_index(d, &s))
            .collect();
        assert_eq!(got, [256, 257, 255, 383, 384, 385, 425, 463, 511, 1, 127]);
        // Without buckets a distance is its own row, clamped at the span.
        let s = settings(0, 4);
        let got: Vec<usize> = [-9, -4, -1, 0, 3, 4, 9].iter().map(|&d| relative_index(d, &s)).collect();
        assert_eq!(got, [0, 0, 3, 4, 7, 7, 7]);
    }
}
