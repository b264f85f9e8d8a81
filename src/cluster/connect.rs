//! The client and reconnecting connection to Redis in each of its shapes: one primary (a reconnecting
//! multiplexed connection), a Redis Cluster (the `redis` crate's cluster connection, which follows `MOVED`, `ASK`
//! and failovers) and a primary found through Sentinel (asked again after a failed command, and followed when the
//! sentinels name another). `rediss` URLs use `[tls.client]`'s CA (else the system's) and client certificate, and
//! the clients are made again once those files are reloaded, so that connections opened after a rotation use the
//! new ones while commands already sent finish on the old.

mod link;

use super::ClusterSettings;
use crate::tls::ClientTls;
pub use link::Conn;
use link::RedisLink;
use std::sync::{Arc, RwLock};

/// The link as made from one generation of the TLS files.
struct Made {
    generation: u64,
    link: Arc<RedisLink>,
}

/// The connection, made again when the TLS files change.
pub struct Connection {
    settings: ClusterSettings,
    /// `Some` for a `rediss` URL.
    tls: Option<Arc<ClientTls>>,
    made: RwLock<Made>,
}

impl Connection {
    /// Sets up the connection without connecting.
    pub fn new(settings: ClusterSettings, tls: Option<Arc<ClientTls>>) -> Result<Self, String> {
        let tls = tls.filter(|_| settings.redis_url.starts_with("rediss"));
        let link = Arc::new(RedisLink::new(&settings, tls.as_deref())?);
        let generation = tls.as_deref().map_or(0, ClientTls::generation);
        Ok(Self { settings, tls, made: RwLock::new(Made { generation, link }) })
    }

    /// A connection for one operation: at once for one primary; for a cluster or Sentinel, connected first if no
    /// connection is up yet. Boxed: the futures of the three shapes, nested in every caller's, are deep enough
    /// to overflow the compiler's trait solving.
    pub fn conn(&self) -> futures::future::BoxFuture<'static, redis::RedisResult<Conn>> {
        let link = self.current();
        Box::pin(async move { link.conn().await })
    }

    /// After a command failed other than by its own error: the next one looks for the primary again (Sentinel).
    pub fn failed(&self) {
        self.current().failed();
    }

    /// A connection of its own for subscriptions. A message published anywhere on a Redis Cluster reaches every
    /// node, so it is opened on the first seed node that answers.
    pub async fn pubsub(&self) -> redis::RedisResult<redis::aio::PubSub> {
        self.current().pubsub().await
    }

    fn current(&self) -> Arc<RedisLink> {
        if let Some(tls) = &self.tls {
            let generation = tls.generation();
            if self.made.read().unwrap_or_else(|p| p.into_inner()).generation != generation {
                self.remake(tls, generation);
            }
        }
        Arc::clone(&self.made.read().unwrap_or_else(|p| p.into_inner()).link)
    }

    /// Makes the link again from the files as they are now; one that fails keeps the old, and says why.
    fn remake(&self, tls: &ClientTls, generation: u64) {
        let mut made = self.made.write().unwrap_or_else(|p| p.into_inner());
        if made.generation == generation {
            return;
        }
        made.generation = generation;
        match RedisLink::new(&self.settings, Some(tls)) {
            Ok(link) => {
                tracing::info!(redis = %self.settings.shown_url(), "Redis TLS files reloaded: new connections use them");
                made.link = Arc::new(link);
            }
            Err(reason) => {
                tracing::warn!(redis = %self.settings.shown_url(), %reason, "the reloaded TLS files do not make a Redis client; keeping the old one");
            }
        }
    }
}
