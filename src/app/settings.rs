//! The `Config` re-shaped into what each part reads: the executor's settings, and each door's own (`grpc`,
//! `mcp_front`, `console`), so that no door reads the whole `Config`. The policy, review queue and call-id
//! store take their own `*Settings` from `Config` as they are.

use crate::cluster::Redis;
use crate::config::Config;
use crate::executor::ExecSettings;
use crate::pipeline::{PipelineSettings, SplitMode};
use crate::{console, grpc, mcp_front};
use std::sync::Arc;

pub(super) fn executor(config: &Config) -> ExecSettings {
    ExecSettings {
        prepare: PipelineSettings {
            limits: config.parse_limits,
            repair: config.repair,
            split: SplitMode::AsToolAllows,
        },
        default_timeout: config.default_timeout,
        batch_concurrency: config.batch_concurrency,
        messages: config.messages.clone(),
        budgets: config.policy.budgets,
        review_wait: config.review.max_wait,
        session_idle_ttl: config.policy.session_idle_ttl,
        rules: Arc::clone(&config.rules),
    }
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

pub(super) fn mcp_front(config: &Config, state_key: [u8; 32], redis: Option<Redis>) -> mcp_front::FrontDoorSettings {
    mcp_front::FrontDoorSettings {
        front: config.mcp_front.clone(),
        max_request_bytes: config.max_request_bytes,
        state_key,
        redis,
    }
}

pub(super) fn console(config: &Config, redis: Option<Redis>) -> console::ConsoleDoorSettings {
    console::ConsoleDoorSettings {
        console: config.console.clone(),
        tokens: config.tokens.clone(),
        parse_limits: config.parse_limits,
        max_request_bytes: config.max_request_bytes,
        defaults: console::Defaults {
            timeout: config.default_timeout,
            max_tool_calls: config.policy.budgets.max_tool_calls,
            max_consecutive_failures: config.policy.budgets.max_consecutive_failures,
            max_session_calls: config.policy.budgets.max_calls,
        },
        rules: Arc::clone(&config.rules),
        redis,
    }
}
