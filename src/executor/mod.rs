//! Runs calls end to end, as one sequence of stages written out in `Executor::run` and `Executor::run_checked`:
//! check, resume review, complete, rules, then review, or the call-id record, admission and dispatch, and the
//! answer. Each stage is a function or a small type of its own file, and returns to the sequence.

mod admission;
mod check;
mod detach;
mod dispatch;
mod offload;
mod once;
mod review;
mod rules;
mod split;
mod text;

use crate::backend::{Backends, CallHost, ProgressSink};
use crate::idempotency::Idempotency;
use crate::pipeline::{self, CallContext, CallError, Check, Checked, Messages, PipelineSettings, Prepared, Rejected};
use crate::pipeline::{Repair, ToolCall, ToolMessage};
use crate::policy::rules::{GatewayRules, Rule, Verdict};
use crate::policy::{BudgetLimits, Policy};
use crate::registry::{CompiledTool, Registry};
use crate::review::ReviewQueue;
use crate::telemetry::{CallSpan, Door, Telemetry, in_context};
use admission::{Admission, Admit};
pub use detach::Detachable;
use dispatch::Dispatcher;
use futures::StreamExt;
use once::Once;
use opentelemetry::context::FutureExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// What the executor needs to know beyond the registry.
#[derive(Debug, Clone)]
pub struct ExecSettings {
    pub prepare: PipelineSettings,
    /// Used when a tool sets no `limits.timeout_ms`.
    pub default_timeout: Duration,
    /// How many calls of one batch run at once.
    pub batch_concurrency: usize,
    pub messages: Messages,
    /// The gateway's session budgets; a tool's own `budget` wins where it sets one.
    pub budgets: BudgetLimits,
    /// How long a waiting call with no deadline of its own waits for a review decision.
    pub review_wait: Duration,
    /// A session unseen this long loses its budgets (in cluster mode, its Redis key expires).
    pub session_idle_ttl: Duration,
    /// `[[policy]]`: the rules that run before each tool's own.
    pub rules: Arc<GatewayRules>,
}

/// What `Execute` does with a call that needs human review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReviewMode {
    /// Wait for the decision until the deadline, then answer PENDING_REVIEW.
    #[default]
    Wait,
    /// Answer PENDING_REVIEW at once; the same call id, executed again, gets the outcome.
    Defer,
}

/// One call as the executor runs it: what the model sent, who sent it, and the caller's terms.
#[derive(Debug, Clone, Copy)]
pub struct CallRequest<'a> {
    pub call: &'a ToolCall,
    pub ctx: &'a CallContext,
    /// The caller's deadline: the answer is due by then.
    pub deadline: Option<Instant>,
    /// When the tool must have started (got its concurrency slot) by, and a call that waited for its slot be
    /// expected to finish by: the deadline, or, for a recorded call that runs on past its caller's deadline, a
    /// little before it.
    pub start_by: Option<Instant>,
    pub mode: ReviewMode,
    /// Which door the call came in through, for its span.
    pub door: Door,
    /// Where the tool's progress goes, when the caller asked to hear it.
    pub progress: Option<&'a Arc<dyn ProgressSink>>,
    /// The host that made the call, when its door can pass the backend's requests and log messages on.
    pub host: Option<&'a Arc<dyn CallHost>>,
    /// The call and its context in one shared piece, when the door holds them so: a recorded call's run, which
    /// may outlive its caller, then shares them rather than copying both. Used only while `call` and `ctx` are
    /// the ones in it.
    pub lent: Option<&'a Arc<OwnedCall>>,
}

impl<'a> CallRequest<'a> {
    pub fn new(call: &'a ToolCall, ctx: &'a CallContext, deadline: Option<Instant>, mode: ReviewMode) -> Self {
        Self { call, ctx, deadline, start_by: deadline, mode, door: Door::Grpc, progress: None, host: None, lent: None }
    }

    /// The call and context of `lent`, which a recorded run shares.
    pub fn lent(lent: &'a Arc<OwnedCall>, deadline: Option<Instant>, mode: ReviewMode) -> Self {
        Self { lent: Some(lent), ..Self::new(&lent.call, &lent.ctx, deadline, mode) }
    }
}

/// A call and its context, owned together.
#[derive(Debug, Clone)]
pub struct OwnedCall {
    pub call: ToolCall,
    pub ctx: CallContext,
}

pub struct Executor {
    registry: Arc<Registry>,
    settings: ExecSettings,
    reviews: Arc<ReviewQueue>,
    telemetry: Arc<Telemetry>,
    /// Session budgets and rate limits.
    admission: Admission,
    /// The backends, under each tool's concurrency cap, timeout and retries.
    dispatch: Dispatcher,
    /// Calls by id, so that a call sent again is not run twice.
    once: Idempotency,
    /// Where calls with large arguments are checked, off the async workers.
    cpu: offload::CpuPool,
    /// Dropped with the executor: `app` waits for that before `run` returns.
    _alive: tokio::sync::mpsc::Sender<()>,
}

