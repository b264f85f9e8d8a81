//! Tool specs: `pb::ToolSpec` and its parts to and from the registry's types. A proto spec carries its schemas as
//! JSON text; a text that is not JSON is the caller's error.

use crate::pb::v1 as pb;
use crate::registry::{
    Backend, Budget, HttpBackend, Injection, LimitKey, Limits, OnError, PolicyRule, RateScope, RedisDown, RepairPolicy,
    Review, RuleAction, ToolSpec,
};
use serde_json::Value;

impl TryFrom<pb::ToolSpec> for ToolSpec {
    type Error = String;

    fn try_from(spec: pb::ToolSpec) -> Result<Self, String> {
        let input_schema = parse_schema("input_schema", &spec.input_schema)?.ok_or("input_schema is required")?;
        let output_schema = parse_schema("output_schema", &spec.output_schema)?;
        Ok(ToolSpec {
            name: spec.name,
            description: spec.description,
            input_schema,
            output_schema,
            backend: spec.backend.and_then(|b| b.kind).map(Backend::from),
            inject: spec.inject.into_iter().map(Injection::from).collect(),
            repair: spec.repair.unwrap_or_default().into(),
            limits: spec.limits.unwrap_or_default().into(),
            review: spec.review.map(Review::from).unwrap_or_default(),
            budget: spec.budget.map(Budget::from).unwrap_or_default(),
            policy: spec.policy.into_iter().map(PolicyRule::try_from).collect::<Result<_, _>>()?,
            tenant: spec.tenant,
            labels: spec.labels.into_iter().collect(),
            // Output only: the registry sets it on registration.
            version: spec.version,
        })
    }
}

impl From<&ToolSpec> for pb::ToolSpec {
    fn from(spec: &ToolSpec) -> Self {
        pb::ToolSpec {
            name: spec.name.clone(),
            description: spec.description.clone(),
            input_schema: spec.input_schema.to_string(),
            output_schema: spec.output_schema.as_ref().map(Value::to_string).unwrap_or_default(),
            backend: Some(pb::Backend { kind: spec.backend.as_ref().map(pb::backend::Kind::from) }),
            inject: spec.inject.iter().map(pb::Injection::from).collect(),
            repair: Some((&spec.repair).into()),
            limits: Some((&spec.limits).into()),
            review: Some((&spec.review).into()),
            budget: Some(spec.budget.into()),
            policy: spec.policy.iter().map(pb::PolicyRule::from).collect(),
            tenant: spec.tenant.clone(),
            labels: spec.labels.clone().into_iter().collect(),
            version: spec.version,
        }
    }
}

impl TryFrom<pb::PolicyRule> for PolicyRule {
    type Error = String;

    fn try_from(rule: pb::PolicyRule) -> Result<Self, String> {
        let action = match pb::PolicyAction::try_from(rule.action).unwrap_or_default() {
            pb::PolicyAction::Deny => RuleAction::Deny,
            pb::PolicyAction::Review => RuleAction::Review,
            other => {
                return Err(format!(
                    "policy rule {:?}: action must be DENY or REVIEW, not {}",
                    rule.name,
                    other.as_str_name()
                ));
            }
        };
        let on_error = match pb::PolicyAction::try_from(rule.on_error).unwrap_or_default() {
            pb::PolicyAction::Unspecified | pb::PolicyAction::Deny => OnError::Deny,
            pb::PolicyAction::Review => OnError::Review,
            pb::PolicyAction::Allow => OnError::Allow,
        };
        Ok(PolicyRule {
            name: rule.name,
            when: rule.when,
            action,
            message: rule.message,
            on_error,
            model_fixable: rule.model_fixable,
        })
    }
}

impl From<&PolicyRule> for pb::PolicyRule {
    fn from(rule: &PolicyRule) -> Self {
        let action = match rule.action {
            RuleAction::Deny => pb::PolicyAction::Deny,
            RuleAction::Review => pb::PolicyAction::Review,
        };
        let on_error = match rule.on_error {
            OnError::Deny => pb::PolicyAction::Deny,
            OnError::Review => pb::PolicyAction::Review,
            OnError::Allow => pb::PolicyAction::Allow,
        };
        pb::PolicyRule {
            name: rule.name.clone(),
            when: rule.when.clone(),
            action: action.into(),
            message: rule.message.clone(),
            on_error: on_error.into(),
            model_fixable: rule.model_fixable,
        }
    }
}

