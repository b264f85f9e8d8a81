//! Issue 21, defects 3 and 7: a huge unknown name is refused cheaply with a bounded answer, suggestions stay cheap
//! and tenant-scoped among many tools, and a spec with a bad header, oversized metadata or an oversized schema is
//! refused at registration with an error naming the field and the bound. Issue 47: framing and hop-by-hop headers
//! are refused too, and an error answer echoes a bounded part of the arguments.

use crate::support::alone;
use crate::support::{Gateway, kind_of, start_gateway, temp_config};
use prost::Message;
use serde_json::{Value, json};
use std::time::Duration;
use toolgate::pb::v1 as pb;
use toolgate::registry::ToolSpec;

/// A spec with a backend that is never called.
fn spec(name: &str) -> Value {
    json!({"name": name, "input_schema": {"type": "object"}, "backend": {"grpc": {"target": "http://127.0.0.1:1"}}})
}

/// Registers `count` tools `tool_00000`… eight at a time.
async fn register_many(gw: &Gateway, count: usize) {
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..8 {
        let mut registry = gw.registry.clone();
        tasks.spawn(async move {
            for i in (worker..count).step_by(8) {
                let spec: ToolSpec = serde_json::from_value(spec(&format!("tool_{i:05}"))).unwrap();
                let request = pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) };
                registry.register_tool(request).await.expect("registered");
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
}

/// CPU time of this whole process (gateway and client), from /proc/self/stat, in clock ticks of 10 ms.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

async fn registration_error(gw: &mut Gateway, spec: Value) -> String {
    let Err(status) = gw.register(spec).await else { panic!("accepted") };
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{}", status.message());
    assert!(status.message().len() < 1024, "the error quotes a bounded excerpt: {} bytes", status.message().len());
    status.message().to_owned()
}

/// `Gateway::call` makes the call id from the name, and a call id is echoed whole: this one is short.
async fn call_with_a_short_id(gw: &mut Gateway, name: String) -> pb::ToolMessage {
    let call = pb::ToolCall { id: "c1".into(), name, arguments: "{}".into() };
    let request = pb::ExecuteRequest { call: Some(call), context: Some(Default::default()), ..Default::default() };
    gw.gateway.execute(request).await.expect("a message").into_inner().message.expect("a message")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_unknown_name_among_many_tools_is_refused_cheaply_with_a_bounded_answer() {
    if !alone::in_own_process() {
        return; // it ran, and passed, in a process of its own: it measures the process
    }
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    register_many(&gw, 1_000).await;
    // 7 MiB is the largest size the tests send under the default 8 MiB `limits.max_request_bytes`.
    for (size, residue) in [(1 << 20, false), (7 << 20, false), (1 << 20, true)] {
        let name = if residue { format!("tool_00001<|{}", "x".repeat(size)) } else { "tool".repeat(size / 4) };
        let (cpu, rss) = (process_cpu(), rss_bytes());
        let message = call_with_a_short_id(&mut gw, name).await;
        let (spent, grown) = (process_cpu() - cpu, rss_bytes().saturating_sub(rss));
        assert!(spent < Duration::from_secs(1), "a {size}-byte name took {spent:?} of CPU");
        assert!(grown < 50 << 20, "a {size}-byte name grew RSS by {grown} bytes");
        if residue {
            assert_eq!(message.name, "tool_00001", "the residue is cut: {}", message.content);
            let repair = &message.repairs[0];
            assert!(repair.before.len() < 200 && repair.before.ends_with("…\""), "{}", repair.before);
            continue;
        }
        assert_eq!(kind_of(&message), pb::ErrorKind::ToolNotFound);
        assert!(message.encoded_len() < 2048, "a {size}-byte name gave a {}-byte answer", message.encoded_len());
        let error = message.error.unwrap();
        assert!(error.suggestions.is_empty() && message.content.contains("…"), "{}", message.content);
        assert!(error.message.len() < 200 && message.name.chars().count() == 129, "{}", error.message);
    }
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_miss_among_many_tools_suggests_the_closest_names_of_its_tenant_only() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    register_many(&gw, 1_000).await;
    let mut own = spec("toolx_00042");
    own["tenant"] = json!("acme");
    gw.register(own).await.unwrap();
    let suggested = |m: pb::ToolMessage| m.error.unwrap().suggestions;
    assert_eq!(suggested(gw.call("tool_0042", "{}").await), ["tool_00042", "tool_00142", "tool_00242"]);
    let acme = pb::CallContext { tenant: "acme".into(), ..Default::default() };
    assert!(suggested(gw.call_as("toolx0042", "{}", acme).await).contains(&"toolx_00042".to_owned()));
    assert!(!suggested(gw.call("toolx0042", "{}").await).contains(&"toolx_00042".to_owned()), "acme's own");
    gw.stop().await;
}

#[tokio::test]
async fn an_invalid_http_header_is_refused_at_registration() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let with_headers = |headers: Value| {
        json!({"name": "h", "input_schema": {"type": "object"},
            "backend": {"http": {"url": "http://127.0.0.1:1/x", "headers": headers}}})
    };
    let err = registration_error(&mut gw, with_headers(json!({"bad header": "v"}))).await;
    assert!(err.contains("backend http.headers \"bad header\": not a valid HTTP header name"), "{err}");
    let err = registration_error(&mut gw, with_headers(json!({"x-token": "a\nb"}))).await;
    assert!(err.contains("\"x-token\": the value is not a valid HTTP header value"), "{err}");
    gw.register(with_headers(json!({"x-token": "secret"}))).await.expect("a valid header is accepted");
    // Framing and hop-by-hop headers belong to the gateway's HTTP client, and the per-call ones to the gateway.
    let refused = [
        ("Host", "frames the request"),
        ("content-length", "frames the request"),
        ("Transfer-Encoding", "frames the request"),
        ("expect", "frames the request"),
        ("Connection", "hop-by-hop"),
        ("keep-alive", "hop-by-hop"),
        ("TE", "hop-by-hop"),
        ("trailer", "hop-by-hop"),
        ("upgrade", "hop-by-hop"),
        ("proxy-connection", "hop-by-hop"),
        ("Proxy-Authorization", "hop-by-hop"),
        ("proxy-authenticate", "hop-by-hop"),
        ("X-Toolgate-Call-Id", "set by the gateway for each call"),
    ];
    for (name, why) in refused {
        let err = registration_error(&mut gw, with_headers(json!({name: "v"}))).await;
        assert!(err.contains(&format!("http.headers {name:?}: may not be set: it")) && err.contains(why), "{err}");
    }
    gw.stop().await;
}

/// Issue 47: a TOOL_NOT_FOUND answer repeated the whole `original_arguments`: a 1 MB call answered 1 MB, and a
/// batch of 128 such calls more than a gRPC client accepts by default (4 MiB). It echoes at most 4 KiB now.
#[tokio::test]
async fn an_error_answer_echoes_a_bounded_part_of_the_arguments() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let big = format!("{{\"note\": \"{}\"}}", "é".repeat(500_000));
    let m = gw.call("nowhere", &big).await;
    assert_eq!(kind_of(&m), pb::ErrorKind::ToolNotFound);
    let echoed = m.error.unwrap().original_arguments;
    let kept = echoed.strip_suffix('…').expect("marked as cut");
    assert!(kept.len() <= toolgate::pipeline::MAX_ECHOED_ARGUMENTS && big.starts_with(kept), "{}", echoed.len());

    let arguments = format!("{{\"x\": \"{}\"}}", "a".repeat(50_000));
    let calls = (0..128)
        .map(|i| pb::ToolCall { id: format!("c{i}"), name: "nowhere".into(), arguments: arguments.clone() })
        .collect();
    let batch = pb::ExecuteBatchRequest { calls, ..Default::default() };
    let answer = gw.gateway.execute_batch(batch).await.expect("the answer fits a client's default 4 MiB limit");
    let messages = answer.into_inner().messages;
    assert_eq!(messages.len(), 128);
    assert!(messages.iter().all(|m| kind_of(m) == pb::ErrorKind::ToolNotFound));
    gw.stop().await;
}

#[tokio::test]
async fn metadata_past_its_bounds_is_refused_naming_the_field_and_the_bound() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let with = |field: &str, value: Value| {
        let mut spec = json!({"name": "m", "input_schema": {"type": "object", "properties": {"a": {}}},
            "backend": {"grpc": {"target": "http://127.0.0.1:1"}}});
        spec[field] = value;
        spec
    };
    let many = |n: usize| (0..n).map(|i| (format!("k{i}"), json!("v"))).collect::<serde_json::Map<_, _>>();
    let cases = [
        (with("tenant", json!("t".repeat(1 << 20))), "tenant \"tttt"),
        (with("tenant", json!("a\u{0}b")), "no control characters"),
        (with("description", json!("d".repeat(5 << 20))), "description is 5242880 bytes, more than the 16384 allowed"),
        (with("labels", Value::Object(many(100_000))), "labels has 100000 entries, more than the 64 allowed"),
        (with("labels", json!({"k": "v".repeat(2000)})), "labels value of \"k\" is longer than 1024 bytes"),
        (with("inject", json!(vec![json!({"param": "a", "from": "user_id"}); 65])), "more than the 64 allowed"),
        (with("repair", json!({"aliases": many(300)})), "repair.aliases has 300 entries, more than the 256 allowed"),
    ];
    for (spec, want) in cases {
        let err = registration_error(&mut gw, spec).await;
        assert!(err.contains(want), "{err:?} lacks {want:?}");
    }
    gw.register(with("description", json!("d".repeat(16 * 1024)))).await.expect("at the bound is accepted");
    gw.stop().await;
}

