//! toolgate's MCP front door against the closest Rust peer, mcp-proxy 0.6 (crates.io; a tower-based MCP proxy), on
//! the same backend and the same calls: an MCP echo server (rmcp, Streamable HTTP, in this process) called
//! directly, through toolgate (imported with no prefix, served at `/mcp`, a 2025-11-25 host and a 2026-07-28 one)
//! and through mcp-proxy (a child process, the backend as `b/echo`), one call at a time, rounds interleaved. Each
//! call has arguments of its own, so no cache answers it. Reports p50 and p99 of each and their ratios to the
//! direct call. toolgate validates each call against the tool's schema and traces it; mcp-proxy, as configured
//! here, forwards it.
//!
//! Run: `MCP_PROXY_BIN=<path> cargo bench --bench mcp_peer` (`MCP_PEER_CALLS=5000 MCP_PEER_ROUNDS=3`); mcp-proxy
//! from `cargo install mcp-proxy --version 0.6.0`, else the one on `PATH`. Without `--bench` (as under
//! `cargo test --benches`) a short pass checks the direct and toolgate answers; the full run fails without
//! mcp-proxy, saying how to get it.

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleClient, RoleServer, ServiceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "../tests/it/support/ports.rs"]
mod ports;
#[path = "e2e_support/serving.rs"]
mod serving;

type Host = RunningService<RoleClient, ()>;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The backend: one tool, `echo`, answering its `text`.
#[derive(Clone)]
struct Echo;

impl rmcp::ServerHandler for Echo {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(rmcp::model::ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<rmcp::model::PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
        let tool = rmcp::model::Tool::new("echo", "Answers its text.", Arc::new(schema.as_object().unwrap().clone()));
        Ok(rmcp::model::ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let text = request.arguments.and_then(|a| a.get("text")?.as_str().map(str::to_owned)).unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// Serves `Echo` at `/mcp` on 127.0.0.1, with no delay (Nagle and delayed ACKs would hold each answer 40 ms):
/// its URL.
async fn start_backend() -> String {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let listener = listener.tap_io(|tcp| tcp.set_nodelay(true).unwrap());
    let sessions = Arc::new(rmcp::transport::streamable_http_server::session::local::LocalSessionManager::default());
    let service = StreamableHttpService::new(|| Ok(Echo), sessions, StreamableHttpServerConfig::default());
    tokio::spawn(async move { axum::serve(listener, axum::Router::new().route_service("/mcp", service)).await });
    format!("http://{addr}/mcp")
}

/// A gateway importing the backend with no prefix, its front door on a port of its own: the door's URL.
async fn start_toolgate(backend: &str, data: &std::path::Path) -> String {
    let front = ports::free_addr();
    let mut config = toolgate::Config { data_dir: data.to_path_buf(), ..toolgate::Config::default() };
    config.mcp_front = toolgate::config::McpFrontSettings { listen: Some(front), ..Default::default() };
    config.mcp_front.allowed_hosts = vec!["127.0.0.1".into()];
    config.mcp_servers = vec![serde_json::from_value(json!({"name": "peer", "url": backend, "prefix": ""})).unwrap()];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    serving::gateway(listener, config).await;
    format!("http://{front}/mcp")
}

/// mcp-proxy with the backend as `b`, in a process of its own (killed when the handle drops): its URL. Fails
/// saying how to get it when it cannot be started.
async fn start_proxy(backend: &str, dir: &std::path::Path) -> (tokio::process::Child, String) {
    let port = ports::free_addr().port();
    let config = dir.join("proxy.toml");
    let toml = format!(
        "[proxy]\nname = \"bench\"\nseparator = \"/\"\n[proxy.listen]\nhost = \"127.0.0.1\"\nport = {port}\n\n\
         [observability]\nlog_level = \"warn\"\n\n\
         [[backends]]\nname = \"b\"\ntransport = \"http\"\nurl = \"{backend}\"\n"
    );
    std::fs::write(&config, toml).unwrap();
    let bin = std::env::var("MCP_PROXY_BIN").unwrap_or_else(|_| "mcp-proxy".into());
    let child = tokio::process::Command::new(&bin)
        .arg("--config")
        .arg(&config)
        .kill_on_drop(true)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "mcp-proxy ({bin}): {e}; `cargo install mcp-proxy --version 0.6.0` builds it, MCP_PROXY_BIN names it"
            )
        });
    (child, format!("http://127.0.0.1:{port}/"))
}

