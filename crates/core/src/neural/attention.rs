//! Scaled dot-product self-attention of one sequence, by blocks of queries: the scores of a block
//! against the keys it may see, their softmax, and their sum over the values. A block's scores are
//! at most `BLOCK x tokens`, so an 8,192-token ModernBERT document needs 8 MB of scores where the
//! whole matrix would take 256 MB, and a sliding-window layer computes only the band it sees.

use std::cell::RefCell;

use super::ops::softmax_rows;
use super::packed::Packed;

/// Queries per block.
const BLOCK: usize = 256;

/// What an attention adds to a block's scaled scores before the softmax (DeBERTa's relative
/// positions), and the scale of the scores.
pub(crate) trait Bias {
    /// The factor of `q·k` (`1/√head_dim` unless the model says otherwise).
    fn scale(&self, head_dim: usize) -> f32 {
        1.0 / (head_dim as f32).sqrt()
    }

    /// Adds to the scores of `head` whose first query is token `first` and whose `keys` keys
    /// start at token `k0` (`rows x keys`); `qkv` is the layer's queries, keys and values.
    fn add(&mut self, qkv: &[f32], head: usize, first: usize, k0: usize, keys: usize, scores: &mut [f32]);
}

/// Buffers reused across a document's layers.
#[derive(Default)]
pub(crate) struct Scratch {
    pub qkv: Vec<f32>,
    pub context: Vec<f32>,
    pub scores: Vec<f32>,
    pub projected: Vec<f32>,
    pub inner: Vec<f32>,
    /// ModernBERT's: a block's normalized input, and the gated feed-forward's product.
    pub normed: Vec<f32>,
    pub gated: Vec<f32>,
    /// A head's keys (scaled: the right factor of `q·kᵀ/√d`) and values, packed.
    pub keys: Packed,
    pub values: Packed,
}

impl Scratch {
    /// Runs `f` with this thread's buffers, kept from one document to the next: freed, a
    /// document's megabytes of activations went back to the system and were faulted in again
    /// for the next (130,000 page faults over 64 documents of a small encoder, 4% of its run).
    /// Past [`KEPT_BYTES`] (a long document of a wide model) they are let go, so that an idle
    /// thread holds little.
    pub(crate) fn with<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
        thread_local! {
            static SCRATCH: RefCell<Scratch> = RefCell::default();
        }
        SCRATCH.with(|s| match s.try_borrow_mut() {
            Ok(mut s) => {
                let out = f(&mut s);
                if s.bytes() > KEPT_BYTES {
                    *s = Scratch::default();
                }
                out
            }
            // Not reached by the encoders (none runs another inside); fresh buffers if one did.
            Err(_) => f(&mut Scratch::default()),
        })
    }

    /// What the buffers hold allocated.
    fn bytes(&self) -> usize {
        let vecs = [&self.qkv, &self.context, &self.scores, &self.projected, &self.inner, &self.normed, &self.gated];
        let floats: usize = vecs.iter().map(|v| v.capacity()).sum();
        floats * 4 + self.keys.bytes() + self.values.bytes()
    }
}

/// The most a thread's buffers keep between documents: a 512-token document of a BERT-large
/// (hidden 1,024, feed-forward 4,096) needs about 20 MiB.
const KEPT_BYTES: usize = 32 << 20;

