//! The front door's bounds and identity rules over real HTTP: sessions capped per principal and in all (a 2026-07-28
//! call takes no place), each the opener's alone, reaped sessions answered 404, `Origin` checked against loopback by
//! default, `tools/call` shed by the gateway-wide cap gRPC's calls share, an unanswered confirmation bounded, and a
//! chunked body over the limit refused with 413.

use super::direct::{self, PLAIN, WEIGHED};
use super::{ALICE, BOB, call, client, front_with, text, toolgate_meta, transfer};
use crate::support::backends::{Runtime, start_runtime};
use crate::support::{self, Gateway};
use reqwest::{Method, Response};
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::Duration;

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

/// An MCP request by hand: `token`'s, on `session` when given, with extra `headers`.
async fn send(url: &str, token: &str, method: Method, session: Option<&str>, headers: &[(&str, &str)]) -> Response {
    let mut request = reqwest::Client::new()
        .request(method.clone(), url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let body = match session {
        None => initialize(),
        Some(_) => json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    };
    if method == Method::POST {
        request = request.json(&body);
    }
    request.send().await.expect("the front door answers")
}

/// Opens a session of `token`'s by hand: its id, or the refusal.
async fn open(url: &str, token: &str) -> Result<String, Response> {
    let response = send(url, token, Method::POST, None, &[]).await;
    match response.headers().get("mcp-session-id") {
        Some(id) if response.status() == 200 => Ok(id.to_str().unwrap().to_owned()),
        _ => Err(response),
    }
}

#[tokio::test]
async fn sessions_are_capped_per_principal_and_in_all_and_a_closed_one_frees_its_place() {
    let (_dir, _gw, url) = front_with(|config| {
        config.mcp_front.max_sessions = 3;
        config.mcp_front.max_sessions_per_principal = 2;
    })
    .await;
    let first = open(&url, ALICE).await.expect("a first session");
    open(&url, ALICE).await.expect("a second session");
    let refused = open(&url, ALICE).await.expect_err("a third session of Alice's is one too many");
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "5", "a retry hint");
    assert!(refused.text().await.unwrap().contains("limit of 2 open sessions for this caller"));
    open(&url, BOB).await.expect("Bob has places of his own");
    let refused = open(&url, BOB).await.expect_err("but the door is full");
    assert!(refused.text().await.unwrap().contains("limit of 3 open sessions in all"));

    assert_eq!(send(&url, ALICE, Method::DELETE, Some(&first), &[]).await.status(), 204, "Alice closes one");
    assert_eq!(send(&url, ALICE, Method::POST, Some(&first), &[]).await.status(), 404, "a closed session is gone");
    open(&url, ALICE).await.expect("its place is free again");
}

