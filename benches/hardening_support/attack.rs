//! The attack: 8 callers sending the probe's worst cases in turn (a 16-deep recursive `anyOf` tree invalid at
//! its leaf, 80,000 characters against a lookaround `pattern`, a 1 MiB unknown tool name among 10,000 tools)
//! while two probes measure a health check and a valid call to another tool, one at a time.

use super::served::{Latencies, Served, probe_health, start_tools};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use toolgate::pb::v1 as pb;

/// Concurrent attackers, as the issue's probe ran them.
pub const ATTACKERS: usize = 8;

/// What one attack run measured.
pub struct Attack {
    pub health: Latencies,
    pub valid: Latencies,
    pub attacks: Latencies,
    pub failures: Vec<String>,
    pub rss_before_mib: f64,
    pub rss_peak_mib: f64,
    pub gateway_cpu: Duration,
}

fn tree_schema() -> Value {
    let node = |kind: &str| {
        json!({"type": "object", "required": ["kind", "children"], "properties": {"kind": {"const": kind},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}})
    };
    let text = json!({"type": "object", "required": ["kind", "text"],
        "properties": {"kind": {"const": "text"}, "text": {"type": "string"}}});
    json!({"type": "object", "required": ["root"], "properties": {"root": {"$ref": "#/$defs/node"}},
        "$defs": {"node": {"anyOf": [node("div"), node("span"), text]}}})
}

/// A tree `depth` deep whose leaf lacks its required `text`: invalid, and nothing repair may fill in.
pub fn tree_arguments(depth: usize) -> String {
    let mut node = json!({"kind": "text"});
    for _ in 0..depth {
        node = json!({"kind": "div", "children": [node]});
    }
    json!({"root": node}).to_string()
}

/// Registers the attack's tools, the valid call's `echo`, and `fillers` more for the name search to scan.
pub async fn register(gateway: &Served, fillers: usize) {
    let target = start_tools().await;
    let backend = json!({"grpc": {"target": target}});
    gateway.register(json!({"name": "tree", "input_schema": tree_schema(), "backend": backend})).await;
    let password = json!({"type": "object", "required": ["password"],
        "properties": {"password": {"type": "string", "pattern": "(?=.*[0-9])(?=.*[a-z]).{8,}"}}});
    gateway.register(json!({"name": "password", "input_schema": password, "backend": backend})).await;
    let echo = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    gateway.register(json!({"name": "echo", "input_schema": echo, "backend": backend})).await;
    let mut registering = Vec::new();
    for chunk in 0..8 {
        let (channel, backend) = (gateway.channel.clone(), backend.clone());
        registering.push(tokio::spawn(async move {
            let mut registry = toolgate::pb::v1::tool_registry_client::ToolRegistryClient::new(channel);
            for i in (chunk..fillers).step_by(8) {
                let spec = json!({"name": format!("filler_tool_{i:05}"), "input_schema": {"type": "object"},
                    "backend": backend});
                let spec: toolgate::registry::ToolSpec = serde_json::from_value(spec).expect("a filler spec parses");
                let request = pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) };
                registry.register_tool(request).await.expect("a filler registers");
            }
        }));
    }
    for task in registering {
        task.await.expect("registering fillers");
    }
}

fn call(id: String, name: String, arguments: String) -> pb::ExecuteRequest {
    let call = pb::ToolCall { id, name, arguments };
    pb::ExecuteRequest { call: Some(call), context: Some(pb::CallContext::default()), ..Default::default() }
}

/// The attack's three calls, in the order each attacker sends them.
fn worst_cases() -> [(String, String); 3] {
    let password = json!({"password": "A".repeat(80_000)}).to_string();
    [("tree".into(), tree_arguments(16)), ("password".into(), password), ("x".repeat(1024 * 1024), "{}".into())]
}

/// Runs the attack for `duration`, probing all the while.
pub async fn run(gateway: &Served, duration: Duration) -> Attack {
    let rss_before_mib = gateway.memory_mib().map_or(0.0, |m| m.0);
    let cpu_before = gateway.cpu().unwrap_or_default();
    let stop = Arc::new(AtomicBool::new(false));
    let cases = Arc::new(worst_cases());
    let mut attackers = Vec::new();
    for a in 0..ATTACKERS {
        let (mut client, stop, cases) = (gateway.client().await, Arc::clone(&stop), Arc::clone(&cases));
        attackers.push(tokio::spawn(async move {
            let (mut times, mut failures) = (Latencies::default(), Vec::new());
            let mut n = a;
            while !stop.load(Ordering::Relaxed) {
                let (name, arguments) = cases[n % cases.len()].clone();
                let started = Instant::now();
                match client.execute(call(format!("attack-{a}-{n}"), name, arguments)).await {
                    Ok(answer) if answer.get_ref().message.as_ref().is_some_and(|m| m.status == 2) => {}
                    other => failures.push(format!("an attack call was not refused as an ERROR message: {other:?}")),
                }
                times.add(started.elapsed());
                n += 1;
            }
            (times, failures)
        }));
    }
    let (health, valid) = tokio::join!(probe_health(gateway.addr, duration), probe_valid(gateway, duration));
    stop.store(true, Ordering::Relaxed);
    let mut outcome = Attack {
        health: health.0,
        valid: valid.0,
        attacks: Latencies::default(),
        failures: [health.1, valid.1].concat(),
        rss_before_mib,
        rss_peak_mib: gateway.memory_mib().map_or(0.0, |m| m.1),
        gateway_cpu: gateway.cpu().unwrap_or_default().saturating_sub(cpu_before),
    };
    for attacker in attackers {
        let (times, failures) = attacker.await.expect("an attacker");
        outcome.attacks.0.extend(times.0);
        outcome.failures.extend(failures.into_iter().take(3));
    }
    outcome
}

/// Pause between two probes: they measure latency, not add load.
const PROBE_EVERY: Duration = Duration::from_millis(10);

pub async fn probe_valid(gateway: &Served, duration: Duration) -> (Latencies, Vec<String>) {
    let mut client = gateway.client().await;
    let (mut times, mut failures, started) = (Latencies::default(), Vec::new(), Instant::now());
    let mut n = 0;
    while started.elapsed() < duration {
        let sent = Instant::now();
        let request = call(format!("valid-{n}"), "echo".into(), r#"{"city": "Oslo"}"#.into());
        match client.execute(request).await {
            Ok(answer) if answer.get_ref().message.as_ref().is_some_and(|m| m.status == 1) => {}
            other => failures.push(format!("a valid call failed: {other:?}")),
        }
        times.add(sent.elapsed());
        n += 1;
        tokio::time::sleep(PROBE_EVERY).await;
    }
    (times, failures)
}
