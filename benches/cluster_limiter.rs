//! The latency cost of a cluster-wide rate limit and of the cluster's call-id record: the same call through a
//! gateway in cluster mode, to a tool limited on the gateway alone (`scope = "GATEWAY"`, no Redis round trip), to a
//! tool limited across the cluster (GCRA on Redis), and to that tool through a second gateway whose call-id record
//! is on (every call with an id of its own), at concurrency 1, in alternating rounds in one process run. The limits
//! are high enough never to refuse, so every call takes the pass path. Also counts the Redis scripts each call ran,
//! from `INFO commandstats` (the registry follower's timer GETs are not per call, and are left out): the record's
//! outcome is written after the answer, so the last row's p50 less the second's is what the record adds on the
//! caller's path.
//!
//! Needs Redis (`TOOLGATE_BENCH_REDIS_URL`, default redis://127.0.0.1:6379); keys go under a prefix of the run's
//! own, deleted at the end. Run: `cargo bench --bench cluster_limiter` (`LIMITER_ROUNDS`, `LIMITER_CALLS`).
//! Without `--bench` (as under `cargo test --benches`) it runs a short smoke pass.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::Path;
use std::time::{Duration, Instant};
use tonic::transport::{Channel, Endpoint};
use toolgate::config::{Config, Overrides, RawConfig};
use toolgate::pb::v1::{self as pb, tool_gateway_client::ToolGatewayClient, tool_registry_client::ToolRegistryClient};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

