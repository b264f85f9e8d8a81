//! The MCP front door against gRPC `Execute`: the same small call to the same HTTP tool, one at a time, through
//! each door of one gateway in one run, rounds interleaved, the door by a host of each protocol version (2025-11-25
//! in a session, 2026-07-28 without one). Reports p50 and p99 of each, and the front door's p50 and p99 as a
//! multiple of `Execute`'s (target: p50 at most 1.5×). A fourth mode calls the 2026-07-28 door from a bare HTTP
//! host (reqwest posting each call's JSON-RPC body and reading the JSON answer, no MCP SDK), so the door's own
//! cost is told apart from the SDK host's: `Execute`'s host is tonic's lean client, the SDK's host is not. A fifth
//! does the same for 2025-11-25: a bare host that opens one session by hand and reads each call's event stream.
//!
//! Run: `cargo bench --bench mcp_front` (`MCP_FRONT_CALLS=20000 MCP_FRONT_ROUNDS=5`). Without `--bench` (as under
//! `cargo test --benches`) it runs a short smoke pass that fails on a wrong answer.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use std::time::{Duration, Instant};
use toolgate::config::McpFrontSettings;
use toolgate::pb::v1::{self as pb, tool_gateway_client::ToolGatewayClient, tool_registry_client::ToolRegistryClient};

#[path = "../tests/it/support/ports.rs"]
mod ports;
#[path = "e2e_support/serving.rs"]
mod serving;

const ARGUMENTS: &str = r#"{"city": "Oslo", "days": 3}"#;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The HTTP tool: answers the arguments it was posted.
async fn start_tool() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let echo = axum::routing::post(|body: String| async move { ([("content-type", "application/json")], body) });
    tokio::spawn(async move { axum::serve(listener, axum::Router::new().route("/echo", echo)).await });
    format!("http://{addr}/echo")
}

