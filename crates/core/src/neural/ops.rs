//! The fp32 kernels of an encoder, on row-major matrices: dense layers over one matrix
//! multiplication routine, layer norm, activations and a row softmax. Each runs on the calling
//! thread: a partition is one compute thread, so `--partitions` sets how many cores work.

use std::ops::Range;

use super::lanes;
pub(crate) use super::lanes::softmax_rows;
use super::packed::Packed;
use super::weights::Weights;

/// `c = alpha * a·b + beta * c` for row-major strided views: `a` is `m x k` (row stride `rsa`,
/// column stride `csa`), `b` is `k x n`, `c` is `m x n` with row stride `rsc`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm(
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: &[f32],
    (rsa, csa): (usize, usize),
    b: &[f32],
    (rsb, csb): (usize, usize),
    beta: f32,
    c: &mut [f32],
    rsc: usize,
) {
    // The views must lie inside their slices; matrixmultiply reads through raw pointers.
    let last = |rows: usize, cols: usize, rs: usize, cs: usize| {
        (rows.max(1) - 1) * rs + (cols.max(1) - 1) * cs
    };
    assert!(
        m == 0
            || n == 0
            || k == 0
            || (last(m, k, rsa, csa) < a.len()
                && last(k, n, rsb, csb) < b.len()
                && last(m, n, rsc, 1) < c.len())
    );
    // SAFETY: every element the views address is inside its slice (checked above), and `c` is
    // borrowed mutably, so it overlaps neither `a` nor `b`.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            alpha,
            a.as_ptr(),
            rsa as isize,
            csa as isize,
            b.as_ptr(),
            rsb as isize,
            csb as isize,
            beta,
            c.as_mut_ptr(),
            rsc as isize,
            1,
        );
    }
}

/// A `rows x cols` matrix whose element `(r, c)` is `src[(r * cols + c) * stride + offset]`,
/// transposed into `cols x rows` row-major: one tap of a `Conv1d`'s `out x in x tap` weights
/// (stride = taps). In tiles, so that both sides stay in cache.
pub(crate) fn transposed(src: &[f32], rows: usize, cols: usize, stride: usize, offset: usize) -> Vec<f32> {
    const TILE: usize = 32;
    let mut out = vec![0.0; rows * cols];
    for r0 in (0..rows).step_by(TILE) {
        for c0 in (0..cols).step_by(TILE) {
            for r in r0..(r0 + TILE).min(rows) {
                for c in c0..(c0 + TILE).min(cols) {
                    out[c * rows + r] = src[(r * cols + c) * stride + offset];
                }
            }
        }
    }
    out
}

/// A dense layer `y = x·Wᵀ + b`. PyTorch's `Linear` stores `W` as `out x in`; it is packed
/// transposed (`in x out`) for the CPU's kernel ([`Packed`]), read straight from the file's layout.
pub(crate) struct Linear {
    w: Packed,
    b: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl Linear {
    /// `{name}.weight` (`outputs x inputs`) and `{name}.bias` from a file.
    pub(crate) fn load(
        w: &Weights,
        name: &str,
        inputs: usize,
        outputs: usize,
    ) -> Result<Self, String> {
        Self::load_with(w, name, inputs, outputs, true)
    }

    /// As [`Linear::load`], with a bias only where `bias` says the model has one (ModernBERT's
    /// `attention_bias`, `mlp_bias`, `classifier_bias`); zeros otherwise.
    pub(crate) fn load_with(
        w: &Weights,
        name: &str,
        inputs: usize,
        outputs: usize,
        bias: bool,
    ) -> Result<Self, String> {
        let weight = w.take(&format!("{name}.weight"), &[outputs, inputs])?;
        let b = if bias {
            w.take(&format!("{name}.bias"), &[outputs])?
        } else {
            vec![0.0; outputs]
        };
        Ok(Self::new(&weight, b, inputs))
    }

    /// Layers of `outputs` each over the same input as one (query, key and value): their
    /// outputs side by side, as their weights one under the other.
    pub(crate) fn load_stacked(
        w: &Weights,
        names: &[String],
        inputs: usize,
        outputs: usize,
    ) -> Result<Self, String> {
        let mut weight = Vec::with_capacity(names.len() * outputs * inputs);
        let mut b = Vec::with_capacity(names.len() * outputs);
        for name in names {
            weight.extend(w.take(&format!("{name}.weight"), &[outputs, inputs])?);
            b.extend(w.take(&format!("{name}.bias"), &[outputs])?);
        }
        Ok(Self::new(&weight, b, inputs))
    }

    /// The layer of `weight` (`outputs x inputs`, row-major) and bias `b` (`outputs`).
    fn new(weight: &[f32], b: Vec<f32>, inputs: usize) -> Self {
        let outputs = b.len();
        let mut w = Packed::default();
        w.pack(weight, inputs, outputs, (1, inputs), 1.0);
        Self {
            w,
            b,
            inputs,
            outputs,
        }
    }

    /// `rows` inputs of `x` (row-major, `rows x inputs`) through the layer, into `y`.
    pub(crate) fn apply(&self, x: &[f32], rows: usize, y: &mut Vec<f32>) {
        self.apply_part(x, rows, 0..self.outputs, y);
    }

    /// As [`Linear::apply`], for the outputs in `columns` alone (`rows x columns.len()`): one
    /// block of a stacked layer, such as the keys of a fused query-key-value projection.
    pub(crate) fn apply_part(&self, x: &[f32], rows: usize, columns: Range<usize>, y: &mut Vec<f32>) {
        let bias = &self.b[columns.clone()];
        y.clear();
        for _ in 0..rows {
            y.extend_from_slice(bias);
        }
        let width = columns.len();
        self.w.add_product(x, self.inputs, rows, columns, y, width);
    }
}

/// PyTorch's `LayerNorm` over each row of `x`: biased variance, `eps` inside the root.
pub(crate) struct LayerNorm {
    w: Vec<f32>,
    b: Vec<f32>,
    eps: f32,
}

impl LayerNorm {
    /// `{name}.weight` and `{name}.bias` of width `dim`.
    pub(crate) fn load(w: &Weights, name: &str, dim: usize, eps: f32) -> Result<Self, String> {
        Self::load_with(w, name, dim, eps, true)
    }

