//! JSON Lines: one object per line; `_row` is the 0-based line number, so `_source` + `_row`
//! find the exact line. Blank lines make no row. Malformed lines fail with `file:line: cause`
//! or, with `tokq.on_bad_row = 'skip'`, are dropped and counted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::json::reader::infer_json_schema_from_iterator;
use datafusion::arrow::json::ReaderBuilder;
use datafusion::arrow::record_batch::RecordBatch;
use tokio::io::AsyncBufReadExt;

use super::source::ByteReader;
use super::BATCH_BYTES;
use tokq_core::error::{Result, TokqError};

const INFER_LINES: usize = 1000;

/// Lines read from one file: their bytes back to back, and each line's span and 0-based number.
#[derive(Default)]
pub struct Lines {
    buf: Vec<u8>,
    spans: Vec<(usize, usize, u64)>,
}

impl Lines {
    fn line(&self, i: usize) -> &[u8] {
        let (s, e, _) = self.spans[i];
        &self.buf[s..e]
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

pub struct LineReader {
    reader: ByteReader,
    uri: String,
    next_line: u64,
}

impl LineReader {
    pub fn new(reader: ByteReader, uri: String) -> Self {
        Self::starting_at(reader, uri, 0)
    }

    /// Lines of a piece of the file whose first line is the file's line `first_line` (0-based).
    pub fn starting_at(reader: ByteReader, uri: String, first_line: u64) -> Self {
        Self { reader, uri, next_line: first_line }
    }

    /// Reads up to `max` non-blank lines, fewer once they reach [`BATCH_BYTES`]; an empty result
    /// means the end of the file.
    pub async fn read(&mut self, max: usize) -> Result<Lines> {
        let mut lines = Lines::default();
        // The batch's bytes in one allocation: grown by doubling, a new batch's buffer was copied
        // at each step and its fresh pages faulted in twice over (Reuters' MinHash run: 2,300 of
        // 17,000 page faults, 2-3% of the run).
        lines.buf.reserve(BATCH_BYTES + BATCH_BYTES / 16);
        while lines.len() < max && lines.buf.len() < BATCH_BYTES {
            let start = lines.buf.len();
            let n = self
                .reader
                .read_until(b'\n', &mut lines.buf)
                .await
                .map_err(|e| TokqError::BadRow { file: self.uri.clone(), line: self.next_line + 1, cause: e.to_string() })?;
            if n == 0 {
                break;
            }
            let number = self.next_line;
            self.next_line += 1;
            if lines.buf[start..].iter().all(u8::is_ascii_whitespace) {
                lines.buf.truncate(start);
                continue;
            }
            if lines.buf.last() != Some(&b'\n') {
                lines.buf.push(b'\n');
            }
            lines.spans.push((start, lines.buf.len(), number));
        }
        Ok(lines)
    }
}

/// A decoded batch, the line number of each of its rows, and the lines that were skipped.
pub struct Decoded {
    pub batch: RecordBatch,
    pub rows: Vec<i64>,
    pub skipped: u64,
}

fn decode_all(schema: &SchemaRef, bytes: &[u8], rows: usize) -> std::result::Result<RecordBatch, String> {
    let bytes = &*super::json_escapes::pairs_as_utf8(bytes);
    let mut decoder = ReaderBuilder::new(Arc::clone(schema))
        .with_batch_size(rows.max(1))
        .build_decoder()
        .map_err(|e| e.to_string())?;
    let used = decoder.decode(bytes).map_err(|e| e.to_string())?;
    if used != bytes.len() {
        return Err("more than one JSON value on the line".into());
    }
    let batch = decoder
        .flush()
        .map_err(|e| e.to_string())?
        .unwrap_or_else(|| RecordBatch::new_empty(Arc::clone(schema)));
    if batch.num_rows() != rows {
        return Err(format!("expected one JSON object per line, got {} values", batch.num_rows()));
    }
    Ok(batch)
}

fn check_line(schema: &SchemaRef, line: &[u8]) -> std::result::Result<(), String> {
    if let Err(e) = std::str::from_utf8(line) {
        return Err(format!("invalid UTF-8 at byte {}", e.valid_up_to()));
    }
    decode_all(schema, line, 1).map(|_| ())
}

/// Decodes lines into `schema`. The whole batch is tried first; only when it fails is each line
/// checked on its own, so clean input pays for one decode.
pub fn decode(schema: &SchemaRef, uri: &str, lines: &Lines, skip_bad: bool) -> Result<Decoded> {
    let all_utf8 = std::str::from_utf8(&lines.buf).is_ok();
    if all_utf8 {
        if let Ok(batch) = decode_all(schema, &lines.buf, lines.len()) {
            let rows = lines.spans.iter().map(|s| s.2 as i64).collect();
            return Ok(Decoded { batch, rows, skipped: 0 });
        }
    }
    let mut good = Vec::with_capacity(lines.buf.len());
    let mut rows = Vec::with_capacity(lines.len());
    let mut skipped = 0;
    for i in 0..lines.len() {
        let line = lines.line(i);
        let number = lines.spans[i].2;
        match check_line(schema, line) {
            Ok(()) => {
                good.extend_from_slice(line);
                rows.push(number as i64);
            }
            Err(cause) if !skip_bad => {
                return Err(TokqError::BadRow { file: uri.to_string(), line: number + 1, cause });
            }
            Err(_) => skipped += 1,
        }
    }
    let batch = decode_all(schema, &good, rows.len())
        .map_err(|cause| TokqError::BadRow { file: uri.to_string(), line: 0, cause })?;
    Ok(Decoded { batch, rows, skipped })
}

/// The shape of a JSON value, as far as one Arrow type can hold both of two values: an object, an
/// array, or a scalar (numbers, strings and booleans coerce into one another; null fits all).
fn shape(v: &serde_json::Value) -> Option<&'static str> {
    match v {
        serde_json::Value::Null => None,
        serde_json::Value::Object(_) => Some("an object"),
        serde_json::Value::Array(_) => Some("an array"),
        _ => Some("a scalar"),
    }
}

/// The sampled lines (by index) whose value of some field has another shape than most lines give
/// it, with why: no Arrow type holds both, so one of the two must be a bad row, and it is the
/// rarer one (a stray object among a million strings).
fn odd_shapes(values: &[serde_json::Value]) -> Vec<(usize, String)> {
    let mut counts: BTreeMap<&str, BTreeMap<&'static str, usize>> = BTreeMap::new();
    for v in values {
        for (key, value) in v.as_object().into_iter().flatten() {
            if let Some(s) = shape(value) {
                *counts.entry(key).or_default().entry(s).or_default() += 1;
            }
        }
    }
    let usual: BTreeMap<&str, (&str, usize)> = counts.iter().map(|(k, c)| (*k, c.iter().map(|(s, n)| (*s, *n)).max_by_key(|(_, n)| *n).unwrap_or(("", 0)))).collect();
    values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            v.as_object()?.iter().find_map(|(key, value)| {
                // A field that is null on every line has no usual shape, and no odd one.
                let s = shape(value)?;
                let &(most, n) = usual.get(key.as_str())?;
                let s = Some(s).filter(|s| *s != most)?;
                Some((i, format!("field {key} is {s} here but {most} in {n} of the {} lines sampled", values.len())))
            })
        })
        .collect()
}

