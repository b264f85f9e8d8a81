//! A minimal in-process OTLP/gRPC collector for the e2e and telemetry benches (`cargo bench --bench e2e`): the
//! OTLP trace and metrics services on 127.0.0.1:0, that only count what they receive and answer OK. Keeping
//! nothing, they cost the process (which the gateway shares) as little as a collector can: the trace service
//! decodes an export only down to each span's bytes (`ShallowExport`), enough to count the spans exactly.

use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{ExportMetricsServiceRequest, ExportMetricsServiceResponse};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tonic::codegen::{Body, BoxFuture, Service, StdError, http};
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

/// The counter under which the gateway reports the spans it dropped (its queue full, or an export failed).
const SPANS_DROPPED: &str = "toolgate.telemetry.spans_dropped";

/// What the sink has received so far.
#[derive(Debug, Default, Clone, Copy)]
pub struct Received {
    pub spans: u64,
    pub trace_exports: u64,
    /// Data points of every kind (sum, gauge, histogram, ...), over all metric exports.
    pub points: u64,
    pub metric_exports: u64,
    /// The latest cumulative value of `toolgate.telemetry.spans_dropped`; `None` until it is reported.
    pub spans_dropped: Option<u64>,
}

#[derive(Clone, Default)]
struct Counter(Arc<Mutex<Received>>);

/// The running sink; its server task is aborted on drop.
pub struct Sink {
    /// `http://127.0.0.1:PORT`, for `otlp_endpoint`.
    pub endpoint: String,
    counter: Counter,
    task: JoinHandle<()>,
}

impl Sink {
    pub async fn start() -> Sink {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the OTLP sink");
        let addr = listener.local_addr().expect("the OTLP sink's address");
        let counter = Counter::default();
        let server = tonic::transport::Server::builder()
            .add_service(ShallowTraceService(counter.clone()))
            .add_service(MetricsServiceServer::new(counter.clone()));
        let task = tokio::spawn(async move {
            let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
            if let Err(err) = server.serve_with_incoming(incoming).await {
                eprintln!("the OTLP sink stopped: {err}");
            }
        });
        Sink { endpoint: format!("http://{addr}"), counter, task }
    }

    pub fn received(&self) -> Received {
        *self.counter.0.lock().expect("the sink's counts")
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `ExportTraceServiceRequest` decoded only as deep as its spans, each left as bytes.
#[derive(Clone, PartialEq, prost::Message)]
struct ShallowExport {
    #[prost(message, repeated, tag = "1")]
    resource_spans: Vec<ShallowResourceSpans>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ShallowResourceSpans {
    #[prost(message, repeated, tag = "2")]
    scope_spans: Vec<ShallowScopeSpans>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ShallowScopeSpans {
    #[prost(bytes = "bytes", repeated, tag = "2")]
    spans: Vec<prost::bytes::Bytes>,
}

const TRACE_SERVICE: &str = "opentelemetry.proto.collector.trace.v1.TraceService";

/// `TraceService/Export` over `ShallowExport`, as the generated server would serve it over the full message.
#[derive(Clone)]
struct ShallowTraceService(Counter);

impl tonic::server::NamedService for ShallowTraceService {
    const NAME: &'static str = TRACE_SERVICE;
}

impl tonic::server::UnaryService<ShallowExport> for Counter {
    type Response = ExportTraceServiceResponse;
    type Future = std::future::Ready<Result<Response<ExportTraceServiceResponse>, Status>>;

    fn call(&mut self, request: Request<ShallowExport>) -> Self::Future {
        let request = request.into_inner();
        let scopes = request.resource_spans.iter().flat_map(|r| &r.scope_spans);
        let spans: usize = scopes.map(|s| s.spans.len()).sum();
        let mut received = self.0.lock().expect("the sink's counts");
        received.spans += spans as u64;
        received.trace_exports += 1;
        std::future::ready(Ok(Response::new(ExportTraceServiceResponse::default())))
    }
}

impl<B> Service<http::Request<B>> for ShallowTraceService
where
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let counter = self.0.clone();
        if request.uri().path() != format!("/{TRACE_SERVICE}/Export") {
            let status = Status::unimplemented(format!("{} is not served", request.uri().path()));
            return Box::pin(async move { Ok(status.into_http()) });
        }
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::default());
            Ok(grpc.unary(counter, request).await)
        })
    }
}

#[tonic::async_trait]
impl MetricsService for Counter {
    async fn export(
        &self,
        request: Request<ExportMetricsServiceRequest>,
    ) -> Result<Response<ExportMetricsServiceResponse>, Status> {
        let request = request.into_inner();
        let metrics = request.resource_metrics.iter().flat_map(|r| &r.scope_metrics).flat_map(|s| &s.metrics);
        let (mut points, mut dropped) = (0, None);
        for metric in metrics {
            points += point_count(metric.data.as_ref());
            if metric.name == SPANS_DROPPED {
                dropped = sum_value(metric.data.as_ref()).or(dropped);
            }
        }
        let mut received = self.0.lock().expect("the sink's counts");
        received.points += points as u64;
        received.metric_exports += 1;
        received.spans_dropped = dropped.or(received.spans_dropped);
        Ok(Response::new(ExportMetricsServiceResponse::default()))
    }
}

fn point_count(data: Option<&metric::Data>) -> usize {
    match data {
        Some(metric::Data::Sum(s)) => s.data_points.len(),
        Some(metric::Data::Gauge(g)) => g.data_points.len(),
        Some(metric::Data::Histogram(h)) => h.data_points.len(),
        Some(metric::Data::ExponentialHistogram(h)) => h.data_points.len(),
        Some(metric::Data::Summary(s)) => s.data_points.len(),
        None => 0,
    }
}

/// The total over a sum's points (the dropped-spans counter has one, without attributes); `None` for other kinds.
fn sum_value(data: Option<&metric::Data>) -> Option<u64> {
    let Some(metric::Data::Sum(sum)) = data else { return None };
    let values = sum.data_points.iter().filter_map(|p| match p.value? {
        number_data_point::Value::AsInt(i) => u64::try_from(i).ok(),
        number_data_point::Value::AsDouble(d) => Some(d as u64),
    });
    values.reduce(|a, b| a + b)
}
