//! Call policy: rate limits, concurrency caps and session budgets, on plain parameters and one injectable clock;
//! in cluster mode, budgets and rate limits checked together on Redis (`shared`).
//!
//! It knows no registry, pipeline or proto type: callers pass a [`ToolKey`], a [`SessionKey`] and the limits
//! read from the tool's spec. All state is bounded: idle entries are evicted by [`Policy::evict_idle`], which
//! [`Policy::spawn_eviction`] runs periodically, and by the checks themselves when a map passes its bound.

mod admit;
mod budget;
mod clock;
mod concurrency;
mod rate;
pub mod rules;
pub mod shared;

pub use admit::{CallAsk, RateCheck, Refusal, Ticket};
pub use budget::{BudgetExceeded, BudgetLimits, Budgets};
pub use clock::Clock;
pub use concurrency::{Concurrency, Saturated, Slot};
pub use rate::{Rate, RateLimited, RateLimiters, RateRule, parse_rate};

use crate::cluster::Redis;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// A tool as the policy keys it: its tenant ("" for a shared tool) and its registered name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolKey {
    pub tenant: String,
    pub name: String,
}

impl ToolKey {
    pub fn new(tenant: impl Into<String>, name: impl Into<String>) -> Self {
        Self { tenant: tenant.into(), name: name.into() }
    }
}

/// A session as the policy keys it: session ids are only unique within a tenant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKey {
    pub tenant: String,
    /// "" is no session.
    pub session_id: String,
}

impl SessionKey {
    pub fn new(tenant: impl Into<String>, session_id: impl Into<String>) -> Self {
        Self { tenant: tenant.into(), session_id: session_id.into() }
    }
}

/// Why the policy refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error(transparent)]
    RateLimited(#[from] RateLimited),
    #[error(transparent)]
    Saturated(#[from] Saturated),
    #[error(transparent)]
    Budget(#[from] BudgetExceeded),
}

/// Rate-limit keys of one tool past which checks sweep the stale ones.
pub const DEFAULT_MAX_RATE_KEYS_PER_TOOL: usize = 10_000;
/// A session unseen for an hour is forgotten.
pub const DEFAULT_SESSION_IDLE_TTL: Duration = Duration::from_secs(3_600);
/// Sessions kept at most, on one gateway.
pub const DEFAULT_MAX_SESSIONS: usize = 100_000;

/// `[budgets]` and the bounds of the policy's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicySettings {
    /// The gateway's session budgets (none by default); a tool's own `budget` wins where it sets one.
    pub budgets: BudgetLimits,
    /// Rate-limit keys of one tool past which checks sweep the stale ones.
    pub max_rate_keys_per_tool: usize,
    /// A session unseen this long is forgotten, with its budgets.
    pub session_idle_ttl: Duration,
    /// Sessions kept at most; past it the idle ones, then the least recently seen, are forgotten.
    pub max_sessions: usize,
}

impl Default for PolicySettings {
    fn default() -> Self {
        Self {
            budgets: BudgetLimits::default(),
            max_rate_keys_per_tool: DEFAULT_MAX_RATE_KEYS_PER_TOOL,
            session_idle_ttl: DEFAULT_SESSION_IDLE_TTL,
            max_sessions: DEFAULT_MAX_SESSIONS,
        }
    }
}

/// The three policies on one clock.
pub struct Policy {
    pub clock: Clock,
    pub rates: RateLimiters,
    pub concurrency: Concurrency,
    pub budgets: Budgets,
    /// Cluster mode: session budgets and cluster-wide rate limits on Redis.
    shared: Option<shared::SharedAdmission>,
}

impl Policy {
    /// The policy of one gateway: every limit and budget kept here.
    pub fn local(clock: Clock, settings: PolicySettings) -> Self {
        Self {
            rates: RateLimiters::new(clock.clone(), settings.max_rate_keys_per_tool),
            concurrency: Concurrency::new(),
            budgets: Budgets::new(clock.clone(), settings.session_idle_ttl, settings.max_sessions),
            clock,
            shared: None,
        }
    }

    /// The policy of a gateway in a cluster: session budgets and cluster-wide rate limits on Redis, a
    /// gateway's own limits here.
    pub fn shared(clock: Clock, settings: PolicySettings, redis: Redis) -> Self {
        Self { shared: Some(shared::SharedAdmission::new(redis)), ..Self::local(clock, settings) }
    }

    /// Forgets idle rate-limit keys, idle semaphores and idle sessions.
    pub fn evict_idle(&self) {
        self.rates.evict_idle();
        self.concurrency.evict_idle();
        self.budgets.evict_idle();
        if let Some(shared) = &self.shared {
            shared.evict_idle();
        }
    }

    /// Runs [`Policy::evict_idle`] every `every` of tokio time, until the policy is dropped. The task holds
    /// only a weak reference, so it never keeps the policy alive.
    ///
    /// # Panics
    /// Outside a tokio runtime with time enabled, like `tokio::spawn`, and if `every` is zero.
    pub fn spawn_eviction(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        let policy: Weak<Self> = Arc::downgrade(self);
        // Started here rather than in the task, so the first sweep is `every` after this call.
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::spawn(async move {
            loop {
                ticks.tick().await;
                let Some(policy) = policy.upgrade() else { return };
                policy.evict_idle();
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_eviction_task_forgets_idle_state_and_stops_with_the_policy() {
        let clock = Clock::fake();
        let settings = PolicySettings { session_idle_ttl: Duration::from_secs(60), ..PolicySettings::default() };
        let policy = Arc::new(Policy::local(clock.clone(), settings));
        let session = SessionKey::new("acme", "s1");
        policy.budgets.admit(&session, "search", &BudgetLimits::default()).unwrap();
        let rule = RateRule { rate: parse_rate("1/s").unwrap(), burst: 0 };
        policy.rates.check(&ToolKey::new("acme", "search"), &rule, "").unwrap();
        let task = policy.spawn_eviction(Duration::from_secs(10));

        clock.advance(Duration::from_secs(61));
        tokio::time::advance(Duration::from_secs(9)).await;
        tokio::task::yield_now().await;
        assert_eq!(policy.budgets.session_count(), 1, "no sweep before the first period");
        tokio::time::advance(Duration::from_secs(1)).await;
        for _ in 0..10 {
            if policy.budgets.session_count() == 0 {
                break;
            }
            tokio::task::yield_now().await; // lets the eviction task run; no time passes
        }
        assert_eq!((policy.budgets.session_count(), policy.rates.tool_count()), (0, 0));

        drop(policy);
        task.await.unwrap(); // paused time jumps to the next tick, where the task finds the policy gone
    }

    #[test]
    fn refusals_fold_into_one_error() {
        let refused: PolicyError = BudgetExceeded::Calls { limit: 3 }.into();
        assert_eq!(refused.to_string(), "the session has used its budget of 3 calls");
        let limited: PolicyError = RateLimited { retry_after: Duration::from_millis(100) }.into();
        assert_eq!(limited.to_string(), "rate limit reached; retry after 100ms");
    }
}
