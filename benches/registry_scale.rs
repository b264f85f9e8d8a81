//! Registry scale: a real `toolgate serve` process (this package's binary, temp data dir, free port) measured idle,
//! while 10,000 tools with distinct schemas are registered over gRPC `ToolRegistry.RegisterTool`, after loading,
//! and across a restart (SIGTERM, then a new process on the same data dir, timed from spawn until health answers
//! SERVING and until ListToolDefinitions lists every tool), then once every tool has been called, which compiles
//! every validator (the gateway keeps at most `limits.max_compiled_validators` of them, 2,048 by default). Then,
//! in this process, `resolve_tool` against catalogs of 100, 1,000 and 10,000 tools, for an exact name and for a
//! variant only the normalized index finds, and what a validator costs at a tool's first call.
//!
//! Memory is `VmRSS` from `/proc/<pid>/status` of the server process. Prints a table and one JSON line; exits
//! non-zero if a registration fails or the restarted server does not list every tool. Without `--bench` (as under
//! `cargo test --benches`) it runs a short smoke pass with 200 tools.
//!
//! Run: `cargo bench --bench registry_scale` (`SCALE_TOOLS=20000 SCALE_CONCURRENCY=16 cargo bench --bench
//! registry_scale`).

#[path = "registry_support/lookup.rs"]
mod lookup;
#[path = "../tests/it/support/ports.rs"]
mod ports;
#[path = "registry_support/server.rs"]
mod server;
#[path = "registry_support/tools.rs"]
mod tools;

use futures::StreamExt;
use lookup::{LookupCost, Lookups};
use server::Server;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tonic::transport::Channel;
use toolgate::pb::v1 as pb;
use toolgate::pb::v1::tool_gateway_client::ToolGatewayClient;
use toolgate::pb::v1::tool_registry_client::ToolRegistryClient;

/// What one run does: the full benchmark or the smoke pass.
struct Plan {
    tools: usize,
    concurrency: usize,
    lookup_sizes: Vec<usize>,
    lookups: usize,
}

impl Plan {
    fn from_env(full: bool) -> Self {
        let var = |name: &str, default: usize| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
        let tools = var("SCALE_TOOLS", if full { 10_000 } else { 200 });
        let lookup_sizes = if full { vec![100, 1_000, 10_000] } else { vec![100, 300] };
        let lookups = if full { 200_000 } else { 2_000 };
        Self { tools, concurrency: var("SCALE_CONCURRENCY", 8), lookup_sizes, lookups }
    }
}

/// What the server process did.
struct Scale {
    idle_rss_mib: f64,
    register: Duration,
    register_p50: Duration,
    register_p99: Duration,
    /// After registering, then after one ListToolDefinitions rendered every definition.
    loaded_rss_mib: f64,
    listed_rss_mib: f64,
    restart_serving: Duration,
    restart_listed: Duration,
    /// The restarted process, tools loaded from the store: once serving, then after listing them all.
    restarted_rss_mib: f64,
    restarted_listed_rss_mib: f64,
    /// Then after one call of every tool, which compiles every validator (keeping the most recent 2,048): the
    /// most the tools can take.
    called_rss_mib: f64,
    spec_bytes: usize,
}

fn main() -> ExitCode {
    let full = std::env::args().any(|a| a == "--bench");
    let plan = Plan::from_env(full);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    let scale = match runtime.block_on(run_server(&plan)) {
        Ok(scale) => scale,
        Err(err) => {
            eprintln!("registry_scale: {err}");
            return ExitCode::FAILURE;
        }
    };
    let lookups = match lookup::measure(&plan.lookup_sizes, plan.lookups) {
        Ok(lookups) => lookups,
        Err(err) => {
            eprintln!("registry_scale: lookup: {err}");
            return ExitCode::FAILURE;
        }
    };
    report(&plan, &scale, &lookups, full);
    ExitCode::SUCCESS
}

