//! The gateway's own HTTP/2 client to gRPC tool servers, over real sockets: one connection shared by the calls in
//! flight, a new one once a server restarts or goes away, results bounded by `limits.max_result_bytes` across DATA
//! frames and past the stream's flow-control window, a server that speaks HTTP/2 but not gRPC, and how a reset
//! stream or a proxy's error reads.

use crate::support;
use crate::support::backends::Runtime;
use crate::support::{kind_of, start_gateway, status_of, temp_config};
use futures::StreamExt;
use prost::Message;
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
    let mut gw = start_gateway(config).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let (_stop, stop) = oneshot::channel();
    serve_counting(listener, Arc::clone(&accepted), stop);
    gw.register(echo_spec("echo", addr)).await.unwrap();

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
    // A port below the ephemeral range, so that no other socket takes it while the server is down.
    let listener = TcpListener::bind(support::free_addr()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let (stop, stopped) = oneshot::channel();
    serve_counting(listener, Arc::clone(&accepted), stopped);
    gw.register(echo_spec("echo", addr)).await.unwrap();
    assert_eq!(status_of(&gw.call("echo", r#"{"n": 1}"#).await), ToolStatus::Success);

    stop.send(()).unwrap();
    // The server's graceful stop closes the idle connection; until it listens again, calls cannot connect.
    let mut down = None;
    support::eventually(std::time::Duration::from_secs(15), "calls fail once the tool server is gone", async || {
        let m = gw.call("echo", r#"{"n": 2}"#).await;
        let failed = status_of(&m) == ToolStatus::Error;
        down = failed.then_some(m);
        failed
    })
    .await;
    let down = down.unwrap();
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
    let target = support::backends::start_runtime(Runtime::default()).await;
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
async fn an_answer_larger_than_the_streams_window_arrives_whole() {
    let (_dir, mut config) = temp_config();
    config.max_result_bytes = 4 * 1024 * 1024;
    config.parse_limits.max_bytes = 2 * 1024 * 1024;
    config.max_request_bytes = 2 * 1024 * 1024;
    let mut gw = start_gateway(config).await;
    let target = support::backends::start_runtime(Runtime::default()).await;
    let spec = json!({"name": "echo", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}}});
    gw.register(spec).await.unwrap();
    // Echoed twice: about 2.4 MB, past the 2 MiB stream window, which opens again only as the gateway reads. (With
    // the effective arguments, the agent's answer stays under its client's 4 MiB limit.)
    let big = format!(r#"{{"a": "{}"}}"#, "x".repeat(1_200_000));
    for _ in 0..2 {
        let answered = tokio::time::timeout(std::time::Duration::from_secs(20), gw.call("echo", &big)).await;
        let m = answered.expect("the answer is read as it arrives, not stalled on flow control");
        assert_eq!((status_of(&m), m.content.len()), (ToolStatus::Success, big.len()), "{:?}", m.error);
    }
}

/// A ToolRuntime written on h2 itself, whose behaviour depends on the tool: `goaway` answers the arguments, then
/// closes the connection with a GOAWAY; `cancel` resets the stream with CANCEL; `proxy` answers HTTP 503 with the
/// gRPC status a proxy in front of a server adds; `details` answers INVALID_ARGUMENT with status details that are
/// not base64.
async fn start_raw_runtime() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(serve_raw(socket));
        }
    });
    addr
}

async fn serve_raw(socket: tokio::net::TcpStream) {
    let mut connection = h2::server::handshake(socket).await.unwrap();
    while let Some(Ok((request, mut respond))) = connection.accept().await {
        let mut body = request.into_body();
        let mut bytes = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.unwrap();
            let _ = body.flow_control().release_capacity(chunk.len());
            bytes.extend_from_slice(&chunk);
        }
        let invoke = toolgate::pb::v1::InvokeRequest::decode(&bytes[5..]).unwrap();
        match invoke.tool.as_str() {
            "cancel" => respond.send_reset(h2::Reason::CANCEL),
            "proxy" => {
                let head = http::Response::builder()
                    .status(503)
                    .header("grpc-status", "14")
                    .header("grpc-message", "upstream%20down")
                    .body(())
                    .unwrap();
                respond.send_response(head, true).unwrap();
            }
            "details" => {
                let head = http::Response::builder()
                    .header("content-type", "application/grpc")
                    .header("grpc-status", "3")
                    .header("grpc-message", "city%20is%20unknown")
                    .header("grpc-status-details-bin", "!!not base64!!")
                    .body(())
                    .unwrap();
                respond.send_response(head, true).unwrap();
            }
            _ => {
                let answer = toolgate::pb::v1::InvokeResponse { content: invoke.arguments, ..Default::default() };
                let head = http::Response::builder().header("content-type", "application/grpc").body(()).unwrap();
                let mut stream = respond.send_response(head, false).unwrap();
                stream.send_data(toolgate::wire::frame::encode(&answer), false).unwrap();
                let mut trailers = http::HeaderMap::new();
                trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
                stream.send_trailers(trailers).unwrap();
                connection.graceful_shutdown();
            }
        }
    }
}

#[tokio::test]
async fn a_server_that_closes_each_connection_after_an_answer_is_reached_again_every_time() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let addr = start_raw_runtime().await;
    gw.register(echo_spec("goaway", addr)).await.unwrap();
    for n in 0..5 {
        let m = gw.call("goaway", &format!(r#"{{"n": {n}}}"#)).await;
        assert_eq!((status_of(&m), m.content), (ToolStatus::Success, format!(r#"{{"n": {n}}}"#)), "call {n}");
    }
}

#[tokio::test]
async fn a_cancelled_stream_is_not_retried_and_a_proxys_or_servers_status_is_read() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let addr = start_raw_runtime().await;
    let target = format!("http://{addr}");
    let spec = |name: &str| {
        json!({"name": name, "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}},
               "limits": {"idempotent": true, "retries": 2}})
    };
    gw.register(spec("cancel")).await.unwrap();
    gw.register(spec("proxy")).await.unwrap();
    gw.register(spec("details")).await.unwrap();

    // The tool may have run before it cancelled: an error to report, not to send again.
    let m = gw.call("cancel", "{}").await;
    let error = m.error.clone().unwrap();
    assert_eq!((kind_of(&m), error.retryable, m.attempts), (K::ToolError, false, 1), "{m:?}");
    assert!(error.message.contains("Cancelled"), "{error:?}");

    // A 503 that carries grpc-status 14 is UNAVAILABLE with the proxy's message, retried as the tool allows.
    let m = gw.call("proxy", "{}").await;
    let error = m.error.clone().unwrap();
    assert_eq!((kind_of(&m), error.retryable, m.attempts), (K::Unavailable, true, 3), "{m:?}");
    assert!(error.message.contains("upstream down"), "{error:?}");

    // Status details that do not decode are left aside: the status still reads, and nothing panics.
    let m = gw.call("details", "{}").await;
    let error = m.error.clone().unwrap();
    assert_eq!((kind_of(&m), error.model_fixable, error.retryable), (K::ToolError, true, false), "{m:?}");
    assert!(error.message.contains("city is unknown"), "{error:?}");
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
