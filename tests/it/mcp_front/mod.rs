//! The MCP front door over real HTTP: the official Rust SDK's client (`rmcp`) against a gateway's `/mcp`, with
//! tools on a real gRPC ToolRuntime. What an MCP host sees, and what it can never do.

mod blocks;
mod direct;
mod limits;
mod listen;
mod offers;
mod relay;
mod review_state;

pub(crate) use review_state::{leg_of, state_of};

use crate::support;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::{Gateway, start_gateway, temp_config};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use tempfile::TempDir;
use toolgate::config::{McpFrontSettings, Principal};

const ALICE: &str = "alice-token";
const BOB: &str = "bob-token";

/// A gateway with a front door on a free port: Alice's token speaks for acme, Bob's for globex.
async fn front() -> (TempDir, Gateway, String) {
    front_with(|_| {}).await
}

/// `front`, with the config changed by `change` first.
async fn front_with(change: impl FnOnce(&mut toolgate::config::Config)) -> (TempDir, Gateway, String) {
    toolgate::tls::install_provider(); // the process-wide rustls provider the gateway installs too
    let (dir, mut config) = temp_config();
    let addr = support::free_addr();
    let principal =
        |tenant: &str, user: &str| Principal { tenant: tenant.into(), user_id: user.into(), ..Principal::default() };
    config.mcp_front = McpFrontSettings {
        listen: Some(addr),
        allowed_hosts: vec!["127.0.0.1".into(), "localhost".into()],
        tokens: vec![(ALICE.into(), principal("acme", "alice")), (BOB.into(), principal("globex", "bob"))],
        jwt: None,
        ..McpFrontSettings::default()
    };
    change(&mut config);
    let gw = start_gateway(config).await;
    (dir, gw, format!("http://{addr}/mcp"))
}

async fn client(url: &str, token: &str) -> RunningService<RoleClient, ()> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    ().serve(transport).await.expect("the MCP handshake with the front door")
}

/// A transfer tool of `tenant`: the model writes `amount`; `user_id` is injected from the caller.
fn transfer(target: &str, tenant: &str, extra: Value) -> Value {
    let mut spec = json!({
        "name": "transfer",
        "tenant": tenant,
        "description": "Moves money.",
        "input_schema": {"type": "object", "additionalProperties": false, "required": ["amount", "user_id"],
            "properties": {"amount": {"type": "integer"}, "user_id": {"type": "string"}}},
        "inject": [{"param": "user_id", "from": "user_id"}],
        "backend": {"grpc": {"target": target}},
    });
    spec.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    spec
}

async fn call<H: rmcp::ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    arguments: Value,
) -> CallToolResult {
    let arguments: JsonObject = serde_json::from_value(arguments).unwrap();
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    client.call_tool(params).await.expect("tools/call answers with a result")
}

fn text(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect()
}

fn toolgate_meta(result: &CallToolResult) -> Value {
    result.meta.as_ref().and_then(|m| m.0.get("dev.toolgate/call")).cloned().expect("toolgate's _meta on every result")
}

#[tokio::test]
async fn a_host_lists_only_its_tenants_tools_without_their_injected_parameters() {
    let (_dir, mut gw, url) = front().await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(transfer(&target, "acme", json!({}))).await.unwrap();
    gw.register(transfer(&target, "globex", json!({"name": "globex.payroll", "limits": {"idempotent": true}})))
        .await
        .unwrap();

    let alice = client(&url, ALICE).await;
    let tools = alice.list_all_tools().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["transfer"], "globex's tool is invisible to acme");
    let schema = Value::Object((*tools[0].input_schema).clone());
    assert_eq!(schema["properties"], json!({"amount": {"type": "integer"}}), "user_id is not the model's to set");
    assert_eq!(schema["required"], json!(["amount"]));

    let page = alice.list_tools(None).await.unwrap();
    assert_eq!((page.ttl_ms, page.cache_scope), (Some(30_000), Some(rmcp::model::CacheScope::Private)), "kept alone");

    let bob = client(&url, BOB).await;
    let tools = bob.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "globex_payroll", "the provider-safe name a host accepts");
    assert_eq!(tools[0].annotations.as_ref().and_then(|a| a.idempotent_hint), Some(true));
    let unknown = call(&bob, "transfer", json!({"amount": 1})).await;
    assert_eq!(unknown.is_error, Some(true), "acme's tool answers as a missing one");
    assert!(text(&unknown).contains("transfer is not a valid tool"), "{}", text(&unknown));
    assert_eq!(toolgate_meta(&unknown)["error"]["suggestions"], json!([]), "no name of another tenant suggested");
}

