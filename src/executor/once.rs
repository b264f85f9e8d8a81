//! The call-id record in the executor: at most one run per call id. A call sent again with the same tenant and
//! id, and the same tool, arguments and context, within the window gets the first call's outcome (waiting for it
//! while it runs) and never runs the tool again; the same id with anything else is refused.
//!
//! Only final outcomes of calls that reached their tool are kept: a call refused before its tool was reached (by a
//! budget, the rate limit, injection or a full concurrency cap), or whose outcome is retryable (a timeout, a
//! 5xx), releases its id, so sending it again may run it; a call still running is waited on, never run twice.
//!
//! A recorded call runs in a task of its own with the tool's timeout, not its caller's deadline: a caller that
//! times out and retries is the case this exists for, so the first run must go on and its outcome be kept.

use super::{Answered, CallRequest, Executor};
use crate::idempotency::{CallKey, Claim, Claimed, Fingerprint};
use crate::pipeline::{CallContext, CallError, ErrorKind, Prepared, ToolCall, ToolMessage};
use crate::registry::CompiledTool;
use futures::FutureExt as _;
use opentelemetry::context::FutureExt as _;
use sha2::{Digest, Sha256};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Whether an outcome is kept for the call's id: only when the tool may have run and the outcome is final (a
/// success, or a fatal or model-fixable failure). A call that never reached its tool, or whose outcome says to try
/// again (a timeout, a 5xx, a backend unavailable: `retryable`), may be sent again and run: keeping that answer
/// would make `retryable` a lie for the window.
fn kept(message: &ToolMessage) -> bool {
    let retryable = message.error.as_ref().is_some_and(|e| e.retryable);
    message.attempts > 0 && !retryable
}

/// The most a recorded call's latest start is set before its caller's deadline.
const START_MARGIN: Duration = Duration::from_millis(20);

/// Added to the longest a recorded call can take before its claim counts as abandoned.
const LEASE_MARGIN: Duration = Duration::from_secs(5);

const LOST: &str = "the gateway running this call stopped; whether it completed is unknown, so it is not run again";

impl Executor {
    /// Admission and dispatch at most once per call id (the caller checked that the record is on and the call
    /// has an id): the first call runs them in a task of its own, a call sent again gets its outcome.
    pub(super) async fn once(self: &Arc<Self>, req: CallRequest<'_>, prepared: Prepared) -> Answered {
        let CallRequest { call, ctx, deadline, .. } = req;
        let key = CallKey { tenant: ctx.tenant.clone(), call_id: call.id.clone() };
        let fingerprint = fingerprint(call, ctx, &prepared.tool);
        let lease = self.lease(&prepared.tool);
        let name = prepared.tool.spec.name.clone();
        loop {
            let claimed = self.once.claim(&key, &fingerprint, lease).await;
            return match claimed {
                Claimed::Run(claim) => Answered::now(self.run_claimed(req, prepared, claim).await),
                Claimed::Done(message) => Answered::earlier(ToolMessage { tool_call_id: call.id.clone(), ..*message }),
                Claimed::Running(mut waiter) => match deadline {
                    None => {
                        waiter.changed().await;
                        continue;
                    }
                    Some(until) if tokio::time::timeout_at(until, waiter.changed()).await.is_ok() => continue,
                    Some(_) => Answered::earlier(self.still_running(call, &name)),
                },
                Claimed::Conflict => Answered::now(self.conflict(call, &name)),
                Claimed::Lost => {
                    Answered::now(self.error(call, &name, CallError::OutcomeUnknown(LOST.into()), Vec::new()))
                }
                Claimed::Full => {
                    tracing::debug!(call_id = %call.id, "every recorded call is running: this one runs unrecorded");
                    Answered::now(self.admitted(req, prepared).await)
                }
                Claimed::Unreachable(reason) => {
                    tracing::debug!(call_id = %call.id, %reason, "Redis down: the call runs unrecorded");
                    self.telemetry.fail_open(&name, "idempotency");
                    Answered::now(self.admitted(req, prepared).await)
                }
            };
        }
    }

