//! The doors started: each side door's port bound before anything starts, the executor and the `Core` built from
//! what `open.rs` opened, each door given its own settings and the core, and the shutdown: the doors stopped, then
//! the reviewed calls still running waited for.

use super::transport::TransportTls;
use super::{ServeError, metrics, settings};
use crate::backend::Backends;
use crate::backend::mcp::McpHub;
use crate::backend::worker::WorkerPool;
use crate::cluster::Redis;
use crate::config::Config;
use crate::executor::Executor;
use crate::handles::{Core, Shedding};
use crate::idempotency::{FingerprintKey, Idempotency};
use crate::policy::Policy;
use crate::registry::Registry;
use crate::review::ReviewQueue;
use crate::telemetry::Telemetry;
use crate::wire::listen::Inbound;
use crate::wire::socket::{Address, Listener};
use crate::{console, grpc, mcp_front};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// What the core is built from.
pub(super) struct Parts {
    pub registry: Arc<Registry>,
    pub reviews: Arc<ReviewQueue>,
    pub policy: Arc<Policy>,
    pub telemetry: Arc<Telemetry>,
    pub mcp: Arc<McpHub>,
    pub workers: Arc<WorkerPool>,
    /// Cluster mode's Redis.
    pub redis: Option<Redis>,
    pub transport: TransportTls,
    pub fingerprint_key: FingerprintKey,
}

/// The ports served beside the gRPC listener, each bound before anything starts.
pub(super) struct SideListeners {
    metrics: Option<TcpListener>,
    mcp_front: Option<mcp_front::Bound>,
    console: Option<TcpListener>,
}

/// Binds `/metrics`, the MCP front door and the console, those configured: a port in use fails the start.
pub(super) async fn bind_side_doors(config: &Config) -> Result<SideListeners, ServeError> {
    let metrics = metrics::bind(config.telemetry.prometheus_listen).await?;
    let mcp_front = mcp_front::bind(&config.mcp_front)
        .await
        .map_err(|e| ServeError::McpFront { addr: e.addr, reason: e.reason })?;
    let console =
        console::bind(&config.console).await.map_err(|e| ServeError::Console { addr: e.addr, reason: e.reason })?;
    Ok(SideListeners { metrics, mcp_front, console })
}

/// Serves until `shutdown`, then waits for reviewed calls still running.
pub(super) async fn serve(
    listener: Listener,
    config: &Config,
    parts: Parts,
    side: SideListeners,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let metrics_done =
        side.metrics.map(|listener| metrics::spawn(listener, config.tokens.admin.as_deref(), &parts.telemetry));
    // Every executor clone, including those in detached review tasks, holds `alive`: once all are gone, the
    // store is closed and the data directory can be opened again.
    let (alive, mut all_gone) = tokio::sync::mpsc::channel::<()>(1);
    let inbound =
        parts.transport.server.clone().map(|tls| Inbound { tls, identities: parts.transport.identities.clone() });
    let cluster_down = parts.redis.as_ref().map(Redis::watch_down);
    let core = Arc::new(core(config, &parts, alive));
    let door_failed = |e: std::io::Error| ServeError::Listener(e.to_string());
    let front_done = match side.mcp_front {
        Some(bound) => {
            let state_key = super::open::state_key(config, parts.redis.as_ref()).await?;
            let front = settings::mcp_front(config, state_key, parts.redis.clone());
            Some(mcp_front::spawn(bound, &front, Arc::clone(&core), inbound.clone()).map_err(door_failed)?)
        }
        None => None,
    };
    let console_done = side
        .console
        .map(|listener| {
            let settings = settings::console(config, parts.redis.clone());
            console::spawn(listener, settings, Arc::clone(&core), inbound.clone())
        })
        .transpose()
        .map_err(door_failed)?;
    let (closing, workers) = (Arc::clone(&core.reviews), Arc::clone(&core.workers));
    let shutdown = async move {
        shutdown.await;
        closing.close();
        // A connected worker's stream never ends on its own; the graceful shutdown would wait for it.
        workers.close();
        // The metrics endpoint, the MCP front door and the console stop with the gateway.
        drop(metrics_done);
        drop(front_done);
        drop(console_done);
    };
    let dispatch = grpc::services(&settings::grpc(config), &core, cluster_down).await?;
    // The doors hold the core now: this handle would keep the executor, and so the wait below, alive.
    drop(core);
    let addr = listener.local().map_err(|e| ServeError::Listener(e.to_string()))?;
    tracing::info!(%addr, data_dir = %config.data_dir.display(), "toolgate serving");
    warn_if_open(&addr, config);
    crate::wire::listen::serve(listener, dispatch, shutdown, inbound).await;
    // A reviewed call being run when the shutdown began finishes, and stores its outcome, within its timeout; so do
    // the outcomes the call-id record is still writing to Redis.
    let grace = config.default_timeout + Duration::from_secs(1);
    if tokio::time::timeout(grace, all_gone.recv()).await.is_err() {
        tracing::warn!(?grace, "reviewed calls still running at shutdown; their outcomes may be lost");
    }
    Ok(())
}

