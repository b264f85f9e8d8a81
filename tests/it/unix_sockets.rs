//! Unix domain sockets for the sidecar hop, over real sockets: the gateway listens on one (its file's mode set, a
//! stale file replaced, a live one refused, the file removed at shutdown), and reaches gRPC and HTTP tool servers
//! listening on theirs; `toolgate health` probes it over the socket; the file never has a wider mode than asked.

use crate::support;
use crate::support::backends::Runtime;
use crate::support::{status_of, temp_config};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use tokio::net::{UnixListener, UnixStream};
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::{Channel, Endpoint};
use toolgate::pb::v1::{self as pb, ToolStatus, tool_gateway_client::ToolGatewayClient};
use toolgate::pb::v1::{tool_registry_client::ToolRegistryClient, tool_runtime_server::ToolRuntimeServer};
use toolgate::wire::socket::{Address, Listener};

/// A channel to a gRPC server on the Unix socket at `path`.
async fn channel(path: &Path) -> Channel {
    let path = path.to_path_buf();
    let connector = tower::service_fn(move |_: http::Uri| {
        let path = path.clone();
        async move { UnixStream::connect(path).await.map(hyper_util::rt::TokioIo::new) }
    });
    Endpoint::from_static("http://localhost").connect_with_connector(connector).await.expect("the socket accepts")
}

/// The ToolRuntime on a Unix socket of its own.
fn runtime_on(path: &Path) {
    let incoming = UnixListenerStream::new(UnixListener::bind(path).unwrap());
    let server = tonic::transport::Server::builder().add_service(ToolRuntimeServer::new(Runtime::default()));
    tokio::spawn(server.serve_with_incoming(incoming));
}

/// An HTTP tool server on a Unix socket: `POST /echo` answers the body.
fn http_on(path: &Path) {
    let app = axum::Router::new().route(
        "/echo",
        axum::routing::post(|body: String| async move { ([("content-type", "application/json")], body) }),
    );
    let listener = UnixListener::bind(path).unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
}

async fn register(registry: &mut ToolRegistryClient<Channel>, spec: Value) {
    let spec: toolgate::registry::ToolSpec = serde_json::from_value(spec).unwrap();
    registry
        .register_tool(pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) })
        .await
        .expect("registered");
}

async fn call(gateway: &mut ToolGatewayClient<Channel>, tool: &str, arguments: &str) -> pb::ToolMessage {
    let call = pb::ToolCall { id: format!("{tool}-1"), name: tool.into(), arguments: arguments.into() };
    let request = pb::ExecuteRequest { call: Some(call), ..Default::default() };
    gateway.execute(request).await.expect("an answer").into_inner().message.unwrap()
}

