//! The sidecar hop over each transport, one call at a time (c=1), all in one process and one run, the modes taking
//! turns round by round so that drift falls on all alike:
//! - `tcp`: the agent reaches the gateway over TCP on loopback, the gateway the tool server over TCP;
//! - `uds`: the agent reaches the gateway over a Unix socket (the tool server still over TCP);
//! - `tool_uds`: over TCP to the gateway, which reaches the tool server over a Unix socket;
//! - `tool_tls`: over TCP to the gateway, which reaches the tool server over TLS (a certificate made at start);
//! - `tcp_refused`, `uds_refused`: a call of a tool that does not exist, over TCP and over a Unix socket, answered
//!   by the gateway at once: the sidecar hop with next to nothing behind it. (In one process, the work behind a
//!   call shares the two cores with both ends of the hop, so "the call less `duration_us`" is not independent of
//!   the transport; the refused call measures the hop without that.)
//!
//! For each: p50 and p99 of the whole call as the agent sees it, and of the hop alone (the call less the
//! gateway's own `duration_us`, which covers everything from the request's arrival to its answer). The target:
//! `Execute` over a Unix socket at most 0.85x `Execute` over TCP at p50 (`uds` against `tcp`); the refused calls
//! tell how much of that is the hop itself.
//!
//! Run: `cargo bench --bench transports` (`TRANSPORTS_CALLS=20000 TRANSPORTS_ROUNDS=5`; `TRANSPORTS_ONLY=tcp,uds`
//! measures only those modes, `TRANSPORTS_WORKERS=1` runs on one worker thread). Every call has an id of its own.
//! Without `--bench` (under `cargo test --benches`) a short pass checks every mode's answers.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "e2e_support/workload.rs"]
#[allow(dead_code)]
mod workload;

use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, UnixListener, UnixStream};
use tonic::transport::{Channel, Endpoint};
use toolgate::pb::v1::tool_registry_client::ToolRegistryClient;
use toolgate::pb::v1::tool_runtime_server::ToolRuntimeServer;
use toolgate::pb::v1::{self as pb, tool_gateway_client::ToolGatewayClient};
use toolgate::wire::socket::{Address, Listener};

const MODES: [&str; 6] = ["tcp", "uds", "tool_uds", "tool_tls", "tcp_refused", "uds_refused"];
/// The tool the refused modes call: no such tool is registered.
const MISSING: &str = "no_such_tool";

fn count(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).filter(|n| *n > 0).unwrap_or(default)
}

/// A channel to `address`: TCP with no delay, or a Unix socket.
async fn channel(address: &Address) -> Channel {
    match address {
        Address::Tcp(addr) => {
            let endpoint = Endpoint::from_shared(format!("http://{addr}")).unwrap().tcp_nodelay(true);
            endpoint.connect().await.expect("the gateway accepts")
        }
        Address::Unix(path) => {
            let path = path.clone();
            let connector = tower::service_fn(move |_: http::Uri| {
                let path = path.clone();
                async move { UnixStream::connect(path).await.map(hyper_util::rt::TokioIo::new) }
            });
            Endpoint::from_static("http://localhost")
                .connect_with_connector(connector)
                .await
                .expect("the socket accepts")
        }
    }
}

/// A CA and a certificate it signs for `localhost`: the CA's file, and the server's TLS configuration (ALPN h2).
fn certificates(dir: &Path) -> (std::path::PathBuf, std::sync::Arc<rustls::ServerConfig>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    toolgate::tls::install_provider();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.self_signed(&ca_key).unwrap().pem()).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    let cert = leaf.signed_by(&key, &Issuer::new(ca, ca_key)).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let mut config =
        rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(vec![cert.der().clone()], key).unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    (ca_file, std::sync::Arc::new(config))
}

/// Serves the echo ToolRuntime on one connection, on hyper's HTTP/2 server alike for every transport, so that
/// the tool modes differ by their transport alone.
fn serve_runtime<IO>(io: IO)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let routes = tonic::service::Routes::new(ToolRuntimeServer::new(workload::Echo));
    let service = hyper_util::service::TowerToHyperService::new(routes);
    tokio::spawn(
        hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .serve_connection(hyper_util::rt::TokioIo::new(io), service),
    );
}

