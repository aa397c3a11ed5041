//! The input and output matrices: dense (`.bin`) or product-quantized (`.ftz`), with the row
//! operations prediction needs, in fastText's float arithmetic and summation order.

use super::file::Reader;
use super::ModelError;

/// Centroids per sub-quantizer (8-bit codes).
const KSUB: usize = 256;

pub(super) enum Matrix {
    Dense { rows: usize, cols: usize, data: Vec<f32> },
    Quantized(Quantized),
}

/// A product quantizer: each row is `nsubq` codes, each picking a centroid of `dsub` values (the
/// last one `lastdsub`).
struct Quantizer {
    nsubq: usize,
    dsub: usize,
    lastdsub: usize,
    centroids: Vec<f32>,
}

pub(super) struct Quantized {
    rows: usize,
    cols: usize,
    codes: Vec<u8>,
    pq: Quantizer,
    /// Rows stored as unit vectors with a quantized norm.
    norms: Option<(Vec<u8>, Quantizer)>,
}

impl Quantizer {
    fn read(r: &mut Reader, dim: usize) -> Result<Self, ModelError> {
        let read_dim = r.i32("a quantizer's dimension")?;
        let (nsubq, dsub, lastdsub) = (r.i32("a quantizer's size")?, r.i32("a quantizer's dsub")?, r.i32("a quantizer's last dsub")?);
        let consistent = read_dim as i64 == dim as i64
            && dsub > 0
            && nsubq as i64 == (dim as i64 + dsub as i64 - 1) / dsub as i64
            && lastdsub as i64 == if dim as i64 % dsub as i64 == 0 { dsub as i64 } else { dim as i64 % dsub as i64 };
        if !consistent {
            return Err(ModelError(format!(
                "a quantizer of dimension {read_dim} with {nsubq} parts of {dsub} (last {lastdsub}) does not fit rows of {dim}: the file is corrupt"
            )));
        }
        let centroids = r.f32s(dim * KSUB, "a quantizer's centroids")?;
        Ok(Self { nsubq: nsubq as usize, dsub: dsub as usize, lastdsub: lastdsub as usize, centroids })
    }

    fn centroid(&self, m: usize, code: u8) -> &[f32] {
        let code = code as usize;
        if m == self.nsubq - 1 {
            let at = m * KSUB * self.dsub + code * self.lastdsub;
            &self.centroids[at..at + self.lastdsub]
        } else {
            let at = (m * KSUB + code) * self.dsub;
            &self.centroids[at..at + self.dsub]
        }
    }
}

impl Quantized {
    fn norm(&self, row: usize) -> f32 {
        self.norms.as_ref().map_or(1.0, |(codes, npq)| npq.centroid(0, codes[row])[0])
    }

    fn codes(&self, row: usize) -> &[u8] {
        &self.codes[row * self.pq.nsubq..(row + 1) * self.pq.nsubq]
    }
}

impl Matrix {
    /// A matrix as fastText saves it; `quantized` says which kind the file announced.
    pub(super) fn read(r: &mut Reader, quantized: bool, what: &str) -> Result<Self, ModelError> {
        if !quantized {
            let rows = r.count(what, i32::MAX as i64)?;
            let cols = r.count(what, 1 << 16)?;
            let len = rows.checked_mul(cols).filter(|&n| n <= r.remaining() / 4);
            let Some(len) = len else {
                return Err(ModelError(format!("{what} of {rows}x{cols} is larger than the file: it is truncated")));
            };
            return Ok(Matrix::Dense { rows, cols, data: r.f32s(len, what)? });
        }
        let qnorm = r.bool("a quantized matrix's norm flag")?;
        let rows = r.count(what, i32::MAX as i64)?;
        let cols = r.count(what, 1 << 16)?;
        let codesize = r.i32("a quantized matrix's code size")?;
        let codes = r.take(codesize.max(0) as usize, "a quantized matrix's codes")?.to_vec();
        let pq = Quantizer::read(r, cols)?;
        if codesize as i64 != rows as i64 * pq.nsubq as i64 {
            return Err(ModelError(format!("{what} has {codesize} codes for {rows} rows of {} parts: the file is corrupt", pq.nsubq)));
        }
        let norms = if qnorm {
            let codes = r.take(rows, "a quantized matrix's norms")?.to_vec();
            Some((codes, Quantizer::read(r, 1)?))
        } else {
            None
        };
        Ok(Matrix::Quantized(Quantized { rows, cols, codes, pq, norms }))
    }

    pub(super) fn rows(&self) -> usize {
        match self {
            Matrix::Dense { rows, .. } => *rows,
            Matrix::Quantized(q) => q.rows,
        }
    }

    pub(super) fn cols(&self) -> usize {
        match self {
            Matrix::Dense { cols, .. } => *cols,
            Matrix::Quantized(q) => q.cols,
        }
    }

    /// fastText's `averageRowsToVector`: the rows summed in order, then scaled by 1/n.
    pub(super) fn average_rows(&self, rows: &[u32], out: &mut [f32]) {
        out.fill(0.0);
        for &row in rows {
            let row = row as usize;
            match self {
                Matrix::Dense { cols, data, .. } => {
                    for (o, v) in out.iter_mut().zip(&data[row * cols..(row + 1) * cols]) {
                        *o += v;
                    }
                }
                Matrix::Quantized(q) => {
                    let norm = q.norm(row);
                    for (m, &code) in q.codes(row).iter().enumerate() {
                        let at = m * q.pq.dsub;
                        for (o, c) in out[at..].iter_mut().zip(q.pq.centroid(m, code)) {
                            *o += norm * c;
                        }
                    }
                }
            }
        }
        let scale = (1.0 / rows.len() as f64) as f32;
        out.iter_mut().for_each(|o| *o *= scale);
    }

    /// fastText's `dotRow`: row `i` times `v`, summed in float in order.
    pub(super) fn dot_row(&self, v: &[f32], i: usize) -> f32 {
        match self {
            Matrix::Dense { cols, data, .. } => data[i * cols..(i + 1) * cols].iter().zip(v).fold(0.0, |d, (a, b)| d + a * b),
            Matrix::Quantized(q) => {
                let mut d = 0.0f32;
                for (m, &code) in q.codes(i).iter().enumerate() {
                    let at = m * q.pq.dsub;
                    for (c, x) in q.pq.centroid(m, code).iter().zip(&v[at..]) {
                        d += x * c;
                    }
                }
                d * q.norm(i)
            }
        }
    }
}
