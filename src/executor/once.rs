//! The call-id record in the executor: at most one run per call id. A call sent again with the same tenant and
//! id, and the same tool, arguments and context, within the window gets the first call's outcome (waiting for it
//! while it runs) and never runs the tool again; the same id with anything else is refused.
//!
//! Only final outcomes of calls that reached their tool are kept: a call refused before its tool was reached (by a
//! budget, the rate limit, injection or a full concurrency cap), or whose outcome is retryable (a timeout, a
//! 5xx), releases its id, so sending it again may run it; a call still running is waited on, never run twice.
//!
//! A claimed call runs with the tool's timeout, not its caller's deadline: a caller that times out and retries is
//! the case this exists for, so the first run must go on and its outcome be kept. It runs on its caller's task
//! (`Executor::admitted_recorded`), and moves to a task of its own only if the caller goes away or its deadline
//! comes first (`Detachable`): a spawned task and a channel per call cost more than the rest of the record.

use super::{Answered, CallRequest, Detachable, Executor, OwnedCall};
use crate::idempotency::{CallId, Claim, Claimed, Fingerprint, Fingerprinter};
use crate::pipeline::{CallContext, CallError, ErrorKind, Prepared, ToolCall, ToolMessage};
use crate::registry::{CompiledTool, RedisDown};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
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

/// What the call-id record says of a call.
pub(super) enum Once {
    /// Run it, and settle the claim with its outcome; `None`: run it unrecorded (the local record is full of
    /// running calls, or Redis did not answer).
    Run(Option<Claim>),
    /// An earlier call's outcome, or why the call was not run (boxed: the rarer case, and a large one).
    Answered(Box<Answered>),
}

/// When a claimed call, which may run on past its caller's deadline, must start by: before the deadline, a little
/// early, so that a call refused for want of a concurrency slot is answered as such rather than as still running.
pub(super) fn start_by(deadline: Option<Instant>) -> Option<Instant> {
    deadline.map(|until| until - (until.saturating_duration_since(Instant::now()) / 10).min(START_MARGIN))
}

/// Added to the longest a recorded call can take before its claim counts as abandoned.
const LEASE_MARGIN: Duration = Duration::from_secs(5);

const UNRECORDED: &str = "the call-id record in Redis did not answer, and this tool fails closed (limits.when_redis_down): the call was not run";

const LOST: &str = "the gateway running this call stopped; whether it completed is unknown, so it is not run again";

impl Executor {
    /// Claims the call's id in the record (the caller checked that the record is on and the call has an id). A
    /// call sent again gets the first call's outcome, waiting for it while it runs until its own deadline.
    pub(super) async fn claim_once(&self, req: CallRequest<'_>, prepared: &Prepared) -> Once {
        let CallRequest { call, ctx, deadline, .. } = req;
        let key = CallId { tenant: &ctx.tenant, call_id: &call.id };
        let fingerprint = fingerprint(self.once.fingerprinter(), call, ctx, &prepared.tool);
        let lease = self.lease(&prepared.tool);
        let name = &prepared.tool.spec.name;
        // A tool that fails closed when Redis is down is never run unrecorded, and its claim waits for a replica.
        let strict = prepared.tool.spec.limits.when_redis_down == RedisDown::FailClosed;
        loop {
            let claimed = self.once.claim(key, &fingerprint, lease, strict).await;
            return match claimed {
                Claimed::Run(claim) => Once::Run(Some(claim)),
                Claimed::Done(message) => Once::Answered(Box::new(Answered::earlier(ToolMessage {
                    tool_call_id: call.id.clone(),
                    ..*message
                }))),
                Claimed::Running(mut waiter) => match deadline {
                    None => {
                        waiter.changed().await;
                        continue;
                    }
                    Some(until) if tokio::time::timeout_at(until, waiter.changed()).await.is_ok() => continue,
                    Some(_) => Once::Answered(Box::new(Answered::earlier(self.still_running(call, name)))),
                },
                Claimed::Conflict => Once::Answered(Box::new(Answered::now(self.conflict(call, name)))),
                Claimed::Lost => {
                    let lost = self.error(call, name, CallError::OutcomeUnknown(LOST.into()), Vec::new());
                    Once::Answered(Box::new(Answered::now(lost)))
                }
                Claimed::Full => {
                    tracing::debug!(call_id = %call.id, "every recorded call is running: this one runs unrecorded");
                    Once::Run(None)
                }
                Claimed::Unreachable(reason) if strict => {
                    tracing::debug!(call_id = %call.id, %reason, "Redis down: refused (fail closed)");
                    let error = CallError::Unavailable(format!("{UNRECORDED}: {reason}"));
                    Once::Answered(Box::new(Answered::now(self.error(call, name, error, Vec::new()))))
                }
                Claimed::Unreachable(reason) => {
                    tracing::debug!(call_id = %call.id, %reason, "Redis down: the call runs unrecorded");
                    self.telemetry.fail_open(name, "idempotency");
                    Once::Run(None)
                }
            };
        }
    }

