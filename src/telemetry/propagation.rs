//! W3C trace context across process edges: read from a caller's gRPC metadata, written for a backend.

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TraceFlags};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tonic::metadata::MetadataMap;

/// The `traceparent` (and `tracestate`) headers that carry a span to a backend, read as a slice: held in place,
/// where a list of them was allocated on every call.
#[derive(Debug, Default)]
pub struct TraceHeaders {
    headers: [(&'static str, String); 2],
    len: usize,
}

impl TraceHeaders {
    fn push(&mut self, name: &'static str, value: String) {
        self.headers[self.len] = (name, value);
        self.len += 1;
    }
}

impl std::ops::Deref for TraceHeaders {
    type Target = [(&'static str, String)];

    fn deref(&self) -> &Self::Target {
        &self.headers[..self.len]
    }
}

/// The caller's context from `traceparent`/`tracestate` metadata; an empty context when absent or malformed.
pub fn extract(metadata: &MetadataMap) -> Context {
    if !metadata.contains_key("traceparent") {
        return Context::new();
    }
    TraceContextPropagator::new().extract(&MetadataExtractor(metadata))
}

/// The headers that continue `cx`'s span in a backend, as `TraceContextPropagator` writes them; none when it has
/// no valid span. `traceparent` is written here, byte by byte, rather than through `format!`: it is new on every
/// call.
pub fn headers(cx: &Context) -> TraceHeaders {
    let span = cx.span();
    let context = span.span_context();
    let mut headers = TraceHeaders::default();
    if !context.is_valid() {
        return headers;
    }
    let mut traceparent = String::with_capacity(55);
    traceparent.push_str("00-");
    push_hex(&mut traceparent, &context.trace_id().to_bytes());
    traceparent.push('-');
    push_hex(&mut traceparent, &context.span_id().to_bytes());
    traceparent.push('-');
    push_hex(&mut traceparent, &[(context.trace_flags() & TraceFlags::SAMPLED).to_u8()]);
    headers.push("traceparent", traceparent);
    let state = context.trace_state().header();
    if !state.is_empty() {
        headers.push("tracestate", state);
    }
    headers
}

fn push_hex(text: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
}

struct MetadataExtractor<'a>(&'a MetadataMap);

impl Extractor for MetadataExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0
            .keys()
            .filter_map(|k| match k {
                tonic::metadata::KeyRef::Ascii(k) => Some(k.as_str()),
                tonic::metadata::KeyRef::Binary(_) => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TraceContextExt;

    #[test]
    fn a_traceparent_round_trips_and_garbage_is_ignored() {
        let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let mut metadata = MetadataMap::new();
        metadata.insert("traceparent", parent.parse().unwrap());
        let cx = extract(&metadata);
        assert_eq!(cx.span().span_context().trace_id().to_string(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(*headers(&cx), [("traceparent", parent.to_owned())]);

        for (flags, state) in [("00", ""), ("01", "vendor=x,other=y")] {
            let mut metadata = MetadataMap::new();
            metadata.insert(
                "traceparent",
                format!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-{flags}").parse().unwrap(),
            );
            if !state.is_empty() {
                metadata.insert("tracestate", state.parse().unwrap());
            }
            let cx = extract(&metadata);
            let mut sdk = std::collections::HashMap::new();
            TraceContextPropagator::new().inject_context(&cx, &mut sdk);
            sdk.retain(|_, v: &mut String| !v.is_empty());
            let ours: std::collections::HashMap<String, String> =
                headers(&cx).iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
            assert_eq!(ours, sdk, "as the SDK's propagator writes them");
        }

        let mut bad = MetadataMap::new();
        bad.insert("traceparent", "00-zz-yy-01".parse().unwrap());
        assert!(!extract(&bad).span().span_context().is_valid());
        assert!(headers(&extract(&MetadataMap::new())).is_empty());
    }
}