fn parse_schema(field: &str, text: &str) -> Result<Option<Value>, String> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text).map(Some).map_err(|e| format!("{field} is not valid JSON: {e}"))
}

impl From<pb::backend::Kind> for Backend {
    fn from(kind: pb::backend::Kind) -> Self {
        match kind {
            pb::backend::Kind::Grpc(g) => Backend::Grpc { target: g.target },
            pb::backend::Kind::Http(h) => {
                Backend::Http(HttpBackend { url: h.url, method: h.method, headers: h.headers.into_iter().collect() })
            }
            pb::backend::Kind::Mcp(m) => Backend::Mcp { server: m.server, tool: m.tool },
            pb::backend::Kind::Worker(_) => Backend::Worker {},
        }
    }
}

impl From<&Backend> for pb::backend::Kind {
    fn from(backend: &Backend) -> Self {
        match backend {
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
        }
    }
}

impl From<pb::Injection> for Injection {
    fn from(i: pb::Injection) -> Self {
        Injection { param: i.param, from: i.from }
    }
}

impl From<&Injection> for pb::Injection {
    fn from(i: &Injection) -> Self {
        pb::Injection { param: i.param.clone(), from: i.from.clone() }
    }
}

impl From<pb::RepairPolicy> for RepairPolicy {
    fn from(repair: pb::RepairPolicy) -> Self {
        RepairPolicy {
            enabled: repair.enabled,
            aliases: repair.aliases.into_iter().collect(),
            drop_unknown: repair.drop_unknown,
            split_parallel: repair.split_parallel,
        }
    }
}

impl From<&RepairPolicy> for pb::RepairPolicy {
    fn from(repair: &RepairPolicy) -> Self {
        pb::RepairPolicy {
            enabled: repair.enabled,
            aliases: repair.aliases.clone().into_iter().collect(),
            drop_unknown: repair.drop_unknown,
            split_parallel: repair.split_parallel,
        }
    }
}

impl From<pb::Limits> for Limits {
    fn from(limits: pb::Limits) -> Self {
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
}

impl From<&Limits> for pb::Limits {
    fn from(l: &Limits) -> Self {
        let key = match l.key {
            LimitKey::Tool => pb::LimitKey::Tool,
            LimitKey::Tenant => pb::LimitKey::Tenant,
            LimitKey::User => pb::LimitKey::User,
            LimitKey::Session => pb::LimitKey::Session,
        };
        let scope = match l.scope {
            RateScope::Cluster => pb::RateScope::Cluster,
            RateScope::Gateway => pb::RateScope::Gateway,
        };
        let when_redis_down = match l.when_redis_down {
            RedisDown::FailOpen => pb::RedisDown::FailOpen,
            RedisDown::FailClosed => pb::RedisDown::FailClosed,
        };
        pb::Limits {
            rate: l.rate.clone(),
            burst: l.burst,
            key: key.into(),
            max_concurrency: l.max_concurrency,
            timeout_ms: l.timeout_ms,
            retries: l.retries,
            idempotent: l.idempotent,
            scope: scope.into(),
            when_redis_down: when_redis_down.into(),
        }
    }
}

impl From<pb::Budget> for Budget {
    fn from(b: pb::Budget) -> Self {
        Budget { max_calls: b.max_calls, max_consecutive_failures: b.max_consecutive_failures }
    }
}

impl From<Budget> for pb::Budget {
    fn from(b: Budget) -> Self {
        pb::Budget { max_calls: b.max_calls, max_consecutive_failures: b.max_consecutive_failures }
    }
}

impl From<pb::Review> for Review {
    fn from(r: pb::Review) -> Self {
        Review { required: r.required, caller_may_confirm: r.caller_may_confirm }
    }
}

impl From<&Review> for pb::Review {
    fn from(r: &Review) -> Self {
        pb::Review { required: r.required, caller_may_confirm: r.caller_may_confirm }
    }
}
