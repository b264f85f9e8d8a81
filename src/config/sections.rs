//! The `[budgets]`, `[review]` and `[idempotency]` tables made into their subsystems' settings: what is absent
//! is the subsystem's default.

use super::{RawBudgets, RawIdempotency, RawReview};
use crate::idempotency::IdempotencySettings;
use crate::policy::{BudgetLimits, PolicySettings};
use crate::review::ReviewSettings;
use std::time::Duration;

/// `[budgets]`; a budget of 0 is no budget.
pub(super) fn policy(raw: &RawBudgets) -> PolicySettings {
    let limit = |v: Option<u32>| v.filter(|n| *n > 0);
    let defaults = PolicySettings::default();
    PolicySettings {
        budgets: BudgetLimits {
            max_calls: limit(raw.max_calls),
            max_tool_calls: limit(raw.max_tool_calls),
            max_consecutive_failures: limit(raw.max_consecutive_failures),
        },
        session_idle_ttl: raw.session_idle_ttl_s.map_or(defaults.session_idle_ttl, Duration::from_secs),
        max_sessions: raw.max_sessions.unwrap_or(defaults.max_sessions),
        ..defaults
    }
}

pub(super) fn review(raw: &RawReview) -> ReviewSettings {
    let defaults = ReviewSettings::default();
    ReviewSettings {
        max_wait: raw.max_wait_ms.map_or(defaults.max_wait, Duration::from_millis),
        max_pending: raw.max_pending.unwrap_or(defaults.max_pending),
        keep_decided: raw.keep_decided_s.map_or(defaults.keep_decided, Duration::from_secs),
    }
}

pub(super) fn idempotency(raw: &RawIdempotency) -> IdempotencySettings {
    let defaults = IdempotencySettings::default();
    IdempotencySettings {
        window: raw.window_ms.map_or(defaults.window, Duration::from_millis),
        max_entries: raw.max_entries.unwrap_or(defaults.max_entries),
        max_bytes: raw.max_bytes.unwrap_or(defaults.max_bytes),
    }
}
