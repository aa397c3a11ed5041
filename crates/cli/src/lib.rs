//! `tokq`: run SQL recipes that turn raw text into training-ready tokens, locally or on Ballista.
//!
//! The command is this library's [`main_from`]; `src/main.rs` and the Python package's `tokq`
//! console script both call it, so the two commands are one program.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand, ValueEnum};
use datafusion::prelude::SessionConfig;
use tokq_engine::recipe::{ParamType, Recipe};
use tokq_engine::results::ResultFormat;
use tokq_engine::stats::{NoProgress, Progress};
use tokq_engine::session::local_context;
use tokq_engine::Placement;
use tokq_udfs::OnBadRow;

#[cfg(feature = "cluster")]
mod gate;
mod report;
#[cfg(feature = "cluster")]
mod roles;
#[cfg(feature = "cluster")]
mod watchdog;

use report::{print_summary, Printed, RunProgress};

#[derive(Parser)]
#[command(name = "tokq", version, about = "SQL recipes that turn raw text corpora into training-ready tokens")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a recipe's statements in order (`tokq sql -c "SELECT ..."` runs SQL given inline).
    #[command(visible_alias = "sql")]
    Run(RunArgs),
    /// Print each statement's logical and physical plan without reading or writing data.
    Explain(RecipeArgs),
    /// List a recipe's declared parameters: name, type, default and what each is for.
    Params {
        /// The recipe file.
        recipe: PathBuf,
    },
    /// Load a tokenizer spec and say which encoder runs it: tokq's own, or the reference
    /// implementation and why; and where its compiled form was read or written (TOKQ_CACHE_DIR).
    Tokenizer {
        /// As given to tokenize(): a tokenizer.json path or URI, tiktoken:NAME, tiktoken:PATH#PATTERN.
        spec: String,
    },
    /// Print an output folder's manifest as JSON: its files, rows, tokens, tokenizers, layout.
    Manifest {
        /// The folder a COPY wrote (local path or s3://...).
        dir: String,
    },
    /// Make one self-contained HTML page from a run's --stats-json: accounting, drops per filter
    /// and reason, length and token histograms, dedup cluster sizes, time per statement.
    Report {
        /// The --stats-json file of a run.
        stats: PathBuf,
        /// Where to write the page.
        #[arg(short, long, default_value = "tokq-report.html")]
        output: PathBuf,
    },
    /// Print a shell completion script: `tokq completions bash > /etc/bash_completion.d/tokq`.
    Completions {
        shell: clap_complete::Shell,
    },
    /// List tokq's functions, or print the full function reference as Markdown.
    Functions {
        /// The reference with every function's arguments and example, as in docs/reference/functions.md.
        #[arg(long)]
        markdown: bool,
    },
    /// Start a Ballista scheduler with tokq's functions.
    #[cfg(feature = "cluster")]
    Scheduler {
        #[arg(long, default_value = "127.0.0.1")]
        bind_host: String,
        #[arg(short = 'p', long, default_value_t = 50050)]
        bind_port: u16,
        /// Seconds without a word from an executor after which it is dead and its tasks run
        /// elsewhere; at least 10 (a busy executor reports every 5 s).
        #[arg(long, default_value_t = 180)]
        executor_timeout_seconds: u64,
        /// How often to look for dead executors, in seconds (less than the timeout).
        #[arg(long, default_value_t = 15)]
        expire_dead_executor_interval_seconds: u64,
        /// Who may use Ballista's REST API and web page on the scheduler's port.
        #[arg(long, value_enum, default_value = "loopback")]
        rest_api: gate::RestApi,
        #[command(flatten)]
        guard: GuardArgs,
    },
    /// Start a Ballista executor with tokq's functions.
    #[cfg(feature = "cluster")]
    Executor {
        #[arg(long, default_value = "localhost")]
        scheduler_host: String,
        #[arg(long, default_value_t = 50050)]
        scheduler_port: u16,
        #[arg(long, default_value = "127.0.0.1")]
        bind_host: String,
        /// The address the scheduler and other executors reach this executor at (default: the
        /// bind host; give the pod or machine address when binding 0.0.0.0).
        #[arg(long)]
        external_host: Option<String>,
        /// Arrow Flight port (shuffle data).
        #[arg(short = 'p', long, default_value_t = 50051)]
        bind_port: u16,
        #[arg(long, default_value_t = 50052)]
        bind_grpc_port: u16,
        /// Task slots (default: the number of cores).
        #[arg(short = 'c', long)]
        vcores: Option<usize>,
        /// Folder for shuffle files.
        #[arg(long)]
        work_dir: Option<String>,
        /// Memory pool for spilling operators, in bytes (default: 70% of memory).
        #[arg(long)]
        memory_pool_bytes: Option<u64>,
        #[command(flatten)]
        guard: GuardArgs,
    },
}

