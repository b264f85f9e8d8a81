//! W3C trace context across process edges: read from a caller's gRPC metadata, written for a backend.

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tonic::metadata::MetadataMap;

/// The `traceparent` (and `tracestate`) headers that carry a span to a backend.
pub type TraceHeaders = Vec<(&'static str, String)>;

/// The caller's context from `traceparent`/`tracestate` metadata; an empty context when absent or malformed.
pub fn extract(metadata: &MetadataMap) -> Context {
    if !metadata.contains_key("traceparent") {
        return Context::new();
    }
    TraceContextPropagator::new().extract(&MetadataExtractor(metadata))
}

/// The headers that continue `cx`'s span in a backend; none when it has no valid span.
pub fn headers(cx: &Context) -> TraceHeaders {
    let mut headers = HeaderCollector(Vec::with_capacity(2));
    TraceContextPropagator::new().inject_context(cx, &mut headers);
    headers.0
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

struct HeaderCollector(TraceHeaders);

impl Injector for HeaderCollector {
    fn set(&mut self, key: &str, value: String) {
        // The propagator writes only these two, and an empty `tracestate` says nothing.
        if value.is_empty() {
            return;
        }
        let key = match key {
            "traceparent" => "traceparent",
            "tracestate" => "tracestate",
            _ => return,
        };
        self.0.push((key, value));
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
        assert_eq!(headers(&cx), vec![("traceparent", parent.to_owned())]);

        let mut bad = MetadataMap::new();
        bad.insert("traceparent", "00-zz-yy-01".parse().unwrap());
        assert!(!extract(&bad).span().span_context().is_valid());
        assert!(headers(&extract(&MetadataMap::new())).is_empty());
    }
}