/// Idle, loaded and restarted: one server process after another on one data dir.
async fn run_server(plan: &Plan) -> Result<Scale, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (data, log) = (dir.path().join("data"), dir.path().join("toolgate.log"));
    let outcome = measure_server(plan, &data, &log).await;
    if outcome.is_err() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        eprintln!("toolgate's last log lines:\n{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
    }
    outcome
}

async fn measure_server(plan: &Plan, data: &std::path::Path, log: &std::path::Path) -> Result<Scale, String> {
    let mut first = Server::spawn(data, log)?;
    first.ready(0).await?;
    let idle_rss_mib = first.rss_mib()?;
    let channel = first.connect().await?;
    let started = Instant::now();
    let mut latencies = register_all(channel.clone(), plan).await?;
    let register = started.elapsed();
    let loaded_rss_mib = first.rss_mib()?;
    let listed = server::list_definitions(channel).await?;
    if listed != plan.tools {
        return Err(format!("listed {listed} tools after registering {}", plan.tools));
    }
    let listed_rss_mib = first.rss_mib()?;
    first.terminate()?;
    let mut second = Server::spawn(data, log)?;
    let ready = second.ready(plan.tools).await?;
    let restarted_listed_rss_mib = second.rss_mib()?;
    call_all(second.connect().await?, plan).await?;
    let called_rss_mib = second.rss_mib()?;
    second.terminate()?;
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    Ok(Scale {
        idle_rss_mib,
        register,
        register_p50: at(0.5),
        register_p99: at(0.99),
        loaded_rss_mib,
        listed_rss_mib,
        restart_serving: ready.serving,
        restart_listed: ready.listed,
        restarted_rss_mib: ready.serving_rss_mib,
        restarted_listed_rss_mib,
        called_rss_mib,
        spec_bytes: (0..plan.tools).map(|i| tools::spec_bytes(&tools::tool_spec(i))).sum::<usize>() / plan.tools.max(1),
    })
}

/// Registers tools 0..n with `concurrency` calls in flight on one HTTP/2 connection; returns each call's latency.
async fn register_all(channel: Channel, plan: &Plan) -> Result<Vec<Duration>, String> {
    let calls = futures::stream::iter(0..plan.tools).map(|i| {
        let mut client = ToolRegistryClient::new(channel.clone());
        async move {
            let request = pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&tools::tool_spec(i))) };
            let sent = Instant::now();
            let response = client.register_tool(request).await.map_err(|e| format!("register tool {i}: {e}"))?;
            match response.into_inner().created {
                true => Ok(sent.elapsed()),
                false => Err(format!("tool {i} replaced another: names are not distinct")),
            }
        }
    });
    calls.buffer_unordered(plan.concurrency.max(1)).collect::<Vec<_>>().await.into_iter().collect()
}

/// Calls every tool once with `{}`, `concurrency` calls in flight. Each answers with a ToolMessage (most with
/// INVALID_ARGUMENTS, the rest with UNAVAILABLE from the closed port of their backend): what matters is that the
/// call compiled the tool's validator.
async fn call_all(channel: Channel, plan: &Plan) -> Result<(), String> {
    let calls = futures::stream::iter(0..plan.tools).map(|i| {
        let mut client = ToolGatewayClient::new(channel.clone());
        async move {
            let call = pb::ToolCall { id: format!("call-{i}"), name: tools::tool_name(i), arguments: "{}".into() };
            let request =
                pb::ExecuteRequest { call: Some(call), context: Some(Default::default()), ..Default::default() };
            let response = client.execute(request).await.map_err(|e| format!("execute tool {i}: {e}"))?.into_inner();
            let message = response.message.ok_or_else(|| format!("tool {i}: no message"))?;
            match message.error.map(|e| e.kind) {
                Some(kind) if kind == pb::ErrorKind::ToolNotFound as i32 => Err(format!("tool {i} was not found")),
                _ => Ok(()),
            }
        }
    });
    calls.buffer_unordered(plan.concurrency.max(1)).collect::<Vec<_>>().await.into_iter().collect()
}

/// One reported figure: a row of the table and a field of the JSON line.
struct Figure {
    label: String,
    key: String,
    value: f64,
    decimals: usize,
    unit: &'static str,
    target: &'static str,
}

