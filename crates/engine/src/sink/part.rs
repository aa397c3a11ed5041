//! Writing one part file: Parquet through a hashing, counting writer to a hidden temporary name,
//! renamed into place when complete.

use tokq_udfs::args::df;
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, ListArray, OffsetSizeTrait, RecordBatch, UInt8Array};
use datafusion::arrow::compute::kernels::boolean::not;
use datafusion::arrow::compute::{cast, filter_record_batch, is_not_null, BatchCoalescer};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::file_options::parquet_writer::parse_compression_string;
use datafusion::common::runtime::SpawnedTask;
use datafusion::error::{DataFusionError, Result};
use datafusion::parquet::arrow::async_writer::AsyncFileWriter;
use datafusion::parquet::arrow::AsyncArrowWriter;
use datafusion::parquet::basic::Encoding;
use datafusion::parquet::file::metadata::KeyValue;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::parquet::schema::types::ColumnPath;
use futures::future::BoxFuture;
use object_store::buffered::BufWriter;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use super::{dictionary, FileRecord, IdsEncoding, SinkOptions, TMP_SUFFIX};

/// Rows per write into the Parquet writer. The writer cuts pages and row groups at boundaries
/// that depend on how rows arrive, so rows always arrive in slices of this size counted from
/// the start of the file: the same rows then give the same bytes, however the plan batched them.
pub const WRITE_ROWS: usize = 1024;

/// ...or fewer, when the slice's rows reach this many bytes ([`row_bytes`], a function of each
/// row alone, so the cuts still do not depend on the batches): 1,024 documents of 2 MB would
/// overflow a text column's 32-bit offsets and hold 2 GB.
pub const WRITE_BYTES: u64 = 16 << 20;

/// Each row's size: the bytes of its strings and binaries, the elements of its lists times their
/// width, and the width of its other values.
fn row_bytes(batch: &RecordBatch) -> Vec<u64> {
    let mut sizes = vec![0u64; batch.num_rows()];
    for column in batch.columns() {
        add_row_bytes(column.as_ref(), &mut sizes);
    }
    sizes
}

fn add_row_bytes(a: &dyn Array, sizes: &mut [u64]) {
    fn spans<O: OffsetSizeTrait>(offsets: &[O], width: u64, sizes: &mut [u64]) {
        for (s, w) in sizes.iter_mut().zip(offsets.windows(2)) {
            *s += (w[1] - w[0]).as_usize() as u64 * width;
        }
    }
    let width = |t: &DataType| t.primitive_width().unwrap_or(8) as u64;
    match a.data_type() {
        DataType::Utf8 => spans(a.as_string::<i32>().value_offsets(), 1, sizes),
        DataType::LargeUtf8 => spans(a.as_string::<i64>().value_offsets(), 1, sizes),
        DataType::Binary => spans(a.as_binary::<i32>().value_offsets(), 1, sizes),
        DataType::LargeBinary => spans(a.as_binary::<i64>().value_offsets(), 1, sizes),
        DataType::List(f) => spans(a.as_list::<i32>().value_offsets(), width(f.data_type()), sizes),
        DataType::LargeList(f) => spans(a.as_list::<i64>().value_offsets(), width(f.data_type()), sizes),
        DataType::Struct(_) => a.as_struct().columns().iter().for_each(|c| add_row_bytes(c.as_ref(), sizes)),
        DataType::Utf8View => a.as_string_view().iter().zip(sizes).for_each(|(v, s)| *s += v.map_or(0, str::len) as u64),
        DataType::BinaryView => a.as_binary_view().iter().zip(sizes).for_each(|(v, s)| *s += v.map_or(0, <[u8]>::len) as u64),
        t => sizes.iter_mut().for_each(|s| *s += width(t)),
    }
}

pub fn writer_properties(opts: &SinkOptions) -> Result<WriterProperties> {
    let metadata = opts.metadata.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())).collect();
    let ids = || ColumnPath::from(vec!["input_ids".into(), "list".into(), "item".into()]);
    let builder = match opts.ids_encoding {
        IdsEncoding::Plain => WriterProperties::builder(),
        IdsEncoding::ByteStreamSplit => WriterProperties::builder().set_column_encoding(ids(), Encoding::BYTE_STREAM_SPLIT),
    };
    Ok(builder
        .set_compression(parse_compression_string(&opts.compression)?)
        .set_column_compression(ids(), parse_compression_string(&opts.ids_compression)?)
        .set_max_row_group_row_count(Some(opts.max_row_group_rows))
        .set_max_row_group_bytes(Some(opts.max_row_group_bytes))
        // Token ids have too many distinct values for a dictionary to pay: plain pages are
        // smaller after zstd and decode faster (python/bench/read_throughput.py).
        .set_column_dictionary_enabled(ids(), false)
        .set_key_value_metadata(Some(metadata))
        .build())
}