/// A host at `url` once it lists `tool` (an import or a proxy takes a moment): 2025-11-25 in a session, or
/// 2026-07-28 without one.
async fn host(url: &str, tool: &str, stateless: bool) -> Host {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let transport = StreamableHttpClientTransport::with_client(
            reqwest::Client::new(),
            StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
        );
        let host = match stateless {
            false => ().serve(transport).await.ok(),
            true => {
                let modern = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
                ().serve_with_lifecycle(transport, modern).await.ok()
            }
        };
        if let Some(host) = host {
            let listed = host.list_all_tools().await.unwrap_or_default();
            if listed.iter().any(|t| t.name == tool) {
                return host;
            }
        }
        assert!(Instant::now() < deadline, "{url} did not list {tool} within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One call of `tool` with a text of its own: how long it took; fails on a wrong answer.
async fn call(host: &Host, tool: &str, n: usize) -> Duration {
    let text = format!("call {n}");
    let arguments: JsonObject = serde_json::from_value(json!({"text": text})).unwrap();
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    let started = Instant::now();
    let result = host.call_tool(params).await.unwrap();
    let took = started.elapsed();
    assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
    assert_eq!(result.content.first().and_then(|c| c.as_text()).map(|t| t.text.as_str()), Some(text.as_str()));
    took
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)].as_secs_f64() * 1e6
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (calls, rounds) = if full { (env_or("MCP_PEER_CALLS", 5_000), env_or("MCP_PEER_ROUNDS", 3)) } else { (50, 1) };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let backend = start_backend().await;
    let door = start_toolgate(&backend, dir.path()).await;
    let mut modes: Vec<(&str, Host, &str)> = vec![
        ("direct", host(&backend, "echo", false).await, "echo"),
        ("toolgate 2025-11-25", host(&door, "echo", false).await, "echo"),
        ("toolgate 2026-07-28", host(&door, "echo", true).await, "echo"),
    ];
    let _proxy = match full {
        true => {
            let (child, url) = start_proxy(&backend, dir.path()).await;
            modes.push(("mcp-proxy 0.6", host(&url, "b/echo", false).await, "b/echo"));
            Some(child)
        }
        false => None,
    };
    let mut timings = vec![Vec::new(); modes.len()];
    let mut n = 0;
    for round in 0..=rounds {
        // Round 0 warms every path up and is not counted.
        let count = if round == 0 { calls / 5 + 10 } else { calls };
        for turn in 0..modes.len() {
            let mode = (round + turn) % modes.len();
            let (_, host, tool) = &modes[mode];
            for _ in 0..count {
                n += 1;
                let took = call(host, tool, n).await;
                if round > 0 {
                    timings[mode].push(took);
                }
            }
        }
    }
    report(&modes, &mut timings, full);
}

fn report(modes: &[(&str, Host, &str)], timings: &mut [Vec<Duration>], full: bool) {
    for timing in timings.iter_mut() {
        timing.sort();
    }
    let (d50, d99) = (percentile(&timings[0], 0.5), percentile(&timings[0], 0.99));
    println!("{:<22} {:>8} {:>9} {:>9} {:>11} {:>11}", "path", "calls", "p50 µs", "p99 µs", "p50/direct", "p99/direct");
    let mut rows = serde_json::Map::new();
    for ((name, _, _), timing) in modes.iter().zip(timings.iter()) {
        let (p50, p99) = (percentile(timing, 0.5), percentile(timing, 0.99));
        println!("{name:<22} {:>8} {p50:>9.0} {p99:>9.0} {:>10.2}× {:>10.2}×", timing.len(), p50 / d50, p99 / d99);
        rows.insert((*name).to_owned(), json!({"p50_us": p50, "p99_us": p99}));
    }
    println!("{}", json!({"bench": "mcp_peer", "smoke": !full, "paths": rows}));
}