/// The cluster secret's file; without it, the secret comes from TOKQ_CLUSTER_SECRET if set.
#[derive(Args)]
struct SecretArg {
    /// A file holding the cluster's shared secret (at least 16 characters). Without it, the
    /// secret is TOKQ_CLUSTER_SECRET's value if that is set.
    #[arg(long, value_name = "FILE")]
    secret_file: Option<PathBuf>,
}

impl SecretArg {
    #[cfg(feature = "cluster")]
    fn load(&self) -> anyhow::Result<Option<tokq_engine::cluster::secret::ClusterSecret>> {
        Ok(tokq_engine::cluster::secret::ClusterSecret::load(self.secret_file.as_deref())?)
    }
}

/// The CA a cluster member checks the nodes' certificates against.
#[derive(Args)]
struct TlsCaArg {
    /// The CA certificate (PEM) that signed the cluster's node certificates: every connection
    /// then speaks TLS and checks the certificate it is shown. Without it, TOKQ_TLS_CA's file
    /// if that is set; neither: clear text.
    #[arg(long, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
}

/// What a node serves TLS with.
#[cfg(feature = "cluster")]
#[derive(Args)]
struct TlsNodeArgs {
    #[command(flatten)]
    ca: TlsCaArg,
    /// This node's certificate chain (PEM), signed by the --tls-ca CA and naming the host
    /// others reach it by; else TOKQ_TLS_CERT.
    #[arg(long, value_name = "FILE")]
    tls_cert: Option<PathBuf>,
    /// This node's private key (PEM); else TOKQ_TLS_KEY.
    #[arg(long, value_name = "FILE")]
    tls_key: Option<PathBuf>,
}

/// A node's doors and data.
#[cfg(feature = "cluster")]
#[derive(Args)]
struct GuardArgs {
    #[command(flatten)]
    secret: SecretArg,
    #[command(flatten)]
    tls: TlsNodeArgs,
    /// A local folder or s3://bucket[/prefix] that jobs may read and write; repeat for more.
    /// Without any, jobs may use every path this user can.
    #[arg(long = "allow-root", value_name = "PATH")]
    allow_roots: Vec<String>,
    /// Listen on a non-loopback address without a secret.
    #[arg(long)]
    insecure: bool,
}

#[cfg(feature = "cluster")]
impl GuardArgs {
    fn load(self) -> anyhow::Result<roles::Guard> {
        use tokq_engine::cluster::tls::{ClusterTls, TlsFiles};
        let files = TlsFiles { ca: self.tls.ca.tls_ca, cert: self.tls.tls_cert, key: self.tls.tls_key };
        let member = tokq_engine::cluster::Credentials { secret: self.secret.load()?, tls: ClusterTls::node(&files)?.map(Into::into) };
        Ok(roles::Guard { member, allow_roots: self.allow_roots, insecure: self.insecure })
    }
}