/// A call's answer, and whether it is an earlier call's outcome (the call-id record, or a reviewed call asked for
/// again), which telemetry counts apart.
struct Answered {
    message: ToolMessage,
    earlier: bool,
}

impl Answered {
    fn now(message: ToolMessage) -> Self {
        Self { message, earlier: false }
    }

    fn earlier(message: ToolMessage) -> Self {
        Self { message, earlier: true }
    }
}

impl Executor {
    pub fn new(
        registry: Arc<Registry>,
        backends: Backends,
        settings: ExecSettings,
        policy: Arc<Policy>,
        reviews: Arc<ReviewQueue>,
        telemetry: Arc<Telemetry>,
        alive: tokio::sync::mpsc::Sender<()>,
    ) -> Self {
        let admission = Admission::new(Arc::clone(&policy), &settings, Arc::clone(&telemetry));
        let dispatch = Dispatcher::new(backends, policy, Arc::clone(&telemetry), &settings);
        Self {
            registry,
            settings,
            reviews,
            telemetry,
            admission,
            dispatch,
            once: Idempotency::off(),
            cpu: offload::CpuPool::sized_for_machine(),
            _alive: alive,
        }
    }

    /// Records calls by id in `once` (off until set).
    pub fn with_idempotency(mut self, once: Idempotency) -> Self {
        self.once = once;
        self
    }

    /// Runs one call; always answers with exactly one message. The call's span is a child of the current
    /// OpenTelemetry context.
    pub async fn execute(self: &Arc<Self>, req: CallRequest<'_>) -> ToolMessage {
        let started = Instant::now();
        let span = self.telemetry.start_call(req.call, req.ctx, req.door);
        let Answered { mut message, earlier } = in_context(span.context(), std::pin::pin!(self.run(req, &span))).await;
        message.duration_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.telemetry.finish(span, req.ctx, &message, earlier);
        message
    }

    /// The call's stages up to the decision to run it: `execute` without its telemetry, naming the tool on `span`
    /// once it resolves.
    async fn run(self: &Arc<Self>, req: CallRequest<'_>, span: &CallSpan<'_>) -> Answered {
        // 1. Check: resolve, parse, strip, validate and repair (the pure pipeline), on the CPU pool when costly.
        let started = Instant::now();
        let checked = check::check(&self.registry, &self.cpu, &self.settings.prepare, req).await;
        span.checked(started.elapsed());
        let checked = match checked {
            Ok(Check::One(checked)) => checked,
            Ok(Check::Split(split)) => return Answered::now(Box::pin(self.run_split(req, split, span)).await),
            Err(Rejected { tool: None, repairs, error }) => {
                return Answered::now(self.error(req.call, &req.call.name, error, repairs));
            }
            Err(Rejected { tool: Some(tool), repairs, error }) => {
                span.resolved(&tool);
                return Answered::now(self.refuse(req, &tool, error, repairs).await);
            }
        };
        span.resolved(&checked.tool);
        // 2. Resume review: the same reviewed call sent again gets its state or outcome, counted once. Review
        // paths are boxed, and taken only for tools whose calls may go to review: inline, they would make every
        // call's future larger.
        let rules = rules::for_tool(&self.settings.rules, &checked.tool);
        let may_review = checked.tool.spec.review.required || rules.iter().any(|rule| rule.may_review());
        if may_review && let Some(message) = Box::pin(self.resume_review(req, &checked)).await {
            return Answered::earlier(message);
        }
        self.run_checked(req, checked, &rules, may_review, span).await
    }

    /// The stages of a checked call, or of one part of a split call: complete, rules, then review, or the
    /// call-id record, admission, dispatch and the record of its outcome.
    async fn run_checked(
        self: &Arc<Self>,
        req: CallRequest<'_>,
        checked: Checked,
        rules: &[Arc<Rule>],
        may_review: bool,
        span: &CallSpan<'_>,
    ) -> Answered {
        let tool = Arc::clone(&checked.tool);
        // A reviewed call is injected again once decided; injecting it now too means a call that cannot run is
        // refused before a person spends time on it.
        let for_review = may_review.then(|| checked.clone());
        // 3. Complete: inject what the model must not set.
        let prepared = match pipeline::complete(checked, req.ctx) {
            Ok(prepared) => prepared,
            Err(rejected) => return Answered::now(self.refuse(req, &tool, rejected.error, rejected.repairs).await),
        };
        // 4. Rules: the policy rules, on the arguments that would run.
        let verdict = match rules {
            [] => Verdict::Pass,
            rules => match rules::judge(&self.cpu, rules, &prepared, req).await {
                Ok(verdict) => verdict,
                Err(error) => return Answered::now(self.refuse(req, &tool, error, prepared.repairs).await),
            },
        };
        // 5. Review, when a rule or the tool asks for it: admitted, then queued for a person to approve, edit or
        // reject; the queue keeps its own record of the call.
        let review_rule = match verdict {
            Verdict::Deny { rule, error } => {
                span.ruled(&rule.name);
                return Answered::now(self.refuse(req, &tool, denial(&rule, error), prepared.repairs).await);
            }
            Verdict::Review { rule, .. } => {
                span.ruled(&rule.name);
                Some(rule)
            }
            Verdict::Pass => None,
        };
        if review_rule.is_some() || tool.spec.review.required {
            let checked = for_review.expect("a call that may go to review keeps its checked arguments");
            return Answered::now(Box::pin(self.reviewed(req, checked, &prepared.repairs, review_rule)).await);
        }
        // 6. Once: a call id already recorded answers with its outcome, waiting for it while it runs.
        let claim = match self.once.enabled() && !req.call.id.is_empty() {
            false => None,
            true => match self.claim_once(req, &prepared).await {
                Once::Run(claim) => claim,
                Once::Answered(answered) => return *answered,
            },
        };
        // 7. Admit, dispatch, and record how it ended; for a claimed call id, then settle the claim, in a task of
        // its own if the caller goes away first.
        match claim {
            None => Answered::now(self.admitted(req, prepared).await),
            Some(claim) => Answered::now(self.admitted_recorded(req, prepared, claim).await),
        }
    }

