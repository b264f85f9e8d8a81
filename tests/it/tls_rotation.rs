//! Certificates rotated without a restart, over real connections: the listener's certificate replaced on disk is
//! served to the next new connection while the open one keeps its session and no call fails during the swap; a
//! file that does not load leaves the old certificate in use; a CA bundle the gateway trusts, replaced, lets it
//! reach a tool server signed by the new CA.

use crate::support::backends::Runtime;
use crate::support::tls::{Ca, Leaf, Pair, server_config, start_tls_runtime};
use crate::support::{start_gateway, status_of, temp_config};
use rustls::pki_types::ServerName;
use serde_json::json;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tonic::transport::{Channel, Endpoint};
use toolgate::pb::v1::{self as pb, ToolStatus, tool_gateway_client::ToolGatewayClient};
use toolgate::tls::{ClientFiles, ClientTls, ServerFiles};

const RELOAD: Duration = Duration::from_millis(50);

/// Copies `from` over `to` as Kubernetes and cert-manager do: a new file renamed into place.
fn replace(from: &Path, to: &Path) {
    let staged = to.with_extension("staged");
    std::fs::copy(from, &staged).unwrap();
    std::fs::rename(&staged, to).unwrap();
}

async fn tls_channel(addr: SocketAddr, ca: &Path) -> Result<Channel, String> {
    let config = ClientTls::load(ClientFiles { ca: Some(ca.to_path_buf()), ..ClientFiles::default() }).unwrap().h2();
    let connector = tower::service_fn(move |_: http::Uri| {
        let config = Arc::clone(&config);
        async move {
            let tcp = TcpStream::connect(addr).await?;
            let tls = tokio_rustls::TlsConnector::from(config)
                .connect(ServerName::try_from("localhost").unwrap(), tcp)
                .await?;
            Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(tls))
        }
    });
    let endpoint = Endpoint::from_shared(format!("http://localhost:{}", addr.port())).unwrap();
    endpoint.connect_with_connector(connector).await.map_err(|e| format!("{e:?}"))
}

async fn definitions(channel: &Channel) -> Result<(), tonic::Status> {
    let request = pb::ListToolDefinitionsRequest { context: None, format: pb::DefinitionFormat::Mcp.into() };
    ToolGatewayClient::new(channel.clone()).list_tool_definitions(request).await.map(|_| ())
}

/// Until a new connection trusting `ca` is served (the gateway looks at its files every `RELOAD`).
async fn until_served_to(addr: SocketAddr, ca: &Path) -> Channel {
    for _ in 0..400 {
        if let Ok(channel) = tls_channel(addr, ca).await
            && definitions(&channel).await.is_ok()
        {
            return channel;
        }
        tokio::time::sleep(RELOAD).await;
    }
    panic!("no new connection was served the new certificate");
}

#[tokio::test]
async fn the_listeners_certificate_is_replaced_for_new_connections_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (old_ca, new_ca) = (Ca::new(dir.path(), "old-ca"), Ca::new(dir.path(), "new-ca"));
    let (old, new) = (old_ca.sign(Leaf::server("old")), new_ca.sign(Leaf::server("new")));
    let live = Pair { cert: dir.path().join("live.pem"), key: dir.path().join("live-key.pem") };
    replace(&old.cert, &live.cert);
    replace(&old.key, &live.key);
    let (_data, mut config) = temp_config();
    config.tls.server = Some(ServerFiles { cert: live.cert.clone(), key: live.key.clone(), client_ca: None });
    config.tls.reload_every = RELOAD;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(toolgate::run(listener, config, std::future::pending()));
    let open = until_served_to(addr, &old_ca.file()).await;

    // Calls on the open connection all through the swap.
    let calling = {
        let open = open.clone();
        tokio::spawn(async move {
            let mut calls = 0;
            while calls < 200 {
                definitions(&open).await.expect("no call fails during the swap");
                calls += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };
    replace(&new.key, &live.key);
    replace(&new.cert, &live.cert);
    until_served_to(addr, &new_ca.file()).await;
    calling.await.unwrap();
    definitions(&open).await.expect("the connection opened before the swap keeps its session");
    let stale = match tls_channel(addr, &old_ca.file()).await {
        Ok(channel) => definitions(&channel).await.is_ok(),
        Err(_) => false,
    };
    assert!(!stale, "a new connection is served the new certificate, which the old CA did not sign");

    // A certificate file that does not load: the current one stays in use.
    std::fs::write(&live.cert, "not a certificate").unwrap();
    tokio::time::sleep(RELOAD * 4).await;
    let channel = tls_channel(addr, &new_ca.file()).await.expect("still the new certificate");
    definitions(&channel).await.expect("served");
}

#[tokio::test]
async fn a_replaced_ca_bundle_lets_the_gateway_reach_a_tool_server_signed_by_the_new_ca() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (Ca::new(dir.path(), "first"), Ca::new(dir.path(), "second"));
    let server = second.sign(Leaf::server("server"));
    let port = start_tls_runtime(Runtime::default(), server_config(&server, None, &[b"h2"])).await;
    let bundle = dir.path().join("trusted.pem");
    replace(&first.file(), &bundle);
    let (_data, mut config) = temp_config();
    config.tls.client = ClientFiles { ca: Some(bundle.clone()), ..ClientFiles::default() };
    config.tls.reload_every = RELOAD;
    let mut gw = start_gateway(config).await;
    let target = format!("https://localhost:{port}");
    let spec = json!({"name": "t", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}}});
    gw.register(spec).await.unwrap();
    let refused = gw.call("t", "{}").await;
    assert!(refused.error.unwrap().message.contains("not signed by a trusted CA"));
    std::fs::write(&bundle, format!("{}{}", first.cert_pem, second.cert_pem)).unwrap();
    for _ in 0..400 {
        if status_of(&gw.call("t", "{}").await) == ToolStatus::Success {
            return;
        }
        tokio::time::sleep(RELOAD).await;
    }
    panic!("the new CA bundle was never used");
}
