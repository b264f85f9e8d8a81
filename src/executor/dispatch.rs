//! Dispatcher: one prepared call on its backend, under the tool's concurrency cap, its timeout and the caller's
//! deadline, with retries for idempotent tools.

use super::{CallRequest, ExecSettings};
use crate::backend::{BackendError, Backends, Invocation, Progress, ProgressSink};
use crate::pipeline::{self, CallError, Messages, Prepared, ToolMessage};
use crate::policy::{Policy, Slot, ToolKey};
use crate::registry::Backend;
use crate::telemetry::{self, Telemetry};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Pause between attempts of an idempotent tool, multiplied by the attempt number.
const RETRY_BACKOFF: Duration = Duration::from_millis(50);

/// The stage: the backends, the concurrency caps (in the policy state), and the gateway's default timeout.
pub(super) struct Dispatcher {
    backends: Backends,
    policy: Arc<Policy>,
    telemetry: Arc<Telemetry>,
    default_timeout: Duration,
    messages: Messages,
}

impl Dispatcher {
    pub(super) fn new(
        backends: Backends,
        policy: Arc<Policy>,
        telemetry: Arc<Telemetry>,
        settings: &ExecSettings,
    ) -> Self {
        let (default_timeout, messages) = (settings.default_timeout, settings.messages.clone());
        Self { backends, policy, telemetry, default_timeout, messages }
    }

    /// How long a recorded call of `tool` can take at most: a wait for a concurrency slot, then every attempt.
    pub(super) fn longest(&self, tool: &crate::registry::CompiledTool) -> Duration {
        let limits = &tool.spec.limits;
        limits.timeout(self.default_timeout).saturating_mul(limits.max_attempts().saturating_add(1))
    }

    /// Runs a prepared call and answers with its message, reporting the model's part of the arguments. The tool
    /// runs within `deadline`; a call that must wait for its concurrency slot starts only if an attempt of the
    /// tool's usual length would end by `start_by` (else it is refused as busy without running). With neither,
    /// it waits for a slot at most the tool's timeout.
    pub(super) async fn run(&self, req: CallRequest<'_>, prepared: Prepared) -> ToolMessage {
        let CallRequest { call, deadline, start_by, .. } = req;
        let tool = &prepared.tool;
        let name = tool.spec.name.as_str();
        let timeout = tool.spec.limits.timeout(self.default_timeout);
        let (key, max) = (ToolKey::new(&tool.spec.tenant, name), tool.spec.limits.max_concurrency);
        let slot = match start_by.or(deadline) {
            Some(due) => self.policy.concurrency.acquire_to_finish(&key, max, due).await,
            None => self.policy.concurrency.acquire(&key, max, Some(Instant::now() + timeout)).await,
        };
        let (result, attempts) = match slot {
            Ok(slot) => self.attempts(req, &prepared, timeout, &slot).await,
            Err(saturated) => (Err(CallError::Busy { max: saturated.max }), 0),
        };
        let mut message = match result {
            Ok(out) => {
                let mut message = pipeline::success_message(call, name, out.content, out.structured);
                message.blocks = out.blocks;
                message
            }
            Err(err) => pipeline::error_message(call, name, err, Vec::new(), &self.messages),
        };
        message.repairs = prepared.repairs;
        message.effective_arguments = prepared.effective_arguments;
        message.attempts = attempts;
        message
    }

    /// Calls the backend until it answers, fails for good, or the retries or the deadline run out. A success's
    /// time is told to the tool's pace, through its concurrency slot.
    async fn attempts(
        &self,
        CallRequest { call, ctx, deadline, progress, host, .. }: CallRequest<'_>,
        prepared: &Prepared,
        timeout: Duration,
        slot: &Slot,
    ) -> (Result<crate::backend::Output, CallError>, u32) {
        let tool = &prepared.tool;
        let backend = tool.spec.backend.as_ref().expect("registered tools always have a backend");
        let limits = &tool.spec.limits;
        let max_attempts = limits.max_attempts();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let budget = deadline.map_or(timeout, |d| timeout.min(d.saturating_duration_since(Instant::now())));
            let span = self.telemetry.backend(&tool.label, backend.kind(), attempts);
            let trace = telemetry::propagation::headers(&span);
            let spanned = progress.is_none().then(|| self.progress_to_span(backend, &span)).flatten();
            let invocation = Invocation {
                call_id: &call.id,
                tool: &tool.spec.name,
                tenant: &tool.spec.tenant,
                arguments: &prepared.arguments_text,
                context: ctx,
                trace: &trace,
                budget,
                progress: progress.or(spanned.as_ref()),
                host,
            };
            let started = Instant::now();
            let invoked = tokio::time::timeout(budget, self.backends.invoke(backend, invocation)).await;
            let outcome = match invoked {
                Ok(Ok(output)) => {
                    slot.succeeded(started.elapsed());
                    self.telemetry.end(&span, None);
                    return (Ok(output), attempts);
                }
                Ok(Err(err)) => backend_error(err),
                Err(_elapsed) => CallError::Timeout { after_ms: super::millis(budget) },
            };
            self.telemetry.end(&span, Some(telemetry::kind_name(outcome.kind())));
            let transient = outcome.class().retryable();
            let pause = RETRY_BACKOFF * attempts;
            let time_left = deadline.is_none_or(|d| Instant::now() + pause < d);
            if !(transient && attempts < max_attempts && time_left) {
                return (Err(outcome), attempts);
            }
            tokio::time::sleep(pause).await;
        }
    }
}

impl Dispatcher {
    /// Where an MCP server's progress goes when the caller did not ask to hear it (a gRPC caller): to the
    /// attempt's span, as events, when spans are on.
    fn progress_to_span(&self, backend: &Backend, span: &opentelemetry::Context) -> Option<Arc<dyn ProgressSink>> {
        if !(matches!(backend, Backend::Mcp { .. }) && self.telemetry.tracing()) {
            return None;
        }
        Some(Arc::new(SpannedProgress { telemetry: Arc::clone(&self.telemetry), span: span.clone() }))
    }
}

/// An attempt's progress, recorded on the attempt's span as the backend reports it.
struct SpannedProgress {
    telemetry: Arc<Telemetry>,
    span: opentelemetry::Context,
}

impl std::fmt::Debug for SpannedProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SpannedProgress")
    }
}

impl ProgressSink for SpannedProgress {
    fn report(&self, report: Progress) {
        self.telemetry.progress(&self.span, report.progress, report.total, report.message.as_deref());
    }
}

fn backend_error(err: BackendError) -> CallError {
    match err {
        BackendError::Tool { message, class } => CallError::Tool { message, class },
        BackendError::Unavailable(reason) => CallError::Unavailable(reason),
    }
}
