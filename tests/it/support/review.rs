//! Helpers shared by the review tests: a reviewed tool on a real ToolRuntime, Execute in either mode, and the
//! reviewers' calls (list, poll, decide).

use crate::support::backends::{Runtime, start_runtime};
use crate::support::{Gateway, start_gateway};
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tempfile::TempDir;
use tonic::transport::Channel;
use toolgate::Config;
use toolgate::pb::v1::tool_review_client::ToolReviewClient;
use toolgate::pb::v1::{self as pb, ReviewAction, ReviewMode, tool_gateway_client::ToolGatewayClient};

/// The name of the reviewed tool; the test runtime echoes any name it does not know.
pub const TOOL: &str = "deploy";
pub const TENANT: &str = "acme";
/// The arguments the model writes in most tests.
pub const ARGS: &str = r#"{"service": "api", "replicas": 2}"#;
/// An upper bound on anything the server should do promptly.
pub const PROMPT: Duration = Duration::from_secs(10);

/// A gateway with `deploy` registered (review required, `user_id` injected) on a runtime that counts its calls.
pub struct Reviewed {
    pub dir: TempDir,
    pub config: Config,
    pub gw: Gateway,
    pub runtime: Runtime,
    pub target: String,
}

impl Reviewed {
    pub async fn start() -> Self {
        let (dir, config) = crate::support::temp_config();
        let mut gw = start_gateway(config.clone()).await;
        let runtime = Runtime::default();
        let target = start_runtime(runtime.clone()).await;
        gw.register(spec(&target)).await.expect("the reviewed tool registers");
        Self { dir, config, gw, runtime, target }
    }

    /// How many times the backend ran.
    pub fn runs(&self) -> usize {
        self.runtime.calls.load(Ordering::SeqCst)
    }

    pub fn client(&self) -> ToolGatewayClient<Channel> {
        self.gw.gateway.clone()
    }

    pub fn reviewer(&self) -> ToolReviewClient<Channel> {
        self.gw.review.clone()
    }
}

pub fn spec(target: &str) -> Value {
    json!({
        "name": TOOL,
        "tenant": TENANT,
        "input_schema": {"type": "object", "additionalProperties": false, "required": ["service", "user_id"],
            "properties": {
                "service": {"type": "string"},
                "replicas": {"type": "integer", "minimum": 1},
                "user_id": {"type": "string"}}},
        "inject": [{"param": "user_id", "from": "user_id"}],
        "review": {"required": true},
        "backend": {"grpc": {"target": target}},
    })
}

pub fn context(tenant: &str) -> pb::CallContext {
    pb::CallContext { tenant: tenant.into(), user_id: "alice".into(), session_id: "s1".into(), ..Default::default() }
}

/// An Execute of `deploy` in `mode`, for tenant `acme`, bounded by `timeout` (the gRPC deadline).
pub fn request(id: &str, arguments: &str, mode: ReviewMode, timeout: Duration) -> tonic::Request<pb::ExecuteRequest> {
    request_as(id, arguments, mode, timeout, TENANT)
}

pub fn request_as(
    id: &str,
    arguments: &str,
    mode: ReviewMode,
    timeout: Duration,
    tenant: &str,
) -> tonic::Request<pb::ExecuteRequest> {
    let call = pb::ToolCall { id: id.into(), name: TOOL.into(), arguments: arguments.into() };
    let message = pb::ExecuteRequest { call: Some(call), context: Some(context(tenant)), review_mode: mode.into() };
    let mut request = tonic::Request::new(message);
    request.set_timeout(timeout);
    request
}

pub async fn execute(
    mut client: ToolGatewayClient<Channel>,
    request: tonic::Request<pb::ExecuteRequest>,
) -> pb::ToolMessage {
    let response = client.execute(request).await.expect("Execute answers with a message, never a status");
    response.into_inner().message.expect("a message")
}

/// A DEFER Execute, which must answer at once.
pub async fn defer(client: ToolGatewayClient<Channel>, id: &str, arguments: &str) -> pb::ToolMessage {
    execute(client, request(id, arguments, ReviewMode::Defer, PROMPT)).await
}

/// Starts a WAIT Execute in a task of its own.
pub fn spawn_wait(
    client: ToolGatewayClient<Channel>,
    id: &str,
    arguments: &str,
) -> tokio::task::JoinHandle<pb::ToolMessage> {
    let request = request(id, arguments, ReviewMode::Wait, Duration::from_secs(30));
    tokio::spawn(execute(client, request))
}

/// Awaits a spawned Execute, at most `PROMPT`.
pub async fn answer(task: tokio::task::JoinHandle<pb::ToolMessage>) -> pb::ToolMessage {
    tokio::time::timeout(PROMPT, task).await.expect("the waiting Execute answers once decided").expect("no panic")
}

pub async fn list(reviewer: &mut ToolReviewClient<Channel>, tenant: &str, all: bool) -> Vec<pb::PendingReview> {
    let request = pb::ListPendingRequest { tenant: tenant.into(), all_tenants: all };
    reviewer.list_pending(request).await.expect("ListPending answers").into_inner().pending
}

/// Polls ListPending of tenant `acme` until `call_id` shows up; a bounded number of tries.
pub async fn until_pending(reviewer: &mut ToolReviewClient<Channel>, call_id: &str) -> pb::PendingReview {
    for _ in 0..500 {
        if let Some(found) = list(reviewer, TENANT, false).await.into_iter().find(|p| p.call_id == call_id) {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{call_id} never showed up in ListPending");
}

/// The call ids pending for tenant `acme`, oldest first.
pub async fn pending_ids(reviewer: &mut ToolReviewClient<Channel>) -> Vec<String> {
    list(reviewer, TENANT, false).await.into_iter().map(|p| p.call_id).collect()
}

pub async fn decide(
    reviewer: &mut ToolReviewClient<Channel>,
    tenant: &str,
    call_id: &str,
    action: ReviewAction,
    text: &str,
) -> Result<pb::PendingReview, tonic::Status> {
    let (arguments, feedback) = match action {
        ReviewAction::Edit => (text.to_owned(), String::new()),
        _ => (String::new(), text.to_owned()),
    };
    let request = pb::DecideRequest {
        call_id: call_id.into(),
        tenant: tenant.into(),
        action: action.into(),
        arguments,
        feedback,
        reviewer: String::new(),
    };
    Ok(reviewer.decide(request).await?.into_inner().decided.expect("the decided call"))
}

pub async fn approve(reviewer: &mut ToolReviewClient<Channel>, call_id: &str) -> pb::PendingReview {
    decide(reviewer, TENANT, call_id, ReviewAction::Approve, "").await.expect("the approval is accepted")
}

/// The parts of a message that must not change when the same outcome is answered again.
pub fn outcome(m: &pb::ToolMessage) -> (i32, String, String, Option<pb::ToolError>, String, String) {
    (
        m.status,
        m.content.clone(),
        m.structured.clone(),
        m.error.clone(),
        m.effective_arguments.clone(),
        m.tool_call_id.clone(),
    )
}

pub fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{text:?} is not JSON: {e}"))
}