async fn echo_server() -> String {
    let app = axum::Router::new().route("/echo", axum::routing::post(|body: String| async move { body }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/echo")
}

fn spec(name: &str, url: &str, scope: i32) -> pb::ToolSpec {
    pb::ToolSpec {
        name: name.into(),
        input_schema: r#"{"type":"object","properties":{"q":{"type":"string"}}}"#.into(),
        backend: Some(pb::Backend {
            kind: Some(pb::backend::Kind::Http(pb::HttpBackend { url: url.into(), ..Default::default() })),
        }),
        limits: Some(pb::Limits { rate: "1000000/s".into(), scope, ..Default::default() }),
        ..Default::default()
    }
}

fn redis_scripts(conn: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(conn).expect("INFO commandstats");
    info.lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .filter_map(|l| l.split(',').next()?.split("calls=").nth(1)?.parse::<u64>().ok())
        .sum()
}

/// The script count once it has stopped moving: the same in two reads 50 ms apart (for at most two seconds).
async fn settled_scripts(conn: &mut redis::Connection) -> u64 {
    let mut last = redis_scripts(conn);
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = redis_scripts(conn);
        if now == last {
            break;
        }
        last = now;
    }
    last
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

async fn round(gateway: &mut ToolGatewayClient<Channel>, tool: &str, calls: usize, into: &mut Vec<Duration>) {
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    for _ in 0..calls {
        // Every call its own id: the record answers a repeated one without running the tool.
        let id = format!("{tool}-{}", NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let call = pb::ToolCall { id, name: tool.into(), arguments: r#"{"q":"x"}"#.into() };
        let request = pb::ExecuteRequest { call: Some(call), ..Default::default() };
        let start = Instant::now();
        let message = gateway.execute(request).await.expect("Execute").into_inner().message.expect("a message");
        into.push(start.elapsed());
        assert!(message.error.is_none(), "{tool}: {}", message.content);
    }
}

/// A gateway in cluster mode on `url` under `prefix`, with the call-id record on or off; its channel, and what
/// stops it.
async fn gateway(url: &str, prefix: &str, record: bool) -> (Channel, impl FnOnce() + use<>, tempfile::TempDir) {
    let data = tempfile::tempdir().unwrap();
    let window = if record { "" } else { "[idempotency]\nwindow_ms = 0\n" };
    let text = format!("[cluster]\nredis_url = \"{url}\"\nkey_prefix = \"{prefix}\"\n{window}");
    let raw: RawConfig = toml::from_str(&text).unwrap();
    let overrides = Overrides { data_dir: Some(data.path().to_path_buf()), ..Overrides::default() };
    let config = Config::from_raw(raw, overrides, Path::new(".")).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(toolgate::run(listener, config, async {
        let _ = stopped.await;
    }));
    let endpoint = Endpoint::from_shared(format!("http://{addr}")).unwrap();
    let channel = loop {
        if let Ok(channel) = endpoint.connect().await {
            break channel;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    (
        channel,
        move || {
            let _ = stop.send(());
        },
        data,
    )
}

#[tokio::main]
async fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let (rounds, calls) =
        if smoke { (1, 50) } else { (env_usize("LIMITER_ROUNDS", 6), env_usize("LIMITER_CALLS", 5000)) };
    let url = std::env::var("TOOLGATE_BENCH_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let mut conn = redis::Client::open(url.as_str())
        .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(2)))
        .unwrap_or_else(|e| panic!("this bench needs Redis at {url} (TOOLGATE_BENCH_REDIS_URL): {e}"));
    let prefix = format!("tgbench-{}", std::process::id());
    let (channel, stop, _data) = gateway(&url, &prefix, false).await;
    let (recorded, stop_recorded, _recorded_data) = gateway(&url, &prefix, true).await;
    let echo = echo_server().await;
    let mut registry = ToolRegistryClient::new(channel.clone());
    for (name, scope) in [("local", pb::RateScope::Gateway), ("global", pb::RateScope::Cluster)] {
        let request = pb::RegisterToolRequest { spec: Some(spec(name, &echo, scope.into())) };
        registry.register_tool(request).await.expect("register");
    }
    let mut gateways =
        [ToolGatewayClient::new(channel.clone()), ToolGatewayClient::new(channel), ToolGatewayClient::new(recorded)];
    let tools = ["local", "global", "global"];
    // The record's registry follower sees the tools before the first round.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut latencies = [Vec::new(), Vec::new(), Vec::new()];
    for (i, gateway) in gateways.iter_mut().enumerate() {
        round(gateway, tools[i], calls / 5, &mut Vec::new()).await;
    }
    let mut scripts = [0u64; 3];
    for r in 0..rounds {
        for step in 0..3 {
            let i = (step + r) % 3;
            // The record's outcomes are written after their answers: those of the round before (or of the
            // warm-up) land before this one is counted, and this one's once they have landed.
            let before = settled_scripts(&mut conn).await;
            round(&mut gateways[i], tools[i], calls, &mut latencies[i]).await;
            scripts[i] += settled_scripts(&mut conn).await - before;
        }
    }
    latencies.iter_mut().for_each(|lat| lat.sort());
    let [local, global, with_id] = &latencies;
    let total = (rounds * calls) as f64;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!("{:<34} {:>10} {:>10} {:>16}", "limit (concurrency 1)", "p50 µs", "p99 µs", "Redis trips/call");
    let rows =
        [("gateway (local GCRA)", local), ("cluster (GCRA on Redis)", global), ("cluster, and a call id", with_id)];
    for (i, (name, lat)) in rows.into_iter().enumerate() {
        let (p50, p99) = (us(percentile(lat, 0.5)), us(percentile(lat, 0.99)));
        println!("{name:<34} {p50:>10.0} {p99:>10.0} {:>16.3}", scripts[i] as f64 / total);
    }
    let (local, global) = (&local[..], &global[..]);
    let (l50, l99, g50, g99) =
        (percentile(local, 0.5), percentile(local, 0.99), percentile(global, 0.5), percentile(global, 0.99));
    println!(
        "{{\"rounds\":{rounds},\"calls_per_round\":{calls},\"local_p50_us\":{:.0},\"local_p99_us\":{:.0},\"redis_p50_us\":{:.0},\"redis_p99_us\":{:.0},\"added_p50_us\":{:.0},\"added_p99_us\":{:.0},\"redis_trips_per_call_local\":{:.3},\"redis_trips_per_call_cluster\":{:.3},\"with_id_p50_us\":{:.0},\"record_added_p50_us\":{:.0},\"redis_trips_per_call_with_id\":{:.3}}}",
        us(l50),
        us(l99),
        us(g50),
        us(g99),
        us(g50) - us(l50),
        us(g99) - us(l99),
        scripts[0] as f64 / total,
        scripts[1] as f64 / total,
        us(percentile(with_id, 0.5)),
        us(percentile(with_id, 0.5)) - us(g50),
        scripts[2] as f64 / total
    );
    stop();
    stop_recorded();
    let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{prefix}:*")).query(&mut conn).unwrap_or_default();
    if !keys.is_empty() {
        let _: Result<(), _> = redis::cmd("DEL").arg(keys).query(&mut conn);
    }
    assert_eq!(scripts[0], 0, "a gateway-scoped limit must not touch Redis");
}
