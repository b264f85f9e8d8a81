//! The MCP server a host talks to: `tools/list` shows the caller's tenant's tools, `tools/call` runs a call
//! through the same executor as `Execute`, with the context taken from the caller's principal alone; resources
//! and prompts are the imported MCP servers' that the caller's tenant may see.

use super::SESSION_CHECK;
use super::calls::{self, CallStart, Cleared, HostCall};
use super::host::{Host, LogLevel};
use super::listen;
use super::offers::{self, SessionOffers};
use super::state::StateKey;
use super::{answer, confirm};
use crate::config::Principal;
use crate::executor::{CallRequest, ReviewMode};
use crate::handles::Core;
use crate::telemetry::{Door, in_context};
use opentelemetry::context::FutureExt;
#[allow(deprecated)] // SEP-2577 deprecates logging from 2026-07-28 on; 2025-11-25 hosts still set a level.
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Tools in one page of `tools/list`.
const PAGE: usize = 200;

/// How long a host may keep a list before asking again (2026-07-28, SEP-2549): a list is the caller's tenant's,
/// so it is the caller's alone to keep, and registrations are rare.
const LIST_TTL_MS: u64 = 30_000;

/// One MCP session's handler; every session shares the core (the executor, the registry, the review queue and the
/// cap on calls in flight).
#[derive(Clone)]
pub struct FrontDoor {
    core: Arc<Core>,
    /// How long the user may take to answer a confirmation.
    confirm_timeout: std::time::Duration,
    /// The registry's changes since this session was created (with its `initialize`), so that a tool registered
    /// before the host's `initialized` arrives is still announced.
    changes: tokio::sync::watch::Receiver<()>,
    /// The session's resource subscriptions and the tenant its offers' changes are told by.
    offers: Arc<SessionOffers>,
    /// The lowest level of the servers' log messages the session's host asked to be told.
    log_level: Arc<LogLevel>,
    /// What a waiting reviewed call's `requestState` is sealed with.
    state_key: Arc<StateKey>,
    /// Set by the session's first `initialized`: a session resumed on another gateway is told it twice (replayed,
    /// then the host's own if it lands there), and follows the changes once.
    initialized: Arc<AtomicBool>,
}

impl FrontDoor {
    pub fn new(core: Arc<Core>, confirm_timeout: std::time::Duration, state_key: Arc<StateKey>) -> Self {
        let changes = core.registry.changes();
        let (offers, log_level, initialized) = (Arc::default(), Arc::default(), Arc::default());
        Self { core, confirm_timeout, changes, offers, log_level, state_key, initialized }
    }

    pub fn core(&self) -> &Arc<Core> {
        &self.core
    }

    pub fn state_key(&self) -> &StateKey {
        &self.state_key
    }

    /// A copy for a new session: the registry's changes are followed from now.
    pub fn for_session(&self) -> Self {
        Self {
            changes: self.core.registry.changes(),
            offers: Arc::default(),
            log_level: Arc::default(),
            initialized: Arc::default(),
            ..self.clone()
        }
    }
}

/// The request's HTTP parts, which the SDK passes along.
fn parts(context: &RequestContext<RoleServer>) -> Result<&http::request::Parts, McpError> {
    context
        .extensions
        .get::<http::request::Parts>()
        .ok_or_else(|| McpError::internal_error("the request reached the handler without its HTTP parts", None))
}

/// The principal the auth layer put on the request, and the MCP session it belongs to.
fn caller(context: &RequestContext<RoleServer>) -> Result<(Principal, String), McpError> {
    let parts = parts(context)?;
    let principal = parts
        .extensions
        .get::<Principal>()
        .cloned()
        .ok_or_else(|| McpError::internal_error("the request reached the handler without a principal", None))?;
    let session = parts.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    Ok((principal, session))
}

/// The trace a call continues: `traceparent` in the request's `_meta` (SEP-414), else in its HTTP headers.
fn parent_of(context: &RequestContext<RoleServer>) -> Result<opentelemetry::Context, McpError> {
    Ok(calls::parent(context.meta.0.get_traceparent(), &parts(context)?.headers))
}

