//! tokq's Parquet writer for `COPY ... STORED AS PARQUET`: one file per plan partition, footer
//! metadata (format version, tokenizer, recipe hash, tokq version), zstd, and atomic output:
//! each file is written as a hidden `.NAME.tokq-tmp` and renamed into place when complete, then
//! stale part files are removed, and the manifest is written last.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::{Array, Int64Array, ListArray, RecordBatch, UInt8Array};
use datafusion::arrow::compute::kernels::boolean::not;
use datafusion::arrow::compute::{filter_record_batch, is_not_null};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::file_options::parquet_writer::parse_compression_string;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result};
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::parquet::arrow::async_writer::AsyncFileWriter;
use datafusion::parquet::arrow::AsyncArrowWriter;
use datafusion::parquet::file::metadata::KeyValue;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::parquet::schema::types::ColumnPath;
use datafusion::physical_plan::{execute_stream_partitioned, ExecutionPlan};
use datafusion::prelude::SessionContext;
use futures::future::BoxFuture;
use futures::{StreamExt, TryStreamExt};
use object_store::buffered::BufWriter;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use sha2::{Digest, Sha256};

use tokq_udfs::pack::table::PackTable;
use tokq_udfs::pack::PackOptions;

use crate::manifest::{FileRecord, Manifest, TokenizerRecord, FORMAT_VERSION, MANIFEST_NAME};

pub const DEFAULT_COMPRESSION: &str = "zstd(3)";
pub const DEFAULT_ROW_GROUP_ROWS: usize = 65_536;
pub const DEFAULT_ROW_GROUP_BYTES: usize = 1 << 20;
/// Suffix of files being written; readers skip them (hidden, and not `*.parquet`).
pub const TMP_SUFFIX: &str = ".tokq-tmp";

/// Where rejected rows go: rows whose `column` is not NULL (a filter's reason) are written there,
/// with that column; the others go to the main target, without it.
#[derive(Debug, Clone)]
pub struct RejectsTarget {
    pub location: String,
    pub column: String,
}

pub const DEFAULT_REJECT_COLUMN: &str = "filter_reason";

/// What the user asked of a Parquet COPY.
#[derive(Debug, Clone)]
pub struct ParquetTarget {
    pub location: String,
    pub compression: String,
    pub max_row_group_rows: usize,
    pub max_row_group_bytes: usize,
    pub rejects: Option<RejectsTarget>,
}

impl ParquetTarget {
    pub fn new(location: &str, options: &[(String, String)]) -> Result<Self> {
        if location.ends_with(".parquet") {
            return Err(DataFusionError::Plan(format!(
                "COPY target '{location}': tokq writes a directory of part files and a manifest; \
                 give a directory such as '{}/'",
                location.trim_end_matches(".parquet")
            )));
        }
        let mut t = Self {
            location: location.to_string(),
            compression: DEFAULT_COMPRESSION.to_string(),
            max_row_group_rows: DEFAULT_ROW_GROUP_ROWS,
            max_row_group_bytes: DEFAULT_ROW_GROUP_BYTES,
            rejects: None,
        };
        let mut reject_column = None;
        let positive = |key: &str, value: &str| {
            value.parse().ok().filter(|&n: &usize| n > 0).ok_or_else(|| {
                DataFusionError::Plan(format!("{key} must be a positive integer, got '{value}'"))
            })
        };
        for (key, value) in options {
            match key.strip_prefix("format.").unwrap_or(key) {
                "compression" => {
                    parse_compression_string(value)?;
                    t.compression = value.to_lowercase();
                }
                "max_row_group_size" => t.max_row_group_rows = positive(key, value)?,
                "max_row_group_bytes" => t.max_row_group_bytes = positive(key, value)?,
                "rejects" => {
                    let location = value.trim_end_matches('/').to_string() + "/";
                    if location == t.location.trim_end_matches('/').to_string() + "/" {
                        return Err(DataFusionError::Plan(format!("COPY option 'rejects' must differ from the target '{}'", t.location)));
                    }
                    t.rejects = Some(RejectsTarget { location: value.to_string(), column: DEFAULT_REJECT_COLUMN.into() });
                }
                "reject_column" => reject_column = Some(value.to_string()),
                other => {
                    return Err(DataFusionError::Plan(format!(
                        "COPY option '{other}' is not supported by tokq's Parquet writer (supported: compression, max_row_group_size, max_row_group_bytes, rejects, reject_column)"
                    )))
                }
            }
        }
        match (&mut t.rejects, reject_column) {
            (Some(r), Some(c)) => r.column = c,
            (None, Some(_)) => {
                return Err(DataFusionError::Plan("COPY option 'reject_column' needs 'rejects', the directory for rejected rows".into()))
            }
            _ => {}
        }
        Ok(t)
    }
}

