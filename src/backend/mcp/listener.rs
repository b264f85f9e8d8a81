//! The gateway's side of a session with an MCP server: it wakes the supervisor when the tool list changes, passes
//! on what the front door's hosts may have subscribed to, routes each call's progress to its caller, and relays
//! the server's requests (sampling, elicitation, roots) and log messages to the host of the call they came with.
#![allow(deprecated)] // Logging, deprecated by SEP-2577 from 2026-07-28 on, is still relayed for 2025-11-25 hosts.

use crate::backend::{CallHost, ProgressSink};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientResult, CreateMessageRequest, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequest, ElicitRequestParams, ElicitResult, ErrorCode, Implementation, ListRootsRequest,
    ListRootsResult, LoggingMessageNotificationParam, ProgressToken, RequestId, ResourceUpdatedNotificationParam,
    ServerRequest,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ErrorData};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, broadcast};

/// How long a server's request waits for the route to its call's host. The route opens as the call's request is
/// queued, a round trip before the server can ask anything, but a gateway thread descheduled right then (a loaded
/// machine) can open it after the server has asked.
const ROUTE_GRACE: Duration = Duration::from_millis(500);

/// A change to what one server offers besides tools, as a host that may see the server hears of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfferChange {
    pub server: String,
    /// The server's tenant ("" for a shared server): no host of another tenant hears of it.
    pub tenant: String,
    pub kind: OfferKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OfferKind {
    /// `notifications/resources/updated` for this URI.
    ResourceUpdated(String),
    /// The server's resources changed.
    Resources,
    /// The server's prompts changed.
    Prompts,
}

/// An open session with one server.
pub type McpSession = RunningService<RoleClient, ChangeListener>;

/// The key in a log message's `_meta` naming the request whose response stream carried it, which the gateway's
/// HTTP client writes there (`origin`): MCP's SDKs keep that only for a server's requests.
pub const CARRIED_BY: &str = "io.toolgate/carriedBy";

/// The route of a call's progress: the server, and the token the SDK gave the request on its session (every
/// session numbers its requests from the start, so a token alone names a call on one server only).
pub fn progress_key(server: &str, token: &ProgressToken) -> String {
    format!("{server}\0{}", token.0)
}

/// The route of a call's host: the server, and the id of the call's request on its session.
pub fn call_key(server: &str, id: &RequestId) -> String {
    format!("{server}\0{id}")
}

/// Where a relayed call's host is: `None` for a call that has none (a caller of another door), so that a server's
/// request for it is refused at once.
pub type HostRoute = Option<Arc<dyn CallHost>>;

/// What a server's session passes on to the gateway's callers: changes to what it offers, each call's progress
/// by the token the gateway gave the call, and each call's requests and log messages by the call's request id.
#[derive(Clone)]
pub struct Relays {
    pub offers: broadcast::Sender<OfferChange>,
    pub progress: Arc<Mutex<HashMap<String, Arc<dyn ProgressSink>>>>,
    pub hosts: Arc<Mutex<HashMap<String, HostRoute>>>,
    /// Told each time a route to a host opens, for the server's requests that arrived first (`host_awaited`).
    pub opened: Arc<Notify>,
}

impl Relays {
    pub fn new(offers: broadcast::Sender<OfferChange>) -> Self {
        Self { offers, progress: Arc::default(), hosts: Arc::default(), opened: Arc::default() }
    }

    /// The host of the call with this request id on `server`'s session, while the call runs.
    pub fn host_of(&self, server: &str, call: &RequestId) -> Option<Arc<dyn CallHost>> {
        self.hosts.lock().expect("hosts lock").get(&call_key(server, call)).cloned().flatten()
    }

    /// `host_of`, waiting up to `ROUTE_GRACE` for the call's route to open if it has not yet.
    pub async fn host_awaited(&self, server: &str, call: &RequestId) -> Option<Arc<dyn CallHost>> {
        let key = call_key(server, call);
        let until = tokio::time::Instant::now() + ROUTE_GRACE;
        loop {
            let mut opened = std::pin::pin!(self.opened.notified());
            // Listening before looking, so that a route opened in between is not missed.
            opened.as_mut().enable();
            if let Some(host) = self.hosts.lock().expect("hosts lock").get(&key) {
                return host.clone();
            }
            if tokio::time::timeout_at(until, opened).await.is_err() {
                return None;
            }
        }
    }

    /// Where the progress under this token on `server`'s session goes, while its call runs.
    pub fn progress_of(&self, server: &str, token: &ProgressToken) -> Option<Arc<dyn ProgressSink>> {
        self.progress.lock().expect("progress lock").get(&progress_key(server, token)).cloned()
    }
}

/// The client side of a session.
pub struct ChangeListener {
    pub changed: Arc<Notify>,
    pub relays: Relays,
    /// The server's name and tenant, which its notifications are told with.
    pub server: String,
    pub tenant: String,
}

