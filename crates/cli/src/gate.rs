//! The doors of a tokq cluster node. The scheduler's port serves Ballista's gRPC service (jobs,
//! executor registration), tokq's executor count and Ballista's REST API and web page; an
//! executor's port serves shuffle data and results over Arrow Flight. With a cluster secret, each
//! refuses a caller that does not present it; with TLS, each speaks only TLS; the REST API
//! answers only callers on this machine unless asked otherwise. The trust model is in
//! docs/cluster.md.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, Path, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::{IncomingStream, Listener};
use ballista_core::error::BallistaError;
use ballista_core::serde::protobuf::scheduler_grpc_server::SchedulerGrpcServer;
use ballista_core::utils::{create_grpc_server, GrpcServerConfig};
use ballista_executor::flight_service::BallistaFlightService;
use ballista_executor::shutdown::Shutdown;
use ballista_executor::ArrowFlightServerProvider;
use ballista_scheduler::api::get_routes;
use ballista_scheduler::scheduler_server::SchedulerServer;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};
use http::header::{CONTENT_TYPE, USER_AGENT};
use http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokq_engine::cluster::secret::ClusterSecret;
use tokq_engine::cluster::{Credentials, CANCEL_PATH, EXECUTORS_PATH};

/// Who may use Ballista's REST API and web page on the scheduler's port.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RestApi {
    /// Not served.
    Off,
    /// Only to callers on the scheduler's own machine.
    Loopback,
    /// To anyone who reaches the port (and presents the secret, if there is one).
    Any,
}

/// What a caller without the secret is told.
const NO_SECRET: &str = "this tokq cluster needs its secret: give the same --secret-file (or TOKQ_CLUSTER_SECRET) to the scheduler, every executor and tokq run";

type Scheduler = SchedulerServer<LogicalPlanNode, PhysicalPlanNode>;

/// Serves a scheduler on `listener` behind the gate.
pub async fn serve_scheduler(listener: TcpListener, scheduler: Scheduler, member: Credentials, rest: RestApi) -> anyhow::Result<()> {
    let config = Arc::clone(&scheduler.state.config);
    let grpc = SchedulerGrpcServer::new(scheduler.clone())
        .max_encoding_message_size(config.grpc_server_max_encoding_message_size as usize)
        .max_decoding_message_size(config.grpc_server_max_decoding_message_size as usize);
    let mut routes = tonic::service::RoutesBuilder::default();
    routes.add_service(grpc);
    let scheduler = Arc::new(scheduler);
    let counted = Arc::clone(&scheduler);
    let cancelling = Arc::clone(&scheduler);
    let mut router = routes
        .routes()
        .into_axum_router()
        .route(
            EXECUTORS_PATH,
            get(move || async move { counted.state.executor_manager.get_executors_state().await.map_or(0, |e| e.len()).to_string() }),
        )
        .route(CANCEL_PATH, post(move |Path(run): Path<String>| async move { cancel_run(&cancelling, &run).await.to_string() }));
    if rest != RestApi::Off {
        router = router.merge(get_routes(scheduler));
    }
    let secret = member.secret;
    let router = router.layer(axum::middleware::from_fn(move |peer: ConnectInfo<Peer>, req: Request, next: Next| {
        let secret = secret.clone();
        async move { admit(secret.as_ref(), rest, peer.0 .0, req, next).await }
    }));
    let doors = Doors::open(listener, member.tls.and_then(|t| t.server_config()))?;
    axum::serve(doors, router.into_make_service_with_connect_info::<Peer>()).await?;
    Ok(())
}

/// Cancels the running jobs of a client's run (their name; the client was stopped: Ctrl-C), as
/// Ballista's own cancel does each; returns how many.
async fn cancel_run(scheduler: &Scheduler, run: &str) -> usize {
    let mut cancelled = 0;
    for (job, info) in scheduler.state.task_manager.get_running_job_cache().iter() {
        if info.execution_graph.read().await.job_name() != run {
            continue;
        }
        match scheduler.cancel_job(job.clone()).await {
            Ok(_) => {
                log::info!("cancelled job {job}: its client (run {run}) was stopped");
                cancelled += 1;
            }
            Err(e) => log::warn!("could not cancel job {job} of stopped run {run}: {e}"),
        }
    }
    cancelled
}

/// A connection through the scheduler's port: TCP, or TLS over it.
trait Conn: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Conn for T {}

/// The scheduler's accepted connections, each through a TLS handshake when the cluster has TLS.
/// Handshakes run on tasks of their own, so a caller that never finishes one holds up no other.
struct Doors {
    accepted: mpsc::Receiver<(Box<dyn Conn>, SocketAddr)>,
    local: SocketAddr,
}

/// How long a caller may take over its TLS handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