impl ServerHandler for FrontDoor {
    #[allow(deprecated)] // Logging: see `set_level`.
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_tool_list_changed().enable_resources();
        let capabilities = capabilities.enable_resources_subscribe().enable_resources_list_changed();
        let capabilities = capabilities.enable_prompts().enable_prompts_list_changed().enable_logging();
        let capabilities = capabilities.build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
            .with_instructions("Every tool call is resolved, repaired, validated and run by toolgate.")
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.initialized.swap(true, Ordering::SeqCst) {
            return;
        }
        let changes = self.core.mcp.offer_changes();
        let (core, offers) = (Arc::clone(&self.core), Arc::clone(&self.offers));
        tokio::spawn(offers::tell_offers(core, offers, changes, context.peer.clone()));
        tokio::spawn(tell_changes(self.changes.clone(), context.peer));
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let (principal, _) = caller(&context)?;
        self.offers.seen(&principal.tenant);
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => {
                cursor.parse::<usize>().map_err(|_| McpError::invalid_params("the cursor is not one of ours", None))?
            }
        };
        let catalog = self.core.registry.catalog();
        let mut visible = catalog.visible(&principal.tenant).skip(start);
        let tools: Vec<_> = visible.by_ref().take(PAGE).map(|t| answer::tool(t)).collect();
        let mut page = ListToolsResult::with_all_items(tools);
        page.next_cursor = visible.next().is_some().then(|| (start + PAGE).to_string());
        (page.ttl_ms, page.cache_scope) = (Some(LIST_TTL_MS), Some(CacheScope::Private));
        Ok(page)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let (principal, session) = caller(&context)?;
        let parent = parent_of(&context)?;
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default()).to_string();
        let (name, request_state) = (request.name.into_owned(), request.request_state.as_deref());
        let Cleared { permit, call, ctx, reviewed } = match calls::start(
            &self.core,
            &self.state_key,
            HostCall { principal, session, name, arguments, request_state },
        ) {
            CallStart::Run(cleared) => cleared,
            CallStart::Answered(answered) => return answered,
        };
        let host = Host::of(&context, Arc::clone(&self.log_level), self.confirm_timeout);
        let (asked, progress): (Arc<dyn crate::backend::CallHost>, _) = (host.clone(), host.progress());
        // A host gives up on a call after about a minute: a reviewed call answers at once that it waits.
        let req = CallRequest {
            door: Door::Mcp,
            progress: progress.as_ref(),
            host: Some(&asked),
            ..CallRequest::new(&call, &ctx, None, ReviewMode::Defer)
        };
        // Boxed, as every large future a handler awaits: the SDK moves each request's task by value several times,
        // and the task is as large as the largest handler's future (this one's was 9.5 KB with the executor's
        // inside, 1.7 KB with it boxed).
        let mut run = Box::pin(self.core.executor.execute(req));
        let mut message = in_context(&parent, run.as_mut()).await;
        let modern = context.meta.protocol_version().is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        if reviewed.as_ref().is_some_and(|r| r.confirmable) && !modern && confirm::can_ask(&context.peer) {
            let asked = confirm::ask(&self.core, &context.peer, req, message, self.confirm_timeout);
            message = Box::pin(asked.with_context(parent)).await;
        }
        // Everything the call's server sent before its answer reaches the host before the result.
        host.finish().await;
        drop(permit);
        Ok(calls::answer(&self.state_key, reviewed, modern, message))
    }

    /// The resources of the MCP servers the caller's tenant may see, in one page.
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let (principal, _) = caller(&context)?;
        self.offers.seen(&principal.tenant);
        Ok(ListResourcesResult::with_all_items(Box::pin(self.core.mcp.resources(&principal.tenant)).await))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let (principal, _) = caller(&context)?;
        let templates = Box::pin(self.core.mcp.resource_templates(&principal.tenant)).await;
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let (principal, _) = caller(&context)?;
        let read = Box::pin(self.core.mcp.read_resource(&principal.tenant, &request.uri)).await;
        read.map(ReadResourceResponse::Complete)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let (principal, _) = caller(&context)?;
        self.offers.seen(&principal.tenant);
        Box::pin(self.offers.subscribe(&self.core, &principal.tenant, &request.uri)).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        caller(&context)?;
        Box::pin(self.offers.unsubscribe(&self.core, &request.uri)).await;
        Ok(())
    }

    /// The prompts of the MCP servers the caller's tenant may see, named as their tools are, in one page.
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let (principal, _) = caller(&context)?;
        self.offers.seen(&principal.tenant);
        Ok(ListPromptsResult::with_all_items(Box::pin(self.core.mcp.prompts(&principal.tenant)).await))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let (principal, _) = caller(&context)?;
        let got = Box::pin(self.core.mcp.get_prompt(&principal.tenant, &request.name, request.arguments)).await;
        got.map(GetPromptResponse::Complete)
    }

    /// The lowest level of the servers' log messages this session's host is told from now on. The servers' own
    /// levels are left as they are: a server's session is shared by every host.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        caller(&context)?;
        self.log_level.set(request.level);
        Ok(())
    }

    /// Every change a 2026-07-28 host asks to hear of is one the front door can tell.
    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), McpError> {
        let (principal, _) = caller(subscription.request_context())?;
        Box::pin(listen::listen(Arc::clone(&self.core), subscription, &principal.tenant)).await
    }

    /// The SDK hands over a request whose params it could not read as a custom one: a `tools/call` whose
    /// `arguments` is not an object, say. Its params are invalid (-32602), not its method unknown.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let params = request.params.unwrap_or_default();
        let reason = match request.method.as_str() {
            "tools/call" => match params.get("arguments") {
                Some(arguments) if !arguments.is_object() && !arguments.is_null() => {
                    "tools/call: arguments must be an object of named arguments".to_owned()
                }
                _ => match params.get("name") {
                    Some(serde_json::Value::String(_)) => "tools/call: its params are not valid".to_owned(),
                    _ => "tools/call: params must have the tool's name as a string".to_owned(),
                },
            },
            _ => return Err(McpError::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, request.method, None)),
        };
        Err(McpError::invalid_params(reason, None))
    }
}

