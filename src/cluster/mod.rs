//! Cluster mode's connection: many gateways share one Redis for the registry, global rate limits, budgets, reviews
//! and the call-id record. This module holds only what they share, the connection, its keys and settings, and
//! `ClusterError`; each shared part lives beside the local one it stands in for (`registry::shared`,
//! `policy::shared`, `review` (shared queue), `idempotency` (shared record), `mcp_front`'s sessions).
//!
//! [`Redis`] is the one connection every shared part uses: a reconnecting multiplexed connection, each command
//! under the configured timeout, and one flag saying whether Redis answered last time. Keys all start with the
//! configured prefix; parts within a key are joined by NUL, which no tenant, tool or call id can hold.
//!
//! | key or channel | type | holds |
//! |---|---|---|
//! | `{p}:tools` | hash | `tenant\0name` → the spec as JSON |
//! | `{p}:tool_versions` | hash | `tenant\0name` → its version |
//! | `{p}:registry_gen` | string | bumped by every registry change |
//! | `{p}:registry_epoch` | string | set when the registry is created: a new one means Redis was reset |
//! | `{p}:registry` | channel | `gen\ntenant\0name` after each change |
//! | `{p}:rate:…` | string | a GCRA key's theoretical arrival time |
//! | `{p}:budget:…` | hash | one session's counts |
//! | `{p}:review:…`, `{p}:reviews_pending`, `{p}:reviews` | hash, zset, channel | the review queue |
//! | `{p}:call:…`, `{p}:calls` | hash, channel | calls by id, so that none runs twice |
//! | `{p}:console_session:…`, `{p}:console_sessions:…` | string, zset | the console's sessions, each role's |
//! | `{p}:mcp_session:…` | string | an MCP session's owner and `initialize`, so any gateway resumes it |

mod connect;
mod replicas;
mod settings;
mod topology;

pub use connect::Conn;
pub use settings::{ClusterSettings, RawCluster};
pub use topology::Topology;

use crate::tls::ClientTls;
use connect::Connection;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

#[derive(Debug, Clone, thiserror::Error)]
pub enum ClusterError {
    /// Redis did not answer, or answered with an error: the operation did not happen, or its outcome is unknown.
    #[error("Redis at {url} is unavailable: {reason}")]
    Unavailable { url: String, reason: String },
    /// Redis holds something this gateway cannot read.
    #[error("Redis at {url} holds an unreadable {what}: {reason}")]
    Corrupt { url: String, what: String, reason: String },
}

/// The shared Redis: cheap to clone, every clone on the same connection.
#[derive(Clone)]
pub struct Redis {
    inner: Arc<Inner>,
}

struct Inner {
    settings: ClusterSettings,
    connection: Connection,
    /// `true` while the last command failed: the gateway is degraded.
    down: watch::Sender<bool>,
    /// How many replicas the primaries have had lately: what a durable write waits for.
    replicas: replicas::ReplicaFloor,
    /// When a command last failed, for `recently_failed`.
    failed_at: std::sync::Mutex<Option<std::time::Instant>>,
}

/// While Redis is down, the call path asks it again at most this often (see `Redis::recently_failed`).
const PROBE_EVERY: Duration = Duration::from_millis(500);

impl Redis {
    /// Sets up the connection without connecting: a gateway starts, and serves, while Redis is down. A
    /// `rediss://` URL trusts the system's CAs.
    pub fn new(settings: ClusterSettings) -> Result<Self, ClusterError> {
        Self::with_tls(settings, None)
    }

    /// `new`, with `[tls.client]` (its CA and client certificate) for a `rediss://` URL.
    pub fn with_tls(settings: ClusterSettings, tls: Option<Arc<ClientTls>>) -> Result<Self, ClusterError> {
        let connection = Connection::new(settings.clone(), tls)
            .map_err(|reason| ClusterError::Unavailable { url: settings.shown_url(), reason })?;
        let (down, failed_at) = (watch::Sender::new(false), std::sync::Mutex::new(None));
        let replicas = replicas::ReplicaFloor::new();
        Ok(Self { inner: Arc::new(Inner { settings, connection, down, failed_at, replicas }) })
    }

    pub fn settings(&self) -> &ClusterSettings {
        &self.inner.settings
    }

    /// `{prefix}:{kind}` followed, if there are parts, by `:` and the parts joined by NUL. On a Redis Cluster the
    /// prefix is a hash tag that holds, with it, what puts the keys one script touches in one slot (see
    /// [`slot_group`]): `{toolgate:registry}:tools`.
    pub fn key(&self, kind: &str, parts: &[&str]) -> String {
        let prefix = &self.inner.settings.key_prefix;
        let group = self.inner.settings.topology.is_sharded().then(|| slot_group(kind, parts)).flatten();
        let mut key = match group {
            Some(group) => format!("{{{prefix}:{group}}}:{kind}"),
            None => format!("{prefix}:{kind}"),
        };
        for (i, part) in parts.iter().enumerate() {
            key.push(if i == 0 { ':' } else { '\0' });
            key.push_str(part);
        }
        key
    }

