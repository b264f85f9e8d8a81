//! The core's durable and shared parts, opened once at start: the store under `data_dir`, the registry with the
//! config's tools, the review queue (local on the store, or shared on Redis in cluster mode), the MCP hub, the
//! policy, and telemetry with its gauges; and the task that prunes decided reviews.

use super::ServeError;
use super::transport::TransportTls;
use crate::backend::mcp::{McpHub, RedbMcpStore};
use crate::cluster::Redis;
use crate::config::Config;
use crate::idempotency::FingerprintKey;
use crate::policy::{Clock, Policy};
use crate::registry::shared::follow;
use crate::registry::{RedbStore, Registry, RegistryError};
use crate::review::{RedbReviewStore, ReviewQueue};
use crate::store::Database;
use crate::telemetry::{Gauges, Telemetry};
use crate::tls::ClientTls;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Cluster mode: a reviewed call claimed by a gateway that has not finished it this long after is taken as
/// abandoned by a gateway that died, and answered as lost rather than run again.
const RUNNING_LEASE: Duration = Duration::from_secs(15 * 60);
/// How often decided reviews past their keep time are deleted.
const PRUNE_EVERY: Duration = Duration::from_secs(600);

/// What `open_state` opens.
pub(super) struct Opened {
    pub registry: Arc<Registry>,
    pub reviews: Arc<ReviewQueue>,
    pub mcp: Arc<McpHub>,
    pub redis: Option<Redis>,
}

/// Opens the store under `config.data_dir`, its reviews and registry (in cluster mode, on Redis, with the store
/// as the registry's local cache), registers the static tools, and opens the MCP hub (its servers start later).
pub(super) async fn open_state(config: &Config, transport: &TransportTls) -> Result<Opened, ServeError> {
    let db = Database::open(&config.data_dir).map_err(RegistryError::from)?;
    let store = RedbStore::new(&db).map_err(RegistryError::from)?;
    let tls = Some(Arc::clone(&transport.client));
    let redis = config.cluster.clone().map(|settings| Redis::with_tls(settings, tls)).transpose()?;
    let review_settings = config.review;
    let reviews = Arc::new(match &redis {
        Some(redis) => ReviewQueue::shared(redis.clone(), review_settings, RUNNING_LEASE),
        None => ReviewQueue::local(Arc::new(RedbReviewStore::new(&db).map_err(RegistryError::from)?), review_settings)
            .map_err(RegistryError::from)?,
    });
    let mcp_store = Arc::new(RedbMcpStore::new(&db).map_err(RegistryError::from)?);
    let registry = Arc::new(match &redis {
        Some(redis) => Registry::shared(Arc::new(store), config.documents.clone(), redis.clone())?,
        None => Registry::local(Arc::new(store), config.documents.clone())?,
    });
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

/// Rate limits and session budgets on `clock`; in cluster mode, admitted in one Redis script.
pub(super) fn policy(config: &Config, clock: Clock, redis: Option<&Redis>) -> Arc<Policy> {
    let settings = config.policy;
    Arc::new(match redis {
        Some(redis) => Policy::shared(clock, settings, redis.clone()),
        None => Policy::local(clock, settings),
    })
}

/// Telemetry as configured, with gauges reading the registry and the review queue while they live, and the calls
/// it keeps for the console when there is one.
pub(super) fn telemetry(
    config: &Config,
    registry: &Arc<Registry>,
    reviews: &Arc<ReviewQueue>,
    redis: Option<&Redis>,
    collector: &Arc<ClientTls>,
) -> Result<Telemetry, ServeError> {
    let (registry, reviews) = (Arc::downgrade(registry), Arc::downgrade(reviews));
    let degraded = redis.map(|redis| redis.watch_down());
    let gauges = Gauges {
        registered_tools: Box::new(move || registry.upgrade().map_or(0, |r| r.catalog().len() as u64)),
        pending_reviews: Box::new(move || reviews.upgrade().map_or(0, |q| q.pending_count() as u64)),
        cluster_degraded: degraded
            .map(|down| Box::new(move || u64::from(*down.borrow())) as Box<dyn Fn() -> u64 + Send + Sync>),
    };
    let mut telemetry = Telemetry::new(&config.telemetry, gauges, collector)?;
    if config.console.listen.is_some() {
        telemetry.keep_recent(config.console.recent_calls);
    }
    Ok(telemetry)
}

/// Deletes expired review outcomes now and then, until the queue is dropped.
pub(super) fn spawn_pruning(reviews: Weak<ReviewQueue>) -> tokio::task::JoinHandle<()> {
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

/// The key the MCP front door seals a waiting reviewed call's `requestState` with: the configured one; in cluster
/// mode one shared through Redis (the first gateway's, kept, so every gateway opens every other's states); else
/// one of this process, so its states end with it.
pub(super) async fn state_key(config: &Config, redis: Option<&Redis>) -> Result<[u8; 32], ServeError> {
    use sha2::{Digest, Sha256};
    if let Some(key) = &config.mcp_front.state_key {
        return Ok(Sha256::digest(key.as_bytes()).into());
    }
    shared_secret(redis, ("mcp-front", "state-key"), "the MCP front door's state key").await
}

/// The key call-id fingerprints are made with: in cluster mode one shared through Redis, as `state_key`'s, so that
/// every gateway fingerprints a call alike; else one of this process, whose record ends with it. With the record
/// off no call is fingerprinted, so Redis is not asked.
pub(super) async fn fingerprint_key(config: &Config, redis: Option<&Redis>) -> Result<FingerprintKey, ServeError> {
    if config.idempotency.window.is_zero() {
        return Ok(FingerprintKey::random());
    }
    let secret = shared_secret(redis, ("idempotency", "fingerprint-key"), "the call-id fingerprint key").await?;
    Ok(FingerprintKey::new(secret[..16].try_into().expect("16 of 32 bytes")))
}

/// 32 random bytes: this process's own, or in cluster mode the first gateway's, kept in Redis under `name`.
async fn shared_secret(redis: Option<&Redis>, (space, name): (&str, &str), what: &str) -> Result<[u8; 32], ServeError> {
    let mut fresh = [0u8; 32];
    getrandom::fill(&mut fresh).expect("the OS random source is available");
    let Some(redis) = redis else { return Ok(fresh) };
    let key = redis.key(space, &[name]);
    let offered: String = fresh.iter().map(|b| format!("{b:02x}")).collect();
    let shared: String = redis
        .run(|mut conn| async move {
            // OK, or nil when another gateway's key is there already.
            let _: Option<String> = redis::cmd("SET").arg(&key).arg(&offered).arg("NX").query_async(&mut conn).await?;
            redis::cmd("GET").arg(&key).query_async(&mut conn).await
        })
        .await?;
    let bytes: Vec<u8> = (0..shared.len())
        .step_by(2)
        .filter_map(|i| shared.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect();
    bytes.try_into().map_err(|_| ServeError::Cluster(redis.corrupt(what, "not 32 hex bytes")))
}
