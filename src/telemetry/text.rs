//! A text read for calls (`CallsFromText`): a span `read_text_calls` under the caller's context, and one count in
//! `toolgate.text_calls.reads`, both saying what was found or why nothing was taken.

use super::Telemetry;
use crate::pipeline::FromText;
use opentelemetry::trace::{Span, SpanKind, Status, Tracer};
use opentelemetry::{Context, KeyValue};
use std::time::{Duration, SystemTime};

/// What a reading of a text found, in the words its span and metric use.
pub struct TextRead<'a> {
    /// The format the text was read in (`auto`, or an envelope's name).
    pub format: &'static str,
    pub bytes: usize,
    pub found: &'a FromText,
    /// How long reading took, queueing for the CPU pool included.
    pub took: Duration,
}

impl TextRead<'_> {
    fn outcome(&self) -> &'static str {
        match (&self.found.refusal, self.found.calls.is_empty()) {
            (Some(_), _) => "refused",
            (None, true) => "none",
            (None, false) => "calls",
        }
    }
}

impl Telemetry {
    /// Records a text read: a span under the current context when spans are on (its attributes say the format,
    /// the envelope, how many calls and the refusal's reason), and the count by outcome and reason.
    pub fn text_read(&self, read: &TextRead<'_>) {
        let reason = read.found.refusal.as_ref().map_or("", |r| r.reason.name());
        self.metrics.text_read(read.format, read.outcome(), reason);
        if !self.tracing() {
            return;
        }
        let mut attributes = vec![
            KeyValue::new("toolgate.text_calls.format", read.format),
            KeyValue::new("toolgate.text_calls.outcome", read.outcome()),
            KeyValue::new("toolgate.text_calls.calls", read.found.calls.len() as i64),
            KeyValue::new("toolgate.text_calls.bytes", read.bytes as i64),
        ];
        if let Some(envelope) = read.found.envelope {
            attributes.push(KeyValue::new("toolgate.text_calls.envelope", envelope.name()));
        }
        if !reason.is_empty() {
            attributes.push(KeyValue::new("toolgate.text_calls.refusal", reason));
        }
        let parent = Context::current();
        let mut span = self
            .tracer
            .span_builder("read_text_calls")
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .with_start_time(SystemTime::now() - read.took)
            .start_with_context(&self.tracer, &parent);
        span.set_status(Status::Ok);
        span.end();
    }
}