    /// Runs one operation (a command, a pipeline or a script: one round trip) under the op timeout, and
    /// records whether Redis answered.
    pub async fn run<T, F>(&self, op: impl FnOnce(Conn) -> F) -> Result<T, ClusterError>
    where
        F: Future<Output = redis::RedisResult<T>>,
    {
        self.run_within(self.inner.settings.op_timeout, op).await
    }

    /// `run` with a timeout of its own, for the rare large reads (a full registry sync).
    pub async fn run_within<T, F>(&self, timeout: Duration, op: impl FnOnce(Conn) -> F) -> Result<T, ClusterError>
    where
        F: Future<Output = redis::RedisResult<T>>,
    {
        let connection = &self.inner.connection;
        let outcome = match tokio::time::timeout(timeout, async { op(connection.conn().await?).await }).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err))
                if err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError)
                    && !err.to_string().contains("READONLY") =>
            {
                // Redis answered, with an error of the command itself: Redis is up.
                self.mark_up(true);
                return Err(self.unavailable(err.to_string()));
            }
            Ok(Err(err)) => Err(self.unavailable(described(&err))),
            Err(_) => Err(self.unavailable(format!("no answer within {timeout:?}"))),
        };
        if outcome.is_err() {
            connection.failed();
        }
        self.mark_up(outcome.is_ok());
        outcome
    }

    /// After a write acknowledged to someone (a registration, a review queued or decided): waits up to
    /// `op_timeout` until every replica of its primary has it (`durably`), so that a failover right after the
    /// acknowledgement does not lose it (Redis replicates asynchronously). A primary whose replicas are still
    /// catching up (after a failover they resync, seconds with Redis's default diskless-sync delay) makes it
    /// `Unavailable`, retryable: the write is on the primary only. A primary with no replica has nothing to wait for.
    pub async fn replicated(&self, key: &str) -> Result<(), ClusterError> {
        match self.durably(key, redis::pipe(), None, true).await? {
            (_, true) => Ok(()),
            (_, false) => {
                Err(self.unavailable("the write is not on every replica yet (a failover is under way?)".into()))
            }
        }
    }

    /// Runs `pipe` on `key`'s primary, then, if `durable`, waits up to `op_timeout` for every replica that primary
    /// has to acknowledge it, in the same round trip (`WAIT`, then `INFO replication` to count them): whichever
    /// replica a failover promotes then has it, whether Sentinel, a Redis Cluster or a proxy in front of one
    /// address does the failover. `script`, which `pipe` runs by its hash, is loaded if Redis does not have it (a
    /// promoted replica may not). The replies, and whether every replica has them (true when not asked). A
    /// primary with fewer replicas than lately (`replicas::ReplicaFloor`) holds nothing durably.
    pub async fn durably(
        &self,
        key: &str,
        pipe: redis::Pipeline,
        script: Option<&'static redis::Script>,
        durable: bool,
    ) -> Result<(Vec<redis::Value>, bool), ClusterError> {
        let expected = self.inner.replicas.expected();
        let wait = durable.then_some(self.inner.settings.op_timeout);
        let ran = |mut conn: Conn| async move {
            let mut tried = conn.replicated(key, &pipe, wait.map(|timeout| (expected, timeout))).await;
            if let (Err(err), Some(script)) = (&tried, script)
                && err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
            {
                script.prepare_invoke().load_async(&mut conn).await?;
                tried = conn.replicated(key, &pipe, wait.map(|timeout| (expected, timeout))).await;
            }
            tried
        };
        // A command under `op_timeout`, as every other; a WAIT may take that long again.
        let bound = self.inner.settings.op_timeout * if durable { 2 } else { 1 };
        let (replies, acked) = self.run_within(bound, ran).await?;
        match acked {
            None => Ok((replies, true)),
            Some((acked, replicas)) => {
                let enough = self.inner.replicas.enough(replicas, std::time::Instant::now());
                Ok((replies, enough && acked >= replicas))
            }
        }
    }

    /// Whether one script may touch both keys: always on one primary; on a Redis Cluster, when they hash to one
    /// slot.
    pub fn same_slot(&self, a: &str, b: &str) -> bool {
        use redis::cluster_routing::Slot;
        !self.inner.settings.topology.is_sharded() || Slot::for_key(a) == Slot::for_key(b)
    }

    /// A connection of its own for subscriptions, which a multiplexed connection cannot carry.
    pub async fn pubsub(&self) -> Result<redis::aio::PubSub, ClusterError> {
        let connect = self.inner.connection.pubsub();
        let outcome =
            match tokio::time::timeout(self.inner.settings.op_timeout.max(Duration::from_secs(1)), connect).await {
                Ok(Ok(pubsub)) => Ok(pubsub),
                Ok(Err(err)) => Err(self.unavailable(described(&err))),
                Err(_) => Err(self.unavailable("no answer to the subscription".into())),
            };
        self.mark_up(outcome.is_ok());
        outcome
    }

    /// Whether the last command failed.
    pub fn is_down(&self) -> bool {
        *self.inner.down.borrow()
    }

    /// Whether Redis is down and was last tried less than 500 ms ago: the call path then answers at once (fail
    /// open or closed) rather than wait out `op_timeout` on every call; the followers, and one call every
    /// 500 ms, find out when it is back.
    pub fn recently_failed(&self) -> bool {
        self.is_down()
            && self
                .inner
                .failed_at
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_some_and(|at| at.elapsed() < PROBE_EVERY)
    }

    /// Changes of `is_down`.
    pub fn watch_down(&self) -> watch::Receiver<bool> {
        self.inner.down.subscribe()
    }

    fn mark_up(&self, up: bool) {
        if !up {
            *self.inner.failed_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(std::time::Instant::now());
        }
        self.inner.down.send_if_modified(|down| {
            let changed = *down == up;
            if changed {
                *down = !up;
                if up {
                    tracing::info!(redis = %self.inner.settings.shown_url(), "Redis answers again");
                } else {
                    tracing::warn!(redis = %self.inner.settings.shown_url(), "Redis is unavailable: serving from the local snapshot");
                }
            }
            changed
        });
    }

    pub fn unavailable(&self, reason: String) -> ClusterError {
        ClusterError::Unavailable { url: self.inner.settings.shown_url(), reason }
    }

    pub fn corrupt(&self, what: impl Into<String>, reason: impl ToString) -> ClusterError {
        ClusterError::Corrupt { url: self.inner.settings.shown_url(), what: what.into(), reason: reason.to_string() }
    }
}