/// Infers a schema from the first valid lines of a file. A file that has lines but none of them
/// a JSON object fails with the first line's problem. A line whose field has another shape than
/// in most lines fails with its file:line, or with `skip_bad` is left out (the read then skips and
/// counts it as a bad row).
pub async fn infer(reader: ByteReader, uri: &str, skip_bad: bool) -> Result<Option<Schema>> {
    let mut lines = LineReader::new(reader, uri.to_string());
    let sample = lines.read(INFER_LINES).await?;
    let mut values = Vec::new();
    let mut numbers = Vec::new();
    let mut first_problem = None;
    for i in 0..sample.len() {
        // Read as the decoder reads it, so a lone surrogate escape does not keep a line out.
        let line = super::json_escapes::pairs_as_utf8(sample.line(i));
        let parsed = match std::str::from_utf8(&line) {
            Err(e) => Err(format!("invalid UTF-8 at byte {}", e.valid_up_to())),
            Ok(text) => match serde_json::from_str::<serde_json::Value>(text) {
                Ok(v) if v.is_object() => Ok(v),
                Ok(_) => Err("not a JSON object".to_string()),
                Err(e) => Err(e.to_string()),
            },
        };
        match parsed {
            Ok(v) => {
                values.push(v);
                numbers.push(sample.spans[i].2 + 1);
            }
            Err(cause) => {
                first_problem.get_or_insert((sample.spans[i].2 + 1, cause));
            }
        }
    }
    if values.is_empty() {
        return match first_problem {
            Some((line, cause)) => Err(TokqError::BadRow {
                file: uri.to_string(),
                line,
                cause: format!("{cause} (no line of the first {} is a JSON object, so no schema can be inferred)", sample.len()),
            }),
            None => Ok(None),
        };
    }
    let unreadable = |e: ArrowError| TokqError::Io { uri: uri.to_string(), cause: format!("cannot infer a schema: {e}") };
    let schema = match infer_json_schema_from_iterator(values.iter().cloned().map(Ok)) {
        Ok(schema) => schema,
        Err(e) => {
            let odd = odd_shapes(&values);
            let Some((first, cause)) = odd.first() else { return Err(unreadable(e)) };
            if !skip_bad {
                return Err(TokqError::BadRow { file: uri.to_string(), line: numbers[*first], cause: format!("{cause}; fix it, or skip such lines with --on-bad-row skip") });
            }
            let odd: BTreeSet<usize> = odd.iter().map(|(i, _)| *i).collect();
            let usual = values.iter().enumerate().filter(|(i, _)| !odd.contains(i)).map(|(_, v)| Ok(v.clone()));
            infer_json_schema_from_iterator(usual).map_err(unreadable)?
        }
    };
    Ok(Some(schema))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field};

    fn reader(text: &'static [u8]) -> ByteReader {
        Box::pin(tokio::io::BufReader::new(text))
    }

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![Field::new("id", DataType::Utf8, true), Field::new("text", DataType::Utf8, true)]))
    }

    #[tokio::test]
    async fn escaped_characters_beyond_u20000_read_right() {
        let mut r = LineReader::new(reader(b"{\"id\":\"a\",\"text\":\"\\ud841\\udf0e \\ud83d\\ude00\"}\n"), "f".into());
        let d = decode(&schema(), "f", &r.read(10).await.unwrap(), false).unwrap();
        let text = d.batch.column(1).as_any().downcast_ref::<datafusion::arrow::array::StringArray>().unwrap();
        assert_eq!(text.value(0), "\u{2070E} \u{1F600}");
    }

    #[tokio::test]
    async fn rows_are_line_numbers_and_blank_lines_are_skipped() {
        let mut r = LineReader::new(reader(b"{\"id\":\"a\",\"text\":\"x\"}\n\n{\"id\":\"b\",\"text\":\"y\"}"), "f".into());
        let lines = r.read(10).await.unwrap();
        let d = decode(&schema(), "f", &lines, false).unwrap();
        assert_eq!(d.rows, vec![0, 2]);
        assert_eq!(d.batch.num_rows(), 2);
        assert!(r.read(10).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn bad_line_fails_with_file_and_line() {
        let mut r = LineReader::new(reader(b"{\"id\":\"a\"}\n{\"id\": oops}\n"), "f.jsonl".into());
        let lines = r.read(10).await.unwrap();
        let e = decode(&schema(), "f.jsonl", &lines, false).err().unwrap().to_string();
        assert!(e.starts_with("f.jsonl:2: "), "{e}");
    }

    #[tokio::test]
    async fn invalid_utf8_is_named() {
        let mut r = LineReader::new(reader(b"{\"id\":\"\xff\"}\n"), "f".into());
        let lines = r.read(10).await.unwrap();
        let e = decode(&schema(), "f", &lines, false).err().unwrap().to_string();
        assert_eq!(e, "f:1: invalid UTF-8 at byte 7");
    }

    #[tokio::test]
    async fn skip_drops_and_counts_bad_lines() {
        let mut r = LineReader::new(reader(b"[1]\n{\"id\":\"a\"}\nnot json\n{\"id\":\"b\"}{\"id\":\"c\"}\n"), "f".into());
        let lines = r.read(10).await.unwrap();
        let d = decode(&schema(), "f", &lines, true).unwrap();
        assert_eq!((d.rows, d.skipped), (vec![1], 3));
    }

    #[tokio::test]
    async fn a_field_of_another_shape_than_most_is_a_bad_row_named_by_its_line() {
        let text: &'static [u8] = b"{\"id\":1,\"text\":{\"a\":1},\"none\":null}\n{\"id\":2,\"text\":\"x\",\"none\":null}\n{\"id\":3,\"text\":\"y\"}\n";
        let e = infer(reader(text), "f", false).await.unwrap_err().to_string();
        assert!(e.starts_with("f:1: field text is an object here but a scalar in 2 of the 3 lines sampled; fix it, or skip such lines with --on-bad-row skip"), "{e}");
        let s = Arc::new(infer(reader(text), "f", true).await.unwrap().unwrap());
        assert_eq!(s.field_with_name("text").unwrap().data_type(), &DataType::Utf8, "the usual shape wins");
        let mut r = LineReader::new(reader(text), "f".into());
        let d = decode(&s, "f", &r.read(10).await.unwrap(), true).unwrap();
        assert_eq!((d.rows, d.skipped), (vec![1, 2], 1), "and the odd line is skipped as a bad row");
    }

    #[tokio::test]
    async fn infers_from_valid_lines() {
        let s = infer(reader(b"garbage\n{\"id\":\"a\",\"n\":1}\n"), "f", false).await.unwrap().unwrap();
        assert_eq!(s.fields().len(), 2);
    }
}
