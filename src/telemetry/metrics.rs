//! The gateway's metrics: instruments created once, recorded per call with bounded label sets.

use crate::pipeline::{ErrorKind, OVERRIDE_REMOVED, ToolMessage, ToolStatus};
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};
use std::sync::Arc;

/// The `tool` label of a call whose name did not resolve: the model's text never becomes a label.
pub const UNRESOLVED: &str = "<unresolved>";

/// Duration buckets in seconds: 100 µs to 30 s.
const DURATION_BUCKETS: [f64; 16] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 30.0];

pub struct Metrics {
    calls: Counter<u64>,
    duration: Histogram<f64>,
    repairs: Counter<u64>,
    rate_limited: Counter<u64>,
    injection_overrides: Counter<u64>,
    fail_open: Counter<u64>,
    shed: Counter<u64>,
    text_calls: Counter<u64>,
}

impl Metrics {
    pub fn new(meter: &Meter) -> Self {
        Self {
            calls: meter.u64_counter("toolgate.tool.calls").with_description("Tool calls, by outcome").build(),
            duration: meter
                .f64_histogram("toolgate.tool.duration")
                .with_unit("s")
                .with_description("Time from receiving a call to answering it")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            repairs: meter.u64_counter("toolgate.tool.repairs").with_description("Argument repairs, by rule").build(),
            rate_limited: meter
                .u64_counter("toolgate.tool.rate_limited")
                .with_description("Calls refused by a rate limit")
                .build(),
            injection_overrides: meter
                .u64_counter("toolgate.tool.injection_overrides")
                .with_description("Values a model wrote for an injected parameter, removed")
                .build(),
            fail_open: meter
                .u64_counter("toolgate.cluster.fail_open")
                .with_description("Calls admitted without their cluster-wide check because Redis was unavailable")
                .build(),
            shed: meter
                .u64_counter("toolgate.calls.shed")
                .with_description("Requests refused at once because the gateway had its limit of calls in flight")
                .build(),
            text_calls: meter
                .u64_counter("toolgate.text_calls.reads")
                .with_description("Texts read for calls, by outcome (calls, none, refused) and refusal reason")
                .build(),
        }
    }

    /// Records one answered call. `tool` is the registered name, or `UNRESOLVED`. Repairs and overrides are
    /// counted only with `with_repairs`: an answer given again for the same call does not repeat them.
    pub fn record(
        &self,
        tool: opentelemetry::Value,
        message: &ToolMessage,
        with_repairs: bool,
        rule: Option<&Arc<str>>,
    ) {
        let tool = KeyValue::new("tool", tool);
        let status = KeyValue::new("status", status_name(message.status));
        let seconds = message.duration_us as f64 / 1e6;
        self.duration.record(seconds, &[tool.clone(), status.clone()]);
        // The policy rule that denied the call or sent it to review: a name from the registry or the config.
        let rule = rule.map(|rule| KeyValue::new("policy.rule", rule.to_string()));
        match (&message.error, rule) {
            (Some(error), rule) => {
                let kind = KeyValue::new("error.type", kind_name(error.kind));
                match rule {
                    Some(rule) => self.calls.add(1, &[tool.clone(), status, kind, rule]),
                    None => self.calls.add(1, &[tool.clone(), status, kind]),
                }
                if error.kind == ErrorKind::RateLimited {
                    self.rate_limited.add(1, std::slice::from_ref(&tool));
                }
            }
            (None, Some(rule)) => self.calls.add(1, &[tool.clone(), status, rule]),
            (None, None) => self.calls.add(1, &[tool.clone(), status]),
        }
        for repair in message.repairs.iter().filter(|_| with_repairs) {
            if repair.rule == OVERRIDE_REMOVED {
                self.injection_overrides.add(1, std::slice::from_ref(&tool));
            } else {
                self.repairs.add(1, &[tool.clone(), KeyValue::new("rule", repair.rule.clone())]);
            }
        }
    }
}

impl Metrics {
    pub fn fail_open(&self, tool: &str, what: &'static str) {
        self.fail_open.add(1, &[KeyValue::new("tool", tool.to_owned()), KeyValue::new("check", what)]);
    }

    /// A data-plane request refused by overload shedding; `method` is `Execute` or `ExecuteBatch`.
    pub fn shed(&self, method: &'static str) {
        self.shed.add(1, &[KeyValue::new("method", method)]);
    }

    /// A text read for calls: `outcome` is calls, none or refused, `reason` the refusal's (empty otherwise).
    pub fn text_read(&self, format: &'static str, outcome: &'static str, reason: &'static str) {
        let labels =
            [KeyValue::new("format", format), KeyValue::new("outcome", outcome), KeyValue::new("reason", reason)];
        self.text_calls.add(1, &labels);
    }

    /// A call whose caller went away before it was answered.
    pub fn record_cancelled(&self, tool: opentelemetry::Value) {
        let kind = KeyValue::new("error.type", "CANCELLED");
        self.calls.add(1, &[KeyValue::new("tool", tool), KeyValue::new("status", "CANCELLED"), kind]);
    }
}

pub fn status_name(status: ToolStatus) -> &'static str {
    match status {
        ToolStatus::Success => "SUCCESS",
        ToolStatus::Error => "ERROR",
        ToolStatus::PendingReview => "PENDING_REVIEW",
    }
}

/// The ToolError kind as the ToolMessage spells it.
pub fn kind_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ToolNotFound => "TOOL_NOT_FOUND",
        ErrorKind::MalformedArguments => "MALFORMED_ARGUMENTS",
        ErrorKind::InvalidArguments => "INVALID_ARGUMENTS",
        ErrorKind::ToolError => "TOOL_ERROR",
        ErrorKind::Timeout => "TIMEOUT",
        ErrorKind::RateLimited => "RATE_LIMITED",
        ErrorKind::Unavailable => "UNAVAILABLE",
        ErrorKind::Rejected => "REJECTED",
        ErrorKind::PermissionDenied => "PERMISSION_DENIED",
        ErrorKind::BudgetExceeded => "BUDGET_EXCEEDED",
        ErrorKind::Internal => "INTERNAL",
        ErrorKind::PolicyDenied => "POLICY_DENIED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_spell_kinds_and_statuses_as_the_tool_message_does() {
        use ErrorKind::*;
        let kinds = [
            ToolNotFound,
            MalformedArguments,
            InvalidArguments,
            ToolError,
            Timeout,
            RateLimited,
            Unavailable,
            Rejected,
            PermissionDenied,
            BudgetExceeded,
            Internal,
        ];
        for kind in kinds {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind_name(kind), "{kind:?}");
        }
        for status in [ToolStatus::Success, ToolStatus::Error, ToolStatus::PendingReview] {
            assert_eq!(serde_json::to_value(status).unwrap(), status_name(status), "{status:?}");
        }
    }
}
