//! Runs calls end to end: the pure pipeline, then dispatch with timeouts and retries, then the answer.

use crate::backend::{BackendError, Backends, Invocation};
use crate::pipeline::{self, CallContext, CallError, Messages, PrepareOptions, Prepared, ToolCall, ToolMessage};
use crate::registry::Registry;
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// What the executor needs to know beyond the registry.
#[derive(Debug, Clone)]
pub struct ExecSettings {
    pub prepare: PrepareOptions,
    /// Used when a tool sets no `limits.timeout_ms`.
    pub default_timeout: Duration,
    /// How many calls of one batch run at once.
    pub batch_concurrency: usize,
    pub messages: Messages,
}

pub struct Executor {
    registry: Arc<Registry>,
    backends: Backends,
    settings: ExecSettings,
}

/// Pause between attempts of an idempotent tool, multiplied by the attempt number.
const RETRY_BACKOFF: Duration = Duration::from_millis(50);

impl Executor {
    pub fn new(registry: Arc<Registry>, backends: Backends, settings: ExecSettings) -> Self {
        Self { registry, backends, settings }
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Runs one call; always answers with exactly one message. `deadline` is the caller's.
    pub async fn execute(&self, call: &ToolCall, ctx: &CallContext, deadline: Option<Instant>) -> ToolMessage {
        let started = Instant::now();
        let catalog = self.registry.catalog();
        let mut message = match pipeline::prepare(&catalog, call, ctx, &self.settings.prepare) {
            Ok(prepared) => self.dispatch(call, ctx, prepared, deadline).await,
            Err(rejected) => {
                let name = rejected.tool.as_ref().map_or(call.name.as_str(), |t| t.spec.name.as_str());
                pipeline::error_message(call, name, rejected.error, rejected.repairs, &self.settings.messages)
            }
        };
        message.duration_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        tracing::info!(
            tool = %message.name, call_id = %call.id, status = ?message.status,
            error = ?message.error.as_ref().map(|e| e.kind), duration_us = message.duration_us, "call"
        );
        message
    }

    /// Runs the calls of one AI message concurrently, up to the configured cap, answering in call order.
    pub async fn execute_batch(
        &self,
        calls: &[ToolCall],
        ctx: &CallContext,
        deadline: Option<Instant>,
    ) -> Vec<ToolMessage> {
        let runs: Vec<_> = calls.iter().map(|call| self.execute(call, ctx, deadline)).collect();
        futures::stream::iter(runs).buffered(self.settings.batch_concurrency.max(1)).collect().await
    }

    async fn dispatch(
        &self,
        call: &ToolCall,
        ctx: &CallContext,
        prepared: Prepared,
        deadline: Option<Instant>,
    ) -> ToolMessage {
        let tool = &prepared.tool;
        let backend = tool.spec.backend.as_ref().expect("registered tools always have a backend");
        let invocation =
            Invocation { call_id: &call.id, tool: &tool.spec.name, arguments: &prepared.arguments_text, context: ctx };
        let limits = &tool.spec.limits;
        let timeout = if limits.timeout_ms > 0 {
            Duration::from_millis(limits.timeout_ms)
        } else {
            self.settings.default_timeout
        };
        let max_attempts = if limits.idempotent { limits.retries + 1 } else { 1 };
        let mut attempts = 0;
        let result = loop {
            attempts += 1;
            let budget = deadline.map_or(timeout, |d| timeout.min(d.saturating_duration_since(Instant::now())));
            let outcome = match tokio::time::timeout(budget, self.backends.invoke(backend, invocation)).await {
                Ok(Ok(output)) => break Ok(output),
                Ok(Err(err)) => backend_error(err),
                Err(_elapsed) => CallError::Timeout { after_ms: millis(budget) },
            };
            let transient = matches!(&outcome, CallError::Timeout { .. } | CallError::Unavailable(_))
                || matches!(&outcome, CallError::Tool { retryable: true, .. });
            let pause = RETRY_BACKOFF * attempts;
            let time_left = deadline.is_none_or(|d| Instant::now() + pause < d);
            if !(transient && attempts < max_attempts && time_left) {
                break Err(outcome);
            }
            tokio::time::sleep(pause).await;
        };
        let name = tool.spec.name.as_str();
        let mut message = match result {
            Ok(out) => pipeline::success_message(call, name, out.content, out.structured),
            Err(err) => pipeline::error_message(call, name, err, Vec::new(), &self.settings.messages),
        };
        message.repairs = prepared.repairs;
        message.effective_arguments = prepared.effective_arguments;
        message.attempts = attempts;
        message
    }
}

fn backend_error(err: BackendError) -> CallError {
    match err {
        BackendError::Tool { message, retryable, model_fixable } => {
            CallError::Tool { message, retryable, model_fixable }
        }
        BackendError::Unavailable(reason) => CallError::Unavailable(reason),
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
