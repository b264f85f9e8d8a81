//! Conversions between prost types and domain types: the edge where protobuf stops.

use crate::backend::worker::{Answer, Job};
use crate::pb::v1 as pb;
use crate::pipeline::{self as p, ErrorKind, Status};
use crate::policy::review::ReviewRecord;
use crate::registry::{
    Backend, Budget, HttpBackend, Injection, LimitKey, Limits, RateScope, RedisDown, RepairPolicy, Review, ToolSpec,
};
use serde_json::Value;

/// A proto spec carries its schemas as JSON text; a text that is not JSON is the caller's error.
pub fn spec_from_proto(spec: pb::ToolSpec) -> Result<ToolSpec, String> {
    let input_schema = parse_schema("input_schema", &spec.input_schema)?.ok_or("input_schema is required")?;
    let output_schema = parse_schema("output_schema", &spec.output_schema)?;
    let backend = spec.backend.and_then(|b| b.kind).map(|kind| match kind {
        pb::backend::Kind::Grpc(g) => Backend::Grpc { target: g.target },
        pb::backend::Kind::Http(h) => {
            Backend::Http(HttpBackend { url: h.url, method: h.method, headers: h.headers.into_iter().collect() })
        }
        pb::backend::Kind::Mcp(m) => Backend::Mcp { server: m.server, tool: m.tool },
        pb::backend::Kind::Worker(_) => Backend::Worker {},
    });
    Ok(ToolSpec {
        name: spec.name,
        description: spec.description,
        input_schema,
        output_schema,
        backend,
        inject: injections_from_proto(spec.inject),
        repair: repair_policy_from_proto(spec.repair),
        limits: limits_from_proto(spec.limits),
        review: Review { required: spec.review.is_some_and(|r| r.required) },
        budget: budget_from_proto(spec.budget),
        tenant: spec.tenant,
        labels: spec.labels.into_iter().collect(),
        // Output only: the registry sets it on registration.
        version: spec.version,
    })
}

pub(super) fn injections_from_proto(inject: Vec<pb::Injection>) -> Vec<Injection> {
    inject.into_iter().map(|i| Injection { param: i.param, from: i.from }).collect()
}

pub(super) fn repair_policy_from_proto(repair: Option<pb::RepairPolicy>) -> RepairPolicy {
    let repair = repair.unwrap_or_default();
    RepairPolicy {
        enabled: repair.enabled,
        aliases: repair.aliases.into_iter().collect(),
        drop_unknown: repair.drop_unknown,
    }
}

pub(super) fn limits_from_proto(limits: Option<pb::Limits>) -> Limits {
    let limits = limits.unwrap_or_default();
    let key = match pb::LimitKey::try_from(limits.key).unwrap_or_default() {
        pb::LimitKey::Unspecified | pb::LimitKey::Tool => LimitKey::Tool,
        pb::LimitKey::Tenant => LimitKey::Tenant,
        pb::LimitKey::User => LimitKey::User,
        pb::LimitKey::Session => LimitKey::Session,
    };
    Limits {
        rate: limits.rate,
        burst: limits.burst,
        key,
        max_concurrency: limits.max_concurrency,
        timeout_ms: limits.timeout_ms,
        retries: limits.retries,
        idempotent: limits.idempotent,
        scope: match pb::RateScope::try_from(limits.scope).unwrap_or_default() {
            pb::RateScope::Unspecified | pb::RateScope::Cluster => RateScope::Cluster,
            pb::RateScope::Gateway => RateScope::Gateway,
        },
        when_redis_down: match pb::RedisDown::try_from(limits.when_redis_down).unwrap_or_default() {
            pb::RedisDown::Unspecified | pb::RedisDown::FailOpen => RedisDown::FailOpen,
            pb::RedisDown::FailClosed => RedisDown::FailClosed,
        },
    }
}

pub(super) fn budget_from_proto(budget: Option<pb::Budget>) -> Budget {
    budget.map_or_else(Budget::default, |b| Budget {
        max_calls: b.max_calls,
        max_consecutive_failures: b.max_consecutive_failures,
    })
}

