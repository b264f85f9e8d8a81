//! The `Config` re-shaped into what each part reads: the executor's, the policy's and the review queue's settings,
//! and each door's own (`grpc`, `mcp_front`, `console`), so that no door reads the whole `Config`.

use crate::config::Config;
use crate::executor::ExecSettings;
use crate::pipeline::{PrepareOptions, SplitMode};
use crate::policy::{BudgetLimits, PolicySettings};
use crate::review::ReviewSettings;
use crate::{console, grpc, mcp_front};
use std::sync::Arc;

pub(super) fn executor(config: &Config) -> ExecSettings {
    ExecSettings {
        prepare: PrepareOptions { limits: config.parse_limits, repair: config.repair, split: SplitMode::AsToolAllows },
        default_timeout: config.default_timeout,
        batch_concurrency: config.batch_concurrency,
        messages: config.messages.clone(),
        budgets: BudgetLimits {
            max_calls: config.budgets.max_calls,
            max_tool_calls: config.budgets.max_tool_calls,
            max_consecutive_failures: config.budgets.max_consecutive_failures,
        },
        review_wait: config.review.max_wait,
        session_idle_ttl: config.budgets.session_idle_ttl,
        rules: Arc::clone(&config.policy),
    }
}

pub(super) fn policy(config: &Config) -> PolicySettings {
    PolicySettings {
        session_idle_ttl: config.budgets.session_idle_ttl,
        max_sessions: config.budgets.max_sessions,
        ..PolicySettings::default()
    }
}

pub(super) fn review(config: &Config) -> ReviewSettings {
    ReviewSettings { max_pending: config.review.max_pending, keep_done: config.review.keep_decided }
}

pub(super) fn grpc(config: &Config) -> grpc::GrpcSettings {
    grpc::GrpcSettings {
        tokens: config.tokens.clone(),
        max_request_bytes: config.max_request_bytes,
        max_batch_calls: config.max_batch_calls,
        max_result_bytes: config.max_result_bytes,
        parse_limits: config.parse_limits,
    }
}

pub(super) fn mcp_front(config: &Config) -> mcp_front::FrontDoorSettings {
    mcp_front::FrontDoorSettings { front: config.mcp_front.clone(), max_request_bytes: config.max_request_bytes }
}

pub(super) fn console(config: &Config) -> console::ConsoleDoorSettings {
    console::ConsoleDoorSettings {
        console: config.console.clone(),
        tokens: config.tokens.clone(),
        parse_limits: config.parse_limits,
        max_request_bytes: config.max_request_bytes,
        defaults: console::Defaults {
            timeout: config.default_timeout,
            max_tool_calls: config.budgets.max_tool_calls,
            max_consecutive_failures: config.budgets.max_consecutive_failures,
            max_session_calls: config.budgets.max_calls,
        },
        rules: Arc::clone(&config.policy),
    }
}