#[derive(Args)]
struct RecipeArgs {
    /// The recipe: a file of DataFusion SQL statements, or - for standard input.
    #[arg(required_unless_present = "command", value_name = "RECIPE")]
    recipe: Option<PathBuf>,
    /// Statements to run, given here instead of a recipe file.
    #[arg(short = 'c', long = "command", value_name = "SQL", conflicts_with = "recipe")]
    command: Option<String>,
    /// Replace `${NAME}` in the recipe.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// Run on a Ballista cluster, e.g. df://127.0.0.1:50050.
    #[arg(long, value_name = "URL")]
    cluster: Option<String>,
    /// Partitions (parallel tasks and output files); default: this machine's cores, on a
    /// cluster too (Ballista's own default is 16), so that local and cluster runs agree.
    #[arg(long)]
    partitions: Option<usize>,
    /// What to do with a malformed input row.
    #[arg(long, value_enum, default_value_t = OnBadRow::Fail)]
    on_bad_row: OnBadRow,
    /// Fail when an input file lacks a column the recipe reads (it has `content` where the
    /// others have `text`). Without it, its rows read NULL there and the run names the file.
    #[arg(long)]
    strict_schema: bool,
    /// Let every COPY replace what its target holds: another recipe's output, or files tokq did
    /// not write (as OPTIONS ('overwrite' 'true') on one COPY). Without it such a COPY fails and
    /// says what is there; a rerun of the same recipe replaces its own output either way.
    #[arg(long)]
    overwrite: bool,
    /// Memory for query execution in a local run, e.g. 4G (DataFusion's memory pool: sorts and
    /// aggregations spill to disk beyond it). Cluster executors take --memory-pool-bytes.
    #[arg(long, value_name = "SIZE")]
    memory_limit: Option<String>,
    /// With --cluster: how long to wait for the scheduler to have an executor before failing
    /// (no job is submitted to a cluster without executors).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    wait_for_executors: u64,
    /// With --cluster: the cluster's secret.
    #[command(flatten)]
    secret: SecretArg,
    /// With --cluster: the cluster's CA, for a cluster that speaks TLS.
    #[command(flatten)]
    tls: TlsCaArg,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    recipe: RecipeArgs,
    /// No progress bar and no summary.
    #[arg(long, short)]
    quiet: bool,
    /// Write run statistics as JSON to this file.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,
    /// How SELECT, EXPLAIN, DESCRIBE and SHOW print their rows on stdout.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Csv,
    Json,
    Ndjson,
}

impl From<Format> for ResultFormat {
    fn from(f: Format) -> Self {
        match f {
            Format::Table => ResultFormat::Table,
            Format::Csv => ResultFormat::Csv,
            Format::Json => ResultFormat::Json,
            Format::Ndjson => ResultFormat::Ndjson,
        }
    }
}

fn load_recipe(a: &RecipeArgs) -> anyhow::Result<Recipe> {
    let mut params = BTreeMap::new();
    for kv in &a.set {
        let Some((k, v)) = kv.split_once('=') else { bail!("--set '{kv}': expected NAME=VALUE") };
        params.insert(k.trim().to_string(), v.to_string());
    }
    let (path, raw) = match (&a.command, &a.recipe) {
        (Some(sql), _) => ("<command>".to_string(), sql.clone()),
        (None, Some(p)) if p.as_os_str() == "-" => {
            let mut raw = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut raw).context("cannot read the recipe from standard input")?;
            ("<stdin>".to_string(), raw)
        }
        (None, Some(p)) => (p.display().to_string(), read_recipe(p)?),
        (None, None) => bail!("give a recipe file, - for standard input, or -c SQL"),
    };
    Ok(Recipe::parse(&path, &raw, &params)?)
}

/// Where `tokq run` and `tokq explain` execute, from their options.
fn placement(a: &RecipeArgs) -> Placement {
    Placement {
        cluster: a.cluster.clone(),
        partitions: a.partitions,
        on_bad_row: a.on_bad_row,
        strict_schema: a.strict_schema,
        overwrite: a.overwrite,
        memory_limit: a.memory_limit.clone(),
        wait_for_executors: std::time::Duration::from_secs(a.wait_for_executors),
        secret_file: a.secret.secret_file.clone(),
        tls_ca: a.tls.tls_ca.clone(),
    }
}

