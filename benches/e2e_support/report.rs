//! The end-to-end bench's report (`cargo bench --bench e2e`): the machine, a table, one JSON line per mode, one JSON
//! line of ratios to direct, and what the OTLP sink received.

use super::load::Summary;
use super::stack::EXPORT_INTERVAL_MS;
use super::workload::{ARGUMENTS, BROKEN_ARGUMENTS, Mode, PREFLIGHT_EXECUTES};
use super::{Outcome, Plan};
use serde_json::json;

/// The machine: logical cores this process may use, and the CPU model when `/proc/cpuinfo` names one.
struct Machine {
    cores: usize,
    cpu: String,
}

fn machine() -> Machine {
    let cores = super::cpu::cores();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_owned())
    });
    Machine { cores, cpu: model.unwrap_or_else(|| "unknown".into()) }
}

fn summary(outcome: &Outcome, mode: Mode) -> &Summary {
    outcome.summaries.iter().find(|s| s.mode == mode).expect("every mode is summarised")
}

/// `a` against `b`: latency and CPU per call as `a / b`, throughput as the fraction `a / b` of `b`'s, and the CPU
/// time per call `a` adds over `b`.
fn ratios(a: &Summary, b: &Summary) -> serde_json::Value {
    json!({
        "c1_p50": a.c1_p50_us / b.c1_p50_us, "c1_p99": a.c1_p99_us / b.c1_p99_us,
        "c64_throughput": a.c64_rps / b.c64_rps,
        "c64_p50": a.c64_p50_us / b.c64_p50_us, "c64_p99": a.c64_p99_us / b.c64_p99_us,
        "c64_cpu_per_call": a.c64_cpu_us / b.c64_cpu_us, "c64_cpu_extra_us": a.c64_cpu_us - b.c64_cpu_us,
    })
}

fn mode_json(plan: Plan, s: &Summary) -> serde_json::Value {
    let bytes = if s.mode == Mode::Repair { BROKEN_ARGUMENTS.len() } else { ARGUMENTS.len() };
    json!({
        "bench": "e2e", "mode": s.mode.name(), "smoke": plan.smoke, "arguments_bytes": bytes,
        "c1_p50_us": s.c1_p50_us, "c1_p99_us": s.c1_p99_us, "c1_cpu_us_per_call": s.c1_cpu_us,
        "c64_rps": s.c64_rps, "c64_p50_us": s.c64_p50_us, "c64_p99_us": s.c64_p99_us,
        "c64_cpu_us_per_call": s.c64_cpu_us, "c64_rps_rounds": s.c64_rps_rounds,
        "requests": s.requests, "failures": s.failures,
    })
}

/// Calls the gateway answered, warm-up and preflight included: each sends two spans (the call, its backend attempt).
fn gateway_calls(outcome: &Outcome) -> usize {
    [Mode::Gateway, Mode::Repair, Mode::Console].into_iter().map(|m| summary(outcome, m).requests).sum::<usize>()
        + PREFLIGHT_EXECUTES
}

fn print_table(plan: Plan, concurrency: usize, outcome: &Outcome, machine: &Machine) {
    let smoke = if plan.smoke { " (smoke)" } else { "" };
    println!(
        "\ne2e{smoke}: {} rounds, each mode per round at c=1 ({} calls) and c={concurrency} ({} calls), alternating",
        plan.rounds, plan.c1_requests, plan.c64_requests
    );
    let others = outcome.others_share.map_or("?".into(), |share| format!("{:.1}%", share * 100.0));
    println!("machine: {} cores, {}; other processes used {others} of the cores meanwhile", machine.cores, machine.cpu);
    println!("one process: echo ToolRuntime, gateway, OTLP sink, load client; CPU columns are its CPU time per call");
    println!(
        "{:<16} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9}",
        "mode",
        "c1 p50µs",
        "c1 p99µs",
        "c1 CPUµs",
        "c64 req/s",
        "c64 p50µs",
        "c64 p99µs",
        "c64 CPUµs",
        "requests",
        "failures"
    );
    for s in &outcome.summaries {
        println!(
            "{:<16} {:>9.1} {:>9.1} {:>9.1} {:>10.0} {:>10.1} {:>10.1} {:>10.1} {:>9} {:>9}",
            s.mode.name(),
            s.c1_p50_us,
            s.c1_p99_us,
            s.c1_cpu_us,
            s.c64_rps,
            s.c64_p50_us,
            s.c64_p99_us,
            s.c64_cpu_us,
            s.requests,
            s.failures
        );
    }
}