/// An object schema of about `bytes` bytes of compact JSON.
fn schema_of(bytes: usize) -> Value {
    let properties: serde_json::Map<_, _> =
        (0..bytes / 40).map(|i| (format!("p{i:07}"), json!({"type": "string", "maxLength": 9}))).collect();
    json!({"type": "object", "properties": properties})
}

#[tokio::test]
async fn a_schema_over_the_limit_is_refused_at_registration() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let with_schema = |key: &str, schema: Value| {
        let mut spec = spec("big");
        spec[key] = schema;
        spec
    };
    let err = registration_error(&mut gw, with_schema("input_schema", schema_of(1_200_000))).await;
    assert!(err.contains("input_schema is larger than limits.max_schema_bytes (1048576 bytes)"), "{err}");
    gw.register(with_schema("input_schema", schema_of(900_000))).await.expect("under the default bound");
    gw.stop().await;

    let (_dir, mut config) = temp_config();
    config.documents = config.documents.with_max_schema_bytes(4096);
    let mut gw = start_gateway(config).await;
    let err = registration_error(&mut gw, with_schema("output_schema", schema_of(8192))).await;
    assert!(err.contains("output_schema is larger than limits.max_schema_bytes (4096 bytes)"), "{err}");
    gw.register(with_schema("input_schema", schema_of(2048))).await.expect("under the configured bound");
    gw.stop().await;
}