fn socket(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

#[tokio::test]
async fn the_gateway_listens_on_a_unix_socket_and_reaches_tool_servers_on_theirs() {
    let (dir, config) = temp_config();
    let (gateway_socket, grpc_socket, http_socket) =
        (socket(dir.path(), "gw.sock"), socket(dir.path(), "tool.sock"), socket(dir.path(), "http.sock"));
    // A file left by a gateway that is gone: replaced.
    drop(std::os::unix::net::UnixListener::bind(&gateway_socket).unwrap());
    assert!(gateway_socket.exists());
    let listener = Listener::bind(&Address::Unix(gateway_socket.clone()), Some(0o600)).await.expect("binds");
    assert_eq!(std::fs::metadata(&gateway_socket).unwrap().permissions().mode() & 0o777, 0o600);
    // A second gateway on the same, live, socket: refused, and the first keeps its file.
    let taken = Listener::bind(&Address::Unix(gateway_socket.clone()), None).await.unwrap_err();
    assert!(taken.to_string().contains("in use"), "{taken}");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(toolgate::run(listener, config, async {
        let _ = stopped.await;
    }));

    runtime_on(&grpc_socket);
    http_on(&http_socket);
    let gateway = channel(&gateway_socket).await;
    let mut registry = ToolRegistryClient::new(gateway.clone());
    let object = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let grpc_target = format!("unix:{}", grpc_socket.display());
    register(
        &mut registry,
        json!({"name": "echo", "input_schema": object, "backend": {"grpc": {"target": grpc_target}}}),
    )
    .await;
    let http_url = format!("unix:{}:/echo", http_socket.display());
    register(&mut registry, json!({"name": "hook", "input_schema": object, "backend": {"http": {"url": http_url}}}))
        .await;

    let mut client = ToolGatewayClient::new(gateway);
    for tool in ["echo", "hook"] {
        let answer = call(&mut client, tool, r#"{"n": "7"}"#).await;
        assert_eq!(status_of(&answer), ToolStatus::Success, "{tool}: {answer:?}");
        let ran: Value = serde_json::from_str(&answer.content).unwrap();
        assert_eq!(ran, json!({"n": 7}), "{tool}: repaired, then run over the tool's socket");
    }
    // The command line reaches it too: the probe of a pod whose gateway listens on a socket.
    let server = format!("unix:{}", gateway_socket.display());
    let health =
        tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate")).args(["health", "--server", &server]).output();
    let health = health.await.unwrap();
    assert!(health.status.success(), "{}", String::from_utf8_lossy(&health.stderr));
    assert_eq!(String::from_utf8_lossy(&health.stdout).trim(), "SERVING");
    let _ = stop.send(());
    served.await.unwrap().expect("served cleanly");
    assert!(!gateway_socket.exists(), "the socket file is removed at shutdown");
}

#[tokio::test]
async fn a_unix_target_must_be_an_absolute_path_and_a_dead_socket_is_unavailable() {
    let (dir, config) = temp_config();
    let mut gw = support::start_gateway(config).await;
    let object = json!({"type": "object"});
    for target in ["unix:relative.sock", "unix:"] {
        let err = gw.register(json!({"name": "t", "input_schema": object, "backend": {"grpc": {"target": target}}}));
        assert!(err.await.unwrap_err().message().contains("unix:/path/to.sock"), "{target}");
    }
    let nobody = socket(dir.path(), "nobody.sock");
    let target = format!("unix:{}", nobody.display());
    gw.register(json!({"name": "gone", "input_schema": object, "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();
    let answer = gw.call("gone", "{}").await;
    assert_eq!(support::kind_of(&answer), pb::ErrorKind::Unavailable);
    assert!(answer.error.unwrap().message.contains(&format!("unix:{}", nobody.display())), "names the socket");
}

/// D24 (issue 47): with umask 000 and `listen_mode = 0o600`, the socket's path never shows a wider mode, from the
/// first moment it exists: a thread stats the path in a tight loop while `toolgate serve` starts, several times.
/// Set after the bind, the mode was 0o777 for a moment, and another user connected and was served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_never_exists_with_a_wider_mode_than_asked() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use tokio::io::{AsyncBufReadExt, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let (path, config) = (dir.path().join("gw.sock"), dir.path().join("toolgate.toml"));
    std::fs::write(&config, "listen_mode = 0o600\n").unwrap();
    let listen = format!("unix:{}", path.display());
    for start in 0..12 {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let watcher = std::thread::spawn({
            let (path, stop) = (path.clone(), stop.clone());
            move || loop {
                if let Ok(meta) = std::fs::symlink_metadata(&path) {
                    return Some(meta.permissions().mode() & 0o777);
                }
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
            }
        });
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", "umask 000 && exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_toolgate"), "serve", "--listen"])
            .arg(&listen)
            .arg("--config")
            .arg(&config)
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .env("RUST_LOG", "info")
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("sh and toolgate serve start");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let wait = std::time::Duration::from_secs(30);
        support::line_of(&mut lines, wait, |l| l.contains("toolgate serving")).await;
        stop.store(true, Ordering::Relaxed);
        let seen = watcher.join().unwrap().expect("the socket's path exists once the gateway serves");
        assert_eq!(seen, 0o600, "start {start}: the path existed with mode {seen:o}");
        assert_eq!(std::fs::symlink_metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        child.start_kill().unwrap();
        child.wait().await.unwrap();
        std::fs::remove_file(&path).unwrap();
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.iter().all(|name| !name.to_string_lossy().starts_with(".tg")), "no staging directory left: {left:?}");
}