/// A recipe file's text.
pub fn read_recipe(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read recipe '{}'", path.display()))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    // `tokq tokenizer s3://...` reads through the engine's stores, as recipes do.
    tokq_core::load::set_loader(tokq_engine::store::LOADER);
    match cli.cmd {
        Cmd::Run(a) => {
            let recipe = load_recipe(&a.recipe)?;
            let placement = placement(&a.recipe);
            let ctx = placement.context().await?;
            let bar = (!a.quiet).then(RunProgress::new);
            let progress: &dyn Progress = match &bar {
                Some(bar) => bar,
                None => &NoProgress,
            };
            let printed = Printed(a.format.into());
            let stop = stop_on_signals();
            let runner = tokq_engine::Runner { progress, results: &printed, stop: Some(stop), ..placement.runner(&ctx, &recipe) };
            let (stats, failed) = runner.run_with_stats().await;
            // Written for failed runs too: what ran, and the error that stopped it.
            if let Some(path) = a.stats_json {
                let json = serde_json::to_string_pretty(&stats)?;
                std::fs::write(&path, json).with_context(|| format!("cannot write '{}'", path.display()))?;
            }
            // Warnings, shown under --quiet too: rows that read NULL for want of a column.
            report::print_drift(&stats);
            if let Some(e) = failed {
                return Err(if e.interrupted { Interrupted(e.to_string()).into() } else { e.into() });
            }
            // A run that read and wrote nothing (`tokq sql -c "SHOW TABLES"`) has no summary.
            if !a.quiet && (stats.rows_read > 0 || !stats.outputs.is_empty() || !stats.components.is_empty()) {
                print_summary(&stats, a.recipe.cluster.is_some());
            }
        }
        Cmd::Explain(a) => {
            let recipe = load_recipe(&a)?;
            let placement = placement(&a);
            let ctx = placement.context().await?;
            out(placement.runner(&ctx, &recipe).explain().await?)?;
        }
        Cmd::Params { recipe } => {
            let (path, raw) = (recipe.display().to_string(), read_recipe(&recipe)?);
            let declared = Recipe::declared(&path, &raw)?;
            if declared.is_empty() {
                bail!("{path} declares no PARAMETERS (its ${{name}} uses and their defaults are in its text)");
            }
            let width = declared.iter().map(|d| d.name.len()).max().unwrap_or(0);
            for d in declared {
                let quoted = matches!(d.kind, ParamType::Text | ParamType::Path | ParamType::Folder);
                let default = d.default.map_or_else(|| "(required)".to_string(), |v| if quoted { format!("= {v:?}") } else { format!("= {v}") });
                out(format!("{:width$}  {:7}  {default}\n", d.name, d.kind.to_string()))?;
                if !d.doc.is_empty() {
                    out(format!("{:width$}  {}\n", "", d.doc))?;
                }
            }
        }
        Cmd::Tokenizer { spec } => {
            let t = tokq_core::tokenize::Tokenizer::load(&spec)?;
            out(format!("spec     {spec}\nencoder  {}\nsha256   {}\n", t.backend(), t.sha256))?;
            if let Some(reason) = &t.fallback_reason {
                out(format!("fallback {reason}\n"))?;
            }
            if let Some(compiled) = &t.compiled {
                out(format!("compiled {compiled}\n"))?;
            }
        }
        Cmd::Report { stats, output } => {
            let text = std::fs::read_to_string(&stats).with_context(|| format!("cannot read '{}'", stats.display()))?;
            let json: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("'{}' is not JSON", stats.display()))?;
            let ctx = local_context(SessionConfig::new())?;
            let report = tokq_engine::report::Report::gather(&ctx, json).await.map_err(|e| anyhow::anyhow!("{}: {}", stats.display(), tokq_engine::runner::root_cause(&e)))?;
            std::fs::write(&output, report.html()).with_context(|| format!("cannot write '{}'", output.display()))?;
            eprintln!("tokq: wrote {}", output.display());
        }
        Cmd::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "tokq", &mut script);
            out(script)?;
        }
        Cmd::Manifest { dir } => {
            let manifest = tokq_engine::sink::manifest::read(&dir).map_err(|e| anyhow::anyhow!(tokq_engine::runner::root_cause(&e)))?;
            out(serde_json::to_string_pretty(&manifest)? + "\n")?;
        }
        Cmd::Functions { markdown } => {
            let ctx = local_context(SessionConfig::new())?;
            if markdown {
                out(tokq_engine::functions::reference_markdown(&ctx).await?)?;
            } else {
                let (scalars, aggregates) = (tokq_udfs::scalar_udfs(), tokq_udfs::aggregate_udfs());
                let docs = scalars.iter().filter_map(|f| f.documentation()).chain(aggregates.iter().filter_map(|f| f.documentation()));
                let mut names: Vec<(String, String)> = docs.map(|d| (d.syntax_example.clone(), d.description.clone())).collect();
                names.extend(tokq_engine::functions::table_functions().into_iter().map(|t| (t.doc.syntax_example, t.doc.description)));
                names.sort();
                for (syntax, description) in names {
                    let first = description.split(". ").next().unwrap_or_default().trim_end_matches('.');
                    out(format!("{syntax}\n    {first}.\n"))?;
                }
            }
        }
        #[cfg(feature = "cluster")]
        Cmd::Scheduler { bind_host, bind_port, executor_timeout_seconds, expire_dead_executor_interval_seconds, rest_api, guard } => {
            roles::run_scheduler(roles::SchedulerArgs {
                bind_host,
                bind_port,
                executor_timeout_seconds,
                expire_dead_executor_interval_seconds,
                rest_api,
                guard: guard.load()?,
            })
            .await?
        }
        #[cfg(feature = "cluster")]
        Cmd::Executor {
            scheduler_host,
            scheduler_port,
            bind_host,
            external_host,
            bind_port,
            bind_grpc_port,
            vcores,
            work_dir,
            memory_pool_bytes,
            guard,
        } => {
            roles::run_executor(roles::ExecutorArgs {
                scheduler_host,
                scheduler_port,
                external_host: external_host.unwrap_or_else(|| bind_host.clone()),
                bind_host,
                bind_port,
                grpc_port: bind_grpc_port,
                vcores,
                work_dir,
                memory_pool_bytes,
                guard: guard.load()?,
            })
            .await?
        }
    }
    Ok(())
}

