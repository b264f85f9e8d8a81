//! The gRPC door: every service with its size limit and token, health (with cluster mode's Redis as a service of
//! its own) and reflection, and `Execute` on its own path, all on the gateway's main listener.

mod auth;
mod execute;
mod gateway;
mod listen;
mod mcp_registry;
mod registry;
mod review;
mod shed;
mod status;
mod worker;

pub use auth::RequireToken;
pub use status::ServiceError;

use crate::config::Tokens;
use crate::handles::Core;
use crate::pb::v1::mcp_registry_server::McpRegistryServer;
use crate::pb::v1::tool_review_server::ToolReviewServer;
use crate::pb::v1::tool_worker_server::ToolWorkerServer;
use crate::pb::v1::{tool_gateway_server::ToolGatewayServer, tool_registry_server::ToolRegistryServer};
use crate::pipeline::ParseLimits;
use execute::FastExecute;
use listen::Dispatch;
use std::sync::Arc;
use tokio::sync::watch;
use tonic::service::Routes;
use tonic::service::interceptor::InterceptedService;

/// What the gRPC door reads of the configuration.
#[derive(Debug, Clone)]
pub struct GrpcSettings {
    /// The planes' bearer tokens.
    pub tokens: Tokens,
    /// Bounds a whole request; larger ones are refused before decoding.
    pub max_request_bytes: usize,
    pub max_batch_calls: usize,
    /// What one worker's result may weigh.
    pub max_result_bytes: usize,
    /// A reviewer's edit is parsed within these.
    pub parse_limits: ParseLimits,
}

/// The gRPC services with their size limits and tokens, plus health and reflection; `Execute` on its own path,
/// and both data-plane methods under the core's cap on calls in flight, which the MCP front door shares.
/// `cluster_down` is cluster mode's degraded flag, reported as the health service `toolgate.cluster`.
pub async fn services(
    settings: &GrpcSettings,
    core: &Core,
    cluster_down: Option<watch::Receiver<bool>>,
) -> Result<Dispatch, tonic_reflection::server::Error> {
    let max = settings.max_request_bytes;
    let tokens = &settings.tokens;
    let gateway =
        gateway::GatewayService::new(Arc::clone(&core.executor), Arc::clone(&core.registry), settings.max_batch_calls);
    let gateway = Arc::new(gateway);
    let data_token = RequireToken::new("data", tokens.data.as_deref());
    let execute = FastExecute::new(Arc::clone(&gateway), data_token.clone(), max);
    let gateway = ToolGatewayServer::from_arc(gateway).max_decoding_message_size(max);
    let admin_token = RequireToken::new("admin", tokens.admin.as_deref());
    // Reviewers, and agents resuming a review, need not hold the admin token: a review token opens ToolReview
    // alone. Without one, the admin token closes it.
    let review_token = match tokens.review.as_deref() {
        Some(review) => RequireToken::any("review", &[Some(review), tokens.admin.as_deref()]),
        None => RequireToken::new("admin", tokens.admin.as_deref()),
    };
    let admin = ToolRegistryServer::new(registry::RegistryService::new(Arc::clone(&core.registry)))
        .max_decoding_message_size(max);
    let max_result_bytes = settings.max_result_bytes;
    let worker = worker::WorkerService::new(Arc::clone(&core.registry), Arc::clone(&core.workers), max_result_bytes);
    // One limit for hellos, which carry specs, and results, which the service bounds by max_result_bytes itself.
    let worker = ToolWorkerServer::new(worker).max_decoding_message_size(max.max(max_result_bytes));
    let review =
        review::ReviewService::new(Arc::clone(&core.reviews), Arc::clone(&core.registry), settings.parse_limits);
    let review = ToolReviewServer::new(review).max_decoding_message_size(max);
    let mcp =
        McpRegistryServer::new(mcp_registry::McpService::new(Arc::clone(&core.mcp))).max_decoding_message_size(max);
    let (health_reporter, health) = tonic_health::server::health_reporter();
    health_reporter.set_serving::<ToolGatewayServer<gateway::GatewayService>>().await;
    health_reporter.set_serving::<ToolRegistryServer<registry::RegistryService>>().await;
    health_reporter.set_serving::<ToolReviewServer<review::ReviewService>>().await;
    health_reporter.set_serving::<McpRegistryServer<mcp_registry::McpService>>().await;
    health_reporter.set_serving::<ToolWorkerServer<worker::WorkerService>>().await;
    if let Some(down) = cluster_down {
        spawn_cluster_health(down, health_reporter.clone());
    }
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let routes = Routes::new(health)
        .add_service(reflection)
        .add_service(InterceptedService::new(admin, admin_token.clone()))
        .add_service(InterceptedService::new(mcp, admin_token.clone()))
        .add_service(InterceptedService::new(worker, admin_token.clone()))
        .add_service(InterceptedService::new(review, review_token))
        .add_service(InterceptedService::new(gateway, data_token));
    Ok(Dispatch::new(execute, routes, &core.shedding))
}

/// The health service `toolgate.cluster` says whether Redis answers: NOT_SERVING while the gateway is degraded.
/// The gateway's own health stays SERVING, since calls are still served from the snapshot.
fn spawn_cluster_health(mut down: tokio::sync::watch::Receiver<bool>, health: tonic_health::server::HealthReporter) {
    tokio::spawn(async move {
        loop {
            let status = if *down.borrow_and_update() {
                tonic_health::ServingStatus::NotServing
            } else {
                tonic_health::ServingStatus::Serving
            };
            health.set_service_status(CLUSTER_HEALTH, status).await;
            if down.changed().await.is_err() {
                return;
            }
        }
    });
}

/// The health service name that reports cluster mode's Redis.
pub const CLUSTER_HEALTH: &str = "toolgate.cluster";
