//! `exp` and `erf` in f32 as branch-free polynomials, and row reductions over eight lanes, so that
//! the softmax of attention scores and the GELU of the feed-forward compile to vector code: with
//! the C library's scalar `expf` and `erff` they took a tenth of a BERT-base forward pass. PyTorch
//! vectorizes both the same way (its `erf` is the same Abramowitz-Stegun form), so the outputs stay
//! within 1e-6 of transformers'.

/// Eight lanes: a loop over arrays of this width vectorizes with SSE2 or AVX.
const LANES: usize = 8;

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

/// `f` over every element of `x`, in place.
#[inline(always)]
pub(crate) fn map(x: &mut [f32], f: impl Fn(f32) -> f32) {
    let mut chunks = x.chunks_exact_mut(LANES);
    for chunk in &mut chunks {
        for v in chunk.iter_mut() {
            *v = f(*v);
        }
    }
    chunks.into_remainder().iter_mut().for_each(|v| *v = f(*v));
}

/// Softmax of each row of `x` (rows of `cols`), in place, shifted by the row's maximum.
pub(crate) fn softmax_rows(x: &mut [f32], cols: usize) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked above.
        return unsafe { softmax_rows_avx2(x, cols) };
    }
    softmax_rows_portable(x, cols);
}

/// The same code compiled for AVX2: eight lanes in one register. No FMA, so the results are
/// those of the portable code to the bit.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn softmax_rows_avx2(x: &mut [f32], cols: usize) {
    softmax_rows_portable(x, cols);
}

#[inline(always)]
fn softmax_rows_portable(x: &mut [f32], cols: usize) {
    for row in x.chunks_exact_mut(cols) {
        let top = max(row);
        let inv = 1.0 / exp_sum(row, top);
        map(row, |v| v * inv);
    }
}

/// GELU with the exact normal CDF, `x Φ(x) = x (1 + erf(x / √2)) / 2`, in place.
pub(crate) fn gelu(x: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked above.
        return unsafe { gelu_avx2(x) };
    }
    gelu_portable(x);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gelu_avx2(x: &mut [f32]) {
    gelu_portable(x);
}

#[inline(always)]
fn gelu_portable(x: &mut [f32]) {
    map(x, |v| 0.5 * v * (1.0 + erf(v * std::f32::consts::FRAC_1_SQRT_2)));
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
        assert_eq!(rows, portable, "the AVX2 build gives the portable bits");
        assert!(rows.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-6));
        let mut x = vec![-3.0, -1.0, 0.0, 1.0, 2.5];
        gelu(&mut x);
        let exact = [-0.004_049_694, -0.158_655_25, 0.0, 0.841_344_7, 2.484_475_8];
        assert!(x.iter().zip(exact).all(|(a, b)| (a - b).abs() < 1e-6), "{x:?}");
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