#[tokio::test]
async fn a_call_runs_repaired_as_the_tokens_user_and_an_invalid_one_never_reaches_the_tool() {
    let (_dir, mut gw, url) = front().await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    gw.register(transfer(&target, "acme", json!({}))).await.unwrap();
    let alice = client(&url, ALICE).await;

    let repaired = call(&alice, "transfer", json!({"amount": "5", "user_id": "mallory"})).await;
    assert_eq!(repaired.is_error, Some(false), "{}", text(&repaired));
    assert_eq!(repaired.structured_content, Some(json!({"amount": 5, "user_id": "alice"})), "the principal's user");
    let meta = toolgate_meta(&repaired);
    let rules: Vec<_> = meta["repairs"].as_array().unwrap().iter().map(|r| r["rule"].as_str().unwrap()).collect();
    assert_eq!(rules, ["injected_override_removed", "string_to_integer"]);
    assert_eq!(meta["effective_arguments"], json!({"amount": 5}));
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 1);

    let invalid = call(&alice, "transfer", json!({"amount": "lots"})).await;
    assert_eq!(invalid.is_error, Some(true));
    assert!(text(&invalid).contains("amount"), "the model-facing text names the parameter: {}", text(&invalid));
    assert_eq!(invalid.structured_content, None, "an error is never structured content");
    let error = &toolgate_meta(&invalid)["error"];
    assert_eq!((error["kind"].as_str(), error["model_fixable"].as_bool()), (Some("INVALID_ARGUMENTS"), Some(true)));
    assert_eq!(error["violations"][0]["instance_path"], "/amount");
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 1, "the tool never saw the invalid call");
}

#[tokio::test]
async fn a_rate_limited_call_is_an_error_result_with_its_retry_hint() {
    let (_dir, mut gw, url) = front().await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(transfer(&target, "acme", json!({"limits": {"rate": "1/m", "key": "USER"}}))).await.unwrap();
    let alice = client(&url, ALICE).await;
    assert_eq!(call(&alice, "transfer", json!({"amount": 1})).await.is_error, Some(false));
    let limited = call(&alice, "transfer", json!({"amount": 1})).await;
    assert_eq!(limited.is_error, Some(true));
    let error = &toolgate_meta(&limited)["error"];
    assert_eq!((error["kind"].as_str(), error["retryable"].as_bool()), (Some("RATE_LIMITED"), Some(true)));
    assert!(error["retry_after_ms"].as_u64().unwrap() > 0, "{error}");
}

