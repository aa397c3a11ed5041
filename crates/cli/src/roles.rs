//! The Ballista roles `tokq scheduler` and `tokq executor`, over the engine's shared node setup.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;
use datafusion::prelude::SessionConfig;
use tokq_engine::cluster::{cluster_config, cluster_state, logical_codec, physical_codec};
use tokq_engine::session::runtime;

pub struct SchedulerArgs {
    pub bind_host: String,
    pub bind_port: u16,
    pub executor_timeout_seconds: u64,
    pub expire_dead_executor_interval_seconds: u64,
}

pub async fn run_scheduler(a: SchedulerArgs) -> anyhow::Result<()> {
    let SchedulerArgs { bind_host, bind_port, .. } = a;
    if a.expire_dead_executor_interval_seconds >= a.executor_timeout_seconds {
        anyhow::bail!("--expire-dead-executor-interval-seconds must be less than --executor-timeout-seconds");
    }
    let config = SchedulerConfig {
        bind_host: bind_host.clone(),
        bind_port,
        external_host: bind_host.clone(),
        executor_timeout_seconds: a.executor_timeout_seconds,
        expire_dead_executor_interval_seconds: a.expire_dead_executor_interval_seconds,
        no_executors_grace_period_seconds: a.executor_timeout_seconds,
        override_config_producer: Some(Arc::new(cluster_config)),
        override_session_builder: Some(Arc::new(cluster_state)),
        override_logical_codec: Some(logical_codec()),
        override_physical_codec: Some(physical_codec()),
        ..Default::default()
    };
    let addr: SocketAddr = format!("{bind_host}:{bind_port}").parse().context("scheduler bind address")?;
    let cluster = BallistaCluster::new_from_config(&config).await.context("creating the scheduler's cluster state")?;
    start_server(cluster, addr, Arc::new(config)).await.context("scheduler stopped")?;
    Ok(())
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
    pub heartbeat_interval_seconds: u64,
}

pub async fn run_executor(a: ExecutorArgs) -> anyhow::Result<()> {
    let registry = BallistaFunctionRegistry::from(&cluster_state(cluster_config())?);
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
        executor_heartbeat_interval_seconds: a.heartbeat_interval_seconds,
        override_function_registry: Some(Arc::new(registry)),
        override_config_producer: Some(Arc::new(cluster_config)),
        override_runtime_producer: Some(Arc::new(|_: &SessionConfig| runtime())),
        override_logical_codec: Some(logical_codec()),
        override_physical_codec: Some(physical_codec()),
        ..Default::default()
    };
    if let Some(v) = a.vcores {
        config.vcores = v;
    }
    start_executor_process(Arc::new(config)).await.context("executor stopped")?;
    Ok(())
}

