//! Overload: a gateway capped at `CAP` calls in flight, in front of a tool that takes `TOOL_MS`. Its sustainable
//! load is measured (`CAP` callers back to back), then four times that rate is offered open-loop, calls sent on
//! a clock whether or not earlier ones have answered, while a probe checks health. The admitted calls' p99 is
//! compared with the p99 of an unloaded gateway (a quarter of `CAP` callers) measured in the same run.

use super::served::{Latencies, Served, start_tools};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tonic::transport::Channel;
use toolgate::pb::v1::tool_gateway_client::ToolGatewayClient;
use toolgate::pb::v1::{self as pb};

/// The gateway's `limits.max_calls_in_flight` in this run.
pub const CAP: usize = 32;
/// How long the tool takes: the gateway's own work is small beside it, so the cap sets the sustainable rate.
pub const TOOL_MS: u64 = 20;
/// Connections the open-loop load is spread over (each carries at most 200 streams at once).
const CONNECTIONS: usize = 8;

pub struct Overload {
    pub unloaded: Latencies,
    pub sustainable_per_s: f64,
    pub offered_per_s: f64,
    pub admitted: Latencies,
    pub shed: u64,
    pub other_errors: u64,
    pub health: Latencies,
    pub failures: Vec<String>,
}

pub fn config() -> String {
    format!("[limits]\nmax_calls_in_flight = {CAP}\n")
}

pub async fn register(gateway: &Served) {
    let target = start_tools().await;
    let schema = json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]});
    gateway.register(json!({"name": "sleep", "input_schema": schema, "backend": {"grpc": {"target": target}}})).await;
}

fn request() -> pb::ExecuteRequest {
    let call = pb::ToolCall { id: String::new(), name: "sleep".into(), arguments: format!(r#"{{"ms": {TOOL_MS}}}"#) };
    pb::ExecuteRequest { call: Some(call), ..Default::default() }
}

/// `callers` back to back for `duration`: their latencies, and the calls per second.
async fn closed_loop(clients: &[ToolGatewayClient<Channel>], callers: usize, duration: Duration) -> (Latencies, f64) {
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|i| {
            let mut client = clients[i % clients.len()].clone();
            tokio::spawn(async move {
                let mut times = Latencies::default();
                while started.elapsed() < duration {
                    let sent = Instant::now();
                    if client.execute(request()).await.is_ok() {
                        times.add(sent.elapsed());
                    }
                }
                times
            })
        })
        .collect();
    let mut all = Latencies::default();
    for task in tasks {
        all.0.extend(task.await.expect("a caller").0);
    }
    let rate = all.0.len() as f64 / started.elapsed().as_secs_f64();
    (all, rate)
}

/// Sends `rate` calls a second for `duration`, each in a task of its own, and waits for every answer.
async fn open_loop(clients: &[ToolGatewayClient<Channel>], rate: f64, duration: Duration) -> (Latencies, u64, u64) {
    let (shed, other) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut tasks = Vec::new();
    let started = Instant::now();
    let mut ticker = tokio::time::interval(Duration::from_millis(1));
    let mut sent = 0u64;
    while started.elapsed() < duration {
        ticker.tick().await;
        let due = (started.elapsed().as_secs_f64() * rate) as u64;
        while sent < due {
            let mut client = clients[sent as usize % clients.len()].clone();
            let (shed, other) = (Arc::clone(&shed), Arc::clone(&other));
            tasks.push(tokio::spawn(async move {
                let begun = Instant::now();
                match client.execute(request()).await {
                    Ok(_) => Some(begun.elapsed()),
                    Err(status) if status.code() == tonic::Code::Unavailable => {
                        shed.fetch_add(1, Ordering::Relaxed);
                        None
                    }
                    Err(_) => {
                        other.fetch_add(1, Ordering::Relaxed);
                        None
                    }
                }
            }));
            sent += 1;
        }
    }
    let mut admitted = Latencies::default();
    for task in tasks {
        if let Some(elapsed) = task.await.expect("a call") {
            admitted.add(elapsed);
        }
    }
    (admitted, shed.load(Ordering::Relaxed), other.load(Ordering::Relaxed))
}

/// Runs the three phases; `duration` is the overloaded phase's length (the others take a third of it each).
pub async fn run(gateway: &Served, duration: Duration) -> Overload {
    let mut clients = Vec::new();
    for _ in 0..CONNECTIONS {
        clients.push(gateway.client().await);
    }
    let warm = duration / 3;
    let (unloaded, _) = closed_loop(&clients, CAP / 4, warm).await;
    let (_, sustainable_per_s) = closed_loop(&clients, CAP, warm).await;
    let offered_per_s = 4.0 * sustainable_per_s;
    let probe = tokio::spawn(super::served::probe_health(gateway.addr, duration));
    let (admitted, shed, other_errors) = open_loop(&clients, offered_per_s, duration).await;
    let (health, failures) = probe.await.expect("the health probe");
    Overload { unloaded, sustainable_per_s, offered_per_s, admitted, shed, other_errors, health, failures }
}
