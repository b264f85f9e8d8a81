//! The OTLP/gRPC span exporter: each batch encoded by `wire::otlp` and sent to the collector's
//! `TraceService/Export` with the headers `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (or `OTEL_EXPORTER_OTLP_HEADERS`)
//! names, retried within the export timeout while the collector is unavailable, as the OTLP specification asks.

use crate::wire::otlp::{Preamble, export_request};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::codec::{Codec, EncodeBuf, Encoder};
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue, MetadataMap};
use tonic::transport::Channel;
use tonic::{Code, Status};

const EXPORT: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// Retries after the first attempt, and the backoff between them (the SDK exporter's defaults).
const MAX_RETRIES: u32 = 3;
const FIRST_DELAY: Duration = Duration::from_millis(100);
const MAX_DELAY: Duration = Duration::from_millis(1_600);

/// Sends span batches to one collector.
#[derive(Debug)]
pub struct TraceExporter {
    channel: Channel,
    /// The collector's address, named in a TLS failure.
    endpoint: String,
    headers: MetadataMap,
    timeout: Duration,
    preamble: Preamble,
}

impl TraceExporter {
    /// An exporter on `channel` (see `wire::channel`), which connects on the first export; each attempt is bounded
    /// by `timeout`.
    pub fn new(channel: Channel, endpoint: &str, timeout: Duration) -> Self {
        let headers = std::env::var("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_HEADERS"))
            .map(|text| parse_headers(&text))
            .unwrap_or_default();
        Self::with_headers(channel, endpoint, timeout, headers)
    }

    fn with_headers(channel: Channel, endpoint: &str, timeout: Duration, headers: MetadataMap) -> Self {
        Self { channel, endpoint: endpoint.to_owned(), headers, timeout, preamble: Preamble::default() }
    }

    async fn send(&self, body: Arc<[u8]>) -> Result<ExportResponse, Status> {
        let mut grpc = tonic::client::Grpc::new(self.channel.clone());
        grpc.ready().await.map_err(|e| {
            let cause = crate::tls::find_tls_failure(&e).map_or_else(|| e.to_string(), |tls| format!("TLS: {tls}"));
            let mut status = Status::unavailable(format!("the collector is unreachable: {cause}"));
            // A source marks the status as made here, not by the collector: its message is safe to log.
            status.set_source(Arc::new(e));
            status
        })?;
        let mut request = tonic::Request::new(body);
        *request.metadata_mut() = self.headers.clone();
        let path = http::uri::PathAndQuery::from_static(EXPORT);
        grpc.unary(request, path, ExportCodec).await.map(tonic::Response::into_inner)
    }
}

impl SpanExporter for TraceExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let body: Arc<[u8]> = export_request(&self.preamble, &batch).into();
        drop(batch);
        let started = Instant::now();
        let mut delay = FIRST_DELAY;
        let mut retries = 0;
        loop {
            let status = match self.send(Arc::clone(&body)).await {
                Ok(response) => {
                    response.warn_if_partial();
                    return Ok(());
                }
                Err(status) => status,
            };
            if retries == MAX_RETRIES || !retryable(status.code()) || started.elapsed() + delay >= self.timeout {
                // A collector's message may echo a credential, so only one tonic made itself (the connection
                // failed, say) goes into the error the SDK logs.
                tracing::debug!(code = ?status.code(), message = status.message(), "OTLP span export failed");
                let local =
                    std::error::Error::source(&status).map(|source| match crate::tls::find_tls_failure(source) {
                        Some(tls) => format!(": {}: TLS: {tls}", self.endpoint),
                        None => format!(": {}", status.message()),
                    });
                return Err(OTelSdkError::InternalFailure(format!(
                    "OTLP span export failed with gRPC code {:?}{}",
                    status.code(),
                    local.unwrap_or_default()
                )));
            }
            retries += 1;
            sleep(delay).await;
            delay = (delay * 2).min(MAX_DELAY);
        }
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.preamble = Preamble::new(resource);
    }
}

/// The codes after which the OTLP specification lets an export be sent again.
fn retryable(code: Code) -> bool {
    matches!(
        code,
        Code::Cancelled
            | Code::DeadlineExceeded
            | Code::Aborted
            | Code::OutOfRange
            | Code::Unavailable
            | Code::DataLoss
    )
}

