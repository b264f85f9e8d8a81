//! Review in the executor: a call to a tool with `review.required`, or one a policy rule sends to review, is
//! queued for a person, waited on or deferred, and run exactly once when approved or edited; a rejection answers
//! with the reviewer's feedback.

use super::{CallRequest, Executor, ReviewMode};
use crate::pipeline::{self, CallContext, CallError, Checked, ToolCall, ToolMessage, ToolStatus};
use crate::policy::rules::Rule;
use crate::review::{Decision, ReviewError, ReviewKey, ReviewRecord, ReviewRule, ReviewState, Step, unix_ms};
use opentelemetry::context::FutureExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::time::Instant;

/// Numbers the ids given to reviewed calls that came without one.
static UNNAMED_CALLS: AtomicU64 = AtomicU64::new(0);

impl Executor {
    /// A call to a tool that requires review, sent again under the id of the same call already under review: its
    /// state or outcome, without counting it against the session's budgets a second time. `None` when there is no
    /// such call. The caller checks `review.required`, so that other calls never make this future.
    pub(super) async fn resume_review(
        self: &Arc<Self>,
        req: CallRequest<'_>,
        checked: &Checked,
    ) -> Option<ToolMessage> {
        if req.call.id.is_empty() {
            return None;
        }
        let record = review_record(req.call, req.ctx, checked);
        let existing = self.reviews.get(&record.key).await?;
        if !existing.same_call(&record) {
            return None;
        }
        Some(self.drive(req, existing).await)
    }

    /// Queues a new call for review (sent there by `rule`, or by the tool's `review.required`), then waits for or
    /// defers the decision.
    pub(super) async fn submit_review(
        self: &Arc<Self>,
        req: CallRequest<'_>,
        checked: Checked,
        rule: Option<Arc<Rule>>,
    ) -> ToolMessage {
        let call = req.call;
        let mut record = review_record(call, req.ctx, &checked);
        record.rule = rule.map(|rule| ReviewRule { name: rule.name.to_string(), message: rule.message.to_string() });
        if req.mode == ReviewMode::Wait {
            let left = self.wait_until(req.deadline).saturating_duration_since(Instant::now());
            record.waits_until_ms = Some(unix_ms().saturating_add(u64::try_from(left.as_millis()).unwrap_or(u64::MAX)));
        }
        let name = checked.tool.spec.name.as_str();
        match self.reviews.submit(record.clone()).await {
            Ok(_) => self.drive(req, record).await,
            Err(ReviewError::Conflict) => self.error(
                call,
                name,
                CallError::Unavailable(format!("call id {:?} is under review for a different call", call.id)),
                checked.repairs,
            ),
            Err(ReviewError::Full { max }) => self.error(
                call,
                name,
                CallError::Unavailable(format!("{max} calls already wait for review")),
                checked.repairs,
            ),
            Err(ReviewError::Unavailable(reason)) => {
                self.error(call, name, CallError::Unavailable(format!("the review queue: {reason}")), checked.repairs)
            }
            Err(err) => self.error(call, name, CallError::Internal(err.to_string()), checked.repairs),
        }
    }

    /// When a waiting caller is told its call is still pending: at its own deadline, else after `review_wait`.
    fn wait_until(&self, deadline: Option<Instant>) -> Instant {
        deadline.unwrap_or_else(|| Instant::now() + self.settings.review_wait)
    }

    /// Takes the call as far as its decision allows, in a task of its own: once claimed, a call must run and
    /// its outcome be stored even if the caller goes away, or it would stay claimed and never answer.
    async fn drive(self: &Arc<Self>, req: CallRequest<'_>, record: ReviewRecord) -> ToolMessage {
        let CallRequest { call, deadline, mode, .. } = req;
        let (this, owned_call) = (Arc::clone(self), call.clone());
        // The task keeps the call's trace context, so a decided call's backend span joins its trace.
        let run = async move { this.drive_detached(&owned_call, &record, deadline, mode).await };
        let task = tokio::spawn(run.with_current_context());
        match task.await {
            Ok(message) => message,
            Err(err) => {
                self.error(call, &call.name, CallError::Internal(format!("review task failed: {err}")), Vec::new())
            }
        }
    }