/// Sends `notifications/tools/list_changed` to one session at each registry change, until the session ends.
async fn tell_changes(mut changes: tokio::sync::watch::Receiver<()>, peer: Peer<RoleServer>) {
    loop {
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() || peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
            () = tokio::time::sleep(SESSION_CHECK) => {
                if peer.is_transport_closed() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `f` returns, read from its type: `f` is never called.
    fn future_size<A, F: Future>(_: impl FnOnce(A) -> F) -> usize {
        size_of::<F>()
    }

    type Asked<P> = (FrontDoor, P, RequestContext<RoleServer>);

    /// The SDK moves each request's task by value, and the task is as large as the largest handler's future: a
    /// handler that held the executor's (or an MCP server's) future by value made every request of a session copy
    /// kilobytes more, several times over.
    #[test]
    #[allow(deprecated)] // `subscribe`: 2025-11-25 hosts still subscribe.
    fn the_handlers_futures_stay_small() {
        let sizes = [
            (
                "call_tool",
                future_size(|(d, r, c): Asked<CallToolRequestParams>| async move { d.call_tool(r, c).await }),
            ),
            ("read_resource", future_size(|(d, r, c): Asked<_>| async move { d.read_resource(r, c).await })),
            ("get_prompt", future_size(|(d, r, c): Asked<_>| async move { d.get_prompt(r, c).await })),
            ("list_prompts", future_size(|(d, r, c): Asked<_>| async move { d.list_prompts(r, c).await })),
            ("list_resources", future_size(|(d, r, c): Asked<_>| async move { d.list_resources(r, c).await })),
            ("subscribe", future_size(|(d, r, c): Asked<_>| async move { d.subscribe(r, c).await })),
            ("listen", future_size(|(d, s): (FrontDoor, SubscriptionContext)| async move { d.listen(s).await })),
        ];
        for (handler, size) in sizes {
            assert!(size <= LIMIT, "{handler}'s future is {size} bytes: box the large future it awaits");
        }
    }

    /// In a test build, every handler's future is 1.0 to 2.3 KB with what it awaits boxed; `call_tool`'s was 8.4 KB
    /// with the executor's inside, `list_resources`'s 6.6 KB with the MCP servers'.
    const LIMIT: usize = 4096;
}
