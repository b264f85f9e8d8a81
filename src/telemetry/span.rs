//! The spans of one call: `execute_tool {tool}` with the GenAI attributes and ours, and the backend attempts
//! below it, plus the one log line a failed call gets.

use super::metrics::{UNRESOLVED, kind_name, status_name};
use super::{Telemetry, truncate};
use crate::pipeline::{CallContext, ErrorKind, OVERRIDE_REMOVED, ToolCall, ToolMessage, strip_overrides};
use crate::registry::CompiledTool;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue, StringValue, Value};
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Longest caller-written text (call id, session, tenant) put on a span.
const MAX_ATTRIBUTE: usize = 256;

/// One call's span, open until `Telemetry::finish`. Dropped unfinished, when the caller went away, it ends as
/// `CANCELLED`, so no call goes unseen.
pub struct CallSpan<'a> {
    telemetry: &'a Telemetry,
    call: &'a ToolCall,
    cx: Context,
    tool: OnceLock<Arc<CompiledTool>>,
    /// Microseconds spent resolving, parsing, validating and repairing, once done.
    checked_us: AtomicU64,
    /// The policy rule that denied the call or sent it to review.
    rule: OnceLock<Arc<str>>,
    finished: bool,
}

impl CallSpan<'_> {
    /// The context the call runs in: its span, or the caller's when spans are off.
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// Names the tool the call resolved to, for the span and the metrics.
    pub fn resolved(&self, tool: &Arc<CompiledTool>) {
        let _ = self.tool.set(Arc::clone(tool));
    }

    /// Names the policy rule that denied the call or sent it to review, for the span and the metrics.
    pub fn ruled(&self, rule: &Arc<str>) {
        let _ = self.rule.set(Arc::clone(rule));
    }

    /// Records how long the pure pipeline took (resolve, parse, validate, repair): an attribute of the call's
    /// span rather than a span of its own, which would cost more to export than the stage takes.
    pub fn checked(&self, took: Duration) {
        self.checked_us.store(u64::try_from(took.as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }
}

impl Drop for CallSpan<'_> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let tool = self.tool.get().map(|t| t.spec.name.as_str());
        self.telemetry.metrics.record_cancelled(tool.map_or_else(|| UNRESOLVED.into(), |t| t.to_owned().into()));
        tracing::info!(tool = tool.unwrap_or(UNRESOLVED), call_id = %self.call.id, kind = "CANCELLED", trace_id = %TraceIdOf(self.cx.span().span_context()), "call failed: the caller went away");
        if self.telemetry.tracing() {
            let span = self.cx.span();
            if let Some(tool) = tool {
                span.update_name(["execute_tool ", tool].concat());
            }
            span.set_attribute(KeyValue::new("error.type", "CANCELLED"));
            span.set_status(Status::error("CANCELLED"));
            span.end();
        }
    }
}

impl Telemetry {
    /// Opens the call's span under the current context (the caller's trace, or a batch).
    pub fn start_call<'a>(&'a self, call: &'a ToolCall, ctx: &CallContext, door: Door) -> CallSpan<'a> {
        let cx = self.child(|| {
            let attributes = vec![
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
                KeyValue::new("gen_ai.tool.call.id", truncate(&call.id, MAX_ATTRIBUTE).to_owned()),
                KeyValue::new("gen_ai.tool.type", "function"),
                KeyValue::new("gen_ai.conversation.id", truncate(&ctx.session_id, MAX_ATTRIBUTE).to_owned()),
                KeyValue::new("toolgate.tenant", truncate(&ctx.tenant, MAX_ATTRIBUTE).to_owned()),
                KeyValue::new("toolgate.door", door.name()),
            ];
            ("execute_tool".into(), SpanKind::Internal, attributes)
        });
        let (tool, rule, checked_us) = (OnceLock::new(), OnceLock::new(), AtomicU64::new(0));
        CallSpan { telemetry: self, call, cx, tool, checked_us, rule, finished: false }
    }

