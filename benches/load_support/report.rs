//! The load bench's report: the table, the ratios between sides, and the one JSON line.

use super::otlp_sink::Received;
use super::{ARGUMENTS, OTEL_EXPORT_INTERVAL_MS, Plan, Run, Sides};
use serde_json::json;

fn ratios(a: &Run, b: &Run) -> (f64, f64, f64) {
    (
        a.percentile_us(0.50) / b.percentile_us(0.50),
        a.percentile_us(0.99) / b.percentile_us(0.99),
        b.throughput() / a.throughput(),
    )
}

fn ratio_json(a: &Run, b: &Run) -> serde_json::Value {
    let (p50, p99, cost) = ratios(a, b);
    json!({"p50": p50, "p99": p99, "throughput_cost": cost})
}

fn run_json(r: &Run) -> serde_json::Value {
    json!({"p50_us": r.percentile_us(0.5), "p99_us": r.percentile_us(0.99), "rps": r.throughput(), "failures": r.failures})
}

/// Calls the otel gateway answered, warm-up included: each should have sent about three spans.
fn otel_calls(plan: Plan) -> usize {
    plan.warmup + plan.requests
}

fn print_table(plan: Plan, sides: &Sides, cores: usize) {
    let mode = if plan.smoke { " (smoke)" } else { "" };
    println!("\nload{mode}: {} requests, {} in flight, {cores} cores, one process", plan.requests, plan.concurrency);
    println!("{:<14} {:>10} {:>10} {:>12} {:>9}", "path", "p50 µs", "p99 µs", "req/s", "failures");
    for (name, r) in [("direct", &sides.direct), ("gateway", &sides.gateway), ("gateway+otel", &sides.otel)] {
        let (p50, p99, rps) = (r.percentile_us(0.50), r.percentile_us(0.99), r.throughput());
        println!("{name:<14} {p50:>10.1} {p99:>10.1} {rps:>12.0} {:>9}", r.failures);
    }
    println!("{:<14} {:>10} {:>10} {:>12}   (a/b latency, b/a req/s)", "ratio a/b", "p50", "p99", "req/s cost");
    let pairs = [
        ("gateway/direct", &sides.gateway, &sides.direct),
        ("otel/direct", &sides.otel, &sides.direct),
        ("otel/gateway", &sides.otel, &sides.gateway),
    ];
    for (name, a, b) in pairs {
        let (p50, p99, cost) = ratios(a, b);
        println!("{name:<14} {p50:>9.2}x {p99:>9.2}x {cost:>11.2}x");
    }
    let (Received { spans, trace_exports, points, metric_exports, spans_dropped }, calls) =
        (sides.received, otel_calls(plan));
    let (per_call, dropped) = (spans as f64 / calls as f64, spans_dropped.map_or("?".into(), |n| n.to_string()));
    println!(
        "otel sink: {spans} spans in {trace_exports} exports, {per_call:.2} per call ({calls} calls with warm-up)"
    );
    println!("           {dropped} spans dropped by the gateway; {points} metric points in {metric_exports} exports");
}

pub fn print_report(plan: Plan, sides: &Sides) {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    print_table(plan, sides, cores);
    let got = sides.received;
    let line = json!({
        "bench": "load", "smoke": plan.smoke, "requests": plan.requests, "concurrency": plan.concurrency,
        "warmup": plan.warmup, "cores": cores, "arguments_bytes": ARGUMENTS.len(),
        "direct": run_json(&sides.direct), "gateway": run_json(&sides.gateway),
        "ratio": ratio_json(&sides.gateway, &sides.direct),
        "gateway_otel": run_json(&sides.otel),
        "ratio_otel_direct": ratio_json(&sides.otel, &sides.direct),
        "ratio_otel_gateway": ratio_json(&sides.otel, &sides.gateway),
        "otel": {
            "export_interval_ms": OTEL_EXPORT_INTERVAL_MS, "calls": otel_calls(plan), "spans": got.spans,
            "trace_exports": got.trace_exports, "spans_dropped": got.spans_dropped,
            "metric_points": got.points, "metric_exports": got.metric_exports,
        },
    });
    println!("{line}");
}
