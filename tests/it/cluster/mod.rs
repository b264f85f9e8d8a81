//! Cluster mode end to end: three `toolgate serve` processes on one Redis share the registry, global rate
//! limits, session budgets and the review queue, and ride out a Redis outage.
//!
//! Each test uses a key prefix of its own (deleted when it ends), or a private `redis-server` it may stop.

mod admit;
mod console;
mod console_sessions;
mod fleet_faults;
mod fleet_load;
mod fleet_review;
mod idempotency;
mod mcp_sessions;
mod mcp_state;
mod review;
mod tls;

use crate::support;
use crate::support::backends::start_http;
use crate::support::cluster::{Prefix, PrivateRedis, redis_url};
use crate::support::eventually;
use serde_json::json;
use std::time::Duration;
use toolgate::pb::v1::{self as pb};

const SECOND: Duration = Duration::from_secs(1);
/// How long a change may take to reach the other gateways before a test fails: far above the sub-second sync
/// (pub/sub at once, a 200 ms poll behind it), so that a loaded machine cannot reach it.
const SPREAD: Duration = Duration::from_secs(15);

fn echo(name: &str, http: &str, limits: serde_json::Value) -> serde_json::Value {
    json!({"name": name, "input_schema": {"type": "object"}, "backend": {"http": {"url": format!("{http}/echo")}}, "limits": limits})
}

