//! A real OTLP/gRPC collector for tests (TraceService + MetricsService from `opentelemetry-proto`, on 127.0.0.1:0)
//! that flattens what it receives into `SpanRecord`s and `Point`s, and a `BlackHole` that accepts and never answers.

use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{ExportMetricsServiceRequest, ExportMetricsServiceResponse};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use opentelemetry_proto::tonic::resource::v1::Resource;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};
use toolgate::telemetry::{RawTelemetry, TelemetrySettings};

/// How often the `wait_for_*` helpers look again.
const POLL: Duration = Duration::from_millis(10);

/// An attribute value as sent on the wire (bytes are hex, key-value lists their debug form).
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Str(String),
    Int(i64),
    Double(f64),
    Bool(bool),
    Array(Vec<AttrValue>),
}

impl AttrValue {
    pub fn as_str(&self) -> Option<&str> {
        if let AttrValue::Str(s) = self { Some(s) } else { None }
    }
    pub fn as_int(&self) -> Option<i64> {
        if let AttrValue::Int(i) = self { Some(*i) } else { None }
    }
    pub fn as_array(&self) -> Option<&[AttrValue]> {
        if let AttrValue::Array(items) = self { Some(items) } else { None }
    }
}

impl std::fmt::Display for AttrValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AttrValue::Str(s) => f.write_str(s),
            AttrValue::Int(i) => write!(f, "{i}"),
            AttrValue::Double(d) => write!(f, "{d}"),
            AttrValue::Bool(b) => write!(f, "{b}"),
            AttrValue::Array(items) => {
                write!(f, "[{}]", items.iter().map(ToString::to_string).collect::<Vec<_>>().join(","))
            }
        }
    }
}

/// One received span, flattened out of its resource and scope.
#[derive(Debug, Clone)]
pub struct SpanRecord {
    pub name: String,
    /// Lowercase hex.
    pub trace_id: String,
    pub span_id: String,
    /// `""` for a root span.
    pub parent_span_id: String,
    /// Proto `SpanKind`: 1 internal, 2 server, 3 client, 4 producer, 5 consumer.
    pub kind: i32,
    /// Proto `StatusCode`: 0 unset, 1 ok, 2 error.
    pub status_code: i32,
    pub attributes: BTreeMap<String, AttrValue>,
    /// The resource's `service.name`, `""` when absent.
    pub service_name: String,
    /// The span's events, by name, with their attributes, in order.
    pub events: Vec<(String, BTreeMap<String, AttrValue>)>,
}

/// How many of `spans` have a name that starts with `prefix`.
pub fn count(spans: &[SpanRecord], prefix: &str) -> usize {
    spans.iter().filter(|s| s.name.starts_with(prefix)).count()
}

impl SpanRecord {
    pub fn attr(&self, key: &str) -> Option<&AttrValue> {
        self.attributes.get(key)
    }
    pub fn str_attr(&self, key: &str) -> Option<&str> {
        self.attr(key).and_then(AttrValue::as_str)
    }
    pub fn int_attr(&self, key: &str) -> Option<i64> {
        self.attr(key).and_then(AttrValue::as_int)
    }
}

/// One data point of a metric.
#[derive(Debug, Clone)]
pub struct Point {
    /// Attribute values stringified (see `AttrValue`'s `Display`).
    pub attributes: BTreeMap<String, String>,
    /// The sum or gauge value, or a histogram's count.
    pub value: f64,
}

impl Point {
    pub fn has(&self, key: &str, value: &str) -> bool {
        self.attributes.get(key).is_some_and(|v| v == value)
    }
}

#[derive(Default)]
struct Received {
    spans: Vec<SpanRecord>,
    /// Metric name -> its points in the latest export that contained it.
    points: HashMap<String, Vec<Point>>,
}

#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Received>>);

/// An in-process OTLP/gRPC collector; the server task is aborted on drop.
pub struct Collector {
    /// `http://127.0.0.1:PORT`, for `with_endpoint`.
    pub endpoint: String,
    sink: Sink,
    task: JoinHandle<()>,
}

