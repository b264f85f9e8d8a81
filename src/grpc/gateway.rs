//! `toolgate.v1.ToolGateway`: the data plane. Every call answers with a `ToolMessage`, never a gRPC error.

use super::auth::claims;
use super::status::ServiceError;
use crate::definitions::{self, DefinitionFormat};
use crate::executor::{CallRequest, Executor, OwnedCall, ReviewMode};
use crate::pb::v1::{self as pb, tool_gateway_server::ToolGateway};
use crate::pipeline::{CallContext, CallError, MAX_TEXT_BYTES, TextFormat, ToolCall};
use crate::registry::Registry;
use crate::telemetry::{in_context, propagation};
use crate::tls::PeerIdentity;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status};

pub struct GatewayService {
    executor: Arc<Executor>,
    /// The tools, for their definitions.
    registry: Arc<Registry>,
    max_batch_calls: usize,
}

impl GatewayService {
    pub fn new(executor: Arc<Executor>, registry: Arc<Registry>, max_batch_calls: usize) -> Self {
        Self { executor, registry, max_batch_calls }
    }
}

impl GatewayService {
    /// One `Execute`: served here for the listener's own path (`execute.rs`) and for the tonic service alike.
    pub async fn execute_request(
        &self,
        metadata: &MetadataMap,
        peer: Option<&PeerIdentity>,
        req: pb::ExecuteRequest,
    ) -> Result<pb::ExecuteResponse, ServiceError> {
        let deadline = deadline_of(metadata);
        let parent = propagation::extract(metadata);
        let call = ToolCall::from(req.call.ok_or_else(|| ServiceError::BadRequest("call is required".into()))?);
        let ctx = CallContext::from(req.context.unwrap_or_default());
        claims(peer, &ctx.tenant)?;
        let mode = review_mode(req.review_mode);
        // Lent whole: a recorded call's run shares it rather than copying the call and its context.
        let lent = Arc::new(OwnedCall { call, ctx });
        let execute = std::pin::pin!(self.executor.execute(CallRequest::lent(&lent, deadline, mode)));
        let message = in_context(&parent, execute).await;
        Ok(pb::ExecuteResponse { message: Some(message.into()) })
    }
}

#[tonic::async_trait]
impl ToolGateway for GatewayService {
    async fn execute(&self, request: Request<pb::ExecuteRequest>) -> Result<Response<pb::ExecuteResponse>, Status> {
        let (metadata, extensions, req) = request.into_parts();
        Ok(Response::new(self.execute_request(&metadata, extensions.get(), req).await?))
    }

    async fn execute_batch(
        &self,
        request: Request<pb::ExecuteBatchRequest>,
    ) -> Result<Response<pb::ExecuteBatchResponse>, Status> {
        let deadline = deadline_of(request.metadata());
        let parent = propagation::extract(request.metadata());
        let peer = request.extensions().get::<PeerIdentity>().cloned();
        let req = request.into_inner();
        if req.calls.len() > self.max_batch_calls {
            let reason = format!("a batch holds at most {} calls, got {}", self.max_batch_calls, req.calls.len());
            return Err(ServiceError::BadRequest(reason).into());
        }
        let calls: Vec<_> = req.calls.into_iter().map(ToolCall::from).collect();
        let ctx = CallContext::from(req.context.unwrap_or_default());
        claims(peer.as_ref(), &ctx.tenant)?;
        let mode = review_mode(req.review_mode);
        let execute = std::pin::pin!(self.executor.execute_batch(&calls, &ctx, deadline, mode));
        let messages = in_context(&parent, execute).await;
        Ok(Response::new(pb::ExecuteBatchResponse {
            messages: messages.into_iter().map(pb::ToolMessage::from).collect(),
        }))
    }

