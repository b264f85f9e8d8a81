//! End-to-end load: the same echo call sent straight to a ToolRuntime `Invoke`, through the gateway's `Execute` with
//! telemetry off, then through a second gateway with telemetry fully on ("gateway+otel").
//!
//! Everything runs in this one process on 127.0.0.1: the echo ToolRuntime, the real gateways (`toolgate::run`, temp
//! data dirs), the clients, and a minimal OTLP/gRPC sink (`load_support/otlp_sink.rs`) that only counts what it gets.
//! The otel gateway sends it span batches (`execute_tool`, `validate`, `backend`: about three spans per call) and
//! metrics every `OTEL_EXPORT_INTERVAL_MS`, and also keeps a Prometheus reader on a free port; it starts once the
//! plain gateway has stopped. Each side gets a warm-up, then `LOAD_REQUESTS` calls (default 20,000) with
//! `LOAD_CONCURRENCY` in flight (default 32) over one shared channel. Prints p50/p99 latency, throughput and the
//! gateway/direct, otel/direct and otel/gateway (telemetry overhead) ratios as a table and as one JSON line, and what
//! the sink received once the otel gateway stopped (and flushed). Exits non-zero if any call did not succeed or no
//! span arrived. Without `--bench` (as under `cargo test --benches`) it runs a short smoke pass instead.
//!
//! Run: `cargo bench --bench load` (`LOAD_REQUESTS=50000 LOAD_CONCURRENCY=64 cargo bench --bench load`).

#[path = "load_support/otlp_sink.rs"]
mod otlp_sink;
#[path = "load_support/report.rs"]
mod report;

use otlp_sink::{Received, Sink};
use serde_json::json;
use std::future::Future;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};
use toolgate::Config;
use toolgate::pb::v1 as pb;
use toolgate::pb::v1::tool_gateway_client::ToolGatewayClient;
use toolgate::pb::v1::tool_registry_client::ToolRegistryClient;
use toolgate::pb::v1::tool_runtime_client::ToolRuntimeClient;
use toolgate::pb::v1::tool_runtime_server::{ToolRuntime, ToolRuntimeServer};
use toolgate::registry::ToolSpec;
use toolgate::server::convert::spec_to_proto;
use toolgate::telemetry::{RawTelemetry, TelemetrySettings};

/// The model's arguments, valid against `echo_schema`, sent byte for byte on both paths.
const ARGUMENTS: &str = r#"{"city": "Lyon", "days": 3, "units": "metric", "hourly": false, "tags": ["rain", "wind"]}"#;

/// Per-call budget: a call that takes longer counts as a failure, so no loop waits forever.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How often the otel gateway sends span batches and metrics (the default is 5,000), so that a measured run longer
/// than a second also pays for periodic metric exports. Shorter runs only export metrics when the gateway stops.
const OTEL_EXPORT_INTERVAL_MS: u64 = 1_000;

/// How long a gateway may take to stop, flushing its telemetry included.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// Answers every call with its arguments, as content and as structured result.
struct Echo;

#[tonic::async_trait]
impl ToolRuntime for Echo {
    async fn invoke(&self, request: Request<pb::InvokeRequest>) -> Result<Response<pb::InvokeResponse>, Status> {
        let arguments = request.into_inner().arguments;
        let structured = arguments.clone();
        Ok(Response::new(pb::InvokeResponse {
            content: arguments,
            structured,
            is_error: false,
            error_message: "".into(),
        }))
    }
}

fn echo_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1, "description": "City name"},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "units": {"type": "string", "enum": ["metric", "imperial"]},
            "hourly": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8}
        },
        "required": ["city", "days"],
        "additionalProperties": false
    })
}

/// How much load to apply.
#[derive(Debug, Clone, Copy)]
struct Plan {
    requests: usize,
    concurrency: usize,
    warmup: usize,
    smoke: bool,
}

fn env_count(name: &str, default: usize) -> Result<usize, String> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(text) => match text.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("{name} must be a positive integer, got {text:?}")),
        },
    }
}

fn plan() -> Result<Plan, String> {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let (requests, concurrency, warmup) = if smoke { (500, 8, 100) } else { (20_000, 32, 1_000) };
    Ok(Plan {
        requests: env_count("LOAD_REQUESTS", requests)?,
        concurrency: env_count("LOAD_CONCURRENCY", concurrency)?,
        warmup,
        smoke,
    })
}

