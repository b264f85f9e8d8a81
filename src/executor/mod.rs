//! Runs calls end to end: the pure pipeline, then policy (session budgets, rate limits, human review,
//! concurrency), dispatch with timeouts and retries, and the answer.

mod admission;
mod dispatch;
pub mod idempotency;
mod offload;
mod review;
mod rules;
mod split;

use crate::backend::Backends;
use crate::pipeline::Rejected;
use crate::pipeline::Repair;
use crate::pipeline::{self, CallContext, CallError, Check, Checked, ErrorKind, Messages, PrepareOptions, Prepared};
use crate::pipeline::{ToolCall, ToolMessage, ToolStatus};
use crate::policy::rules::{GatewayRules, Rule, Verdict};
use crate::policy::{BudgetLimits, Policy};
use crate::registry::{CompiledTool, Registry};
use crate::review::ReviewQueue;
use crate::telemetry::{CallSpan, Door, Telemetry};
use futures::StreamExt;
use opentelemetry::context::FutureExt;
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
}

impl<'a> CallRequest<'a> {
    pub fn new(call: &'a ToolCall, ctx: &'a CallContext, deadline: Option<Instant>, mode: ReviewMode) -> Self {
        Self { call, ctx, deadline, start_by: deadline, mode, door: Door::Grpc }
    }
}