    /// Closes the call's span with its outcome, records the call's metrics and logs a failure. A `resumed` call
    /// (a reviewed call asked for again) had its repairs and overrides counted when it first arrived.
    pub fn finish(&self, mut span: CallSpan<'_>, ctx: &CallContext, m: &ToolMessage, resumed: bool) {
        span.finished = true;
        let call = span.call;
        let tool = span.tool.get().map(Arc::as_ref);
        let label: Value = match tool {
            Some(tool) => Arc::clone(&tool.label).into(),
            None => UNRESOLVED.into(),
        };
        let rule = span.rule.get();
        self.metrics.record(label, m, !resumed, rule);
        let span_ref = span.cx.span();
        let trace_id = TraceIdOf(span_ref.span_context());
        let overrides = m.repairs.iter().filter(|r| r.rule == OVERRIDE_REMOVED).count();
        if overrides > 0 && !resumed {
            // A model writing a value the gateway injects is worth an operator's attention: it may be an attack.
            tracing::warn!(tool = %m.name, tenant = %ctx.tenant, user = %ctx.user_id, overrides, %trace_id, "injected parameters set by the model were removed");
        }
        match &m.error {
            // An unreachable backend's reason is the gateway's own text (a refused connection, a TLS failure and
            // its endpoint), never the model's or the tool's: the operator reads it in the log too.
            Some(error) if error.kind == ErrorKind::Unavailable => {
                tracing::info!(tool = %m.name, call_id = %call.id, kind = %kind_name(error.kind), reason = %error.message, duration_us = m.duration_us, %trace_id, "call failed");
            }
            Some(error) => {
                tracing::info!(tool = %m.name, call_id = %call.id, kind = %kind_name(error.kind), duration_us = m.duration_us, %trace_id, "call failed");
            }
            None => {
                tracing::debug!(tool = %m.name, call_id = %call.id, status = %status_name(m.status), duration_us = m.duration_us, %trace_id, "call");
            }
        }
        if let Some(recent) = &self.recent {
            let trace_id = trace_id.0.trace_id();
            recent.record(&super::recent::Answered {
                call,
                tenant: &ctx.tenant,
                user_id: &ctx.user_id,
                message: m,
                trace_id,
            });
        }
        if self.tracing() {
            self.close_call_span(&span, tool, m, overrides);
        }
    }

    fn close_call_span(
        &self,
        call_span: &CallSpan<'_>,
        tool: Option<&CompiledTool>,
        m: &ToolMessage,
        overrides: usize,
    ) {
        let (call, checked_us) = (call_span.call, call_span.checked_us.load(Ordering::Relaxed));
        let span = call_span.cx.span();
        if !span.is_recording() {
            return;
        }
        let tool_name: Value = match tool {
            Some(tool) => {
                span.update_name(["execute_tool ", &tool.spec.name].concat());
                Arc::clone(&tool.label).into()
            }
            None => truncate(&call.name, 128).to_owned().into(),
        };
        let mut rules: Vec<StringValue> = Vec::new();
        for repair in m.repairs.iter().filter(|r| r.rule != OVERRIDE_REMOVED) {
            if !rules.iter().any(|r| r.as_str() == repair.rule) {
                rules.push(repair.rule.clone().into());
            }
        }
        span.set_attributes([
            KeyValue::new("gen_ai.tool.name", tool_name),
            KeyValue::new("toolgate.status", status_name(m.status)),
            KeyValue::new("toolgate.repair.count", (m.repairs.len() - overrides) as i64),
            KeyValue::new("toolgate.repair.rules", Value::Array(rules.into())),
            KeyValue::new("toolgate.injection.overrides", overrides as i64),
            KeyValue::new("toolgate.attempts", i64::from(m.attempts)),
            KeyValue::new("toolgate.pipeline.duration_us", i64::try_from(checked_us).unwrap_or(i64::MAX)),
        ]);
        if let Some(rule) = call_span.rule.get() {
            span.set_attribute(KeyValue::new("toolgate.policy.rule", rule.to_string()));
        }
        if let Some(max) = self.payloads {
            let arguments = recorded_arguments(call, tool, m);
            span.set_attribute(KeyValue::new("gen_ai.tool.call.arguments", truncate(&arguments, max).to_owned()));
            span.set_attribute(KeyValue::new("gen_ai.tool.call.result", truncate(&m.content, max).to_owned()));
        }
        if let Some(error) = &m.error {
            span.set_attribute(KeyValue::new("error.type", kind_name(error.kind)));
            span.set_status(Status::error(kind_name(error.kind)));
        }
        span.end();
    }

