//! `exp` and `erf` in f32 as branch-free polynomials, and row reductions over sixteen lanes, so
//! that the softmax of attention scores, the GELU of the feed-forward and the layer norm compile to
//! vector code: with the C library's scalar `expf` and `erff` the first two took a tenth of a
//! BERT-base forward pass. PyTorch vectorizes both the same way (its `erf` is the same
//! Abramowitz-Stegun form), so the outputs stay within 1e-6 of transformers'.

/// Sixteen lanes: a loop over arrays of this width is one AVX-512 register, two AVX ones.
const LANES: usize = 16;

/// Defines `$name`, which runs `$portable` compiled for AVX-512F or AVX2 where the CPU has them.
/// Without FMA (Rust never fuses a multiply and an add by itself), every build gives the portable
/// code's bits.
macro_rules! vectorized {
    ($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) => $portable:ident) => {
        $(#[$doc])*
        pub(crate) fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                unsafe fn avx512($($arg: $ty),*) {
                    $portable($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                unsafe fn avx2($($arg: $ty),*) {
                    $portable($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512F, checked above.
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU has AVX2, checked above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $portable($($arg),*)
        }
    };
}

/// e^x within 2 ulp for x in [-87.3, 88.3] (Cephes' `expf`: x = n·ln 2 + r, a degree-6
/// polynomial of r, then 2^n through the exponent bits). Below, e^-87.3 (1.2e-38): a masked score
/// (-inf) weighs nothing an f32 sum of probabilities can see. No branch, so loops vectorize.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    // Rounds to the nearest integer in f32 arithmetic: adding 1.5·2^23 leaves no fraction bits.
    const ROUND: f32 = 12_582_912.0;
    let c = x.clamp(-87.3, 88.3);
    let n = (c * std::f32::consts::LOG2_E + ROUND) - ROUND;
    // ln 2 in two parts, so that r keeps its low bits.
    let r = c - n * 0.693_359_4 + n * 2.121_944_4e-4;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 0.166_666_65;
    p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    // 2^n: n + 127 lands in the low bits of the rounding constant, then in the exponent field.
    let scale = f32::from_bits(((n + 127.0 + ROUND).to_bits() - ROUND.to_bits()) << 23);
    y * scale
}

/// erf(x) within 6e-7 (Abramowitz and Stegun 7.1.26, 1.5e-7, in f32 arithmetic; the form PyTorch's
/// vectorized `erf` uses).
#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = ((((1.061_405_4 * t - 1.453_152) * t + 1.421_413_8) * t - 0.284_496_74) * t
        + 0.254_829_6)
        * t;
    (1.0 - poly * exp(-a * a)).copysign(x)
}

/// `f` over every element of `x`, in place. A flat loop: the loop vectorizer takes it a
/// register at a time (over chunks of lanes it vectorized across the chunks, with gathers).
#[inline(always)]
pub(crate) fn map(x: &mut [f32], f: impl Fn(f32) -> f32) {
    x.iter_mut().for_each(|v| *v = f(*v));
}

vectorized! {
    /// Softmax of each row of `x` (rows of `cols`), in place, shifted by the row's maximum.
    fn softmax_rows(x: &mut [f32], cols: usize) => softmax_rows_portable
}

#[inline(always)]
fn softmax_rows_portable(x: &mut [f32], cols: usize) {
    for row in x.chunks_exact_mut(cols) {
        let top = max(row);
        let inv = 1.0 / exp_sum(row, top);
        map(row, |v| v * inv);
    }
}

vectorized! {
    /// GELU with the exact normal CDF, `x Φ(x) = x (1 + erf(x / √2)) / 2`, in place.
    fn gelu(x: &mut [f32]) => gelu_portable
}

#[inline(always)]
fn gelu_portable(x: &mut [f32]) {
    map(x, |v| 0.5 * v * (1.0 + erf(v * std::f32::consts::FRAC_1_SQRT_2)));
}

vectorized! {
    /// PyTorch's `LayerNorm` of each row of `x` (`w.len()` wide), in place: the biased variance,
    /// `eps` inside the root, the mean and variance summed in f64 (PyTorch's CPU kernel
    /// accumulates in higher precision than its input).
    fn layer_norm_rows(x: &mut [f32], w: &[f32], b: &[f32], eps: f32) => layer_norm_rows_portable
}

#[inline(always)]
fn layer_norm_rows_portable(x: &mut [f32], w: &[f32], b: &[f32], eps: f32) {
    let dim = w.len() as f64;
    for row in x.chunks_exact_mut(w.len()) {
        let mean = sum_f64(row, f64::from) / dim;
        let var = sum_f64(row, |v| (f64::from(v) - mean) * (f64::from(v) - mean)) / dim;
        let inv = 1.0 / (var + f64::from(eps)).sqrt();
        for ((v, w), b) in row.iter_mut().zip(w).zip(b) {
            *v = ((f64::from(*v) - mean) * inv) as f32 * w + b;
        }
    }
}