fn print_ratios(outcome: &Outcome) {
    let direct = summary(outcome, Mode::Direct);
    println!(
        "{:<16} {:>9} {:>9} {:>9} {:>12}   (latency a/b; throughput a as a fraction of b; CPU a - b)",
        "ratio", "c1 p50", "c1 p99", "c64 tput", "c64 CPU/call"
    );
    for mode in [Mode::Gateway, Mode::Repair, Mode::Console] {
        let s = summary(outcome, mode);
        let name = format!("{}/direct", mode.name());
        let (p50, p99) = (s.c1_p50_us / direct.c1_p50_us, s.c1_p99_us / direct.c1_p99_us);
        let (tput, cpu) = (s.c64_rps / direct.c64_rps, s.c64_cpu_us - direct.c64_cpu_us);
        println!("{name:<16} {p50:>8.2}x {p99:>8.2}x {tput:>9.2} {cpu:>+10.1}µs");
    }
    // The console's cost to the call path: the same gateway with and without it, measured in the same run.
    let (on, off) = (summary(outcome, Mode::Console), summary(outcome, Mode::Gateway));
    let (p50, p99) = (on.c1_p50_us / off.c1_p50_us, on.c1_p99_us / off.c1_p99_us);
    let (tput, cpu) = (on.c64_rps / off.c64_rps, on.c64_cpu_us - off.c64_cpu_us);
    // With E2E_CONSOLE=off both gateways are the same: the ratios are the noise floor.
    let label = super::stack::Second::from_env().map_or("console/gateway", super::stack::Second::label);
    println!("{label:<16} {p50:>8.2}x {p99:>8.2}x {tput:>9.2} {cpu:>+10.1}µs");
}

fn print_sink(outcome: &Outcome) {
    let got = outcome.received;
    let calls = gateway_calls(outcome);
    let dropped = got.spans_dropped.map_or("?".into(), |n| n.to_string());
    println!(
        "otel sink: {} spans in {} exports, {:.2} per gateway call ({calls} calls); {dropped} spans dropped by the gateway",
        got.spans,
        got.trace_exports,
        got.spans as f64 / calls as f64
    );
    println!(
        "           {} metric points in {} exports (every {EXPORT_INTERVAL_MS} ms)",
        got.points, got.metric_exports
    );
}

pub fn print(plan: Plan, concurrency: usize, outcome: &Outcome) {
    let machine = machine();
    print_table(plan, concurrency, outcome, &machine);
    print_ratios(outcome);
    print_sink(outcome);
    for s in &outcome.summaries {
        println!("{}", mode_json(plan, s));
    }
    let (direct, got) = (summary(outcome, Mode::Direct), outcome.received);
    let line = json!({
        "bench": "e2e", "ratios": {
            "gateway/direct": ratios(summary(outcome, Mode::Gateway), direct),
            "repair/direct": ratios(summary(outcome, Mode::Repair), direct),
            "console/direct": ratios(summary(outcome, Mode::Console), direct),
            "console/gateway": ratios(summary(outcome, Mode::Console), summary(outcome, Mode::Gateway)),
        },
        "smoke": plan.smoke, "rounds": plan.rounds, "c1_requests": plan.c1_requests,
        "c64_requests": plan.c64_requests, "concurrency": concurrency, "warmup": plan.warmup,
        "machine": {
            "cores": machine.cores, "cpu": machine.cpu,
            "others_cpu_share": outcome.others_share, "others_cpu_share_rounds": outcome.others_share_rounds,
        },
        "otel": {
            "export_interval_ms": EXPORT_INTERVAL_MS, "gateway_calls": gateway_calls(outcome), "spans": got.spans,
            "trace_exports": got.trace_exports, "spans_dropped": got.spans_dropped,
            "metric_points": got.points, "metric_exports": got.metric_exports,
        },
    });
    println!("{line}");
}