/// What a key's slot is chosen by on a Redis Cluster, for the kinds whose keys a script touches together: the
/// registry's keys, the review queue's, and a tenant's budgets and rate limits (one admission script). Other keys
/// spread over the slots by their whole name.
fn slot_group(kind: &str, parts: &[&str]) -> Option<String> {
    match kind {
        "tools" | "tool_versions" | "registry_gen" | "registry_epoch" => Some("registry".into()),
        "review" | "reviews_pending" => Some("reviews".into()),
        "budget" | "rate" => Some(format!("tenant:{}", parts.first().copied().unwrap_or_default())),
        _ => None,
    }
}

/// A Redis error in words: a TLS failure by its cause (a CA not trusted, a client certificate missing), else as
/// the client says it.
fn described(err: &redis::RedisError) -> String {
    crate::tls::find_tls_failure(err).map_or_else(|| err.to_string(), |tls| format!("TLS: {tls}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::cluster_routing::Slot;

    fn redis(url: &str) -> Redis {
        let settings = ClusterSettings::from_raw(RawCluster::default(), Some(url.into())).unwrap().unwrap();
        Redis::new(settings).unwrap()
    }

    #[tokio::test]
    async fn on_a_redis_cluster_the_keys_one_script_touches_share_a_slot() {
        let cluster = redis("redis+cluster://127.0.0.1:7000");
        let slot = |kind: &str, parts: &[&str]| Slot::for_key(cluster.key(kind, parts));
        // The registry's scripts, the merge's channel (passed as a key) included: untagged, `toolgate:registry`
        // hashes as the tag `{toolgate:registry}` does.
        for kind in ["tools", "tool_versions", "registry_gen", "registry_epoch", "registry"] {
            assert_eq!(slot(kind, &[]), slot("tools", &[]), "{kind}");
        }
        assert_eq!(slot("review", &["t", "id"]), slot("reviews_pending", &[]));
        assert_eq!(slot("budget", &["acme", "s1"]), slot("rate", &["acme", "tool", "1/1/1", ""]));
        assert_eq!(cluster.key("tools", &[]), "{toolgate:registry}:tools");
        assert!(
            cluster.same_slot(&cluster.key("budget", &["acme", "s"]), &cluster.key("rate", &["acme", "t", "r", ""]))
        );
    }

    #[tokio::test]
    async fn on_one_primary_keys_are_as_they_were() {
        let single = redis("redis://127.0.0.1:6379");
        assert_eq!(single.key("tools", &[]), "toolgate:tools");
        assert_eq!(single.key("rate", &["a", "b"]), "toolgate:rate:a\0b");
        assert!(single.same_slot("x", "y"), "one primary holds every key");
    }
}
