//! The gRPC server: ToolRegistry, ToolGateway, health and reflection on one port.

mod auth;
pub mod convert;
mod gateway;
mod registry;
mod status;

pub use status::ServiceError;

use crate::backend::Backends;
use crate::config::Config;
use crate::executor::{ExecSettings, Executor};
use crate::pb::v1::{tool_gateway_server::ToolGatewayServer, tool_registry_server::ToolRegistryServer};
use crate::pipeline::PrepareOptions;
use crate::registry::{RedbStore, Registry};
use auth::RequireToken;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::server::TcpIncoming;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Registry(#[from] crate::registry::RegistryError),
    #[error("static tool {name:?} in the config: {source}")]
    StaticTool { name: String, source: crate::registry::RegistryError },
    #[error("reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("listener: {0}")]
    Listener(String),
    #[error("transport: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Opens the store under `config.data_dir`, loads the static tools, then serves on `listener` until `shutdown`.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let store = RedbStore::open(&config.data_dir).map_err(crate::registry::RegistryError::from)?;
    let registry = Arc::new(Registry::open(Arc::new(store), config.documents.clone())?);
    for spec in config.tools.clone() {
        let name = spec.name.clone();
        registry.register_unless_unchanged(spec).await.map_err(|source| ServeError::StaticTool { name, source })?;
    }
    let settings = ExecSettings {
        prepare: PrepareOptions { limits: config.parse_limits, repair: config.repair },
        default_timeout: config.default_timeout,
        batch_concurrency: config.batch_concurrency,
        messages: config.messages.clone(),
    };
    let backends = Backends::new(config.connect_timeout, config.max_result_bytes);
    let executor = Arc::new(Executor::new(Arc::clone(&registry), backends, settings));
    let max = config.max_request_bytes;
    let gateway = ToolGatewayServer::new(gateway::GatewayService::new(executor, config.max_batch_calls))
        .max_decoding_message_size(max);
    let gateway = InterceptedService::new(gateway, RequireToken::new("data", config.tokens.data.as_deref()));
    let admin = ToolRegistryServer::new(registry::RegistryService::new(registry)).max_decoding_message_size(max);
    let admin = InterceptedService::new(admin, RequireToken::new("admin", config.tokens.admin.as_deref()));
    let (health_reporter, health) = tonic_health::server::health_reporter();
    health_reporter.set_serving::<ToolGatewayServer<gateway::GatewayService>>().await;
    health_reporter.set_serving::<ToolRegistryServer<registry::RegistryService>>().await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let addr = listener.local_addr().map_err(|e| ServeError::Listener(e.to_string()))?;
    tracing::info!(%addr, data_dir = %config.data_dir.display(), "toolgate serving");
    warn_if_open(addr, &config);
    tonic::transport::Server::builder()
        .add_service(health)
        .add_service(reflection)
        .add_service(admin)
        .add_service(gateway)
        // tonic applies its own TCP_NODELAY only to listeners it binds: without it, Nagle and delayed ACKs stall
        // about a third of calls by 40 ms.
        .serve_with_incoming_shutdown(TcpIncoming::from(listener).with_nodelay(Some(true)), shutdown)
        .await?;
    Ok(())
}

/// Beyond loopback, a plane without a token is open to anyone who can reach the port.
fn warn_if_open(addr: std::net::SocketAddr, config: &Config) {
    if addr.ip().is_loopback() {
        return;
    }
    for (plane, token) in [("admin", &config.tokens.admin), ("data", &config.tokens.data)] {
        if token.is_none() {
            tracing::warn!(%addr, plane, "listening beyond loopback with no {plane} token: anyone who reaches the port can use the {plane} plane; set TOOLGATE_{}_TOKEN", plane.to_uppercase());
        }
    }
}
