//! A real `toolgate serve` process: spawned on a temp data dir and a free port, probed, measured from
//! `/proc/<pid>/status`, and stopped with SIGTERM as an orchestrator would.

use std::fs::File;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
use toolgate::pb::v1 as pb;
use toolgate::pb::v1::tool_gateway_client::ToolGatewayClient;

/// How long a start or a stop may take before the run fails.
const PATIENCE: Duration = Duration::from_secs(60);
/// Room for ListToolDefinitions with every tool (about 1 KB each).
const MAX_MESSAGE: usize = 256 << 20;

pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    spawned: Instant,
}

/// When a freshly spawned server first answered health, and when it first listed every tool.
pub struct Ready {
    pub serving: Duration,
    /// Resident memory once serving, before ListToolDefinitions renders every definition.
    pub serving_rss_mib: f64,
    pub listed: Duration,
}

impl Server {
    /// Starts `toolgate serve` on `data_dir`, its output appended to `log`, with no inherited config or tokens.
    pub fn spawn(data_dir: &Path, log: &Path) -> Result<Self, String> {
        let addr = crate::ports::free_addr();
        let out = File::options().create(true).append(true).open(log).map_err(|e| format!("log: {e}"))?;
        let err = out.try_clone().map_err(|e| format!("log: {e}"))?;
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command.arg("serve").arg("--listen").arg(addr.to_string()).arg("--data-dir").arg(data_dir);
        for var in ["TOOLGATE_CONFIG", "TOOLGATE_ADMIN_TOKEN", "TOOLGATE_DATA_TOKEN", "OTEL_EXPORTER_OTLP_ENDPOINT"] {
            command.env_remove(var);
        }
        command.env("RUST_LOG", "info").stdin(Stdio::null()).stdout(out).stderr(err);
        let spawned = Instant::now();
        let child = command.spawn().map_err(|e| format!("spawn toolgate: {e}"))?;
        Ok(Self { child, addr, spawned })
    }

    /// Waits until health says SERVING and ListToolDefinitions lists `tools` definitions, timed from the spawn.
    pub async fn ready(&mut self, tools: usize) -> Result<Ready, String> {
        let channel = self.connect().await?;
        let mut health = HealthClient::new(channel.clone());
        loop {
            let status = health.check(HealthCheckRequest { service: String::new() }).await;
            if status.is_ok_and(|s| s.into_inner().status == ServingStatus::Serving as i32) {
                break;
            }
            self.pause().await?;
        }
        let serving = self.spawned.elapsed();
        let serving_rss_mib = self.rss_mib()?;
        let listed = list_definitions(channel).await?;
        if listed != tools {
            return Err(format!("ListToolDefinitions listed {listed} tools, expected {tools}"));
        }
        Ok(Ready { serving, serving_rss_mib, listed: self.spawned.elapsed() })
    }

    /// A channel to the server, once it accepts connections.
    pub async fn connect(&mut self) -> Result<Channel, String> {
        let endpoint = Endpoint::from_shared(format!("http://{}", self.addr)).map_err(|e| e.to_string())?;
        loop {
            if let Ok(channel) = endpoint.connect().await {
                return Ok(channel);
            }
            self.pause().await?;
        }
    }

    /// A short wait between probes; fails if the process died or the start takes too long.
    async fn pause(&mut self) -> Result<(), String> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Err(format!("toolgate exited during start: {status}"));
        }
        if self.spawned.elapsed() > PATIENCE {
            return Err(format!("toolgate did not serve within {PATIENCE:?}"));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
        Ok(())
    }

    /// Resident memory, in MiB, as the kernel reports it (`VmRSS`).
    pub fn rss_mib(&self) -> Result<f64, String> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).map_err(|e| e.to_string())?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).ok_or("no VmRSS line")?;
        let kib: f64 = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).ok_or("unreadable VmRSS")?;
        Ok(kib / 1024.0)
    }

    /// SIGTERM, then waits for a clean exit.
    pub fn terminate(mut self) -> Result<(), String> {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().map_err(|e| format!("kill: {e}"))?;
        if !sent.success() {
            return Err(format!("kill -TERM {pid} failed"));
        }
        let asked = Instant::now();
        while asked.elapsed() < PATIENCE {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => return Err(format!("toolgate exited with {status} after SIGTERM")),
                #[expect(clippy::disallowed_methods, reason = "the bench's own thread, waiting for the child to exit")]
                _ => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        Err(format!("toolgate still running {PATIENCE:?} after SIGTERM"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The number of definitions a tenant-less caller sees.
pub async fn list_definitions(channel: Channel) -> Result<usize, String> {
    let mut gateway = ToolGatewayClient::new(channel).max_decoding_message_size(MAX_MESSAGE);
    let request = pb::ListToolDefinitionsRequest { format: pb::DefinitionFormat::Openai as i32, ..Default::default() };
    let response = gateway.list_tool_definitions(request).await.map_err(|e| format!("ListToolDefinitions: {e}"))?;
    Ok(response.into_inner().definitions.len())
}