/// The latencies of one measured run, sorted, in nanoseconds.
struct Run {
    latencies: Vec<u64>,
    elapsed: Duration,
    failures: usize,
}

impl Run {
    /// Nearest-rank percentile, in microseconds.
    fn percentile_us(&self, p: f64) -> f64 {
        let n = self.latencies.len();
        let rank = ((p * n as f64).ceil() as usize).clamp(1, n.max(1));
        self.latencies.get(rank - 1).map_or(f64::NAN, |&ns| ns as f64 / 1_000.0)
    }

    fn throughput(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }
}

/// Sends `requests` calls with `concurrency` in flight; each task takes the next index until none are left.
async fn drive<F, Fut>(requests: usize, concurrency: usize, call: F) -> Run
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = bool> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency.min(requests))
        .map(|_| {
            let (next, call) = (Arc::clone(&next), call.clone());
            tokio::spawn(async move {
                let (mut latencies, mut failures) = (Vec::with_capacity(requests / concurrency + 1), 0);
                while next.fetch_add(1, Ordering::Relaxed) < requests {
                    let sent = Instant::now();
                    let ok = matches!(tokio::time::timeout(CALL_TIMEOUT, call()).await, Ok(true));
                    latencies.push(u64::try_from(sent.elapsed().as_nanos()).unwrap_or(u64::MAX));
                    failures += usize::from(!ok);
                }
                (latencies, failures)
            })
        })
        .collect();
    let mut run = Run { latencies: Vec::with_capacity(requests), elapsed: Duration::ZERO, failures: 0 };
    for worker in workers {
        let (latencies, failures) = worker.await.expect("a load worker panicked");
        run.latencies.extend(latencies);
        run.failures += failures;
    }
    run.elapsed = started.elapsed();
    run.latencies.sort_unstable();
    run
}

/// A warm-up of `plan.warmup` calls, whose failures also count, then the measured run.
async fn measure<F, Fut>(plan: Plan, call: F) -> Run
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = bool> + Send,
{
    let warmup = drive(plan.warmup, plan.concurrency, call.clone()).await;
    let mut run = drive(plan.requests, plan.concurrency, call).await;
    run.failures += warmup.failures;
    run
}

async fn direct_call(mut client: ToolRuntimeClient<Channel>) -> bool {
    let request = pb::InvokeRequest {
        call_id: "call-echo".into(),
        tool: "echo".into(),
        arguments: ARGUMENTS.into(),
        context: Some(pb::CallContext::default()),
    };
    match client.invoke(request).await {
        Ok(response) => {
            let response = response.into_inner();
            !response.is_error && response.content == ARGUMENTS
        }
        Err(_) => false,
    }
}

async fn gateway_call(mut client: ToolGatewayClient<Channel>) -> bool {
    let call = pb::ToolCall { id: "call-echo".into(), name: "echo".into(), arguments: ARGUMENTS.into() };
    let request =
        pb::ExecuteRequest { call: Some(call), context: Some(pb::CallContext::default()), ..Default::default() };
    let Ok(response) = client.execute(request).await else { return false };
    let Some(message) = response.into_inner().message else { return false };
    message.status == pb::ToolStatus::Success as i32 && message.content == ARGUMENTS
}

async fn bind() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("a local address");
    (listener, addr)
}

