//! The doors of a tokq cluster node. The scheduler's port serves Ballista's gRPC service (jobs,
//! executor registration), tokq's executor count and Ballista's REST API and web page; an
//! executor's port serves shuffle data and results over Arrow Flight. With a cluster secret, each
//! refuses a caller that does not present it; the REST API answers only callers on this machine
//! unless asked otherwise. The trust model is in docs/cluster.md.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
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
use tokq_engine::cluster::secret::ClusterSecret;
use tokq_engine::cluster::EXECUTORS_PATH;

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
pub async fn serve_scheduler(listener: tokio::net::TcpListener, scheduler: Scheduler, secret: Option<ClusterSecret>, rest: RestApi) -> anyhow::Result<()> {
    let config = Arc::clone(&scheduler.state.config);
    let grpc = SchedulerGrpcServer::new(scheduler.clone())
        .max_encoding_message_size(config.grpc_server_max_encoding_message_size as usize)
        .max_decoding_message_size(config.grpc_server_max_decoding_message_size as usize);
    let mut routes = tonic::service::RoutesBuilder::default();
    routes.add_service(grpc);
    let scheduler = Arc::new(scheduler);
    let counted = Arc::clone(&scheduler);
    let mut router = routes.routes().into_axum_router().route(
        EXECUTORS_PATH,
        get(move || async move { counted.state.executor_manager.get_executors_state().await.map_or(0, |e| e.len()).to_string() }),
    );
    if rest != RestApi::Off {
        router = router.merge(get_routes(scheduler));
    }
    let router = router.layer(axum::middleware::from_fn(move |peer: ConnectInfo<SocketAddr>, req: Request, next: Next| {
        let secret = secret.clone();
        async move { admit(secret.as_ref(), rest, peer.0, req, next).await }
    }));
    axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>()).await?;
    Ok(())
}

/// The scheduler's gate: the secret for every call; the REST API and web page only as `rest` says.
async fn admit(secret: Option<&ClusterSecret>, rest: RestApi, peer: SocketAddr, req: Request, next: Next) -> Response {
    let grpc = req.headers().get(CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    let web = !grpc && req.uri().path() != EXECUTORS_PATH;
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
/// secret; Ballista's own service does the work.
pub fn guarded_flight(secret: ClusterSecret, max_decoding: usize, max_encoding: usize) -> Arc<ArrowFlightServerProvider> {
    Arc::new(move |work_dir: String, address: SocketAddr, mut shutdown: Shutdown, grpc: GrpcServerConfig| {
        let secret = secret.clone();
        let check = move |req: tonic::Request<()>| {
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
            create_grpc_server(&grpc).add_service(service).serve_with_shutdown(address, shutdown.recv()).await.map_err(BallistaError::TonicError)
        })
    })
}
