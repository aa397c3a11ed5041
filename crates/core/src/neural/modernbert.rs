//! The ModernBERT encoder, as `transformers`' `ModernBertModel` computes it in fp32 at inference:
//! token embeddings and a norm; layers that normalize before attention (not the first) and before
//! a gated feed-forward, with rotary positions, every few layers attending globally and the others
//! within a sliding window; a final norm. No position table: the rotary angles are computed.

use super::attention::{attend, Scratch};
use super::config::{Config, Modern};
use super::encoder::{residual, row};
use super::ops::{Activation, LayerNorm, Linear};
use super::weights::Weights;

struct Layer {
    /// `None` in the first layer, whose input is the embeddings' norm already.
    attn_norm: Option<LayerNorm>,
    qkv: Linear,
    out: Linear,
    mlp_norm: LayerNorm,
    /// Input and gate side by side (`Wi`), then `Wo`.
    up: Linear,
    down: Linear,
    global: bool,
}

/// A loaded ModernBERT encoder.
pub(crate) struct ModernEncoder {
    hidden: usize,
    heads: usize,
    intermediate: usize,
    activation: Activation,
    window: usize,
    /// The rotary frequencies of global and of local layers (`head_dim / 2` each).
    global_freqs: Vec<f32>,
    local_freqs: Vec<f32>,
    words: Vec<f32>,
    norm: LayerNorm,
    layers: Vec<Layer>,
    final_norm: LayerNorm,
}

/// Rotary inverse frequencies, as transformers computes them in f32:
/// `1 / base^(2i / head_dim)`.
fn frequencies(base: f64, head_dim: usize) -> Vec<f32> {
    (0..head_dim / 2)
        .map(|i| {
            let exponent = (2 * i) as f32 / head_dim as f32;
            1.0 / base.powf(f64::from(exponent)) as f32
        })
        .collect()
}

/// The cosines and sines of the rotary angles of positions `0..t` (`t x half` each, f32 angles).
fn angles(freqs: &[f32], t: usize, cos: &mut Vec<f32>, sin: &mut Vec<f32>) {
    cos.clear();
    sin.clear();
    for pos in 0..t {
        for &f in freqs {
            let angle = f64::from(pos as f32 * f);
            cos.push(angle.cos() as f32);
            sin.push(angle.sin() as f32);
        }
    }
}

/// Rotates the queries and keys of `qkv` (`t x 3h`) in place: within each head, the halves
/// `(x1, x2)` become `(x1·cos − x2·sin, x2·cos + x1·sin)`, transformers' `rotate_half` form.
fn rotate(qkv: &mut [f32], h: usize, heads: usize, cos: &[f32], sin: &[f32]) {
    let d = h / heads;
    let half = d / 2;
    for (token, row) in qkv.chunks_exact_mut(3 * h).enumerate() {
        let (c, s) = (&cos[token * half..][..half], &sin[token * half..][..half]);
        for head in row[..2 * h].chunks_exact_mut(d) {
            let (x1, x2) = head.split_at_mut(half);
            for i in 0..half {
                let (a, b) = (x1[i], x2[i]);
                x1[i] = a * c[i] + -b * s[i];
                x2[i] = b * c[i] + a * s[i];
            }
        }
    }
}

impl ModernEncoder {
    /// The encoder's tensors under `prefix` (`model.` in a task model, empty in a bare one).
    pub(crate) fn load(
        w: &Weights,
        c: &Config,
        m: &Modern,
        prefix: &str,
    ) -> Result<Self, String> {
        let (h, eps) = (c.hidden, c.eps);
        let norm = |name: &str| LayerNorm::load_with(w, &format!("{prefix}{name}"), h, eps, m.norm_bias);
        let layer = |i: usize| -> Result<Layer, String> {
            let p = format!("{prefix}layers.{i}.");
            Ok(Layer {
                attn_norm: (i > 0).then(|| norm(&format!("layers.{i}.attn_norm"))).transpose()?,
                qkv: Linear::load_with(w, &format!("{p}attn.Wqkv"), h, 3 * h, m.attention_bias)?,
                out: Linear::load_with(w, &format!("{p}attn.Wo"), h, h, m.attention_bias)?,
                mlp_norm: norm(&format!("layers.{i}.mlp_norm"))?,
                up: Linear::load_with(w, &format!("{p}mlp.Wi"), h, 2 * c.intermediate, m.mlp_bias)?,
                down: Linear::load_with(w, &format!("{p}mlp.Wo"), c.intermediate, h, m.mlp_bias)?,
                global: m.global[i],
            })
        };
        let d = h / c.heads;
        if d % 2 != 0 {
            return Err(format!("a head dimension of {d} is odd: rotary positions need an even one"));
        }
        Ok(Self {
            hidden: h,
            heads: c.heads,
            intermediate: c.intermediate,
            activation: c.activation,
            window: m.window,
            global_freqs: frequencies(m.theta_global, d),
            local_freqs: frequencies(m.theta_local, d),
            words: w.take(&format!("{prefix}embeddings.tok_embeddings.weight"), &[c.vocab, h])?,
            norm: norm("embeddings.norm")?,
            layers: (0..c.layers).map(layer).collect::<Result<_, _>>()?,
            final_norm: norm("final_norm")?,
        })
    }

