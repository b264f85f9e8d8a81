//! MCP sessions, bounded and owned: at most so many open at once, in all and for one principal (past either a new
//! `initialize` is answered 503 with `Retry-After`), and each tied to the principal that opened it, so that a
//! request from anyone else on its id is answered as if it did not exist (404). A session closed or reaped leaves
//! nothing behind: its entry goes with it. In cluster mode (`shared`) each is also recorded in Redis
//! (`shared.rs`), so that any gateway of the fleet can resume it (`guard.rs`); the bounds stay each gateway's,
//! and a resumed session counts on the gateway that holds it.

mod guard;
mod shared;

pub use guard::guard;

use crate::cluster::{ClusterError, Redis};
use crate::config::Principal;
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, InitializeRequestParams, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, ServerSseMessage, SessionId, SessionStore};
use shared::{FleetSessions, Resuming, Unrecorded};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Who owns each open session, and how many each principal holds (reservations for an `initialize` in progress
/// included). A principal holding none has no entry.
#[derive(Default)]
struct Table {
    owners: HashMap<String, Principal>,
    held: HashMap<Principal, usize>,
    total: usize,
}

impl Table {
    fn release(&mut self, principal: &Principal) {
        self.total = self.total.saturating_sub(1);
        if let Some(n) = self.held.get_mut(principal) {
            *n -= 1;
            if *n == 0 {
                self.held.remove(principal);
            }
        }
    }
}

/// The SDK's in-memory sessions, with their owners and bounds, and in cluster mode their records.
pub struct McpSessions {
    inner: LocalSessionManager,
    table: Mutex<Table>,
    max: usize,
    per_principal: usize,
    shared: Option<Arc<FleetSessions>>,
}

/// What the fleet says of a session this gateway does not hold.
enum Elsewhere {
    /// Open, and the caller's: what its host sent with `initialize`.
    Resumable(Box<InitializeRequestParams>),
    /// No such session, or another caller's.
    Unknown,
    /// Redis cannot say now.
    Unreachable(ClusterError),
}

impl McpSessions {
    /// One gateway's sessions, which end after `idle` without a request.
    pub fn local(max: usize, per_principal: usize, idle: Duration) -> Self {
        Self::with(max, per_principal, idle, None)
    }

    /// A fleet's: `local`'s, each recorded in `redis` too, so that any gateway resumes it.
    pub fn shared(redis: Redis, max: usize, per_principal: usize, idle: Duration) -> Self {
        Self::with(max, per_principal, idle, Some(Arc::new(FleetSessions::new(redis, idle))))
    }

    fn with(max: usize, per_principal: usize, idle: Duration, shared: Option<Arc<FleetSessions>>) -> Self {
        let mut config = SessionConfig::default();
        config.keep_alive = Some(idle);
        // No SSE priming event before each answer (as `http_config` says for the other streams).
        config.sse_retry = None;
        let mut inner = LocalSessionManager::default();
        inner.session_config = config;
        Self { inner, table: Mutex::default(), max, per_principal, shared }
    }

    /// Where the SDK keeps a session beside its memory, and restores one from: the fleet's records, in cluster
    /// mode.
    pub fn store(&self) -> Option<Arc<dyn SessionStore>> {
        self.shared.clone().map(|shared| shared as Arc<dyn SessionStore>)
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Room for one more session of `principal`, held until it is bound to a session or dropped; or the limit
    /// reached, and whose it is.
    fn reserve(self: &Arc<Self>, principal: &Principal) -> Result<Reservation, (usize, &'static str)> {
        let mut table = self.table();
        let held = table.held.get(principal).copied().unwrap_or(0);
        if table.total >= self.max || held >= self.per_principal {
            let (limit, whose) =
                if held >= self.per_principal { (self.per_principal, "for this caller") } else { (self.max, "in all") };
            return Err((limit, whose));
        }
        table.total += 1;
        *table.held.entry(principal.clone()).or_default() += 1;
        Ok(Reservation { sessions: Arc::clone(self), principal: Some(principal.clone()) })
    }

    /// The owner of `id`, if this gateway holds it.
    fn owner(&self, id: &str) -> Option<Principal> {
        self.table().owners.get(id).cloned()
    }

    /// Whether session `id`, held here, is still open in the fleet (its record's TTL set again): not when it was
    /// closed through another gateway, or idle on all. While Redis cannot say, it is: this gateway holds it.
    async fn still_open(&self, id: &str) -> bool {
        let Some(shared) = &self.shared else { return true };
        shared.touch(id).await.unwrap_or_else(|err| {
            tracing::debug!(error = %err, "an MCP session's record was not refreshed");
            true
        })
    }

    /// What the fleet says of session `id`, which this gateway does not hold, for `principal`.
    async fn elsewhere(&self, id: &str, principal: &Principal) -> Elsewhere {
        let Some(shared) = &self.shared else { return Elsewhere::Unknown };
        match shared.lookup(id, principal).await {
            Ok(Some(initialize)) => Elsewhere::Resumable(Box::new(initialize)),
            Ok(None) => Elsewhere::Unknown,
            Err(err) => Elsewhere::Unreachable(err),
        }
    }

    /// Keeps what the fleet said of session `id` for the SDK, while one request resumes it here.
    fn resuming(&self, id: &str, initialize: Box<InitializeRequestParams>) -> Option<Resuming<'_>> {
        self.shared.as_ref().map(|shared| shared.resuming(id, *initialize))
    }

    /// Records session `id`, just opened here by `owner`, for the fleet.
    async fn record(&self, id: &str, owner: &Principal) -> Result<(), Unrecorded> {
        match &self.shared {
            Some(shared) => shared.record(id, owner).await,
            None => Ok(()),
        }
    }

    /// Forgets `id`, and frees its place.
    fn forget(&self, id: &str) {
        if let Some(shared) = &self.shared {
            shared.forget(id);
        }
        let mut table = self.table();
        if let Some(owner) = table.owners.remove(id) {
            table.release(&owner);
        }
    }
}

/// A place for a session being opened.
struct Reservation {
    sessions: Arc<McpSessions>,
    principal: Option<Principal>,
}

impl Reservation {
    /// The place is now session `id`'s, until the session ends.
    async fn bind(mut self, id: &str) {
        let Some(principal) = self.principal.take() else { return };
        {
            let mut table = self.sessions.table();
            if table.owners.contains_key(id) {
                // Resumed by another request first: that one holds the place.
                table.release(&principal);
                return;
            }
            table.owners.insert(id.to_owned(), principal);
        }
        // A session that ended before it was bound here was closed before its entry existed: forget it now.
        if !self.sessions.inner.has_session(&SessionId::from(id.to_owned())).await.unwrap_or(false) {
            self.sessions.forget(id);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(principal) = self.principal.take() {
            self.sessions.table().release(&principal);
        }
    }
}

impl SessionManager for McpSessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    /// Called on `DELETE`, and by the SDK when a session's worker ends (closed, idle, or the door stopping).
    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.forget(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    /// A session this gateway does not hold, found in the fleet's records: made here under its id, for the SDK to
    /// replay the host's `initialize` into.
    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }
}
