//! A dense layer's product `y += x·W`, with the constant `W` (`k x n`) laid out once, at load, in
//! the order a micro-kernel reads it: per block of [`KC`] rows of `W`, panels of a register tile's
//! width, each `kc x width` and contiguous, zeros past the last column. The activations `x` are
//! read in place, one broadcast element of a row at a time, so nothing is copied per call.
//!
//! Why not matrixmultiply alone: it packs both operands on every call, and packing the row-major
//! activations is a transposing gather (14% of a small encoder's run under `perf`, beside 61% in
//! its kernel). Kernels here: AVX-512F, 12 rows x 32 columns in 24 of its 32 registers; AVX2 with
//! FMA, 6 x 16 in 12 of 16. Other CPUs keep `W` row-major and call matrixmultiply (NEON on
//! aarch64). The x86 kernels sum each output over `k` in order, one fused multiply-add per term,
//! so a row comes out the same alone or among others.

use std::ops::Range;

use super::ops::gemm;

/// Rows of `W` per block: one panel (32 KiB at 32 columns) stays in the L1 cache while every
/// row of `x` passes over it; the block of `x` it meets (`m x KC`) stays in L2.
const KC: usize = 256;

/// The micro-kernel a CPU runs, and with it the layout of the packed weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// `W` row-major, through matrixmultiply.
    RowMajor,
}

impl Kernel {
    fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Self::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Self::Avx2;
            }
        }
        Self::RowMajor
    }

    /// Columns per panel and rows per call of the kernel (none for the row-major layout).
    fn tile(self) -> Option<(usize, usize)> {
        match self {
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => Some((32, 12)),
            #[cfg(target_arch = "x86_64")]
            Self::Avx2 => Some((16, 6)),
            Self::RowMajor => None,
        }
    }
}

/// `W`, packed for this CPU's kernel. A layer packs its weights once; attention packs a head's
/// keys and values into the same buffer again and again ([`Packed::pack`]).
pub(crate) struct Packed {
    /// The panels from `start`, which is 64-byte aligned, so every panel row is one or two
    /// aligned vector loads.
    data: Vec<f32>,
    start: usize,
    k: usize,
    n: usize,
    kernel: Kernel,
}

impl Default for Packed {
    fn default() -> Self {
        Self {
            data: Vec::new(),
            start: 0,
            k: 0,
            n: 0,
            kernel: Kernel::detect(),
        }
    }
}

impl Packed {
    /// What the buffer holds allocated.
    pub(crate) fn bytes(&self) -> usize {
        self.data.capacity() * 4
    }

    /// Packs the `k x n` matrix whose element `(i, j)` is `b[i * rs + j * cs]`, times `factor`,
    /// in place of what was packed.
    pub(crate) fn pack(
        &mut self,
        b: &[f32],
        k: usize,
        n: usize,
        (rs, cs): (usize, usize),
        factor: f32,
    ) {
        assert!(k == 0 || n == 0 || (k - 1) * rs + (n - 1) * cs < b.len());
        // Row-major: one panel of every column.
        let width = self.kernel.tile().map_or(n, |(width, _)| width).max(1);
        let len = k * n.div_ceil(width) * width;
        self.data.clear();
        self.data.resize(len + 16, 0.0);
        self.start = self.data.as_ptr().align_offset(64).min(16);
        (self.k, self.n) = (k, n);
        let out = &mut self.data[self.start..][..len];
        let mut at = 0;
        for k0 in (0..k).step_by(KC) {
            for c0 in (0..n).step_by(width) {
                let cols = width.min(n - c0);
                for i in k0..KC.min(k - k0) + k0 {
                    let row = &mut out[at..at + cols];
                    if cs == 1 && factor == 1.0 {
                        row.copy_from_slice(&b[i * rs + c0..][..cols]);
                    } else {
                        row.iter_mut()
                            .enumerate()
                            .for_each(|(j, v)| *v = b[i * rs + (c0 + j) * cs] * factor);
                    }
                    at += width;
                }
            }
        }
    }

