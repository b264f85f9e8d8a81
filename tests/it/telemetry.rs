//! Traces over real gRPC into a real OTLP/gRPC receiver: the call's span joins the agent's trace, carries the
//! GenAI attributes and ours, has its stages and backend attempts as children, and the backends get the context.

use crate::support;
use crate::support::backends::{Runtime, start_http, start_runtime};
use crate::support::otlp::{Collector, SpanRecord, count};
use crate::support::{Gateway, city_schema, start_gateway, temp_config};
use serde_json::{Value, json};
use std::time::Duration;
use toolgate::pb::v1 as pb;

type Client = pb::tool_gateway_client::ToolGatewayClient<tonic::transport::Channel>;
use toolgate::telemetry::{RawTelemetry, TelemetrySettings};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";
const WAIT: Duration = Duration::from_secs(10);

/// A config exporting to `collector` every 100 ms; keep the directory until the gateway stops.
fn traced(collector: &Collector, record_payloads: bool) -> (tempfile::TempDir, toolgate::Config) {
    let (dir, mut config) = temp_config();
    let raw = RawTelemetry {
        otlp_endpoint: Some(collector.endpoint.clone()),
        export_interval_ms: Some(100),
        record_payloads: Some(record_payloads),
        max_payload_bytes: Some(200),
        ..RawTelemetry::default()
    };
    config.telemetry = TelemetrySettings::from_raw(raw, None).unwrap();
    (dir, config)
}

async fn gateway_with_tools(config: toolgate::Config) -> Gateway {
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    let http = start_http().await;
    let grpc = |name: &str, schema: Value| json!({"name": name, "input_schema": schema, "backend": {"grpc": {"target": target}}});
    gw.register(grpc("traceparent", json!({"type": "object"}))).await.unwrap();
    gw.register(grpc("get_weather", city_schema())).await.unwrap();
    let http_tool = json!({"name": "http_trace", "input_schema": {"type": "object"},
        "backend": {"http": {"url": format!("{http}/traceparent")}}});
    gw.register(http_tool).await.unwrap();
    let mut secret = grpc(
        "secret",
        json!({"type": "object", "properties": {"user_id": {"type": "string"}, "note": {"type": "string"}}}),
    );
    secret["inject"] = json!([{"param": "user_id", "from": "user_id"}]);
    gw.register(secret).await.unwrap();
    gw
}

/// Execute with the agent's `traceparent` in the metadata.
async fn call_traced(client: &mut Client, id: &str, name: &str, arguments: &str) -> pb::ToolMessage {
    let call = pb::ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() };
    let context = pb::CallContext {
        tenant: "acme".into(),
        user_id: "alice-secret-id".into(),
        session_id: "s-1".into(),
        ..Default::default()
    };
    let mut request =
        tonic::Request::new(pb::ExecuteRequest { call: Some(call), context: Some(context), ..Default::default() });
    request.metadata_mut().insert("traceparent", format!("00-{TRACE}-{PARENT}-01").parse().unwrap());
    client.execute(request).await.unwrap().into_inner().message.unwrap()
}

fn find<'a>(spans: &'a [SpanRecord], name: &str) -> &'a SpanRecord {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no span {name:?} in {:?}", names(spans)))
}

/// How many spans have a name starting with `prefix`. A test waits for every span it reads: a call's span ends
/// after its children's, so it can come in a later export than theirs.
fn names(spans: &[SpanRecord]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

fn children<'a>(spans: &'a [SpanRecord], parent: &SpanRecord) -> Vec<&'a SpanRecord> {
    spans.iter().filter(|s| s.parent_span_id == parent.span_id).collect()
}

