//! Runs a recipe's statements in order, routing Parquet COPY through tokq's writer.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Int64Type;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::empty::EmptyTable;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{DdlStatement, LogicalPlan};
use datafusion::physical_plan::{collect, displayable, ExecutionPlan};
use datafusion::prelude::{DataFrame, SessionContext};
use datafusion::sql::parser::{CopyToSource, CopyToStatement, Statement as DfStatement};
use datafusion::sql::sqlparser::ast::{Statement as SqlStatement, Value};
use crate::lineage::counters::{ReadCounters, Snapshot};
use crate::lineage::drift::{drift, Drift};
use tokq_udfs::TokqOptions;
use crate::lineage::files::FileRef;
use crate::pack::exec::pack_counts;
use tokq_core::pack::PackCounts;
use tokq_core::TokqError;
use crate::lineage::planned::PlannedOutputs;
use crate::store::to_url;
use crate::lineage::scan::{adds_lineage, as_lineage_scan, file_groups, ROW_COLUMN};

use crate::components::{self, Components};
use crate::cpu::CpuWatch;
use crate::recipe::{Recipe, Statement, TokqStatement};
use crate::results::{Discard, ResultSink};
use crate::stats::{Accounting, ComponentsStats, NoProgress, OutputStats, Progress, Resubmitted, RunStats, StatementStats};
use crate::sink::{self, ParquetTarget, PlanFacts, WrittenFile};

/// A statement failed: the one line the CLI prints.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: statement {number} `{label}`: {cause}")]
pub struct StatementError {
    /// The recipe file.
    pub file: String,
    /// The statement's first line in it.
    pub line: usize,
    /// The statement's number, from 1.
    pub number: usize,
    /// What it is and writes (`COPY to out/x/`), or a query's SQL ([`Statement::label`]).
    pub label: String,
    /// The innermost cause, on one line.
    pub cause: String,
    /// Whether it failed writing its rows to a pipe whose reader is gone (`tokq sql ... | head`),
    /// which the CLI ends quietly.
    pub broken_pipe: bool,
    /// Whether it was stopped ([`Runner::stop`]) rather than failed.
    pub interrupted: bool,
}

impl StatementError {
    /// `stmt` failed with `e`.
    pub fn new(stmt: &Statement, e: &DataFusionError) -> Self {
        let broken_pipe = matches!(e.find_root(), DataFusionError::IoError(io) if io.kind() == std::io::ErrorKind::BrokenPipe);
        Self { file: stmt.file.clone(), line: stmt.line, number: stmt.number, label: stmt.label(), cause: root_cause(e), broken_pipe, interrupted: false }
    }

    /// `stmt` was stopped midway. What it committed stays: the same command resumes it.
    fn interrupted(stmt: &Statement) -> Self {
        let cause = "interrupted; run the same command again to resume: the files already committed are kept and not written again".to_string();
        Self { file: stmt.file.clone(), line: stmt.line, number: stmt.number, label: stmt.label(), cause, broken_pipe: false, interrupted: true }
    }
}

/// How often a statement whose cluster job was lost is submitted in all.
const STATEMENT_ATTEMPTS: usize = 3;

/// How often a client looks at what a cluster's executors have committed (a listing and small
/// reads of the output's journal).
const REMOTE_PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// Whether a statement failed because the cluster lost its job rather than because of the
/// statement: the scheduler's watchdog cancelled a job that Ballista stopped scheduling after an
/// executor was lost, the job failed fetching shuffle data from a lost executor, or the client
/// could not fetch the finished job's results from an executor that has gone (any address but
/// the scheduler's, `scheduler` being its `df://host:port`), or a task's read of shuffle data
/// broke off mid-stream when the executor serving it died (Ballista 55 reports that as the
/// task's own error, not as a fetch failure, so it does not run the lost map tasks again).
/// Rerunning is safe: every COPY commits atomically, and a rerun keeps the files already
/// committed.
fn lost_job(e: &DataFusionError, scheduler: Option<&str>) -> bool {
    let text = e.to_string();
    let lost_executor = scheduler.is_some_and(|url| executor_unreachable(&text, url));
    let broken_read = scheduler.is_some() && text.contains("Task failed") && text.contains("error reading a body from connection");
    lost_executor || broken_read || ["Cancelled", "FetchPartitionError", "Shuffle fetch partition error"].iter().any(|s| text.contains(s))
}

/// Whether a Ballista client failed to connect to an executor: an address other than the
/// scheduler's (`scheduler` being its `df://host:port`).
pub fn executor_unreachable(text: &str, scheduler: &str) -> bool {
    unreachable_address(text).is_some_and(|at| !scheduler.ends_with(&format!("//{at}")))
}