#[tokio::test]
async fn no_token_or_a_wrong_one_is_refused_with_a_challenge_and_bad_requests_get_clear_errors() {
    let (_dir, gw, url) = front().await;
    let http = reqwest::Client::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let post = |token: Option<&str>, body: String| {
        let mut request = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    for (token, challenge) in [
        (None, "Bearer"),
        (Some("not-a-token"), r#"Bearer error="invalid_token", error_description="the bearer token is not valid""#),
    ] {
        let refused = post(token, initialize.to_string()).await.unwrap();
        assert_eq!(refused.status(), 401, "{token:?}");
        assert_eq!(refused.headers()["www-authenticate"], challenge, "no error code without a token (RFC 6750)");
    }
    let lower_case = http
        .post(&url)
        .header("authorization", format!("bearer {ALICE}"))
        .header("accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(lower_case.status(), 200, "the scheme is case-insensitive");
    let huge = format!("{{\"pad\": \"{}\"}}", "x".repeat(9 * 1024 * 1024));
    assert_eq!(post(Some(ALICE), huge).await.unwrap().status(), 413, "a body over limits.max_request_bytes");
    let early = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x", "arguments": {}}});
    let refused = post(Some(ALICE), early.to_string()).await.unwrap();
    assert!(refused.status().is_client_error(), "tools/call before initialize: {}", refused.status());

    // A session of our own, by hand, to send what no SDK client would.
    let opened = post(Some(ALICE), initialize.to_string()).await.unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let welcome = opened.text().await.unwrap();
    assert!(welcome.contains(r#""protocolVersion":"2025-11-25""#), "2025-11-25 is negotiated: {welcome}");
    let in_session = |body: Value| {
        http.post(&url)
            .bearer_auth(ALICE)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string())
            .send()
    };
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(in_session(initialized).await.unwrap().status().is_success());
    let not_object = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "transfer", "arguments": [1, 2]}});
    let answer = in_session(not_object).await.unwrap().text().await.unwrap();
    assert!(answer.contains(r#""id":3,"error":{"code":-32602"#), "invalid params, not an unknown method: {answer}");
    assert!(answer.contains("arguments must be an object"), "{answer}");
    let batch: Vec<Value> =
        (0..1000).map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}})).collect();
    let refused = in_session(Value::Array(batch)).await.unwrap();
    let status = refused.status();
    let body = refused.text().await.unwrap();
    assert!(status.is_client_error() || body.contains("\"error\""), "a batch is refused: {status} {body:.200}");

    let alice = client(&url, ALICE).await;
    assert_eq!(alice.list_all_tools().await.expect("the gateway still serves").len(), 0);
    drop(gw);
}

/// A host that counts the `tools/list_changed` notifications it gets.
#[derive(Clone, Default)]
struct Watcher {
    changed: std::sync::Arc<tokio::sync::Notify>,
}

impl rmcp::ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }
}

#[tokio::test]
async fn a_host_hears_of_each_registry_change() {
    let (_dir, mut gw, url) = front().await;
    let target = start_runtime(Runtime::default()).await;
    let watcher = Watcher::default();
    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(ALICE);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    let host = watcher.clone().serve(transport).await.unwrap();
    assert!(host.list_all_tools().await.unwrap().is_empty());

    gw.register(transfer(&target, "acme", json!({}))).await.unwrap();
    let heard = tokio::time::timeout(std::time::Duration::from_secs(10), watcher.changed.notified()).await;
    assert!(heard.is_ok(), "notifications/tools/list_changed after a registration");
    assert_eq!(host.list_all_tools().await.unwrap().len(), 1);
}

async fn pending_of(gw: &mut Gateway) -> Vec<toolgate::pb::v1::PendingReview> {
    let request = toolgate::pb::v1::ListPendingRequest { tenant: "acme".into(), all_tenants: false };
    gw.review.list_pending(request).await.unwrap().into_inner().pending
}

async fn decide(gw: &mut Gateway, call_id: &str, action: toolgate::pb::v1::ReviewAction, feedback: &str) {
    let request = toolgate::pb::v1::DecideRequest {
        call_id: call_id.into(),
        tenant: "acme".into(),
        action: action.into(),
        arguments: String::new(),
        feedback: feedback.into(),
        reviewer: "mcp-front-test".into(),
    };
    gw.review.decide(request).await.expect("the decision is accepted");
}

