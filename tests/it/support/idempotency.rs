//! A tool server for the idempotency tests: it counts the calls that reach it, and holds each call of `held` (and
//! `held_brief`) until the test lets one through, to stand for a slow tool whose caller gives up; `overloaded`
//! fails as retryable (gRPC RESOURCE_EXHAUSTED), `refusing` as the model's to fix (INVALID_ARGUMENT).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tonic::{Request, Response, Status};
use toolgate::pb::v1::{self as pb, tool_runtime_server::ToolRuntime, tool_runtime_server::ToolRuntimeServer};

#[derive(Clone)]
pub struct Counting {
    calls: Arc<AtomicUsize>,
    /// Calls of `held` wait for a permit here.
    gate: Arc<Semaphore>,
}

impl Default for Counting {
    fn default() -> Self {
        Self { calls: Arc::default(), gate: Arc::new(Semaphore::new(0)) }
    }
}

impl Counting {
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Lets one held call answer.
    pub fn release_one(&self) {
        self.gate.add_permits(1);
    }

    /// Waits until `n` calls have reached the server, for up to 5 s.
    pub async fn wait_for_calls(&self, n: usize) {
        let until = tokio::time::Instant::now() + Duration::from_secs(5);
        while self.calls() < n {
            assert!(tokio::time::Instant::now() < until, "{n} calls never reached the tool ({} did)", self.calls());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

#[tonic::async_trait]
impl ToolRuntime for Counting {
    async fn invoke(&self, request: Request<pb::InvokeRequest>) -> Result<Response<pb::InvokeResponse>, Status> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let req = request.into_inner();
        match req.tool.as_str() {
            "held" | "held_brief" => self.gate.acquire().await.expect("never closed").forget(),
            "overloaded" => return Err(Status::resource_exhausted(format!("run {n}: too busy, try again later"))),
            "refusing" => return Err(Status::invalid_argument(format!("run {n}: n must be even"))),
            _ => {}
        }
        let content = format!("run {n} of {} with {}", req.tool, req.arguments);
        Ok(Response::new(pb::InvokeResponse {
            content,
            structured: String::new(),
            is_error: false,
            error_message: String::new(),
        }))
    }
}

/// Starts the server on 127.0.0.1:0 and returns its target URI.
pub async fn start(runtime: Counting) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(ToolRuntimeServer::new(runtime))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    format!("http://{addr}")
}

/// The specs of every tool on `target`, as JSON, `quick` last: `held_brief` times out after 500 ms, the others
/// after 20 s.
pub fn specs(target: &str) -> [serde_json::Value; 5] {
    [("held", 20_000), ("held_brief", 500), ("overloaded", 20_000), ("refusing", 20_000), ("quick", 20_000)].map(
        |(name, timeout_ms)| {
            serde_json::json!({
                "name": name,
                "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
                "backend": {"grpc": {"target": target}},
                "limits": {"timeout_ms": timeout_ms},
            })
        },
    )
}

pub fn request(id: &str, name: &str, arguments: &str, timeout: Option<Duration>) -> Request<pb::ExecuteRequest> {
    let call = pb::ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() };
    let context = pb::CallContext { session_id: "s1".into(), user_id: "u1".into(), ..Default::default() };
    let mut request =
        Request::new(pb::ExecuteRequest { call: Some(call), context: Some(context), ..Default::default() });
    if let Some(timeout) = timeout {
        request.set_timeout(timeout);
    }
    request
}