/// A run stopped by Ctrl-C or SIGTERM: its line, and exit status 130 as a shell reports SIGINT.
#[derive(Debug)]
struct Interrupted(String);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Interrupted {}

/// A token cancelled by the first Ctrl-C or SIGTERM (a scheduler's stop): the run then ends
/// where it is, writes its stats and says how to resume. A second one ends the process at once.
fn stop_on_signals() -> tokq_engine::CancellationToken {
    let stop = tokq_engine::CancellationToken::new();
    let cancel = stop.clone();
    tokio::spawn(async move {
        signal().await;
        eprintln!("\ntokq: stopping: the statement running ends where it is (press Ctrl-C again to quit at once)");
        cancel.cancel();
        signal().await;
        std::process::exit(130);
    });
    stop
}

/// The next Ctrl-C or SIGTERM.
async fn signal() {
    #[cfg(unix)]
    {
        let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// Runs the `tokq` command on these arguments (the first is the program name) and returns its
/// exit status: what `tokq` does from a shell, and from Python's `tokq` console script.
pub fn main_from<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        // --help and --version land here too, with exit code 0.
        Err(e) => {
            let _ = e.print();
            return u8::try_from(e.exit_code()).unwrap_or(2);
        }
    };
    let server = !matches!(cli.cmd, Cmd::Run(_) | Cmd::Explain(_) | Cmd::Tokenizer { .. } | Cmd::Functions { .. } | Cmd::Manifest { .. } | Cmd::Completions { .. } | Cmd::Report { .. });
    // A Python process may have set up logging already; the first logger stays.
    let _ = env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(if server { "info" } else { "error,ballista_core=off,ballista=off" })).try_init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tokq: cannot start the async runtime: {e}");
            return 1;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => 0,
        Err(e) if e.is::<Interrupted>() => {
            eprintln!("tokq: {e}");
            130
        }
        // `tokq sql ... | head`: the reader has what it wanted.
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("tokq: {}", one_line(&e));
            1
        }
    }
}

/// Writes to standard output, whole. A reader that went away (`tokq sql ... | head`) gives
/// `BrokenPipe`, which ends the command quietly with status 0, as Unix tools end.
pub(crate) fn out(text: impl AsRef<[u8]>) -> std::io::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_ref())?;
    stdout.flush()
}

/// Whether an error comes from writing to a pipe whose reader is gone.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || cause.downcast_ref::<tokq_engine::runner::StatementError>().is_some_and(|s| s.broken_pipe)
    })
}

/// An error and its causes on one line, as the command prints it.
pub fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}").lines().map(str::trim).collect::<Vec<_>>().join(" ")
}
