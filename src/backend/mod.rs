//! Tool backends: where a prepared call actually runs. The only place, with `registry` stores, that calls out.

mod grpc;
mod health;
mod http;
pub mod mcp;
pub mod worker;

pub use health::{Health, HealthSnapshot, HealthState};

use crate::pipeline::{CallContext, FailureClass, ResultBlock};
use crate::registry::Backend;
use crate::tls::ClientTls;
use futures::future::BoxFuture;
use rmcp::model::ClientResult;
use std::sync::Arc;
use std::time::Duration;

/// What a backend is asked to run.
#[derive(Debug, Clone, Copy)]
pub struct Invocation<'a> {
    pub call_id: &'a str,
    /// The tool's registry name and tenant.
    pub tool: &'a str,
    pub tenant: &'a str,
    /// JSON text of the arguments.
    pub arguments: &'a str,
    pub context: &'a CallContext,
    /// Trace context headers (`traceparent`, `tracestate`) that continue the gateway's span in the tool.
    pub trace: &'a [(&'static str, String)],
    /// How long the gateway waits for this attempt; backends that can pass a deadline on do.
    pub budget: Duration,
    /// Where the tool's progress goes, when the caller asked to hear it; backends that report progress (MCP
    /// servers) send it there.
    pub progress: Option<&'a Arc<dyn ProgressSink>>,
    /// The host that made the call, when the door it came through can pass a backend's requests and log
    /// messages on to it (MCP's front door); backends that send them (MCP servers) reach it there.
    pub host: Option<&'a Arc<dyn CallHost>>,
}

/// The host that made a call, as its backend reaches it while the call runs: an MCP server's requests to its
/// client (sampling, elicitation, roots) and its log messages.
pub trait CallHost: Send + Sync + std::fmt::Debug {
    /// Asks the host and waits for its answer; refused at once when the host did not declare the capability the
    /// request needs.
    fn ask(&self, request: rmcp::model::ServerRequest) -> BoxFuture<'static, Result<ClientResult, rmcp::ErrorData>>;
    /// Queues a log message for the host, in the order the server sent it, unless the host asked for a higher
    /// level; one that finds the host that far behind is dropped, so a chatty server cannot fill the gateway.
    /// (SEP-2577 deprecates logging from 2026-07-28 on; hosts of 2025-11-25 still ask for it.)
    #[allow(deprecated)]
    fn log(&self, message: rmcp::model::LoggingMessageNotificationParam);
}

/// How far a call has got, as a backend reports it (MCP `notifications/progress`).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Where a call's progress goes, report by report in the order its backend sent them: the door that asked for it
/// passes each on to its caller, or the attempt's span records it. Told on the backend session's own task, so it
/// never waits: a report that finds its caller that far behind is dropped, so a chatty tool cannot fill the gateway.
pub trait ProgressSink: Send + Sync + std::fmt::Debug {
    fn report(&self, progress: Progress);
}

/// A backend's successful answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub content: String,
    /// JSON text, when the result is structured.
    pub structured: Option<String>,
    /// The result's content blocks when it holds more than text; `content` is then its text for a text-only
    /// model (`pipeline::text_and_blocks`).
    pub blocks: Vec<ResultBlock>,
}

impl Output {
    /// A result of text (and maybe structured content) alone.
    pub fn text(content: String, structured: Option<String>) -> Self {
        Self { content, structured, blocks: Vec::new() }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BackendError {
    /// The tool ran and reported a failure.
    #[error("{message}")]
    Tool { message: String, class: FailureClass },
    /// The backend could not be reached, or answered with something that is not an answer.
    #[error("{0}")]
    Unavailable(String),
}

impl BackendError {
    /// The tool failed, and the same call would fail the same way.
    pub fn fatal(message: impl Into<String>) -> Self {
        BackendError::Tool { message: message.into(), class: FailureClass::Fatal }
    }
}

/// Connections to every backend, shared by all calls: one HTTP client pool, one gRPC channel per target, the MCP
/// servers' sessions and the connected workers. A clone is a handle to the same connections: the executor runs
/// calls on one, and a page that shows their health (the console's) reads another.
#[derive(Clone)]
pub struct Backends {
    http: Arc<http::HttpClient>,
    grpc: Arc<grpc::GrpcChannels>,
    mcp: Arc<mcp::McpHub>,
    workers: Arc<worker::WorkerPool>,
}

impl Backends {
    /// `max_result_bytes` bounds what a backend may answer.
    pub fn new(
        connect_timeout: Duration,
        max_result_bytes: usize,
        mcp: Arc<mcp::McpHub>,
        workers: Arc<worker::WorkerPool>,
        tls: Arc<ClientTls>,
    ) -> Self {
        Self {
            http: Arc::new(http::HttpClient::new(connect_timeout, max_result_bytes, Arc::clone(&tls))),
            grpc: Arc::new(grpc::GrpcChannels::new(connect_timeout, max_result_bytes, tls)),
            mcp,
            workers,
        }
    }

    /// Runs one invocation. The caller bounds it in time. Every call's future holds room for the largest
    /// backend's, and is moved whole more than once on its way into a task: the HTTP, MCP and worker backends
    /// (several KiB each) are boxed so that gRPC calls do not carry and copy their room.
    pub async fn invoke(&self, backend: &Backend, call: Invocation<'_>) -> Result<Output, BackendError> {
        match backend {
            Backend::Grpc { target } => self.grpc.invoke(target, call).await,
            Backend::Http(spec) => Box::pin(self.http.invoke(spec, call)).await,
            Backend::Mcp { server, tool } => Box::pin(self.mcp.invoke(server, tool, call)).await,
            Backend::Worker {} => Box::pin(self.workers.invoke(call)).await,
        }
    }
}

/// The process-wide TLS provider, before any HTTP client is built (`tls::install_provider`).
pub(crate) fn install_tls_provider() {
    crate::tls::install_provider();
}

/// Whether a text is JSON worth passing on as a structured result.
fn structured_of(text: &str) -> Option<String> {
    let trimmed = text.trim_start();
    let looks_structured = trimmed.starts_with('{') || trimmed.starts_with('[');
    (looks_structured && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()).then(|| text.to_owned())
}