    async fn calls_from_text(
        &self,
        request: Request<pb::CallsFromTextRequest>,
    ) -> Result<Response<pb::CallsFromTextResponse>, Status> {
        let deadline = deadline_of(request.metadata());
        let parent = propagation::extract(request.metadata());
        let peer = request.extensions().get::<PeerIdentity>().cloned();
        let req = request.into_inner();
        let ctx = CallContext::from(req.context.unwrap_or_default());
        claims(peer.as_ref(), &ctx.tenant)?;
        if req.run && req.call_id_prefix.trim().is_empty() {
            let reason = "call_id_prefix is required with run: the calls' ids are made from it".to_owned();
            return Err(ServiceError::BadRequest(reason).into());
        }
        if req.text.len() > MAX_TEXT_BYTES {
            let reason = format!("text is {} bytes; at most {MAX_TEXT_BYTES} are read for calls", req.text.len());
            return Err(ServiceError::BadRequest(reason).into());
        }
        let format = match req.format.trim() {
            "" => TextFormat::of_model(&req.model),
            named => TextFormat::parse(named).map_err(ServiceError::BadRequest)?,
        };
        let found = self.executor.calls_in_text(&ctx, req.text, format, req.tools, deadline).await;
        let mut found = found.map_err(|error| match error {
            CallError::Timeout { after_ms } => ServiceError::DeadlineExceeded(format!(
                "the deadline passed after {after_ms} ms, before the text was read"
            )),
            CallError::Unavailable(reason) => ServiceError::Busy(reason),
            other => ServiceError::Internal(format!("reading the text failed: {other}")),
        })?;
        let messages = if req.run && !found.calls.is_empty() {
            let mode = review_mode(req.review_mode);
            let prefix = &req.call_id_prefix;
            let run = std::pin::pin!(self.executor.run_text_calls(&mut found, prefix, &ctx, deadline, mode));
            in_context(&parent, run).await
        } else {
            Vec::new()
        };
        let mut answer = pb::CallsFromTextResponse::from(found);
        answer.format = format.name().to_owned();
        answer.messages = messages.into_iter().map(pb::ToolMessage::from).collect();
        Ok(Response::new(answer))
    }

    async fn list_tool_definitions(
        &self,
        request: Request<pb::ListToolDefinitionsRequest>,
    ) -> Result<Response<pb::ListToolDefinitionsResponse>, Status> {
        let peer = request.extensions().get::<PeerIdentity>().cloned();
        let req = request.into_inner();
        let format = match pb::DefinitionFormat::try_from(req.format) {
            Ok(pb::DefinitionFormat::Openai) => DefinitionFormat::OpenAi,
            Ok(pb::DefinitionFormat::Anthropic) => DefinitionFormat::Anthropic,
            Ok(pb::DefinitionFormat::Mcp) => DefinitionFormat::Mcp,
            Ok(pb::DefinitionFormat::JsonSchema) => DefinitionFormat::JsonSchema,
            Ok(pb::DefinitionFormat::Unspecified) | Err(_) => {
                return Err(ServiceError::BadRequest(
                    "format is required: OPENAI, ANTHROPIC, MCP or JSON_SCHEMA".into(),
                )
                .into());
            }
        };
        let ctx = CallContext::from(req.context.unwrap_or_default());
        claims(peer.as_ref(), &ctx.tenant)?;
        let catalog = self.registry.catalog();
        let definitions = catalog
            .visible(&ctx.tenant)
            .map(|tool| definitions::render(tool, format))
            .map(|d| pb::ToolDefinition { name: d.name, tool: d.tool, definition: d.definition.to_string() })
            .collect();
        Ok(Response::new(pb::ListToolDefinitionsResponse { definitions }))
    }
}

fn review_mode(mode: i32) -> ReviewMode {
    match pb::ReviewMode::try_from(mode).unwrap_or_default() {
        pb::ReviewMode::Defer => ReviewMode::Defer,
        pb::ReviewMode::Wait | pb::ReviewMode::Unspecified => ReviewMode::Wait,
    }
}

/// The most the gateway keeps back from a caller's deadline to send its answer.
const DEADLINE_MARGIN: Duration = Duration::from_millis(100);

/// The caller's deadline, from its `grpc-timeout`, a little early: a message that arrives after the caller gave
/// up is lost.
fn deadline_of(metadata: &MetadataMap) -> Option<Instant> {
    let timeout = crate::wire::status::timeout(metadata.as_ref())?;
    let margin = (timeout / 5).min(DEADLINE_MARGIN);
    Instant::now().checked_add(timeout - margin)
}
