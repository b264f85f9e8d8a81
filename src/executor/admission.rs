//! Admission: the session budgets and the rate limit a call must pass, asked of the policy (which keeps them on
//! this gateway or on Redis), and its refusals as the model reads them.

use super::ExecSettings;
use crate::pipeline::{CallContext, CallError, ErrorKind, ToolMessage, ToolStatus};
use crate::policy::{
    BudgetExceeded, BudgetLimits, CallAsk, Policy, PolicyError, RateCheck, Refusal, SessionKey, Ticket,
};
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

/// How long a call refused because Redis is down (fail closed) is told to wait.
const RETRY_WHILE_DOWN_MS: u64 = 1000;

impl Admission {
    pub(super) fn new(policy: Arc<Policy>, settings: &ExecSettings, telemetry: Arc<Telemetry>) -> Self {
        Self { policy, budgets: settings.budgets, session_idle_ttl: settings.session_idle_ttl, telemetry }
    }

    /// Checks and counts the session's budgets and, with `Admit::WithRate`, the tool's rate limit. Redis down
    /// refuses a cluster-wide limit that fails closed, and admits the rest, counted as failing open.
    pub(super) async fn admit(
        &self,
        ctx: &CallContext,
        tool: &CompiledTool,
        admit: Admit,
    ) -> Result<Ticket, CallError> {
        let session = SessionKey::new(&ctx.tenant, &ctx.session_id);
        let name = tool.spec.name.as_str();
        let rate = tool.rate.as_ref().filter(|_| admit == Admit::WithRate).map(|rule| RateCheck {
            rule,
            key: limit_key(tool, ctx),
            cluster_wide: tool.spec.limits.scope == RateScope::Cluster,
        });
        let ask = CallAsk {
            session: &session,
            tool_tenant: &tool.spec.tenant,
            tool: name,
            limits: self.budget_limits(tool),
            idle_ttl: self.session_idle_ttl,
            rate,
        };
        match self.policy.admit(ask).await {
            Ok(ticket) => Ok(ticket),
            Err(Refusal::Refused(PolicyError::Budget(exceeded))) => Err(budget_error(exceeded, name)),
            Err(Refusal::Refused(PolicyError::RateLimited(limited))) => Err(rate_error(limited.retry_after)),
            Err(Refusal::Refused(PolicyError::Saturated(_))) => Ok(Ticket::default()),
            Err(Refusal::Unreachable { error, cluster_rate, budget }) => {
                if cluster_rate && tool.spec.limits.when_redis_down == RedisDown::FailClosed {
                    tracing::debug!(tool = name, %error, "Redis down: refused (fail closed)");
                    return Err(CallError::RateLimited { retry_after_ms: RETRY_WHILE_DOWN_MS });
                }
                for (asked, check) in [(cluster_rate, "rate"), (budget, "budget")] {
                    if asked {
                        self.telemetry.fail_open(name, check);
                    }
                }
                Ok(Ticket::default())
            }
        }
    }

    /// Records how an admitted call ended, for the failures-in-a-row budget; a call still waiting for review has
    /// not ended.
    pub(super) async fn record(&self, ctx: &CallContext, tool: &CompiledTool, ticket: Ticket, message: &ToolMessage) {
        if message.status == ToolStatus::PendingReview {
            return;
        }
        let session = SessionKey::new(&ctx.tenant, &ctx.session_id);
        let failed = counts_as_failure(message);
        self.policy.record(&session, &tool.spec.name, ticket, failed, self.session_idle_ttl).await;
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
