//! The gRPC server: ToolGateway, ToolRegistry, ToolReview, ToolWorker, health and reflection on one port.

mod auth;
mod console;
mod execute;
mod gateway;
mod listen;
mod mcp;
mod mcp_front;
mod metrics;
mod registry;
mod review;
mod services;
mod shed;
mod side_listener;
mod status;
mod transport;
mod worker;

pub use services::CLUSTER_HEALTH;
pub use status::ServiceError;

use crate::backend::Backends;
use crate::backend::mcp::{McpHub, RedbMcpStore};
use crate::backend::worker::WorkerPool;
use crate::cluster::Redis;
use crate::config::Config;
use crate::executor::{ExecSettings, Executor};
use crate::idempotency::Idempotency;
use crate::pipeline::{PrepareOptions, SplitMode};
use crate::policy::shared::SharedAdmission;
use crate::policy::{BudgetLimits, Clock, Policy, PolicySettings};
use crate::registry::shared::SharedRegistry;
use crate::registry::shared::follow;
use crate::registry::{RedbStore, Registry, RegistryError};
use crate::review::{RedbReviewStore, ReviewQueue, ReviewSettings};
use crate::store::Database;
use crate::telemetry::Telemetry;
use crate::wire::listen::Inbound;
use crate::wire::socket::{Address, Listener};
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::net::TcpListener;

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
    let transport = transport::Transport::load(&config)?;
    let Opened { registry, reviews, mcp, redis } = open_state(&config, &transport).await?;
    let mut policy = Policy::new(
        clock,
        PolicySettings {
            session_idle_ttl: config.budgets.session_idle_ttl,
            max_sessions: config.budgets.max_sessions,
            ..PolicySettings::default()
        },
    );
    if let Some(redis) = &redis {
        policy = policy.share(SharedAdmission::new(redis.clone()));
    }
    let policy = Arc::new(policy);
    let _eviction = policy.spawn_eviction(EVICT_EVERY);
    let _pruning = spawn_pruning(Arc::downgrade(&reviews));
    // Bound before telemetry is built: a port in use fails the start before there is anything to flush.
    let metrics_listener = metrics::bind(&config).await?;
    let front_listener = mcp_front::bind(&config).await?;
    let console_listener = console::bind(&config).await?;
    let telemetry = Arc::new(metrics::telemetry(&config, &registry, &reviews, redis.as_ref(), &transport.collector)?);
    // Last of the steps that may fail, so a failed start leaves no server process behind.
    if let Err(err) = mcp.start(config.mcp_servers.clone()).await {
        telemetry.shutdown(config.telemetry.export_timeout).await;
        return Err(err.into());
    }
    let workers = Arc::new(WorkerPool::new());
    let telemetry_handle = Arc::clone(&telemetry);
    let state = State {
        registry,
        reviews,
        policy,
        telemetry: telemetry_handle,
        mcp: Arc::clone(&mcp),
        workers,
        redis,
        transport,
    };
    let side = SideListeners { metrics: metrics_listener, mcp_front: front_listener, console: console_listener };
    let served = serve(listener, &config, state, side, shutdown).await;
    // Stdio MCP servers are child processes: they end with the gateway.
    mcp.shutdown().await;
    // On an error too: dropping the exporters unflushed would block this thread on their last export.
    telemetry.shutdown(config.telemetry.export_timeout).await;
    served
}

/// What the services share.
struct State {
    registry: Arc<Registry>,
    reviews: Arc<ReviewQueue>,
    policy: Arc<Policy>,
    telemetry: Arc<Telemetry>,
    mcp: Arc<McpHub>,
    workers: Arc<WorkerPool>,
    /// Cluster mode's Redis.
    redis: Option<Redis>,
    transport: transport::Transport,
}

/// What `open_state` opens.
struct Opened {
    registry: Arc<Registry>,
    reviews: Arc<ReviewQueue>,
    mcp: Arc<McpHub>,
    redis: Option<Redis>,
}

/// Opens the store under `config.data_dir`, its reviews and registry (in cluster mode, on Redis, with the store
/// as the registry's local cache), registers the static tools, and opens the MCP hub (its servers start later).
async fn open_state(config: &Config, transport: &transport::Transport) -> Result<Opened, ServeError> {
    let db = Database::open(&config.data_dir).map_err(RegistryError::from)?;
    let store = RedbStore::new(&db).map_err(RegistryError::from)?;
    let tls = Some(Arc::clone(&transport.client));
    let redis = config.cluster.clone().map(|settings| Redis::with_tls(settings, tls)).transpose()?;
    let review_settings =
        ReviewSettings { max_pending: config.review.max_pending, keep_done: config.review.keep_decided };
    let reviews = Arc::new(match &redis {
        Some(redis) => ReviewQueue::shared(redis.clone(), review_settings, RUNNING_LEASE),
        None => ReviewQueue::open(Arc::new(RedbReviewStore::new(&db).map_err(RegistryError::from)?), review_settings)
            .map_err(RegistryError::from)?,
    });
    let mcp_store = Arc::new(RedbMcpStore::new(&db).map_err(RegistryError::from)?);
    let mut registry = Registry::open(Arc::new(store), config.documents.clone())?;
    if let Some(redis) = &redis {
        registry = registry.share(SharedRegistry::new(redis.clone()));
    }
    let registry = Arc::new(registry);
    register_statics(&registry, redis.as_ref(), config).await?;
    let mcp = Arc::new(McpHub::new(
        Arc::clone(&registry),
        config.documents.clone(),
        mcp_store,
        config.connect_timeout,
        config.max_result_bytes,
        Arc::clone(&transport.client),
    ));
    Ok(Opened { registry, reviews, mcp, redis })
}

