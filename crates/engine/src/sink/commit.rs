//! `COPY ... STORED AS PARQUET` through tokq's writer. The files are written where the plan runs
//! ([`super::exec`]: locally, or on the executors of a cluster); this side parses the COPY,
//! plans the output table, and commits: stale files out, then the manifest, written last.

use tokq_udfs::args::{df, OrDf};
use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, StringArray};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::file_options::parquet_writer::parse_compression_string;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::source_as_provider;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::physical_plan::{collect, ExecutionPlan};
use datafusion::prelude::SessionContext;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use sha2::{Digest, Sha256};

use crate::pack::table::PackTable;
use tokq_core::pack::PackOptions;
use crate::sink::exec::kept_schema;
use crate::sink::part::{writer_properties, Part, Target};
use crate::sink::table::SinkTable;
use crate::sink::{journal, store_and_dir, FileRecord, IdsEncoding, Layout, RejectsTarget, SinkOptions, WrittenFile, is_unfinished};

use crate::sink::claim::Claim;
use crate::store::{anchored, object_path};
use crate::sink::single;
use crate::sink::manifest::{Manifest, RecipeId, TokenizerRecord, FORMAT_KEY, FORMAT_VERSION, LEGACY_MANIFEST_NAME, MANIFEST_NAME};

pub const DEFAULT_COMPRESSION: &str = "zstd(3)";
/// The token id lists: near-random 17-bit numbers, where zstd(3)'s compressor was 12% of a
/// one-core tokenize run's samples for files 6% smaller than zstd(1) (Llama-3 on 61 MB of
/// Wikipedia: 21.4 against 22.8 MB); level 1 saves 5-10% of that run's wall time.
pub const DEFAULT_IDS_COMPRESSION: &str = "zstd(1)";
pub const DEFAULT_ROW_GROUP_ROWS: usize = 65_536;
pub const DEFAULT_ROW_GROUP_BYTES: usize = 1 << 20;
pub const DEFAULT_REJECT_COLUMN: &str = "filter_reason";

/// What the user asked of a Parquet COPY.
#[derive(Debug, Clone)]
pub struct ParquetTarget {
    /// The folder the parts and manifest go to: for a single-file target, its staging folder.
    pub location: String,
    /// A target ending in `.parquet`: the one file the staging folder's parts become.
    pub file: Option<String>,
    /// The same for the rejects.
    pub rejects_file: Option<String>,
    pub compression: String,
    /// The codec of the `input_ids` lists: `ids_compression`, else `compression` when given.
    pub ids_compression: String,
    pub ids_encoding: IdsEncoding,
    pub max_row_group_rows: usize,
    pub max_row_group_bytes: usize,
    pub rejects: Option<RejectsTarget>,
    /// Delete files in the target (and rejects) folder that tokq did not write, instead of
    /// refusing the folder.
    pub overwrite: bool,
}