    /// Runs a claimed call in a task of its own, which settles the claim however the call ends; the caller
    /// waits for it until its deadline.
    async fn run_claimed(self: &Arc<Self>, req: CallRequest<'_>, prepared: Prepared, claim: Claim) -> ToolMessage {
        let CallRequest { call, ctx, deadline, mode, door, .. } = req;
        let name = prepared.tool.spec.name.clone();
        let shown = name.clone();
        let (this, owned_call, owned_ctx) = (Arc::clone(self), call.clone(), ctx.clone());
        // The tool may run on past the caller's deadline, but starts before it, a little early so that a call
        // refused for want of a concurrency slot is answered as such rather than as still running.
        let start_by =
            deadline.map(|until| until - (until.saturating_duration_since(Instant::now()) / 10).min(START_MARGIN));
        let task = async move {
            let req = CallRequest { call: &owned_call, ctx: &owned_ctx, deadline: None, start_by, mode, door };
            let run = AssertUnwindSafe(this.admitted(req, prepared));
            let (ran, message) = match run.catch_unwind().await {
                // A call that never reached its tool did not happen: it may be sent again.
                Ok(message) => (kept(&message), message),
                // It may have: at most once means not again.
                Err(_) => {
                    (true, this.error(&owned_call, &name, CallError::Internal("the call panicked".into()), Vec::new()))
                }
            };
            if ran {
                this.once.finish(&claim, &message).await;
            } else {
                this.once.release(&claim).await;
            }
            message
        };
        let handle = tokio::spawn(task.with_current_context());
        let joined = match deadline {
            None => handle.await,
            Some(until) => match tokio::time::timeout_at(until, handle).await {
                Ok(joined) => joined,
                Err(_) => return self.still_running(call, &shown),
            },
        };
        joined.unwrap_or_else(|err| {
            self.error(call, &shown, CallError::Internal(format!("the call's task failed: {err}")), Vec::new())
        })
    }

    /// A running claim older than this was abandoned: the longest the call can take and a margin.
    fn lease(&self, tool: &CompiledTool) -> Duration {
        self.dispatch.longest(tool) + LEASE_MARGIN
    }

    /// The caller's deadline came while the call still runs: a retry with the same id gets its outcome.
    fn still_running(&self, call: &ToolCall, name: &str) -> ToolMessage {
        let mut message = self.error(call, name, CallError::Timeout { after_ms: 0 }, Vec::new());
        let text = format!(
            "The call to {name} is still running. Send the same call again, with the same call id {:?}, to get its \
             result; it will not run twice.",
            call.id
        );
        if let Some(error) = message.error.as_mut() {
            error.message = format!("the caller's deadline passed while call id {:?} is still running", call.id);
        }
        message.content = text;
        message
    }

    /// A call id already used for a different call: refused, so that neither call's outcome is mistaken for the
    /// other's. The model did not choose the id, so it is not told to fix anything.
    fn conflict(&self, call: &ToolCall, name: &str) -> ToolMessage {
        let mut message = self.error(call, name, CallError::Internal(String::new()), Vec::new());
        let what = format!(
            "call id {:?} was already used for a different call (another tool, arguments or context); this call \
             was not run",
            call.id
        );
        if let Some(error) = message.error.as_mut() {
            error.kind = ErrorKind::InvalidArguments;
            error.model_fixable = false;
            error.retryable = false;
            error.message = what.clone();
        }
        message.content = format!("Error: {what}. Send it with a new call id.");
        message
    }
}

/// Each part length-prefixed, so that no two different calls hash the same bytes.
fn fingerprint(call: &ToolCall, ctx: &CallContext, tool: &CompiledTool) -> Fingerprint {
    let mut hash = Sha256::new();
    let mut part = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    for text in [&tool.spec.tenant, &tool.spec.name, &call.arguments, &ctx.user_id, &ctx.session_id] {
        part(text.as_bytes());
    }
    for (name, value) in &ctx.values {
        part(name.as_bytes());
        part(value.as_bytes());
    }
    hash.finalize().into()
}