    /// `y += x·W[:, cols]`, where `x` is `m x k` with row stride `lda` and `y` is
    /// `m x cols.len()` with row stride `ldc`.
    pub(crate) fn add_product(
        &self,
        x: &[f32],
        lda: usize,
        m: usize,
        cols: Range<usize>,
        y: &mut [f32],
        ldc: usize,
    ) {
        let (k, n) = (self.k, cols.len());
        if m == 0 || k == 0 || n == 0 {
            return;
        }
        assert!(cols.end <= self.n && k <= lda && n <= ldc);
        assert!(x.len() >= (m - 1) * lda + k && y.len() >= (m - 1) * ldc + n);
        let Some((width, rows_per_call)) = self.kernel.tile() else {
            let w = &self.data[self.start + cols.start..];
            return gemm(m, k, n, 1.0, x, (lda, 1), w, (self.n, 1), 1.0, y, ldc);
        };
        let first = cols.start / width * width;
        if first != cols.start {
            // A block starting inside a panel (DeBERTa's key block of a stack whose width is not
            // a multiple of the panel's): the panels it touches, then its columns.
            let wide_cols = cols.end - first;
            let mut wide = vec![0.0; m * wide_cols];
            self.add_product(x, lda, m, first..cols.end, &mut wide, wide_cols);
            for (row, from) in y.chunks_mut(ldc).zip(wide.chunks_exact(wide_cols)) {
                row[..n]
                    .iter_mut()
                    .zip(&from[cols.start - first..])
                    .for_each(|(v, w)| *v += w);
            }
            return;
        }
        let panels = self.n.div_ceil(width);
        let data = &self.data[self.start..];
        for k0 in (0..k).step_by(KC) {
            let kc = KC.min(k - k0);
            // Every block before this one has KC rows.
            let block = &data[k0 * panels * width..];
            for c0 in cols.clone().step_by(width) {
                let panel = &block[c0 / width * kc * width..][..kc * width];
                let valid = width.min(cols.end - c0);
                for r0 in (0..m).step_by(rows_per_call) {
                    let rows = rows_per_call.min(m - r0);
                    let a = &x[r0 * lda + k0..];
                    let c = &mut y[r0 * ldc + c0 - cols.start..];
                    // The kernel reads `rows` rows of `kc` from `a` and the panel, and writes
                    // `rows` rows of `valid` into `c`: all inside the slices.
                    debug_assert!(
                        a.len() >= (rows - 1) * lda + kc && c.len() >= (rows - 1) * ldc + valid
                    );
                    let call = Call { kc, a: a.as_ptr(), lda, b: panel.as_ptr(), c: c.as_mut_ptr(), ldc, valid };
                    // SAFETY: the bounds above; the CPU has the kernel's features (`detect`).
                    unsafe { self.kernel.run(rows, call) };
                }
            }
        }
    }
}

/// Calls the kernel instantiated for `$rows` (1 to the largest listed).
macro_rules! for_rows {
    ($rows:expr, $f:ident, $args:tt, [$($r:literal)*]) => {
        match $rows {
            $($r => $f::<$r> $args,)*
            _ => unreachable!("more rows than the kernel's tile"),
        }
    };
}

/// One call of a kernel: `c[r][j] += Σ a[r][i]·b[i][j]` for `r <` the rows it is instantiated
/// for, `i < kc`, `j < valid`; `a` with row stride `lda`, `b` a panel (`kc x` the tile's width,
/// aligned), `c` with row stride `ldc`.
#[derive(Clone, Copy)]
struct Call {
    kc: usize,
    a: *const f32,
    lda: usize,
    b: *const f32,
    c: *mut f32,
    ldc: usize,
    valid: usize,
}

impl Kernel {
    /// `call` over `rows` rows.
    unsafe fn run(self, rows: usize, call: Call) {
        match self {
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => for_rows!(rows, avx512, (call), [1 2 3 4 5 6 7 8 9 10 11 12]),
            #[cfg(target_arch = "x86_64")]
            Self::Avx2 => for_rows!(rows, avx2, (call), [1 2 3 4 5 6]),
            Self::RowMajor => unreachable!("the row-major layout has no kernel"),
        }
    }
}