pub struct Executor {
    registry: Arc<Registry>,
    backends: Backends,
    settings: ExecSettings,
    policy: Arc<Policy>,
    reviews: Arc<ReviewQueue>,
    telemetry: Arc<Telemetry>,
    /// Calls by id, so that a call sent again is not run twice.
    once: idempotency::Idempotency,
    /// Where calls with large arguments are checked, off the async workers.
    cpu: offload::CpuPool,
    /// Dropped with the executor: the server waits for that before it returns.
    _alive: tokio::sync::mpsc::Sender<()>,
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
        Self {
            registry,
            backends,
            settings,
            policy,
            reviews,
            telemetry,
            once: idempotency::Idempotency::off(),
            cpu: offload::CpuPool::sized_for_machine(),
            _alive: alive,
        }
    }

    /// Records calls by id in `once` (off until set).
    pub fn with_idempotency(mut self, once: idempotency::Idempotency) -> Self {
        self.once = once;
        self
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The review queue, for a door that takes a decision from the caller's own user (MCP elicitation).
    pub fn reviews(&self) -> &Arc<ReviewQueue> {
        &self.reviews
    }

    /// The backends, for a page that shows their health.
    pub fn backends(&self) -> &Backends {
        &self.backends
    }

    /// Runs one call; always answers with exactly one message. The call's span is a child of the current
    /// OpenTelemetry context.
    pub async fn execute(self: &Arc<Self>, req: CallRequest<'_>) -> ToolMessage {
        let started = Instant::now();
        let span = self.telemetry.start_call(req.call, req.ctx, req.door);
        let (mut message, resumed) = self.run(req, &span).with_context(span.context().clone()).await;
        message.duration_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.telemetry.finish(span, req.ctx, &message, resumed);
        message
    }

    /// `execute` without its telemetry, naming the tool on `span` once it resolves. Also answers whether the
    /// call was a reviewed call asked for again.
    async fn run(self: &Arc<Self>, req: CallRequest<'_>, span: &CallSpan<'_>) -> (ToolMessage, bool) {
        let (call, started, catalog) = (req.call, Instant::now(), self.registry.catalog());
        // A tool with a backtracking `pattern` may spend the call's whole budget of pattern work: off the workers.
        let heavy = call.arguments.len() >= offload::HEAVY_ARGUMENT_BYTES
            || pipeline::exact_tool(&catalog, &req.ctx.tenant, &call.name).is_some_and(|tool| tool.backtracks);
        let checked = if heavy {
            Box::pin(self.check_offloaded(req)).await
        } else {
            pipeline::check_call(&catalog, call, &req.ctx.tenant, &self.settings.prepare)
        };
        span.checked(started.elapsed());
        match checked {
            Err(Rejected { tool: None, repairs, error }) => (self.error(call, &call.name, error, repairs), false),
            Err(Rejected { tool: Some(tool), repairs, error }) => {
                span.resolved(&tool);
                let name = tool.spec.name.clone();
                let refused = move || async move { self.error(call, &name, error, repairs) };
                (self.counted(req, &tool, false, Vec::new(), refused).await, false)
            }
            Ok(Check::Split(split)) => Box::pin(self.run_split(req, split, span)).await,
            Ok(Check::One(checked)) => {
                let tool = Arc::clone(&checked.tool);
                span.resolved(&tool);
                let rules = self.rules_for(&tool);
                let may_review = tool.spec.review.required || rules.iter().any(|rule| rule.may_review());
                // Review paths are boxed, and made only for tools whose calls may go to review: inline, they would
                // make every call's future larger.
                if may_review && let Some(message) = Box::pin(self.resume_review(req, &checked)).await {
                    return (message, true);
                }
                self.judged(req, checked, &rules, may_review, span).await
            }
        }
    }

    /// `pipeline::check_call` on the CPU pool: it stops before it starts if the caller has gone or its deadline has
    /// passed, and a pool with a full queue refuses the call as UNAVAILABLE, retryable.
    async fn check_offloaded(&self, req: CallRequest<'_>) -> Result<Check, Rejected> {
        let started = Instant::now();
        let (catalog, options) = (self.registry.catalog(), self.settings.prepare);
        let (owned, tenant) = (req.call.clone(), req.ctx.tenant.clone());
        let error = match self
            .cpu
            .run(req.deadline, move || pipeline::check_call(&catalog, &owned, &tenant, &options))
            .await
        {
            Ok(checked) => return checked,
            Err(offload::Refused::Busy { queued }) => CallError::Unavailable(format!(
                "the gateway is checking {queued} other calls with large arguments or costly patterns; try again shortly"
            )),
            Err(offload::Refused::Expired) => {
                CallError::Timeout { after_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX) }
            }
        };
        Err(Rejected { tool: None, repairs: Vec::new(), error })
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

    /// The policy after the pipeline: injection, then the policy rules on the arguments that would run, then
    /// budgets and the rate limit (`counted`), then review or dispatch (under the concurrency cap). Also answers
    /// whether the call was an earlier call's outcome (the call-id record).
    async fn judged(
        self: &Arc<Self>,
        req: CallRequest<'_>,
        checked: Checked,
        rules: &[Arc<Rule>],
        may_review: bool,
        span: &CallSpan<'_>,
    ) -> (ToolMessage, bool) {
        let (call, ctx) = (req.call, req.ctx);
        let tool = Arc::clone(&checked.tool);
        let name = tool.spec.name.as_str();
        // A reviewed call is injected again once decided; injecting it now too means a call that cannot run
        // is refused before a person spends time on it.
        let for_review = may_review.then(|| checked.clone());
        let refused = |error: CallError, repairs: Vec<Repair>| {
            self.counted(req, &tool, false, Vec::new(), move || async move { self.error(call, name, error, repairs) })
        };
        let prepared = match pipeline::complete(checked, ctx) {
            Ok(prepared) => prepared,
            Err(rejected) => return (refused(rejected.error, rejected.repairs).await, false),
        };
        let verdict = match rules {
            [] => Verdict::Pass,
            rules => match self.judge(rules, &prepared, req).await {
                Ok(verdict) => verdict,
                Err(error) => return (refused(error, prepared.repairs).await, false),
            },
        };
        let reviewed = |rule: Option<Arc<Rule>>| {
            let checked = for_review.expect("a call that may go to review keeps its checked arguments");
            let repairs = prepared.repairs.clone();
            self.counted(req, &tool, true, repairs, move || Box::pin(self.submit_review(req, checked, rule)))
        };
        match verdict {
            Verdict::Deny { rule, error } => {
                span.ruled(&rule.name);
                (refused(denial(&rule, error), prepared.repairs).await, false)
            }
            Verdict::Review { rule, .. } => {
                span.ruled(&rule.name);
                (reviewed(Some(rule)).await, false)
            }
            Verdict::Pass if tool.spec.review.required => (reviewed(None).await, false),
            Verdict::Pass => self.admit_once(req, prepared).await,
        }
    }

    /// Budgets and the rate limit, then dispatch.
    async fn admit(self: &Arc<Self>, req: CallRequest<'_>, prepared: Prepared) -> ToolMessage {
        let tool = Arc::clone(&prepared.tool);
        let repairs = prepared.repairs.clone();
        self.counted(req, &tool, true, repairs, move || self.dispatch(req, prepared)).await
    }

    /// Admits the call against the session's budgets (and, `with_rate`, the rate limit) before `run`, then
    /// records whether it failed. A refusal by the rate limit answers with `repairs`. `run` makes its future only
    /// once admitted, so that the future is not held twice, by the caller and here, beside the admission's.
    async fn counted<F: Future<Output = ToolMessage>>(
        &self,
        CallRequest { call, ctx, .. }: CallRequest<'_>,
        tool: &CompiledTool,
        with_rate: bool,
        repairs: Vec<Repair>,
        run: impl FnOnce() -> F,
    ) -> ToolMessage {
        let name = tool.spec.name.as_str();
        let ticket = match self.admit_call(ctx, tool, with_rate).await {
            Ok(ticket) => ticket,
            Err(error @ CallError::RateLimited { .. }) => return self.error(call, name, error, repairs),
            Err(error) => return self.error(call, name, error, Vec::new()),
        };
        let message = run().await;
        if message.status != ToolStatus::PendingReview {
            self.record_outcome(ctx, tool, ticket, counts_as_failure(&message)).await;
        }
        message
    }

    fn error(&self, call: &ToolCall, name: &str, error: CallError, repairs: Vec<Repair>) -> ToolMessage {
        pipeline::error_message(call, name, error, repairs, &self.settings.messages)
    }
}

/// A failure of the tool or of the model's call. Refusals by policy or by a reviewer are not the tool failing.
fn counts_as_failure(message: &ToolMessage) -> bool {
    message.error.as_ref().is_some_and(|e| {
        !matches!(
            e.kind,
            ErrorKind::RateLimited | ErrorKind::BudgetExceeded | ErrorKind::Rejected | ErrorKind::PolicyDenied
        )
    })
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
