//! Metrics over real gRPC: into a real OTLP/gRPC receiver and out of the Prometheus endpoint, with the labels the
//! dashboard reads; and a collector that never answers does not slow a call down.

use crate::support;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::otlp::{BlackHole, Collector, Point};
use crate::support::{Gateway, city_schema, start_gateway, temp_config};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolgate::pb::v1::{self as pb, ReviewMode};
use toolgate::telemetry::{RawTelemetry, TelemetrySettings};

const WAIT: Duration = Duration::from_secs(10);

/// A config exporting to `endpoint` every 100 ms (50 ms), with the Prometheus endpoint on a free port.
async fn config(endpoint: &str, raw: RawTelemetry) -> (tempfile::TempDir, toolgate::Config, SocketAddr) {
    let (dir, mut config) = temp_config();
    let scrape = support::free_addr();
    let raw = RawTelemetry {
        otlp_endpoint: Some(endpoint.to_owned()),
        export_interval_ms: raw.export_interval_ms.or(Some(100)),
        prometheus_listen: Some(scrape.to_string()),
        ..raw
    };
    config.telemetry = TelemetrySettings::from_raw(raw, None).unwrap();
    (dir, config, scrape)
}

/// `GET path` over HTTP/1.1: the status code and the body.
async fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("the metrics endpoint accepts");
    let auth = token.map(|t| format!("authorization: Bearer {t}\r\n")).unwrap_or_default();
    let request = format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\n{auth}connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status line");
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// The scrape's sample lines of `metric` that carry every one of `labels`.
fn samples<'a>(scrape: &'a str, metric: &str, labels: &[(&str, &str)]) -> Vec<&'a str> {
    scrape
        .lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")) || l.starts_with(&format!("{metric} ")))
        .filter(|l| labels.iter().all(|(k, v)| l.contains(&format!("{k}=\"{v}\""))))
        .collect()
}

fn has(points: &[Point], labels: &[(&str, &str)], value: f64) -> bool {
    points.iter().any(|p| p.value == value && labels.iter().all(|(k, v)| p.has(k, v)))
}

