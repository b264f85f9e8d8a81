//! OpenTelemetry for the call path: spans per call and stage, metrics with bounded labels, trace context in and
//! out, and the exporters (OTLP/gRPC, Prometheus). Nothing here decides a call's outcome.

mod context;
mod export;
mod metrics;
mod otlp;
pub mod propagation;
pub mod recent;
mod settings;
mod span;
mod text;

pub use context::{InContext, in_context};
pub use export::ExportError;
pub use metrics::{UNRESOLVED, kind_name, status_name};
pub use settings::{RawTelemetry, TelemetrySettings};
pub use span::{CallSpan, Door};
pub use text::TextRead;

use crate::tls::ClientTls;
use export::SpanQueue;
use metrics::Metrics;
use opentelemetry::global::BoxedTracer;
use opentelemetry::metrics::MeterProvider;
use opentelemetry::trace::TracerProvider;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::sync::Arc;
use std::time::Duration;

/// How long the SDK's periodic metric reader waits for its last export, whatever timeout it is given.
const METRICS_FLUSH: Duration = Duration::from_secs(5);

/// Readings the gateway's gauges report when metrics are collected.
pub struct Gauges {
    pub registered_tools: Box<dyn Fn() -> u64 + Send + Sync>,
    pub pending_reviews: Box<dyn Fn() -> u64 + Send + Sync>,
    /// Cluster mode only: 1 while Redis is unavailable and the gateway serves from its snapshot, else 0.
    pub cluster_degraded: Option<Box<dyn Fn() -> u64 + Send + Sync>>,
}

/// The gateway's telemetry. Without an OTLP endpoint no span is built (the caller's trace context still reaches
/// backends); without any exporter the instruments are no-ops.
pub struct Telemetry {
    tracer: BoxedTracer,
    metrics: Metrics,
    /// `Some(max bytes)` when arguments and results are recorded on spans.
    payloads: Option<usize>,
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: SdkMeterProvider,
    prometheus: Option<prometheus::Registry>,
    /// The console's memory of calls, when the console is on.
    recent: Option<Arc<recent::Recent>>,
}

impl Telemetry {
    /// Builds the exporters `settings` asks for, reaching an `https://` collector with `tls`. Must run inside the
    /// Tokio runtime (the OTLP client lives there).
    pub fn new(settings: &TelemetrySettings, gauges: Gauges, tls: &Arc<ClientTls>) -> Result<Self, ExportError> {
        let queue = Arc::new(SpanQueue::new(settings.max_queued_spans));
        let resource = export::resource(settings);
        let collector = match &settings.otlp_endpoint {
            Some(endpoint) => Some(
                crate::wire::channel::lazy(endpoint, Some(settings.export_timeout), tls)
                    .map_err(|reason| ExportError::Otlp { endpoint: endpoint.clone(), reason })?,
            ),
            None => None,
        };
        let tracer_provider = collector
            .clone()
            .map(|channel| export::tracer_provider(settings, channel, Arc::clone(&queue), resource.clone()));
        let prometheus = settings.prometheus_listen.map(|_| prometheus::Registry::new());
        let meter_provider = export::meter_provider(settings, collector, prometheus.as_ref(), resource)?;
        let meter = meter_provider.meter("toolgate");
        // Without a reader the SDK refuses observable instruments, logging an ERROR for each at every start.
        if settings.otlp_endpoint.is_some() || prometheus.is_some() {
            observe(&meter, gauges, queue);
        }
        let tracer = match &tracer_provider {
            Some(provider) => BoxedTracer::new(Box::new(provider.tracer("toolgate"))),
            None => BoxedTracer::new(Box::new(opentelemetry::trace::noop::NoopTracer::new())),
        };
        Ok(Self {
            tracer,
            metrics: Metrics::new(&meter),
            payloads: settings.record_payloads,
            tracer_provider,
            meter_provider,
            prometheus,
            recent: None,
        })
    }

    /// Keeps the last `capacity` calls, and an hour of counts per tool, for the console.
    pub fn keep_recent(&mut self, capacity: usize) {
        self.recent = Some(Arc::new(recent::Recent::new(capacity)));
    }

    /// The console's memory of calls, when `keep_recent` turned it on.
    pub fn recent(&self) -> Option<&Arc<recent::Recent>> {
        self.recent.as_ref()
    }

    /// Whether spans are built at all: only with an OTLP endpoint to send them to.
    pub fn tracing(&self) -> bool {
        self.tracer_provider.is_some()
    }

    /// A call admitted without its cluster-wide check because Redis was unavailable (`what`: rate or budget).
    pub fn fail_open(&self, tool: &str, what: &'static str) {
        self.metrics.fail_open(tool, what);
    }

    /// A data-plane request refused by overload shedding (`method`: `Execute` or `ExecuteBatch`).
    pub fn shed(&self, method: &'static str) {
        self.metrics.shed(method);
    }

    /// The registry the Prometheus endpoint serves, when one is configured.
    pub fn prometheus(&self) -> Option<&prometheus::Registry> {
        self.prometheus.as_ref()
    }

    /// Sends what is still queued, giving the collector at most about `timeout` (the SDK's metric reader takes up
    /// to 5 s whatever it is given, so the wait is bounded by the larger of the two).
    pub async fn shutdown(&self, timeout: Duration) {
        // Both block their thread until the exporters finish or give up, so they run side by side off the runtime.
        let spans = self.tracer_provider.clone().map(|provider| {
            tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(timeout).map_err(|e| e.to_string()))
        });
        let meter = self.meter_provider.clone();
        let metrics =
            tokio::task::spawn_blocking(move || meter.shutdown_with_timeout(timeout).map_err(|e| e.to_string()));
        let flushed = async {
            if let Some(task) = spans
                && let Ok(Err(err)) = task.await
            {
                tracing::warn!(error = %err, "flushing spans at shutdown failed; they are lost");
            }
            if let Ok(Err(err)) = metrics.await {
                tracing::debug!(error = %err, "flushing metrics at shutdown failed");
            }
        };
        if tokio::time::timeout(timeout.max(METRICS_FLUSH) + Duration::from_secs(1), flushed).await.is_err() {
            tracing::warn!("telemetry did not flush in time at shutdown; the rest is dropped");
        }
    }
}

/// Registers the gauges, read at each collection.
fn observe(meter: &opentelemetry::metrics::Meter, gauges: Gauges, queue: Arc<SpanQueue>) {
    let Gauges { registered_tools, pending_reviews, cluster_degraded } = gauges;
    if let Some(degraded) = cluster_degraded {
        meter
            .u64_observable_gauge("toolgate.cluster.degraded")
            .with_description(
                "1 while Redis is unavailable: calls are served from the last snapshot, registrations fail",
            )
            .with_callback(move |observer| observer.observe(degraded(), &[]))
            .build();
    }
    meter
        .u64_observable_gauge("toolgate.registry.tools")
        .with_description("Registered tools, across tenants")
        .with_callback(move |observer| observer.observe(registered_tools(), &[]))
        .build();
    meter
        .u64_observable_gauge("toolgate.review.pending")
        .with_description("Calls waiting for a person's decision")
        .with_callback(move |observer| observer.observe(pending_reviews(), &[]))
        .build();
    meter
        .u64_observable_counter("toolgate.telemetry.spans_dropped")
        .with_description("Spans dropped because the collector was slow or unreachable")
        .with_callback(move |observer| observer.observe(queue.dropped(), &[]))
        .build();
}

/// At most `max` bytes of `text`, cut at a character boundary.
pub(super) fn truncate(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}