/// What the footer records about how a plan made its rows.
#[derive(Debug, Default)]
pub struct PlanFacts {
    /// Tokenizer specs used by `tokenize` / `token_count` anywhere in the plan, with file hashes.
    pub tokenizers: Vec<TokenizerRecord>,
    /// The options of `pack_tokens`, when the rows are packed.
    pub packing: Option<PackOptions>,
}

/// Walks a plan and the inputs of the packing tables it scans.
fn walk(plan: &LogicalPlan, specs: &mut BTreeMap<String, ()>, packing: &mut Option<PackOptions>) -> Result<()> {
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            if let Some(pack) = source_as_provider(&scan.source).ok().as_deref().and_then(|p| p.downcast_ref::<PackTable>()) {
                *packing = Some(pack.options().clone());
                walk(pack.input(), specs, packing)?;
            }
        }
        node.apply_expressions(|e| {
            e.apply(|e| {
                if let Expr::ScalarFunction(f) = e {
                    if matches!(f.name(), "tokenize" | "token_count") {
                        if let Some(Expr::Literal(v, _)) = f.args.get(1) {
                            if let Some(s) = v.try_as_str().flatten() {
                                specs.insert(s.to_string(), ());
                            }
                        }
                    }
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    })?;
    Ok(())
}

pub fn plan_facts(plan: &LogicalPlan) -> Result<PlanFacts> {
    let (mut specs, mut packing) = (BTreeMap::new(), None);
    walk(plan, &mut specs, &mut packing)?;
    let tokenizers = specs
        .into_keys()
        .map(|spec| {
            let t = tokq_udfs::tokenize::cached(&spec)?;
            Ok(TokenizerRecord { spec, sha256: t.sha256.clone() })
        })
        .collect::<Result<_>>()?;
    Ok(PlanFacts { tokenizers, packing })
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
fn tokens_in(batch: &RecordBatch) -> (u64, u64) {
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

pub struct Written {
    pub manifest: Manifest,
    /// The rejects output's manifest, when the COPY has `'rejects'`.
    pub rejects: Option<Manifest>,
}

fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// One part file being written: a hidden temporary name until it is complete.
struct Part {
    name: String,
    path: Path,
    writer: AsyncArrowWriter<HashingWriter>,
    rows: u64,
    tokens: u64,
    padding: u64,
}

impl Part {
    fn open(store: &Arc<dyn ObjectStore>, dir: &Path, index: usize, schema: SchemaRef, props: WriterProperties) -> Result<Self> {
        let name = format!("part-{index:05}.parquet");
        let path = dir.clone().join(format!(".{name}{TMP_SUFFIX}").as_str());
        let sink = HashingWriter { inner: BufWriter::new(Arc::clone(store), path.clone()), hash: Sha256::new(), bytes: 0 };
        let writer = AsyncArrowWriter::try_new(sink, schema, Some(props))?;
        Ok(Self { name, path, writer, rows: 0, tokens: 0, padding: 0 })
    }

    async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.rows += batch.num_rows() as u64;
        let (t, p) = tokens_in(batch);
        self.tokens += t;
        self.padding += p;
        Ok(self.writer.write(batch).await?)
    }

    /// Writes the footer and completes the upload; a part without rows leaves nothing unless
    /// `keep_empty`.
    async fn finish(mut self, keep_empty: bool) -> Result<Option<(Path, FileRecord)>> {
        if self.rows == 0 && !keep_empty {
            return Ok(None);
        }
        self.writer.finish().await?;
        let sink = self.writer.into_inner();
        let record = FileRecord {
            path: self.name,
            rows: self.rows,
            tokens: self.tokens,
            padding_tokens: self.padding,
            bytes: sink.bytes,
            sha256: hex::encode(sink.hash.finalize()),
        };
        Ok(Some((self.path, record)))
    }
}

/// Splits a batch into (kept rows without the reason column, rejected rows).
fn split_rejects(batch: &RecordBatch, column: usize) -> Result<(RecordBatch, RecordBatch)> {
    let rejected = is_not_null(batch.column(column).as_ref())?;
    let kept = filter_record_batch(batch, &not(&rejected)?)?;
    let keep_columns: Vec<usize> = (0..batch.num_columns()).filter(|&i| i != column).collect();
    Ok((kept.project(&keep_columns)?, filter_record_batch(batch, &rejected)?))
}

pub(crate) fn store_and_dir(ctx: &SessionContext, location: &str) -> Result<(Arc<dyn ObjectStore>, Path)> {
    let url = tokq_udfs::store::to_url(location)?;
    let store = ctx.runtime_env().object_store(tokq_udfs::store::object_store_url(&url)?)?;
    let dir = Path::from_url_path(url.path()).map_err(external)?;
    Ok((store, dir))
}

/// Runs `plan` and writes its partitions as Parquet files under the target directory.
pub async fn write(
    ctx: &SessionContext,
    plan: Arc<dyn ExecutionPlan>,
    target: &ParquetTarget,
    facts: &PlanFacts,
    recipe_sha256: &str,
) -> Result<Written> {
    let (store, dir) = store_and_dir(ctx, &target.location)?;
    let tokenizer_json = serde_json::to_string(&facts.tokenizers).map_err(external)?;
    let mut metadata = vec![
        KeyValue::new("tokq.format_version".into(), FORMAT_VERSION.to_string()),
        KeyValue::new("tokq.tokenizer".into(), tokenizer_json),
        KeyValue::new("tokq.recipe_sha256".into(), recipe_sha256.to_string()),
        KeyValue::new("tokq.version".into(), env!("CARGO_PKG_VERSION").to_string()),
    ];
    if let Some(p) = &facts.packing {
        let json = serde_json::to_string(p).map_err(external)?;
        metadata.push(KeyValue::new("tokq.packing".into(), json));
    }
    let props = WriterProperties::builder()
        .set_compression(parse_compression_string(&target.compression)?)
        .set_max_row_group_row_count(Some(target.max_row_group_rows))
        .set_max_row_group_bytes(Some(target.max_row_group_bytes))
        // Token ids have too many distinct values for a dictionary to pay: plain pages are
        // smaller after zstd and decode faster (python/bench/read_throughput.py).
        .set_column_dictionary_enabled(ColumnPath::from(vec!["input_ids".into(), "list".into(), "item".into()]), false)
        .set_key_value_metadata(Some(metadata))
        .build();
    let schema = plan.schema();
    let split = match &target.rejects {
        Some(r) => {
            let i = schema.index_of(&r.column).map_err(|_| {
                DataFusionError::Plan(format!(
                    "COPY to '{}' with rejects: the query has no column '{}' (the reason a row is rejected, NULL when kept); name it with 'reject_column'",
                    target.location, r.column
                ))
            })?;
            let kept_schema = Arc::new(schema.project(&(0..schema.fields().len()).filter(|&j| j != i).collect::<Vec<_>>())?);
            let (rejects_store, rejects_dir) = store_and_dir(ctx, &r.location)?;
            Some((i, kept_schema, rejects_store, rejects_dir))
        }
        None => None,
    };
    let streams = execute_stream_partitioned(plan, ctx.task_ctx())?;
    let tasks = streams.into_iter().enumerate().map(|(i, mut stream)| {
        let (store, dir, props, schema, split) = (Arc::clone(&store), dir.clone(), props.clone(), Arc::clone(&schema), split.clone());
        tokio::spawn(async move {
            let Some((column, kept_schema, rejects_store, rejects_dir)) = split else {
                let mut part = Part::open(&store, &dir, i, schema, props)?;
                while let Some(batch) = stream.try_next().await? {
                    part.write(&batch).await?;
                }
                return Ok::<_, DataFusionError>((part.finish(false).await?, None));
            };
            let mut kept = Part::open(&store, &dir, i, kept_schema, props.clone())?;
            let mut rejected = Part::open(&rejects_store, &rejects_dir, i, schema, props)?;
            while let Some(batch) = stream.try_next().await? {
                let (k, r) = split_rejects(&batch, column)?;
                kept.write(&k).await?;
                rejected.write(&r).await?;
            }
            Ok((kept.finish(false).await?, rejected.finish(false).await?))
        })
    });
    let (mut done, mut done_rejects) = (Vec::new(), Vec::new());
    for t in futures::future::join_all(tasks).await {
        let (kept, rejected) = t.map_err(external)??;
        done.extend(kept);
        done_rejects.extend(rejected);
    }
    // An output without rows still gets one empty part, so that readers find its schema.
    if done.is_empty() {
        let kept_schema = split.as_ref().map_or_else(|| Arc::clone(&schema), |s| Arc::clone(&s.1));
        done.extend(Part::open(&store, &dir, 0, kept_schema, props.clone())?.finish(true).await?);
    }
    if let Some((_, _, rejects_store, rejects_dir)) = split.as_ref().filter(|_| done_rejects.is_empty()) {
        done_rejects.extend(Part::open(rejects_store, rejects_dir, 0, Arc::clone(&schema), props.clone())?.finish(true).await?);
    }
    let commit = |store, dir, done| commit(store, dir, done, target, facts, recipe_sha256);
    let rejects = match &split {
        Some((_, _, rejects_store, rejects_dir)) => Some(commit(rejects_store, rejects_dir, done_rejects).await?),
        None => None,
    };
    let manifest = commit(&store, &dir, done).await?;
    Ok(Written { manifest, rejects })
}

/// Renames finished parts into place, removes stale ones, and writes the manifest last.
async fn commit(
    store: &Arc<dyn ObjectStore>,
    dir: &Path,
    done: Vec<(Path, FileRecord)>,
    target: &ParquetTarget,
    facts: &PlanFacts,
    recipe_sha256: &str,
) -> Result<Manifest> {
    let mut files = Vec::with_capacity(done.len());
    for (path, record) in done {
        store.rename(&path, &dir.clone().join(record.path.as_str())).await.map_err(external)?;
        files.push(record);
    }
    remove_stale(store, dir, &files).await?;
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        tokq_version: env!("CARGO_PKG_VERSION").to_string(),
        recipe_sha256: recipe_sha256.to_string(),
        tokenizers: facts.tokenizers.clone(),
        compression: target.compression.clone(),
        rows: files.iter().map(|f| f.rows).sum(),
        tokens: files.iter().map(|f| f.tokens).sum(),
        padding_tokens: files.iter().map(|f| f.padding_tokens).sum(),
        packing: facts.packing.clone(),
        bytes: files.iter().map(|f| f.bytes).sum(),
        files,
    };
    let body = serde_json::to_vec_pretty(&manifest).map_err(external)?;
    store.put(&dir.clone().join(MANIFEST_NAME), PutPayload::from(body)).await.map_err(external)?;
    Ok(manifest)
}

/// Removes part files of an earlier run that this run did not write, and unfinished files.
async fn remove_stale(store: &Arc<dyn ObjectStore>, dir: &Path, keep: &[FileRecord]) -> Result<()> {
    let listed: Vec<_> = store.list(Some(dir)).try_collect().await.map_err(external)?;
    let stale = listed.into_iter().filter(|m| {
        let Some(rel) = m.location.prefix_match(dir).map(Path::from_iter) else { return false };
        let rel = rel.as_ref();
        (rel.starts_with('.') && rel.ends_with(TMP_SUFFIX))
            || (rel.starts_with("part-") && rel.ends_with(".parquet") && !keep.iter().any(|f| f.path == rel))
    });
    let mut deletes = futures::stream::iter(stale.map(|m| {
        let store = Arc::clone(store);
        async move { store.delete(&m.location).await }
    }))
    .buffer_unordered(8);
    while let Some(r) = deletes.next().await {
        r.map_err(external)?;
    }
    Ok(())
}