    async fn drive_detached(
        &self,
        call: &ToolCall,
        record: &ReviewRecord,
        deadline: Option<Instant>,
        mode: ReviewMode,
    ) -> ToolMessage {
        let key = &record.key;
        let step = match mode {
            ReviewMode::Defer => self.reviews.claim(key).await,
            ReviewMode::Wait => self.reviews.wait(key, Some(self.wait_until(deadline))).await,
        };
        let (message, finished) = match step {
            Ok(Some(Step::Wait)) => return pending_message(call, record),
            Ok(Some(Step::Done(message))) => return message,
            Ok(Some(Step::Run(claimed))) => (self.run_decided(call, &claimed, deadline).await, true),
            Ok(Some(Step::Lost(_))) => {
                let lost =
                    "the gateway stopped while this call ran; whether it completed is unknown, so it is not run again";
                (self.error(call, &record.tool, CallError::OutcomeUnknown(lost.into()), record.repairs.clone()), true)
            }
            Ok(None) => {
                (self.error(call, &record.tool, CallError::Internal("the review vanished".into()), Vec::new()), false)
            }
            Err(err) => (self.error(call, &record.tool, CallError::Internal(err.to_string()), Vec::new()), false),
        };
        if finished && let Err(err) = self.reviews.finish(key, message.clone()).await {
            tracing::error!(call_id = %key.call_id, tenant = %key.tenant, error = %err, "review outcome not stored");
        }
        message
    }

    /// Runs a call a reviewer approved or edited, with the context it arrived with; a rejection answers with the
    /// reviewer's feedback. The arguments are checked again: the tool may have changed while the call waited.
    async fn run_decided(&self, call: &ToolCall, record: &ReviewRecord, deadline: Option<Instant>) -> ToolMessage {
        let fail = |error| self.error(call, &record.tool, error, record.repairs.clone());
        let ReviewState::Running(decision) = &record.state else {
            return fail(CallError::Internal(format!("a claimed review is {:?}", record.state)));
        };
        let arguments = match decision {
            Decision::Approve => &record.arguments,
            Decision::Edit { arguments } => arguments,
            Decision::Reject { feedback } => {
                let mut message = fail(CallError::Rejected { feedback: feedback.clone() });
                message.effective_arguments = record.arguments.clone();
                return message;
            }
        };
        let catalog = self.registry.catalog();
        let Some(tool) = catalog.get(&record.tool_tenant, &record.tool) else {
            return fail(CallError::Unavailable("the tool was removed while the call waited for review".into()));
        };
        let checked = match pipeline::check_edit(tool, arguments, self.settings.prepare.limits) {
            Ok(checked) => Checked { repairs: record.repairs.clone(), ..checked },
            Err(error) => return fail(error),
        };
        let ctx = CallContext {
            tenant: record.key.tenant.clone(),
            user_id: record.user_id.clone(),
            session_id: record.session_id.clone(),
            values: record.values.clone(),
        };
        // Decided already: how the caller waits for a decision no longer matters.
        let req = CallRequest::new(call, &ctx, deadline, ReviewMode::Wait);
        match pipeline::complete(checked, &ctx) {
            Ok(prepared) => self.dispatch.run(req, prepared).await,
            Err(rejected) => fail(rejected.error),
        }
    }
}

/// What the queue keeps of a call: enough to run it after a restart, and no injected value.
fn review_record(call: &ToolCall, ctx: &CallContext, checked: &Checked) -> ReviewRecord {
    let call_id = match call.id.as_str() {
        "" => format!("unnamed-{}-{}", unix_ms(), UNNAMED_CALLS.fetch_add(1, Ordering::Relaxed)),
        id => id.to_owned(),
    };
    ReviewRecord {
        key: ReviewKey { tenant: ctx.tenant.clone(), call_id },
        session_id: ctx.session_id.clone(),
        user_id: ctx.user_id.clone(),
        values: ctx.values.clone(),
        tool: checked.tool.spec.name.clone(),
        tool_tenant: checked.tool.spec.tenant.clone(),
        arguments: checked.text.clone(),
        original_arguments: call.arguments.clone(),
        repairs: checked.repairs.clone(),
        created_ms: unix_ms(),
        decided_ms: None,
        decided_by: None,
        rule: None,
        waits_until_ms: None,
        state: ReviewState::Pending,
    }
}

fn pending_message(call: &ToolCall, record: &ReviewRecord) -> ToolMessage {
    let shown_id = if call.id.is_empty() { format!(" (review id {})", record.key.call_id) } else { String::new() };
    let why = record.rule.as_ref().map(|rule| format!(" {}", rule.message)).unwrap_or_default();
    ToolMessage {
        tool_call_id: call.id.clone(),
        name: record.tool.clone(),
        status: ToolStatus::PendingReview,
        content: format!("The call to {} is waiting for a person to approve it{shown_id}.{why}", record.tool),
        structured: None,
        error: None,
        repairs: record.repairs.clone(),
        effective_arguments: record.arguments.clone(),
        attempts: 0,
        duration_us: 0,
        parts: Vec::new(),
        blocks: Vec::new(),
    }
}
