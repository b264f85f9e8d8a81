//! OTLP's protobuf encoding of a span batch (`ExportTraceServiceRequest`), written straight from the SDK's
//! `SpanData`: no intermediate message structs, and each nested message's length worked out once, where prost
//! recomputes it at every level above.
//!
//! Fields are written by [`super::protobuf`]'s writers: empty and zero ones left out, as proto3 encoders do, and a
//! nested message in place after a one-byte length, moved up when its length needs more. The tests hold the bytes
//! to prost's encoding of `opentelemetry-proto`'s types.

use super::protobuf::{bytes, fixed32, fixed64, len_delimited, nested, string, uint};
use opentelemetry::trace::{SpanId, SpanKind, Status};
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use prost::encoding::{WireType, encode_key, encode_varint};
use std::time::{SystemTime, UNIX_EPOCH};

/// `SpanFlags`: the span's context says whether its parent is remote, and whether it is.
const HAS_IS_REMOTE: u32 = 0x100;
const IS_REMOTE: u32 = 0x200;

/// The parts of every request that do not change: the resource, encoded once.
#[derive(Debug, Clone, Default)]
pub struct Preamble {
    /// The `Resource` message's fields.
    resource: Vec<u8>,
    schema_url: String,
}

impl Preamble {
    pub fn new(resource: &Resource) -> Self {
        let mut fields = Vec::new();
        for (key, value) in resource.iter() {
            nested(&mut fields, 1, |buf| key_value(buf, key.as_str(), value));
        }
        Self { resource: fields, schema_url: resource.schema_url().unwrap_or_default().to_owned() }
    }
}

/// `spans` as one `ExportTraceServiceRequest`: one `ResourceSpans`, and in it one `ScopeSpans` per
/// instrumentation scope, in the order the scopes first appear.
pub fn export_request(preamble: &Preamble, spans: &[SpanData]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(64 + spans.len() * 768);
    nested(&mut buf, 1, |buf| {
        nested(buf, 1, |buf| buf.extend_from_slice(&preamble.resource));
        let mut scopes: Vec<&InstrumentationScope> = Vec::new();
        for span in spans {
            if !scopes.contains(&&span.instrumentation_scope) {
                scopes.push(&span.instrumentation_scope);
            }
        }
        for scope in scopes {
            nested(buf, 2, |buf| scope_spans(buf, scope, spans));
        }
        string(buf, 3, &preamble.schema_url);
    });
    buf
}

fn scope_spans(buf: &mut Vec<u8>, scope: &InstrumentationScope, spans: &[SpanData]) {
    nested(buf, 1, |buf| {
        string(buf, 1, scope.name());
        string(buf, 2, scope.version().unwrap_or_default());
        attributes(buf, 3, scope.attributes());
    });
    for span in spans.iter().filter(|span| span.instrumentation_scope == *scope) {
        nested(buf, 2, |buf| encode_span(buf, span));
    }
    string(buf, 3, scope.schema_url().unwrap_or_default());
}

fn encode_span(buf: &mut Vec<u8>, span: &SpanData) {
    let cx = &span.span_context;
    bytes(buf, 1, &cx.trace_id().to_bytes());
    bytes(buf, 2, &cx.span_id().to_bytes());
    string(buf, 3, &cx.trace_state().header());
    if span.parent_span_id != SpanId::INVALID {
        bytes(buf, 4, &span.parent_span_id.to_bytes());
    }
    string(buf, 5, &span.name);
    uint(buf, 6, kind(&span.span_kind));
    fixed64(buf, 7, nanos(span.start_time));
    fixed64(buf, 8, nanos(span.end_time));
    attributes(buf, 9, &span.attributes);
    uint(buf, 10, u64::from(span.dropped_attributes_count));
    events(buf, &span.events);
    links(buf, &span.links);
    nested(buf, 15, |buf| {
        if let Status::Error { description } = &span.status {
            string(buf, 2, description);
        }
        uint(buf, 3, status_code(&span.status));
    });
    let remote = if span.parent_span_is_remote { IS_REMOTE } else { 0 };
    fixed32(buf, 16, u32::from(cx.trace_flags().to_u8()) | HAS_IS_REMOTE | remote);
}

