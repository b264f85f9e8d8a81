//! Goodput behind a tool's `max_concurrency`, against the real `toolgate serve` process cargo builds beside this
//! bench: a tool that takes `TOOL_MS` capped at `CAP` calls (so `CAP * 1000 / TOOL_MS` calls a second at most) is
//! offered `OFFERED_PER_S` calls a second open-loop, each with a call id of its own and `DEADLINE` to answer.
//! Reports the calls that succeeded per second (from the first call sent to the last answered), and how many reached the tool without succeeding (started too
//! late to finish before their deadline): a call that cannot finish in time should be refused without running.
//!
//! Exits non-zero on a wrong answer (no success, or a failure other than TIMEOUT or UNAVAILABLE). Without `--bench`
//! (as under `cargo test --benches`) it runs a short smoke pass. Run: `cargo bench --bench goodput`
//! (`GOODPUT_SECONDS=60` for longer runs).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../tests/it/support/ports.rs"]
mod ports;
#[allow(dead_code)]
#[path = "hardening_support/served.rs"]
mod served;

use serde_json::json;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};
use toolgate::pb::v1::tool_runtime_server::{ToolRuntime, ToolRuntimeServer};
use toolgate::pb::v1::{self as pb, ErrorKind};

const TOOL_MS: u64 = 500;
const CAP: u32 = 10;
const OFFERED_PER_S: f64 = 40.0;
const DEADLINE: Duration = Duration::from_secs(3);
const CONNECTIONS: usize = 4;

/// The slow tool, counting the calls that reach it.
#[derive(Clone, Default)]
struct Slow {
    invoked: Arc<AtomicU64>,
}

#[tonic::async_trait]
impl ToolRuntime for Slow {
    async fn invoke(&self, request: Request<pb::InvokeRequest>) -> Result<Response<pb::InvokeResponse>, Status> {
        self.invoked.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(TOOL_MS)).await;
        Ok(Response::new(pb::InvokeResponse { content: request.into_inner().arguments, ..Default::default() }))
    }
}

async fn start_tool(tool: Slow) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("a local address");
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    tokio::spawn(
        tonic::transport::Server::builder().add_service(ToolRuntimeServer::new(tool)).serve_with_incoming(incoming),
    );
    format!("http://{addr}")
}

/// How the calls ended.
#[derive(Debug, Default)]
struct Outcomes {
    sent: u64,
    succeeded: u64,
    timeouts: u64,
    busy: u64,
    other: Vec<String>,
    /// From the first call sent to the last answered.
    span: Duration,
}

fn main() -> ExitCode {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let seconds = std::env::var("GOODPUT_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let duration = if smoke { Duration::from_secs(2) } else { Duration::from_secs(seconds) };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    let (outcomes, invoked) = runtime.block_on(run(duration));
    let per_s = |n: u64| n as f64 / outcomes.span.as_secs_f64();
    let capacity = f64::from(CAP) * 1000.0 / TOOL_MS as f64;
    println!("goodput: a {TOOL_MS} ms tool capped at {CAP} ({capacity:.0} calls/s), {OFFERED_PER_S} calls/s offered");
    println!(
        "  for {duration:?} with {DEADLINE:?} deadlines; {:.1} s until the last answer",
        outcomes.span.as_secs_f64()
    );
    println!(
        "  succeeded     {} ({:.1}/s, {:.0}% of capacity)",
        outcomes.succeeded,
        per_s(outcomes.succeeded),
        100.0 * per_s(outcomes.succeeded) / capacity
    );
    println!("  reached the tool {invoked}, of which {} did not succeed", invoked.saturating_sub(outcomes.succeeded));
    println!("  TIMEOUT {}, UNAVAILABLE (busy) {}, of {} sent", outcomes.timeouts, outcomes.busy, outcomes.sent);
    let json = json!({"scenario": "goodput", "sent": outcomes.sent, "succeeded": outcomes.succeeded,
        "goodput_per_s": per_s(outcomes.succeeded), "capacity_per_s": capacity, "invoked": invoked,
        "invoked_not_succeeded": invoked.saturating_sub(outcomes.succeeded), "timeouts": outcomes.timeouts,
        "busy": outcomes.busy});
    println!("{json}");
    let mut failures = outcomes.other;
    if outcomes.succeeded == 0 {
        failures.push("no call succeeded".into());
    }
    for failure in &failures {
        eprintln!("FAILED: {failure}");
    }
    if failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Offers the load for `duration`, waits for every answer and for the tool's last call: how the calls ended,
/// and how many reached the tool.
async fn run(duration: Duration) -> (Outcomes, u64) {
    let gateway = served::Served::start("").await;
    let tool = Slow::default();
    let target = start_tool(tool.clone()).await;
    gateway
        .register(json!({"name": "slow", "input_schema": {"type": "object"}, "limits": {"max_concurrency": CAP},
            "backend": {"grpc": {"target": target}}}))
        .await;
    let mut clients = Vec::new();
    for _ in 0..CONNECTIONS {
        clients.push(gateway.client().await);
    }
    let (mut tasks, mut sent, started) = (Vec::new(), 0u64, Instant::now());
    let mut ticker = tokio::time::interval(Duration::from_millis(1));
    while started.elapsed() < duration {
        ticker.tick().await;
        while sent < (started.elapsed().as_secs_f64() * OFFERED_PER_S) as u64 {
            let mut client = clients[sent as usize % clients.len()].clone();
            let call = pb::ToolCall { id: format!("g{sent}"), name: "slow".into(), arguments: "{}".into() };
            let mut request = Request::new(pb::ExecuteRequest { call: Some(call), ..Default::default() });
            request.set_timeout(DEADLINE);
            tasks.push(tokio::spawn(async move { client.execute(request).await }));
            sent += 1;
        }
    }
    let mut outcomes = Outcomes { sent, ..Outcomes::default() };
    for task in tasks {
        match task.await.expect("a call").map(|r| r.into_inner().message.unwrap_or_default()) {
            Ok(m) if m.error.is_none() => outcomes.succeeded += 1,
            Ok(m) => match m.error.as_ref().map(|e| e.kind()) {
                Some(ErrorKind::Timeout) => outcomes.timeouts += 1,
                Some(ErrorKind::Unavailable) => outcomes.busy += 1,
                _ => outcomes.other.push(format!("an unexpected answer: {m:?}")),
            },
            Err(status) if status.code() == tonic::Code::DeadlineExceeded => outcomes.timeouts += 1,
            Err(status) => outcomes.other.push(format!("an unexpected status: {status:?}")),
        }
    }
    outcomes.span = started.elapsed();
    // A recorded call that started runs on past its caller's deadline: let the last ones reach the tool.
    tokio::time::sleep(Duration::from_millis(2 * TOOL_MS)).await;
    (outcomes, tool.invoked.load(Ordering::SeqCst))
}
