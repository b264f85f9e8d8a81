//! Micro-benchmark of what telemetry adds to one call on the caller's thread: opening the call's span, its
//! `backend` child, then `finish` (outcome attributes, metrics). Off; metrics only (a Prometheus
//! reader); and everything on, exporting to an in-process OTLP sink (the export itself runs on the SDK's thread,
//! which this figure includes only as the contention it causes; the e2e bench measures it end to end).
//!
//! Run: `cargo bench --bench telemetry -- --warm-up-time 1 --measurement-time 3`.

#[path = "e2e_support/otlp_sink.rs"]
mod otlp_sink;
#[path = "../tests/it/support/ports.rs"]
mod ports;

use criterion::{Criterion, criterion_group, criterion_main};
use opentelemetry::context::FutureExt;
use std::hint::black_box;
use std::sync::Arc;
use toolgate::pipeline::{CallContext, ToolCall, success_message};
use toolgate::registry::{CompiledTool, SchemaDocuments, ToolSpec};
use toolgate::telemetry::{self, Gauges, RawTelemetry, Telemetry, TelemetrySettings};

fn tool() -> Arc<CompiledTool> {
    let spec: ToolSpec = serde_json::from_value(serde_json::json!({
        "name": "get_weather",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        "backend": {"grpc": {"target": "http://127.0.0.1:1"}},
    }))
    .unwrap();
    Arc::new(CompiledTool::compile(spec, &SchemaDocuments::default()).unwrap())
}

fn telemetry(raw: RawTelemetry) -> Telemetry {
    let settings = TelemetrySettings::from_raw(raw, None).unwrap();
    let gauges = Gauges { registered_tools: Box::new(|| 1), pending_reviews: Box::new(|| 0), cluster_degraded: None };
    let tls = std::sync::Arc::new(toolgate::tls::ClientTls::load(Default::default()).unwrap());
    Telemetry::new(&settings, gauges, &tls).unwrap()
}

/// What the executor does around one successful call.
fn one_call(t: &Telemetry, tool: &Arc<CompiledTool>, call: &ToolCall, ctx: &CallContext) {
    let span = t.start_call(call, ctx, toolgate::telemetry::Door::Grpc);
    span.resolved(tool);
    let inner = async {
        let backend = t.backend(&tool.label, "grpc", 1);
        black_box(telemetry::propagation::headers(&backend));
        t.end(&backend, None);
    };
    futures::executor::block_on(inner.with_context(span.context().clone()));
    let mut message = success_message(call, &tool.spec.name, r#"{"temp": 21}"#.into(), None);
    message.duration_us = 850;
    t.finish(span, ctx, &message, false);
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _entered = runtime.enter();
    let tool = tool();
    let call = ToolCall { id: "call_1".into(), name: "get_weather".into(), arguments: r#"{"city": "Oslo"}"#.into() };
    let ctx =
        CallContext { tenant: "acme".into(), user_id: "u-1".into(), session_id: "s-1".into(), ..Default::default() };
    let free_port = ports::free_addr();
    let sink = runtime.block_on(otlp_sink::Sink::start());
    let sides = [
        ("off", RawTelemetry::default()),
        ("metrics", RawTelemetry { prometheus_listen: Some(free_port.to_string()), ..RawTelemetry::default() }),
        (
            "spans+metrics",
            RawTelemetry {
                otlp_endpoint: Some(sink.endpoint.clone()),
                export_interval_ms: Some(200),
                prometheus_listen: Some(free_port.to_string()),
                ..RawTelemetry::default()
            },
        ),
    ];
    for (name, raw) in sides {
        let t = telemetry(raw);
        c.bench_function(&format!("telemetry/call {name}"), |b| b.iter(|| one_call(&t, &tool, &call, &ctx)));
    }
    // The spans of the last side reached the collector (its export runs every 200 ms): the measured path is the
    // one that exports, not one that drops everything. A smoke pass (`cargo test --benches`) checks it too.
    let waited = std::time::Instant::now();
    while sink.received().spans == 0 {
        assert!(waited.elapsed() < std::time::Duration::from_secs(30), "no span reached the collector");
        #[expect(clippy::disallowed_methods, reason = "criterion's thread, outside any runtime")]
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let received = sink.received();
    println!("sink: {} spans received; the gateway dropped {:?}", received.spans, received.spans_dropped);
    assert!(received.spans >= 2, "a call's span and its backend span: {}", received.spans);
}

criterion_group!(group, benches);
criterion_main!(group);