/// Connects, retrying briefly while the server task starts.
async fn connect(addr: SocketAddr) -> Channel {
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
async fn start_runtime() -> SocketAddr {
    let (listener, addr) = bind().await;
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let server =
        tonic::transport::Server::builder().add_service(ToolRuntimeServer::new(Echo)).serve_with_incoming(incoming);
    tokio::spawn(server);
    addr
}

/// The running gateway: its channel, and what stops it.
struct Gateway {
    channel: Channel,
    shutdown: oneshot::Sender<()>,
    handle: tokio::task::JoinHandle<Result<(), toolgate::server::ServeError>>,
    _data: tempfile::TempDir,
}

/// Starts a gateway with `telemetry`, registers the echo tool on it, and returns once it answers.
async fn start_gateway(runtime: SocketAddr, telemetry: TelemetrySettings) -> Gateway {
    let data = tempfile::tempdir().expect("a temp dir");
    let config = Config { data_dir: data.path().to_path_buf(), telemetry, ..Config::default() };
    let (listener, addr) = bind().await;
    let (shutdown, stop) = oneshot::channel::<()>();
    let handle = tokio::spawn(toolgate::run(listener, config, async {
        let _ = stop.await;
    }));
    let channel = connect(addr).await;
    let mut spec = ToolSpec::offline("echo", "Echoes a forecast request", echo_schema());
    spec.backend = Some(toolgate::registry::Backend::Grpc { target: format!("http://{runtime}") });
    let request = pb::RegisterToolRequest { spec: Some(spec_to_proto(&spec)) };
    ToolRegistryClient::new(channel.clone()).register_tool(request).await.expect("the echo tool registers");
    Gateway { channel, shutdown, handle, _data: data }
}

/// Telemetry fully on: OTLP/gRPC to `endpoint` every `OTEL_EXPORT_INTERVAL_MS`, and a Prometheus endpoint on a port
/// that was free a moment ago (`prometheus_listen` needs a concrete one).
fn otel_settings(endpoint: &str) -> TelemetrySettings {
    let prometheus = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port for Prometheus");
    let raw = RawTelemetry {
        otlp_endpoint: Some(endpoint.to_owned()),
        export_interval_ms: Some(OTEL_EXPORT_INTERVAL_MS),
        prometheus_listen: Some(prometheus.to_string()),
        ..RawTelemetry::default()
    };
    TelemetrySettings::from_raw(raw, None).expect("valid telemetry settings")
}

impl Gateway {
    /// Stops the gateway and waits for it, telemetry flush included.
    async fn stop(self) {
        let _ = self.shutdown.send(());
        drop(self.channel);
        match tokio::time::timeout(STOP_TIMEOUT, self.handle).await {
            Ok(Ok(Ok(()))) => {}
            Ok(outcome) => eprintln!("the gateway stopped badly: {outcome:?}"),
            Err(_) => eprintln!("the gateway did not stop within {STOP_TIMEOUT:?}"),
        }
    }

    async fn measure(&self, plan: Plan) -> Run {
        let client = ToolGatewayClient::new(self.channel.clone());
        measure(plan, move || gateway_call(client.clone())).await
    }
}

/// The three measured sides, and what the OTLP sink received from the otel gateway.
struct Sides {
    direct: Run,
    gateway: Run,
    otel: Run,
    received: Received,
}

/// Direct, then the plain gateway (up, idle, during the direct side), then the otel gateway, all with the same plan.
async fn run_sides(plan: Plan) -> Sides {
    let runtime = start_runtime().await;
    let gateway = start_gateway(runtime, TelemetrySettings::default()).await;
    let direct_client = ToolRuntimeClient::new(connect(runtime).await);
    let direct = measure(plan, move || direct_call(direct_client.clone())).await;
    let via_gateway = gateway.measure(plan).await;
    gateway.stop().await;
    let sink = Sink::start().await;
    let gateway = start_gateway(runtime, otel_settings(&sink.endpoint)).await;
    let otel = gateway.measure(plan).await;
    // Stopping flushes the queued spans and a last metrics export, so the counts below are final.
    gateway.stop().await;
    Sides { direct, gateway: via_gateway, otel, received: sink.received() }
}

/// `a` against `b`: p50 and p99 latency as `a / b`, and the throughput cost as `b`'s req/s over `a`'s.
#[tokio::main]
async fn main() -> ExitCode {
    let plan = match plan() {
        Ok(plan) => plan,
        Err(reason) => {
            eprintln!("load: {reason}");
            return ExitCode::FAILURE;
        }
    };
    let sides = run_sides(plan).await;
    report::print_report(plan, &sides);
    let (direct, gateway, otel) = (sides.direct.failures, sides.gateway.failures, sides.otel.failures);
    if direct + gateway + otel > 0 {
        eprintln!("load: {direct} direct, {gateway} gateway and {otel} gateway+otel calls failed");
        return ExitCode::FAILURE;
    }
    if sides.received.spans == 0 {
        eprintln!("load: the OTLP sink received no span from the gateway+otel side");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