    /// The last hidden states of one sequence (`ids.len() x hidden`, row-major), or the first
    /// token's alone with `first_only`, as [`super::encoder::Encoder::forward`].
    pub(crate) fn forward(&self, ids: &[u32], first_only: bool) -> Result<Vec<f32>, String> {
        let (t, h) = (ids.len(), self.hidden);
        let mut x = Vec::with_capacity(t * h);
        for &id in ids {
            x.extend_from_slice(row(&self.words, h, id as usize, "token id")?);
        }
        self.norm.apply(&mut x);
        let mut rotary = [(Vec::new(), Vec::new()), (Vec::new(), Vec::new())];
        angles(&self.global_freqs, t, &mut rotary[0].0, &mut rotary[0].1);
        angles(&self.local_freqs, t, &mut rotary[1].0, &mut rotary[1].1);
        let layers = self.layers.len();
        Scratch::with(|s| {
            for (i, layer) in self.layers.iter().enumerate() {
                let (cos, sin) = &rotary[usize::from(!layer.global)];
                let rows = if first_only && i + 1 == layers { 1 } else { t };
                self.layer(layer, &mut x, (t, rows), cos, sin, s);
            }
        });
        if first_only {
            x.truncate(h);
        }
        self.final_norm.apply(&mut x);
        Ok(x)
    }

    /// A layer over `t` tokens, whose first `rows` come out.
    fn layer(&self, l: &Layer, x: &mut [f32], (t, rows): (usize, usize), cos: &[f32], sin: &[f32], s: &mut Scratch) {
        let h = self.hidden;
        let input = match &l.attn_norm {
            Some(norm) => {
                s.normed.clear();
                s.normed.extend_from_slice(x);
                norm.apply(&mut s.normed);
                &s.normed
            }
            None => &*x,
        };
        l.qkv.apply(input, t, &mut s.qkv);
        rotate(&mut s.qkv, h, self.heads, cos, sin);
        let window = (!l.global).then_some(self.window);
        attend(s, (t, rows), self.heads, window, None);
        let x = &mut x[..rows * h];
        l.out.apply(&s.context, rows, &mut s.projected);
        residual(x, &s.projected);
        s.normed.clear();
        s.normed.extend_from_slice(x);
        l.mlp_norm.apply(&mut s.normed);
        l.up.apply(&s.normed, rows, &mut s.inner);
        // Each row holds the input half, then the gate: act(input) · gate.
        let inner = self.intermediate;
        s.gated.clear();
        for row in s.inner.chunks_exact(2 * inner) {
            let start = s.gated.len();
            s.gated.extend_from_slice(&row[..inner]);
            let act = &mut s.gated[start..];
            self.activation.apply(act);
            act.iter_mut().zip(&row[inner..]).for_each(|(a, g)| *a *= g);
        }
        l.down.apply(&s.gated, rows, &mut s.projected);
        residual(x, &s.projected);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_turns_each_pair_by_its_angle() {
        // One token, one head of 4: pairs (x0, x2) and (x1, x3), turned by 90 and 0 degrees.
        let mut qkv = vec![1.0, 2.0, 3.0, 4.0, 1.0, 0.0, 0.0, 0.0, 9.0, 9.0, 9.0, 9.0];
        rotate(&mut qkv, 4, 1, &[0.0, 1.0], &[1.0, 0.0]);
        assert_eq!(&qkv[..4], &[-3.0, 2.0, 1.0, 4.0]);
        assert_eq!(&qkv[8..], &[9.0; 4], "values are not rotated");
    }

    #[test]
    fn frequencies_fall_from_one_by_the_base() {
        let f = frequencies(10_000.0, 4);
        assert_eq!(f[0], 1.0);
        assert!((f[1] - 0.01).abs() < 1e-9);
    }
}