fn kind(message: &pb::ToolMessage) -> pb::ErrorKind {
    message.error.as_ref().map_or(pb::ErrorKind::Unspecified, |e| pb::ErrorKind::try_from(e.kind).unwrap())
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_tool_registered_or_deleted_through_one_gateway_reaches_the_others() {
    let prefix = Prefix::new(&redis_url());
    let http = start_http().await;
    let mut nodes = support::cluster::fleet::start(3, &redis_url(), &prefix.prefix, "").await;
    let version = nodes[0].register(echo("lookup", &http, json!({}))).await.unwrap().version;
    assert_eq!(version, 1);
    for node in &mut nodes[1..] {
        let took =
            eventually(SPREAD, "registered tool on another gateway", async || node.version("lookup").await == Some(1))
                .await;
        println!("registration reached {} after {took:?}", node.addr);
        let answer = node.call("c1", "lookup", r#"{"q": 1}"#, pb::CallContext::default()).await;
        assert_eq!((kind(&answer), answer.content.as_str()), (pb::ErrorKind::Unspecified, r#"{"q": 1}"#));
    }

    // A new version through B reaches A and C; the versions agree everywhere.
    let v2 = nodes[1].register(echo("lookup", &http, json!({"timeout_ms": 5000}))).await.unwrap().version;
    assert_eq!(v2, 2);
    for i in [0, 2] {
        let node = &mut nodes[i];
        eventually(SPREAD, "second version", async || node.version("lookup").await == Some(2)).await;
    }

    nodes[2].delete("lookup").await.unwrap();
    for i in [0, 1] {
        let node = &mut nodes[i];
        eventually(SPREAD, "deleted tool gone", async || node.version("lookup").await.is_none()).await;
        let answer = node.call("c2", "lookup", "{}", pb::CallContext::default()).await;
        assert_eq!(kind(&answer), pb::ErrorKind::ToolNotFound);
    }
    let missing = nodes[0].delete("lookup").await.unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound, "Redis decides: {missing:?}");
    for node in nodes {
        node.kill().await;
    }
}

#[tokio::test]
#[ignore = "needs redis-server on PATH; .ci/run runs it"]
async fn while_redis_is_down_calls_are_served_and_registrations_refused_and_a_restarted_empty_redis_is_reseeded() {
    let mut redis = PrivateRedis::start();
    let http = start_http().await;
    let prefix = "fleet";
    let mut a = support::cluster::fleet::Node::start(&redis.url(), prefix, "").await;
    a.register(echo("cached", &http, json!({}))).await.unwrap();
    a.register(echo("open", &http, json!({"rate": "1000/s"}))).await.unwrap();
    a.register(echo("closed", &http, json!({"rate": "1000/s", "when_redis_down": "FAIL_CLOSED"}))).await.unwrap();
    a.register(echo("local", &http, json!({"rate": "1000/s", "scope": "GATEWAY", "when_redis_down": "FAIL_CLOSED"})))
        .await
        .unwrap();
    for name in ["cached", "open", "closed", "local"] {
        assert_eq!(
            kind(&a.call("up", name, "{}", pb::CallContext::default()).await),
            pb::ErrorKind::Unspecified,
            "{name}"
        );
    }
    assert_eq!(a.cluster_health().await, 1, "SERVING while Redis answers");
    redis.stop();
    eventually(SPREAD, "degraded", async || a.cluster_health().await == 2).await;
    for (name, want) in [
        ("cached", pb::ErrorKind::Unspecified),
        ("open", pb::ErrorKind::Unspecified),
        ("closed", pb::ErrorKind::RateLimited),
        ("local", pb::ErrorKind::Unspecified),
    ] {
        let answer = a.call("down", name, "{}", pb::CallContext::default()).await;
        assert_eq!(kind(&answer), want, "{name} while Redis is down: {}", answer.content);
        if want == pb::ErrorKind::RateLimited {
            assert!(answer.error.as_ref().unwrap().retryable, "fail closed is retryable");
        }
    }
    let refused = a.register(echo("other", &http, json!({}))).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unavailable, "{refused:?}");
    assert!(refused.message().contains("Redis") && refused.message().contains("retry"), "{}", refused.message());

    redis.restart();
    // Redis restarted empty: the gateway seeds it back from its snapshot rather than losing the registry.
    eventually(SPREAD, "healthy again", async || a.cluster_health().await == 1).await;
    let mut b = support::cluster::fleet::Node::start(&redis.url(), prefix, "").await;
    eventually(SPREAD, "reseeded", async || b.version("cached").await.is_some()).await;
    b.register(echo("other", &http, json!({}))).await.unwrap();
    eventually(SPREAD, "a change after the restart", async || a.version("other").await.is_some()).await;
    a.kill().await;
    b.kill().await;
}

/// Hammers `name` from `per_node` tasks on each node until `until`, and returns when each admitted call answered.
async fn hammer(
    nodes: &[support::cluster::fleet::Node],
    name: &'static str,
    per_node: usize,
    until: std::time::Instant,
) -> Vec<std::time::Instant> {
    let mut tasks = Vec::new();
    for (n, node) in nodes.iter().enumerate() {
        for t in 0..per_node {
            let mut gateway = node.gateway.clone();
            tasks.push(tokio::spawn(async move {
                let mut admitted = Vec::new();
                let mut i = 0;
                while std::time::Instant::now() < until {
                    i += 1;
                    let call = pb::ToolCall { id: format!("{n}-{t}-{i}"), name: name.into(), arguments: "{}".into() };
                    let request = pb::ExecuteRequest { call: Some(call), ..Default::default() };
                    let message = gateway.execute(request).await.unwrap().into_inner().message.unwrap();
                    match kind(&message) {
                        pb::ErrorKind::Unspecified => admitted.push(std::time::Instant::now()),
                        pb::ErrorKind::RateLimited => {}
                        other => panic!("unexpected {other:?}: {}", message.content),
                    }
                }
                admitted
            }));
        }
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all.sort();
    all
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_global_limit_driven_from_three_gateways_admits_its_rate_and_no_more_in_any_window() {
    let prefix = Prefix::new(&redis_url());
    let http = start_http().await;
    let mut nodes = support::cluster::fleet::start(3, &redis_url(), &prefix.prefix, "").await;
    // 20 per second, one at a time: every 50 ms one call, whichever gateway it comes through.
    nodes[0].register(echo("metered", &http, json!({"rate": "20/s", "burst": 1}))).await.unwrap();
    for node in &mut nodes[1..] {
        eventually(SPREAD, "registered", async || node.version("metered").await.is_some()).await;
    }
    let start = std::time::Instant::now();
    let windows = 3;
    let admitted = hammer(&nodes, "metered", 4, start + SECOND * windows).await;
    let counts: Vec<usize> = (0..windows)
        .map(|w| {
            admitted
                .iter()
                .filter(|t| t.duration_since(start) >= SECOND * w && t.duration_since(start) < SECOND * (w + 1))
                .count()
        })
        .collect();
    println!("admitted per 1 s window, three gateways together: {counts:?}");
    // The limit is global: three gateways together never admit more than 20 in a second, and 61 over the three
    // seconds (60, and the burst of 1). A gateway counting alone would admit three times as many. An admission is
    // timestamped when its answer arrives, never before Redis admitted it: a stall can only carry the answers in
    // flight (one per hammering task, 12) into the next window, and answers timestamped within the three seconds
    // were all admitted within them. So these bounds cannot flake on a loaded machine; the lower bound asks only
    // that the limit admits at half its rate, not that it refuses everything.
    let in_flight = nodes.len() * 4;
    for (w, count) in counts.iter().enumerate() {
        assert!(*count <= 20 + in_flight, "window {w}: {count} admitted, more than 20 and the answers in flight");
    }
    let within: usize = counts.iter().sum();
    assert!(within <= 61, "{within} admitted within 3 s: more than 20/s ({counts:?})");
    assert!(within >= 30, "{within} admitted within 3 s: under half of 20/s ({counts:?})");
    for node in nodes {
        node.kill().await;
    }
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_session_budget_is_shared_by_every_gateway() {
    let prefix = Prefix::new(&redis_url());
    let http = start_http().await;
    let mut nodes = support::cluster::fleet::start(3, &redis_url(), &prefix.prefix, "[budgets]\nmax_calls = 5\n").await;
    nodes[0].register(echo("step", &http, json!({}))).await.unwrap();
    for node in &mut nodes[1..] {
        eventually(SPREAD, "registered", async || node.version("step").await.is_some()).await;
    }
    let session = pb::CallContext { session_id: "s-shared".into(), ..Default::default() };
    let mut kinds = Vec::new();
    for i in 0..8 {
        let message = nodes[i % 3].call(&format!("c{i}"), "step", "{}", session.clone()).await;
        kinds.push(kind(&message));
    }
    let mut want = vec![pb::ErrorKind::Unspecified; 5];
    want.extend([pb::ErrorKind::BudgetExceeded; 3]);
    assert_eq!(kinds, want, "five calls in all, through whichever gateway");
    let other = pb::CallContext { session_id: "s-other".into(), ..Default::default() };
    assert_eq!(kind(&nodes[2].call("o1", "step", "{}", other).await), pb::ErrorKind::Unspecified, "per session");
    for node in nodes {
        node.kill().await;
    }
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_review_waiting_on_one_gateway_is_decided_through_another() {
    let prefix = Prefix::new(&redis_url());
    let http = start_http().await;
    let mut nodes = support::cluster::fleet::start(3, &redis_url(), &prefix.prefix, "").await;
    let mut spec = echo("transfer", &http, json!({}));
    spec["review"] = json!({"required": true});
    nodes[0].register(spec).await.unwrap();
    for node in &mut nodes[1..] {
        eventually(SPREAD, "registered", async || node.version("transfer").await.is_some()).await;
    }
    let mut waiting = nodes[0].gateway.clone();
    let call = pb::ToolCall { id: "pay-1".into(), name: "transfer".into(), arguments: r#"{"amount": 5}"#.into() };
    let request = pb::ExecuteRequest { call: Some(call), ..Default::default() };
    let answer = tokio::spawn(async move { waiting.execute(request).await.unwrap().into_inner().message.unwrap() });

    let mut listed = Vec::new();
    let review = &mut nodes[1].review;
    eventually(SPREAD, "pending on another gateway", async || {
        listed = review.list_pending(pb::ListPendingRequest::default()).await.unwrap().into_inner().pending;
        !listed.is_empty()
    })
    .await;
    assert_eq!((listed[0].call_id.as_str(), listed[0].tool.as_str()), ("pay-1", "transfer"));
    let decided_at = std::time::Instant::now();
    let decide =
        pb::DecideRequest { call_id: "pay-1".into(), action: pb::ReviewAction::Approve.into(), ..Default::default() };
    nodes[2].review.decide(decide.clone()).await.unwrap();
    let message = tokio::time::timeout(SPREAD, answer).await.expect("the waiting gateway learns the decision").unwrap();
    println!("the waiting gateway answered {:?} after the decision", decided_at.elapsed());
    assert_eq!(kind(&message), pb::ErrorKind::Unspecified, "{}", message.content);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&message.content).unwrap(), json!({"amount": 5}));
    let again = nodes[1].review.decide(decide).await.unwrap_err();
    assert_eq!(again.code(), tonic::Code::FailedPrecondition, "decided once, whichever gateway is asked: {again:?}");
    let pending = nodes[2].review.list_pending(pb::ListPendingRequest::default()).await.unwrap().into_inner().pending;
    assert!(pending.is_empty(), "{pending:?}");
    for node in nodes {
        node.kill().await;
    }
}

/// Calls of each command Redis has run, from `INFO commandstats`.
fn command_calls(url: &str) -> std::collections::HashMap<String, u64> {
    let info: String = redis::cmd("INFO").arg("commandstats").query(&mut support::cluster::connect(url)).unwrap();
    info.lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest.split(',').find_map(|kv| kv.strip_prefix("calls="))?.parse().ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

#[tokio::test]
#[ignore = "needs redis-server on PATH; .ci/run runs it"]
async fn a_call_costs_one_redis_round_trip_with_a_global_limit_and_none_without() {
    let redis = PrivateRedis::start();
    let http = start_http().await;
    let mut node = support::cluster::fleet::Node::start(&redis.url(), "trips", "[budgets]\nmax_calls = 1000\n").await;
    node.register(echo("free", &http, json!({}))).await.unwrap();
    node.register(echo("local", &http, json!({"rate": "100000/s", "scope": "GATEWAY"}))).await.unwrap();
    node.register(echo("global", &http, json!({"rate": "100000/s"}))).await.unwrap();
    let scripts = |stats: &std::collections::HashMap<String, u64>| {
        ["evalsha", "eval", "hget", "hincrby", "get", "set", "incr"]
            .iter()
            .map(|c| stats.get(*c).copied().unwrap_or(0))
            .collect::<Vec<_>>()
    };
    let calls = 100;
    for (name, session, per_call) in
        [("free", "", 0), ("local", "", 0), ("global", "", 1), ("free", "s1", 1), ("global", "s2", 1)]
    {
        let context = pb::CallContext { session_id: session.into(), ..Default::default() };
        // Warm: the first call of a script loads it (NOSCRIPT, then EVAL).
        node.call("warm", name, "{}", context.clone()).await;
        let before = command_calls(&redis.url());
        for i in 0..calls {
            let answer = node.call(&format!("c{i}"), name, "{}", context.clone()).await;
            assert_eq!(kind(&answer), pb::ErrorKind::Unspecified, "{name}: {}", answer.content);
        }
        let after = command_calls(&redis.url());
        let (b, a) = (scripts(&before), scripts(&after));
        // A script is one round trip. The commands it runs inside count too, so the others are checked only
        // where no script runs; GETs of the registry's generation run on the follower's timer, not per call.
        let per_call_scripts = (a[0] + a[1] - b[0] - b[1]) as f64 / calls as f64;
        let others: u64 = (2..b.len()).filter(|&i| i != 4).map(|i| a[i] - b[i]).sum();
        println!("{name} (session {session:?}): {per_call_scripts} round trips (scripts) per call");
        assert_eq!(per_call_scripts, per_call as f64, "{name} in session {session:?}");
        if per_call == 0 {
            assert_eq!(others, 0, "{name}: no command at all");
        }
    }
    node.kill().await;
}