fn parse_schema(field: &str, text: &str) -> Result<Option<Value>, String> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text).map(Some).map_err(|e| format!("{field} is not valid JSON: {e}"))
}

pub fn spec_to_proto(spec: &ToolSpec) -> pb::ToolSpec {
    let kind = spec.backend.as_ref().map(|b| match b {
        Backend::Grpc { target } => pb::backend::Kind::Grpc(pb::GrpcBackend { target: target.clone() }),
        Backend::Http(h) => pb::backend::Kind::Http(pb::HttpBackend {
            url: h.url.clone(),
            method: h.method.clone(),
            headers: h.headers.clone().into_iter().collect(),
        }),
        Backend::Mcp { server, tool } => {
            pb::backend::Kind::Mcp(pb::McpBackend { server: server.clone(), tool: tool.clone() })
        }
        Backend::Worker {} => pb::backend::Kind::Worker(pb::WorkerBackend {}),
    });
    pb::ToolSpec {
        name: spec.name.clone(),
        description: spec.description.clone(),
        input_schema: spec.input_schema.to_string(),
        output_schema: spec.output_schema.as_ref().map(Value::to_string).unwrap_or_default(),
        backend: Some(pb::Backend { kind }),
        inject: injections_to_proto(&spec.inject),
        repair: Some(repair_policy_to_proto(&spec.repair)),
        limits: Some(limits_to_proto(&spec.limits)),
        review: Some(pb::Review { required: spec.review.required }),
        budget: Some(budget_to_proto(spec.budget)),
        tenant: spec.tenant.clone(),
        labels: spec.labels.clone().into_iter().collect(),
        version: spec.version,
    }
}

pub(super) fn injections_to_proto(inject: &[Injection]) -> Vec<pb::Injection> {
    inject.iter().map(|i| pb::Injection { param: i.param.clone(), from: i.from.clone() }).collect()
}

pub(super) fn repair_policy_to_proto(repair: &RepairPolicy) -> pb::RepairPolicy {
    pb::RepairPolicy {
        enabled: repair.enabled,
        aliases: repair.aliases.clone().into_iter().collect(),
        drop_unknown: repair.drop_unknown,
    }
}

pub(super) fn limits_to_proto(l: &Limits) -> pb::Limits {
    let key = match l.key {
        LimitKey::Tool => pb::LimitKey::Tool,
        LimitKey::Tenant => pb::LimitKey::Tenant,
        LimitKey::User => pb::LimitKey::User,
        LimitKey::Session => pb::LimitKey::Session,
    };
    pb::Limits {
        rate: l.rate.clone(),
        burst: l.burst,
        key: key.into(),
        max_concurrency: l.max_concurrency,
        timeout_ms: l.timeout_ms,
        retries: l.retries,
        idempotent: l.idempotent,
        scope: match l.scope {
            RateScope::Cluster => pb::RateScope::Cluster,
            RateScope::Gateway => pb::RateScope::Gateway,
        }
        .into(),
        when_redis_down: match l.when_redis_down {
            RedisDown::FailOpen => pb::RedisDown::FailOpen,
            RedisDown::FailClosed => pb::RedisDown::FailClosed,
        }
        .into(),
    }
}

pub(super) fn budget_to_proto(b: Budget) -> pb::Budget {
    pb::Budget { max_calls: b.max_calls, max_consecutive_failures: b.max_consecutive_failures }
}

pub fn call_from_proto(call: pb::ToolCall) -> p::ToolCall {
    p::ToolCall { id: call.id, name: call.name, arguments: call.arguments }
}

pub fn context_from_proto(ctx: Option<pb::CallContext>) -> p::CallContext {
    let ctx = ctx.unwrap_or_default();
    p::CallContext {
        tenant: ctx.tenant,
        user_id: ctx.user_id,
        session_id: ctx.session_id,
        values: ctx.values.into_iter().collect(),
    }
}