fn figure(label: impl Into<String>, key: impl Into<String>, value: f64, unit: &'static str) -> Figure {
    let decimals = match unit {
        "ns" | "tools/s" => 0,
        "x" => 2,
        _ => 1,
    };
    Figure { label: label.into(), key: key.into(), value, decimals, unit, target: "" }
}

impl Figure {
    fn target(self, target: &'static str) -> Self {
        Self { target, ..self }
    }
}

fn figures(plan: &Plan, scale: &Scale, lookups: &Lookups) -> Vec<Figure> {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut all = vec![
        figure("idle RSS", "idle_rss_mib", scale.idle_rss_mib, "MiB").target("<= 30 MB"),
        figure("registration rate", "register_per_s", plan.tools as f64 / scale.register.as_secs_f64(), "tools/s"),
        figure("registration latency p50", "register_p50_ms", ms(scale.register_p50), "ms"),
        figure("registration latency p99", "register_p99_ms", ms(scale.register_p99), "ms"),
        figure("RSS after registering", "loaded_rss_mib", scale.loaded_rss_mib, "MiB").target("<= 150 MB"),
        figure("  then after listing every definition", "listed_rss_mib", scale.listed_rss_mib, "MiB"),
        figure("restart: spawn to health SERVING", "restart_serving_ms", ms(scale.restart_serving), "ms"),
        figure("restart: spawn to every tool listed", "restart_listed_ms", ms(scale.restart_listed), "ms")
            .target("<= 2 s"),
        figure("RSS after restart (tools from the store)", "restarted_rss_mib", scale.restarted_rss_mib, "MiB")
            .target("<= 150 MB"),
        figure(
            "  then after listing every definition",
            "restarted_listed_rss_mib",
            scale.restarted_listed_rss_mib,
            "MiB",
        ),
        figure("  then after calling every tool once", "called_rss_mib", scale.called_rss_mib, "MiB"),
        figure(
            "validator compile at a tool's first call",
            "first_call_compile_us",
            lookups.first_call_compile_us,
            "us",
        ),
    ];
    for c in &lookups.costs {
        let (exact, variant) = (format!("resolve_exact_ns_{}", c.tools), format!("resolve_variant_ns_{}", c.tools));
        all.push(
            figure(format!("resolve_tool, {} tools: exact name", c.tools), exact, c.exact_ns, "ns").target("flat"),
        );
        let label = format!("resolve_tool, {} tools: normalized variant", c.tools);
        all.push(figure(label, variant, c.variant_ns, "ns").target("flat"));
    }
    all.push(figure("lookup, largest / smallest catalog", "lookup_growth", lookup_growth(&lookups.costs), "x"));
    all
}

fn report(plan: &Plan, scale: &Scale, lookups: &Lookups, full: bool) {
    let pass = if full { "" } else { " (smoke pass: the targets are for 10,000 tools in release)" };
    println!(
        "\nregistry scale: {} tools of ~{} bytes as stored, {} registrations in flight{pass}",
        plan.tools, scale.spec_bytes, plan.concurrency
    );
    println!("{:<46} {:>16}  target", "measure", "value");
    let all = figures(plan, scale, lookups);
    for f in &all {
        let value = format!("{:.*} {}", f.decimals, f.value, f.unit);
        println!("{:<46} {value:>16}  {}", f.label, f.target);
    }
    let fields: Vec<String> = all.iter().map(|f| format!(r#""{}":{:.*}"#, f.key, f.decimals, f.value)).collect();
    println!(
        r#"{{"bench":"registry_scale","tools":{},"spec_bytes":{},"concurrency":{},{}}}"#,
        plan.tools,
        scale.spec_bytes,
        plan.concurrency,
        fields.join(",")
    );
}

/// The slower of the two lookups with the most tools, over the same with the fewest.
fn lookup_growth(costs: &[LookupCost]) -> f64 {
    match (costs.first(), costs.last()) {
        (Some(small), Some(large)) => (large.exact_ns / small.exact_ns).max(large.variant_ns / small.variant_ns),
        _ => 1.0,
    }
}