/// The `host:port` a Ballista client failed to connect to, from its error text.
pub fn unreachable_address(text: &str) -> Option<&str> {
    let (_, rest) = text.split_once("Error connecting to Ballista scheduler or executor at ")?;
    let rest = rest.split_once("://").map_or(rest, |(_, r)| r);
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))).unwrap_or(rest.len());
    Some(rest[..end].trim_end_matches(':'))
}

/// Runs or explains one recipe on a context (local, or a Ballista client).
pub struct Runner<'a> {
    /// Where the statements run.
    pub ctx: &'a SessionContext,
    /// What runs.
    pub recipe: &'a Recipe,
    /// Told when each statement starts and ends.
    pub progress: &'a dyn Progress,
    /// Takes the result rows of queries, EXPLAIN, DESCRIBE and SHOW.
    pub results: &'a dyn ResultSink,
    /// The scheduler (`df://host:port`) when the statements run on a cluster: progress comes
    /// from what the executors commit, and a job whose executor went away runs again.
    pub cluster: Option<String>,
    /// Cancelled to stop the run (Ctrl-C): the statement running is dropped where it is, as a
    /// crash would leave it, and the stats cover what ran.
    pub stop: Option<tokio_util::sync::CancellationToken>,
}

enum Kind {
    Components(Components),
    Query,
    ParquetCopy(CopyToStatement),
    Other,
}

fn classify(sql: &str) -> Result<Kind> {
    Ok(match crate::recipe::parse_one(sql)? {
        TokqStatement::Components(c) => Kind::Components(c),
        TokqStatement::Copy(c) if c.target.starts_with("/dev/") => {
            return Err(DataFusionError::Plan(format!(
                "COPY cannot write to '{}': tokq writes files whole and renames them into place; to print rows, run the query as a SELECT with --format csv, json or ndjson",
                c.target
            )))
        }
        TokqStatement::Copy(c) if is_parquet(&c) => Kind::ParquetCopy(c),
        TokqStatement::Df(DfStatement::Statement(s)) if matches!(*s, SqlStatement::Query(_)) => Kind::Query,
        _ => Kind::Other,
    })
}

/// Whether a statement is a query (its rows are its result), as opposed to a COPY, a definition
/// or CREATE COMPONENTS.
fn is_query(sql: &str) -> bool {
    matches!(classify(sql), Ok(Kind::Query))
}

fn is_parquet(c: &CopyToStatement) -> bool {
    match &c.stored_as {
        Some(s) => s.eq_ignore_ascii_case("parquet"),
        None => c.target.ends_with(".parquet"),
    }
}

fn copy_source_sql(c: &CopyToStatement) -> String {
    match &c.source {
        CopyToSource::Query(q) => q.to_string(),
        CopyToSource::Relation(name) => format!("SELECT * FROM {name}"),
    }
}

fn copy_options(c: &CopyToStatement) -> Vec<(String, String)> {
    c.options
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), v)
        })
        .collect()
}