/// `00-{trace}-{span}-{flags}` split into trace id and span id.
fn parse_traceparent(header: &str) -> (String, String) {
    let parts: Vec<&str> = header.split('-').collect();
    assert_eq!(parts.len(), 4, "a traceparent: {header:?}");
    (parts[1].to_owned(), parts[2].to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_span_joins_the_agents_trace_and_its_backend_continues_it() {
    let collector = Collector::start().await;
    let (_dir, config) = traced(&collector, false);
    let mut gw = gateway_with_tools(config).await;

    let grpc = call_traced(&mut gw.gateway, "call-g", "traceparent", "{}").await;
    let http = call_traced(&mut gw.gateway, "call-h", "http_trace", "{}").await;
    let spans = collector.wait_for_spans(|s| count(s, "backend ") >= 2 && count(s, "execute_tool ") >= 2, WAIT).await;

    let call = find(&spans, "execute_tool traceparent");
    assert_eq!((call.trace_id.as_str(), call.parent_span_id.as_str()), (TRACE, PARENT), "a child of the agent's span");
    assert_eq!(call.kind, 1, "INTERNAL, as the GenAI conventions ask");
    assert_eq!(call.service_name, "toolgate");
    for (key, value) in [
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "traceparent"),
        ("gen_ai.tool.call.id", "call-g"),
        ("gen_ai.tool.type", "function"),
        ("toolgate.status", "SUCCESS"),
        ("toolgate.tenant", "acme"),
        ("toolgate.door", "grpc"),
    ] {
        assert_eq!(call.str_attr(key), Some(value), "{key} in {:?}", call.attributes);
    }
    assert_eq!((call.int_attr("toolgate.attempts"), call.int_attr("toolgate.repair.count")), (Some(1), Some(0)));
    assert_eq!(call.status_code, 0, "unset on success");
    assert!(
        call.attr("error.type").is_none() && call.attr("gen_ai.tool.call.arguments").is_none(),
        "not recorded by default"
    );

    let stages = children(&spans, call);
    assert_eq!(names(&stages.iter().map(|s| (*s).clone()).collect::<Vec<_>>()), ["backend traceparent"]);
    // The pure stages' time is recorded, and is part of the call's, never more than all of it.
    let pipeline_us = call.int_attr("toolgate.pipeline.duration_us").expect("the pipeline's time is recorded");
    let pipeline_us = u64::try_from(pipeline_us).expect("a duration is not negative");
    assert!(pipeline_us <= grpc.duration_us, "pipeline {pipeline_us} µs within the call's {} µs", grpc.duration_us);
    let backend = stages[0];
    assert_eq!((backend.kind, backend.int_attr("toolgate.attempt")), (3, Some(1)), "a CLIENT span per attempt");
    assert_eq!(parse_traceparent(&grpc.content), (TRACE.to_owned(), backend.span_id.clone()), "gRPC metadata");

    let http_backend = find(&spans, "backend http_trace");
    assert_eq!(http_backend.str_attr("toolgate.backend"), Some("http"));
    assert_eq!(parse_traceparent(&http.content), (TRACE.to_owned(), http_backend.span_id.clone()), "HTTP headers");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repaired_and_failed_calls_say_so_on_their_spans() {
    let collector = Collector::start().await;
    let (_dir, config) = traced(&collector, false);
    let mut gw = gateway_with_tools(config).await;

    let repaired = call_traced(&mut gw.gateway, "call-r", "get_weather", r#"{"City": "Oslo"}"#).await;
    assert!(!repaired.repairs.is_empty(), "{repaired:?}");
    let invalid = call_traced(&mut gw.gateway, "call-i", "get_weather", "{}").await;
    assert!(invalid.error.is_some());
    call_traced(&mut gw.gateway, "call-n", "no_such_tool", "{}").await;
    let spans =
        collector.wait_for_spans(|s| s.iter().filter(|s| s.name.starts_with("execute_tool")).count() >= 3, WAIT).await;

    let by_id = |id: &str| {
        spans
            .iter()
            .find(|s| s.str_attr("gen_ai.tool.call.id") == Some(id))
            .unwrap_or_else(|| panic!("no span of {id}"))
    };
    let fixed = by_id("call-r");
    assert_eq!(fixed.int_attr("toolgate.repair.count"), Some(repaired.repairs.len() as i64));
    let rules = fixed.attr("toolgate.repair.rules").and_then(|v| v.as_array()).expect("the rules, as an array");
    assert_eq!(rules[0].as_str(), Some(repaired.repairs[0].rule.as_str()));

    let failed = by_id("call-i");
    assert_eq!((failed.status_code, failed.str_attr("error.type")), (2, Some("INVALID_ARGUMENTS")));
    assert_eq!(failed.str_attr("toolgate.status"), Some("ERROR"));
    assert!(children(&spans, failed).is_empty(), "refused before any backend attempt");
    assert!(failed.int_attr("toolgate.pipeline.duration_us").is_some(), "the pipeline's time is on the call's span");

    let unknown = by_id("call-n");
    assert_eq!(unknown.name, "execute_tool", "an unresolved model-written name never becomes a span name");
    assert_eq!(unknown.str_attr("error.type"), Some("TOOL_NOT_FOUND"));
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batchs_calls_are_siblings_under_the_batch() {
    let collector = Collector::start().await;
    let (_dir, config) = traced(&collector, false);
    let mut gw = gateway_with_tools(config).await;
    let calls = ["a", "b"].map(|id| pb::ToolCall { id: id.into(), name: "traceparent".into(), arguments: "{}".into() });
    let mut request = tonic::Request::new(pb::ExecuteBatchRequest { calls: calls.to_vec(), ..Default::default() });
    request.metadata_mut().insert("traceparent", format!("00-{TRACE}-{PARENT}-01").parse().unwrap());
    gw.gateway.execute_batch(request).await.unwrap();

    let spans =
        collector.wait_for_spans(|s| count(s, "execute_tool_batch") == 1 && count(s, "execute_tool ") >= 2, WAIT).await;
    let batch = find(&spans, "execute_tool_batch");
    assert_eq!((batch.trace_id.as_str(), batch.parent_span_id.as_str()), (TRACE, PARENT));
    let mut ids: Vec<_> =
        children(&spans, batch).iter().map(|s| s.str_attr("gen_ai.tool.call.id").unwrap().to_owned()).collect();
    ids.sort();
    assert_eq!(ids, ["a", "b"]);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_are_recorded_when_asked_truncated_and_without_injected_values() {
    let collector = Collector::start().await;
    let (_dir, config) = traced(&collector, true);
    let mut gw = gateway_with_tools(config).await;
    // The injected value would come right after the note: short enough that truncation cannot hide it.
    let arguments = json!({"note": "hi", "user_id": "mallory"}).to_string();
    let message = call_traced(&mut gw.gateway, "call-p", "secret", &arguments).await;
    assert!(message.error.is_none(), "{message:?}");
    let long = json!({"note": "n".repeat(500)}).to_string();
    call_traced(&mut gw.gateway, "call-long", "secret", &long).await;

    let spans =
        collector.wait_for_spans(|s| s.iter().filter(|s| s.name == "execute_tool secret").count() >= 2, WAIT).await;
    let by_id = |id: &str| spans.iter().find(|s| s.str_attr("gen_ai.tool.call.id") == Some(id)).unwrap();
    let call = by_id("call-p");
    assert_eq!(
        call.str_attr("gen_ai.tool.call.arguments"),
        Some(r#"{"note":"hi"}"#),
        "neither the injected value nor the model's"
    );
    assert!(call.str_attr("gen_ai.tool.call.result").is_some());
    assert_eq!(call.int_attr("toolgate.injection.overrides"), Some(1));
    let truncated = by_id("call-long").str_attr("gen_ai.tool.call.arguments").unwrap();
    assert_eq!((truncated.len(), &truncated[..12]), (200, r#"{"note":"nnn"#), "cut at max_payload_bytes");

    // Refused before it ran: what the model sent is recorded, less what it wrote for the injected parameter.
    let refused =
        call_traced(&mut gw.gateway, "call-x", "secret", r#"{"note": {"not": "a string"}, "UserId": "mallory"}"#).await;
    assert!(refused.error.is_some(), "{refused:?}");
    let spans =
        collector.wait_for_spans(|s| s.iter().any(|s| s.str_attr("gen_ai.tool.call.id") == Some("call-x")), WAIT).await;
    let refused = spans.iter().find(|s| s.str_attr("gen_ai.tool.call.id") == Some("call-x")).unwrap();
    assert_eq!(refused.str_attr("gen_ai.tool.call.arguments"), Some(r#"{"note":{"not":"a string"}}"#));
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_retry_is_a_backend_span_of_its_own() {
    let collector = Collector::start().await;
    let (_dir, config) = traced(&collector, false);
    let mut gw = start_gateway(config).await;
    // Its own runtime: `flaky` fails with UNAVAILABLE until the runtime's third call.
    let target = start_runtime(Runtime::default()).await;
    let spec = json!({"name": "flaky", "input_schema": {"type": "object"}, "limits": {"idempotent": true, "retries": 2},
        "backend": {"grpc": {"target": target}}});
    gw.register(spec).await.unwrap();
    let message = call_traced(&mut gw.gateway, "call-f", "flaky", "{}").await;
    assert_eq!((message.error.is_none(), message.attempts), (true, 3), "{message:?}");

    let spans =
        collector.wait_for_spans(|s| count(s, "backend flaky") == 3 && count(s, "execute_tool flaky") == 1, WAIT).await;
    let call = find(&spans, "execute_tool flaky");
    assert_eq!(call.int_attr("toolgate.attempts"), Some(3));
    let mut attempts: Vec<(i64, i32, Option<&str>)> = children(&spans, call)
        .into_iter()
        .filter(|s| s.name == "backend flaky")
        .map(|s| (s.int_attr("toolgate.attempt").unwrap(), s.status_code, s.str_attr("error.type")))
        .collect();
    attempts.sort();
    assert_eq!(attempts, [(1, 2, Some("UNAVAILABLE")), (2, 2, Some("UNAVAILABLE")), (3, 0, None)]);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewed_call_runs_inside_the_span_of_the_execute_that_waited_for_it() {
    let collector = Collector::start().await;
    let (_dir, config) = traced(&collector, false);
    let mut gw = gateway_with_tools(config).await;
    let target = start_runtime(Runtime::default()).await;
    let reviewed = json!({"name": "traceparent", "tenant": "acme", "input_schema": {"type": "object"},
        "review": {"required": true}, "backend": {"grpc": {"target": target}}});
    gw.register(reviewed).await.unwrap();

    let mut waiting = gw.gateway.clone();
    let task = tokio::spawn(async move { call_traced(&mut waiting, "call-rv", "traceparent", "{}").await });
    let mut reviewer = gw.review.clone();
    for _ in 0..500 {
        let pending = reviewer.list_pending(pb::ListPendingRequest { tenant: "acme".into(), all_tenants: false });
        if pending.await.unwrap().into_inner().pending.iter().any(|p| p.call_id == "call-rv") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let approve = pb::DecideRequest {
        call_id: "call-rv".into(),
        tenant: "acme".into(),
        action: pb::ReviewAction::Approve.into(),
        ..Default::default()
    };
    reviewer.decide(approve).await.expect("the approval");
    let message = tokio::time::timeout(WAIT, task).await.unwrap().unwrap();

    let spans = collector
        .wait_for_spans(|s| count(s, "backend traceparent") == 1 && count(s, "execute_tool traceparent") == 1, WAIT)
        .await;
    let call = find(&spans, "execute_tool traceparent");
    let backend = find(&spans, "backend traceparent");
    assert_eq!((call.parent_span_id.as_str(), backend.parent_span_id.as_str()), (PARENT, call.span_id.as_str()));
    assert_eq!(parse_traceparent(&message.content), (TRACE.to_owned(), backend.span_id.clone()));
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_caller_goes_away_ends_as_cancelled() {
    let collector = Collector::start().await;
    let (_dir, config) = traced(&collector, false);
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(json!({"name": "sleep", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();
    let gave_up = tokio::time::timeout(
        Duration::from_millis(300),
        call_traced(&mut gw.gateway, "call-c", "sleep", r#"{"ms": 3000}"#),
    );
    assert!(gave_up.await.is_err(), "the client gives up first");

    let spans = collector.wait_for_spans(|s| s.iter().any(|s| s.name == "execute_tool sleep"), WAIT).await;
    let call = find(&spans, "execute_tool sleep");
    assert_eq!((call.status_code, call.str_attr("error.type")), (2, Some("CANCELLED")));
    assert_eq!(call.parent_span_id, PARENT);
    gw.stop().await;
}

/// On MCP a host that goes away does not cancel its call (a disconnection is no cancellation; a host cancels with
/// `notifications/cancelled`): on the door's direct path, as on the SDK's, the call finishes without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_on_the_mcp_direct_path_finishes_when_its_host_goes_away() {
    let collector = Collector::start().await;
    let (_dir, mut config) = traced(&collector, false);
    let addr = support::free_addr();
    config.mcp_front.listen = Some(addr);
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(json!({"name": "sleep", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let params = json!({"name": "sleep", "arguments": {"ms": 800}, "_meta": meta});
    // A plain `Accept` takes the direct path; one with weights, the SDK's.
    for accept in ["application/json, text/event-stream", "application/json;q=0.9, text/event-stream"] {
        let gave_up = reqwest::Client::new()
            .post(format!("http://{addr}/mcp"))
            .header("accept", accept)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "sleep")
            .timeout(Duration::from_millis(300))
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
            .send()
            .await;
        assert!(gave_up.expect_err("the host gives up first").is_timeout());
    }

    let spans = collector.wait_for_spans(|s| count(s, "execute_tool sleep") >= 2, WAIT).await;
    for call in spans.iter().filter(|s| s.name == "execute_tool sleep") {
        assert_eq!(call.str_attr("toolgate.door"), Some("mcp"));
        assert_eq!((call.status_code, call.str_attr("error.type")), (0, None), "the call ran to its end");
    }
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_through_the_mcp_front_door_says_so_and_joins_the_hosts_trace() {
    joins_the_hosts_trace(None).await;
}

/// The same from a 2026-07-28 host, whose plain calls of a gRPC tool take the door's direct path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_on_the_mcp_front_doors_direct_path_joins_the_hosts_trace_too() {
    let modern = rmcp::service::ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    joins_the_hosts_trace(Some(modern)).await;
}

/// A host of `lifecycle` (a 2025-11-25 session when `None`) calls two tools, one with a `traceparent` header and
/// one with another in `_meta`: each call's span says it came through the MCP door, as a child of the right span.
async fn joins_the_hosts_trace(lifecycle: Option<rmcp::service::ClientLifecycleMode>) {
    use rmcp::ServiceExt;
    use rmcp::service::ClientServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let collector = Collector::start().await;
    let (_dir, mut config) = traced(&collector, false);
    let addr = support::free_addr();
    config.mcp_front.listen = Some(addr);
    let _gw = gateway_with_tools(config).await;

    let traceparent = http::HeaderValue::try_from(format!("00-{TRACE}-{PARENT}-01")).unwrap();
    let headers = [(http::HeaderName::from_static("traceparent"), traceparent)].into_iter().collect();
    let transport_config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp")).custom_headers(headers);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), transport_config);
    let host = match lifecycle {
        None => ().serve(transport).await.expect("the MCP handshake"),
        Some(lifecycle) => ().serve_with_lifecycle(transport, lifecycle).await.expect("server/discover"),
    };
    let result = host.call_tool(rmcp::model::CallToolRequestParams::new("traceparent")).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");

    // A `traceparent` in the request's `_meta` (SEP-414) wins over the header.
    let mut meta = rmcp::model::MetaObject::new();
    meta.set_traceparent(format!("00-{TRACE}-{OTHER_PARENT}-01"));
    let mut params = rmcp::model::CallToolRequestParams::new("get_weather");
    params.meta = Some(rmcp::model::RequestMetaObject(meta));
    params.arguments = Some(serde_json::from_value(json!({"city": "Oslo"})).unwrap());
    assert_eq!(host.call_tool(params).await.unwrap().is_error, Some(false));

    let spans = collector.wait_for_spans(|s| count(s, "backend ") >= 2 && count(s, "execute_tool ") >= 2, WAIT).await;
    let call = find(&spans, "execute_tool traceparent");
    assert_eq!(call.str_attr("toolgate.door"), Some("mcp"));
    assert_eq!((call.trace_id.as_str(), call.parent_span_id.as_str()), (TRACE, PARENT), "a child of the host's span");
    let from_meta = find(&spans, "execute_tool get_weather");
    assert_eq!(from_meta.parent_span_id, OTHER_PARENT, "the parent named in _meta");
}

const OTHER_PARENT: &str = "00f067aa0ba902b8";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn an_mcp_tools_progress_is_on_its_backend_span_for_a_grpc_caller() {
    let collector = Collector::start().await;
    let (_dir, mut config) = traced(&collector, false);
    config.connect_timeout = support::mcp::CONNECT_TIMEOUT;
    let mut gw = start_gateway(config).await;
    let mut admin = support::mcp::admin(&gw).await;
    support::mcp::add(&mut admin, support::mcp::stdio_server("memo")).await;
    let done = gw.call("memo__steps", r#"{"n": 3}"#).await;
    assert_eq!(done.content, "done", "{done:?}");

    let spans = collector.wait_for_spans(|s| count(s, "backend memo__steps") >= 1, WAIT).await;
    let backend = find(&spans, "backend memo__steps");
    let told: Vec<(i64, String)> = backend
        .events
        .iter()
        .filter(|(name, _)| name == "progress")
        .map(|(_, attributes)| {
            let step = match attributes.get("toolgate.progress") {
                Some(support::otlp::AttrValue::Double(p)) => *p as i64,
                other => panic!("toolgate.progress: {other:?}"),
            };
            let message = attributes.get("toolgate.progress.message").and_then(|m| m.as_str()).unwrap_or_default();
            (step, message.to_owned())
        })
        .collect();
    assert!(!told.is_empty(), "the server's progress is on the span: {:?}", backend.events);
    assert!(told.iter().all(|(step, message)| *message == format!("step {step}")), "{told:?}");
    assert!(told.windows(2).all(|w| w[0].0 != w[1].0), "each report once: {told:?}");
}