impl ParquetTarget {
    pub fn new(location: &str, options: &[(String, String)]) -> Result<Self> {
        let (location, file) = staged(location)?;
        let location = &location;
        let mut t = Self {
            location: location.to_string(),
            file,
            rejects_file: None,
            compression: DEFAULT_COMPRESSION.to_string(),
            ids_compression: DEFAULT_IDS_COMPRESSION.to_string(),
            ids_encoding: IdsEncoding::default(),
            max_row_group_rows: DEFAULT_ROW_GROUP_ROWS,
            max_row_group_bytes: DEFAULT_ROW_GROUP_BYTES,
            rejects: None,
            overwrite: false,
        };
        let (mut reject_column, mut ids_compression, mut chosen) = (None, None, false);
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
                    chosen = true;
                }
                "ids_compression" => {
                    parse_compression_string(value)?;
                    ids_compression = Some(value.to_lowercase());
                }
                "ids_encoding" => t.ids_encoding = IdsEncoding::parse(value)?,
                "max_row_group_size" => t.max_row_group_rows = positive(key, value)?,
                "max_row_group_bytes" => t.max_row_group_bytes = positive(key, value)?,
                "rejects" => {
                    let (value, file) = staged(value)?;
                    t.rejects_file = file;
                    let value = &value;
                    let location = value.trim_end_matches('/').to_string() + "/";
                    if location == t.location.trim_end_matches('/').to_string() + "/" {
                        return Err(DataFusionError::Plan(format!("COPY option 'rejects' must differ from the target '{}'", t.location)));
                    }
                    t.rejects = Some(RejectsTarget { location: value.to_string(), column: DEFAULT_REJECT_COLUMN.into() });
                }
                "reject_column" => reject_column = Some(value.to_string()),
                "overwrite" => {
                    t.overwrite = match value.to_ascii_lowercase().as_str() {
                        "true" => true,
                        "false" => false,
                        _ => return Err(DataFusionError::Plan(format!("COPY option 'overwrite' must be true or false, got '{value}'"))),
                    }
                }
                other => {
                    return Err(DataFusionError::Plan(format!(
                        "COPY option '{other}' is not supported by tokq's Parquet writer (supported: compression, ids_compression, ids_encoding, max_row_group_size, max_row_group_bytes, rejects, reject_column, overwrite)"
                    )))
                }
            }
        }
        // A codec the user chose applies to the ids too, unless they chose one for the ids.
        t.ids_compression = ids_compression.unwrap_or(if chosen { t.compression.clone() } else { t.ids_compression });
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

