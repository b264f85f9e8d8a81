//! The client and reconnecting connection to Redis: `redis://` in clear, `rediss://` over TLS with `[tls.client]`'s
//! CA (else the system's) and client certificate, made again once those files are reloaded, so that connections
//! opened after a rotation use the new ones while commands already sent finish on the old.

use super::ClusterSettings;
use crate::tls::ClientTls;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The client and its connection, as made from one generation of the TLS files.
struct Made {
    generation: u64,
    client: redis::Client,
    conn: ConnectionManager,
}

/// The connection, made again when the TLS files change.
pub struct Connection {
    settings: ClusterSettings,
    /// `Some` for `rediss://`.
    tls: Option<Arc<ClientTls>>,
    made: RwLock<Made>,
}

impl Connection {
    /// Sets up the connection without connecting.
    pub fn new(settings: ClusterSettings, tls: Option<Arc<ClientTls>>) -> Result<Self, String> {
        let tls = tls.filter(|_| settings.redis_url.starts_with("rediss://"));
        let made = make(&settings, tls.as_deref())?;
        Ok(Self { settings, tls, made: RwLock::new(made) })
    }

    /// The multiplexed connection, for one command.
    pub fn conn(&self) -> ConnectionManager {
        self.current(|made| made.conn.clone())
    }

    /// The client, for a connection of its own (subscriptions).
    pub fn client(&self) -> redis::Client {
        self.current(|made| made.client.clone())
    }

    fn current<T>(&self, get: impl Fn(&Made) -> T) -> T {
        if let Some(tls) = &self.tls {
            let generation = tls.generation();
            if self.made.read().unwrap_or_else(|p| p.into_inner()).generation != generation {
                self.remake(tls, generation);
            }
        }
        get(&self.made.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Makes the client again from the files as they are now; one that fails keeps the old, and says why.
    fn remake(&self, tls: &ClientTls, generation: u64) {
        let mut made = self.made.write().unwrap_or_else(|p| p.into_inner());
        if made.generation == generation {
            return;
        }
        match make(&self.settings, Some(tls)) {
            Ok(new) => {
                tracing::info!(redis = %self.settings.shown_url(), "Redis TLS files reloaded: new connections use them");
                *made = Made { generation, ..new };
            }
            Err(reason) => {
                tracing::warn!(redis = %self.settings.shown_url(), %reason, "the reloaded TLS files do not make a Redis client; keeping the old one");
                made.generation = generation;
            }
        }
    }
}

fn make(settings: &ClusterSettings, tls: Option<&ClientTls>) -> Result<Made, String> {
    let url = settings.redis_url.as_str();
    let client = match tls {
        None => redis::Client::open(url).map_err(|e| e.to_string())?,
        Some(tls) => {
            let pem = tls.pem().map_err(|e| e.to_string())?;
            let certificates = redis::TlsCertificates {
                client_tls: pem
                    .identity
                    .map(|(client_cert, client_key)| redis::ClientTlsConfig { client_cert, client_key }),
                root_cert: pem.ca,
            };
            redis::Client::build_with_tls(url, certificates).map_err(|e| e.to_string())?
        }
    };
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(settings.op_timeout.max(Duration::from_secs(1))))
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_secs(1));
    let conn = ConnectionManager::new_lazy_with_config(client.clone(), config).map_err(|e| e.to_string())?;
    Ok(Made { generation: tls.map_or(0, ClientTls::generation), client, conn })
}