/// The core: the executor over the backends, the policy, the review queue and telemetry, and the handles the
/// doors share. The executor and the core hold the same backends (one HTTP pool, one gRPC channel per target).
fn core(config: &Config, parts: &Parts, alive: tokio::sync::mpsc::Sender<()>) -> Core {
    let backends = Backends::new(
        config.connect_timeout,
        config.max_result_bytes,
        Arc::clone(&parts.mcp),
        Arc::clone(&parts.workers),
        Arc::clone(&parts.transport.client),
    );
    let once = match &parts.redis {
        Some(redis) => {
            Idempotency::shared(redis.clone(), config.idempotency, parts.fingerprint_key, Some(alive.clone()))
        }
        None => Idempotency::local(config.idempotency, parts.fingerprint_key),
    };
    let executor = Executor::new(
        Arc::clone(&parts.registry),
        backends.clone(),
        settings::executor(config),
        Arc::clone(&parts.policy),
        Arc::clone(&parts.reviews),
        Arc::clone(&parts.telemetry),
        alive,
    )
    .with_idempotency(once);
    Core {
        executor: Arc::new(executor),
        registry: Arc::clone(&parts.registry),
        reviews: Arc::clone(&parts.reviews),
        backends,
        mcp: Arc::clone(&parts.mcp),
        workers: Arc::clone(&parts.workers),
        telemetry: Arc::clone(&parts.telemetry),
        // One cap on calls in flight for both doors: gRPC's `Execute` and `ExecuteBatch`, and MCP's `tools/call`.
        shedding: Shedding::new(config.max_calls_in_flight, Arc::clone(&parts.telemetry)),
    }
}

/// Beyond loopback, a plane without a token is open to anyone who can reach the port.
fn warn_if_open(addr: &Address, config: &Config) {
    if let Some(scrape) = config.telemetry.prometheus_listen
        && !scrape.ip().is_loopback()
        && config.tokens.admin.is_none()
    {
        tracing::warn!(%scrape, "serving /metrics beyond loopback with no admin token: anyone who reaches the port can read it; set TOOLGATE_ADMIN_TOKEN");
    }
    // A Unix socket is this host's alone, and its file's mode says who may connect.
    if matches!(addr, Address::Unix(_)) || matches!(addr, Address::Tcp(tcp) if tcp.ip().is_loopback()) {
        return;
    }
    for (plane, token) in [("admin", &config.tokens.admin), ("data", &config.tokens.data)] {
        if token.is_none() {
            tracing::warn!(%addr, plane, "listening beyond loopback with no {plane} token: anyone who reaches the port can use the {plane} plane; set TOOLGATE_{}_TOKEN", plane.to_uppercase());
        }
    }
}
