//! The servers of the end-to-end bench (`cargo bench --bench e2e`), all on 127.0.0.1:0 in this one process: the
//! echo ToolRuntime, and the real gateway (`toolgate::run`, a temp data dir) configured with session budgets and
//! OTLP export to the in-process sink, with the forecast tool registered.

use super::workload::{Echo, spec};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint};
use toolgate::Config;
use toolgate::config::{Overrides, RawConfig};
use toolgate::pb::v1 as pb;
use toolgate::pb::v1::tool_registry_client::ToolRegistryClient;
use toolgate::pb::v1::tool_runtime_server::ToolRuntimeServer;
use toolgate::registry::ToolSpec;

/// How often the gateway sends span batches and metrics (the default is 5,000), so that every measured run of a
/// second or more also pays for periodic exports.
pub const EXPORT_INTERVAL_MS: u64 = 1_000;

/// How long the gateway may take to stop, its telemetry flush included.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// The gateway's configuration file, but for the sink's endpoint: session budgets set high enough never to refuse,
/// so every call is checked and counted against them, and OTLP export of spans and metrics. `E2E_OTEL=off` leaves
/// telemetry out, to tell its share of the gateway's cost.
pub fn config_text(otlp_endpoint: &str, second: Option<Second>) -> String {
    let mut budgets = format!(
        "[budgets]\nmax_calls = {max}\nmax_tool_calls = {max}\nmax_consecutive_failures = 1000\n\n",
        max = u32::MAX
    );
    // `E2E_IDEMPOTENCY=off`: no call-id record, to tell its share of the gateway's cost; `E2E_IDEMPOTENCY=<n>`: a
    // record of at most n call ids (10,000 by default), to tell what its size costs. The unrecorded second gateway
    // has none either way.
    match std::env::var("E2E_IDEMPOTENCY").as_deref() {
        _ if second == Some(Second::Unrecorded) => budgets.push_str("[idempotency]\nwindow_ms = 0\n\n"),
        Ok("off") => budgets.push_str("[idempotency]\nwindow_ms = 0\n\n"),
        Ok(entries) if entries.parse::<usize>().is_ok() => {
            budgets.push_str(&format!("[idempotency]\nmax_entries = {entries}\n\n"));
        }
        _ => {}
    }
    if second == Some(Second::Console) {
        budgets.push_str("[console]\nlisten = \"127.0.0.1:0\"\n\n");
    }
    if telemetry_off() {
        return budgets;
    }
    format!("{budgets}[telemetry]\notlp_endpoint = \"{otlp_endpoint}\"\nexport_interval_ms = {EXPORT_INTERVAL_MS}\n")
}

/// What the "console" mode's gateway is beside the first, so that console/gateway tells one thing's cost in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Second {
    /// The first with its web console on: the console's cost (the default).
    Console,
    /// `E2E_CONSOLE=off`: the first again, an A/A run whose ratios are what two identical gateways differ by (the
    /// noise floor).
    Same,
    /// `E2E_CONSOLE=unrecorded`: the first without its call-id record, so console/gateway is the record's cost
    /// measured in the same rounds, drift falling on both alike.
    Unrecorded,
}

impl Second {
    /// The `E2E_CONSOLE` setting; `Err` names a value it does not know.
    pub fn from_env() -> Result<Second, String> {
        match std::env::var("E2E_CONSOLE").as_deref() {
            Err(_) | Ok("on") => Ok(Second::Console),
            Ok("off") => Ok(Second::Same),
            Ok("unrecorded") => Ok(Second::Unrecorded),
            Ok(other) => Err(format!("E2E_CONSOLE must be on, off or unrecorded, got {other:?}")),
        }
    }

    /// How the ratios of the two gateways are labelled.
    pub fn label(self) -> &'static str {
        match self {
            Second::Console => "console/gateway",
            Second::Same => "console/gateway (A/A: console off)",
            Second::Unrecorded => "console/gateway (the second without the call-id record)",
        }
    }
}

/// `E2E_OTEL=off`: the gateway runs without telemetry.
pub fn telemetry_off() -> bool {
    std::env::var("E2E_OTEL").is_ok_and(|v| v == "off")
}

/// Logs as `toolgate serve` does (`RUST_LOG`, else `info`, to stderr), so that the gateway's disabled `debug` and
/// `trace` call sites, its own and its dependencies', cost here what they cost in the shipped binary.
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(std::io::stderr).try_init();
}

async fn bind() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("a local address");
    (listener, addr)
}

/// Connects, retrying briefly while the server task starts.
pub async fn connect(addr: SocketAddr) -> Channel {
    let endpoint = Endpoint::from_shared(format!("http://{addr}")).expect("a valid URI");
    for _ in 0..100 {
        if let Ok(channel) = endpoint.connect().await {
            return channel;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{addr} never accepted a connection");
}

/// Starts the echo ToolRuntime. `serve_with_incoming` ignores the builder's `tcp_nodelay`, so the accepted sockets get
/// it here, as `Server::serve(addr)` would give them: a real runtime does not add Nagle stalls to the baseline.
pub async fn start_runtime() -> SocketAddr {
    let (listener, addr) = bind().await;
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let server =
        tonic::transport::Server::builder().add_service(ToolRuntimeServer::new(Echo)).serve_with_incoming(incoming);
    tokio::spawn(server);
    addr
}

/// The running gateway: its channel, and what stops it.
pub struct Gateway {
    pub channel: Channel,
    shutdown: oneshot::Sender<()>,
    handle: tokio::task::JoinHandle<Result<(), toolgate::app::ServeError>>,
    _data: tempfile::TempDir,
}

impl Gateway {
    /// Starts the gateway exporting to `otlp_endpoint` (the first, or the `second` beside it), registers the
    /// forecast tool on `runtime`, and returns once it answers.
    pub async fn start(runtime: SocketAddr, otlp_endpoint: &str, second: Option<Second>) -> Gateway {
        let data = tempfile::tempdir().expect("a temp dir");
        let raw: RawConfig = toml::from_str(&config_text(otlp_endpoint, second)).expect("the bench's config parses");
        let overrides = Overrides { data_dir: Some(data.path().to_path_buf()), ..Overrides::default() };
        let config = Config::from_raw(raw, overrides, Path::new(".")).expect("the bench's config is valid");
        let (listener, addr) = bind().await;
        let (shutdown, stop) = oneshot::channel::<()>();
        let handle = tokio::spawn(toolgate::run(listener, config, async {
            let _ = stop.await;
        }));
        let channel = connect(addr).await;
        let spec: ToolSpec = serde_json::from_value(spec(&format!("http://{runtime}"))).expect("the spec parses");
        let request = pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) };
        ToolRegistryClient::new(channel.clone()).register_tool(request).await.expect("the forecast tool registers");
        Gateway { channel, shutdown, handle, _data: data }
    }

    /// Stops the gateway and waits for it, telemetry flush included; `Err` says how it stopped badly.
    pub async fn stop(self) -> Result<(), String> {
        let _ = self.shutdown.send(());
        drop(self.channel);
        match tokio::time::timeout(STOP_TIMEOUT, self.handle).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(outcome) => Err(format!("the gateway stopped badly: {outcome:?}")),
            Err(_) => Err(format!("the gateway did not stop within {STOP_TIMEOUT:?}")),
        }
    }
}
