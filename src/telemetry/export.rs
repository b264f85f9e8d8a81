//! Where telemetry goes: OTLP/gRPC for spans and metrics, a Prometheus registry for scrapes, and the bounded span
//! queue that drops (and counts) rather than stall a call when the collector is slow or down.

use super::otlp::TraceExporter;
use super::settings::TelemetrySettings;
use opentelemetry::{Context, Key, KeyValue};
use opentelemetry_otlp::{WithExportConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter};
use opentelemetry_sdk::trace::{Span, SpanProcessor};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use std::time::{SystemTime, UNIX_EPOCH};
use tonic::transport::Channel;

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("telemetry: OTLP exporter for {endpoint}: {reason}")]
    Otlp { endpoint: String, reason: String },
    #[error("telemetry: Prometheus exporter: {0}")]
    Prometheus(String),
}

/// Spans waiting for export, and spans dropped: shared by the processor (which admits) and the exporter (which
/// settles).
#[derive(Debug, Default)]
pub struct SpanQueue {
    queued: AtomicUsize,
    capacity: usize,
    dropped: AtomicU64,
}

impl SpanQueue {
    pub fn new(capacity: usize) -> Self {
        Self { capacity, ..Self::default() }
    }

    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn admit(&self) -> bool {
        if self.queued.fetch_add(1, Ordering::Relaxed) >= self.capacity {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    fn settle(&self, spans: usize, exported: bool) {
        self.queued.fetch_sub(spans, Ordering::Relaxed);
        if !exported {
            self.dropped.fetch_add(spans as u64, Ordering::Relaxed);
        }
    }
}

/// `service.name`, `service.version`, and a `service.instance.id` unless `OTEL_RESOURCE_ATTRIBUTES` names one:
/// without it, the series of two gateways exporting to one collector would overwrite each other.
pub fn resource(settings: &TelemetrySettings) -> Resource {
    let builder = || {
        Resource::builder()
            .with_service_name(settings.service_name.clone())
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
    };
    let instance = Key::from_static_str("service.instance.id");
    let resource = builder().build();
    if resource.get(&instance).is_some() {
        return resource;
    }
    let started = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
    builder().with_attribute(KeyValue::new(instance, format!("{}-{:x}", std::process::id(), started))).build()
}

/// The tracer provider exporting on `collector` in batches through a queue of `max_queued_spans`.
pub fn tracer_provider(
    settings: &TelemetrySettings,
    collector: Channel,
    queue: Arc<SpanQueue>,
    resource: Resource,
) -> SdkTracerProvider {
    let endpoint = settings.otlp_endpoint.as_deref().unwrap_or_default();
    let exporter = TraceExporter::new(collector, endpoint, settings.export_timeout);
    let config = BatchConfigBuilder::default()
        .with_max_queue_size(settings.max_queued_spans)
        .with_scheduled_delay(settings.export_interval)
        .build();
    let exporter = CountingExporter { inner: exporter, queue: Arc::clone(&queue) };
    let batch = BatchSpanProcessor::builder(exporter).with_batch_config(config).build();
    SdkTracerProvider::builder()
        .with_resource(resource)
        .with_span_processor(BoundedProcessor { inner: batch, queue })
        .build()
}

/// The meter provider with a periodic OTLP reader on `collector` and, when configured, a Prometheus reader on
/// `registry`.
pub fn meter_provider(
    settings: &TelemetrySettings,
    collector: Option<Channel>,
    registry: Option<&prometheus::Registry>,
    resource: Resource,
) -> Result<SdkMeterProvider, ExportError> {
    let mut builder = SdkMeterProvider::builder().with_resource(resource);
    if let Some(channel) = collector {
        let endpoint = settings.otlp_endpoint.clone().unwrap_or_default();
        // The channel's own timeout is the export timeout, as the SDK asks of a channel given to it.
        let exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_tonic()
            .with_channel(channel)
            .with_timeout(settings.export_timeout)
            .build()
            .map_err(|e| ExportError::Otlp { endpoint, reason: e.to_string() })?;
        builder =
            builder.with_reader(PeriodicReader::builder(exporter).with_interval(settings.export_interval).build());
    }
    if let Some(registry) = registry {
        let reader = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .without_target_info()
            .scope_info_enabled(false)
            .build()
            .map_err(|e| ExportError::Prometheus(e.to_string()))?;
        builder = builder.with_reader(reader);
    }
    Ok(builder.build())
}

/// Admits a span to the batch processor only while the queue has room; never blocks.
#[derive(Debug)]
struct BoundedProcessor {
    inner: BatchSpanProcessor,
    queue: Arc<SpanQueue>,
}

impl SpanProcessor for BoundedProcessor {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if self.queue.admit() {
            self.inner.on_end(span);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// Settles each exported batch in the queue, counting the spans of a failed export as dropped.
#[derive(Debug)]
struct CountingExporter<E> {
    inner: E,
    queue: Arc<SpanQueue>,
}

impl<E: SpanExporter> SpanExporter for CountingExporter<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        self.queue.settle(spans, result.is_ok());
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_and_counts_and_a_failed_export_counts_its_spans() {
        let queue = SpanQueue::new(2);
        assert!(queue.admit() && queue.admit());
        assert!(!queue.admit(), "the third span finds the queue full");
        assert_eq!(queue.dropped(), 1);
        queue.settle(2, false);
        assert_eq!(queue.dropped(), 3);
        assert!(queue.admit(), "settled spans free their room");
        queue.settle(1, true);
        assert_eq!((queue.dropped(), queue.queued.load(Ordering::Relaxed)), (3, 0));
    }
}