impl Collector {
    pub async fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind collector");
        let addr = listener.local_addr().expect("collector addr");
        Self::serve(format!("http://{addr}"), TcpIncoming::from(listener).with_nodelay(Some(true)))
    }

    /// A collector on connections `incoming` accepts (TLS ones, say), reached at `endpoint`.
    pub fn serve<S, IO, E>(endpoint: String, incoming: S) -> Collector
    where
        S: tokio_stream::Stream<Item = Result<IO, E>> + Send + 'static,
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + tonic::transport::server::Connected + Unpin + Send + 'static,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let sink = Sink::default();
        let server = tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(sink.clone()))
            .add_service(MetricsServiceServer::new(sink.clone()));
        let task = tokio::spawn(async move {
            let _ = server.serve_with_incoming(incoming).await;
        });
        Collector { endpoint, sink, task }
    }

    /// Telemetry settings that export to this collector every 100 ms.
    pub fn settings(&self) -> TelemetrySettings {
        let raw = RawTelemetry {
            otlp_endpoint: Some(self.endpoint.clone()),
            export_interval_ms: Some(100),
            ..RawTelemetry::default()
        };
        TelemetrySettings::from_raw(raw, None).expect("settings for the collector")
    }

    /// Every span received so far, in arrival order.
    pub fn spans(&self) -> Vec<SpanRecord> {
        self.sink.0.lock().unwrap().spans.clone()
    }

    /// Polls until `pred` holds for the spans received; panics with their names after `timeout`.
    pub async fn wait_for_spans(&self, pred: impl Fn(&[SpanRecord]) -> bool, timeout: Duration) -> Vec<SpanRecord> {
        poll(|| self.spans(), pred, timeout).await.unwrap_or_else(|spans| {
            let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
            panic!("spans not as expected after {timeout:?}; {} seen: {names:?}", spans.len())
        })
    }

    /// The points of `metric` in the latest export that contained it (exports are cumulative); empty if none.
    pub fn points(&self, metric: &str) -> Vec<Point> {
        self.sink.0.lock().unwrap().points.get(metric).cloned().unwrap_or_default()
    }

    /// Names of every metric received so far, sorted.
    pub fn metric_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.sink.0.lock().unwrap().points.keys().cloned().collect();
        names.sort();
        names
    }

    /// Polls until `pred` holds for the latest points of `metric`; panics with what was seen after `timeout`.
    pub async fn wait_for_points(
        &self,
        metric: &str,
        pred: impl Fn(&[Point]) -> bool,
        timeout: Duration,
    ) -> Vec<Point> {
        poll(|| self.points(metric), pred, timeout).await.unwrap_or_else(|points| {
            let seen = self.metric_names();
            panic!("points of {metric:?} not as expected after {timeout:?}: {points:#?}\nmetrics seen: {seen:?}")
        })
    }
}