/// `R` rows by two registers of columns, the register type's lanes each (32 columns in AVX-512,
/// 16 in AVX2): the accumulators stay in registers, one broadcast element of `a` meets both
/// registers of a panel row. Masked loads and stores keep to the `valid` columns (a masked-out
/// lane neither reads nor faults). Inlined into the callers below, it takes their features.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // indexed so that the accumulators stay in registers
unsafe fn tile<V: Register, const R: usize>(Call { kc, a, lda, b, c, ldc, valid }: Call) {
    let w = V::LANES;
    let (lo, hi) = (V::mask(valid), V::mask(valid.saturating_sub(w)));
    let mut acc = [[V::zero(); 2]; R];
    for r in 0..R {
        let row = c.wrapping_add(r * ldc);
        acc[r] = [V::load_masked(row, lo), V::load_masked(row.wrapping_add(w), hi)];
    }
    for i in 0..kc {
        let b0 = V::load_aligned(b.add(i * 2 * w));
        let b1 = V::load_aligned(b.add(i * 2 * w + w));
        for r in 0..R {
            let x = V::splat(*a.add(r * lda + i));
            acc[r][0] = V::fma(x, b0, acc[r][0]);
            acc[r][1] = V::fma(x, b1, acc[r][1]);
        }
    }
    for r in 0..R {
        let row = c.wrapping_add(r * ldc);
        V::store_masked(acc[r][0], row, lo);
        V::store_masked(acc[r][1], row.wrapping_add(w), hi);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn avx512<const R: usize>(call: Call) {
    tile::<std::arch::x86_64::__m512, R>(call)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn avx2<const R: usize>(call: Call) {
    tile::<std::arch::x86_64::__m256, R>(call)
}

/// A vector register of f32 lanes, as [`tile`] uses it. Callers hold the CPU features.
trait Register: Copy {
    const LANES: usize;
    type Mask: Copy;
    /// The first `n` lanes (at most all).
    unsafe fn mask(n: usize) -> Self::Mask;
    unsafe fn zero() -> Self;
    unsafe fn load_masked(p: *const f32, m: Self::Mask) -> Self;
    unsafe fn load_aligned(p: *const f32) -> Self;
    unsafe fn splat(x: f32) -> Self;
    /// `x·y + acc`, rounded once.
    unsafe fn fma(x: Self, y: Self, acc: Self) -> Self;
    unsafe fn store_masked(self, p: *mut f32, m: Self::Mask);
}

/// [`Register`] for an x86 register type from its intrinsics.
macro_rules! register {
    ($ty:ident, $lanes:literal, $mask:ident, |$n:ident| $make_mask:expr,
     $zero:ident, |$p:ident, $m:ident| $load_masked:expr, $load:ident, $splat:ident, $fma:ident,
     |$v:ident| $store_masked:expr) => {
        #[cfg(target_arch = "x86_64")]
        impl Register for std::arch::x86_64::$ty {
            const LANES: usize = $lanes;
            type Mask = std::arch::x86_64::$mask;
            #[inline(always)]
            unsafe fn mask($n: usize) -> Self::Mask {
                use std::arch::x86_64::*;
                $make_mask
            }
            #[inline(always)]
            unsafe fn zero() -> Self {
                std::arch::x86_64::$zero()
            }
            #[inline(always)]
            unsafe fn load_masked($p: *const f32, $m: Self::Mask) -> Self {
                use std::arch::x86_64::*;
                $load_masked
            }
            #[inline(always)]
            unsafe fn load_aligned(p: *const f32) -> Self {
                std::arch::x86_64::$load(p)
            }
            #[inline(always)]
            unsafe fn splat(x: f32) -> Self {
                std::arch::x86_64::$splat(x)
            }
            #[inline(always)]
            unsafe fn fma(x: Self, y: Self, acc: Self) -> Self {
                std::arch::x86_64::$fma(x, y, acc)
            }
            #[inline(always)]
            unsafe fn store_masked(self, $p: *mut f32, $m: Self::Mask) {
                use std::arch::x86_64::*;
                let $v = self;
                $store_masked
            }
        }
    };
}

register!(__m512, 16, __mmask16, |n| ((1u32 << n.min(16)) - 1) as __mmask16,
    _mm512_setzero_ps, |p, m| _mm512_maskz_loadu_ps(m, p), _mm512_load_ps, _mm512_set1_ps, _mm512_fmadd_ps,
    |v| _mm512_mask_storeu_ps(p, m, v));
register!(__m256, 8, __m256i, |n| _mm256_cmpgt_epi32(_mm256_set1_epi32(n.min(8) as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
    _mm256_setzero_ps, |p, m| _mm256_maskload_ps(p, m), _mm256_load_ps, _mm256_set1_ps, _mm256_fmadd_ps,
    |v| _mm256_maskstore_ps(p, m, v));

#[cfg(test)]
mod tests {
    use super::*;

    impl Packed {
        fn for_kernel(w: &[f32], k: usize, n: usize, kernel: Kernel) -> Self {
            let mut packed = Self {
                kernel,
                ..Self::default()
            };
            packed.pack(w, k, n, (n, 1), 1.0);
            packed
        }
    }

    /// Every kernel this CPU has, and the row-major path.
    fn kernels() -> Vec<Kernel> {
        let mut all = vec![Kernel::RowMajor];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                all.push(Kernel::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                all.push(Kernel::Avx512);
            }
        }
        all
    }

    #[test]
    fn every_kernel_gives_the_product_over_ragged_shapes_and_column_blocks() {
        // Past one block of KC, past a tile's rows and panels, with remainders everywhere.
        let shapes = [
            (1, 1, 1),
            (13, 300, 70),
            (7, 33, 17),
            (25, 513, 45),
            (12, 256, 32),
            (3, 5, 96),
        ];
        let value =
            |i: usize, salt: usize| ((i * 7919 + salt * 104_729) % 2003) as f32 / 1001.0 - 1.0;
        for kernel in kernels() {
            for &(m, k, n) in &shapes {
                let w: Vec<f32> = (0..k * n).map(|i| value(i, 1)).collect();
                let x: Vec<f32> = (0..m * k).map(|i| value(i, 2)).collect();
                let packed = Packed::for_kernel(&w, k, n, kernel);
                let mut strided = Packed {
                    kernel,
                    ..Packed::default()
                };
                // The same matrix read transposed out of its transpose, and halved then doubled.
                let w_t: Vec<f32> = (0..n * k).map(|i| w[i % k * n + i / k] * 0.5).collect();
                strided.pack(&w_t, k, n, (1, k), 2.0);
                for cols in [0..n, n / 3..n, 0..n / 2 + 1, n - 1..n] {
                    let width = cols.len();
                    // y starts from a bias, as a layer's does: the product is added to it.
                    let mut y: Vec<f32> = (0..m * width).map(|i| i as f32).collect();
                    packed.add_product(&x, k, m, cols.clone(), &mut y, width);
                    // Into every other row of a wider output, from every other row of the input.
                    let wide_x: Vec<f32> = x
                        .chunks(k)
                        .flat_map(|r| r.iter().chain(r).copied())
                        .collect();
                    let mut wide_y: Vec<f32> = (0..m * width)
                        .collect::<Vec<_>>()
                        .chunks(width)
                        .flat_map(|r| r.iter().map(|&i| i as f32).chain(vec![-1.0; width]))
                        .collect();
                    strided.add_product(&wide_x, 2 * k, m, cols.clone(), &mut wide_y, 2 * width);
                    let strided_y: Vec<f32> = wide_y
                        .chunks(2 * width)
                        .flat_map(|r| r[..width].to_vec())
                        .collect();
                    assert_eq!(y, strided_y, "{kernel:?} {m}x{k}x{n} {cols:?}");
                    assert!(wide_y
                        .chunks(2 * width)
                        .all(|r| r[width..].iter().all(|&v| v == -1.0)));
                    for r in 0..m {
                        for (j, col) in cols.clone().enumerate() {
                            let terms =
                                (0..k).map(|i| f64::from(x[r * k + i]) * f64::from(w[i * n + col]));
                            let bias = (r * width + j) as f64;
                            let want = bias + terms.clone().sum::<f64>();
                            // f32 sums: within a few rounding steps of the magnitudes summed.
                            let scale = bias + terms.map(f64::abs).sum::<f64>();
                            let got = f64::from(y[r * width + j]);
                            assert!(
                                (got - want).abs() <= 1e-5 * (1.0 + scale),
                                "{kernel:?} {m}x{k}x{n} {cols:?} ({r}, {j}): {got} against {want}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn packed_panels_are_aligned_and_padded_with_zeros() {
        for kernel in kernels() {
            let Some((width, _)) = kernel.tile() else {
                continue;
            };
            let p = Packed::for_kernel(&[1.0; 3 * 5], 3, 5, kernel);
            assert_eq!((p.data.as_ptr() as usize + p.start * 4) % 64, 0);
            let panel = &p.data[p.start..p.start + 3 * width];
            assert!(panel
                .chunks(width)
                .all(|row| row[..5] == [1.0; 5] && row[5..].iter().all(|&v| v == 0.0)));
        }
    }
}