fn events(buf: &mut Vec<u8>, events: &SpanEvents) {
    for event in events.iter() {
        nested(buf, 11, |buf| {
            fixed64(buf, 1, nanos(event.timestamp));
            string(buf, 2, &event.name);
            attributes(buf, 3, &event.attributes);
            uint(buf, 4, u64::from(event.dropped_attributes_count));
        });
    }
    uint(buf, 12, u64::from(events.dropped_count));
}

fn links(buf: &mut Vec<u8>, links: &SpanLinks) {
    for link in links.iter() {
        let cx = &link.span_context;
        nested(buf, 13, |buf| {
            bytes(buf, 1, &cx.trace_id().to_bytes());
            bytes(buf, 2, &cx.span_id().to_bytes());
            string(buf, 3, &cx.trace_state().header());
            attributes(buf, 4, &link.attributes);
            uint(buf, 5, u64::from(link.dropped_attributes_count));
            let remote = if cx.is_remote() { IS_REMOTE } else { 0 };
            fixed32(buf, 6, u32::from(cx.trace_flags().to_u8()) | HAS_IS_REMOTE | remote);
        });
    }
    uint(buf, 14, u64::from(links.dropped_count));
}

fn kind(kind: &SpanKind) -> u64 {
    match kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

fn status_code(status: &Status) -> u64 {
    match status {
        Status::Unset => 0,
        Status::Ok => 1,
        Status::Error { .. } => 2,
    }
}

fn nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn attributes<'a>(buf: &mut Vec<u8>, field: u32, attributes: impl IntoIterator<Item = &'a KeyValue>) {
    for kv in attributes {
        nested(buf, field, |buf| key_value(buf, kv.key.as_str(), &kv.value));
    }
}

fn key_value(buf: &mut Vec<u8>, key: &str, value: &Value) {
    string(buf, 1, key);
    nested(buf, 2, |buf| any_value(buf, value));
}

/// An `AnyValue`: its one field is written even when it holds the default, as a set oneof is.
fn any_value(buf: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Bool(b) => {
            encode_key(2, WireType::Varint, buf);
            encode_varint(u64::from(*b), buf);
        }
        Value::I64(i) => {
            encode_key(3, WireType::Varint, buf);
            encode_varint(*i as u64, buf);
        }
        Value::F64(f) => {
            encode_key(4, WireType::SixtyFourBit, buf);
            buf.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Value::String(s) => len_delimited(buf, 1, s.as_str().as_bytes()),
        Value::Array(array) => nested(buf, 5, |buf| array_values(buf, array)),
        // A kind of value newer than this encoder: sent as its text rather than lost.
        other => len_delimited(buf, 1, other.as_str().as_bytes()),
    }
}

