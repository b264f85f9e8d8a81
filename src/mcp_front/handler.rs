//! The MCP server a host talks to: `tools/list` shows the caller's tenant's tools, `tools/call` runs a call
//! through the same executor as `Execute`, with the context taken from the caller's principal alone; resources
//! and prompts are the imported MCP servers' that the caller's tenant may see.

use super::SESSION_CHECK;
use super::offers::{self, SessionOffers};
use super::{answer, confirm};
use crate::backend::{Progress, ProgressSink};
use crate::config::Principal;
use crate::executor::{CallRequest, ReviewMode};
use crate::handles::Core;
use crate::pipeline::{self, CallContext, ToolCall};
use crate::telemetry::{Door, propagation};
use opentelemetry::context::FutureExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, GetPromptRequestParams, GetPromptResponse,
    Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// Tools in one page of `tools/list`.
const PAGE: usize = 200;

/// Progress reports of one call waiting to reach its host; past it, reports are dropped.
const PROGRESS_BACKLOG: usize = 64;

/// The method a shed `tools/call` is counted under in `toolgate.calls.shed`.
const SHED_METHOD: &str = "mcp tools/call";

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
}

impl FrontDoor {
    pub fn new(core: Arc<Core>, confirm_timeout: std::time::Duration) -> Self {
        let changes = core.registry.changes();
        Self { core, confirm_timeout, changes, offers: Arc::default() }
    }

    /// A copy for a new session: the registry's changes are followed from now.
    pub fn for_session(&self) -> Self {
        Self { changes: self.core.registry.changes(), offers: Arc::default(), ..self.clone() }
    }