pub fn context_to_proto(ctx: &p::CallContext) -> pb::CallContext {
    pb::CallContext {
        tenant: ctx.tenant.clone(),
        user_id: ctx.user_id.clone(),
        session_id: ctx.session_id.clone(),
        values: ctx.values.clone().into_iter().collect(),
    }
}

pub fn message_to_proto(m: p::ToolMessage) -> pb::ToolMessage {
    let status = match m.status {
        Status::Success => pb::ToolStatus::Success,
        Status::Error => pb::ToolStatus::Error,
        Status::PendingReview => pb::ToolStatus::PendingReview,
    };
    pb::ToolMessage {
        tool_call_id: m.tool_call_id,
        name: m.name,
        status: status.into(),
        content: m.content,
        structured: m.structured.unwrap_or_default(),
        error: m.error.map(|e| pb::ToolError {
            kind: kind_to_proto(e.kind).into(),
            message: e.message,
            model_fixable: e.model_fixable,
            retryable: e.retryable,
            retry_after_ms: e.retry_after_ms,
            violations: e
                .violations
                .into_iter()
                .map(|v| pb::Violation {
                    instance_path: v.instance_path,
                    schema_path: v.schema_path,
                    message: v.message,
                })
                .collect(),
            suggestions: e.suggestions,
            original_arguments: e.original_arguments,
        }),
        repairs: m.repairs.into_iter().map(repair_to_proto).collect(),
        effective_arguments: m.effective_arguments,
        attempts: m.attempts,
        duration_us: m.duration_us,
    }
}

fn kind_to_proto(kind: ErrorKind) -> pb::ErrorKind {
    match kind {
        ErrorKind::ToolNotFound => pb::ErrorKind::ToolNotFound,
        ErrorKind::MalformedArguments => pb::ErrorKind::MalformedArguments,
        ErrorKind::InvalidArguments => pb::ErrorKind::InvalidArguments,
        ErrorKind::ToolError => pb::ErrorKind::ToolError,
        ErrorKind::Timeout => pb::ErrorKind::Timeout,
        ErrorKind::RateLimited => pb::ErrorKind::RateLimited,
        ErrorKind::Unavailable => pb::ErrorKind::Unavailable,
        ErrorKind::Rejected => pb::ErrorKind::Rejected,
        ErrorKind::PermissionDenied => pb::ErrorKind::PermissionDenied,
        ErrorKind::BudgetExceeded => pb::ErrorKind::BudgetExceeded,
        ErrorKind::Internal => pb::ErrorKind::Internal,
    }
}

pub fn review_to_proto(record: &ReviewRecord) -> pb::PendingReview {
    pb::PendingReview {
        call_id: record.key.call_id.clone(),
        tenant: record.key.tenant.clone(),
        session_id: record.session_id.clone(),
        user_id: record.user_id.clone(),
        tool: record.tool.clone(),
        arguments: record.arguments.clone(),
        repairs: record.repairs.iter().cloned().map(repair_to_proto).collect(),
        created_ms: record.created_ms,
    }
}

fn repair_to_proto(r: p::Repair) -> pb::Repair {
    pb::Repair { rule: r.rule, path: r.path, before: r.before, after: r.after }
}

pub fn job_to_proto(job: Job) -> pb::WorkerInvocation {
    pb::WorkerInvocation {
        invocation_id: job.invocation_id,
        call_id: job.call_id,
        tool: job.tool,
        arguments: job.arguments,
        context: Some(context_to_proto(&job.context)),
        deadline_ms: job.deadline_ms,
        trace: job.trace.into_iter().collect(),
    }
}

/// A worker's result: the invocation it answers, and the answer.
pub fn answer_from_proto(result: pb::WorkerResult) -> (String, Answer) {
    let answer = Answer {
        content: result.content,
        structured: result.structured,
        is_error: result.is_error,
        error_message: result.error_message,
    };
    (result.invocation_id, answer)
}
