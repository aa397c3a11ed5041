//! The Ballista roles `tokq scheduler` and `tokq executor`, over the engine's shared node setup.
//! Both schedule by pull (executors ask the scheduler for work), so an executor serves only its
//! Flight port, which the gate can guard; Ballista's push mode would open a task-launching gRPC
//! port on every executor that tokq cannot put a gate in front of.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use ballista_core::config::TaskSchedulingPolicy;
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::create_scheduler;
use datafusion::prelude::SessionConfig;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};
use tokq_engine::cluster::{cluster_state, logical_codec, member_config, physical_codec, Credentials};
use tokq_engine::roots::Roots;
use tokq_engine::session::runtime;

use crate::gate::{guarded_flight, serve_scheduler, RestApi};

/// What every node role takes for its doors and its data.
pub struct Guard {
    /// The secret callers must present, and the TLS this node serves and dials with.
    pub member: Credentials,
    /// Allowed data roots; empty: any path this user can reach.
    pub allow_roots: Vec<String>,
    /// Serve on a non-loopback address without a secret.
    pub insecure: bool,
}

impl Guard {
    /// Refuses an open door on a network address, and fences the process to its roots.
    fn apply(&self, role: &str, bind_host: &str) -> anyhow::Result<()> {
        let loopback = bind_host == "localhost" || bind_host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
        if self.member.secret.is_none() && !loopback && !self.insecure {
            anyhow::bail!(
                "a {role} on {bind_host} without a cluster secret lets anyone who reaches it read and write files as this user; \
                 give --secret-file (or TOKQ_CLUSTER_SECRET), or --insecure on a network you trust"
            );
        }
        if self.allow_roots.is_empty() {
            log::warn!("no --allow-root: jobs on this {role} may read and write any path this user can");
        } else {
            Roots::parse(&self.allow_roots)?.enforce()?;
            log::info!("jobs on this {role} may use only {}", self.allow_roots.join(", "));
        }
        Ok(())
    }
}

pub struct SchedulerArgs {
    pub bind_host: String,
    pub bind_port: u16,
    pub executor_timeout_seconds: u64,
    pub expire_dead_executor_interval_seconds: u64,
    pub rest_api: RestApi,
    pub guard: Guard,
}

/// How often a busy executor reports to the scheduler under pull scheduling: Ballista 55's
/// executor polls every 5 s while all its task slots are taken, and that poll is its only
/// heartbeat. A scheduler that waits less than twice that declares busy executors dead, and
/// Ballista never takes a dead executor back: a job whose last live executor was declared dead
/// waits for ever (the hang of losing one of two executors under dedup.sql).
const MIN_EXECUTOR_TIMEOUT_SECONDS: u64 = 10;