/// The files of the lineage scans in a plan that `counts` picks.
fn scanned_files(plan: &Arc<dyn ExecutionPlan>, counts: impl Fn(&dyn ExecutionPlan, &crate::lineage::scan::LineageSource) -> bool) -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    let _ = plan.apply(|p| {
        if let Some((config, source)) = as_lineage_scan(p.as_ref()) {
            if counts(p.as_ref(), source) {
                files.extend(file_groups(config).into_iter().flatten().map(|f| f.key()));
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    files
}

/// The files of the scans that carry `_row` on: the statement's input rows, for its accounting.
/// Scans that read other columns only (lookup tables joined in) are not input rows.
fn lineage_input_files(plan: &Arc<dyn ExecutionPlan>) -> BTreeSet<String> {
    scanned_files(plan, |p, _| p.schema().column_with_name(ROW_COLUMN).is_some())
}

/// The files of the scans that add lineage: raw inputs, not tokq outputs read again.
fn raw_input_files(plan: &Arc<dyn ExecutionPlan>) -> BTreeSet<String> {
    scanned_files(plan, |_, source| adds_lineage(&source.file_schema).unwrap_or(false))
}

/// Rows this process has read so far from each of `files`.
fn rows_of(counters: &ReadCounters, files: &BTreeSet<String>) -> BTreeMap<String, u64> {
    let snap = counters.snapshot();
    files.iter().map(|f| (f.clone(), snap.per_source.get(f).map_or(0, |c| c.rows))).collect()
}

/// Counts each raw input's documents once: the most rows one statement read from it.
fn count_documents(documents: &mut BTreeMap<String, u64>, read: impl IntoIterator<Item = (String, u64)>) {
    for (file, rows) in read {
        let n = documents.entry(file).or_default();
        *n = (*n).max(rows);
    }
}

/// Rows read from each raw input since `before` was taken.
fn read_since(counters: &ReadCounters, before: &BTreeMap<String, u64>) -> Vec<(String, u64)> {
    rows_of(counters, &before.keys().cloned().collect()).into_iter().map(|(f, rows)| {
        let read = rows.saturating_sub(before[&f]);
        (f, read)
    }).collect()
}

fn rows_from(counters: &ReadCounters, files: &BTreeSet<String>) -> u64 {
    rows_of(counters, files).values().sum()
}

/// Rows the scans of a COPY read from each raw input, as the files it wrote in the source layout
/// report them (a file's kept and rejects parts report the same rows): what an executor read,
/// where this process counted nothing, and what an interrupted run read before.
fn source_rows<'f>(files: impl Iterator<Item = &'f WrittenFile>) -> BTreeMap<String, u64> {
    files.filter_map(|f| Some((f.record.source.clone()?, f.source_rows?))).collect()
}

/// Sum of the input sizes of every lineage scan in a plan, for the progress bar's total.
fn input_bytes(plan: &Arc<dyn ExecutionPlan>) -> Option<u64> {
    let mut total = None;
    let _ = plan.apply(|p| {
        if let Some((config, _)) = as_lineage_scan(p.as_ref()) {
            *total.get_or_insert(0) += file_groups(config).iter().flatten().map(FileRef::bytes).sum::<u64>();
        }
        Ok(TreeNodeRecursion::Continue)
    });
    total
}

/// What the statements of a run wrote and read.
#[derive(Default)]
struct Done {
    /// What this process's scans read, live.
    counters: Arc<ReadCounters>,
    /// Rows that scans on a cluster's executors read, as the files they wrote report them.
    remote_rows: u64,
    remote_sources: BTreeMap<String, u64>,
    /// Packing counts of the statements that packed in this process.
    packing: Option<PackCounts>,
    outputs: Vec<OutputStats>,
    accounting: Vec<Accounting>,
    components: Vec<ComponentsStats>,
    /// Documents per raw input file.
    documents: BTreeMap<String, u64>,
    /// Input files that lack columns a statement reads.
    drift: Vec<Drift>,
}

impl<'a> Runner<'a> {
    /// A local runner that shows no progress and drops result rows.
    pub fn new(ctx: &'a SessionContext, recipe: &'a Recipe) -> Self {
        Self { ctx, recipe, progress: &NoProgress, results: &Discard, cluster: None, stop: None }
    }

    /// What progress calls a statement: `statement 3/9: COPY to out/dedup/`.
    fn label(&self, stmt: &Statement) -> String {
        format!("statement {}/{}: {}", stmt.number, self.recipe.statements.len(), stmt.label())
    }

    /// The `tokq.*` settings (such as `on_bad_row`), which change what a statement writes;
    /// `strict_schema` and `overwrite` change only whether it runs.
    fn options_key(&self) -> String {
        let state = self.ctx.state();
        let entries = state.config_options().entries();
        let writes = |key: &str| key.starts_with("tokq.") && !["tokq.strict_schema", "tokq.overwrite"].contains(&key);
        entries.iter().filter(|e| writes(&e.key)).map(|e| format!("{}={:?}\n", e.key, e.value)).collect()
    }

    /// Notes the input files that lack columns `stmt` reads in `plan` ([`drift`]); under
    /// `tokq.strict_schema` the first of them fails it.
    fn check_drift(&self, stmt: &Statement, plan: &LogicalPlan, found: &mut Vec<Drift>) -> Result<()> {
        let state = self.ctx.state();
        let drift = drift(&state.optimize(plan)?, stmt.number)?;
        if let Some(first) = drift.first().filter(|_| TokqOptions::from_config(state.config_options()).strict_schema) {
            return Err(DataFusionError::Plan(format!(
                "{first}; rename the column in that file or read it with its own read_* call (--strict-schema refuses such files; without it they are read and reported)"
            )));
        }
        found.extend(drift.into_iter().filter(|d| !found.contains(d)).collect::<Vec<_>>());
        Ok(())
    }

    /// Plans a Parquet COPY through tokq's writer: its query's logical plan, the writer's plan and
    /// what committing needs. The footer's facts load the tokenizers, which `explain` skips.
    async fn plan_copy(&self, stmt: &Statement, copy: &CopyToStatement, with_facts: bool) -> Result<(LogicalPlan, Arc<dyn ExecutionPlan>, sink::PlannedCopy)> {
        let mut target = ParquetTarget::new(&copy.target, &copy_options(copy))?;
        target.overwrite |= TokqOptions::from_config(self.ctx.state().config_options()).overwrite;
        let df = self.ctx.sql(&copy_source_sql(copy)).await?;
        let facts = if with_facts { sink::plan_facts(df.logical_plan())? } else { PlanFacts::default() };
        let input = df.into_unoptimized_plan();
        let run_key = format!("statement {}\n{}", stmt.number, self.options_key());
        let (plan, planned) = sink::plan(self.ctx, input.clone(), target, facts, &self.recipe.id(), &run_key).await?;
        Ok((input, plan, planned))
    }

    /// Runs `work` (a COPY on a cluster) while reporting, every so often, the input the
    /// executors have committed output for.
    async fn watching<T>(&self, planned: &sink::PlannedCopy, work: impl std::future::Future<Output = T>) -> T {
        tokio::pin!(work);
        loop {
            tokio::select! {
                done = &mut work => return done,
                () = tokio::time::sleep(REMOTE_PROGRESS_EVERY) => {
                    if let Ok((bytes, rows)) = planned.committed_so_far(self.ctx).await {
                        self.progress.remote(bytes, rows);
                    }
                }
            }
        }
    }

    /// Duplicate clusters per size among a COPY's rejects, when they carry `cluster_id` and
    /// `cluster_size` (dedup): each cluster once, from any of its removed members. The rejects
    /// are read again (two small columns) once the COPY has committed them.
    async fn duplicate_clusters(&self, planned: &sink::PlannedCopy) -> Result<BTreeMap<u64, u64>> {
        let mut sizes = BTreeMap::new();
        let (Some((rejects, schema)), Some(target)) = (planned.outputs()?.into_iter().nth(1), &planned.target.rejects) else { return Ok(sizes) };
        if schema.column_with_name("cluster_id").is_none() || schema.column_with_name("cluster_size").is_none() {
            return Ok(sizes);
        }
        // An exact group's keeper may also root a MinHash cluster: the reason tells them apart.
        let sql = format!(
            "SELECT CAST(cluster_size AS BIGINT), CAST(count(*) AS BIGINT) FROM \
             (SELECT DISTINCT \"{}\", cluster_id, cluster_size FROM read_parquet('{}') WHERE cluster_size IS NOT NULL) GROUP BY 1",
            target.column.replace('"', "\"\""),
            rejects.replace('\'', "''")
        );
        for batch in self.ctx.sql(&sql).await?.collect().await? {
            let (size, n) = (batch.column(0).as_primitive::<Int64Type>(), batch.column(1).as_primitive::<Int64Type>());
            for i in 0..batch.num_rows() {
                sizes.insert(size.value(i) as u64, n.value(i) as u64);
            }
        }
        Ok(sizes)
    }

    /// Runs every statement in order; stops at the first error.
    pub async fn run(&self) -> Result<RunStats, StatementError> {
        match self.run_with_stats().await {
            (stats, None) => Ok(stats),
            (_, Some(e)) => Err(e),
        }
    }

    /// Runs every statement in order, stopping at the first error; the stats cover what ran
    /// either way (`--stats-json` of a failed run), with the error's line in `error`.
    pub async fn run_with_stats(&self) -> (RunStats, Option<StatementError>) {
        self.run_statements(&self.recipe.statements).await
    }

    /// Runs every statement but a final query, and returns that query unexecuted, for the caller
    /// to stream or collect, with the stats of the statements before it. A recipe that does not
    /// end in a query runs whole and returns no query.
    pub async fn run_to_final_query(&self) -> (RunStats, Result<Option<DataFrame>, StatementError>) {
        let Some((last, before)) = self.recipe.statements.split_last() else { return (self.run_statements(&[]).await.0, Ok(None)) };
        if !is_query(&last.sql) {
            let (stats, failed) = self.run_statements(&self.recipe.statements).await;
            return (stats, failed.map_or(Ok(None), Err));
        }
        let (mut stats, failed) = self.run_statements(before).await;
        if let Some(e) = failed {
            return (stats, Err(e));
        }
        match self.ctx.sql(&last.sql).await {
            Ok(df) => (stats, Ok(Some(df))),
            Err(e) => {
                let e = StatementError::new(last, &e);
                stats.error = Some(e.to_string());
                (stats, Err(e))
            }
        }
    }

    async fn run_statements(&self, run: &[Statement]) -> (RunStats, Option<StatementError>) {
        let started = Instant::now();
        let counters = ReadCounters::install(self.ctx);
        let mut done = Done { counters: Arc::clone(&counters), ..Done::default() };
        let mut failed = None;
        let mut resubmitted = Vec::new();
        let mut statements = Vec::new();
        'statements: for stmt in run {
            let (began, before, remote_before) = (Instant::now(), counters.snapshot(), done.remote_rows);
            // On a cluster the executors work: this process's CPU would say nothing.
            let mut cpu = if self.cluster.is_none() { CpuWatch::start() } else { None };
            let mut timed = |done: &Done| {
                let now = counters.snapshot();
                statements.push(StatementStats {
                    number: stmt.number,
                    file: stmt.file.clone(),
                    line: stmt.line,
                    sql: stmt.first_line().to_string(),
                    seconds: began.elapsed().as_secs_f64(),
                    rows_read: now.rows_read - before.rows_read + (done.remote_rows - remote_before),
                    bytes_read: now.bytes_read - before.bytes_read,
                    cpu: cpu.take().and_then(CpuWatch::finish),
                });
            };
            for attempt in 1..=STATEMENT_ATTEMPTS {
                let ran = match &self.stop {
                    Some(stop) => tokio::select! {
                        ran = self.run_one(stmt, &mut done) => Some(ran),
                        () = stop.cancelled() => None,
                    },
                    None => Some(self.run_one(stmt, &mut done).await),
                };
                let Some(ran) = ran else {
                    timed(&done);
                    #[cfg(feature = "cluster")]
                    if let Some(url) = &self.cluster {
                        crate::cluster::cancel_session(self.ctx, url).await;
                    }
                    // The dropped COPY's lock goes before this process may end.
                    sink::claim::settle_abandoned().await;
                    failed = Some(StatementError::interrupted(stmt));
                    break 'statements;
                };
                match ran {
                    Ok(()) => {
                        timed(&done);
                        break;
                    }
                    Err(e) if attempt < STATEMENT_ATTEMPTS && lost_job(&e, self.cluster.as_deref()) => {
                        let cause = root_cause(&e);
                        log::warn!("statement {} lost its job on the cluster ({cause}); resubmitting it, attempt {} of {STATEMENT_ATTEMPTS}", stmt.number, attempt + 1);
                        resubmitted.push(Resubmitted { statement: stmt.number, cause });
                    }
                    Err(e) => {
                        timed(&done);
                        failed = Some(self.statement_error(stmt, &e));
                        break 'statements;
                    }
                }
            }
        }
        let Done { outputs, accounting, components, packing, mut documents, remote_rows, remote_sources, drift, counters: _ } = done;
        // Folders this run wrote and read again (a stage's output without lineage columns, the
        // rounds of CREATE COMPONENTS) hold no documents.
        let written: Vec<String> = outputs.iter().map(|o| o.target.as_str()).chain(components.iter().map(|c| c.location.as_str())).filter_map(|l| Some(to_url(l).ok()?.to_string())).collect();
        documents.retain(|file, _| !written.iter().any(|w| file.starts_with(w.as_str())));
        let Snapshot { rows_read, bytes_read, bad_rows, mut per_source } = counters.snapshot();
        for (source, rows) in remote_sources {
            per_source.entry(source).or_default().rows += rows;
        }
        let stats = RunStats {
            recipe: self.recipe.path.clone(),
            recipe_sha256: self.recipe.sha256(),
            wall_seconds: started.elapsed().as_secs_f64(),
            partitions: self.ctx.state().config().target_partitions(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            rows_read: rows_read + remote_rows,
            bytes_read,
            bad_rows_skipped: bad_rows,
            sources: per_source,
            documents_read: documents.values().sum(),
            documents,
            statements,
            packing: packing.filter(|p| p.docs > 0),
            outputs,
            accounting,
            components,
            error: failed.as_ref().map(ToString::to_string),
            resubmitted,
            schema_drift: drift,
            models: tokq_core::load::loaded_models(),
        };
        (stats, failed)
    }

    /// A statement's failure as the user reads it: on a cluster, a lost scheduler is named as such.
    fn statement_error(&self, stmt: &Statement, e: &DataFusionError) -> StatementError {
        #[allow(unused_mut)]
        let mut failed = StatementError::new(stmt, e);
        #[cfg(feature = "cluster")]
        if let Some(line) = self.cluster.as_deref().and_then(|url| crate::cluster::lost_scheduler(url, &failed.cause)) {
            failed.cause = line;
        }
        failed
    }

    async fn run_one(&self, stmt: &Statement, done: &mut Done) -> Result<()> {
        let Done { outputs, accounting, components, packing, documents, counters, remote_rows, remote_sources, drift } = done;
        match classify(&stmt.sql)? {
            Kind::Components(c) => {
                self.progress.start(&self.label(stmt), None, counters);
                let stats = components::run(self.ctx, &c, &self.recipe.id()).await;
                self.progress.finish();
                components.push(stats?);
            }
            Kind::ParquetCopy(copy) => {
                if !copy.partitioned_by.is_empty() {
                    return Err(DataFusionError::Plan(
                        "PARTITIONED BY is not supported by tokq's Parquet writer: write one COPY per partition value".into(),
                    ));
                }
                let (input, plan, planned) = self.plan_copy(stmt, &copy, true).await?;
                self.check_drift(stmt, &input, drift)?;
                self.progress.start(&self.label(stmt), input_bytes(&plan), counters);
                let inputs = lineage_input_files(&plan);
                let rows_before = rows_from(counters, &inputs);
                let raw_before = rows_of(counters, &raw_input_files(&plan));
                let write = sink::write(self.ctx, Arc::clone(&plan), &planned);
                let written = if self.cluster.is_some() { self.watching(&planned, write).await } else { write.await };
                self.progress.finish();
                let written = written?;
                count_documents(documents, read_since(counters, &raw_before));
                // On a cluster the executors read: the files they wrote say how many rows.
                let remote = if self.cluster.is_some() { source_rows(written.files.iter().filter(|f| !f.resumed)) } else { BTreeMap::new() };
                let remote_read: u64 = remote.values().sum();
                *remote_rows += remote_read;
                // Files in the source layout are raw inputs' (tokq's outputs read again cannot have it).
                count_documents(documents, remote.iter().map(|(f, n)| (f.clone(), *n)));
                for (source, n) in remote {
                    *remote_sources.entry(source).or_default() += n;
                }
                // Inputs whose output an interrupted run committed were not read again.
                count_documents(documents, source_rows(written.files.iter().filter(|f| f.resumed && !f.rejects)));
                if let Some(c) = pack_counts(&plan) {
                    let total = packing.get_or_insert_with(PackCounts::default);
                    *total = total.add(&c);
                }
                let target = &planned.target;
                let kept_target = target.file.clone().unwrap_or_else(|| target.location.clone());
                outputs.push(OutputStats::new(&kept_target, &written.manifest, &written.files, false));
                if let (Some(r), Some(m)) = (&target.rejects, &written.rejects) {
                    let rejects_target = target.rejects_file.clone().unwrap_or_else(|| r.location.clone());
                    outputs.push(OutputStats::new(&rejects_target, m, &written.files, true));
                    // Input files whose output an interrupted run committed were not read again.
                    let resumed = source_rows(written.files.iter().filter(|f| f.resumed));
                    accounting.push(Accounting {
                        statement: stmt.number,
                        input_rows: rows_from(counters, &inputs) - rows_before + remote_read + resumed.values().sum::<u64>(),
                        kept: written.manifest.rows,
                        kept_target,
                        rejected: m.rows,
                        rejects_target,
                        filters: Accounting::by_filter(&m.reasons),
                        reasons: m.reasons.clone(),
                        duplicate_clusters: self.duplicate_clusters(&planned).await?,
                    });
                }
            }
            Kind::Query => {
                let df = self.ctx.sql(&stmt.sql).await?;
                self.check_drift(stmt, df.logical_plan(), drift)?;
                let plan = df.create_physical_plan().await?;
                self.progress.start(&self.label(stmt), input_bytes(&plan), counters);
                let raw_before = rows_of(counters, &raw_input_files(&plan));
                let schema = plan.schema();
                let batches = collect(plan, self.ctx.task_ctx()).await;
                self.progress.finish();
                count_documents(documents, read_since(counters, &raw_before));
                self.results.rows(&schema, &batches?)?;
            }
            Kind::Other => {
                // Definitions run when planned; EXPLAIN, DESCRIBE and SHOW have rows to print.
                let pool = Arc::clone(&self.ctx.runtime_env().memory_pool);
                let df = self.ctx.sql(&stmt.sql).await?;
                // `SET datafusion.runtime.memory_limit` made a first-come pool: shared fairly again.
                if !Arc::ptr_eq(&pool, &self.ctx.runtime_env().memory_pool) {
                    crate::placement::share_fairly(self.ctx)?;
                }
                self.check_drift(stmt, df.logical_plan(), drift)?;
                let has_rows = !matches!(df.logical_plan(), LogicalPlan::Ddl(_) | LogicalPlan::Statement(_) | LogicalPlan::EmptyRelation(_));
                let schema = Arc::new(df.schema().as_arrow().clone());
                let batches = df.collect().await?;
                if has_rows {
                    self.results.rows(&schema, &batches)?;
                }
            }
        }
        Ok(())
    }

    /// Prints each statement's logical and physical plan. Definitions (tables, views, SET) run,
    /// so that later statements can be planned; nothing is read or written.
    pub async fn explain(&self) -> Result<String, StatementError> {
        let planned = PlannedOutputs::install(self.ctx);
        let mut out = String::new();
        for stmt in &self.recipe.statements {
            let text = match self.explain_one(stmt, &planned).await {
                Ok(text) => text,
                // Typically the output of an earlier COPY, which explain does not write.
                Err(e) if is_no_input(&e) => format!("not planned: {} (explain does not run earlier statements' writes)\n", root_cause(&e)),
                Err(e) => return Err(StatementError::new(stmt, &e)),
            };
            out.push_str(&format!("-- statement {} (line {}): {}\n{text}\n", stmt.number, stmt.line, stmt.label()));
        }
        Ok(out)
    }

    async fn explain_one(&self, stmt: &Statement, planned: &PlannedOutputs) -> Result<String> {
        let sql = match classify(&stmt.sql)? {
            Kind::Components(c) => {
                // An empty stand-in with the result's schema, so later statements can be planned.
                let (a, rel) = (&c.a, &c.relation);
                self.ctx.sql(&format!("CREATE VIEW {} AS SELECT {a} AS node, {a} AS component FROM {rel} WHERE false", c.name)).await?.collect().await?;
                return Ok(format!("connected components of {rel} ({a}, {}) in rounds of SQL under {}\n", c.b, c.location));
            }
            Kind::ParquetCopy(copy) => {
                // The writer's plan as it will run, so that the layout shows on the SinkExec line.
                let (input, plan, copy) = self.plan_copy(stmt, &copy, false).await?;
                for (location, schema) in copy.outputs()? {
                    planned.add(&location, schema);
                }
                let logical = self.ctx.state().optimize(&input)?;
                let (logical, physical) = (logical.display_indent(), displayable(plan.as_ref()).indent(true));
                return Ok(format!("logical plan:\n{logical}\nphysical plan:\n{physical}{}", sink::commit::encoder_lines(&input)?));
            }
            Kind::Query => stmt.sql.clone(),
            Kind::Other => {
                let plan = self.ctx.state().create_logical_plan(&stmt.sql).await?;
                match &plan {
                    // CREATE TABLE AS: show its query's plans and define an empty table in its place.
                    LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(c)) => {
                        let schema = Arc::new(c.input.schema().as_arrow().clone());
                        self.ctx.register_table(c.name.clone(), Arc::new(EmptyTable::new(schema)))?;
                        return self.plans(c.input.as_ref().clone()).await;
                    }
                    LogicalPlan::Ddl(_) | LogicalPlan::Statement(_) => {
                        self.ctx.execute_logical_plan(plan.clone()).await?.collect().await?;
                        return Ok(format!("logical plan:\n{}\n", plan.display_indent()));
                    }
                    _ => stmt.sql.clone(),
                }
            }
        };
        let plan = self.ctx.state().create_logical_plan(&sql).await?;
        self.plans(plan).await
    }

    async fn plans(&self, plan: LogicalPlan) -> Result<String> {
        let state = self.ctx.state();
        let optimized = state.optimize(&plan)?;
        let physical = state.create_physical_plan(&plan).await?;
        Ok(format!(
            "logical plan:\n{}\nphysical plan:\n{}{}",
            optimized.display_indent(),
            displayable(physical.as_ref()).indent(true),
            sink::commit::encoder_lines(&plan)?
        ))
    }
}

fn is_no_input(e: &DataFusionError) -> bool {
    matches!(e.find_root(), DataFusionError::External(b) if matches!(b.downcast_ref::<TokqError>(), Some(TokqError::NoInput(_))))
}

/// The innermost cause of an error, on one line: the message of the deepest DataFusion error,
/// or of the error it carries (a [`TokqError`] names its file, line or value itself).
pub fn root_cause(e: &DataFusionError) -> String {
    use datafusion::arrow::error::ArrowError;
    let cause = match e.find_root() {
        DataFusionError::External(inner) => inner.to_string(),
        DataFusionError::ArrowError(a, _) => match a.as_ref() {
            ArrowError::ExternalError(inner) => inner.to_string(),
            other => other.to_string(),
        },
        DataFusionError::Plan(m)
        | DataFusionError::Execution(m)
        | DataFusionError::NotImplemented(m)
        | DataFusionError::Configuration(m)
        | DataFusionError::ResourcesExhausted(m) => m.clone(),
        other => other.strip_backtrace(),
    };
    // DataFusion reports a function called with the wrong types (`tokenize` of a list column) as
    // an internal error asking for a bug report; its last sentence is the one for the user.
    const NO_MATCH: &str = "No function matches the given name and argument types";
    let cause = cause.find(NO_MATCH).map_or(cause.as_str(), |at| &cause[at..]);
    let cause = cause.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    out_of_memory(&cause).or_else(|| out_of_space(&cause)).or_else(|| unfinished_write(&cause)).unwrap_or(cause)
}

/// DataFusion's CSV, JSON and Arrow writers report any failed write as an internal error that
/// asks for a bug report and drops its cause.
fn unfinished_write(cause: &str) -> Option<String> {
    cause.contains("Error encountered while finalizing writes").then(|| {
        "the write failed while finishing its files, and DataFusion's CSV and JSON writers do not say why: \
         check the target's free space and permissions, or write Parquet, whose writer names the cause"
            .to_string()
    })
}

/// DataFusion's words for a memory pool too small (a paragraph of reservations), as what to do.
fn out_of_memory(cause: &str) -> Option<String> {
    let after = |from: &str, to: &str| -> Option<String> {
        let rest = &cause[cause.find(from)? + from.len()..];
        Some(rest[..rest.find(to)?].to_string())
    };
    let needed = after("Failed to allocate additional ", " for ")?;
    let operator = after(&format!("Failed to allocate additional {needed} for "), " with ")?;
    let operator = operator.split('[').next().unwrap_or(&operator);
    let pool = after("pool_size: ", ")").unwrap_or_else(|| "the limit".into());
    Some(format!(
        "out of memory: {operator} needed {needed} more than the memory limit of {pool} allows; raise --memory-limit (executors: --memory-pool-bytes), \
         or run fewer --partitions so that each gets more"
    ))
}

/// A full disk, with what to do: committed output files stay, and a rerun writes only the rest.
fn out_of_space(cause: &str) -> Option<String> {
    cause.contains("(os error 28)").then(|| {
        "no space left on the device (os error 28); free space there, or write elsewhere, and rerun: the files already committed are kept".to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_limit_too_small_and_a_full_disk_say_what_to_do() {
        let pool = DataFusionError::ResourcesExhausted(
            "Additional allocation failed for ExternalSorterMerge[0] with top memory consumers (across reservations) as: ExternalSorterMerge[0]#1(can spill: false) consumed 0.0 B, peak 0.0 B. \
             Error: Failed to allocate additional 10.0 MB for ExternalSorterMerge[0] with 0.0 B already allocated for this reservation - 5.0 MB remain available for the total memory pool: greedy(used: 0.0 B, pool_size: 5.0 MB)".into(),
        );
        assert_eq!(
            root_cause(&pool),
            "out of memory: ExternalSorterMerge needed 10.0 MB more than the memory limit of 5.0 MB allows; raise --memory-limit (executors: --memory-pool-bytes), or run fewer --partitions so that each gets more"
        );
        let full = DataFusionError::Execution("Parquet error: External: Generic LocalFileSystem error: Unable to copy data to file: No space left on device (os error 28)".into());
        assert!(root_cause(&full).starts_with("no space left on the device (os error 28); free space there"));
        assert_eq!(root_cause(&DataFusionError::Plan("no such table".into())), "no such table");
    }

    #[test]
    fn an_executor_that_went_away_is_a_lost_job_and_the_scheduler_is_not() {
        let at = |addr: &str| {
            DataFusionError::Execution(format!(
                "GrpcConnectionError(\"Error connecting to Ballista scheduler or executor at http://{addr}: tonic::transport::Error(Transport, ConnectError)\")"
            ))
        };
        assert_eq!(unreachable_address(&at("127.0.0.1:39789").to_string()), Some("127.0.0.1:39789"));
        assert!(lost_job(&at("127.0.0.1:39789"), Some("df://127.0.0.1:46363")));
        assert!(!lost_job(&at("127.0.0.1:46363"), Some("df://127.0.0.1:46363")));
        assert!(!lost_job(&at("127.0.0.1:39789"), None));
        assert!(!lost_job(&DataFusionError::Plan("no such table".into()), Some("df://127.0.0.1:46363")));
    }

    #[test]
    fn a_shuffle_read_broken_off_by_a_dying_executor_is_a_lost_job() {
        // As the chaos test saw it (seed 1796633591483441867): the executor serving stage 2's
        // output was killed while a stage 3 task streamed it.
        let broken = DataFusionError::Execution(
            "Job 038JFPMHPW000 failed: Job failed due to stage 3 failed: Task failed due to runtime execution error: \
             DataFusionError(Shared(External(ArrowError(IpcError(\"Arrow error: Ipc error: code: 'Unknown error', message: \\\"h2 protocol \
             error: error reading a body from connection\\\", source: hyper::Error(Body, Error { kind: Io(Custom { kind: BrokenPipe, \
             error: \\\"stream closed because of a broken pipe\\\" }) })\")))))"
                .into(),
        );
        assert!(lost_job(&broken, Some("df://127.0.0.1:34535")));
        // Locally no executor can go away: the same words are the statement's own error.
        assert!(!lost_job(&broken, None));
    }
}
