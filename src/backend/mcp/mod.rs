//! MCP servers as backends: their definitions, stored; their sessions, supervised; their tools, imported; and
//! `tools/call` for each call.

mod call;
mod connect;
mod import;
mod listener;
mod offer;
mod ordered;
mod origin;
mod server;
pub mod spec;
pub mod store;
mod supervise;

pub use listener::{OfferChange, OfferKind};
pub use server::McpStatus;
pub use spec::{McpServerSpec, ToolOverlay};
pub use store::{McpStore, RedbMcpStore};

use super::{BackendError, Invocation, Output};
use crate::registry::{Registry, SchemaDocuments, run_blocking};
use crate::store::StoreError;
use crate::tls::ClientTls;
use server::Server;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use supervise::Context;

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("invalid MCP server: {0}")]
    Invalid(String),
    #[error("MCP server {0:?} not found")]
    NotFound(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Resource updates and list changes a slow host may fall behind by before it misses some.
const OFFER_CHANGES: usize = 256;

/// Every MCP server the gateway knows, by name.
pub struct McpHub {
    servers: Mutex<HashMap<String, Arc<Server>>>,
    /// Serialises adds and removes, so two changes to one server never run two supervisors.
    admin: tokio::sync::Mutex<()>,
    ctx: Arc<Context>,
    store: Arc<dyn McpStore>,
    max_result_bytes: usize,
    /// Hosts subscribed to a resource of a server, by server and URI: the gateway holds one subscription at the
    /// server for them all, ended when the last host's ends.
    subscriptions: tokio::sync::Mutex<HashMap<(String, String), usize>>,
}

impl McpHub {
    pub fn new(
        registry: Arc<Registry>,
        documents: SchemaDocuments,
        store: Arc<dyn McpStore>,
        connect_timeout: Duration,
        max_result_bytes: usize,
        tls: Arc<ClientTls>,
    ) -> Self {
        let (offers, _) = tokio::sync::broadcast::channel(OFFER_CHANGES);
        let relays = listener::Relays::new(offers);
        let ctx = Arc::new(Context { registry, documents, connect_timeout, tls, relays });
        Self {
            servers: Mutex::new(HashMap::new()),
            admin: tokio::sync::Mutex::new(()),
            ctx,
            store,
            max_result_bytes,
            subscriptions: tokio::sync::Mutex::default(),
        }
    }

    /// Starts every stored server, after storing those of the config file (which win over a stored definition
    /// of the same name). Does not wait for them to connect.
    pub async fn start(&self, configured: Vec<McpServerSpec>) -> Result<(), McpError> {
        for spec in &configured {
            spec.check().map_err(|e| McpError::Invalid(format!("{}: {e}", spec.name)))?;
        }
        let store = Arc::clone(&self.store);
        let stored = run_blocking(move || {
            let stored = store.load()?;
            for spec in configured.iter().filter(|c| !stored.contains(c)) {
                store.put(spec)?;
            }
            store.load()
        })
        .await?;
        for spec in stored {
            self.launch(spec);
        }
        Ok(())
    }

    /// Stores the definition, (re)starts the server, and waits for its first connection attempt, at most a little
    /// longer than the connect timeout. Returns its status and whether it is new.
    pub async fn add(&self, spec: McpServerSpec) -> Result<(McpStatus, bool), McpError> {
        spec.check().map_err(McpError::Invalid)?;
        let _admin = self.admin.lock().await;
        let store = Arc::clone(&self.store);
        let stored = spec.clone();
        run_blocking(move || store.put(&stored)).await?;
        let previous = self.servers.lock().expect("servers lock").remove(&spec.name);
        let created = previous.is_none();
        if let Some(previous) = previous {
            previous.stop().await;
            // The new definition's imports reconcile its own tenant only: tools left in another one would keep
            // calling this server.
            if previous.spec.tenant != spec.tenant {
                import::remove_except(&self.ctx.registry, &previous.spec, &[]).await;
            }
        }
        let server = self.launch(spec);
        let wait = self.ctx.connect_timeout * 2 + Duration::from_secs(1);
        let _ = tokio::time::timeout(wait, server.first_attempt()).await;
        Ok((server.status(), created))
    }

    /// Stops the server, ending its process, deletes the tools imported from it, then its definition.
    pub async fn remove(&self, name: &str) -> Result<(), McpError> {
        let _admin = self.admin.lock().await;
        let server = self.servers.lock().expect("servers lock").remove(name);
        let server = server.ok_or_else(|| McpError::NotFound(name.to_owned()))?;
        server.stop().await;
        import::remove_except(&self.ctx.registry, &server.spec, &[]).await;
        let store = Arc::clone(&self.store);
        let name = name.to_owned();
        run_blocking(move || store.delete(&name)).await?;
        Ok(())
    }

    /// Every server's status, by name.
    pub fn list(&self) -> Vec<McpStatus> {
        let servers = self.servers.lock().expect("servers lock");
        let mut list: Vec<McpStatus> = servers.values().map(|s| s.status()).collect();
        list.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        list
    }

    /// Stops every server and waits until their processes are gone.
    pub async fn shutdown(&self) {
        let servers: Vec<Arc<Server>> = self.servers.lock().expect("servers lock").drain().map(|(_, s)| s).collect();
        futures::future::join_all(servers.iter().map(|s| s.stop())).await;
    }

    /// Calls `tool` on `server` with `tools/call`.
    pub async fn invoke(&self, server: &str, tool: &str, call: Invocation<'_>) -> Result<Output, BackendError> {
        let found = self.servers.lock().expect("servers lock").get(server).cloned();
        // A server of another tenant does not exist for this tool, as a tool of another tenant does not for a call.
        let Some(server) = found.filter(|s| s.spec.tenant.is_empty() || s.spec.tenant == call.tenant) else {
            return Err(BackendError::Unavailable(format!("MCP server {server:?} is not defined")));
        };
        let Some((session, peer)) = server.peer() else {
            // Why is in the gateway's log and the server's status; the caller need not see its URL or errors.
            return Err(BackendError::Unavailable(format!("MCP server {:?} is not connected", server.spec.name)));
        };
        let output = server.output(tool);
        let checks = call::Checks {
            output: output.as_deref(),
            pass_invalid_output: server.spec.pass_invalid_output,
            max_result_bytes: self.max_result_bytes,
        };
        let outcome = call::call(&peer, tool, call, checks, (&server.spec.name, &self.ctx.relays)).await;
        if outcome.session_broken {
            server.report_broken(session);
        }
        if outcome.list_stale {
            server.changed.notify_one();
        }
        if outcome.output_violation {
            server.count_output_violation();
        }
        outcome.result
    }

    fn launch(&self, spec: McpServerSpec) -> Arc<Server> {
        let server = Arc::new(Server::new(spec));
        let handle = tokio::spawn(supervise::guarded(Arc::clone(&server), Arc::clone(&self.ctx)));
        server.set_supervisor(handle);
        self.servers.lock().expect("servers lock").insert(server.spec.name.clone(), Arc::clone(&server));
        server
    }
}
