//! One link to Redis, in the shape the URL names, made from one generation of the TLS files: the connection one
//! command takes ([`Conn`]), and one of its own for subscriptions.

use crate::cluster::ClusterSettings;
use crate::cluster::topology::Topology;
use crate::tls::ClientTls;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig, PubSub};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{Cmd, IntoConnectionInfo, Pipeline, RedisFuture, RedisResult, TlsCertificates, Value};
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The connection one operation runs on, whatever the shape; cheap to clone.
#[derive(Clone)]
pub enum Conn {
    Primary(ConnectionManager),
    Cluster(ClusterConnection),
}

impl Conn {
    /// Sends `pipe` to the primary that holds `key` (on a Redis Cluster, its slot's), followed, when `wait` says
    /// how many replicas for how long, by `WAIT` and `INFO replication`, in one round trip: the pipeline's replies
    /// (an error among them is returned as such), and then how many replicas acknowledged every write this
    /// connection sent there and how many that primary has, in sync or still syncing. When it has more than were
    /// waited for, they are waited for again.
    pub async fn replicated(
        &mut self,
        key: &str,
        pipe: &Pipeline,
        wait: Option<(usize, Duration)>,
    ) -> RedisResult<(Vec<Value>, Option<(usize, usize)>)> {
        let mut replies = self.on_node_of(key, pipe, wait).await?;
        let Some((expected, timeout)) = wait else { return Ok((replies, None)) };
        let (mut acked, replicas) = wait_replies(&mut replies)?;
        if acked < replicas && expected < replicas {
            let mut again = self.on_node_of(key, &redis::pipe(), Some((replicas, timeout))).await?;
            acked = wait_replies(&mut again)?.0;
        }
        Ok((replies, Some((acked, replicas))))
    }

    async fn on_node_of(
        &mut self,
        key: &str,
        pipe: &Pipeline,
        wait: Option<(usize, Duration)>,
    ) -> RedisResult<Vec<Value>> {
        let mut pipe = pipe.clone();
        if let Some((expected, timeout)) = wait {
            pipe.cmd("WAIT").arg(expected).arg(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX).max(1));
            pipe.cmd("INFO").arg("replication");
        }
        if pipe.cmd_iter().next().is_none() {
            return Ok(Vec::new());
        }
        let replies: Vec<Value> = match self {
            Self::Primary(conn) => pipe.query_async(conn).await?,
            Self::Cluster(conn) => {
                use redis::cluster_routing::{Route, SingleNodeRoutingInfo, Slot, SlotAddr};
                let route = SingleNodeRoutingInfo::SpecificNode(Route::with_slot(Slot::for_key(key), SlotAddr::Master));
                let sent = pipe.cmd_iter().count();
                conn.route_pipeline(pipe, 0, sent, route).await?
            }
        };
        replies.into_iter().map(Value::extract_error).collect()
    }
}

/// Takes `WAIT`'s and `INFO replication`'s replies off the end: how many replicas acknowledged, and how many the
/// primary has (`connected_slaves`, which counts those still syncing, unlike `ROLE`).
fn wait_replies(replies: &mut Vec<Value>) -> RedisResult<(usize, usize)> {
    let info: String = redis::from_redis_value(replies.pop().unwrap_or(Value::Nil))?;
    let acked: usize = redis::from_redis_value(replies.pop().unwrap_or(Value::Nil))?;
    let replicas = info
        .lines()
        .find_map(|line| line.trim().strip_prefix("connected_slaves:"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    Ok((acked, replicas))
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Primary(conn) => conn.req_packed_command(cmd),
            Self::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Primary(conn) => conn.req_packed_commands(pipeline, offset, count),
            Self::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Primary(conn) => conn.get_db(),
            Self::Cluster(conn) => conn.get_db(),
        }
    }
}

/// The link in one of the three shapes.
#[expect(clippy::large_enum_variant, reason = "one link per gateway, made once: its size costs nothing")]
pub enum RedisLink {
    Primary { client: redis::Client, conn: ConnectionManager },
    Cluster { client: ClusterClient, nodes: Vec<redis::Client>, conn: Lazy<ClusterConnection> },
    Sentinel(Box<Sentinel>),
}

/// A connection made on first use, and by one task at a time.
pub struct Lazy<T> {
    made: RwLock<Option<T>>,
    making: tokio::sync::Mutex<()>,
}

/// A primary found through Sentinel.
pub struct Sentinel {
    sentinel: tokio::sync::Mutex<SentinelClient>,
    /// The primary the sentinels named last: its client and connection.
    primary: Lazy<(redis::Client, ConnectionManager)>,
    /// Set by a failed command: the next asks the sentinels again.
    stale: AtomicBool,
    config: ConnectionManagerConfig,
}

