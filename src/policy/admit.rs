//! One call's admission (its session budgets, then its rate limit) and the record of how it ended: on this
//! gateway, or in cluster mode on Redis in one round trip. The caller never asks which.

use super::shared::{Admitted, BudgetAsk, RateAsk};
use super::{BudgetLimits, Policy, PolicyError, RateRule, SessionKey, ToolKey};
use crate::cluster::ClusterError;
use std::time::Duration;

/// What one call asks of the policy.
pub struct CallAsk<'a> {
    pub session: &'a SessionKey,
    /// The tool's tenant ("" for a shared tool) and registered name, made a [`ToolKey`] only if a limit needs it.
    pub tool_tenant: &'a str,
    pub tool: &'a str,
    /// The session budgets the call is counted against.
    pub limits: BudgetLimits,
    /// The session is forgotten once unseen this long.
    pub idle_ttl: Duration,
    /// The rate limit, if the call is checked against one.
    pub rate: Option<RateCheck<'a>>,
}

/// A rate limit one call is checked against.
#[derive(Clone, Copy)]
pub struct RateCheck<'a> {
    pub rule: &'a RateRule,
    /// The limit key's value: "" for the whole tool, else the tenant, user or session.
    pub key: &'a str,
    /// Kept cluster-wide (on Redis in cluster mode) rather than by each gateway.
    pub cluster_wide: bool,
}

/// What an admitted call must report when it ends ([`Policy::record`]).
#[derive(Debug, Default)]
pub struct Ticket {
    /// The budget was counted on Redis, with this many failures of the tool in a row before the call.
    shared_failures: Option<u32>,
}

/// Why a call was not admitted.
#[derive(Debug)]
pub enum Refusal {
    /// A spent budget or a rate limit.
    Refused(PolicyError),
    /// Redis did not answer; the checks it was asked are named, for the caller to fail open or closed.
    Unreachable { error: ClusterError, cluster_rate: bool, budget: bool },
}

impl Policy {
    /// Checks and counts the session's budgets, then checks the rate limit. On Redis, a budget is asked only of
    /// a session with one, and a rate limit only if it is cluster-wide; a gateway's own limit is checked here.
    pub async fn admit(&self, ask: CallAsk<'_>) -> Result<Ticket, Refusal> {
        let Some(shared) = &self.shared else {
            self.budgets.admit(ask.session, ask.tool, &ask.limits).map_err(|e| Refusal::Refused(e.into()))?;
            return self.local_rate(&ask, ask.rate).map(|()| Ticket::default());
        };
        let cluster_rate = ask.rate.filter(|rate| rate.cluster_wide);
        if cluster_rate.is_none() {
            self.local_rate(&ask, ask.rate)?;
        }
        let budgeted = !ask.session.session_id.is_empty() && ask.limits != BudgetLimits::default();
        let budget = budgeted.then_some(BudgetAsk {
            session: ask.session,
            tool: ask.tool,
            limits: ask.limits,
            idle_ttl: ask.idle_ttl,
        });
        let tool_key = cluster_rate.map(|_| ToolKey::new(ask.tool_tenant, ask.tool));
        let rate =
            cluster_rate.zip(tool_key.as_ref()).map(|(rate, tool)| RateAsk { tool, rule: rate.rule, key: rate.key });
        match shared.admit(budget, rate).await {
            Ok(Ok(Admitted { failures_before })) => Ok(Ticket { shared_failures: budgeted.then_some(failures_before) }),
            Ok(Err(PolicyError::Saturated(_))) => Ok(Ticket::default()),
            Ok(Err(refused)) => Err(Refusal::Refused(refused)),
            Err(error) => Err(Refusal::Unreachable { error, cluster_rate: cluster_rate.is_some(), budget: budgeted }),
        }
    }

    /// Records how an admitted call ended, for the failures-in-a-row budget. On Redis only when it changes
    /// something: after a failure, or a success ending a run of failures.
    pub async fn record(&self, session: &SessionKey, tool: &str, ticket: Ticket, failed: bool, idle_ttl: Duration) {
        match (&self.shared, ticket.shared_failures) {
            (None, _) => self.budgets.record(session, tool, failed),
            (Some(shared), Some(before)) if failed || before > 0 => {
                if let Err(err) = shared.record(session, tool, failed, idle_ttl).await {
                    tracing::warn!(tool, error = %err, "the call's outcome was not counted in its session budget");
                }
            }
            (Some(_), _) => {}
        }
    }

    /// The rate limit on this gateway's own limiter.
    fn local_rate(&self, ask: &CallAsk<'_>, rate: Option<RateCheck<'_>>) -> Result<(), Refusal> {
        let Some(rate) = rate else { return Ok(()) };
        let tool = ToolKey::new(ask.tool_tenant, ask.tool);
        self.rates.check(&tool, rate.rule, rate.key).map_err(|limited| Refusal::Refused(limited.into()))
    }
}