    /// A client span for one attempt at the backend, under the current context.
    pub fn backend(&self, tool: &Arc<str>, backend: &'static str, attempt: u32) -> Context {
        self.child(|| {
            let attributes = vec![
                KeyValue::new("gen_ai.tool.name", Arc::clone(tool)),
                KeyValue::new("toolgate.backend", backend),
                KeyValue::new("toolgate.attempt", i64::from(attempt)),
            ];
            (["backend ", tool].concat().into(), SpanKind::Client, attributes)
        })
    }

    /// A span around the `i`-th of the `n` calls a packed parallel call was split into, under the call's span.
    pub fn part(&self, tool: &str, i: usize, n: usize) -> Context {
        self.child(|| {
            let attributes = vec![
                KeyValue::new("gen_ai.tool.name", tool.to_owned()),
                KeyValue::new("toolgate.part.index", i as i64),
                KeyValue::new("toolgate.part.count", n as i64),
            ];
            (["execute_tool_part ", tool].concat().into(), SpanKind::Internal, attributes)
        })
    }

    /// A span around the calls of one batch, which become its children.
    pub fn batch(&self, calls: usize) -> Context {
        self.child(|| {
            ("execute_tool_batch".into(), SpanKind::Internal, vec![KeyValue::new("toolgate.batch.size", calls as i64)])
        })
    }

    /// A span under the current context, described by `describe` only when spans are on; the current context
    /// itself when they are off.
    fn child(&self, describe: impl FnOnce() -> (Cow<'static, str>, SpanKind, Vec<KeyValue>)) -> Context {
        let parent = Context::current();
        if !self.tracing() {
            return parent;
        }
        let (name, kind, attributes) = describe();
        let span = self
            .tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        parent.with_span(span)
    }
}

impl Telemetry {
    /// A backend's progress report, as an event `progress` on the attempt's span `cx`.
    pub fn progress(&self, cx: &Context, progress: f64, total: Option<f64>, message: Option<&str>) {
        if !self.tracing() {
            return;
        }
        let mut attributes = vec![KeyValue::new("toolgate.progress", progress)];
        if let Some(total) = total {
            attributes.push(KeyValue::new("toolgate.progress.total", total));
        }
        if let Some(message) = message {
            attributes.push(KeyValue::new(
                "toolgate.progress.message",
                message[..message.floor_char_boundary(256)].to_owned(),
            ));
        }
        cx.span().add_event("progress", attributes);
    }

    /// Ends a span `backend` or `batch` opened, as an error when `error` names one. With spans off they
    /// opened none, and the caller's span is left alone.
    pub fn end(&self, cx: &Context, error: Option<&'static str>) {
        if !self.tracing() {
            return;
        }
        let span = cx.span();
        if let Some(kind) = error {
            span.set_attribute(KeyValue::new("error.type", kind));
            span.set_status(Status::error(kind));
        }
        span.end();
    }
}

/// The arguments a span may record: the model's part of what ran, or, for a call refused before that, what the
/// model sent with any value it wrote for an injected parameter removed.
fn recorded_arguments<'a>(call: &'a ToolCall, tool: Option<&CompiledTool>, m: &'a ToolMessage) -> Cow<'a, str> {
    if !m.effective_arguments.is_empty() {
        return Cow::Borrowed(&m.effective_arguments);
    }
    let Some(tool) = tool.filter(|t| !t.injections.is_empty()) else { return Cow::Borrowed(&call.arguments) };
    match serde_json::from_str::<serde_json::Value>(&call.arguments) {
        Ok(mut value) => {
            strip_overrides(tool, &mut value);
            Cow::Owned(value.to_string())
        }
        Err(_) => Cow::Borrowed("[withheld: the arguments are not strict JSON and the tool has injected parameters]"),
    }
}

/// A span context's trace id for a log line, written only if the line is: empty when there is no trace.
struct TraceIdOf<'a>(&'a opentelemetry::trace::SpanContext);

impl std::fmt::Display for TraceIdOf<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_valid() { write!(f, "{}", self.0.trace_id()) } else { Ok(()) }
    }
}

/// Which door a call came in through: the gRPC API (`Execute`, the clients) or the MCP front door.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Door {
    #[default]
    Grpc,
    Mcp,
}

impl Door {
    /// The value of the call span's `toolgate.door` attribute.
    pub fn name(self) -> &'static str {
        match self {
            Door::Grpc => "grpc",
            Door::Mcp => "mcp",
        }
    }
}