impl ChangeListener {
    fn tell(&self, kind: OfferKind) {
        let change = OfferChange { server: self.server.clone(), tenant: self.tenant.clone(), kind };
        // No host listening is no error.
        let _ = self.relays.offers.send(change);
    }

    /// Asks the host of the call whose response stream carried the request, once the call's route is open. A
    /// request on the session's own stream, or over stdio (which has no streams), names no call, and is refused: the
    /// gateway does not guess.
    async fn ask(
        &self,
        context: &RequestContext<RoleClient>,
        request: ServerRequest,
    ) -> Result<ClientResult, ErrorData> {
        let call = match context.extensions.get::<InboundStreamOrigin>() {
            Some(InboundStreamOrigin::OutboundRequest(id)) => Some(id),
            _ => None,
        };
        let host = match call {
            Some(call) => self.relays.host_awaited(&self.server, call).await,
            None => None,
        };
        match host {
            Some(host) => host.ask(request).await,
            None => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "{}: toolgate passes a server's request on only to the host of the call it came with, and this \
                     one came with no such call",
                    method(&request)
                ),
                None,
            )),
        }
    }
}

fn method(request: &ServerRequest) -> &'static str {
    match request {
        ServerRequest::CreateMessageRequest(_) => "sampling/createMessage",
        ServerRequest::ElicitRequest(_) => "elicitation/create",
        ServerRequest::ListRootsRequest(_) => "roots/list",
        _ => "request",
    }
}

fn unexpected(asked: &str, answer: &ClientResult) -> ErrorData {
    let got = serde_json::to_string(answer).unwrap_or_default();
    ErrorData::internal_error(format!("the host answered {asked} with something else: {got}"), None)
}

impl ClientHandler for ChangeListener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.tell(OfferKind::ResourceUpdated(params.uri));
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tell(OfferKind::Resources);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tell(OfferKind::Prompts);
    }

    /// A log message of no call (on the session's own stream, or over stdio) goes to the gateway's log; one a
    /// call's response stream carried went to the call's host as it arrived (`ordered`).
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let (level, data) = (format!("{:?}", params.level), params.data.to_string());
        tracing::debug!(server = %self.server, level, data, "MCP server log message, of no call");
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let request = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
        match self.ask(&context, request).await? {
            ClientResult::CreateMessageResult(result) => Ok(*result),
            other => Err(unexpected("sampling/createMessage", &other)),
        }
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match self.ask(&context, ServerRequest::ElicitRequest(ElicitRequest::new(params))).await? {
            ClientResult::ElicitResult(result) => Ok(result),
            other => Err(unexpected("elicitation/create", &other)),
        }
    }

    async fn list_roots(&self, context: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        match self.ask(&context, ServerRequest::ListRootsRequest(ListRootsRequest::default())).await? {
            ClientResult::ListRootsResult(result) => Ok(result),
            other => Err(unexpected("roots/list", &other)),
        }
    }

    /// Sampling, elicitation and roots are declared so that a server may ask: each request is passed on to the
    /// calling host if it declared the capability, and refused otherwise.
    fn get_info(&self) -> ClientConfig {
        let capabilities = serde_json::json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}});
        let capabilities: ClientCapabilities = serde_json::from_value(capabilities).expect("client capabilities");
        ClientConfig::new(capabilities, Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::future::BoxFuture;

    #[derive(Debug)]
    struct Host;

    impl CallHost for Host {
        fn ask(&self, _: ServerRequest) -> BoxFuture<'static, Result<ClientResult, ErrorData>> {
            Box::pin(std::future::ready(Err(ErrorData::internal_error("not asked here", None))))
        }

        fn log(&self, _: LoggingMessageNotificationParam) {}
    }

    fn open(relays: &Relays, id: i64, host: Option<Arc<dyn CallHost>>) {
        relays.hosts.lock().unwrap().insert(call_key("s", &RequestId::Number(id)), host);
        relays.opened.notify_waiters();
    }

    #[tokio::test(start_paused = true)]
    async fn a_servers_request_waits_for_its_calls_route_to_open_and_no_longer() {
        let relays = Relays::new(broadcast::channel(1).0);
        // The call's thread opens the route after the server has asked (it was descheduled): the request waits.
        let late = relays.clone();
        let opener = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            open(&late, 7, Some(Arc::new(Host)));
        });
        let started = tokio::time::Instant::now();
        assert!(relays.host_awaited("s", &RequestId::Number(7)).await.is_some(), "the host, once its route opens");
        assert_eq!(started.elapsed(), Duration::from_millis(100));
        opener.await.unwrap();
        // A call without a host is refused at once; one that no route names, after the grace.
        open(&relays, 8, None);
        let started = tokio::time::Instant::now();
        assert!(relays.host_awaited("s", &RequestId::Number(8)).await.is_none());
        assert_eq!(started.elapsed(), Duration::ZERO);
        assert!(relays.host_awaited("other", &RequestId::Number(7)).await.is_none(), "another server's call 7");
        assert_eq!(started.elapsed(), ROUTE_GRACE);
    }
}
