//! The tensors of a `.safetensors` file, as `transformers`' `save_pretrained` writes them: an
//! 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape and byte
//! range, then the raw data. Tensors are read as f32 whatever their stored dtype (F32, F16, BF16,
//! and the F64 and I8 of Model2Vec's embeddings), since tokq computes in fp32 as `transformers`
//! does on a CPU; index tensors (Model2Vec's I64 token mapping) are read as ids.

use std::collections::HashMap;

/// One tensor's entry in the header.
struct Entry {
    dtype: Dtype,
    shape: Vec<usize>,
    start: usize,
    end: usize,
}

#[derive(Clone, Copy)]
enum Dtype {
    F64,
    F32,
    F16,
    Bf16,
    I64,
    I8,
}

impl Dtype {
    fn size(self) -> usize {
        match self {
            Dtype::F64 | Dtype::I64 => 8,
            Dtype::F32 => 4,
            Dtype::F16 | Dtype::Bf16 => 2,
            Dtype::I8 => 1,
        }
    }
}

/// A parsed file's bytes; [`Weights::take`] converts one tensor at a time.
pub(crate) struct Weights<'a> {
    bytes: &'a [u8],
    data: usize,
    entries: HashMap<String, Entry>,
}

impl<'a> Weights<'a> {
    /// Parses the header of a file's bytes and checks every tensor's range against the data.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Self, String> {
        let len = bytes
            .get(..8)
            .ok_or("shorter than the 8-byte header length: not a safetensors file")?;
        let len = u64::from_le_bytes(len.try_into().map_err(|_| "bad header length")?);
        let data = usize::try_from(len)
            .ok()
            .and_then(|l| l.checked_add(8))
            .filter(|&d| d <= bytes.len());
        let data = data.ok_or_else(|| format!("the header claims {len} bytes, more than the file holds: not a safetensors file, or truncated"))?;
        let header: serde_json::Value = serde_json::from_slice(&bytes[8..data])
            .map_err(|e| format!("the header is not JSON ({e}): not a safetensors file"))?;
        let header = header
            .as_object()
            .ok_or("the header is not a JSON object")?;
        let mut entries = HashMap::new();
        for (name, v) in header.iter().filter(|(name, _)| *name != "__metadata__") {
            let bad = |what: &str| format!("tensor '{name}': {what}");
            let dtype = match v["dtype"].as_str() {
                Some("F64") => Dtype::F64,
                Some("F32") => Dtype::F32,
                Some("F16") => Dtype::F16,
                Some("BF16") => Dtype::Bf16,
                Some("I64") => Dtype::I64,
                Some("I8") => Dtype::I8,
                other => {
                    return Err(bad(&format!(
                        "dtype {other:?} is not F64, F32, F16, BF16, I64 or I8"
                    )))
                }
            };
            let shape: Option<Vec<usize>> = v["shape"].as_array().map(|s| {
                s.iter()
                    .filter_map(|d| d.as_u64().map(|d| d as usize))
                    .collect()
            });
            let shape = shape.ok_or_else(|| bad("no shape"))?;
            let offsets: Option<Vec<usize>> = v["data_offsets"].as_array().map(|s| {
                s.iter()
                    .filter_map(|d| d.as_u64().map(|d| d as usize))
                    .collect()
            });
            let (start, end) = match offsets.as_deref() {
                Some(&[s, e]) => (s, e),
                _ => return Err(bad("no data_offsets")),
            };
            let elements = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
            let fits = end >= start && data.checked_add(end).is_some_and(|e| e <= bytes.len());
            if !fits || elements.and_then(|n| n.checked_mul(dtype.size())) != Some(end - start) {
                return Err(bad(&format!("bytes {start}..{end} do not hold shape {shape:?} inside the file: the file is damaged or truncated")));
            }
            entries.insert(
                name.clone(),
                Entry {
                    dtype,
                    shape,
                    start,
                    end,
                },
            );
        }
        Ok(Self {
            bytes,
            data,
            entries,
        })
    }

    /// Whether the file holds a tensor of this name.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    /// The shape of the tensor `name`, where the file holds it.
    pub(crate) fn shape(&self, name: &str) -> Option<&[usize]> {
        self.entries.get(name).map(|e| e.shape.as_slice())
    }

    /// The entry `name`, checked to have `shape`, and its bytes.
    fn raw(&self, name: &str, shape: &[usize]) -> Result<(&Entry, &[u8]), String> {
        let e = self.entries.get(name).ok_or_else(|| {
            format!("no tensor '{name}': the file does not hold the weights config.json describes")
        })?;
        if e.shape != shape {
            return Err(format!(
                "tensor '{name}' has shape {:?} where config.json implies {shape:?}",
                e.shape
            ));
        }
        Ok((e, &self.bytes[self.data + e.start..self.data + e.end]))
    }

    /// The tensor `name` as f32 in row-major order, checked to have `shape`.
    pub(crate) fn take(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let (e, raw) = self.raw(name, shape)?;
        Ok(match e.dtype {
            Dtype::F64 => raw
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().unwrap_or_default()) as f32)
                .collect(),
            Dtype::F32 => raw
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Dtype::F16 => raw
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            Dtype::Bf16 => raw
                .chunks_exact(2)
                .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            Dtype::I8 => raw.iter().map(|&b| f32::from(b as i8)).collect(),
            Dtype::I64 => return Err(format!("tensor '{name}' holds integers (I64), not weights")),
        })
    }

    /// The integer tensor `name` (I64) as indices below `bound`, checked to have `shape`.
    pub(crate) fn take_indices(
        &self,
        name: &str,
        shape: &[usize],
        bound: usize,
    ) -> Result<Vec<u32>, String> {
        let (e, raw) = self.raw(name, shape)?;
        if !matches!(e.dtype, Dtype::I64) {
            return Err(format!("tensor '{name}' holds weights, not I64 indices"));
        }
        raw.chunks_exact(8)
            .map(|b| {
                let i = i64::from_le_bytes(b.try_into().unwrap_or_default());
                u32::try_from(i)
                    .ok()
                    .filter(|&i| (i as usize) < bound)
                    .ok_or_else(|| format!("tensor '{name}' holds index {i}, outside 0..{bound}"))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file holding one tensor of `shape` as F32.
    pub(crate) fn file(name: &str, shape: &[usize], values: &[f32]) -> Vec<u8> {
        let header = serde_json::json!({ name: { "dtype": "F32", "shape": shape, "data_offsets": [0, values.len() * 4] } }).to_string();
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend(header.as_bytes());
        out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        out
    }

    #[test]
    fn reads_a_tensor_and_checks_its_shape() {
        let bytes = file("a.weight", &[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let w = Weights::parse(&bytes).unwrap();
        assert_eq!(
            w.take("a.weight", &[2, 2]).unwrap(),
            vec![1.0, 2.0, 3.0, 4.0]
        );
        assert!(w
            .take("a.weight", &[4])
            .unwrap_err()
            .contains("shape [2, 2]"));
        assert!(w
            .take("b.weight", &[4])
            .unwrap_err()
            .contains("no tensor 'b.weight'"));
    }

    #[test]
    fn damaged_files_are_refused_in_words() {
        assert!(Weights::parse(&[1, 2])
            .err()
            .unwrap()
            .contains("not a safetensors file"));
        let mut f = file("a", &[2], &[1.0, 2.0]);
        f.truncate(f.len() - 1);
        assert!(Weights::parse(&f)
            .err()
            .unwrap()
            .contains("damaged or truncated"));
        let mut f = file("a", &[2], &[1.0, 2.0]);
        f[0] = 0xff;
        assert!(Weights::parse(&f)
            .err()
            .unwrap()
            .contains("more than the file holds"));
    }
}