/// The `p` quantile of `sorted`; none of nothing.
fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    sorted.get(((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1))).copied()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let (calls, rounds) =
        if smoke { (50, 1) } else { (env_or("MCP_FRONT_CALLS", 5_000), env_or("MCP_FRONT_ROUNDS", 3)) };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let data = tempfile::tempdir().unwrap();
    let front = ports::free_addr();
    let mut config = toolgate::Config { data_dir: data.path().to_path_buf(), ..toolgate::Config::default() };
    config.mcp_front = McpFrontSettings { listen: Some(front), ..McpFrontSettings::default() };
    config.mcp_front.allowed_hosts = vec!["127.0.0.1".into()];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let channel = serving::gateway(listener, config).await;
    let spec = json!({"name": "forecast", "input_schema": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}}}, "backend": {"http": {"url": start_tool().await}}});
    let spec: toolgate::registry::ToolSpec = serde_json::from_value(spec).unwrap();
    let register = pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) };
    ToolRegistryClient::new(channel.clone()).register_tool(register).await.unwrap();
    let mut gateway = ToolGatewayClient::new(channel);
    let transport = || {
        StreamableHttpClientTransport::with_client(
            reqwest::Client::new(),
            StreamableHttpClientTransportConfig::with_uri(format!("http://{front}/mcp")),
        )
    };
    let host = ().serve(transport()).await.expect("the MCP handshake");
    let modern = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let stateless = ().serve_with_lifecycle(transport(), modern).await.expect("server/discover");
    let arguments: rmcp::model::JsonObject = serde_json::from_str(ARGUMENTS).unwrap();

    let bare = BareHost::new(format!("http://{front}/mcp"));
    let bare_session = BareHost::new(format!("http://{front}/mcp")).in_a_session().await;

    // `MCP_FRONT_ONLY=grpc`, `2025-11-25`, `2026-07-28`, `bare` or `bare-2025` calls through that door alone (to
    // count its instructions under callgrind); the others report nothing.
    let only = std::env::var("MCP_FRONT_ONLY").ok();
    let runs = |door: &str| only.as_deref().is_none_or(|only| only == door);
    let (mut by_grpc, mut by_mcp, mut by_stateless) = (Vec::new(), Vec::new(), Vec::new());
    let (mut by_bare, mut by_bare_session) = (Vec::new(), Vec::new());
    for round in 0..=rounds {
        // Round 0 warms both doors up and is not counted.
        let n = if round == 0 { calls / 5 + 10 } else { calls };
        for _ in 0..n * usize::from(runs("grpc")) {
            let call = pb::ToolCall { id: String::new(), name: "forecast".into(), arguments: ARGUMENTS.into() };
            let started = Instant::now();
            let answer = gateway.execute(pb::ExecuteRequest { call: Some(call), ..Default::default() }).await.unwrap();
            let took = started.elapsed();
            let message = answer.into_inner().message.unwrap();
            assert_eq!(message.status(), pb::ToolStatus::Success, "{message:?}");
            if round > 0 {
                by_grpc.push(took);
            }
        }
        for (door, host, timings) in [("2025-11-25", &host, &mut by_mcp), ("2026-07-28", &stateless, &mut by_stateless)]
        {
            for _ in 0..n * usize::from(runs(door)) {
                let took = call_door(host, &arguments).await;
                if round > 0 {
                    timings.push(took);
                }
            }
        }
        for (door, host, timings) in [("bare", &bare, &mut by_bare), ("bare-2025", &bare_session, &mut by_bare_session)]
        {
            for _ in 0..n * usize::from(runs(door)) {
                let took = host.call().await;
                if round > 0 {
                    timings.push(took);
                }
            }
        }
    }
    let us = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e6);
    let mut rows = Vec::new();
    for timings in [&mut by_grpc, &mut by_mcp, &mut by_stateless, &mut by_bare, &mut by_bare_session] {
        timings.sort();
        rows.push((us(percentile(timings, 0.5)), us(percentile(timings, 0.99))));
    }
    let [(g50, g99), (m50, m99), (s50, s99), (b50, b99), (o50, o99)] = rows[..] else { unreachable!() };
    println!("door                 calls    p50 µs    p99 µs");
    println!("grpc              {:>8}  {g50:>8.0}  {g99:>8.0}", by_grpc.len());
    println!("mcp 2025-11-25    {:>8}  {m50:>8.0}  {m99:>8.0}", by_mcp.len());
    println!("mcp 2026-07-28    {:>8}  {s50:>8.0}  {s99:>8.0}", by_stateless.len());
    println!("mcp bare host     {:>8}  {b50:>8.0}  {b99:>8.0}", by_bare.len());
    println!("mcp bare 2025     {:>8}  {o50:>8.0}  {o99:>8.0}", by_bare_session.len());
    println!("mcp 2025-11-25 / grpc: p50 {:.2}×, p99 {:.2}× (target p50 ≤ 1.5×)", m50 / g50, m99 / g99);
    println!("mcp 2026-07-28 / grpc: p50 {:.2}×, p99 {:.2}× (target p50 ≤ 1.5×)", s50 / g50, s99 / g99);
    println!("mcp bare host / grpc:  p50 {:.2}×, p99 {:.2}× (the door without an SDK host)", b50 / g50, b99 / g99);
    println!("mcp bare 2025 / grpc:  p50 {:.2}×, p99 {:.2}× (2025-11-25 without an SDK host)", o50 / g50, o99 / g99);
    let report = json!({"bench": "mcp_front", "smoke": smoke, "calls": by_mcp.len(),
        "grpc_p50_us": g50, "grpc_p99_us": g99, "mcp_p50_us": m50, "mcp_p99_us": m99,
        "mcp_2026_p50_us": s50, "mcp_2026_p99_us": s99, "bare_p50_us": b50, "bare_p99_us": b99,
        "bare_2025_p50_us": o50, "bare_2025_p99_us": o99});
    println!("{report}");
}