#[tokio::test]
async fn a_2026_call_takes_no_session_place_and_cannot_open_one() {
    let (_dir, mut gw, url) = front_with(|config| {
        config.mcp_front.max_sessions = 1;
        config.mcp_front.max_sessions_per_principal = 1;
    })
    .await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(transfer(&target, "acme", json!({}))).await.unwrap();
    open(&url, ALICE).await.expect("Alice's one session fills the door");
    assert_eq!(open(&url, BOB).await.expect_err("the door is full").status(), 503);

    // Calls that open no session still run, on the direct path and on the SDK's, several at once.
    let body = direct::call("transfer", json!({"amount": 2}), false);
    let calls = [PLAIN, WEIGHED, PLAIN, WEIGHED].map(|accept| direct::post_as(&url, ALICE, &body, accept, None));
    for (status, _, answer) in futures::future::join_all(calls).await {
        assert_eq!(status, 200, "{answer}");
        assert!(answer.contains(r#""structuredContent":{"amount":2,"user_id":"alice"}"#), "{answer}");
    }

    // An `initialize` whose standard headers name another method is refused before it opens anything; one whose
    // headers say `initialize` still needs a place.
    let mut modern = initialize();
    modern["params"]["protocolVersion"] = json!("2026-07-28");
    let initialize_as = |method: &'static str| {
        let request = reqwest::Client::new().post(&url).bearer_auth(BOB).header("accept", PLAIN);
        let request = request.header("mcp-protocol-version", "2026-07-28").header("mcp-method", method);
        request.json(&modern).send()
    };
    let sneaky = initialize_as("tools/call").await.unwrap();
    assert_eq!(sneaky.status(), 400, "{:?}", sneaky.headers());
    assert!(sneaky.headers().get("mcp-session-id").is_none(), "no session opened");
    assert_eq!(initialize_as("initialize").await.unwrap().status(), 503, "the door is still full");
    // A listen stays open as a session may: it is held to the same caps.
    let listen = initialize_as("subscriptions/listen").await.unwrap();
    assert_eq!(listen.status(), 503, "a listen needs a place");
}

#[tokio::test]
async fn an_idle_session_is_reaped_frees_its_place_and_answers_404() {
    let (_dir, _gw, url) = front_with(|config| {
        config.mcp_front.max_sessions_per_principal = 1;
        config.mcp_front.session_idle = Duration::from_secs(1);
    })
    .await;
    let idle = open(&url, ALICE).await.expect("a session");
    support::eventually(Duration::from_secs(15), "a place freed by the idle session", async || {
        open(&url, ALICE).await.is_ok()
    })
    .await;
    assert_eq!(send(&url, ALICE, Method::POST, Some(&idle), &[]).await.status(), 404, "never a 500");
    assert_eq!(send(&url, ALICE, Method::GET, Some(&idle), &[]).await.status(), 404);
}

#[tokio::test]
async fn a_session_is_its_openers_alone_to_use_listen_on_or_close() {
    let (_dir, _gw, url) = front_with(|_| {}).await;
    let session = open(&url, ALICE).await.unwrap();
    let initialized = reqwest::Client::new()
        .post(&url)
        .bearer_auth(ALICE)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert!(initialized.status().is_success());
    let sse = [("accept", "text/event-stream")];
    for (method, headers) in [(Method::POST, &[][..]), (Method::GET, &sse[..]), (Method::DELETE, &[][..])] {
        let refused = send(&url, BOB, method.clone(), Some(&session), headers).await;
        assert_eq!(refused.status(), 404, "Bob's {method} on Alice's session: as if it did not exist");
    }
    let listed = send(&url, ALICE, Method::POST, Some(&session), &[]).await;
    assert_eq!(listed.status(), 200, "Alice's session is still open");
    assert!(listed.text().await.unwrap().contains(r#""tools":[]"#));
}

#[tokio::test]
async fn host_and_origin_are_checked_with_loopback_allowed_by_default() {
    let (_dir, _gw, url) = front_with(|_| {}).await;
    for origin in ["http://localhost:5173", "http://127.0.0.1", "https://[::1]:8443"] {
        let allowed = send(&url, ALICE, Method::POST, None, &[("origin", origin)]).await;
        assert_eq!(allowed.status(), 200, "{origin}");
    }
    for origin in ["http://evil.example", "null", "http://localhost.evil.example:80"] {
        let refused = send(&url, ALICE, Method::POST, None, &[("origin", origin)]).await;
        assert_eq!(refused.status(), 403, "{origin}");
    }
    let rebound = send(&url, ALICE, Method::POST, None, &[("host", "evil.example")]).await;
    assert_eq!(rebound.status(), 403, "a Host not on the list");
}

/// Starts a gRPC `Execute` of `rendezvous`, held until the test joins it.
fn held_execute(gw: &Gateway) -> tokio::task::JoinHandle<String> {
    let mut grpc = gw.gateway.clone();
    tokio::spawn(async move {
        let call = toolgate::pb::v1::ToolCall { id: "g1".into(), name: "rendezvous".into(), arguments: "{}".into() };
        let request = toolgate::pb::v1::ExecuteRequest { call: Some(call), ..Default::default() };
        grpc.execute(request).await.expect("the held call is answered").into_inner().message.unwrap().content
    })
}

#[tokio::test]
async fn tools_calls_are_shed_by_the_same_cap_as_grpc_calls() {
    let (_dir, mut gw, url) = front_with(|config| config.max_calls_in_flight = 2).await;
    // Three parties: the two calls the gateway lets in, and the test itself, which releases them.
    let runtime = Runtime::with_rendezvous(3);
    let target = start_runtime(runtime.clone()).await;
    // A shared tool: gRPC's calls (of no tenant) and Alice's (of acme) both see it.
    let spec =
        json!({"name": "rendezvous", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}}});
    gw.register(spec).await.unwrap();
    let alice = client(&url, ALICE).await;
    let peer = alice.peer().clone();
    let held_mcp = tokio::spawn(async move {
        let params = rmcp::model::CallToolRequestParams::new("rendezvous");
        peer.call_tool(params).await.expect("the held call is answered")
    });
    let held_grpc = held_execute(&gw);
    support::eventually(Duration::from_secs(15), "both calls inside the tool", async || {
        runtime.calls.load(Ordering::SeqCst) == 2
    })
    .await;

    let shed = call(&alice, "rendezvous", json!({})).await;
    assert_eq!(shed.is_error, Some(true), "{}", text(&shed));
    let error = &toolgate_meta(&shed)["error"];
    assert_eq!((error["kind"].as_str(), error["retryable"].as_bool()), (Some("UNAVAILABLE"), Some(true)), "{error}");
    assert_eq!(error["retry_after_ms"], 100);
    assert!(error["message"].as_str().unwrap().contains("limit of 2 calls in flight"), "{error}");
    let third = toolgate::pb::v1::ToolCall { id: "g2".into(), name: "rendezvous".into(), arguments: "{}".into() };
    let grpc = gw.gateway.execute(toolgate::pb::v1::ExecuteRequest { call: Some(third), ..Default::default() }).await;
    assert_eq!(grpc.expect_err("gRPC is shed too").code(), tonic::Code::Unavailable);
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 2, "shed calls never reached the tool");

    // The test joins the rendezvous itself: the held calls finish, and the door takes calls again.
    let mut direct = toolgate::pb::v1::tool_runtime_client::ToolRuntimeClient::new(
        support::connect(target.trim_start_matches("http://").parse().unwrap()).await,
    );
    let invoke =
        toolgate::pb::v1::InvokeRequest { tool: "rendezvous".into(), arguments: "{}".into(), ..Default::default() };
    direct.invoke(invoke).await.unwrap();
    assert_eq!(text(&held_mcp.await.unwrap()), "met");
    assert_eq!(held_grpc.await.unwrap(), "met");
    gw.register(transfer(&target, "acme", json!({}))).await.unwrap();
    let ran = call(&alice, "transfer", json!({"amount": 1})).await;
    assert_eq!(ran.is_error, Some(false), "room again: {}", text(&ran));
}

