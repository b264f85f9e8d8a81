//! What an MCP server asks of, and tells, the host of a call through the front door: its sampling request reaches
//! the host that made the call, if that host declared sampling, and is refused for one that did not, and for a
//! 2026-07-28 host, which cannot answer it on its call's stream, saying so; its log messages reach that host alone,
//! at the level the host set.
#![allow(deprecated)] // Logging is deprecated by SEP-2577 from 2026-07-28 on; the hosts that log speak 2025-11-25.

use super::{ALICE, BOB, call, front_with, text};
use crate::support::mcp::{CONNECT_TIMEOUT, HttpServer};
use rmcp::model::{
    ClientCapabilities, ClientInfo, CreateMessageRequestParams, CreateMessageResult, Implementation, LoggingLevel,
    LoggingMessageNotificationParam, ProtocolVersion, SetLevelRequestParams,
};
use rmcp::service::RunningService;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RoleClient};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolgate::backend::mcp::McpServerSpec;

/// A host whose model answers every sampling request with "hi from <name>", if it declares sampling, and which
/// keeps the log messages it is told.
struct Host {
    name: &'static str,
    sampling: bool,
    logs: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Host {
    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let answer = json!({"role": "assistant", "content": {"type": "text", "text": format!("hi from {}", self.name)},
                            "model": "test-model", "stopReason": "endTurn"});
        Ok(serde_json::from_value(answer).unwrap())
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().unwrap().push(params.data.as_str().unwrap_or_default().to_owned());
    }

    fn get_info(&self) -> ClientInfo {
        let capabilities = if self.sampling { json!({"sampling": {}}) } else { json!({}) };
        let capabilities: ClientCapabilities = serde_json::from_value(capabilities).unwrap();
        ClientInfo::new(capabilities, Implementation::new(self.name, "1"))
    }
}

async fn host(url: &str, token: &str, host: Host) -> RunningService<RoleClient, Host> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    host.serve(transport).await.expect("the MCP handshake with the front door")
}

/// The same host on 2026-07-28: no session, its capabilities sent with every request.
async fn stateless_host(url: &str, token: &str, host: Host) -> RunningService<RoleClient, Host> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    let modern = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    host.serve_with_lifecycle(transport, modern).await.expect("server/discover at the front door")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn a_servers_requests_and_logs_reach_the_host_of_the_call_and_no_other() {
    let server = HttpServer::start().await;
    // Shared by every tenant, so that two hosts of two tenants call the same tool on one session of the server.
    let spec: McpServerSpec = serde_json::from_value(json!({"name": "memo", "url": server.url})).unwrap();
    let (_dir, _gw, url) = front_with(|config| {
        config.connect_timeout = CONNECT_TIMEOUT;
        config.mcp_servers = vec![spec];
    })
    .await;
    let (alice_logs, bob_logs) = (Arc::default(), Arc::default());
    let alice = host(&url, ALICE, Host { name: "alice", sampling: true, logs: Arc::clone(&alice_logs) }).await;
    let bob = host(&url, BOB, Host { name: "bob", sampling: false, logs: Arc::clone(&bob_logs) }).await;
    crate::support::eventually(CONNECT_TIMEOUT, "the memo server's tools imported", async || {
        let tools = alice.list_all_tools().await.unwrap();
        tools.iter().any(|t| t.name == "memo__ask_model")
    })
    .await;
    alice.set_level(SetLevelRequestParams::new(LoggingLevel::Info)).await.unwrap();
    bob.set_level(SetLevelRequestParams::new(LoggingLevel::Error)).await.unwrap();

    let (asked, refused) = tokio::join!(
        call(&alice, "memo__ask_model", json!({"prompt": "alice's question"})),
        call(&bob, "memo__ask_model", json!({"prompt": "bob's question"})),
    );
    assert_eq!(text(&asked), "the model said: hi from alice", "{asked:?}");
    let refused = text(&refused);
    assert!(refused.starts_with("refused:") && refused.contains("did not declare sampling"), "{refused}");
    // Declaring sampling is not enough on 2026-07-28: such a host cannot answer a request on its call's stream, so
    // it is refused, saying why (not that the host did not declare sampling, which it did).
    let modern = Host { name: "carol", sampling: true, logs: Arc::default() };
    let modern = stateless_host(&url, ALICE, modern).await;
    let refused = text(&call(&modern, "memo__ask_model", json!({"prompt": "carol's question"})).await);
    assert!(refused.starts_with("refused:") && refused.contains("multi-round-trip"), "{refused}");

    // Log messages travel on the host's own stream, beside the calls' answers: they get a moment to arrive.
    crate::support::eventually(Duration::from_secs(5), "Alice told her call's log message", async || {
        !alice_logs.lock().unwrap().is_empty()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(*alice_logs.lock().unwrap(), ["asking the model: alice's question"], "hers alone");
    assert!(bob_logs.lock().unwrap().is_empty(), "Bob asked for errors only: {:?}", bob_logs.lock().unwrap());
}