impl RedisLink {
    pub fn new(settings: &ClusterSettings, tls: Option<&ClientTls>) -> Result<Self, String> {
        let certificates = tls.map(certificates).transpose()?;
        let timeout = settings.op_timeout.max(Duration::from_secs(1));
        // Commands answer within `op_timeout`, bounded by `Redis::run`; a WAIT may take that long on top.
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout * 3))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        match &settings.topology {
            Topology::Single => {
                let client = client(&settings.redis_url, certificates)?;
                let conn =
                    ConnectionManager::new_lazy_with_config(client.clone(), config).map_err(|e| e.to_string())?;
                Ok(Self::Primary { client, conn })
            }
            Topology::Cluster { nodes } => {
                let mut builder = ClusterClient::builder(nodes.clone())
                    .connection_timeout(timeout)
                    .response_timeout(timeout * 3)
                    .retries(2);
                if let Some(certificates) = certificates.clone() {
                    builder = builder.certs(certificates);
                }
                let client = builder.build().map_err(|e| e.to_string())?;
                let nodes =
                    nodes.iter().map(|node| self::client(node, certificates.clone())).collect::<Result<_, _>>()?;
                Ok(Self::Cluster { client, nodes, conn: Lazy::default() })
            }
            Topology::Sentinel { sentinels, master, db, username, password } => {
                let addrs = sentinels
                    .iter()
                    .map(|url| url.as_str().into_connection_info().map(|info| info.addr().clone()))
                    .collect::<RedisResult<Vec<_>>>()
                    .map_err(|e| e.to_string())?;
                let mut builder = SentinelClientBuilder::new(addrs, master, SentinelServerType::Master)
                    .map_err(|e| e.to_string())?
                    .set_client_to_redis_db(*db);
                if let Some(username) = username {
                    builder = builder.set_client_to_redis_username(username).set_client_to_sentinel_username(username);
                }
                if let Some(password) = password {
                    builder = builder.set_client_to_redis_password(password).set_client_to_sentinel_password(password);
                }
                if let Some(certificates) = certificates {
                    builder = builder
                        .set_client_to_redis_tls_mode(redis::TlsMode::Secure)
                        .set_client_to_redis_certificates(certificates.clone())
                        .set_client_to_sentinel_certificates(certificates);
                }
                let sentinel = builder.build().map_err(|e| e.to_string())?;
                Ok(Self::Sentinel(Box::new(Sentinel {
                    sentinel: tokio::sync::Mutex::new(sentinel),
                    primary: Lazy::default(),
                    stale: AtomicBool::new(false),
                    config,
                })))
            }
        }
    }

    pub async fn conn(&self) -> RedisResult<Conn> {
        match self {
            Self::Primary { conn, .. } => Ok(Conn::Primary(conn.clone())),
            Self::Cluster { client, conn, .. } => {
                conn.get(false, async || client.get_async_connection().await).await.map(Conn::Cluster)
            }
            Self::Sentinel(sentinel) => sentinel.primary().await.map(|(_, conn)| Conn::Primary(conn)),
        }
    }

    pub fn failed(&self) {
        if let Self::Sentinel(sentinel) = self {
            sentinel.stale.store(true, Ordering::Relaxed);
        }
    }

    pub async fn pubsub(&self) -> RedisResult<PubSub> {
        match self {
            Self::Primary { client, .. } => client.get_async_pubsub().await,
            Self::Sentinel(sentinel) => sentinel.primary().await?.0.get_async_pubsub().await,
            Self::Cluster { nodes, .. } => {
                let mut last = None;
                for node in nodes {
                    match tokio::time::timeout(Duration::from_secs(1), node.get_async_pubsub()).await {
                        Ok(Ok(pubsub)) => return Ok(pubsub),
                        Ok(Err(err)) => last = Some(err),
                        Err(_) => last = Some(std::io::Error::from(std::io::ErrorKind::TimedOut).into()),
                    }
                }
                Err(last.expect("a cluster URL names at least one node"))
            }
        }
    }
}

impl<T> Default for Lazy<T> {
    fn default() -> Self {
        Self { made: RwLock::new(None), making: tokio::sync::Mutex::new(()) }
    }
}

impl<T: Clone> Lazy<T> {
    /// The connection made before, unless `again`; else the one `make` makes now.
    async fn get(&self, again: bool, make: impl AsyncFnOnce() -> RedisResult<T>) -> RedisResult<T> {
        if !again && let Some(made) = self.made.read().unwrap_or_else(|p| p.into_inner()).clone() {
            return Ok(made);
        }
        let _making = self.making.lock().await;
        if !again && let Some(made) = self.made.read().unwrap_or_else(|p| p.into_inner()).clone() {
            return Ok(made);
        }
        let made = make().await?;
        *self.made.write().unwrap_or_else(|p| p.into_inner()) = Some(made.clone());
        Ok(made)
    }

    fn current(&self) -> Option<T> {
        self.made.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Sentinel {
    /// The primary: the one named before, unless a command failed since; then the sentinels are asked, and a
    /// primary they name at another address is connected to. When no sentinel answers, the last one named stays.
    async fn primary(&self) -> RedisResult<(redis::Client, ConnectionManager)> {
        let again = self.stale.swap(false, Ordering::Relaxed);
        let known = self.primary.current();
        let asked = self
            .primary
            .get(again, async || {
                let client = self.sentinel.lock().await.async_get_client().await?;
                let addr = client.get_connection_info().addr();
                if let Some(known) = known.clone().filter(|(known, _)| known.get_connection_info().addr() == addr) {
                    return Ok(known);
                }
                tracing::info!(primary = %addr, "Sentinel names the Redis primary");
                let conn = ConnectionManager::new_lazy_with_config(client.clone(), self.config.clone())?;
                Ok((client, conn))
            })
            .await;
        match (asked, known) {
            (Ok(primary), _) => Ok(primary),
            (Err(err), Some(known)) => {
                tracing::warn!(error = %err, "the sentinels named no primary: staying on the one named before");
                self.stale.store(true, Ordering::Relaxed);
                Ok(known)
            }
            (Err(err), None) => Err(err),
        }
    }
}

fn certificates(tls: &ClientTls) -> Result<TlsCertificates, String> {
    let pem = tls.pem().map_err(|e| e.to_string())?;
    Ok(TlsCertificates {
        client_tls: pem.identity.map(|(client_cert, client_key)| redis::ClientTlsConfig { client_cert, client_key }),
        root_cert: pem.ca,
    })
}

fn client(url: &str, certificates: Option<TlsCertificates>) -> Result<redis::Client, String> {
    match certificates {
        None => redis::Client::open(url),
        Some(certificates) => redis::Client::build_with_tls(url, certificates),
    }
    .map_err(|e| e.to_string())
}