#[tokio::test]
async fn a_reviewed_call_pends_then_calling_again_in_any_session_gets_the_decision_and_the_tool_runs_once() {
    use toolgate::pb::v1::ReviewAction;
    let (_dir, mut gw, url) = front().await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    gw.register(transfer(&target, "acme", json!({"review": {"required": true}}))).await.unwrap();
    let alice = client(&url, ALICE).await;

    let first = call(&alice, "transfer", json!({"amount": 9})).await;
    assert_eq!(first.is_error, Some(true));
    assert!(text(&first).contains("waiting for a person") && text(&first).contains("again"), "{}", text(&first));
    assert_eq!(toolgate_meta(&first)["status"], "PENDING_REVIEW");
    let pending = pending_of(&mut gw).await;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].user_id, "alice");
    let still = call(&alice, "transfer", json!({"amount": 9})).await;
    assert_eq!(toolgate_meta(&still)["status"], "PENDING_REVIEW", "still pending, and not queued twice");
    // A host that opens a session per call (LangChain's `MultiServerMCPClient`) finds the same review.
    let elsewhere = call(&client(&url, ALICE).await, "transfer", json!({"amount": 9})).await;
    assert_eq!(toolgate_meta(&elsewhere)["status"], "PENDING_REVIEW", "{}", text(&elsewhere));
    assert_eq!(pending_of(&mut gw).await.len(), 1, "one review, whichever session asks");

    decide(&mut gw, &pending[0].call_id, ReviewAction::Approve, "").await;
    let ran = call(&client(&url, ALICE).await, "transfer", json!({"amount": 9})).await;
    assert_eq!(ran.is_error, Some(false), "{}", text(&ran));
    assert_eq!(ran.structured_content, Some(json!({"amount": 9, "user_id": "alice"})));
    let again = call(&alice, "transfer", json!({"amount": 9})).await;
    assert_eq!(again.structured_content, ran.structured_content, "the outcome, kept");
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 1, "the approved tool ran once");

    let refused = call(&alice, "transfer", json!({"amount": 1000})).await;
    assert_eq!(toolgate_meta(&refused)["status"], "PENDING_REVIEW");
    let id = pending_of(&mut gw).await[0].call_id.clone();
    decide(&mut gw, &id, ReviewAction::Reject, "too much at once").await;
    let feedback = call(&alice, "transfer", json!({"amount": 1000})).await;
    assert_eq!(feedback.is_error, Some(true));
    assert!(text(&feedback).contains("too much at once"), "{}", text(&feedback));
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 1, "a rejected call never runs");
}

/// A host whose user answers every confirmation with `answer`.
#[derive(Clone)]
struct Asker {
    answer: rmcp::model::ElicitationAction,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for Asker {
    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        if let rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.asked.lock().unwrap().push(message);
        }
        Ok(rmcp::model::ElicitResult::new(self.answer.clone()))
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        let capabilities = rmcp::model::ClientCapabilities::builder().enable_elicitation().build();
        rmcp::model::ClientConfig::new(capabilities, rmcp::model::Implementation::new("asker", "1"))
    }
}

#[tokio::test]
async fn a_tool_the_caller_may_confirm_asks_the_user_and_runs_or_not_on_their_answer() {
    use rmcp::model::ElicitationAction;
    let (_dir, mut gw, url) = front().await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    let review = json!({"review": {"required": true, "caller_may_confirm": true}});
    gw.register(transfer(&target, "acme", review)).await.unwrap();

    // Each answer to a call of its own: the same call again, in any session, gets the first one's outcome.
    for (answer, amount, runs) in [(ElicitationAction::Accept, 3, 1), (ElicitationAction::Decline, 5, 1)] {
        let asker = Asker { answer: answer.clone(), asked: Default::default() };
        let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(ALICE);
        let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
        let host = asker.clone().serve(transport).await.unwrap();
        let result = call(&host, "transfer", json!({"amount": amount})).await;
        let asked = asker.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "the user was asked once");
        assert!(asked[0].contains("transfer") && asked[0].contains(&format!("\"amount\":{amount}")), "{asked:?}");
        match answer {
            ElicitationAction::Accept => {
                assert_eq!(result.is_error, Some(false), "{}", text(&result));
                assert_eq!(result.structured_content, Some(json!({"amount": 3, "user_id": "alice"})));
            }
            _ => {
                assert_eq!(result.is_error, Some(true));
                assert!(text(&result).contains("the user declined the call"), "{}", text(&result));
            }
        }
        assert_eq!(runtime.calls.load(Ordering::SeqCst), runs, "accepted: ran once; declined: never");
    }
    // A host that cannot ask leaves the call to a reviewer.
    let plain = client(&url, ALICE).await;
    let pending = call(&plain, "transfer", json!({"amount": 4})).await;
    assert_eq!(toolgate_meta(&pending)["status"], "PENDING_REVIEW");
}