    /// `admitted`, then the claim settled with its outcome however the call ends, even if the caller goes away
    /// or its deadline comes first: the run then goes on in a task of its own. The caller waits until its deadline.
    pub(super) async fn admitted_recorded(
        self: &Arc<Self>,
        req: CallRequest<'_>,
        prepared: Prepared,
        claim: Claim,
    ) -> ToolMessage {
        let CallRequest { call, ctx, deadline, mode, door, progress, host, lent, .. } = req;
        let (progress, host) = (progress.cloned(), host.cloned());
        let tool = Arc::clone(&prepared.tool);
        // Owned, so that the run can outlive its caller: shared with the door when it lends them.
        let owned = match lent.filter(|lent| std::ptr::eq(&lent.call, call) && std::ptr::eq(&lent.ctx, ctx)) {
            Some(lent) => Arc::clone(lent),
            None => Arc::new(OwnedCall { call: call.clone(), ctx: ctx.clone() }),
        };
        let (this, start_by) = (Arc::clone(self), start_by(deadline));
        // Built in its box: the run is a large future (kilobytes), and each move of it is a copy. `Box::new` would
        // build it on the stack and copy all of it; written into a box allocated first, only what it holds is.
        let run = Box::write(Box::new_uninit(), async move {
            let (progress, host) = (progress.as_ref(), host.as_ref());
            let OwnedCall { call: owned_call, ctx: owned_ctx } = &*owned;
            let req = CallRequest {
                call: owned_call,
                ctx: owned_ctx,
                deadline: None,
                start_by,
                mode,
                door,
                progress,
                host,
                lent: None,
            };
            let tool = Arc::clone(&prepared.tool);
            let mut admitted = std::pin::pin!(this.admitted(req, prepared));
            let (message, panicked) = match std::future::poll_fn(|cx| unwound(admitted.as_mut(), cx)).await {
                Some(message) => (message, false),
                // It may have reached its tool: at most once means not again, so the claim keeps this outcome.
                None => {
                    let error = CallError::Internal("the call panicked".into());
                    (this.error(owned_call, &tool.spec.name, error, Vec::new()), true)
                }
            };
            this.settle(&claim, &message, panicked).await;
            message
        });
        // The run keeps the call's trace context if it goes on in a task of its own.
        let run: Pin<Box<dyn Future<Output = ToolMessage> + Send>> = Box::into_pin(run);
        // Only at the runtime's end can it not go on: then the claim lapses with its lease, and a retry is told the
        // outcome is unknown.
        let run = Detachable::new(run, opentelemetry::Context::current(), "its claim will lapse");
        match deadline {
            None => run.await,
            Some(until) => match tokio::time::timeout_at(until, run).await {
                Ok(message) => message,
                // Dropping the run moved it to a task of its own.
                Err(_) => self.still_running(call, &tool.spec.name),
            },
        }
    }

    /// Keeps the outcome of a claimed call for its id, or releases the id: a call that never reached its tool,
    /// or whose outcome says to try again, did not happen; one that panicked may have, so it is kept.
    pub(super) async fn settle(&self, claim: &Claim, message: &ToolMessage, panicked: bool) {
        if panicked || kept(message) {
            self.once.finish(claim, message).await;
        } else {
            self.once.release(claim).await;
        }
    }

    /// A running claim older than this was abandoned: the longest the call can take and a margin.
    fn lease(&self, tool: &CompiledTool) -> Duration {
        self.dispatch.longest(tool) + LEASE_MARGIN
    }

    /// The caller's deadline came while the call still runs: a retry with the same id gets its outcome.
    pub(super) fn still_running(&self, call: &ToolCall, name: &str) -> ToolMessage {
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

/// Polls `future` where it lies, `Some` of its output, or `None` if polling it panicked (`futures`' `catch_unwind`
/// would move it, and the run it guards is large).
fn unwound<F: Future>(future: Pin<&mut F>, cx: &mut Context<'_>) -> Poll<Option<F::Output>> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
        Ok(Poll::Pending) => Poll::Pending,
        Ok(Poll::Ready(output)) => Poll::Ready(Some(output)),
        Err(_) => Poll::Ready(None),
    }
}

/// What makes two calls the same call: the tool, the model's text and the caller's context.
fn fingerprint(mut hash: Fingerprinter, call: &ToolCall, ctx: &CallContext, tool: &CompiledTool) -> Fingerprint {
    for text in [&tool.spec.tenant, &tool.spec.name, &call.arguments, &ctx.user_id, &ctx.session_id] {
        hash.part(text.as_bytes());
    }
    for (name, value) in &ctx.values {
        hash.part(name.as_bytes());
        hash.part(value.as_bytes());
    }
    hash.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_run_that_panics_is_told_apart_from_one_that_answers() {
        let mut answers = std::pin::pin!(async {
            tokio::task::yield_now().await;
            7
        });
        assert_eq!(std::future::poll_fn(|cx| unwound(answers.as_mut(), cx)).await, Some(7));
        let mut panics = std::pin::pin!(async {
            tokio::task::yield_now().await;
            panic!("a bug in a backend")
        });
        assert_eq!(std::future::poll_fn(|cx| unwound(panics.as_mut(), cx)).await, None::<()>);
    }
}