impl Doors {
    fn open(listener: TcpListener, tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let (tx, accepted) = mpsc::channel(64);
        let tls = tls.map(tokio_rustls::TlsAcceptor::from);
        tokio::spawn(async move {
            loop {
                let (tcp, peer) = match listener.accept().await {
                    Ok(c) => c,
                    Err(e) => {
                        // Out of file descriptors and the like: wait, as axum's own listener does.
                        log::warn!("the scheduler cannot accept a connection: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                // gRPC's small messages must not wait for Nagle's algorithm (tonic's servers set this too).
                let _ = tcp.set_nodelay(true);
                let Some(tls) = &tls else {
                    if tx.send((Box::new(tcp) as Box<dyn Conn>, peer)).await.is_err() {
                        return;
                    }
                    continue;
                };
                let (tls, tx) = (tls.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE, tls.accept(tcp)).await {
                        Ok(Ok(stream)) => {
                            let _ = tx.send((Box::new(stream) as Box<dyn Conn>, peer)).await;
                        }
                        Ok(Err(e)) => log::warn!("refused a connection from {peer} without TLS or with a certificate this cluster's CA did not sign: {e}"),
                        Err(_) => log::warn!("refused a connection from {peer}: no TLS handshake in {} s", HANDSHAKE.as_secs()),
                    }
                });
            }
        });
        Ok(Self { accepted, local })
    }
}

impl Listener for Doors {
    type Io = Box<dyn Conn>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.accepted.recv().await {
            Some(c) => c,
            // The accepting task ends only with the runtime.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// The caller's address, for the gate.
#[derive(Clone, Copy)]
struct Peer(SocketAddr);

impl Connected<IncomingStream<'_, Doors>> for Peer {
    fn connect_info(stream: IncomingStream<'_, Doors>) -> Self {
        Peer(*stream.remote_addr())
    }
}

/// The scheduler's gate: the secret for every call; the REST API and web page only as `rest` says.
async fn admit(secret: Option<&ClusterSecret>, rest: RestApi, peer: SocketAddr, req: Request, next: Next) -> Response {
    let grpc = req.headers().get(CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    // tokq's own paths are the cluster's, not the REST API's: members may use them from anywhere.
    let web = !grpc && !req.uri().path().starts_with("/tokq/");
    if web && rest == RestApi::Loopback && !peer.ip().is_loopback() {
        log::warn!("refused a REST call from {peer}: the REST API answers on this machine only (--rest-api loopback)");
        return (StatusCode::FORBIDDEN, "the REST API answers on the scheduler's machine only (start it with --rest-api any to open it)\n").into_response();
    }
    if let Some(s) = secret {
        if !s.admits(req.headers().get(USER_AGENT).map(|v| v.as_bytes())) {
            log::warn!("refused a call from {peer} to {} without the cluster secret", req.uri().path());
            return if grpc {
                tonic::Status::unauthenticated(NO_SECRET).into_http()
            } else {
                (StatusCode::UNAUTHORIZED, format!("{NO_SECRET}\n")).into_response()
            };
        }
    }
    next.run(req).await
}

/// An executor's Flight service (shuffle data and results) that refuses callers without the
/// secret and speaks TLS only, as `member` has them; Ballista's own service does the work.
pub fn guarded_flight(member: Credentials, max_decoding: usize, max_encoding: usize) -> Arc<ArrowFlightServerProvider> {
    Arc::new(move |work_dir: String, address: SocketAddr, mut shutdown: Shutdown, grpc: GrpcServerConfig| {
        let secret = member.secret.clone();
        let identity = member.tls.as_ref().and_then(|t| t.identity_pem()).map(|(cert, key)| tonic::transport::Identity::from_pem(cert, key));
        let check = move |req: tonic::Request<()>| {
            let Some(secret) = &secret else { return Ok(req) };
            if secret.admits(req.metadata().get(USER_AGENT.as_str()).map(|v| v.as_bytes())) {
                Ok(req)
            } else {
                log::warn!("refused a Flight call from {:?} without the cluster secret", req.remote_addr());
                Err(tonic::Status::unauthenticated(NO_SECRET))
            }
        };
        let flight = arrow_flight::flight_service_server::FlightServiceServer::new(BallistaFlightService::new(work_dir))
            .max_decoding_message_size(max_decoding)
            .max_encoding_message_size(max_encoding);
        let service = tonic::service::interceptor::InterceptedService::new(flight, check);
        tokio::spawn(async move {
            let mut server = create_grpc_server(&grpc);
            if let Some(identity) = identity {
                server = server.tls_config(tonic::transport::ServerTlsConfig::new().identity(identity)).map_err(BallistaError::TonicError)?;
            }
            server.add_service(service).serve_with_shutdown(address, shutdown.recv()).await.map_err(BallistaError::TonicError)
        })
    })
}
