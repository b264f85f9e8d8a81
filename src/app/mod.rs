//! The composition root: reads the `Config`, opens and builds the shared core once (the store, registry, review
//! queue, policy, backends, telemetry and executor: `open.rs`, `start.rs`), gives each door its own settings
//! (`settings.rs`) and a handle to the core (`handles::Core`), and serves until shutdown. The gRPC door is served on
//! the listener `run` is given; `/metrics`, the MCP front door and the console each on a listener of its own.

mod metrics;
mod open;
mod settings;
mod start;
mod transport;

use crate::backend::worker::WorkerPool;
use crate::config::Config;
use crate::policy::Clock;
use crate::wire::socket::Listener;
use open::Opened;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Registry(#[from] crate::registry::RegistryError),
    #[error("static tool {name:?} in the config: {source}")]
    StaticTool { name: String, source: crate::registry::RegistryError },
    #[error(transparent)]
    Mcp(#[from] crate::backend::mcp::McpError),
    #[error("cluster: {0}")]
    Cluster(#[from] crate::cluster::ClusterError),
    #[error("reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("listener: {0}")]
    Listener(String),
    #[error("tls: {0}")]
    Tls(#[from] crate::tls::TlsError),
    #[error(transparent)]
    Telemetry(#[from] crate::telemetry::ExportError),
    #[error("metrics endpoint {addr}: {reason}")]
    Metrics { addr: std::net::SocketAddr, reason: String },
    #[error("console {addr}: {reason}")]
    Console { addr: std::net::SocketAddr, reason: String },
    #[error("MCP front door {addr}: {reason}")]
    McpFront { addr: std::net::SocketAddr, reason: String },
}

/// Opens the store under `config.data_dir`, loads the static tools, then serves on `listener` until `shutdown`.
pub async fn run(
    listener: impl Into<Listener>,
    config: Config,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    run_with_clock(listener, config, Clock::real(), shutdown).await
}

/// `run`, with the clock rate limits and session budgets read. Tests pass a fake one, so they never sleep.
pub async fn run_with_clock(
    listener: impl Into<Listener>,
    config: Config,
    clock: Clock,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let listener = listener.into();
    let transport = transport::TransportTls::load(&config)?;
    let Opened { registry, reviews, mcp, redis } = open::open_state(&config, &transport).await?;
    let fingerprint_key = open::fingerprint_key(&config, redis.as_ref()).await?;
    let policy = open::policy(&config, clock, redis.as_ref());
    let _eviction = policy.spawn_eviction(EVICT_EVERY);
    let _pruning = open::spawn_pruning(Arc::downgrade(&reviews));
    // Bound before telemetry is built: a port in use fails the start before there is anything to flush.
    let side = start::bind_side_doors(&config).await?;
    let telemetry = Arc::new(open::telemetry(&config, &registry, &reviews, redis.as_ref(), &transport.collector)?);
    // Last of the steps that may fail, so a failed start leaves no server process behind.
    if let Err(err) = mcp.start(config.mcp_servers.clone()).await {
        telemetry.shutdown(config.telemetry.export_timeout).await;
        return Err(err.into());
    }
    let workers = Arc::new(WorkerPool::new());
    let telemetry_handle = Arc::clone(&telemetry);
    let parts = start::Parts {
        registry,
        reviews,
        policy,
        telemetry: telemetry_handle,
        mcp: Arc::clone(&mcp),
        workers,
        redis,
        transport,
        fingerprint_key,
    };
    let served = start::serve(listener, &config, parts, side, shutdown).await;
    // Stdio MCP servers are child processes: they end with the gateway.
    mcp.shutdown().await;
    // On an error too: dropping the exporters unflushed would block this thread on their last export.
    telemetry.shutdown(config.telemetry.export_timeout).await;
    served
}

/// How often idle rate-limit keys, semaphores and sessions are swept.
const EVICT_EVERY: Duration = Duration::from_secs(30);