/// One call through the front door: how long it took; fails on a wrong answer.
async fn call_door(host: &RunningService<rmcp::RoleClient, ()>, arguments: &rmcp::model::JsonObject) -> Duration {
    let params = CallToolRequestParams::new("forecast").with_arguments(arguments.clone());
    let started = Instant::now();
    let result = host.call_tool(params).await.unwrap();
    let took = started.elapsed();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(result.structured_content, Some(json!({"city": "Oslo", "days": 3})));
    took
}

/// A host without an SDK. Without a session it speaks 2026-07-28: each `tools/call` written as JSON with its own
/// id and posted with the standard headers, the answer read as JSON. In a session (`in_a_session`) it speaks
/// 2025-11-25: the session opened once by hand, each call posted with its id and read from its event stream.
struct BareHost {
    http: reqwest::Client,
    url: String,
    arguments: serde_json::Value,
    sent: std::sync::atomic::AtomicU64,
    session: Option<String>,
}

impl BareHost {
    fn new(url: String) -> Self {
        let arguments = serde_json::from_str(ARGUMENTS).unwrap();
        Self { http: reqwest::Client::new(), url, arguments, sent: Default::default(), session: None }
    }

    /// The same host with a 2025-11-25 session: `initialize`, then `notifications/initialized`.
    async fn in_a_session(mut self) -> Self {
        let hello = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bare", "version": "0"}}});
        let opened = self.post(&hello, "2025-11-25").send().await.unwrap();
        let session = opened.headers().get("mcp-session-id").expect("a session id").to_str().unwrap().to_owned();
        let answer = last_event(&opened.bytes().await.unwrap());
        assert_eq!(answer["result"]["protocolVersion"], "2025-11-25", "{answer}");
        self.session = Some(session);
        let ready = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.post(&ready, "2025-11-25").send().await.unwrap().status(), 202);
        self
    }

    /// A POST of `body` with the headers every message carries, and the session's if there is one.
    fn post(&self, body: &serde_json::Value, version: &str) -> reqwest::RequestBuilder {
        let post = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", version)
            .body(serde_json::to_vec(body).unwrap());
        match &self.session {
            Some(session) => post.header("mcp-session-id", session),
            None => post,
        }
    }

    /// One call: how long it took, to the answer read; fails on a wrong answer.
    async fn call(&self) -> Duration {
        let started = Instant::now();
        let id = self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut params = json!({"name": "forecast", "arguments": self.arguments});
        if self.session.is_none() {
            params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                     "io.modelcontextprotocol/clientCapabilities": {}});
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let (post, expected, read): (_, _, fn(&[u8]) -> serde_json::Value) = match &self.session {
            Some(_) => (self.post(&body, "2025-11-25"), "text/event-stream", last_event),
            None => {
                let post = self.post(&body, "2026-07-28").header("mcp-method", "tools/call");
                (post.header("mcp-name", "forecast"), "application/json", |bytes| {
                    serde_json::from_slice(bytes).unwrap()
                })
            }
        };
        let sent = post.send().await.unwrap();
        let kind = sent.headers().get("content-type").cloned();
        let answer = read(&sent.bytes().await.unwrap());
        let took = started.elapsed();
        assert_eq!(kind.as_ref().and_then(|k| k.to_str().ok()), Some(expected), "{answer}");
        assert_eq!(answer["id"], json!(id), "{answer}");
        assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
        assert_eq!(answer["result"]["structuredContent"], json!({"city": "Oslo", "days": 3}), "{answer}");
        took
    }
}

/// The last event of an event stream with data, read as JSON (a priming event has none).
fn last_event(stream: &[u8]) -> serde_json::Value {
    let text = std::str::from_utf8(stream).unwrap();
    let mut data = text.lines().filter_map(|line| line.strip_prefix("data:")).filter(|d| !d.trim().is_empty());
    serde_json::from_str(data.next_back().unwrap_or_else(|| panic!("no event with data in {text:?}"))).unwrap()
}
