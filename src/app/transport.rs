//! The gateway's TLS, loaded from `[tls]` (and the OTLP certificate variables) once at start: outbound for tool
//! servers and the collector, inbound for the listeners (with the identities client certificates map to), and the
//! task that reloads the files when they change. A file that does not load stops the start.

use super::ServeError;
use crate::config::Config;
use crate::tls::{ClientTls, Identities, Reloads, ServerTls};
use std::sync::Arc;

pub struct TransportTls {
    pub client: Arc<ClientTls>,
    /// To the OTLP collector: its own files when set, else `client`.
    pub collector: Arc<ClientTls>,
    pub server: Option<Arc<ServerTls>>,
    pub identities: Identities,
    /// Ends once the gateway drops what it watches.
    _reloads: Option<tokio::task::JoinHandle<()>>,
}

impl TransportTls {
    pub fn load(config: &Config) -> Result<Self, ServeError> {
        let client = Arc::new(ClientTls::load(config.tls.client.clone())?);
        let server = config.tls.server.clone().map(ServerTls::load).transpose()?.map(Arc::new);
        let mut reloads = Reloads::default();
        reloads.add(client.watched());
        let collector = match config.tls.collector.clone() {
            Some(files) => {
                let collector = Arc::new(ClientTls::load(files)?);
                reloads.add(collector.watched());
                collector
            }
            None => Arc::clone(&client),
        };
        if let Some(server) = &server {
            reloads.add(server.watched());
        }
        let reloads = reloads.spawn(config.tls.reload_every);
        Ok(Self { client, collector, server, identities: config.tls.identities.clone(), _reloads: reloads })
    }
}