/// Registers the config's tools. In cluster mode the registry is first brought in step with Redis and then
/// followed; a gateway that starts while Redis is down serves its cached snapshot, and its follower registers
/// them once Redis answers.
async fn register_statics(registry: &Arc<Registry>, redis: Option<&Redis>, config: &Config) -> Result<(), ServeError> {
    if let Some(redis) = redis {
        match registry.sync_all().await {
            Ok(generation) => {
                follow::spawn(registry, redis.clone(), follow::Start::Synced(generation));
            }
            Err(err) => {
                tracing::warn!(error = %err, tools = registry.catalog().len(), "starting degraded: serving the cached snapshot until Redis answers");
                follow::spawn(registry, redis.clone(), follow::Start::Unsynced(config.tools.clone()));
                return Ok(());
            }
        }
    }
    for spec in config.tools.clone() {
        let name = spec.name.clone();
        registry.register_unless_unchanged(spec).await.map_err(|source| ServeError::StaticTool { name, source })?;
    }
    Ok(())
}

/// Serves until `shutdown`, then waits for reviewed calls still running.
/// The ports served beside the gRPC listener, each bound before anything starts.
struct SideListeners {
    metrics: Option<TcpListener>,
    mcp_front: Option<mcp_front::Bound>,
    console: Option<TcpListener>,
}

async fn serve(
    listener: Listener,
    config: &Config,
    state: State,
    side: SideListeners,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let metrics_done = side.metrics.map(|listener| metrics::spawn(listener, config, &state.telemetry));
    // Every executor clone, including those in detached review tasks, holds `alive`: once all are gone, the
    // store is closed and the data directory can be opened again.
    let (alive, mut all_gone) = tokio::sync::mpsc::channel::<()>(1);
    let executor = Arc::new(executor(config, &state, alive));
    let inbound =
        state.transport.server.clone().map(|tls| Inbound { tls, identities: state.transport.identities.clone() });
    // One cap on calls in flight for both doors: gRPC's `Execute` and `ExecuteBatch`, and MCP's `tools/call`.
    let shedding = shed::Shedding::new(config.max_calls_in_flight, Arc::clone(&state.telemetry));
    let front_done = side
        .mcp_front
        .map(|listener| mcp_front::spawn(listener, config, Arc::clone(&executor), shedding.clone(), inbound.clone()))
        .transpose()?;
    let console_done = side
        .console
        .map(|listener| {
            console::spawn(listener, config, Arc::clone(&executor), Arc::clone(&state.telemetry), inbound.clone())
        })
        .transpose()?;
    let closing = Arc::clone(&state.reviews);
    let workers = Arc::clone(&state.workers);
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
    let dispatch = services::services(config, executor, state, &shedding).await?;
    let addr = listener.local().map_err(|e| ServeError::Listener(e.to_string()))?;
    tracing::info!(%addr, data_dir = %config.data_dir.display(), "toolgate serving");
    warn_if_open(&addr, config);
    crate::wire::listen::serve(listener, dispatch, shutdown, inbound).await;
    // A reviewed call being run when the shutdown began finishes, and stores its outcome, within its timeout.
    let grace = config.default_timeout + Duration::from_secs(1);
    if tokio::time::timeout(grace, all_gone.recv()).await.is_err() {
        tracing::warn!(?grace, "reviewed calls still running at shutdown; their outcomes may be lost");
    }
    Ok(())
}

/// How often idle rate-limit keys, semaphores and sessions are swept.
const EVICT_EVERY: Duration = Duration::from_secs(30);
/// Cluster mode: a reviewed call claimed by a gateway that has not finished it this long after is taken as
/// abandoned by a gateway that died, and answered as lost rather than run again.
const RUNNING_LEASE: Duration = Duration::from_secs(15 * 60);
/// How often decided reviews past their keep time are deleted.
const PRUNE_EVERY: Duration = Duration::from_secs(600);

fn executor(config: &Config, state: &State, alive: tokio::sync::mpsc::Sender<()>) -> Executor {
    let settings = ExecSettings {
        prepare: PrepareOptions { limits: config.parse_limits, repair: config.repair, split: SplitMode::AsToolAllows },
        default_timeout: config.default_timeout,
        batch_concurrency: config.batch_concurrency,
        messages: config.messages.clone(),
        budgets: BudgetLimits {
            max_calls: config.budgets.max_calls,
            max_tool_calls: config.budgets.max_tool_calls,
            max_consecutive_failures: config.budgets.max_consecutive_failures,
        },
        review_wait: config.review.max_wait,
        session_idle_ttl: config.budgets.session_idle_ttl,
        rules: Arc::clone(&config.policy),
    };
    let backends = Backends::new(
        config.connect_timeout,
        config.max_result_bytes,
        Arc::clone(&state.mcp),
        Arc::clone(&state.workers),
        Arc::clone(&state.transport.client),
    );
    let registry = Arc::clone(&state.registry);
    let (policy, reviews, telemetry) =
        (Arc::clone(&state.policy), Arc::clone(&state.reviews), Arc::clone(&state.telemetry));
    let once = match &state.redis {
        Some(redis) => Idempotency::shared(redis.clone(), config.idempotency),
        None => Idempotency::local(config.idempotency),
    };
    Executor::new(registry, backends, settings, policy, reviews, telemetry, alive).with_idempotency(once)
}

/// Deletes expired review outcomes now and then, until the queue is dropped.
fn spawn_pruning(reviews: Weak<ReviewQueue>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(PRUNE_EVERY);
        loop {
            ticks.tick().await;
            let Some(queue) = reviews.upgrade() else { return };
            if let Err(err) = queue.prune().await {
                tracing::warn!(error = %err, "pruning decided reviews failed");
            }
        }
    })
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