    /// MCP has no call id: a call to a tool that needs review gets one from who calls (with the session their
    /// token names, if it names one), which tool and which arguments, so that calling again with the same
    /// arguments picks up the reviewer's decision (and the tool runs once) while the review is kept
    /// (`review.keep_decided`). Not the MCP session: hosts such as LangChain's open one per call. Other calls get
    /// none, so the same call made twice runs twice. Also answers whether the tool lets the user confirm the call.
    fn review_id(&self, principal: &Principal, name: &str, arguments: &str) -> (String, bool) {
        let tenant = principal.tenant.as_str();
        let tool = pipeline::exact_tool(&self.core.registry.catalog(), tenant, name);
        let Some(tool) = tool.filter(|t| t.spec.review.required) else { return (String::new(), false) };
        let mut digest = Sha256::new();
        let session = principal.values.get("session_id").map_or("", String::as_str);
        for part in [tenant, principal.user_id.as_str(), session, tool.spec.name.as_str(), arguments] {
            digest.update(part.len().to_le_bytes());
            digest.update(part.as_bytes());
        }
        let hex: String = digest.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect();
        (format!("mcp-{hex}"), tool.spec.review.caller_may_confirm)
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
    let mut trace = http::HeaderMap::new();
    match context.meta.0.get_traceparent().and_then(|t| http::HeaderValue::from_str(t).ok()) {
        Some(traceparent) => {
            trace.insert("traceparent", traceparent);
        }
        None => {
            let headers = &parts(context)?.headers;
            for name in ["traceparent", "tracestate"] {
                if let Some(value) = headers.get(name) {
                    trace.insert(name, value.clone());
                }
            }
        }
    }
    Ok(propagation::extract(&tonic::metadata::MetadataMap::from_headers(trace)))
}

impl ServerHandler for FrontDoor {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_tool_list_changed().enable_resources();
        let capabilities = capabilities.enable_resources_subscribe().enable_resources_list_changed();
        let capabilities = capabilities.enable_prompts().enable_prompts_list_changed();
        let capabilities = capabilities.build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
            .with_instructions("Every tool call is resolved, repaired, validated and run by toolgate.")
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
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
        Ok(page)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let (principal, session) = caller(&context)?;
        let parent = parent_of(&context)?;
        // Held until the call is answered; past the gateway-wide cap the call is refused at once, as on gRPC.
        let Some(_permit) = self.core.shedding.try_enter(SHED_METHOD) else {
            return Ok(CallToolResponse::Complete(answer::shed(&request.name, self.core.shedding.max())));
        };
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default()).to_string();
        let name = request.name.into_owned();
        let (id, confirmable) = self.review_id(&principal, &name, &arguments);
        // A reviewed call is the same call in any MCP session, so it is not of one: its session is the one the
        // token names, else its user's, so its budgets and a per-session rate limit still hold across retries.
        let own = match id.is_empty() {
            true => session,
            false if principal.user_id.is_empty() => String::new(),
            false => format!("mcp-user:{}", principal.user_id),
        };
        let session_id = principal.values.get("session_id").cloned().unwrap_or(own);
        let call = ToolCall { id, name, arguments };
        let ctx =
            CallContext { tenant: principal.tenant, user_id: principal.user_id, session_id, values: principal.values };
        let (progress, told) = progress_of(&context);
        // A host gives up on a call after about a minute: a reviewed call answers at once that it waits.
        let req = CallRequest {
            door: Door::Mcp,
            progress: progress.as_ref(),
            ..CallRequest::new(&call, &ctx, None, ReviewMode::Defer)
        };
        let mut message = self.core.executor.execute(req).with_context(parent.clone()).await;
        if confirmable && confirm::can_ask(&context.peer) {
            let asked = confirm::ask(&self.core, &context.peer, req, message, self.confirm_timeout);
            message = asked.with_context(parent).await;
        }
        drop(progress);
        if let Some(told) = told {
            let _ = told.await;
        }
        Ok(CallToolResponse::Complete(answer::result(message)))
    }

    /// The resources of the MCP servers the caller's tenant may see, in one page.
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let (principal, _) = caller(&context)?;
        self.offers.seen(&principal.tenant);
        Ok(ListResourcesResult::with_all_items(self.core.mcp.resources(&principal.tenant).await))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let (principal, _) = caller(&context)?;
        Ok(ListResourceTemplatesResult::with_all_items(self.core.mcp.resource_templates(&principal.tenant).await))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let (principal, _) = caller(&context)?;
        let read = self.core.mcp.read_resource(&principal.tenant, &request.uri).await;
        read.map(ReadResourceResponse::Complete)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let (principal, _) = caller(&context)?;
        self.offers.seen(&principal.tenant);
        self.offers.subscribe(&self.core, &principal.tenant, &request.uri).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        caller(&context)?;
        self.offers.unsubscribe(&self.core, &request.uri).await;
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
        Ok(ListPromptsResult::with_all_items(self.core.mcp.prompts(&principal.tenant).await))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let (principal, _) = caller(&context)?;
        let got = self.core.mcp.get_prompt(&principal.tenant, &request.name, request.arguments).await;
        got.map(GetPromptResponse::Complete)
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

/// Where a call's progress goes when the host asked to hear it (a `progressToken`), and the task that tells the
/// host: the call's handler drops the sink and waits for the task, so all of it arrives before the result.
fn progress_of(context: &RequestContext<RoleServer>) -> (Option<ProgressSink>, Option<tokio::task::JoinHandle<()>>) {
    let Some(token) = context.meta.get_progress_token() else { return (None, None) };
    let (sink, reports) = tokio::sync::mpsc::channel(PROGRESS_BACKLOG);
    (Some(sink), Some(tokio::spawn(tell_progress(reports, token, context.peer.clone()))))
}

/// Passes a call's progress on to the host, under the host's token, until the call ends. The SDK handles each
/// notification from a server in a task of its own, so reports may come out of order: one that would not increase
/// the progress the host was told is dropped, as the protocol has progress only increase.
async fn tell_progress(
    mut reports: tokio::sync::mpsc::Receiver<Progress>,
    token: ProgressToken,
    peer: Peer<RoleServer>,
) {
    let mut told = f64::NEG_INFINITY;
    while let Some(report) = reports.recv().await {
        if report.progress <= told {
            continue;
        }
        told = report.progress;
        let mut note = ProgressNotificationParam::new(token.clone(), report.progress);
        (note.total, note.message) = (report.total, report.message);
        if peer.notify_progress(note).await.is_err() {
            return;
        }
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
