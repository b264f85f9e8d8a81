//! The hardening bench's servers: the real `toolgate serve` process (the binary cargo built beside the bench) on a
//! free loopback port with a config of the bench's, and a ToolRuntime in this process whose tools echo or sleep.

use serde_json::Value;
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};
use toolgate::pb::v1::tool_gateway_client::ToolGatewayClient;
use toolgate::pb::v1::tool_registry_client::ToolRegistryClient;
use toolgate::pb::v1::tool_runtime_server::{ToolRuntime, ToolRuntimeServer};
use toolgate::pb::v1::{self as pb};
use toolgate::registry::ToolSpec;

/// A `toolgate serve` child process, killed when dropped.
pub struct Served {
    pub addr: SocketAddr,
    pub channel: Channel,
    child: tokio::process::Child,
    _dir: tempfile::TempDir,
}

impl Served {
    /// Starts the gateway with `extra` TOML in its config and waits until it answers a health check.
    /// `TOOLGATE_BIN` runs another build, for a before-and-after comparison.
    pub async fn start(extra: &str) -> Served {
        let bin = std::env::var_os("TOOLGATE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_toolgate").into());
        Served::start_build(bin.as_ref(), extra).await
    }

    /// `start`, with the build at `bin`.
    pub async fn start_build(bin: &std::path::Path, extra: &str) -> Served {
        let dir = tempfile::tempdir().expect("a temp dir");
        let addr = crate::ports::free_addr();
        let config = format!("listen = \"{addr}\"\ndata_dir = \"{}\"\n{extra}\n", dir.path().join("data").display());
        let path = dir.path().join("toolgate.toml");
        std::fs::write(&path, config).expect("the config is written");
        let child = tokio::process::Command::new(bin)
            .args(["serve", "--config", path.to_str().expect("a UTF-8 path")])
            .env("RUST_LOG", "error")
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("toolgate serve starts");
        let channel = connect(addr).await;
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
        let started = Instant::now();
        while health.check(tonic_health::pb::HealthCheckRequest::default()).await.is_err() {
            assert!(started.elapsed() < Duration::from_secs(20), "the gateway never answered a health check");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Served { addr, channel, child, _dir: dir }
    }

    /// Registers a spec written in the snake_case spec-file form.
    pub async fn register(&self, spec: Value) {
        let spec: ToolSpec = serde_json::from_value(spec).expect("a bench spec parses");
        let request = pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) };
        ToolRegistryClient::new(self.channel.clone()).register_tool(request).await.expect("the tool registers");
    }

    /// A gateway client on a connection of its own.
    pub async fn client(&self) -> ToolGatewayClient<Channel> {
        ToolGatewayClient::new(connect(self.addr).await).max_decoding_message_size(64 * 1024 * 1024)
    }

    /// The process's resident set and its peak so far, in MiB, from `/proc`.
    pub fn memory_mib(&self) -> Option<(f64, f64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()?)).ok()?;
        let field = |name: &str| {
            let line = status.lines().find(|l| l.starts_with(name))?;
            line.split_whitespace().nth(1)?.parse::<f64>().ok().map(|kib| kib / 1024.0)
        };
        Some((field("VmRSS:")?, field("VmHWM:")?))
    }

    /// The process's CPU time so far (user + system, all threads), to the nanosecond, from its CPU-time clock.
    pub fn cpu(&self) -> Option<Duration> {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()?).ok()?);
        Some(nix::time::clock_getcpuclockid(pid).ok()?.now().ok()?.into())
    }
}

/// Connects, retrying while the server starts.
pub async fn connect(addr: SocketAddr) -> Channel {
    let endpoint = Endpoint::from_shared(format!("http://{addr}")).expect("a valid URI");
    for _ in 0..500 {
        if let Ok(channel) = endpoint.connect().await {
            return channel;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{addr} never accepted a connection");
}

/// `echo` answers its arguments; `sleep` waits `{"ms": N}` first.
struct Tools;

#[tonic::async_trait]
impl ToolRuntime for Tools {
    async fn invoke(&self, request: Request<pb::InvokeRequest>) -> Result<Response<pb::InvokeResponse>, Status> {
        let request = request.into_inner();
        if request.tool == "sleep" {
            let args: Value = serde_json::from_str(&request.arguments).unwrap_or_default();
            tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0))).await;
        }
        Ok(Response::new(pb::InvokeResponse { content: request.arguments, ..Default::default() }))
    }
}

/// Starts the ToolRuntime on a free loopback port; answers its target URI.
pub async fn start_tools() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("a local address");
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    tokio::spawn(
        tonic::transport::Server::builder().add_service(ToolRuntimeServer::new(Tools)).serve_with_incoming(incoming),
    );
    format!("http://{addr}")
}

/// Latencies in microseconds, with their percentiles.
#[derive(Debug, Default, Clone)]
pub struct Latencies(pub Vec<u64>);

impl Latencies {
    pub fn add(&mut self, elapsed: Duration) {
        self.0.push(u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX));
    }

    /// The `p`th percentile in milliseconds (nearest rank), 0 when empty.
    pub fn ms(&self, p: f64) -> f64 {
        let mut sorted = self.0.clone();
        sorted.sort_unstable();
        if sorted.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1000.0
    }

    pub fn summary(&self) -> String {
        format!(
            "n={} p50={:.2} ms p99={:.2} ms max={:.2} ms",
            self.0.len(),
            self.ms(50.0),
            self.ms(99.0),
            self.ms(100.0)
        )
    }
}

/// Health checks one at a time, 10 ms apart, for `duration`: their latencies, and any that failed.
pub async fn probe_health(addr: SocketAddr, duration: Duration) -> (Latencies, Vec<String>) {
    let mut health = tonic_health::pb::health_client::HealthClient::new(connect(addr).await);
    let (mut times, mut failures, started) = (Latencies::default(), Vec::new(), Instant::now());
    while started.elapsed() < duration {
        let sent = Instant::now();
        if let Err(status) = health.check(tonic_health::pb::HealthCheckRequest::default()).await {
            failures.push(format!("a health check failed: {status:?}"));
        }
        times.add(sent.elapsed());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (times, failures)
}
