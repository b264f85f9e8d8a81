//! Connected workers: processes that serve their own tools over a `ToolWorker.Connect` stream they open. The pool
//! routes each call to one of the workers serving its tool and fails a worker's calls at once when it goes away.
//! No protobuf here: the stream itself lives in `grpc::worker`.

mod link;
#[cfg(test)]
mod tests;

pub use link::WorkerLink;

use super::{BackendError, Invocation, Output};
use crate::pipeline::CallContext;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use tokio::sync::mpsc;

/// Jobs queued for one worker before callers wait for room.
const JOB_QUEUE: usize = 64;

/// One call, as a worker receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Unique on the worker's stream; its answer names it.
    pub invocation_id: String,
    pub call_id: String,
    pub tool: String,
    /// JSON text, after repair, validation and injection.
    pub arguments: String,
    pub context: CallContext,
    /// How long the gateway still waits for the result.
    pub deadline_ms: u64,
    /// Trace context headers (`traceparent`, `tracestate`).
    pub trace: Vec<(String, String)>,
}

/// A worker's answer to one job.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    pub content: String,
    /// JSON text of a structured result; empty when there is none.
    pub structured: String,
    pub is_error: bool,
    pub error_message: String,
}

impl Answer {
    /// The answer as a backend result, mapped as the gRPC backend maps a ToolRuntime response. An answer over
    /// `max_bytes` is a tool error, as an oversized HTTP body or MCP result is.
    pub fn into_result(self, max_bytes: usize) -> Result<Output, BackendError> {
        if self.content.len() + self.structured.len() + self.error_message.len() > max_bytes {
            let message = format!("the result is over the limit of {max_bytes} bytes");
            return Err(BackendError::fatal(message));
        }
        if self.is_error {
            let message = if self.error_message.is_empty() { self.content } else { self.error_message };
            return Err(BackendError::fatal(message));
        }
        let structured = (!self.structured.is_empty()).then_some(self.structured);
        Ok(Output::text(self.content, structured))
    }
}

/// The workers connected now, by the tools they serve.
#[derive(Default)]
pub struct WorkerPool {
    /// Read on every call, written when a worker comes or goes.
    routes: RwLock<HashMap<String, HashMap<String, Route>>>,
    next_id: AtomicU64,
    /// Set at shutdown: every link is closed, and a worker attaching later is closed at once.
    closing: AtomicBool,
}

/// The workers serving one tool, taken in turn.
#[derive(Default)]
struct Route {
    links: Vec<Arc<WorkerLink>>,
    turn: AtomicUsize,
}

impl WorkerPool {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends the call to one of the tool's workers and waits for its result. Dropping the future withdraws the call.
    pub async fn invoke(&self, call: Invocation<'_>) -> Result<Output, BackendError> {
        let Some(link) = self.pick(call.tenant, call.tool) else {
            return Err(BackendError::Unavailable(format!("no worker is connected for tool {}", call.tool)));
        };
        let job = |invocation_id| Job {
            invocation_id,
            call_id: call.call_id.to_owned(),
            tool: call.tool.to_owned(),
            arguments: call.arguments.to_owned(),
            context: call.context.clone(),
            deadline_ms: u64::try_from(call.budget.as_millis()).unwrap_or(u64::MAX),
            trace: call.trace.iter().map(|(name, value)| ((*name).to_owned(), value.clone())).collect(),
        };
        let gone =
            || BackendError::Unavailable(format!("the worker serving {} disconnected during the call", call.tool));
        link.run(job, gone).await
    }

    /// The next worker serving the tool, in turn.
    fn pick(&self, tenant: &str, tool: &str) -> Option<Arc<WorkerLink>> {
        let routes = self.routes.read().unwrap_or_else(|p| p.into_inner());
        let route = routes.get(tenant)?.get(tool)?;
        let turn = route.turn.fetch_add(1, Ordering::Relaxed);
        route.links.get(turn % route.links.len().max(1)).cloned()
    }

    /// Adds a worker serving `tools` (`(tenant, name)` pairs). Returns its link and the jobs its stream must send;
    /// the caller `detach`es it when the stream ends.
    pub fn attach(&self, name: String, tools: Vec<(String, String)>) -> (Arc<WorkerLink>, mpsc::Receiver<Job>) {
        let id = format!("worker-{}", self.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        let (link, jobs) = WorkerLink::new(id, name, tools, JOB_QUEUE);
        let link = Arc::new(link);
        {
            let mut routes = self.routes.write().unwrap_or_else(|p| p.into_inner());
            for (tenant, tool) in &link.tools {
                let route = routes.entry(tenant.clone()).or_default().entry(tool.clone()).or_default();
                route.links.push(Arc::clone(&link));
            }
        }
        tracing::info!(worker_id = %link.id, worker = %link.name, tools = ?tool_names(&link), "worker connected");
        // Checked after the link is routed, so `close` either sees it or this sees `closing`.
        if self.closing.load(Ordering::SeqCst) {
            self.detach(&link, "the gateway is shutting down");
        }
        (link, jobs)
    }

    /// Removes a worker and fails its waiting calls at once. Idempotent: only the first call logs.
    pub fn detach(&self, link: &Arc<WorkerLink>, reason: &str) {
        {
            let mut routes = self.routes.write().unwrap_or_else(|p| p.into_inner());
            for (tenant, tool) in &link.tools {
                let Some(tools) = routes.get_mut(tenant) else { continue };
                if let Some(route) = tools.get_mut(tool) {
                    route.links.retain(|l| !Arc::ptr_eq(l, link));
                    if route.links.is_empty() {
                        tools.remove(tool);
                    }
                }
                if tools.is_empty() {
                    routes.remove(tenant);
                }
            }
        }
        if let Some(failed_calls) = link.close() {
            tracing::info!(worker_id = %link.id, worker = %link.name, tools = ?tool_names(link), failed_calls, reason, "worker disconnected");
        }
    }

    /// Closes every worker's stream, for shutdown: a connected worker would otherwise hold the server open.
    pub fn close(&self) {
        self.closing.store(true, Ordering::SeqCst);
        let links: Vec<Arc<WorkerLink>> = {
            let routes = self.routes.read().unwrap_or_else(|p| p.into_inner());
            routes.values().flat_map(HashMap::values).flat_map(|r| r.links.iter().cloned()).collect()
        };
        for link in &links {
            self.detach(link, "the gateway is shutting down");
        }
    }

    /// Every worker connected now, each once, by id.
    pub fn connected(&self) -> Vec<Arc<WorkerLink>> {
        let routes = self.routes.read().unwrap_or_else(|p| p.into_inner());
        let mut links: Vec<Arc<WorkerLink>> =
            routes.values().flat_map(HashMap::values).flat_map(|r| r.links.iter().cloned()).collect();
        links.sort_by(|a, b| a.id.cmp(&b.id));
        links.dedup_by(|a, b| a.id == b.id);
        links
    }

    /// How many workers serve the tool now.
    pub fn workers_of(&self, tenant: &str, tool: &str) -> usize {
        let routes = self.routes.read().unwrap_or_else(|p| p.into_inner());
        routes.get(tenant).and_then(|t| t.get(tool)).map_or(0, |r| r.links.len())
    }
}

fn tool_names(link: &WorkerLink) -> Vec<&str> {
    link.tools.iter().map(|(_, name)| name.as_str()).collect()
}
