//! The model file's header and the little-endian reader every part of it is read with. A short or
//! inconsistent file is an error naming what was being read, never a panic.

use super::ModelError;

/// fastText's magic number and the newest format version it writes.
const MAGIC: i32 = 793_712_314;
const NEWEST_VERSION: i32 = 12;

/// Reads a model file front to back.
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0 }
    }

    /// Bytes not read yet.
    pub(super) fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// The next `n` bytes; `what` names them in the error.
    pub(super) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], ModelError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(ModelError(format!("the file ends inside {what} (at byte {}): it is truncated", self.at)));
        };
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], ModelError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(super) fn i32(&mut self, what: &str) -> Result<i32, ModelError> {
        self.array(what).map(i32::from_le_bytes)
    }

    pub(super) fn i64(&mut self, what: &str) -> Result<i64, ModelError> {
        self.array(what).map(i64::from_le_bytes)
    }

    pub(super) fn f64(&mut self, what: &str) -> Result<f64, ModelError> {
        self.array(what).map(f64::from_le_bytes)
    }

    pub(super) fn u8(&mut self, what: &str) -> Result<u8, ModelError> {
        self.array::<1>(what).map(|[b]| b)
    }

    pub(super) fn bool(&mut self, what: &str) -> Result<bool, ModelError> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(ModelError(format!("{what} is {b}, not a boolean: the file is corrupt"))),
        }
    }

    /// `n` little-endian floats.
    pub(super) fn f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>, ModelError> {
        let bytes = self.take(n.checked_mul(4).ok_or_else(|| ModelError(format!("{what} is too large")))?, what)?;
        Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }

    /// A NUL-terminated string.
    pub(super) fn cstr(&mut self, what: &str) -> Result<&'a [u8], ModelError> {
        let rest = &self.bytes[self.at..];
        let Some(len) = memchr::memchr(0, rest) else {
            return Err(ModelError(format!("the file ends inside {what}: it is truncated")));
        };
        self.at += len + 1;
        Ok(&rest[..len])
    }

    /// A count that must be non-negative and at most `max`.
    pub(super) fn count(&mut self, what: &str, max: i64) -> Result<usize, ModelError> {
        let n = self.i64(what)?;
        if !(0..=max).contains(&n) {
            return Err(ModelError(format!("{what} is {n}, outside 0..={max}: the file is corrupt")));
        }
        Ok(n as usize)
    }
}

/// What a model was trained as, of the fields the file stores.
#[derive(Debug, Clone)]
pub(super) struct Args {
    pub dim: usize,
    pub word_ngrams: usize,
    pub loss: Loss,
    pub bucket: u32,
    pub minn: usize,
    pub maxn: usize,
}

/// The training loss, which decides how label probabilities are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Loss {
    HierarchicalSoftmax,
    NegativeSampling,
    Softmax,
    OneVsAll,
}

impl Args {
    /// The header and the training arguments.
    pub(super) fn read(r: &mut Reader) -> Result<Self, ModelError> {
        if r.i32("the magic number")? != MAGIC {
            return Err(ModelError("not a fastText model (wrong magic number): give a .bin or .ftz file".into()));
        }
        let version = r.i32("the format version")?;
        if version > NEWEST_VERSION {
            return Err(ModelError(format!("format version {version} is newer than fastText's {NEWEST_VERSION}")));
        }
        let small = |r: &mut Reader, what: &str, max: i32| -> Result<usize, ModelError> {
            let v = r.i32(what)?;
            if !(0..=max).contains(&v) {
                return Err(ModelError(format!("{what} is {v}, outside 0..={max}: the file is corrupt")));
            }
            Ok(v as usize)
        };
        let dim = small(r, "dim", 1 << 16)?;
        for what in ["ws", "epoch", "minCount", "neg"] {
            r.i32(what)?;
        }
        let word_ngrams = small(r, "wordNgrams", 1 << 10)?;
        let loss = match r.i32("loss")? {
            1 => Loss::HierarchicalSoftmax,
            2 => Loss::NegativeSampling,
            3 => Loss::Softmax,
            4 => Loss::OneVsAll,
            other => return Err(ModelError(format!("loss {other} is not one of fastText's: the file is corrupt"))),
        };
        if r.i32("model")? != 3 {
            return Err(ModelError(
                "a word-vector model (cbow or skipgram), not a supervised classifier: train it with train_supervised".into(),
            ));
        }
        let bucket = small(r, "bucket", i32::MAX)? as u32;
        let minn = small(r, "minn", 1 << 10)?;
        let mut maxn = small(r, "maxn", 1 << 10)?;
        r.i32("lrUpdateRate")?;
        r.f64("t")?;
        if version == 11 {
            // fastText reads old supervised models without character n-grams.
            maxn = 0;
        }
        Ok(Self { dim, word_ngrams, loss, bucket, minn, maxn })
    }
}