/// The echo ToolRuntime over TCP, over a Unix socket, and over TLS (a certificate for `localhost` that `ca`
/// signed): their targets.
async fn runtimes(dir: &Path, tls: std::sync::Arc<rustls::ServerConfig>) -> (String, String, String) {
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tcp_target = format!("http://{}", tcp.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = tcp.accept().await {
            stream.set_nodelay(true).unwrap();
            serve_runtime(stream);
        }
    });
    let socket = dir.join("tool.sock");
    let unix = UnixListener::bind(&socket).unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = unix.accept().await {
            serve_runtime(stream);
        }
    });
    let secure = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tls_target = format!("https://localhost:{}", secure.local_addr().unwrap().port());
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    tokio::spawn(async move {
        while let Ok((stream, _)) = secure.accept().await {
            stream.set_nodelay(true).unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(stream).await {
                    serve_runtime(tls);
                }
            });
        }
    });
    (tcp_target, format!("unix:{}", socket.display()), tls_target)
}

/// The tool servers' targets: TCP, Unix socket, TLS (and the CA file the gateway trusts).
struct Targets {
    tcp: String,
    unix: String,
    tls: String,
    ca: std::path::PathBuf,
}

/// A gateway on `address`, with the forecast tool registered thrice: `forecast` on the TCP runtime,
/// `forecast_uds` on the Unix one, `forecast_tls` on the TLS one. Its client.
async fn gateway(dir: &Path, address: Address, targets: &Targets) -> ToolGatewayClient<Channel> {
    let data = dir.join(match &address {
        Address::Tcp(_) => "tcp-data",
        Address::Unix(_) => "uds-data",
    });
    let mut config = toolgate::Config { data_dir: data, ..toolgate::Config::default() };
    config.tls.client = toolgate::tls::ClientFiles { ca: Some(targets.ca.clone()), ..Default::default() };
    let listener = Listener::bind(&address, None).await.unwrap();
    let bound = listener.local().unwrap();
    tokio::spawn(toolgate::run(listener, config, std::future::pending()));
    // Bound before it runs: the connection waits in the backlog, and registering waits for the gateway to serve.
    let channel = channel(&bound).await;
    let mut registry = ToolRegistryClient::new(channel.clone());
    for (name, target) in
        [(workload::TOOL, &targets.tcp), ("forecast_uds", &targets.unix), ("forecast_tls", &targets.tls)]
    {
        let mut spec = workload::spec(target);
        spec["name"] = json!(name);
        let spec: toolgate::registry::ToolSpec = serde_json::from_value(spec).unwrap();
        let request = pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) };
        while registry.register_tool(request.clone()).await.is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    ToolGatewayClient::new(channel)
}