/// The attention of `t` tokens over `heads` heads. `s.qkv` holds each token's queries, keys and
/// values side by side (`t x 3h`, each `h` wide, head after head, as a fused QKV layer gives them);
/// the context goes to `s.context` (`t x h`). With `window`, a query sees only the keys at most
/// that many tokens away (ModernBERT's local layers); `bias`, where given, scales the scores and
/// adds to them. Only the first `queries` tokens get their context (all `t` but in a classifier's
/// last layer, whose head reads the first token alone).
pub(crate) fn attend(
    s: &mut Scratch,
    (t, queries): (usize, usize),
    heads: usize,
    window: Option<usize>,
    mut bias: Option<&mut dyn Bias>,
) {
    let Scratch {
        qkv,
        scores,
        context,
        keys: packed_keys,
        values: packed_values,
        ..
    } = s;
    let stride = qkv.len() / t.max(1);
    let h = stride / 3;
    let d = h / heads;
    context.clear();
    context.resize(t * h, 0.0);
    let scale = bias.as_ref().map_or(1.0 / (d as f32).sqrt(), |b| b.scale(d));
    for head in 0..heads {
        let (q, k, v) = (head * d, h + head * d, 2 * h + head * d);
        // The key range the head's keys and values are packed for: without a window every block
        // of queries sees all keys, packed once.
        let mut packed_for = None;
        for first in (0..queries).step_by(BLOCK) {
            let last = (first + BLOCK).min(queries);
            let rows = last - first;
            // The keys any query of the block may see.
            let (k0, k1) = match window {
                Some(w) => (first.saturating_sub(w), (last + w).min(t)),
                None => (0, t),
            };
            let keys = k1 - k0;
            scores.clear();
            scores.resize(rows * keys, 0.0);
            if packed_for != Some((k0, k1)) {
                packed_keys.pack(&qkv[k0 * stride + k..], d, keys, (1, stride), scale);
                packed_values.pack(&qkv[k0 * stride + v..], keys, d, (stride, 1), 1.0);
                packed_for = Some((k0, k1));
            }
            // scores = q·kᵀ / √d, each row a query's weights over the keys.
            packed_keys.add_product(&qkv[first * stride + q..], stride, rows, 0..keys, scores, keys);
            if let Some(b) = bias.as_mut() {
                b.add(qkv, head, first, k0, keys, scores);
            }
            if let Some(w) = window {
                // transformers masks a key farther than `w` from the query with -inf before the
                // softmax: it weighs exactly zero.
                for (r, row) in scores.chunks_exact_mut(keys).enumerate() {
                    let i = first + r;
                    for (j, s) in row.iter_mut().enumerate() {
                        if (k0 + j).abs_diff(i) > w {
                            *s = f32::NEG_INFINITY;
                        }
                    }
                }
            }
            softmax_rows(scores, keys);
            let out = &mut context[first * h + head * d..];
            packed_values.add_product(scores, keys, rows, 0..d, out, h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bias of the query's and key's positions and the head, at half the usual scale.
    struct Slope;

    impl Slope {
        fn at(head: usize, i: usize, j: usize) -> f32 {
            (i as f32 - j as f32) * 0.01 * (head + 1) as f32
        }
    }

    impl Bias for Slope {
        fn scale(&self, head_dim: usize) -> f32 {
            0.5 / (head_dim as f32).sqrt()
        }

        fn add(&mut self, _: &[f32], head: usize, first: usize, k0: usize, keys: usize, scores: &mut [f32]) {
            for (r, row) in scores.chunks_exact_mut(keys).enumerate() {
                for (c, s) in row.iter_mut().enumerate() {
                    *s += Self::at(head, first + r, k0 + c);
                }
            }
        }
    }

    /// Attention written from its definition, every query against every key within `window`,
    /// with [`Slope`]'s bias where `slope`.
    fn naive(qkv: &[f32], t: usize, heads: usize, window: Option<usize>, slope: bool) -> Vec<f32> {
        let h = qkv.len() / t / 3;
        let d = h / heads;
        let mut out = vec![0.0; t * h];
        for head in 0..heads {
            for i in 0..t {
                let seen: Vec<usize> = (0..t)
                    .filter(|&j| window.is_none_or(|w| i.abs_diff(j) <= w))
                    .collect();
                let dot = |j: usize| {
                    (0..d)
                        .map(|x| qkv[i * 3 * h + head * d + x] * qkv[j * 3 * h + h + head * d + x])
                        .sum::<f32>()
                        * if slope { 0.5 } else { 1.0 }
                        / (d as f32).sqrt()
                        + if slope { Slope::at(head, i, j) } else { 0.0 }
                };
                let max = seen.iter().map(|&j| dot(j)).fold(f32::MIN, f32::max);
                let total: f32 = seen.iter().map(|&j| (dot(j) - max).exp()).sum();
                for &j in &seen {
                    let p = (dot(j) - max).exp() / total;
                    for x in 0..d {
                        out[i * h + head * d + x] += p * qkv[j * 3 * h + 2 * h + head * d + x];
                    }
                }
            }
        }
        out
    }

    #[test]
    fn a_threads_buffers_outlive_a_document_up_to_their_bound() {
        Scratch::with(|s| s.qkv.reserve(1000));
        Scratch::with(|s| assert!(s.qkv.capacity() >= 1000, "kept for the next document"));
        Scratch::with(|s| s.inner.reserve(KEPT_BYTES / 4 + 1));
        Scratch::with(|s| assert_eq!(s.inner.capacity() + s.qkv.capacity(), 0, "let go past the bound"));
    }

    #[test]
    fn blocks_windows_and_biases_give_the_definitions_attention() {
        // More tokens than a block, so blocks meet, and windows that cut across them.
        let (t, heads, h) = (BLOCK + 37, 2, 8);
        let qkv: Vec<f32> = (0..t * 3 * h)
            .map(|i| (i * 7919 % 1000) as f32 / 500.0 - 1.0)
            .collect();
        let cases = [None, Some(0), Some(3), Some(BLOCK)].map(|w| (w, false));
        for (window, slope) in cases.into_iter().chain([(None, true), (Some(5), true)]) {
            let mut s = Scratch {
                qkv: qkv.clone(),
                ..Scratch::default()
            };
            let mut slope_bias = Slope;
            let bias = slope.then_some(&mut slope_bias as &mut dyn Bias);
            attend(&mut s, (t, t), heads, window, bias);
            let context = s.context.clone();
            let want = naive(&qkv, t, heads, window, slope);
            let worst = want
                .iter()
                .zip(&context)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            assert!(worst < 1e-5, "window {window:?}, bias {slope}: {worst}");
            // The first token's context alone is the same, to the bit.
            let mut slope_bias = Slope;
            let bias = slope.then_some(&mut slope_bias as &mut dyn Bias);
            attend(&mut s, (t, 1), heads, window, bias);
            assert_eq!(s.context[..h], context[..h]);
            assert!(s.context[h..].iter().all(|&v| v == 0.0));
        }
    }
}
