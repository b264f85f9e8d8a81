//! What the suites share: the real gateway on 127.0.0.1:0 and its clients, `toolgate serve` processes, free ports
//! and waits; real tool servers in `backends`, and a module for each subject the suites of that subject share.

pub mod alone;
pub mod backends;
pub mod cluster;
pub mod console;
pub mod deploy;
pub mod helm;
pub mod idempotency;
pub mod mcp;
pub mod meter;
pub mod otlp;
pub mod policy;
mod ports;
pub mod review;
pub mod tls;

use serde_json::Value;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tempfile::TempDir;
use tokio::io::{AsyncBufRead, Lines};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::Channel;
use toolgate::Config;
use toolgate::pb::v1::tool_review_client::ToolReviewClient;
use toolgate::pb::v1::{self as pb, tool_gateway_client::ToolGatewayClient, tool_registry_client::ToolRegistryClient};
use toolgate::policy::Clock;
use toolgate::registry::ToolSpec;

pub use ports::free_addr;

/// A running gateway with connected clients. Dropping it without `stop` just aborts the server.
pub struct Gateway {
    pub addr: SocketAddr,
    pub gateway: ToolGatewayClient<Channel>,
    pub registry: ToolRegistryClient<Channel>,
    pub review: ToolReviewClient<Channel>,
    shutdown: Option<oneshot::Sender<()>>,
    handle: JoinHandle<Result<(), toolgate::app::ServeError>>,
}

/// A fresh data directory and the default config pointing at it.
pub fn temp_config() -> (TempDir, Config) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = Config { data_dir: dir.path().to_path_buf(), ..Config::default() };
    (dir, config)
}

pub async fn start_gateway(config: Config) -> Gateway {
    start_gateway_with_clock(config, Clock::real()).await
}

/// The gateway with the clock its rate limits and budgets read: a fake one lets tests move time by hand.
pub async fn start_gateway_with_clock(config: Config, clock: Clock) -> Gateway {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let mut handle = tokio::spawn(toolgate::run_with_clock(listener, config, clock, async {
        let _ = rx.await;
    }));
    let serving = async {
        let channel = connect(addr).await;
        wait_serving(channel.clone()).await;
        channel
    };
    // A start that fails (a side door's port taken, say) ends the task: say why, not that nothing answered.
    let channel = tokio::select! {
        channel = serving => channel,
        ended = &mut handle => panic!("the gateway at {addr} stopped before it served: {ended:?}"),
    };
    Gateway {
        addr,
        gateway: ToolGatewayClient::new(channel.clone()),
        registry: ToolRegistryClient::new(channel.clone()),
        review: ToolReviewClient::new(channel),
        shutdown: Some(tx),
        handle,
    }
}

/// Connects, retrying until the server at `addr` accepts. An in-process gateway binds before its task is spawned,
/// so that is at once; a `toolgate serve` child process must first exec and bind, which on a loaded machine can
/// take seconds. So the budget is generous: it costs nothing when the server is there, as the first success returns.
pub async fn connect(addr: SocketAddr) -> Channel {
    let within = Duration::from_secs(30);
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap();
    let deadline = Instant::now() + within;
    loop {
        match endpoint.connect().await {
            Ok(channel) => return channel,
            Err(err) if Instant::now() >= deadline => {
                panic!("nothing accepted a connection at {addr} within {within:?} (no gateway listens there): {err:?}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// Waits until the gateway answers a health check: the kernel accepts connections on the listener before `run`
/// has opened its store, started its MCP servers and bound its metrics endpoint.
pub async fn wait_serving(channel: Channel) {
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    for _ in 0..250 {
        if health.check(tonic_health::pb::HealthCheckRequest::default()).await.is_ok() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the gateway never answered a health check");
}

impl Gateway {
    /// Shuts the server down gracefully and waits until the store is closed.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        drop(self.gateway);
        drop(self.registry);
        drop(self.review);
        self.handle.await.expect("server task").expect("server ran cleanly");
    }

    /// Registers a spec written as JSON in the snake_case spec-file form.
    pub async fn register(&mut self, spec: Value) -> Result<pb::ToolSpec, tonic::Status> {
        let spec: ToolSpec = serde_json::from_value(spec).expect("a test spec parses");
        let request = pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) };
        Ok(self.registry.register_tool(request).await?.into_inner().tool.expect("a registered tool"))
    }

    pub async fn call(&mut self, name: &str, arguments: &str) -> pb::ToolMessage {
        self.call_as(name, arguments, pb::CallContext::default()).await
    }

    pub async fn call_as(&mut self, name: &str, arguments: &str, context: pb::CallContext) -> pb::ToolMessage {
        // Every call its own id, as a client gives each model tool call: the gateway answers a call sent again
        // under its id with the first outcome.
        let n = CALLS.fetch_add(1, Ordering::Relaxed);
        let call = pb::ToolCall { id: format!("call-{name}-{n}"), name: name.into(), arguments: arguments.into() };
        let request = pb::ExecuteRequest { call: Some(call), context: Some(context), ..Default::default() };
        let response = self.gateway.execute(request).await.expect("Execute answers with a message, never a status");
        response.into_inner().message.expect("a message")
    }
}

/// Numbers the calls `call_as` sends, so that no two share an id.
static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub fn status_of(m: &pb::ToolMessage) -> pb::ToolStatus {
    pb::ToolStatus::try_from(m.status).unwrap()
}

/// The error kind of a message, `Unspecified` for a success.
pub fn kind_of(m: &pb::ToolMessage) -> pb::ErrorKind {
    m.error.as_ref().map_or(pb::ErrorKind::Unspecified, |e| pb::ErrorKind::try_from(e.kind).unwrap())
}

/// A minimal object schema with one required string `city`.
pub fn city_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false})
}

/// `toolgate serve` with `args`, as a process of its own whose log (at INFO) is read from its stderr once it is
/// killed. No collector, whatever the environment says.
pub fn serve_process(args: &[&str]) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("serve")
        .args(args)
        .env("RUST_LOG", "info")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("toolgate serve starts")
}

/// Kills a `serve_process` and returns its log.
pub async fn log_of(mut server: tokio::process::Child) -> String {
    server.start_kill().unwrap();
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(server.stderr.as_mut().unwrap(), &mut stderr).await.unwrap();
    stderr
}

/// Polls `check` every 10 ms until it holds, and returns how long that took; fails after `within`.
pub async fn eventually<F: AsyncFnMut() -> bool>(within: Duration, what: &str, mut check: F) -> Duration {
    let start = Instant::now();
    loop {
        if check().await {
            return start.elapsed();
        }
        assert!(start.elapsed() < within, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Reads a process's log until a line satisfies `wanted`, and returns that line. Fails after `within`, or when
/// the log ends first, showing the lines it read.
pub async fn line_of<R: AsyncBufRead + Unpin>(
    lines: &mut Lines<R>,
    within: Duration,
    wanted: impl Fn(&str) -> bool,
) -> String {
    let mut seen = Vec::new();
    let read = async {
        while let Some(line) = lines.next_line().await.expect("the log reads") {
            if wanted(&line) {
                return Some(line);
            }
            seen.push(line);
        }
        None
    };
    let outcome = tokio::time::timeout(within, read).await;
    match outcome {
        Ok(Some(line)) => line,
        Ok(None) => panic!("the process exited before logging the line; its log:\n{}", seen.join("\n")),
        Err(_) => panic!("the line was not logged within {within:?}; the log so far:\n{}", seen.join("\n")),
    }
}