/// A host that declared elicitation and never answers it.
#[derive(Clone)]
struct Silent;

impl rmcp::ClientHandler for Silent {
    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        std::future::pending().await
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        let capabilities = rmcp::model::ClientCapabilities::builder().enable_elicitation().build();
        rmcp::model::ClientConfig::new(capabilities, rmcp::model::Implementation::new("silent", "1"))
    }
}

#[tokio::test]
async fn an_unanswered_confirmation_ends_and_the_call_is_answered_as_pending() {
    let (_dir, mut gw, url) = front_with(|config| config.mcp_front.confirm_timeout = Duration::from_secs(1)).await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    let review = json!({"review": {"required": true, "caller_may_confirm": true}});
    gw.register(transfer(&target, "acme", review)).await.unwrap();
    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(ALICE);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    let host = Silent.serve(transport).await.unwrap();
    let answered = tokio::time::timeout(Duration::from_secs(30), call(&host, "transfer", json!({"amount": 3})));
    let result = answered.await.expect("tools/call is answered once the confirmation times out");
    assert_eq!(toolgate_meta(&result)["status"], "PENDING_REVIEW", "left to a reviewer: {}", text(&result));
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 0);
    assert_eq!(host.list_all_tools().await.expect("the session goes on").len(), 1);
}

#[tokio::test]
async fn a_chunked_body_over_the_limit_is_413() {
    let (_dir, _gw, url) = front_with(|config| config.max_request_bytes = 64 * 1024).await;
    let addr: std::net::SocketAddr = url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();
    // HTTP/2 has no length but the frames: the body is streamed, as chunked HTTP/1.1 would be.
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut h2, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let request = http::Request::post(url.as_str())
        .header("authorization", format!("Bearer {ALICE}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(())
        .unwrap();
    let (response, mut body) = h2.send_request(request, false).unwrap();
    tokio::spawn(async move {
        for _ in 0..16 {
            if body.send_data(bytes::Bytes::from(vec![b' '; 8 * 1024]), false).is_err() {
                return;
            }
        }
        let _ = body.send_data(bytes::Bytes::new(), true);
    });
    let response = tokio::time::timeout(Duration::from_secs(30), response).await.expect("answered").unwrap();
    assert_eq!(response.status(), 413, "a streamed body over limits.max_request_bytes");
}