pub async fn run_scheduler(a: SchedulerArgs) -> anyhow::Result<()> {
    let SchedulerArgs { bind_host, bind_port, .. } = a;
    if a.executor_timeout_seconds < MIN_EXECUTOR_TIMEOUT_SECONDS {
        anyhow::bail!(
            "--executor-timeout-seconds {} is too short: a busy executor reports every 5 s, so use at least {MIN_EXECUTOR_TIMEOUT_SECONDS}",
            a.executor_timeout_seconds
        );
    }
    if a.expire_dead_executor_interval_seconds >= a.executor_timeout_seconds {
        anyhow::bail!("--expire-dead-executor-interval-seconds must be less than --executor-timeout-seconds");
    }
    a.guard.apply("scheduler", &bind_host)?;
    let producer_member = a.guard.member.clone();
    let config = SchedulerConfig {
        bind_host: bind_host.clone(),
        bind_port,
        external_host: bind_host.clone(),
        executor_timeout_seconds: a.executor_timeout_seconds,
        expire_dead_executor_interval_seconds: a.expire_dead_executor_interval_seconds,
        no_executors_grace_period_seconds: a.executor_timeout_seconds,
        scheduling_policy: TaskSchedulingPolicy::PullStaged,
        disable_rest_api: a.rest_api == RestApi::Off,
        override_create_grpc_client_endpoint: a.guard.member.endpoint_override(),
        override_config_producer: Some(Arc::new(move || member_config(&producer_member))),
        override_session_builder: Some(Arc::new(cluster_state)),
        override_logical_codec: Some(logical_codec()),
        override_physical_codec: Some(physical_codec()),
        ..Default::default()
    };
    let addr: SocketAddr = format!("{bind_host}:{bind_port}").parse().context("scheduler bind address")?;
    config.validate()?;
    let cluster = BallistaCluster::new_from_config(&config).await.context("creating the scheduler's cluster state")?;
    let scheduler = create_scheduler::<LogicalPlanNode, PhysicalPlanNode>(cluster, Arc::new(config)).await?;
    tokio::spawn(crate::watchdog::watch(scheduler.clone(), Duration::from_secs(2 * a.executor_timeout_seconds)));
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
    log::info!(
        "tokq scheduler listening on {addr} (secret: {}, TLS: {}, REST API: {})",
        if a.guard.member.secret.is_some() { "required" } else { "none" },
        if a.guard.member.tls.is_some() { "on" } else { "off" },
        rest_name(a.rest_api)
    );
    serve_scheduler(listener, scheduler, a.guard.member, a.rest_api).await.context("scheduler stopped")
}

fn rest_name(r: RestApi) -> &'static str {
    match r {
        RestApi::Off => "off",
        RestApi::Loopback => "this machine only",
        RestApi::Any => "any caller",
    }
}

pub struct ExecutorArgs {
    pub scheduler_host: String,
    pub scheduler_port: u16,
    pub bind_host: String,
    pub external_host: String,
    pub bind_port: u16,
    pub grpc_port: u16,
    pub vcores: Option<usize>,
    pub work_dir: Option<String>,
    pub memory_pool_bytes: Option<u64>,
    pub guard: Guard,
}

pub async fn run_executor(a: ExecutorArgs) -> anyhow::Result<()> {
    a.guard.apply("executor", &a.bind_host)?;
    let member = a.guard.member;
    let registry = BallistaFunctionRegistry::from(&cluster_state(member_config(&member))?);
    let producer_member = member.clone();
    let mut config = ExecutorProcessConfig {
        scheduler_host: a.scheduler_host,
        scheduler_port: a.scheduler_port,
        bind_host: a.bind_host,
        external_host: Some(a.external_host),
        port: a.bind_port,
        grpc_port: a.grpc_port,
        work_dir: a.work_dir,
        memory_pool_size: a.memory_pool_bytes,
        scheduler_connect_timeout_seconds: 30,
        task_scheduling_policy: TaskSchedulingPolicy::PullStaged,
        override_function_registry: Some(Arc::new(registry)),
        override_config_producer: Some(Arc::new(move || member_config(&producer_member))),
        override_runtime_producer: Some(Arc::new(|_: &SessionConfig| runtime())),
        override_logical_codec: Some(logical_codec()),
        override_physical_codec: Some(physical_codec()),
        ..Default::default()
    };
    if let Some(v) = a.vcores {
        config.vcores = v;
    }
    config.override_create_grpc_client_endpoint = member.endpoint_override();
    if member.secret.is_some() || member.tls.is_some() {
        config.override_arrow_flight_service =
            Some(guarded_flight(member.clone(), config.grpc_max_decoding_message_size as usize, config.grpc_max_encoding_message_size as usize));
    }
    let scheduler = format!("{}:{}", config.scheduler_host, config.scheduler_port);
    let wait = Duration::from_secs(config.scheduler_connect_timeout_seconds as u64);
    tokq_engine::cluster::admitted(&scheduler, &member, wait).await?;
    start_executor_process(Arc::new(config)).await.context("executor stopped")?;
    Ok(())
}