/// Counts bytes and hashes them on their way to the object store.
struct HashingWriter {
    inner: BufWriter,
    hash: Sha256,
    bytes: u64,
}

impl AsyncFileWriter for HashingWriter {
    fn write(&mut self, bs: Bytes) -> BoxFuture<'_, datafusion::parquet::errors::Result<()>> {
        self.hash.update(&bs);
        self.bytes += bs.len() as u64;
        AsyncFileWriter::write(&mut self.inner, bs)
    }

    fn complete(&mut self) -> BoxFuture<'_, datafusion::parquet::errors::Result<()>> {
        AsyncFileWriter::complete(&mut self.inner)
    }
}

/// (tokens, padding) in a batch. Tokens are the ones of `attention_mask`, else the sum of
/// `n_tokens`, else the lengths of `input_ids`; padding is what else `input_ids` holds.
pub fn tokens_in(batch: &RecordBatch) -> (u64, u64) {
    let slots = batch.column_by_name("input_ids").and_then(|c| c.as_any().downcast_ref::<ListArray>()).map(|ids| {
        let o = ids.value_offsets();
        (o[o.len() - 1] - o[0]) as u64
    });
    let mask = batch.column_by_name("attention_mask").and_then(|c| c.as_any().downcast_ref::<ListArray>()).map(|m| {
        let ones = m.values().as_any().downcast_ref::<UInt8Array>().map(|v| v.values().iter().map(|&x| u64::from(x)).sum());
        ones.unwrap_or(0)
    });
    let counted = batch.column_by_name("n_tokens").and_then(|c| c.as_any().downcast_ref::<Int64Array>()).map(|a| {
        a.iter().flatten().map(|n| n.max(0) as u64).sum::<u64>()
    });
    let tokens = mask.or(counted).or(slots).unwrap_or(0);
    (tokens, slots.unwrap_or(tokens).saturating_sub(tokens))
}

/// Where and how the files of one output directory are written.
#[derive(Clone)]
pub struct Target {
    pub store: Arc<dyn ObjectStore>,
    pub dir: Path,
    pub schema: SchemaRef,
    pub props: WriterProperties,
}

/// The file being written. Its Parquet writer runs as a task of its own, fed in order through a
/// channel of one slice: encoding and compressing a slice (zstd is most of a write) overlaps with
/// computing the next, so a plan that ends in one ordered stream (packing) keeps two cores busy.
/// The bytes are the same: one writer takes the same slices in the same order.
struct Open {
    tmp: Path,
    // Declared before `slices`, so dropped first: an open part dropped unfinished (a cancelled
    // query) aborts its writer before the closed channel could tell it to finish the file.
    writer: SpawnedTask<Result<HashingWriter>>,
    slices: mpsc::Sender<RecordBatch>,
    rows: u64,
    tokens: u64,
    padding: u64,
    reasons: BTreeMap<String, u64>,
}

/// Adds the rows of each value of a reason column to `counts` (NULL, a kept row, is not counted).
fn count_reasons(column: &ArrayRef, counts: &mut BTreeMap<String, u64>) -> Result<()> {
    let text = cast(column, &DataType::Utf8)?;
    for reason in text.as_string::<i32>().iter().flatten() {
        match counts.get_mut(reason) {
            Some(n) => *n += 1,
            None => {
                counts.insert(reason.to_string(), 1);
            }
        }
    }
    Ok(())
}

/// One part file. Nothing is created until the first row arrives. A part without a name is
/// named by its content (`part-` and 16 hex digits of its sha256), so that no two attempts at a
/// partition ever write the same name with different bytes.
pub struct Part {
    target: Target,
    name: Option<String>,
    /// The column whose values are counted as reasons (a rejects part).
    reason_column: Option<usize>,
    chunks: BatchCoalescer,
    /// Rows and bytes gathered since the last slice went out.
    gathered: (usize, u64),
    open: Option<Open>,
}

