//! Admission: the session budgets and the rate limit a call must pass, on this gateway, or in cluster mode on
//! Redis in one round trip (none when neither a session budget nor a cluster-wide limit applies).

use super::ExecSettings;
use crate::pipeline::{CallContext, CallError, ErrorKind, ToolMessage, ToolStatus};
use crate::policy::shared::{Admitted, BudgetAsk, RateAsk};
use crate::policy::{BudgetExceeded, BudgetLimits, Policy, PolicyError, SessionKey, ToolKey};
use crate::registry::{CompiledTool, LimitKey, RateScope, RedisDown};
use crate::telemetry::Telemetry;
use std::sync::Arc;
use std::time::Duration;

/// The stage: the gateway's policy state, its default budgets and how long an idle session keeps them.
pub(super) struct Admission {
    policy: Arc<Policy>,
    budgets: BudgetLimits,
    session_idle_ttl: Duration,
    telemetry: Arc<Telemetry>,
}

/// What admission counts: a call refused before it could run counts against the session's budgets, not the rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Admit {
    WithRate,
    BudgetsOnly,
}

/// What an admitted call must report when it ends.
pub(super) struct Ticket {
    /// The budget was counted on Redis, with this many failures of the tool in a row before the call.
    shared_failures: Option<u32>,
}

/// How long a call refused because Redis is down (fail closed) is told to wait.
const RETRY_WHILE_DOWN_MS: u64 = 1000;

impl Admission {
    pub(super) fn new(policy: Arc<Policy>, settings: &ExecSettings, telemetry: Arc<Telemetry>) -> Self {
        Self { policy, budgets: settings.budgets, session_idle_ttl: settings.session_idle_ttl, telemetry }
    }

    /// Checks and counts the session's budgets and, with `Admit::WithRate`, the tool's rate limit.
    pub(super) async fn admit(
        &self,
        ctx: &CallContext,
        tool: &CompiledTool,
        admit: Admit,
    ) -> Result<Ticket, CallError> {
        let session = SessionKey::new(&ctx.tenant, &ctx.session_id);
        let limits = self.budget_limits(tool);
        let name = tool.spec.name.as_str();
        let rule = tool.rate.as_ref().filter(|_| admit == Admit::WithRate);
        let Some(shared) = &self.policy.shared else {
            self.policy.budgets.admit(&session, name, &limits).map_err(|e| budget_error(e, name))?;
            return self.local_rate(tool, ctx, rule).map(|()| Ticket { shared_failures: None });
        };
        let cluster_rule = rule.filter(|_| tool.spec.limits.scope == RateScope::Cluster);
        if cluster_rule.is_none() {
            self.local_rate(tool, ctx, rule)?;
        }
        let budgeted = !session.session_id.is_empty() && limits != BudgetLimits::default();
        let budget =
            budgeted.then_some(BudgetAsk { session: &session, tool: name, limits, idle_ttl: self.session_idle_ttl });
        let tool_key = ToolKey::new(&tool.spec.tenant, name);
        let rate = cluster_rule.map(|rule| RateAsk { tool: &tool_key, rule, key: limit_key(tool, ctx) });
        match shared.admit(budget, rate).await {
            Ok(Ok(Admitted { failures_before })) => Ok(Ticket { shared_failures: budgeted.then_some(failures_before) }),
            Ok(Err(PolicyError::Budget(exceeded))) => Err(budget_error(exceeded, name)),
            Ok(Err(PolicyError::RateLimited(limited))) => Err(rate_error(limited.retry_after)),
            Ok(Err(PolicyError::Saturated(_))) => Ok(Ticket { shared_failures: None }),
            Err(err) => {
                if cluster_rule.is_some() && tool.spec.limits.when_redis_down == RedisDown::FailClosed {
                    tracing::debug!(tool = name, error = %err, "Redis down: refused (fail closed)");
                    return Err(CallError::RateLimited { retry_after_ms: RETRY_WHILE_DOWN_MS });
                }
                for (asked, check) in [(cluster_rule.is_some(), "rate"), (budgeted, "budget")] {
                    if asked {
                        self.telemetry.fail_open(name, check);
                    }
                }
                Ok(Ticket { shared_failures: None })
            }
        }
    }

    /// Records how an admitted call ended, for the failures-in-a-row budget; a call still waiting for review has
    /// not ended. On Redis only when it changes something: after a failure, or a success ending a run of failures.
    pub(super) async fn record(&self, ctx: &CallContext, tool: &CompiledTool, ticket: Ticket, message: &ToolMessage) {
        if message.status == ToolStatus::PendingReview {
            return;
        }
        let failed = counts_as_failure(message);
        let session = SessionKey::new(&ctx.tenant, &ctx.session_id);
        let name = tool.spec.name.as_str();
        match (&self.policy.shared, ticket.shared_failures) {
            (None, _) => self.policy.budgets.record(&session, name, failed),
            (Some(shared), Some(before)) if failed || before > 0 => {
                if let Err(err) = shared.record(&session, name, failed, self.session_idle_ttl).await {
                    tracing::warn!(tool = name, error = %err, "the call's outcome was not counted in its session budget");
                }
            }
            (Some(_), _) => {}
        }
    }

    /// The session budgets of a call of `tool`: the tool's own where it sets them, else the gateway's.
    fn budget_limits(&self, tool: &CompiledTool) -> BudgetLimits {
        let own = tool.spec.budget;
        let nonzero = |n: u32| (n > 0).then_some(n);
        BudgetLimits {
            max_calls: self.budgets.max_calls,
            max_tool_calls: nonzero(own.max_calls).or(self.budgets.max_tool_calls),
            max_consecutive_failures: nonzero(own.max_consecutive_failures).or(self.budgets.max_consecutive_failures),
        }
    }

    /// The rate limit on this gateway's own limiter.
    fn local_rate(
        &self,
        tool: &CompiledTool,
        ctx: &CallContext,
        rule: Option<&crate::policy::RateRule>,
    ) -> Result<(), CallError> {
        let Some(rule) = rule else { return Ok(()) };
        let tool_key = ToolKey::new(&tool.spec.tenant, &tool.spec.name);
        let key = limit_key(tool, ctx);
        self.policy.rates.check(&tool_key, rule, key).map_err(|limited| rate_error(limited.retry_after))
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

/// The value a tool's limit is kept per: "" for the whole tool, else the tenant, user or session.
fn limit_key<'a>(tool: &CompiledTool, ctx: &'a CallContext) -> &'a str {
    match tool.spec.limits.key {
        LimitKey::Tool => "",
        LimitKey::Tenant => &ctx.tenant,
        LimitKey::User => &ctx.user_id,
        LimitKey::Session => &ctx.session_id,
    }
}

fn rate_error(retry_after: std::time::Duration) -> CallError {
    // Rounded up: a caller that waits exactly this long is admitted.
    let retry_after_ms = u64::try_from(retry_after.as_micros().div_ceil(1000)).unwrap_or(u64::MAX).max(1);
    CallError::RateLimited { retry_after_ms }
}

/// The model-facing sentence for a spent budget; `answer` adds what to do instead.
fn budget_error(exceeded: BudgetExceeded, name: &str) -> CallError {
    CallError::BudgetExceeded(match exceeded {
        BudgetExceeded::Calls { limit } => format!("This session has used its budget of {limit} tool calls."),
        BudgetExceeded::ToolCalls { limit } => format!("This session has used its budget of {limit} calls of {name}."),
        BudgetExceeded::ConsecutiveFailures { limit } => {
            format!("{name} has failed {limit} times in a row in this session.")
        }
    })
}
