//! Traces and metrics to an OTLP collector over TLS, with certificates made in the test and a collector that
//! requires a client certificate: with the files of the OTLP certificate variables, or else `[tls.client]`'s,
//! spans and metrics arrive; with a CA but no client certificate, nothing does.

use crate::support::otlp::Collector;
use crate::support::tls::{Ca, Leaf, Pair, server_config, tls_incoming};
use crate::support::{start_gateway, temp_config};
use std::time::Duration;
use tokio_stream::wrappers::ReceiverStream;
use toolgate::tls::ClientFiles;

const WAIT: Duration = Duration::from_secs(10);

/// A collector over TLS with `server`'s certificate, requiring client certificates signed by `ca`.
async fn tls_collector(ca: &Ca, server: &Pair) -> Collector {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = tls_incoming(listener, server_config(server, Some(&ca.file()), &[b"h2"]));
    Collector::serve(format!("https://localhost:{}", addr.port()), ReceiverStream::new(incoming))
}

/// Runs a gateway exporting to `collector` every 100 ms, with `collector_files` (the OTLP certificate variables)
/// and `client` (`[tls.client]`), and makes one call.
async fn export(collector: &Collector, collector_files: Option<ClientFiles>, client: ClientFiles) {
    let (_dir, mut config) = temp_config();
    config.telemetry = collector.settings();
    config.tls.collector = collector_files;
    config.tls.client = client;
    let mut gw = start_gateway(config).await;
    gw.call("lookup", "{}").await;
    // Stopping flushes: whatever can reach the collector has by the time this returns.
    gw.stop().await;
}

fn files(ca: &Ca, identity: Option<&Pair>) -> ClientFiles {
    ClientFiles { ca: Some(ca.file()), cert: identity.map(|p| p.cert.clone()), key: identity.map(|p| p.key.clone()) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_and_metrics_reach_a_collector_over_mtls() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "ca");
    let server = ca.sign(Leaf::server("collector"));
    let client = ca.sign(Leaf::client("gateway", "toolgate", None));

    // The OTLP certificate variables' files.
    let collector = tls_collector(&ca, &server).await;
    export(&collector, Some(files(&ca, Some(&client))), ClientFiles::default()).await;
    collector.wait_for_spans(|spans| spans.iter().any(|s| s.name.starts_with("execute_tool")), WAIT).await;
    // Metrics share the connection but are flushed apart from spans: wait for them too.
    collector.wait_for_points("toolgate.registry.tools", |p| !p.is_empty(), WAIT).await;

    // None set: [tls.client]'s.
    let collector = tls_collector(&ca, &server).await;
    export(&collector, None, files(&ca, Some(&client))).await;
    collector.wait_for_spans(|spans| spans.iter().any(|s| s.name.starts_with("execute_tool")), WAIT).await;

    // The variables' files win: a CA without a client certificate is refused by the collector.
    let collector = tls_collector(&ca, &server).await;
    export(&collector, Some(files(&ca, None)), files(&ca, Some(&client))).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(collector.spans().is_empty() && collector.metric_names().is_empty(), "nothing without the certificate");
}
