//! Real tool backends for tests: a ToolRuntime gRPC server, an HTTP server, and sockets that misbehave.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::post;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};
use toolgate::pb::v1::{self as pb, tool_runtime_server::ToolRuntime, tool_runtime_server::ToolRuntimeServer};

/// A ToolRuntime whose behaviour depends on the tool name:
/// `echo` answers the arguments, `sleep` waits `{"ms": N}` first, `fail` reports a tool error,
/// `flaky` fails with UNAVAILABLE until its third call, `whoami` answers the context,
/// `rendezvous` returns only once `parties` calls are inside it at the same time, `traceparent` answers the
/// `traceparent` metadata it received (empty when none).
#[derive(Clone)]
pub struct Runtime {
    pub calls: Arc<AtomicUsize>,
    rendezvous: Arc<tokio::sync::Barrier>,
}

impl Default for Runtime {
    fn default() -> Self {
        Self::with_rendezvous(1)
    }
}

impl Runtime {
    pub fn with_rendezvous(parties: usize) -> Self {
        Self { calls: Arc::default(), rendezvous: Arc::new(tokio::sync::Barrier::new(parties)) }
    }
}

#[tonic::async_trait]
impl ToolRuntime for Runtime {
    async fn invoke(&self, request: Request<pb::InvokeRequest>) -> Result<Response<pb::InvokeResponse>, Status> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let traceparent = request.metadata().get("traceparent").map(|v| v.to_str().unwrap().to_owned());
        let req = request.into_inner();
        let args: serde_json::Value =
            serde_json::from_str(&req.arguments).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let ok = |content: String, structured: String| {
            Ok(Response::new(pb::InvokeResponse { content, structured, is_error: false, error_message: String::new() }))
        };
        match req.tool.as_str() {
            "sleep" => {
                let ms = args["ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                ok(format!("slept {ms} ms"), String::new())
            }
            "fail" => Ok(Response::new(pb::InvokeResponse {
                content: String::new(),
                structured: String::new(),
                is_error: true,
                error_message: "the tool broke".into(),
            })),
            "rendezvous" => {
                self.rendezvous.wait().await;
                ok("met".into(), String::new())
            }
            "traceparent" => ok(traceparent.unwrap_or_default(), String::new()),
            "flaky" if n < 3 => Err(Status::unavailable("warming up")),
            "whoami" => ok(serde_json::to_string(&req.context.unwrap_or_default().user_id).unwrap(), String::new()),
            _ => ok(req.arguments.clone(), req.arguments),
        }
    }
}

/// Starts the ToolRuntime on 127.0.0.1:0 and returns its target URI.
pub async fn start_runtime(runtime: Runtime) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(ToolRuntimeServer::new(runtime))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true))),
    );
    format!("http://{addr}")
}

/// A 1×1 transparent PNG.
pub const PIXEL_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x04, 0x00, 0x00, 0x00, 0xb5, 0x1c, 0x0c, 0x02, 0x00, 0x00, 0x00, 0x0b, 0x49,
    0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x64, 0x60, 0x00, 0x00, 0x00, 0x06, 0x00, 0x02, 0x30, 0x81, 0xd0, 0x2f, 0x00,
    0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// Starts an HTTP tool server on 127.0.0.1:0 and returns its base URL.
/// `POST /echo` answers the body; `/status/{code}` answers that status; `/sleep/{ms}` waits; `/text` answers text;
/// `/traceparent` answers the `traceparent` header it received; `/image` answers [`PIXEL_PNG`] as `image/png`;
/// `/moved/{code}` redirects to `/echo` with that status.
pub async fn start_http() -> String {
    let app = axum::Router::new()
        .route("/echo", post(|body: String| async move { ([("content-type", "application/json")], body) }))
        .route(
            "/status/{code}",
            post(|Path(code): Path<u16>| async move {
                (StatusCode::from_u16(code).unwrap(), format!("failed with {code}"))
            }),
        )
        .route(
            "/sleep/{ms}",
            post(|Path(ms): Path<u64>| async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                format!("slept {ms} ms")
            }),
        )
        .route("/text", post(|| async { "plain text answer" }))
        .route(
            "/moved/{code}",
            post(|Path(code): Path<u16>| async move { (StatusCode::from_u16(code).unwrap(), [("location", "/echo")]) }),
        )
        .route("/image", post(|| async { ([("content-type", "image/png; charset=binary")], PIXEL_PNG.to_vec()) }))
        .route(
            "/traceparent",
            post(|headers: axum::http::HeaderMap| async move {
                headers.get("traceparent").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
            }),
        );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// A port on which nothing listens: one from `free_addr`, which no other socket of the run is given or takes.
pub fn closed_port() -> SocketAddr {
    super::free_addr()
}

/// Accepts connections and never answers.
pub async fn start_silent() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    addr
}

/// Accepts connections, reads a little, answers bytes that are neither HTTP/2 nor HTTP/1, and closes.
pub async fn start_garbage() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = socket.read(&mut buf).await;
                let _ = socket.write_all(b"\x00\xffGARBAGE\r\n\r\nnot a protocol at all").await;
                let _ = socket.shutdown().await;
            });
        }
    });
    addr
}