/// Numbers every call of the run: a repeated call id would be answered from the gateway's call-id record without
/// running the tool. (Ids numbered per mode and round once were: the Unix-socket gateway's record, which only its
/// own mode filled, then answered a whole round of calls, which looked like a TCP leg 100 µs slower.)
static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One call, with an id of its own: the whole call's and the hop's microseconds.
async fn one(client: &mut ToolGatewayClient<Channel>, tool: &str) -> (f64, f64) {
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let call = pb::ToolCall { id: format!("{tool}-{n}"), name: tool.into(), arguments: workload::ARGUMENTS.into() };
    let context = pb::CallContext { user_id: "u1".into(), session_id: "s1".into(), ..Default::default() };
    let request = pb::ExecuteRequest { call: Some(call), context: Some(context), review_mode: 0 };
    let started = Instant::now();
    let message = client.execute(request).await.expect("an answer").into_inner().message.expect("a message");
    let total = started.elapsed().as_secs_f64() * 1e6;
    if tool == MISSING {
        assert_eq!(message.error.map(|e| e.kind()), Some(pb::ErrorKind::ToolNotFound), "{tool}: {}", message.content);
    } else {
        assert_eq!(message.status(), pb::ToolStatus::Success, "{tool}: {}", message.content);
    }
    (total, total - message.duration_us as f64)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// `TRANSPORTS_WORKERS=1` runs everything on one worker thread: no call wakes a second one.
fn main() {
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Ok(workers) = std::env::var("TRANSPORTS_WORKERS") {
        runtime.worker_threads(workers.parse().expect("TRANSPORTS_WORKERS: a number"));
    }
    runtime.enable_all().build().unwrap().block_on(bench());
}

async fn bench() {
    let full = std::env::args().any(|a| a == "--bench");
    let (calls, rounds) =
        if full { (count("TRANSPORTS_CALLS", 20_000), count("TRANSPORTS_ROUNDS", 5)) } else { (50, 1) };
    let dir = tempfile::tempdir().unwrap();
    let (ca, server) = certificates(dir.path());
    let (tcp, unix, tls) = runtimes(dir.path(), server).await;
    let targets = Targets { tcp, unix, tls, ca };
    let tcp = gateway(dir.path(), Address::parse("127.0.0.1:0").unwrap(), &targets).await;
    let uds = gateway(dir.path(), Address::Unix(dir.path().join("gw.sock")), &targets).await;
    let mut clients = [
        (tcp.clone(), workload::TOOL),
        (uds.clone(), workload::TOOL),
        (tcp.clone(), "forecast_uds"),
        (tcp.clone(), "forecast_tls"),
        (tcp, MISSING),
        (uds, MISSING),
    ];
    let mut samples: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); MODES.len()];
    for (client, tool) in &mut clients {
        for _ in 0..calls.min(500) {
            one(client, tool).await;
        }
    }
    // `TRANSPORTS_ONLY=tcp,uds` measures those modes alone (to profile one at a time); the rest report no figure.
    let only = std::env::var("TRANSPORTS_ONLY").ok();
    let measured = |mode: &str| only.as_deref().is_none_or(|only| only.split(',').any(|m| m == mode));
    for round in 0..rounds {
        for turn in 0..MODES.len() {
            let mode = (round + turn) % MODES.len();
            if !measured(MODES[mode]) {
                continue;
            }
            let (client, tool) = &mut clients[mode];
            for _ in 0..calls {
                let (total, hop) = one(client, tool).await;
                samples[mode].0.push(total);
                samples[mode].1.push(hop);
            }
        }
    }
    println!("transports: {rounds} rounds of {calls} calls per mode at c=1, one process on loopback");
    println!("{:<10} {:>10} {:>10} {:>10} {:>10}", "mode", "p50 µs", "p99 µs", "hop p50", "hop p99");
    let mut p50 = Vec::new();
    for (mode, (total, hop)) in MODES.iter().zip(&mut samples) {
        if total.is_empty() {
            total.push(f64::NAN);
            hop.push(f64::NAN);
        }
        total.sort_by(f64::total_cmp);
        hop.sort_by(f64::total_cmp);
        let row = (percentile(total, 0.5), percentile(total, 0.99), percentile(hop, 0.5), percentile(hop, 0.99));
        println!("{mode:<10} {:>10.1} {:>10.1} {:>10.1} {:>10.1}", row.0, row.1, row.2, row.3);
        p50.push(row);
    }
    println!(
        "Execute uds/tcp p50 {:.2}x (target <= 0.85x); the hop alone (refused calls) uds/tcp p50 {:.2}x; call less \
         duration_us {:.2}x; tool over uds/tcp: call p50 {:.2}x; tool over tls/tcp: call p50 {:.2}x",
        p50[1].0 / p50[0].0,
        p50[5].0 / p50[4].0,
        p50[1].2 / p50[0].2,
        p50[2].0 / p50[0].0,
        p50[3].0 / p50[0].0
    );
    let by_mode = |pick: fn(&(f64, f64, f64, f64)) -> f64| {
        MODES
            .iter()
            .zip(&p50)
            .map(|(mode, row)| ((*mode).to_owned(), json!(pick(row))))
            .collect::<serde_json::Map<_, _>>()
    };
    println!(
        "{}",
        json!({"bench": "transports", "smoke": !full, "calls": calls, "rounds": rounds,
        "p50_us": by_mode(|r| r.0), "p99_us": by_mode(|r| r.1), "hop_p50_us": by_mode(|r| r.2)})
    );
}