/// A target's folder, anchored: for `x.parquet`, its staging folder and the file.
fn staged(location: &str) -> Result<(String, Option<String>)> {
    let location = anchored(location).df()?;
    if location.ends_with(".parquet") {
        return Ok((super::single::staging(&location), Some(location)));
    }
    Ok((location, None))
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

/// The tokenizer specs a plan calls `tokenize` or `token_count` with, packed inputs included.
pub fn tokenizer_specs(plan: &LogicalPlan) -> Result<Vec<String>> {
    let mut specs = BTreeMap::new();
    walk(plan, &mut specs, &mut None)?;
    Ok(specs.into_keys().collect())
}

/// One line per tokenizer spec of the plan: the encoder it runs on, and why not tokq's own where
/// it is not (`tokq explain`).
pub fn encoder_lines(plan: &LogicalPlan) -> Result<String> {
    tokenizer_specs(plan)?
        .into_iter()
        .map(|spec| {
            let t = tokq_core::tokenize::cached(&spec).df()?;
            let why = t.fallback_reason.as_deref().map(|r| format!(" (fallback: {r})")).unwrap_or_default();
            Ok(format!("tokenizer {spec}: encoder {}{why}\n", t.backend()))
        })
        .collect()
}

pub fn plan_facts(plan: &LogicalPlan) -> Result<PlanFacts> {
    let (mut specs, mut packing) = (BTreeMap::new(), None);
    walk(plan, &mut specs, &mut packing)?;
    let tokenizers = specs
        .into_keys()
        .map(|spec| {
            let t = tokq_core::tokenize::cached(&spec).df()?;
            Ok(TokenizerRecord { spec, sha256: t.sha256.clone() })
        })
        .collect::<Result<_>>()?;
    Ok(PlanFacts { tokenizers, packing })
}

/// A planned COPY: the output table's plan and what committing it needs.
pub struct PlannedCopy {
    pub target: ParquetTarget,
    pub facts: PlanFacts,
    pub recipe: RecipeId,
    opts: SinkOptions,
    input_schema: SchemaRef,
}

impl PlannedCopy {
    /// Input bytes and rows whose output is committed so far, from the journal the writers keep
    /// (source layout; a partition-layout COPY commits at its end).
    pub async fn committed_so_far(&self, ctx: &SessionContext) -> Result<(u64, u64)> {
        let (store, dir) = store_and_dir(&ctx.runtime_env(), &self.target.location)?;
        journal::committed(&store, &journal::folder(&dir, &self.opts.run_key)).await
    }

    /// Each folder the COPY writes, with the schema of its files: the main output, and the
    /// rejects (which keep the reason column).
    pub fn outputs(&self) -> Result<Vec<(String, SchemaRef)>> {
        let (kept, _) = kept_schema(&self.input_schema, &self.opts)?;
        let t = &self.target;
        let mut out = vec![(t.file.clone().unwrap_or_else(|| t.location.clone()), kept)];
        out.extend(t.rejects.as_ref().map(|r| (t.rejects_file.clone().unwrap_or_else(|| r.location.clone()), Arc::clone(&self.input_schema))));
        Ok(out)
    }
}

/// Plans writing `input` to `target`. `run_key` names the statement among reruns (see
/// `SinkOptions::run_key`).
pub async fn plan(
    ctx: &SessionContext,
    input: LogicalPlan,
    target: ParquetTarget,
    facts: PlanFacts,
    recipe: &RecipeId,
    run_key: &str,
) -> Result<(Arc<dyn ExecutionPlan>, PlannedCopy)> {
    let recipe_sha256 = &recipe.sha256;
    let mut metadata = vec![
        (FORMAT_KEY.to_string(), FORMAT_VERSION.to_string()),
        ("tokq.tokenizer".to_string(), serde_json::to_string(&facts.tokenizers).map_err(df)?),
        ("tokq.recipe_sha256".to_string(), recipe_sha256.to_string()),
        ("tokq.version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
    ];
    if let Some(p) = &facts.packing {
        metadata.push(("tokq.packing".into(), serde_json::to_string(p).map_err(df)?));
    }
    let opts = SinkOptions {
        location: target.location.clone(),
        compression: target.compression.clone(),
        ids_compression: target.ids_compression.clone(),
        ids_encoding: target.ids_encoding,
        max_row_group_rows: target.max_row_group_rows,
        max_row_group_bytes: target.max_row_group_bytes,
        rejects: target.rejects.clone(),
        metadata,
        run_key: hex::encode(Sha256::digest(format!("{}\n{recipe_sha256}\n{run_key}", env!("CARGO_PKG_VERSION")))),
    };
    let input_schema = Arc::new(crate::lineage::unnamed(input.schema().as_arrow()));
    let table = SinkTable::try_new(input, opts.clone())?;
    let plan = ctx.read_table(Arc::new(table))?.create_physical_plan().await?;
    Ok((plan, PlannedCopy { target, facts, recipe: recipe.clone(), opts, input_schema }))
}

pub struct Written {
    pub manifest: Manifest,
    /// The rejects output's manifest, when the COPY has `'rejects'`.
    pub rejects: Option<Manifest>,
    /// Every file, with the process that wrote it.
    pub files: Vec<WrittenFile>,
}

/// Runs a planned COPY and commits its outputs.
pub async fn write(ctx: &SessionContext, plan: Arc<dyn ExecutionPlan>, copy: &PlannedCopy) -> Result<Written> {
    let runtime = ctx.runtime_env();
    let (store, dir) = store_and_dir(&runtime, &copy.target.location)?;
    let rejects = copy.target.rejects.as_ref().map(|r| store_and_dir(&runtime, &r.location)).transpose()?;
    let (recorded, recorded_rejects) = journal::recorded(&store, &dir).await?;
    let mut claims = vec![Claim::take(&store, &dir, &copy.target.location, &recorded, &copy.recipe, copy.target.overwrite).await?];
    if let (Some((s, d)), Some(r)) = (&rejects, &copy.target.rejects) {
        match Claim::take(s, d, &r.location, &recorded_rejects, &copy.recipe, copy.target.overwrite).await {
            Ok(c) => claims.push(c),
            Err(e) => return Err(release(claims, e).await),
        }
    }
    let singles = [(&copy.target.file, Some((&store, &dir))), (&copy.target.rejects_file, rejects.as_ref().map(|(s, d)| (s, d)))];
    for (file, staging) in &singles {
        if let (Some(file), Some((s, _))) = (file, staging) {
            if let Err(e) = single::check_target(s, &object_path(file).df()?, file, &copy.recipe, copy.target.overwrite).await {
                return Err(release(claims, e).await);
            }
        }
    }
    let written = write_claimed(ctx, plan, copy, (store.clone(), dir.clone()), rejects.clone()).await;
    let published = match written {
        Ok(w) => publish(&singles, &w).await.map(|()| w),
        Err(e) => Err(e),
    };
    match published {
        Ok(w) => {
            for c in claims {
                c.release().await?;
            }
            let locations = [copy.target.location.as_str(), copy.target.rejects.as_ref().map_or("", |r| r.location.as_str())];
            for ((file, staging), location) in singles.into_iter().zip(locations) {
                if let (Some(_), Some((s, d))) = (file, staging) {
                    single::remove_staging(s, d, location).await?;
                }
            }
            Ok(w)
        }
        Err(e) => Err(release(claims, e).await),
    }
}

/// Concatenates each single-file target's committed parts into its file.
async fn publish(singles: &[(&Option<String>, Option<(&Arc<dyn ObjectStore>, &Path)>); 2], w: &Written) -> Result<()> {
    for ((file, staging), manifest) in singles.iter().zip([Some(&w.manifest), w.rejects.as_ref()]) {
        if let (Some(file), Some((s, d)), Some(m)) = (file, staging, manifest) {
            single::publish(s, d, m, &object_path(file).df()?).await?;
        }
    }
    Ok(())
}

/// Releases the claims of a failed write, keeping its error.
async fn release(claims: Vec<Claim>, error: DataFusionError) -> DataFusionError {
    for c in claims {
        if let Err(e) = c.release().await {
            log::warn!("could not release an output lock: {e}");
        }
    }
    error
}

/// Runs a planned COPY into claimed targets and commits its outputs.
async fn write_claimed(
    ctx: &SessionContext,
    plan: Arc<dyn ExecutionPlan>,
    copy: &PlannedCopy,
    (store, dir): (Arc<dyn ObjectStore>, Path),
    rejects: Option<(Arc<dyn ObjectStore>, Path)>,
) -> Result<Written> {
    // A manifest lists finished files: the old one goes before any of them changes.
    for (s, d) in std::iter::once((&store, &dir)).chain(rejects.as_ref().map(|(s, d)| (s, d))) {
        for name in [MANIFEST_NAME, LEGACY_MANIFEST_NAME] {
            match s.delete(&d.clone().join(name)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(df(e)),
            }
        }
    }
    let mut files = Vec::new();
    for batch in collect(plan, ctx.task_ctx()).await? {
        let column = batch.column(0).as_any().downcast_ref::<StringArray>().ok_or_else(|| DataFusionError::Internal("sink output is not text".into()))?;
        for i in 0..column.len() {
            files.push(serde_json::from_str::<WrittenFile>(column.value(i)).map_err(df)?);
        }
    }
    let files = last_stage_attempt(files);
    let layout = files.first().map_or(Layout::Source, |f| f.layout);
    let (kept_schema, _) = kept_schema(&copy.input_schema, &copy.opts)?;
    let props = writer_properties(&copy.opts)?;
    let records = |rejects: bool| files.iter().filter(|f| f.rejects == rejects).map(|f| f.record.clone()).collect::<Vec<_>>();
    let commit = |store: Arc<dyn ObjectStore>, dir: Path, location: String, schema: SchemaRef, records: Vec<FileRecord>| {
        let target = Target { store, dir, schema, props: props.clone() };
        async move { commit(&target, &location, records, layout, copy).await }
    };
    let rejects = match (rejects, &copy.target.rejects) {
        (Some((s, d)), Some(r)) => Some(commit(s, d, r.location.clone(), Arc::clone(&copy.input_schema), records(true)).await?),
        _ => None,
    };
    let manifest = commit(store, dir, copy.target.location.clone(), kept_schema, records(false)).await?;
    Ok(Written { manifest, rejects, files })
}

/// The files of the sink stage's last attempt. When an executor loss rolls the final stage back,
/// Ballista (55) reruns every task of the stage as a new stage attempt but keeps the outputs its
/// finished tasks had reported, so the job's results list those partitions twice, with the same
/// rows in files of other names. The last attempt ran every partition; `remove_stale` deletes
/// the earlier attempts' files.
fn last_stage_attempt(files: Vec<WrittenFile>) -> Vec<WrittenFile> {
    let last = files.iter().map(|f| f.stage_attempt).max().unwrap_or(0);
    let earlier = files.iter().filter(|f| f.stage_attempt < last).count();
    if earlier > 0 {
        log::warn!("left out {earlier} file(s) of an earlier attempt at the output stage, which the cluster ran again");
    }
    files.into_iter().filter(|f| f.stage_attempt == last).collect()
}

/// Removes stale and unfinished files, writes the manifest, then drops the journal.
async fn commit(target: &Target, location: &str, mut files: Vec<FileRecord>, layout: Layout, copy: &PlannedCopy) -> Result<Manifest> {
    // An output without rows still gets one empty part, so that readers find its schema.
    if files.is_empty() {
        files.extend(Part::new(target, Some("part-00000.parquet".into())).finish(true).await?);
    }
    remove_stale(&target.store, &target.dir, &files).await?;
    remove_local_staging(location)?;
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        tokq_version: env!("CARGO_PKG_VERSION").to_string(),
        recipe_sha256: copy.recipe.sha256.clone(),
        recipe: Some(copy.recipe.origin.clone()),
        recipe_source_sha256: Some(copy.recipe.source_sha256.clone()),
        tokenizers: copy.facts.tokenizers.clone(),
        compression: copy.target.compression.clone(),
        layout,
        rows: files.iter().map(|f| f.rows).sum(),
        tokens: files.iter().map(|f| f.tokens).sum(),
        padding_tokens: files.iter().map(|f| f.padding_tokens).sum(),
        packing: copy.facts.packing.clone(),
        bytes: files.iter().map(|f| f.bytes).sum(),
        reasons: files.iter().flat_map(|f| &f.reasons).fold(BTreeMap::new(), |mut all, (r, n)| {
            *all.entry(r.clone()).or_default() += n;
            all
        }),
        files,
    };
    let body = manifest.encode(Arc::clone(&target.schema), target.props.clone())?;
    target.store.put(&target.dir.clone().join(MANIFEST_NAME), PutPayload::from(body)).await.map_err(df)?;
    journal::clear(&target.store, &target.dir, location).await?;
    Ok(manifest)
}

/// Removes the local store's staging files of uploads that a killed process left in a local
/// folder (`.part-….tokq-tmp#1`): the store's own listing never shows them.
fn remove_local_staging(location: &str) -> Result<()> {
    let Some(dir) = crate::store::local_path(location) else { return Ok(()) };
    let Ok(entries) = std::fs::read_dir(&dir) else { return Ok(()) };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.contains('#') && is_unfinished(&name) {
            match std::fs::remove_file(entry.path()) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(DataFusionError::Execution(format!("cannot remove '{}': {e}", entry.path().display()))),
            }
        }
    }
    Ok(())
}