/// The SDK runs exports on a thread of its own, outside the Tokio runtime.
async fn sleep(delay: Duration) {
    if tokio::runtime::Handle::try_current().is_ok() {
        tokio::time::sleep(delay).await;
    } else {
        #[expect(clippy::disallowed_methods, reason = "the SDK's export thread, outside the runtime")]
        std::thread::sleep(delay);
    }
}

/// `key=value,key=value`, values percent-decoded, as the OTLP exporter variables are written. An entry that is
/// not a valid gRPC header is left out, with a warning naming its key (never its value, often a credential).
fn parse_headers(text: &str) -> MetadataMap {
    let mut headers = MetadataMap::new();
    for entry in text.split(',').map(str::trim).filter(|entry| !entry.is_empty()) {
        let Some((key, value)) = entry.split_once('=') else {
            tracing::warn!("an OTLP header entry has no '=': it is left out");
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let decoded = percent_encoding::percent_decode_str(value).decode_utf8().map(|v| v.into_owned());
        let value = decoded.unwrap_or_else(|_| value.to_owned());
        match (key.parse::<AsciiMetadataKey>(), value.parse::<AsciiMetadataValue>()) {
            (Ok(key), Ok(value)) if !value.is_empty() => {
                headers.append(key, value);
            }
            _ => tracing::warn!(key, "an OTLP header is not a valid gRPC header: it is left out"),
        }
    }
    headers
}

/// `ExportTraceServiceResponse`.
#[derive(Clone, PartialEq, prost::Message)]
struct ExportResponse {
    #[prost(message, optional, tag = "1")]
    partial_success: Option<PartialSuccess>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct PartialSuccess {
    #[prost(int64, tag = "1")]
    rejected_spans: i64,
    #[prost(string, tag = "2")]
    error_message: String,
}

impl ExportResponse {
    /// A partial success is logged, not retried, as the specification asks.
    fn warn_if_partial(self) {
        if let Some(partial) = self.partial_success
            && (partial.rejected_spans > 0 || !partial.error_message.is_empty())
        {
            tracing::warn!(rejected = partial.rejected_spans, message = %partial.error_message, "the collector rejected spans");
        }
    }
}

/// Sends the request's bytes as they are and reads the response with prost.
struct ExportCodec;

impl Codec for ExportCodec {
    type Encode = Arc<[u8]>;
    type Decode = ExportResponse;
    type Encoder = BytesEncoder;
    type Decoder = tonic_prost::ProstDecoder<ExportResponse>;

    fn encoder(&mut self) -> BytesEncoder {
        BytesEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        tonic_prost::ProstDecoder::new(tonic::codec::BufferSettings::default())
    }
}

struct BytesEncoder;

impl Encoder for BytesEncoder {
    type Item = Arc<[u8]>;
    type Error = Status;

    fn encode(&mut self, item: Arc<[u8]>, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        prost::bytes::BufMut::put_slice(buf, &item);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{Tracer, TracerProvider};
    use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
    use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
    use std::sync::Mutex;
    use tonic::transport::Endpoint;

    #[test]
    fn headers_are_read_as_the_otlp_variables_write_them() {
        let headers = parse_headers(" api-key = s%3Dcret , x-team=a b,broken,=nokey,bad key=1,empty=");
        assert_eq!(headers.get("api-key").unwrap(), "s=cret", "trimmed and percent-decoded");
        assert_eq!(headers.get("x-team").unwrap(), "a b");
        assert_eq!(headers.len(), 2, "entries without '=', a key, a valid name or a value are left out: {headers:?}");
    }

    /// A collector that answers each export with the next of `answers` (OK once they run out), keeping what
    /// reached it.
    #[derive(Clone, Default)]
    struct Collector {
        answers: Arc<Mutex<Vec<Code>>>,
        received: Arc<Mutex<Vec<(MetadataMap, ExportTraceServiceRequest)>>>,
    }

    #[tonic::async_trait]
    impl TraceService for Collector {
        async fn export(
            &self,
            request: tonic::Request<ExportTraceServiceRequest>,
        ) -> Result<tonic::Response<ExportTraceServiceResponse>, Status> {
            let (metadata, _, request) = request.into_parts();
            self.received.lock().unwrap().push((metadata, request));
            match self.answers.lock().unwrap().pop() {
                Some(code) => Err(Status::new(code, "not now")),
                None => Ok(tonic::Response::new(ExportTraceServiceResponse::default())),
            }
        }
    }

    async fn collector(answers: Vec<Code>) -> (Collector, Endpoint) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = Endpoint::from_shared(format!("http://{}", listener.local_addr().unwrap())).unwrap();
        let collector = Collector { answers: Arc::new(Mutex::new(answers)), ..Collector::default() };
        let server = tonic::transport::Server::builder().add_service(TraceServiceServer::new(collector.clone()));
        tokio::spawn(server.serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)));
        (collector, endpoint)
    }

    fn one_span() -> SpanData {
        let tracer = opentelemetry_sdk::trace::SdkTracerProvider::builder().build().tracer("toolgate");
        let span = tracer.span_builder("execute_tool forecast").start(&tracer);
        let mut data = span.exported_data().expect("a recording span");
        data.end_time = data.start_time;
        data
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_reaches_the_collector_with_its_headers_after_transient_failures() {
        let (collector, endpoint) = collector(vec![Code::Aborted, Code::Unavailable]).await;
        let exporter = TraceExporter::with_headers(
            endpoint.connect_lazy(),
            "test",
            Duration::from_secs(5),
            parse_headers("api-key=k1"),
        );
        exporter.export(vec![one_span(), one_span()]).await.expect("exported on the third attempt");
        let received = collector.received.lock().unwrap();
        assert_eq!(received.len(), 3, "two failures retried, then the export that succeeded");
        let (metadata, request) = &received[2];
        assert_eq!(metadata.get("api-key").unwrap(), "k1");
        let spans = &request.resource_spans[0].scope_spans[0].spans;
        assert_eq!((spans.len(), spans[0].name.as_str()), (2, "execute_tool forecast"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_batch_is_not_sent_again() {
        let (collector, endpoint) = collector(vec![Code::InvalidArgument]).await;
        let exporter =
            TraceExporter::with_headers(endpoint.connect_lazy(), "test", Duration::from_secs(5), MetadataMap::new());
        let err = exporter.export(vec![one_span()]).await.expect_err("the collector refused it");
        assert!(err.to_string().contains("InvalidArgument"), "{err}");
        assert_eq!(collector.received.lock().unwrap().len(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_unreachable_collector_fails_the_export_within_its_timeout_and_says_why() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let endpoint = Endpoint::from_shared(format!("http://{closed}")).unwrap().timeout(Duration::from_millis(400));
        let exporter = TraceExporter::with_headers(
            endpoint.connect_lazy(),
            "test",
            Duration::from_millis(400),
            MetadataMap::new(),
        );
        let started = Instant::now();
        let err = exporter.export(vec![one_span()]).await.expect_err("nothing listens there").to_string();
        assert!(err.contains("Unavailable") && err.contains("connect"), "the cause is named: {err}");
        assert!(started.elapsed() < Duration::from_secs(2), "retries stop at the timeout: {:?}", started.elapsed());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_collector_with_an_untrusted_certificate_is_refused_with_the_cause() {
        crate::tls::install_provider();
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into());
        let config =
            rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(vec![made.cert.into()], key);
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config.unwrap()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let _ = acceptor.accept(tcp).await;
            }
        });
        let tls = Arc::new(crate::tls::ClientTls::load(Default::default()).unwrap());
        let timeout = Duration::from_millis(400);
        let channel = crate::wire::channel::lazy(&format!("https://localhost:{port}"), Some(timeout), &tls).unwrap();
        let exporter = TraceExporter::with_headers(channel, "https://localhost", timeout, MetadataMap::new());
        let err = exporter.export(vec![one_span()]).await.expect_err("a self-signed certificate").to_string();
        assert!(err.contains("https://localhost: TLS: its certificate is not signed by a trusted CA"), "{err}");
    }

    #[test]
    fn only_transient_failures_are_retried() {
        assert!(retryable(Code::Unavailable) && retryable(Code::DeadlineExceeded));
        assert!(!retryable(Code::InvalidArgument) && !retryable(Code::Unauthenticated));
        assert!(!retryable(Code::ResourceExhausted), "without RetryInfo, the specification says not to retry");
    }
}