/// The sum of `f` over `x`, in f64, over the lanes.
#[inline(always)]
fn sum_f64(x: &[f32], f: impl Fn(f32) -> f64) -> f64 {
    let mut lanes = [0.0f64; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (l, &v) in lanes.iter_mut().zip(chunk) {
            *l += f(v);
        }
    }
    lanes.iter().sum::<f64>() + chunks.remainder().iter().map(|&v| f(v)).sum::<f64>()
}

/// The largest element of `x` (-inf for none).
#[inline(always)]
pub(crate) fn max(x: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (l, &v) in lanes.iter_mut().zip(chunk) {
            *l = if v > *l { v } else { *l };
        }
    }
    let rest = chunks.remainder().iter().copied();
    lanes.into_iter().chain(rest).fold(f32::NEG_INFINITY, f32::max)
}

/// Replaces each element by e^(x - shift) and gives their sum.
#[inline(always)]
pub(crate) fn exp_sum(x: &mut [f32], shift: f32) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let mut chunks = x.chunks_exact_mut(LANES);
    for chunk in &mut chunks {
        for (l, v) in lanes.iter_mut().zip(chunk.iter_mut()) {
            *v = exp(*v - shift);
            *l += *v;
        }
    }
    let mut sum: f32 = lanes.iter().sum();
    for v in chunks.into_remainder() {
        *v = exp(*v - shift);
        sum += *v;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_and_erf_stay_within_their_bounds_of_the_exact_functions() {
        let mut worst_exp = 0.0f64;
        let mut worst_erf = 0.0f64;
        for i in -87_000..88_000 {
            let x = i as f32 / 1000.0;
            let want = f64::from(x).exp();
            worst_exp = worst_exp.max((f64::from(exp(x)) - want).abs() / want);
            let x = i as f32 / 10_000.0;
            worst_erf = worst_erf.max((f64::from(erf(x)) - f64::from(libm::erff(x))).abs());
        }
        assert!(worst_exp < 3e-7, "exp: relative {worst_exp}");
        assert!(worst_erf < 6e-7, "erf: {worst_erf}");
        assert!(exp(f32::NEG_INFINITY) < 2e-38 && exp(-100.0) < 2e-38 && exp(0.0) == 1.0);
        assert_eq!((erf(0.0), erf(9.0), erf(-9.0)), (0.0, 1.0, -1.0));
    }

    #[test]
    fn softmax_and_gelu_give_their_definitions_on_every_path() {
        let mut rows: Vec<f32> = (0..40).map(|i| (i as f32 * 0.37).sin() * 5.0).collect();
        let want: Vec<f32> = rows
            .chunks(20)
            .flat_map(|r| {
                let m = r.iter().copied().fold(f32::MIN, f32::max);
                let sum: f32 = r.iter().map(|v| (v - m).exp()).sum();
                r.iter().map(move |v| (v - m).exp() / sum).collect::<Vec<_>>()
            })
            .collect();
        let mut portable = rows.clone();
        softmax_rows_portable(&mut portable, 20);
        softmax_rows(&mut rows, 20);
        assert_eq!(rows, portable, "the vector builds give the portable bits");
        assert!(rows.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-6));
        let mut x = vec![-3.0, -1.0, 0.0, 1.0, 2.5];
        gelu(&mut x);
        let exact = [-0.004_049_694, -0.158_655_25, 0.0, 0.841_344_7, 2.484_475_8];
        assert!(x.iter().zip(exact).all(|(a, b)| (a - b).abs() < 1e-6), "{x:?}");
    }

    #[test]
    fn layer_norm_gives_its_definition_past_the_lanes() {
        let dim = 37;
        let mut x: Vec<f32> = (0..3 * dim).map(|i| ((i * 13 % 29) as f32 - 14.0) / 3.0).collect();
        let (w, b): (Vec<f32>, Vec<f32>) =
            (0..dim).map(|i| (1.0 + i as f32 / 10.0, i as f32 / 7.0 - 2.0)).unzip();
        let mut want = x.clone();
        for row in want.chunks_exact_mut(dim) {
            let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / dim as f64;
            let var = row.iter().map(|&v| (f64::from(v) - mean).powi(2)).sum::<f64>() / dim as f64;
            for ((v, w), b) in row.iter_mut().zip(&w).zip(&b) {
                *v = ((f64::from(*v) - mean) / (var + 1e-5).sqrt()) as f32 * w + b;
            }
        }
        let mut portable = x.clone();
        layer_norm_rows_portable(&mut portable, &w, &b, 1e-5);
        layer_norm_rows(&mut x, &w, &b, 1e-5);
        assert_eq!(x, portable, "the vector builds give the portable bits");
        assert!(x.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-5), "{x:?}");
    }

    #[test]
    fn row_reductions_cover_every_element() {
        let mut x: Vec<f32> = (0..19).map(|i| (i as f32 - 9.0) / 4.0).collect();
        assert_eq!(max(&x), 2.25);
        let want: f32 = x.iter().map(|v| (v - 2.25).exp()).sum();
        let got = exp_sum(&mut x, 2.25);
        assert!((got - want).abs() < 1e-5 && x[18] == 1.0, "{got} {want}");
        assert_eq!(max(&[]), f32::NEG_INFINITY);
    }
}