    /// As [`LayerNorm::load`], with a bias only where `bias` says so (ModernBERT's `norm_bias`).
    pub(crate) fn load_with(
        w: &Weights,
        name: &str,
        dim: usize,
        eps: f32,
        bias: bool,
    ) -> Result<Self, String> {
        let b = if bias {
            w.take(&format!("{name}.bias"), &[dim])?
        } else {
            vec![0.0; dim]
        };
        Ok(Self {
            w: w.take(&format!("{name}.weight"), &[dim])?,
            b,
            eps,
        })
    }

    /// Normalizes every row of `x` in place.
    pub(crate) fn apply(&self, x: &mut [f32]) {
        lanes::layer_norm_rows(x, &self.w, &self.b, self.eps);
    }
}

/// An encoder's feed-forward activation, by its name in `config.json` (`hidden_act`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Activation {
    /// `gelu`: `x Φ(x)` with the exact normal CDF.
    Gelu,
    /// `gelu_new`, `gelu_pytorch_tanh`: the tanh approximation.
    GeluTanh,
    /// `relu`.
    Relu,
    /// `tanh` (DeBERTa's convolution and some poolers).
    Tanh,
}

impl Activation {
    /// The activation `config.json` names under `key`.
    pub(crate) fn named(key: &str, name: &str) -> Result<Self, String> {
        match name {
            "gelu" => Ok(Self::Gelu),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Ok(Self::GeluTanh),
            "relu" => Ok(Self::Relu),
            "tanh" => Ok(Self::Tanh),
            other => Err(format!(
                "{key} '{other}' is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu, tanh)"
            )),
        }
    }

    /// Applies the activation in place.
    pub(crate) fn apply(self, x: &mut [f32]) {
        match self {
            Self::Gelu => lanes::gelu(x),
            Self::GeluTanh => {
                const C: f32 = 0.797_884_6; // sqrt(2 / pi)
                x.iter_mut().for_each(|v| {
                    *v = 0.5 * *v * (1.0 + (C * (*v + 0.044715 * *v * *v * *v)).tanh())
                })
            }
            Self::Relu => x.iter_mut().for_each(|v| *v = v.max(0.0)),
            Self::Tanh => x.iter_mut().for_each(|v| *v = v.tanh()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemm_reads_transposed_views() {
        // a = [[1, 2], [3, 4]], b = aᵀ read through swapped strides: a·aᵀ.
        let a = [1.0, 2.0, 3.0, 4.0];
        let mut c = [0.0; 4];
        gemm(2, 2, 2, 1.0, &a, (2, 1), &a, (1, 2), 0.0, &mut c, 2);
        assert_eq!(c, [5.0, 11.0, 11.0, 25.0]);
    }

    #[test]
    fn stacked_layers_give_each_layers_outputs_side_by_side() {
        // Two layers of 2 inputs: W1 = [[1, 2]], W2 = [[3, 4], [5, 6]] (out x in), biases 0.
        let both = Linear::new(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], vec![0.0; 3], 2);
        let mut y = Vec::new();
        both.apply(&[1.0, 1.0, 2.0, 0.0], 2, &mut y);
        assert_eq!(y, [3.0, 7.0, 11.0, 2.0, 6.0, 10.0]);
        // One block of the stack alone: the second layer's outputs.
        both.apply_part(&[1.0, 1.0, 2.0, 0.0], 2, 1..3, &mut y);
        assert_eq!(y, [7.0, 11.0, 6.0, 10.0]);
    }

    #[test]
    fn transposes_past_a_tile_and_through_a_stride() {
        // 40 x 35 (more than one tile each way), element (r, c) = 100r + c.
        let (rows, cols) = (40, 35);
        let src: Vec<f32> = (0..rows * cols).map(|x| (x / cols * 100 + x % cols) as f32).collect();
        let t = transposed(&src, rows, cols, 1, 0);
        assert!((0..rows * cols).all(|x| t[x] == (x % rows * 100 + x / rows) as f32));
        // Tap 1 of a 2 x 2 x 3 Conv1d weight (`out x in x tap`): element (o, i) at (2o + i)·3 + 1.
        let conv: Vec<f32> = (0..12).map(|x| x as f32).collect();
        assert_eq!(transposed(&conv, 2, 2, 3, 1), [1.0, 7.0, 4.0, 10.0]);
    }

    #[test]
    fn layer_norm_and_softmax_match_their_definitions() {
        let ln = LayerNorm {
            w: vec![2.0, 2.0],
            b: vec![1.0, 1.0],
            eps: 0.0,
        };
        let mut x = [1.0, 3.0];
        ln.apply(&mut x);
        assert_eq!(x, [-1.0, 3.0]);
        let mut s = [0.0, 0.0, 1000.0, 1000.0];
        softmax_rows(&mut s, 2);
        assert_eq!(s, [0.5, 0.5, 0.5, 0.5]);
    }

    #[test]
    fn gelu_is_exact_at_known_points() {
        let mut x = [0.0, 1.0, -1.0];
        Activation::Gelu.apply(&mut x);
        assert!(
            (x[1] - 0.841_344_7).abs() < 1e-6 && (x[2] + 0.158_655_3).abs() < 1e-6 && x[0] == 0.0,
            "{x:?}"
        );
    }
}
