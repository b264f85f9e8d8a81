//! MCP sessions, bounded and owned: at most so many open at once, in all and for one principal (past either a new
//! `initialize` is answered 503 with `Retry-After`), and each tied to the principal that opened it, so that a
//! request from anyone else on its id is answered as if it did not exist (404). A session closed or reaped leaves
//! nothing behind: its entry goes with it.

use crate::config::Principal;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use http::{Method, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The header a session's id travels in.
const SESSION_HEADER: &str = "mcp-session-id";

/// How long a caller refused a session is told to wait: sessions end when closed or idle, not at once.
const RETRY_AFTER_S: &str = "5";

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

/// The SDK's in-memory sessions, with their owners and bounds.
pub struct McpSessions {
    inner: LocalSessionManager,
    table: Mutex<Table>,
    max: usize,
    per_principal: usize,
}

impl McpSessions {
    /// Sessions that end after `idle` without a request.
    pub fn new(max: usize, per_principal: usize, idle: Duration) -> Self {
        let mut config = SessionConfig::default();
        config.keep_alive = Some(idle);
        // No SSE priming event before each answer (as `http_config` says for the other streams).
        config.sse_retry = None;
        let mut inner = LocalSessionManager::default();
        inner.session_config = config;
        Self { inner, table: Mutex::default(), max, per_principal }
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

    /// Whether `id` is an open session of `principal`'s.
    fn owned_by(&self, id: &str, principal: &Principal) -> bool {
        self.table().owners.get(id) == Some(principal)
    }

    /// Forgets `id`, and frees its place.
    fn forget(&self, id: &str) {
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
        self.sessions.table().owners.insert(id.to_owned(), principal);
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

fn full(limit: usize, whose: &str) -> Response {
    let reason = format!(
        "the MCP front door has its limit of {limit} open sessions {whose}: close one (DELETE /mcp) or wait for an \
         idle one to end"
    );
    (StatusCode::SERVICE_UNAVAILABLE, [(http::header::RETRY_AFTER, RETRY_AFTER_S)], reason).into_response()
}

/// The SDK answers a closed session 202 Accepted, which the official Python SDKs log as a failed termination on
/// every close: the session is gone at once, so 204 No Content says so.
fn closed(mut response: Response) -> Response {
    if response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

/// The middleware, after authentication: a request on a session goes on only from its owner; a new session is
/// opened only with room for it.
pub async fn guard(State(sessions): State<Arc<McpSessions>>, request: Request, next: Next) -> Response {
    let principal = request.extensions().get::<Principal>().cloned().unwrap_or_default();
    let id = request.headers().get(SESSION_HEADER).map(|v| v.to_str().unwrap_or_default().to_owned());
    match id {
        Some(id) if !sessions.owned_by(&id, &principal) => not_found(),
        Some(_) if request.method() == Method::DELETE => closed(next.run(request).await),
        Some(_) => next.run(request).await,
        // Only a POST without a session opens one (with `initialize`); anything else the SDK refuses.
        None if request.method() != Method::POST => next.run(request).await,
        None => {
            let reservation = match sessions.reserve(&principal) {
                Ok(reservation) => reservation,
                Err((limit, whose)) => return full(limit, whose),
            };
            let response = next.run(request).await;
            if let Some(id) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
                reservation.bind(id).await;
            }
            response
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
}
