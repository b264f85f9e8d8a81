//! Issue 47's attacks, against whichever build `TOOLGATE_BIN` names (before and after): 8 callers sending in turn
//! an `ExecuteBatch` of 128 tiny invalid calls to a tool whose schema is a 3,000-hop `$ref` chain (D11), one call
//! of 500 short strings on a catastrophic backtracking `pattern` (D12), and a deny-list attack inside `not` (D13),
//! while health and a valid call are probed. Reports the figures and what each build answered; asserts nothing of
//! the old build's answers.

use super::attack::probe_valid;
use super::served::{Latencies, Served, probe_health, start_tools};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use toolgate::pb::v1 as pb;

/// The probe's `$ref` chain: `x` is `hops` references from a boolean.
fn chain(hops: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..hops {
        defs.insert(format!("r{i}"), json!({"$ref": format!("#/$defs/r{}", i + 1)}));
    }
    defs.insert(format!("r{hops}"), json!({"type": "boolean"}));
    json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/r0"}}, "$defs": defs})
}

/// What one round-2 run measured.
pub struct Round2 {
    pub chain_registered: bool,
    pub health: Latencies,
    pub valid: Latencies,
    pub calls: u64,
    pub deny_accepted: u64,
    pub deny_sent: u64,
    pub patterns_accepted: u64,
    pub patterns_sent: u64,
    pub rss_before_mib: f64,
    pub rss_peak_mib: f64,
    pub gateway_cpu: Duration,
    pub failures: Vec<String>,
}

/// Registers the attack's tools and `echo`; answers whether the chain registered.
pub async fn register(gateway: &Served) -> bool {
    let backend = json!({"grpc": {"target": start_tools().await}});
    let patterns = json!({"type": "object", "properties": {"s": {"type": "array",
        "items": {"anyOf": [{"type": "string", "pattern": "^(a|a)+\\1$"}, {"type": "string"}]}}}});
    let deny = json!({"type": "object", "properties": {"html": {"type": "string",
        "not": {"pattern": "(?i)<(\\w+)[^>]*>.*</\\1>"}}}});
    let echo = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    for (name, schema) in [("patterns", patterns), ("deny", deny), ("echo", echo)] {
        gateway.register(json!({"name": name, "input_schema": schema, "backend": backend})).await;
    }
    let spec = json!({"name": "chain", "input_schema": chain(3_000), "backend": backend});
    let spec: toolgate::registry::ToolSpec = serde_json::from_value(spec).expect("the chain spec parses");
    let request = pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) };
    let mut registry = pb::tool_registry_client::ToolRegistryClient::new(gateway.channel.clone());
    registry.register_tool(request).await.is_ok()
}

fn call(id: String, name: &str, arguments: String) -> pb::ToolCall {
    pb::ToolCall { id, name: name.into(), arguments }
}

/// Runs the attack for `duration`, probing all the while.
pub async fn run(gateway: &Served, chain_registered: bool, duration: Duration) -> Round2 {
    let rss_before_mib = gateway.memory_mib().map_or(0.0, |m| m.0);
    let cpu_before = gateway.cpu().unwrap_or_default();
    let stop = Arc::new(AtomicBool::new(false));
    let counts: Arc<[AtomicU64; 5]> = Arc::new(Default::default());
    let strings = json!({"s": vec![format!("{}b", "a".repeat(24)); 500]}).to_string();
    let tags = json!({"html": format!("{}<b>x</b>", "<a ".repeat(300))}).to_string();
    let mut attackers = Vec::new();
    for a in 0..super::attack::ATTACKERS {
        let (mut client, stop, counts) = (gateway.client().await, Arc::clone(&stop), Arc::clone(&counts));
        let (strings, tags) = (strings.clone(), tags.clone());
        attackers.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let id = |k: u64| format!("round2-{a}-{n}-{k}");
                let calls: Vec<pb::ToolCall> = (0..128).map(|k| call(id(k), "chain", r#"{"x": 1}"#.into())).collect();
                let batch =
                    pb::ExecuteBatchRequest { calls, context: Some(pb::CallContext::default()), ..Default::default() };
                let _ = client.execute_batch(batch).await;
                counts[0].fetch_add(128, Ordering::Relaxed);
                for (name, arguments, sent, accepted) in [("patterns", &strings, 1, 2), ("deny", &tags, 3, 4)] {
                    let request = pb::ExecuteRequest {
                        call: Some(call(id(1000 + sent), name, arguments.clone())),
                        context: Some(pb::CallContext::default()),
                        ..Default::default()
                    };
                    let answer = client.execute(request).await.ok().and_then(|a| a.into_inner().message);
                    counts[sent as usize].fetch_add(1, Ordering::Relaxed);
                    if answer.is_some_and(|m| m.status == 1) {
                        counts[accepted].fetch_add(1, Ordering::Relaxed);
                    }
                }
                n += 1;
            }
        }));
    }
    let (health, valid) = tokio::join!(probe_health(gateway.addr, duration), probe_valid(gateway, duration));
    stop.store(true, Ordering::Relaxed);
    let rss_peak_mib = gateway.memory_mib().map_or(0.0, |m| m.1);
    let gateway_cpu = gateway.cpu().unwrap_or_default().saturating_sub(cpu_before);
    for attacker in attackers {
        attacker.await.expect("an attacker");
    }
    let count = |i: usize| counts[i].load(Ordering::Relaxed);
    Round2 {
        chain_registered,
        health: health.0,
        valid: valid.0,
        calls: count(0) + count(1) + count(3),
        patterns_sent: count(1),
        patterns_accepted: count(2),
        deny_sent: count(3),
        deny_accepted: count(4),
        rss_before_mib,
        rss_peak_mib,
        gateway_cpu,
        failures: [health.1, valid.1].concat(),
    }
}

/// Prints the run's figures, one line each and one JSON line; answers its failures.
pub fn report(outcome: Round2, duration: Duration) -> Vec<String> {
    println!("round 2: {} attackers, {duration:?}", super::attack::ATTACKERS);
    println!("  3,000-hop $ref chain registered: {}", outcome.chain_registered);
    println!("  health check  {}", outcome.health.summary());
    println!("  valid call    {}", outcome.valid.summary());
    let per_call_us = outcome.gateway_cpu.as_secs_f64() * 1e6 / outcome.calls.max(1) as f64;
    println!(
        "  attack calls {} (CPU {:.2} s, {per_call_us:.0} us a call); RSS {:.1} MiB before, peak {:.1} MiB",
        outcome.calls,
        outcome.gateway_cpu.as_secs_f64(),
        outcome.rss_before_mib,
        outcome.rss_peak_mib
    );
    println!("  500 strings on (a|a)+: {} of {} ran", outcome.patterns_accepted, outcome.patterns_sent);
    println!("  deny-list attack inside not: {} of {} ran", outcome.deny_accepted, outcome.deny_sent);
    let json = json!({"scenario": "round2", "chain_registered": outcome.chain_registered,
        "health_p99_ms": outcome.health.ms(99.0), "valid_p99_ms": outcome.valid.ms(99.0), "calls": outcome.calls,
        "cpu_per_call_us": per_call_us, "rss_before_mib": outcome.rss_before_mib, "rss_peak_mib": outcome.rss_peak_mib,
        "deny_ran": outcome.deny_accepted, "deny_sent": outcome.deny_sent,
        "patterns_ran": outcome.patterns_accepted, "patterns_sent": outcome.patterns_sent});
    println!("{json}");
    let mut failures = outcome.failures;
    if outcome.calls == 0 {
        failures.push("no round-2 attack call was answered".into());
    }
    failures
}