impl Part {
    pub fn new(target: &Target, name: Option<String>) -> Self {
        let chunks = BatchCoalescer::new(Arc::clone(&target.schema), WRITE_ROWS);
        Self { target: target.clone(), name, reason_column: None, chunks, gathered: (0, 0), open: None }
    }

    /// A part that also counts its rows by the values of `column`.
    fn counting_reasons(mut self, column: usize) -> Self {
        self.reason_column = Some(column);
        self
    }

    pub async fn write(&mut self, batch: RecordBatch) -> Result<()> {
        let mut start = 0;
        for (i, size) in row_bytes(&batch).into_iter().enumerate() {
            let (rows, bytes) = self.gathered;
            if rows > 0 && bytes + size > WRITE_BYTES {
                self.chunks.push_batch(batch.slice(start, i - start))?;
                self.chunks.finish_buffered_batch()?;
                (start, self.gathered) = (i, (0, 0));
            }
            self.gathered = (self.gathered.0 + 1, self.gathered.1 + size);
            // The coalescer sends a slice out by itself at WRITE_ROWS.
            if self.gathered.0 == WRITE_ROWS {
                self.gathered = (0, 0);
            }
        }
        if start < batch.num_rows() {
            self.chunks.push_batch(batch.slice(start, batch.num_rows() - start))?;
        }
        self.drain().await
    }

    async fn drain(&mut self) -> Result<()> {
        while let Some(chunk) = self.chunks.next_completed_batch() {
            let open = match &mut self.open {
                Some(o) => o,
                None => self.open.insert(self.start(Some(&chunk))?),
            };
            open.rows += chunk.num_rows() as u64;
            let (t, p) = tokens_in(&chunk);
            open.tokens += t;
            open.padding += p;
            if let Some(c) = self.reason_column {
                count_reasons(chunk.column(c), &mut open.reasons)?;
            }
            if open.slices.send(chunk).await.is_err() {
                // The writer stops before its channel closes only on an error: that is the answer.
                return Err(match open.writer.join_unwind_mut().await {
                    Ok(Err(e)) => e,
                    Ok(Ok(_)) => DataFusionError::Internal("the Parquet writer stopped before its last slice".into()),
                    Err(e) => df(e),
                });
            }
        }
        Ok(())
    }

    /// Opens the file; its first slice (when it has one) decides which columns get a dictionary.
    fn start(&self, first: Option<&RecordBatch>) -> Result<Open> {
        // Unique per attempt: a retried task never writes into a file another attempt is writing.
        // The random salt (std's per-hasher random keys) tells apart the parts this process
        // starts in the same nanosecond (unnamed parts of two partitions did, and one renamed the
        // other's file away).
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let seq = std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), nanos);
        let name = self.name.as_deref().unwrap_or("part");
        let tmp = self.target.dir.clone().join(format!(".{name}.{}-{nanos}-{seq}{TMP_SUFFIX}", std::process::id()).as_str());
        let sink = HashingWriter { inner: BufWriter::new(Arc::clone(&self.target.store), tmp.clone()), hash: Sha256::new(), bytes: 0 };
        let props = match first {
            Some(first) => dictionary::where_it_pays(self.target.props.clone(), first),
            None => self.target.props.clone(),
        };
        let mut writer = AsyncArrowWriter::try_new(sink, Arc::clone(&self.target.schema), Some(props))?;
        let (slices, mut arriving) = mpsc::channel::<RecordBatch>(1);
        // Dropping the task (a cancelled query) aborts it: the temporary file is never renamed.
        let writer = SpawnedTask::spawn(async move {
            while let Some(slice) = arriving.recv().await {
                writer.write(&slice).await?;
            }
            writer.finish().await?;
            Ok(writer.into_inner())
        });
        Ok(Open { tmp, slices, writer, rows: 0, tokens: 0, padding: 0, reasons: BTreeMap::new() })
    }

    /// Completes the file and renames it into place. A part that got no rows leaves nothing and
    /// returns `None`, unless `keep_empty` (an output's only file, which carries its schema).
    pub async fn finish(mut self, keep_empty: bool) -> Result<Option<FileRecord>> {
        self.chunks.finish_buffered_batch()?;
        self.drain().await?;
        let open = match self.open.take() {
            Some(o) => o,
            None if keep_empty => self.start(None)?,
            None => return Ok(None),
        };
        let Open { tmp, slices, writer, rows, tokens, padding, reasons } = open;
        // The closed channel tells the writer that every slice is in.
        drop(slices);
        let sink = writer.join_unwind().await.map_err(df)??;
        let sha256 = hex::encode(sink.hash.finalize());
        let name = self.name.unwrap_or_else(|| format!("part-{}.parquet", &sha256[..16]));
        let path = self.target.dir.clone().join(name.as_str());
        self.target.store.rename(&tmp, &path).await.map_err(df)?;
        Ok(Some(FileRecord {
            path: name,
            rows,
            tokens,
            padding_tokens: padding,
            bytes: sink.bytes,
            sha256,
            source: None,
            reasons,
        }))
    }
}

