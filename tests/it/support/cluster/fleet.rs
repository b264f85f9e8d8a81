//! A fleet of real `toolgate serve` processes on one Redis, each with its own data directory and clients.

use serde_json::Value;
use std::net::SocketAddr;
use std::process::Stdio;
use tempfile::TempDir;
use tonic::transport::Channel;
use toolgate::pb::v1::tool_review_client::ToolReviewClient;
use toolgate::pb::v1::{self as pb, tool_gateway_client::ToolGatewayClient, tool_registry_client::ToolRegistryClient};
use toolgate::registry::ToolSpec;

/// One gateway process and its clients.
pub struct Node {
    pub addr: SocketAddr,
    pub gateway: ToolGatewayClient<Channel>,
    pub registry: ToolRegistryClient<Channel>,
    pub review: ToolReviewClient<Channel>,
    pub health: tonic_health::pb::health_client::HealthClient<Channel>,
    child: tokio::process::Child,
    dir: TempDir,
}

/// Starts `count` gateways on `redis_url` under `prefix`, with `extra` TOML appended to each config.
pub async fn start(count: usize, redis_url: &str, prefix: &str, extra: &str) -> Vec<Node> {
    let mut nodes = Vec::new();
    for _ in 0..count {
        nodes.push(Node::start(redis_url, prefix, extra).await);
    }
    nodes
}

impl Node {
    pub async fn start(redis_url: &str, prefix: &str, extra: &str) -> Self {
        Self::start_with_env(redis_url, prefix, extra, &[]).await
    }

    /// `start`, with `env` set in the process's environment (the variables `[[mcp_front.tokens]]` name).
    pub async fn start_with_env(redis_url: &str, prefix: &str, extra: &str, env: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let addr = crate::support::free_addr();
        // The call-id record is off: these tests send different calls under one id, and count Redis round trips.
        let config = format!(
            "listen = \"{addr}\"\ndata_dir = \"{}\"\n{extra}\n[cluster]\nredis_url = \"{redis_url}\"\nkey_prefix = \"{prefix}\"\nsync_interval_ms = 200\nop_timeout_ms = 5000\n[idempotency]\nwindow_ms = 0\n",
            dir.path().join("data").display()
        );
        std::fs::write(dir.path().join("toolgate.toml"), config).unwrap();
        Self::launch(addr, dir, env).await
    }

    /// Starts `toolgate serve` on the `toolgate.toml` in `dir`, whose `listen` is `addr`, with `env` set, and waits
    /// until it serves.
    pub async fn launch(addr: SocketAddr, dir: TempDir, env: &[(&str, &str)]) -> Self {
        let path = dir.path().join("toolgate.toml");
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["serve", "--config", path.to_str().unwrap()])
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("TOOLGATE_REDIS_URL")
            .env("RUST_LOG", std::env::var("TOOLGATE_TEST_LOG").unwrap_or_else(|_| "warn".into()))
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("toolgate serve starts");
        let channel = crate::support::connect(addr).await;
        crate::support::wait_serving(channel.clone()).await;
        let health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
        Self {
            addr,
            gateway: ToolGatewayClient::new(channel.clone()),
            registry: ToolRegistryClient::new(channel.clone()),
            review: ToolReviewClient::new(channel),
            health,
            child,
            dir,
        }
    }

    pub async fn register(&mut self, spec: Value) -> Result<pb::ToolSpec, tonic::Status> {
        let spec: ToolSpec = serde_json::from_value(spec).expect("a test spec parses");
        let request = pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) };
        Ok(self.registry.register_tool(request).await?.into_inner().tool.expect("a registered tool"))
    }

    pub async fn delete(&mut self, name: &str) -> Result<(), tonic::Status> {
        let request = pb::DeleteToolRequest { name: name.into(), ..Default::default() };
        self.registry.delete_tool(request).await.map(drop)
    }

    /// The tool's version as this gateway serves it, `None` when it has none.
    pub async fn version(&mut self, name: &str) -> Option<u64> {
        let request = pb::GetToolRequest { name: name.into(), ..Default::default() };
        self.registry.get_tool(request).await.ok().and_then(|r| r.into_inner().tool).map(|t| t.version)
    }

    pub async fn call(&mut self, id: &str, name: &str, arguments: &str, context: pb::CallContext) -> pb::ToolMessage {
        let call = pb::ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() };
        let request = pb::ExecuteRequest { call: Some(call), context: Some(context), ..Default::default() };
        let response = self.gateway.execute(request).await.expect("Execute answers with a message, never a status");
        response.into_inner().message.expect("a message")
    }

    /// The status of the `toolgate.cluster` health service.
    pub async fn cluster_health(&mut self) -> i32 {
        let request = tonic_health::pb::HealthCheckRequest { service: "toolgate.cluster".into() };
        self.health.check(request).await.map(|r| r.into_inner().status).unwrap_or(-1)
    }

    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }

    /// SIGKILL, keeping the address and the directory (config and data) for a `launch` as the same gateway.
    pub async fn kill_keeping(mut self) -> (SocketAddr, TempDir) {
        let _ = self.child.kill().await;
        (self.addr, self.dir)
    }
}
