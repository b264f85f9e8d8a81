//! The gateway's own HTTP/2 client to gRPC tool servers, over real sockets: one connection shared by the calls in
//! flight, a new one once a server restarts, results bounded by `limits.max_result_bytes` across DATA frames, and a
//! server that speaks HTTP/2 but not gRPC.

mod common;

use common::backends::Runtime;
use common::{kind_of, start_gateway, status_of, temp_config};
use futures::StreamExt;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use toolgate::pb::v1::{ErrorKind as K, ToolStatus, tool_runtime_server::ToolRuntimeServer};

/// A ToolRuntime on `listener` that counts the connections it accepts and stops when `stop` fires.
fn serve_counting(listener: TcpListener, accepted: Arc<AtomicUsize>, stop: oneshot::Receiver<()>) {
    let incoming = futures::stream::unfold(listener, move |listener| {
        let accepted = Arc::clone(&accepted);
        async move {
            let accepted_now = listener.accept().await.map(|(socket, _)| socket);
            accepted.fetch_add(1, Ordering::SeqCst);
            Some((accepted_now, listener))
        }
    });
    let server = tonic::transport::Server::builder()
        .add_service(ToolRuntimeServer::new(Runtime::default()))
        .serve_with_incoming_shutdown(incoming, async {
            let _ = stop.await;
        });
    tokio::spawn(server);
}

fn echo_spec(name: &str, addr: SocketAddr) -> serde_json::Value {
    json!({"name": name, "input_schema": {"type": "object"}, "backend": {"grpc": {"target": format!("http://{addr}")}}})
}

#[tokio::test]
async fn calls_in_flight_share_one_connection() {
    let (_dir, config) = temp_config();
    let gw = start_gateway(config).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let (_stop, stop) = oneshot::channel();
    serve_counting(listener, Arc::clone(&accepted), stop);
    let mut admin = gw.registry.clone();
    let spec = toolgate::server::convert::spec_to_proto(&serde_json::from_value(echo_spec("echo", addr)).unwrap());
    admin.register_tool(toolgate::pb::v1::RegisterToolRequest { spec: Some(spec) }).await.unwrap();

    let calls = futures::stream::iter(0..64)
        .map(|i| {
            let mut client = gw.gateway.clone();
            async move {
                let call = toolgate::pb::v1::ToolCall {
                    id: format!("c{i}"),
                    name: "echo".into(),
                    arguments: format!("{{\"i\": {i}}}"),
                };
                let request = toolgate::pb::v1::ExecuteRequest { call: Some(call), ..Default::default() };
                client.execute(request).await.unwrap().into_inner().message.unwrap()
            }
        })
        .buffer_unordered(64)
        .collect::<Vec<_>>()
        .await;
    for m in &calls {
        assert_eq!(status_of(m), ToolStatus::Success, "{m:?}");
        let id: usize = m.tool_call_id[1..].parse().unwrap();
        assert_eq!(m.content, format!("{{\"i\": {id}}}"), "each call got its own answer");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "64 concurrent calls, one connection");
}

#[tokio::test]
async fn a_restarted_tool_server_is_reached_on_a_new_connection() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let (stop, stopped) = oneshot::channel();
    serve_counting(listener, Arc::clone(&accepted), stopped);
    gw.register(echo_spec("echo", addr)).await.unwrap();
    assert_eq!(status_of(&gw.call("echo", r#"{"n": 1}"#).await), ToolStatus::Success);

    stop.send(()).unwrap();
    // The server's graceful stop closes the idle connection; until it listens again, calls cannot connect.
    let mut down = None;
    for _ in 0..100 {
        let m = gw.call("echo", r#"{"n": 2}"#).await;
        if status_of(&m) == ToolStatus::Error {
            down = Some(m);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let down = down.expect("calls fail once the tool server is gone");
    assert_eq!(kind_of(&down), K::Unavailable, "{down:?}");
    assert!(down.error.unwrap().retryable);

    let listener = TcpListener::bind(addr).await.expect("the same port again");
    let (_stop, stopped) = oneshot::channel();
    serve_counting(listener, Arc::clone(&accepted), stopped);
    let m = gw.call("echo", r#"{"n": 3}"#).await;
    assert_eq!((status_of(&m), m.content.as_str()), (ToolStatus::Success, r#"{"n": 3}"#), "{m:?}");
    assert_eq!(accepted.load(Ordering::SeqCst), 2, "one connection before the restart, one after");
}

#[tokio::test]
async fn results_are_reassembled_across_frames_and_bounded() {
    let (_dir, mut config) = temp_config();
    config.max_result_bytes = 100_000;
    config.parse_limits.max_bytes = 1_000_000;
    config.max_request_bytes = 1_000_000;
    let mut gw = start_gateway(config).await;
    let target = common::backends::start_runtime(Runtime::default()).await;
    let spec = json!({"name": "echo", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}}});
    gw.register(spec).await.unwrap();

    // Echoed twice (content and structured): about 80 KB, in several 16 KB DATA frames.
    let fits = format!(r#"{{"a": "{}"}}"#, "x".repeat(40_000));
    let m = gw.call("echo", &fits).await;
    assert_eq!((status_of(&m), m.content.len()), (ToolStatus::Success, fits.len()), "{:?}", m.error);
    assert_eq!(m.content, fits);

    let over = format!(r#"{{"a": "{}"}}"#, "x".repeat(60_000));
    let m = gw.call("echo", &over).await;
    assert_eq!(kind_of(&m), K::ToolError, "{m:?}");
    let error = m.error.clone().unwrap();
    assert!(!error.retryable && !error.model_fixable, "{error:?}");
    assert!(m.content.contains("the result is over the limit of 100000 bytes"), "{}", m.content);
    // The refused answer did not break the connection.
    assert_eq!(status_of(&gw.call("echo", r#"{"after": true}"#).await), ToolStatus::Success);
}

#[tokio::test]
async fn an_http2_server_that_is_not_grpc_is_unavailable() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    // axum answers HTTP/2 with prior knowledge, and 404 for a path it does not route.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, axum::Router::new()).await });
    gw.register(echo_spec("web", addr)).await.unwrap();
    let m = gw.call("web", "{}").await;
    assert_eq!(kind_of(&m), K::Unavailable, "{m:?}");
    let error = m.error.clone().unwrap();
    assert!(error.message.contains("HTTP status 404"), "{error:?}");
}