async fn traffic(gw: &mut Gateway) -> String {
    let target = start_runtime(Runtime::default()).await;
    let tool = |name: &str, schema: Value| json!({"name": name, "input_schema": schema, "backend": {"grpc": {"target": target}}});
    gw.register(tool("get_weather", city_schema())).await.unwrap();
    let mut limited = tool("limited", json!({"type": "object"}));
    limited["limits"] = json!({"rate": "1/m"});
    gw.register(limited).await.unwrap();
    let mut secret = tool("secret", json!({"type": "object", "properties": {"user_id": {"type": "string"}}}));
    secret["inject"] = json!([{"param": "user_id", "from": "user_id"}]);
    gw.register(secret).await.unwrap();
    let mut deploy = tool("deploy", city_schema());
    deploy["review"] = json!({"required": true});
    gw.register(deploy).await.unwrap();

    let alice = pb::CallContext { user_id: "alice".into(), session_id: "s-1".into(), ..Default::default() };
    gw.call_as("get_weather", r#"{"city": "Oslo"}"#, alice.clone()).await;
    let repaired = gw.call_as("get_weather", r#"{"City": "Oslo"}"#, alice.clone()).await;
    gw.call_as("get_weather", "{}", alice.clone()).await;
    gw.call_as("limited", "{}", alice.clone()).await;
    gw.call_as("limited", "{}", alice.clone()).await;
    gw.call_as("secret", r#"{"user_id": "mallory"}"#, alice.clone()).await;
    gw.call_as("no_such_tool", "{}", alice.clone()).await;
    // Asked for twice: the second answer is the same call's, so its repair is not counted again.
    let call = pb::ToolCall { id: "c-review".into(), name: "deploy".into(), arguments: r#"{"City": "Rome"}"#.into() };
    let defer = pb::ExecuteRequest { call: Some(call), context: Some(alice), review_mode: ReviewMode::Defer.into() };
    for _ in 0..2 {
        gw.gateway.execute(defer.clone()).await.unwrap();
    }
    repaired.repairs[0].rule.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_arrive_with_bounded_labels_over_otlp_and_prometheus() {
    let collector = Collector::start().await;
    let (_dir, config, scrape_addr) = config(&collector.endpoint, RawTelemetry::default()).await;
    let mut gw = start_gateway(config).await;
    let rule = traffic(&mut gw).await;

    let expected: [(&[(&str, &str)], f64); 5] = [
        (&[("tool", "get_weather"), ("status", "SUCCESS")], 2.0),
        (&[("tool", "get_weather"), ("status", "ERROR"), ("error.type", "INVALID_ARGUMENTS")], 1.0),
        (&[("tool", "limited"), ("status", "ERROR"), ("error.type", "RATE_LIMITED")], 1.0),
        (&[("tool", "<unresolved>"), ("error.type", "TOOL_NOT_FOUND")], 1.0),
        (&[("tool", "deploy"), ("status", "PENDING_REVIEW")], 2.0),
    ];
    let calls = collector
        .wait_for_points("toolgate.tool.calls", |p| expected.iter().all(|(labels, n)| has(p, labels, *n)), WAIT)
        .await;
    assert!(calls.iter().all(|p| p.attributes.values().all(|v| v != "alice" && v != "s-1")), "no user label");
    let once = |metric: &'static str, labels: &'static [(&'static str, &'static str)]| {
        collector.wait_for_points(metric, move |p| has(p, labels, 1.0), WAIT)
    };
    once("toolgate.tool.rate_limited", &[("tool", "limited")]).await;
    once("toolgate.tool.injection_overrides", &[("tool", "secret")]).await;
    once("toolgate.review.pending", &[]).await;
    let repairs = collector.wait_for_points("toolgate.tool.repairs", |p| !p.is_empty(), WAIT).await;
    assert!(has(&repairs, &[("tool", "get_weather"), ("rule", &rule)], 1.0), "{repairs:?}");
    assert!(has(&repairs, &[("tool", "deploy"), ("rule", &rule)], 1.0), "counted once for two answers: {repairs:?}");
    assert!(repairs.iter().all(|p| p.attributes.get("rule").map(String::as_str) != Some("injected_override_removed")));
    let tools = collector.wait_for_points("toolgate.registry.tools", |p| has(p, &[], 4.0), WAIT).await;
    assert_eq!(tools.len(), 1);
    let durations = collector.wait_for_points("toolgate.tool.duration", |p| !p.is_empty(), WAIT).await;
    assert!(has(&durations, &[("tool", "get_weather"), ("status", "SUCCESS")], 2.0), "{durations:?}");

    let (status, scrape) = get(scrape_addr, "/metrics", None).await;
    assert_eq!(status, 200, "{scrape}");
    let limited = samples(&scrape, "toolgate_tool_calls_total", &[("tool", "limited"), ("error_type", "RATE_LIMITED")]);
    assert!(limited.len() == 1 && limited[0].ends_with(" 1"), "{limited:?}");
    let buckets = samples(&scrape, "toolgate_tool_duration_seconds_bucket", &[("tool", "get_weather"), ("le", "+Inf")]);
    assert!(buckets.iter().any(|l| l.ends_with(" 2")), "{buckets:?}");
    assert!(samples(&scrape, "toolgate_review_pending", &[]).iter().any(|l| l.ends_with(" 1")), "{scrape}");
    assert_dashboard_reads_only_real_metrics(&scrape);
    gw.stop().await;
}

/// Every `toolgate_*` series the Grafana dashboard queries exists in a real scrape.
fn assert_dashboard_reads_only_real_metrics(scrape: &str) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/grafana/toolgate.json");
    let dashboard = std::fs::read_to_string(path).expect("the dashboard ships with the repository");
    serde_json::from_str::<Value>(&dashboard).expect("the dashboard is JSON");
    let mut names: Vec<&str> = dashboard
        .match_indices("toolgate_")
        .map(|(at, _)| {
            let rest = &dashboard[at..];
            &rest[..rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len())]
        })
        .collect();
    names.sort();
    names.dedup();
    assert!(names.len() >= 8, "the dashboard queries the gateway's metrics: {names:?}");
    for name in names {
        assert!(
            !samples(scrape, name, &[]).is_empty(),
            "the dashboard reads {name}, which the gateway does not export"
        );
    }
}

#[tokio::test]
async fn the_scrape_endpoint_is_closed_by_the_admin_token() {
    let (_dir, mut config) = temp_config();
    let scrape_addr = support::free_addr();
    let raw = RawTelemetry { prometheus_listen: Some(scrape_addr.to_string()), ..RawTelemetry::default() };
    config.telemetry = TelemetrySettings::from_raw(raw, None).unwrap();
    config.tokens.admin = Some("s3cret".into());
    let gw = start_gateway(config).await;

    assert_eq!(get(scrape_addr, "/metrics", None).await.0, 401);
    assert_eq!(get(scrape_addr, "/metrics", Some("guess")).await.0, 401);
    let (status, body) = get(scrape_addr, "/metrics", Some("s3cret")).await;
    assert_eq!(status, 200);
    assert!(samples(&body, "toolgate_registry_tools", &[]).iter().any(|l| l.ends_with(" 0")), "{body}");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_never_answers_does_not_slow_calls_and_drops_are_counted() {
    let hole = BlackHole::start().await;
    let raw = RawTelemetry {
        export_interval_ms: Some(20),
        export_timeout_ms: Some(3_000),
        max_queued_spans: Some(16),
        ..RawTelemetry::default()
    };
    let (_dir, config, scrape_addr) = config(&hole.endpoint, raw).await;
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    let spec = json!({"name": "echo", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}}});
    gw.register(spec).await.unwrap();

    // Each export holds the exporter for 3 s: a call that waited on it would take that long. Measured by the
    // gateway itself (`duration_us`, from the request's arrival to its answer), which the scheduling of a loaded
    // machine between test and gateway does not inflate; 3 s is the stall this guards against.
    let mut slowest = Duration::ZERO;
    for _ in 0..200 {
        let message = gw.call("echo", "{}").await;
        slowest = slowest.max(Duration::from_micros(message.duration_us));
        assert!(message.error.is_none(), "{message:?}");
    }
    assert!(slowest < Duration::from_secs(3), "a call waited on the collector: {slowest:?}");

    let (_, scrape) = get(scrape_addr, "/metrics", None).await;
    let dropped = samples(&scrape, "toolgate_telemetry_spans_dropped_total", &[]);
    let count: f64 = dropped.first().and_then(|l| l.rsplit(' ').next()?.parse().ok()).expect("the dropped count");
    assert!(count >= 350.0, "2 spans per call (400), 16 queued at most: {count} dropped");

    let started = Instant::now();
    gw.stop().await;
    assert!(started.elapsed() < Duration::from_secs(15), "shutdown gives up on the collector: {:?}", started.elapsed());
}
