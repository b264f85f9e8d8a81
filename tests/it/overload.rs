//! Overload shedding over real gRPC: past `limits.max_calls_in_flight`, `Execute` and `ExecuteBatch` answer at
//! once with UNAVAILABLE and a retry hint, health still answers, the shed requests are counted, and once the
//! calls in flight finish the gateway takes calls again. Calls with large arguments are checked off the async
//! workers.

use crate::support;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::{Gateway, start_gateway, temp_config};
use serde_json::json;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolgate::pb::v1::{self as pb, tool_runtime_client::ToolRuntimeClient};
use toolgate::telemetry::{RawTelemetry, TelemetrySettings};

fn execute(name: &str, arguments: &str) -> pb::ExecuteRequest {
    static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = format!("c{}", IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let call = pb::ToolCall { id, name: name.into(), arguments: arguments.into() };
    pb::ExecuteRequest { call: Some(call), ..Default::default() }
}

/// `GET /metrics` over HTTP/1.1: the body.
async fn scrape(addr: SocketAddr) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("the metrics endpoint accepts");
    let request = format!("GET /metrics HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default()
}

/// Starts `n` calls of `rendezvous` through the gateway, and waits until the tool server holds all of them.
async fn hold_calls(gw: &Gateway, runtime: &Runtime, n: usize) -> Vec<tokio::task::JoinHandle<pb::ToolMessage>> {
    let held: Vec<_> = (0..n)
        .map(|_| {
            let mut client = gw.gateway.clone();
            tokio::spawn(async move {
                let response = client.execute(execute("rendezvous", "{}")).await.expect("a held call is answered");
                response.into_inner().message.expect("a message")
            })
        })
        .collect();
    for _ in 0..2000 {
        if runtime.calls.load(std::sync::atomic::Ordering::SeqCst) >= n {
            return held;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the tool server never held {n} calls: {} arrived", runtime.calls.load(std::sync::atomic::Ordering::SeqCst));
}

#[tokio::test]
async fn past_the_cap_calls_are_shed_at_once_with_a_retry_hint_and_health_still_answers() {
    let (_dir, mut config) = temp_config();
    config.max_calls_in_flight = 2;
    let metrics = support::free_addr();
    let raw = RawTelemetry { prometheus_listen: Some(metrics.to_string()), ..RawTelemetry::default() };
    config.telemetry = TelemetrySettings::from_raw(raw, None).unwrap();
    let gw_config = config.clone();
    let mut gw = start_gateway(gw_config).await;
    // Three parties: the two calls the gateway lets in, and the test itself, which releases them.
    let runtime = Runtime::with_rendezvous(3);
    let target = start_runtime(runtime.clone()).await;
    let spec =
        json!({"name": "rendezvous", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}}});
    gw.register(spec).await.unwrap();
    let held = hold_calls(&gw, &runtime, 2).await;

    let third = tokio::time::timeout(Duration::from_secs(10), gw.gateway.execute(execute("rendezvous", "{}")));
    let shed = third.await.expect("the third call is answered at once").expect_err("the third call is shed");
    assert_eq!(shed.code(), tonic::Code::Unavailable, "{shed:?}");
    assert!(shed.message().contains("limit of 2 calls in flight"), "{}", shed.message());
    let pushback = shed.metadata().get("grpc-retry-pushback-ms").map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(pushback.as_deref(), Some("100"), "a retry hint");
    let batch = pb::ExecuteBatchRequest {
        calls: vec![pb::ToolCall { id: "b1".into(), name: "rendezvous".into(), arguments: "{}".into() }],
        ..Default::default()
    };
    let shed_batch = gw.gateway.execute_batch(batch).await.expect_err("a batch is shed too");
    assert_eq!(shed_batch.code(), tonic::Code::Unavailable);
    let mut health = tonic_health::pb::health_client::HealthClient::new(support::connect(gw.addr).await);
    health.check(tonic_health::pb::HealthCheckRequest::default()).await.expect("health answers while saturated");
    assert_eq!(runtime.calls.load(std::sync::atomic::Ordering::SeqCst), 2, "shed calls never reached the tool");

    let text = scrape(metrics).await;
    let line = |method: &str| {
        text.lines()
            .find(|l| l.starts_with("toolgate_calls_shed_total{") && l.contains(&format!("method=\"{method}\"")))
            .map(|l| l.rsplit(' ').next().unwrap().to_owned())
    };
    assert_eq!((line("Execute"), line("ExecuteBatch")), (Some("1".into()), Some("1".into())), "{text}");

    // The test joins the rendezvous itself: the held calls finish and the gateway has room again.
    let mut direct =
        ToolRuntimeClient::new(support::connect(target.trim_start_matches("http://").parse().unwrap()).await);
    let invoke = pb::InvokeRequest { tool: "rendezvous".into(), arguments: "{}".into(), ..Default::default() };
    direct.invoke(invoke).await.unwrap();
    for call in held {
        assert_eq!(call.await.unwrap().content, "met");
    }
    let runtime2 = Runtime::default();
    let echo = start_runtime(runtime2).await;
    gw.register(json!({"name": "echo", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": echo}}}))
        .await
        .unwrap();
    assert_eq!(gw.call("echo", r#"{"a": 1}"#).await.content, r#"{"a": 1}"#, "calls run again once there is room");
    gw.stop().await;
}

#[tokio::test]
async fn large_arguments_answer_as_inline_ones_do_through_the_pipeline_pool() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["text", "n"]});
    gw.register(json!({"name": "echo", "input_schema": schema, "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();
    let text = "x".repeat(64 * 1024);
    let valid = json!({"text": text, "n": 1}).to_string();
    assert_eq!(gw.call("echo", &valid).await.content, valid, "a valid large call passes through untouched");
    let repaired = gw.call("echo", &json!({"text": text, "n": "2"}).to_string()).await;
    assert_eq!(repaired.repairs.len(), 1, "repaired as an inline call would be: {:?}", repaired.error);
    let invalid = gw.call("echo", &json!({"text": text, "n": "two"}).to_string()).await;
    assert_eq!(support::kind_of(&invalid), pb::ErrorKind::InvalidArguments);
    gw.stop().await;
}