/// The kept part and, with a rejects target, the rejected part of one unit of output.
pub struct Unit {
    kept: Part,
    rejected: Option<(Part, usize)>,
}

impl Unit {
    pub fn new(kept: &Target, rejected: Option<&(Target, usize)>, name: Option<String>) -> Self {
        Self { kept: Part::new(kept, name.clone()), rejected: rejected.map(|(t, column)| (Part::new(t, name).counting_reasons(*column), *column)) }
    }

    pub async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match &mut self.rejected {
            None => self.kept.write(batch.clone()).await,
            Some((part, column)) => {
                let rejected = is_not_null(batch.column(*column).as_ref())?;
                let kept = filter_record_batch(batch, &not(&rejected)?)?;
                let keep_columns: Vec<usize> = (0..batch.num_columns()).filter(|i| i != column).collect();
                part.write(filter_record_batch(batch, &rejected)?).await?;
                self.kept.write(kept.project(&keep_columns)?).await
            }
        }
    }

    /// (kept, rejected) records of the files that got rows.
    pub async fn finish(self) -> Result<(Option<FileRecord>, Option<FileRecord>)> {
        let kept = self.kept.finish(false).await?;
        let rejected = match self.rejected {
            Some((part, _)) => part.finish(false).await?,
            None => None,
        };
        Ok((kept, rejected))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ListBuilder, StringArray, UInt32Builder};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use object_store::local::LocalFileSystem;

    fn batch(schema: &SchemaRef, from: usize, n: usize) -> RecordBatch {
        let text = StringArray::from_iter_values((from..from + n).map(|i| format!("doc {i} {}", "x".repeat(i % 97))));
        let mut ids = ListBuilder::new(UInt32Builder::new());
        for i in from..from + n {
            ids.values().append_slice(&(0..(i % 300) as u32).collect::<Vec<_>>());
            ids.append(true);
        }
        RecordBatch::try_new(Arc::clone(schema), vec![Arc::new(text), Arc::new(ids.finish())]).unwrap()
    }

    async fn write_in(dir: &std::path::Path, name: &str, sizes: &[usize]) -> (FileRecord, Vec<u8>) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("text", DataType::Utf8, false),
            Field::new("input_ids", DataType::List(Arc::new(Field::new_list_field(DataType::UInt32, true))), true),
        ]));
        let opts = SinkOptions {
            location: String::new(),
            compression: "zstd(3)".into(),
            ids_compression: "zstd(1)".into(),
            ids_encoding: IdsEncoding::Plain,
            max_row_group_rows: 3000,
            max_row_group_bytes: 200_000,
            rejects: None,
            metadata: vec![("k".into(), "v".into())],
            run_key: String::new(),
        };
        let target = Target {
            store: Arc::new(LocalFileSystem::new()),
            dir: Path::from_filesystem_path(dir).unwrap(),
            schema: Arc::clone(&schema),
            props: writer_properties(&opts).unwrap(),
        };
        let mut part = Part::new(&target, Some(name.into()));
        let mut at = 0;
        for &n in sizes {
            part.write(batch(&schema, at, n)).await.unwrap();
            at += n;
        }
        let record = part.finish(false).await.unwrap().unwrap();
        (record, std::fs::read(dir.join(name)).unwrap())
    }

    #[tokio::test]
    async fn the_same_rows_give_the_same_bytes_however_they_are_batched() {
        let dir = tempfile::tempdir().unwrap();
        let (a, bytes_a) = write_in(dir.path(), "a.parquet", &[10_000]).await;
        let (b, bytes_b) = write_in(dir.path(), "b.parquet", &[1, 999, 37, 4000, 2963, 2000]).await;
        let (c, bytes_c) = write_in(dir.path(), "c.parquet", &[8192, 1808]).await;
        assert_eq!(a.rows, 10_000);
        assert!(bytes_a == bytes_b && bytes_b == bytes_c, "bytes differ with batching");
        assert_eq!((a.sha256.clone(), a.bytes), (b.sha256, b.bytes));
        assert_eq!(a.sha256, c.sha256);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert!(left.iter().all(|n| !n.ends_with(TMP_SUFFIX)), "{left:?}");
    }

    #[test]
    fn the_ids_have_their_own_codec() {
        use datafusion::parquet::basic::{Compression, ZstdLevel};
        let opts = SinkOptions {
            location: String::new(),
            compression: "snappy".into(),
            ids_compression: "zstd(1)".into(),
            ids_encoding: IdsEncoding::Plain,
            max_row_group_rows: 3000,
            max_row_group_bytes: 200_000,
            rejects: None,
            metadata: vec![],
            run_key: String::new(),
        };
        let props = writer_properties(&opts).unwrap();
        let ids = ColumnPath::from(vec!["input_ids".into(), "list".into(), "item".into()]);
        assert_eq!(props.compression(&ids), Compression::ZSTD(ZstdLevel::try_new(1).unwrap()));
        assert_eq!(props.compression(&ColumnPath::from("text")), Compression::SNAPPY);
        assert_eq!(props.encoding(&ids), None, "the writer's own choice: plain, as the dictionary is off");
        let split = writer_properties(&SinkOptions { ids_encoding: IdsEncoding::ByteStreamSplit, ..opts }).unwrap();
        assert_eq!(split.encoding(&ids), Some(Encoding::BYTE_STREAM_SPLIT));
        assert_eq!(split.encoding(&ColumnPath::from("text")), None);
    }

    /// `n` rows of 4,096 ids that zstd cannot shrink: 16 KiB of Parquet per row.
    fn noise(schema: &SchemaRef, seed: u64, n: usize) -> RecordBatch {
        let mut ids = ListBuilder::new(UInt32Builder::new());
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        for _ in 0..n {
            for _ in 0..4096 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ids.values().append_value(x as u32);
            }
            ids.append(true);
        }
        RecordBatch::try_new(Arc::clone(schema), vec![Arc::new(ids.finish())]).unwrap()
    }

    #[tokio::test]
    async fn a_store_that_fails_fails_the_part_with_its_error() {
        // The output folder is under a regular file, so the store cannot create the part: with
        // 80 MiB to write, the writer task meets the error while slices are still coming (the store
        // buffers 10 MiB before its first upload), and the next write returns that error.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), b"").unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new(
            "input_ids",
            DataType::List(Arc::new(Field::new_list_field(DataType::UInt32, true))),
            true,
        )]));
        let target = Target {
            store: Arc::new(LocalFileSystem::new()),
            dir: Path::from_filesystem_path(dir.path()).unwrap().join("file").join("out"),
            schema: Arc::clone(&schema),
            props: WriterProperties::builder().set_max_row_group_row_count(Some(256)).build(),
        };
        let mut part = Part::new(&target, Some("p.parquet".into()));
        let mut failed = None;
        for k in 0..20 {
            if let Err(e) = part.write(noise(&schema, k, 256)).await {
                failed = Some(e);
                break;
            }
        }
        let e = failed.expect("a write fails before the last slice");
        assert!(e.to_string().to_lowercase().contains("not a directory"), "{e}");
    }

    #[tokio::test]
    async fn a_part_without_rows_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = Target {
            store: Arc::new(LocalFileSystem::new()),
            dir: Path::from_filesystem_path(dir.path()).unwrap(),
            schema: Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)])),
            props: WriterProperties::default(),
        };
        assert!(Part::new(&target, Some("p.parquet".into())).finish(false).await.unwrap().is_none());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let empty = Part::new(&target, None).finish(true).await.unwrap().unwrap();
        assert_eq!(empty.rows, 0);
        assert_eq!(empty.path, format!("part-{}.parquet", &empty.sha256[..16]));
        assert!(dir.path().join(&empty.path).exists());
    }
}