fn array_values(buf: &mut Vec<u8>, array: &Array) {
    let mut each = |value: Value| nested(buf, 1, |buf| any_value(buf, &value));
    match array {
        Array::Bool(values) => values.iter().for_each(|v| each(Value::Bool(*v))),
        Array::I64(values) => values.iter().for_each(|v| each(Value::I64(*v))),
        Array::F64(values) => values.iter().for_each(|v| each(Value::F64(*v))),
        Array::String(values) => values.iter().for_each(|v| each(Value::String(v.clone()))),
        other => each(Value::String(other.to_string().into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::StringValue;
    use opentelemetry::trace::{Event, Link, SpanContext, TraceFlags, TraceId, TraceState};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    use opentelemetry_sdk::trace::{SpanEvents, SpanLinks};
    use prost::Message;
    use std::time::Duration;

    fn context(trace: u128, span: u64, remote: bool) -> SpanContext {
        let state = TraceState::from_key_value([("vendor", "opaque")]).unwrap();
        SpanContext::new(TraceId::from(trace), SpanId::from(span), TraceFlags::SAMPLED, remote, state)
    }

    fn every_value() -> Vec<KeyValue> {
        vec![
            KeyValue::new("text", "forecast"),
            KeyValue::new("empty", ""),
            KeyValue::new("int", -7_i64),
            KeyValue::new("zero", 0_i64),
            KeyValue::new("float", 2.5),
            KeyValue::new("flag", true),
            KeyValue::new("off", false),
            KeyValue::new("texts", Value::Array(vec![StringValue::from("a"), StringValue::from("")].into())),
            KeyValue::new("none", Value::Array(Vec::<StringValue>::new().into())),
            KeyValue::new("ints", Value::Array(vec![1_i64, -2].into())),
            KeyValue::new("floats", Value::Array(vec![0.5, 0.0].into())),
            KeyValue::new("flags", Value::Array(vec![true, false].into())),
            // Long enough that its own length, and every length above it, takes more than one byte.
            KeyValue::new("long", "x".repeat(20_000)),
        ]
    }

    fn span(scope: &InstrumentationScope, n: u64, status: Status, remote_parent: bool) -> SpanData {
        let start = UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789 + n);
        let parent = if n.is_multiple_of(2) { SpanId::INVALID } else { SpanId::from(n + 100) };
        let mut events = SpanEvents::default();
        events.events.push(Event::new("retry", start, vec![KeyValue::new("attempt", 2_i64)], 1));
        events.dropped_count = 3;
        let mut links = SpanLinks::default();
        links.links.push(Link::new(context(5, 6, true), vec![KeyValue::new("k", "v")], 2));
        links.dropped_count = 4;
        SpanData {
            span_context: context(u128::from(n) << 64 | 9, n + 1, false),
            parent_span_id: parent,
            parent_span_is_remote: remote_parent,
            span_kind: [SpanKind::Internal, SpanKind::Client, SpanKind::Server, SpanKind::Producer][n as usize % 4]
                .clone(),
            name: format!("execute_tool t{n}").into(),
            start_time: start,
            end_time: start + Duration::from_micros(250),
            attributes: every_value(),
            dropped_attributes_count: n as u32,
            events,
            links,
            status,
            instrumentation_scope: scope.clone(),
        }
    }

    #[test]
    fn a_batch_decodes_to_what_the_sdk_exporter_would_have_sent() {
        let resource = Resource::builder()
            .with_service_name("toolgate")
            .with_schema_url([KeyValue::new("service.instance.id", "1-a")], "https://opentelemetry.io/schemas/1.2.0")
            .build();
        let ours = InstrumentationScope::builder("toolgate").build();
        let other = InstrumentationScope::builder("other")
            .with_version("1.0")
            .with_schema_url("https://example.com/s")
            .with_attributes([KeyValue::new("scope.attr", 1_i64)])
            .build();
        let error = Status::error("TOOL_ERROR");
        let spans = vec![
            span(&ours, 0, Status::Unset, false),
            span(&other, 1, Status::Ok, true),
            span(&ours, 2, error, false),
            span(&other, 3, Status::error(""), false),
            span(&ours, 5, Status::Unset, true),
        ];
        let expected = ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(
                spans.clone(),
                &ResourceAttributesWithSchema::from(&resource),
            ),
        };
        let bytes = export_request(&Preamble::new(&resource), &spans);
        let decoded = ExportTraceServiceRequest::decode(bytes.as_slice()).expect("our encoding decodes");
        assert_eq!(decoded, expected);
        assert_eq!(
            bytes.len(),
            expected.encoded_len(),
            "the same size as prost's encoding: nothing extra, nothing left out"
        );
        assert_eq!(bytes, expected.encode_to_vec(), "byte for byte what prost encodes");
    }

    #[test]
    fn an_empty_batch_is_a_request_with_the_resource_alone() {
        let resource = Resource::builder_empty().with_attribute(KeyValue::new("service.name", "t")).build();
        let decoded =
            ExportTraceServiceRequest::decode(export_request(&Preamble::new(&resource), &[]).as_slice()).unwrap();
        let expected = group_spans_by_resource_and_scope(Vec::new(), &ResourceAttributesWithSchema::from(&resource));
        assert_eq!(decoded.resource_spans, expected);
    }
}