/// Polls `get` until `pred` holds (`Ok`) or `timeout` passes (`Err` with the last value). Wall-clock deadline, so
/// it also works under a paused tokio clock.
async fn poll<T>(get: impl Fn() -> Vec<T>, pred: impl Fn(&[T]) -> bool, timeout: Duration) -> Result<Vec<T>, Vec<T>> {
    let deadline = Instant::now() + timeout;
    loop {
        let got = get();
        if pred(&got) {
            return Ok(got);
        }
        if Instant::now() >= deadline {
            return Err(got);
        }
        tokio::time::sleep(POLL).await;
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tonic::async_trait]
impl TraceService for Sink {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let mut flat = Vec::new();
        for rs in request.into_inner().resource_spans {
            let service_name = service_name(rs.resource.as_ref());
            for ss in rs.scope_spans {
                for span in ss.spans {
                    flat.push(SpanRecord {
                        name: span.name,
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_span_id: hex(&span.parent_span_id),
                        kind: span.kind,
                        status_code: span.status.unwrap_or_default().code,
                        attributes: attributes(&span.attributes),
                        service_name: service_name.clone(),
                        events: span.events.iter().map(|e| (e.name.clone(), attributes(&e.attributes))).collect(),
                    });
                }
            }
        }
        // An export the gateway timed out on but we received is sent again: keep each span once.
        let mut received = self.0.lock().unwrap();
        flat.retain(|s| !received.spans.iter().any(|seen| seen.span_id == s.span_id));
        received.spans.extend(flat);
        Ok(Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Sink {
    async fn export(
        &self,
        request: Request<ExportMetricsServiceRequest>,
    ) -> Result<Response<ExportMetricsServiceResponse>, Status> {
        let mut latest: HashMap<String, Vec<Point>> = HashMap::new();
        for rm in request.into_inner().resource_metrics {
            for sm in rm.scope_metrics {
                for m in sm.metrics {
                    latest.entry(m.name).or_default().extend(points_of(m.data));
                }
            }
        }
        self.0.lock().unwrap().points.extend(latest);
        Ok(Response::new(ExportMetricsServiceResponse::default()))
    }
}

fn points_of(data: Option<metric::Data>) -> Vec<Point> {
    let number = |attrs: &[KeyValue], value: Option<number_data_point::Value>| Point {
        attributes: string_attributes(attrs),
        value: match value {
            Some(number_data_point::Value::AsInt(i)) => i as f64,
            Some(number_data_point::Value::AsDouble(d)) => d,
            None => f64::NAN,
        },
    };
    let histogram =
        |attrs: &[KeyValue], count: u64| Point { attributes: string_attributes(attrs), value: count as f64 };
    match data {
        Some(metric::Data::Sum(s)) => s.data_points.iter().map(|p| number(&p.attributes, p.value)).collect(),
        Some(metric::Data::Gauge(g)) => g.data_points.iter().map(|p| number(&p.attributes, p.value)).collect(),
        Some(metric::Data::Histogram(h)) => h.data_points.iter().map(|p| histogram(&p.attributes, p.count)).collect(),
        Some(metric::Data::ExponentialHistogram(h)) => {
            h.data_points.iter().map(|p| histogram(&p.attributes, p.count)).collect()
        }
        Some(metric::Data::Summary(_)) | None => Vec::new(),
    }
}

/// Lowercase hex of an id; `""` for an empty one.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn service_name(resource: Option<&Resource>) -> String {
    let attrs = resource.map(|r| attributes(&r.attributes)).unwrap_or_default();
    attrs.get("service.name").map(ToString::to_string).unwrap_or_default()
}

fn attributes(kvs: &[KeyValue]) -> BTreeMap<String, AttrValue> {
    kvs.iter().filter_map(|kv| Some((kv.key.clone(), value(kv.value.as_ref()?)?))).collect()
}

fn string_attributes(kvs: &[KeyValue]) -> BTreeMap<String, String> {
    attributes(kvs).into_iter().map(|(k, v)| (k, v.to_string())).collect()
}

fn value(v: &AnyValue) -> Option<AttrValue> {
    Some(match v.value.as_ref()? {
        any_value::Value::StringValue(s) => AttrValue::Str(s.clone()),
        any_value::Value::BoolValue(b) => AttrValue::Bool(*b),
        any_value::Value::IntValue(i) => AttrValue::Int(*i),
        any_value::Value::DoubleValue(d) => AttrValue::Double(*d),
        any_value::Value::ArrayValue(a) => AttrValue::Array(a.values.iter().filter_map(value).collect()),
        any_value::Value::KvlistValue(kv) => AttrValue::Str(format!("{:?}", attributes(&kv.values))),
        any_value::Value::BytesValue(b) => AttrValue::Str(hex(b)),
        any_value::Value::StringValueStrindex(_) => return None, // profiles' string-table reference only
    })
}

/// A TCP endpoint that accepts connections and never answers: the worst collector there is.
/// Accepted sockets are kept open and drained; everything is aborted on drop.
pub struct BlackHole {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    task: JoinHandle<()>,
}

impl BlackHole {
    pub async fn start() -> BlackHole {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind black hole");
        let addr = listener.local_addr().expect("black hole addr");
        let task = tokio::spawn(async move {
            // Owned by this task, so aborting it aborts (and closes) every accepted socket.
            let mut sockets = JoinSet::new();
            while let Ok((mut socket, _)) = listener.accept().await {
                sockets.spawn(async move {
                    let mut buf = [0u8; 4096];
                    while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
                });
            }
        });
        BlackHole { endpoint: format!("http://{addr}"), task }
    }
}

impl Drop for BlackHole {
    fn drop(&mut self) {
        self.task.abort();
    }
}