    /// Admission, dispatch and the record of how the call ended: the stages of a call that runs.
    pub(super) async fn admitted(&self, req: CallRequest<'_>, prepared: Prepared) -> ToolMessage {
        let tool = Arc::clone(&prepared.tool);
        let ticket = match self.admission.admit(req.ctx, &tool, Admit::WithRate).await {
            Ok(ticket) => ticket,
            Err(error) => return self.unadmitted(req.call, &tool, error, &prepared.repairs),
        };
        let message = self.dispatch.run(req, prepared).await;
        self.admission.record(req.ctx, &tool, ticket, &message).await;
        message
    }

    /// A call to `tool` refused before it could run: counted against the session's budgets, not the rate limit.
    async fn refuse(
        &self,
        req: CallRequest<'_>,
        tool: &CompiledTool,
        error: CallError,
        repairs: Vec<Repair>,
    ) -> ToolMessage {
        let ticket = match self.admission.admit(req.ctx, tool, Admit::BudgetsOnly).await {
            Ok(ticket) => ticket,
            Err(refused) => return self.unadmitted(req.call, tool, refused, &[]),
        };
        let message = self.error(req.call, &tool.spec.name, error, repairs);
        self.admission.record(req.ctx, tool, ticket, &message).await;
        message
    }

    /// A call for review (sent there by `rule`, or by the tool's `review.required`): admitted, then queued; its
    /// outcome is recorded once it has one.
    async fn reviewed(
        self: &Arc<Self>,
        req: CallRequest<'_>,
        checked: Checked,
        repairs: &[Repair],
        rule: Option<Arc<Rule>>,
    ) -> ToolMessage {
        let tool = Arc::clone(&checked.tool);
        let ticket = match self.admission.admit(req.ctx, &tool, Admit::WithRate).await {
            Ok(ticket) => ticket,
            Err(error) => return self.unadmitted(req.call, &tool, error, repairs),
        };
        let message = self.submit_review(req, checked, rule).await;
        self.admission.record(req.ctx, &tool, ticket, &message).await;
        message
    }

    /// A call admission refused: a refusal by the rate limit reports the call's repairs, a spent budget does not.
    fn unadmitted(&self, call: &ToolCall, tool: &CompiledTool, error: CallError, repairs: &[Repair]) -> ToolMessage {
        let repairs = if matches!(error, CallError::RateLimited { .. }) { repairs.to_vec() } else { Vec::new() };
        self.error(call, &tool.spec.name, error, repairs)
    }

    /// Runs the calls of one AI message concurrently, up to the configured cap, answering in call order.
    pub async fn execute_batch(
        self: &Arc<Self>,
        calls: &[ToolCall],
        ctx: &CallContext,
        deadline: Option<Instant>,
        mode: ReviewMode,
    ) -> Vec<ToolMessage> {
        let batch = self.telemetry.batch(calls.len());
        let runs: Vec<_> = calls.iter().map(|call| self.execute(CallRequest::new(call, ctx, deadline, mode))).collect();
        let messages = futures::stream::iter(runs)
            .buffered(self.settings.batch_concurrency.max(1))
            .collect()
            .with_context(batch.clone())
            .await;
        self.telemetry.end(&batch, None);
        messages
    }

    fn error(&self, call: &ToolCall, name: &str, error: CallError, repairs: Vec<Repair>) -> ToolMessage {
        pipeline::error_message(call, name, error, repairs, &self.settings.messages)
    }
}

/// The error of a call a rule denied: the rule's message for the model; the rule, and why it could not be
/// evaluated if it could not, for the operator.
fn denial(rule: &Rule, error: Option<String>) -> CallError {
    CallError::PolicyDenied {
        rule: rule.name.to_string(),
        message: rule.message.to_string(),
        model_fixable: rule.model_fixable,
        error,
    }
}

/// Whole milliseconds, saturating.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