/// Removes part files of an earlier run that this run did not write, and unfinished files.
async fn remove_stale(store: &Arc<dyn ObjectStore>, dir: &Path, keep: &[FileRecord]) -> Result<()> {
    let listed: Vec<_> = store.list(Some(dir)).try_collect().await.map_err(df)?;
    let stale = listed.into_iter().filter(|m| {
        let Some(rel) = m.location.prefix_match(dir).map(Path::from_iter) else { return false };
        let rel = rel.as_ref();
        is_unfinished(rel)
            || (rel.starts_with("part-") && rel.ends_with(".parquet") && !keep.iter().any(|f| f.path == rel))
    });
    let mut deletes = futures::stream::iter(stale.map(|m| {
        let store = Arc::clone(store);
        async move { store.delete(&m.location).await }
    }))
    .buffer_unordered(8);
    while let Some(r) = deletes.next().await {
        r.map_err(df)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids_codec(options: &[(&str, &str)]) -> (String, String) {
        let options: Vec<(String, String)> = options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let t = ParquetTarget::new("/tmp/tokq-codec-test/", &options).unwrap();
        (t.compression, t.ids_compression)
    }

    #[test]
    fn the_ids_are_zstd_1_unless_a_codec_is_chosen() {
        assert_eq!(ids_codec(&[]), ("zstd(3)".into(), "zstd(1)".into()));
        assert_eq!(ids_codec(&[("compression", "zstd(3)")]), ("zstd(3)".into(), "zstd(3)".into()));
        assert_eq!(ids_codec(&[("format.compression", "SNAPPY")]), ("snappy".into(), "snappy".into()));
        assert_eq!(ids_codec(&[("ids_compression", "zstd(9)"), ("compression", "lz4_raw")]), ("lz4_raw".into(), "zstd(9)".into()));
        let bad = vec![("ids_compression".to_string(), "zstd(99)".to_string())];
        assert!(ParquetTarget::new("/tmp/tokq-codec-test/", &bad).is_err());
    }

    #[test]
    fn the_ids_are_plain_unless_split_into_byte_streams_is_asked_for() {
        let encoding = |options: &[(&str, &str)]| {
            let options: Vec<(String, String)> = options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            ParquetTarget::new("/tmp/tokq-codec-test/", &options).map(|t| t.ids_encoding)
        };
        assert_eq!(encoding(&[]).unwrap(), IdsEncoding::Plain);
        assert_eq!(encoding(&[("ids_encoding", "PLAIN")]).unwrap(), IdsEncoding::Plain);
        assert_eq!(encoding(&[("format.ids_encoding", "byte_stream_split")]).unwrap(), IdsEncoding::ByteStreamSplit);
        let err = encoding(&[("ids_encoding", "delta")]).unwrap_err().to_string();
        assert!(err.contains("'ids_encoding' must be 'plain' or 'byte_stream_split', got 'delta'"), "{err}");
    }

    #[test]
    fn a_stage_reported_by_two_attempts_keeps_the_last_attempts_files() {
        let file = |stage_attempt: u32, path: &str, rejects: bool| WrittenFile {
            rejects,
            record: FileRecord { path: path.into(), rows: 1, tokens: 0, padding_tokens: 0, bytes: 1, sha256: String::new(), source: None, reasons: BTreeMap::new() },
            layout: Layout::Partition,
            source_rows: None,
            writer: String::new(),
            resumed: false,
            stage_attempt,
        };
        // One partition finished in attempt 0, then the stage ran again with both partitions.
        let files = vec![file(0, "part-a.parquet", false), file(0, "part-ra.parquet", true), file(1, "part-b.parquet", false), file(1, "part-c.parquet", false), file(1, "part-rc.parquet", true)];
        let kept: Vec<(String, bool)> = last_stage_attempt(files).into_iter().map(|f| (f.record.path, f.rejects)).collect();
        assert_eq!(kept, [("part-b.parquet".into(), false), ("part-c.parquet".into(), false), ("part-rc.parquet".into(), true)]);
        assert_eq!(super::super::exec::stage_attempt("TID 038GZ9X85C000/7.1/12.0"), 1);
        assert_eq!(super::super::exec::stage_attempt("local"), 0);
    }
}

