//! TLS on the gateway's gRPC listener, with certificates made in the test and a real tonic client over rustls:
//! TLS, then mTLS (a client without a certificate refused), and a client certificate mapped to a tenant, which may
//! call (and review) as that tenant and no other; the command line over TLS.

use crate::support;
use crate::support::temp_config;
use crate::support::tls::{Ca, Leaf, Pair};
use rustls::pki_types::ServerName;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use tokio::net::TcpStream;
use tonic::transport::{Channel, Endpoint};
use toolgate::pb::v1::{self as pb, tool_gateway_client::ToolGatewayClient, tool_review_client::ToolReviewClient};
use toolgate::tls::{ClientFiles, ClientTls, Identities, IdentityRule, ServerFiles};

/// A gateway serving TLS with `server`, requiring client certificates signed by `client_ca` if given.
async fn gateway(
    server: &Pair,
    client_ca: Option<&Path>,
    identities: Vec<IdentityRule>,
) -> (tempfile::TempDir, SocketAddr) {
    let (dir, mut config) = temp_config();
    config.tls.server = Some(ServerFiles {
        cert: server.cert.clone(),
        key: server.key.clone(),
        client_ca: client_ca.map(Path::to_path_buf),
    });
    config.tls.identities = Identities::new(identities);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(toolgate::run(listener, config, std::future::pending()));
    (dir, addr)
}

/// A gRPC channel over TLS, trusting `ca` and presenting `identity`.
async fn tls_channel(addr: SocketAddr, ca: &Path, identity: Option<&Pair>) -> Result<Channel, String> {
    let files = ClientFiles {
        ca: Some(ca.to_path_buf()),
        cert: identity.map(|p| p.cert.clone()),
        key: identity.map(|p| p.key.clone()),
    };
    let config = ClientTls::load(files).unwrap().h2();
    let connector = tower::service_fn(move |_: http::Uri| {
        let config = Arc::clone(&config);
        async move {
            let tcp = TcpStream::connect(addr).await?;
            let name = ServerName::try_from("localhost").unwrap();
            let tls = tokio_rustls::TlsConnector::from(config).connect(name, tcp).await?;
            Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(tls))
        }
    });
    let endpoint = Endpoint::from_shared(format!("http://localhost:{}", addr.port())).unwrap();
    for _ in 0..100 {
        match endpoint.connect_with_connector(connector.clone()).await {
            Ok(channel) => return Ok(channel),
            Err(err) if format!("{err:?}").contains("Connection refused") => {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await
            }
            Err(err) => return Err(format!("{err:?}")),
        }
    }
    Err("the gateway never accepted".into())
}

/// ListToolDefinitions as `tenant`.
async fn definitions(channel: Channel, tenant: &str) -> Result<usize, tonic::Status> {
    let context = pb::CallContext { tenant: tenant.into(), ..Default::default() };
    let request = pb::ListToolDefinitionsRequest { context: Some(context), format: pb::DefinitionFormat::Mcp.into() };
    Ok(ToolGatewayClient::new(channel).list_tool_definitions(request).await?.into_inner().definitions.len())
}

async fn execute(channel: Channel, tenant: &str) -> Result<pb::ToolMessage, tonic::Status> {
    let call = pb::ToolCall { id: format!("c-{tenant}"), name: "nothing".into(), arguments: "{}".into() };
    let context = pb::CallContext { tenant: tenant.into(), ..Default::default() };
    let request = pb::ExecuteRequest { call: Some(call), context: Some(context), review_mode: 0 };
    Ok(ToolGatewayClient::new(channel).execute(request).await?.into_inner().message.unwrap())
}

#[tokio::test]
async fn the_listener_speaks_tls_and_a_plain_client_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "ca");
    let server = ca.sign(Leaf::server("server"));
    let (_dir, addr) = gateway(&server, None, Vec::new()).await;
    let channel = tls_channel(addr, &ca.file(), None).await.expect("TLS connects");
    assert_eq!(definitions(channel, "").await.unwrap(), 0);
    let plain = support::connect(addr).await;
    let refused = definitions(plain, "").await.unwrap_err();
    assert!(
        matches!(refused.code(), tonic::Code::Unavailable | tonic::Code::Unknown),
        "a transport failure: {refused:?}"
    );
    let rogue = Ca::new(dir.path(), "rogue");
    let err = tls_channel(addr, &rogue.file(), None).await.unwrap_err();
    assert!(err.contains("UnknownIssuer"), "the client refuses a server its CA did not sign: {err}");

    // The command line: with the CA, then without it (the system's roots do not hold the test's CA).
    let server = format!("https://localhost:{}", addr.port());
    let ca = ca.file().display().to_string();
    let (ok, _) = cli(&["health", "--server", &server, "--ca", &ca]).await;
    assert!(ok);
    let (refused, stderr) = cli(&["health", "--server", &server]).await;
    assert!(!refused && stderr.contains("TLS: its certificate is not signed by a trusted CA"), "{stderr}");
}

/// Runs the `toolgate` binary: whether it succeeded, and its stderr.
async fn cli(args: &[&str]) -> (bool, String) {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate")).args(args).output().await.unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[tokio::test]
async fn mtls_requires_a_client_certificate_and_one_mapped_to_a_tenant_may_not_claim_another() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "ca");
    let server = ca.sign(Leaf::server("server"));
    let agent = ca.sign(Leaf::client("agent", "agent-a", Some("spiffe://test/agents/a")));
    let unmapped = ca.sign(Leaf::client("other", "agent-b", None));
    let rules = vec![IdentityRule { name: "spiffe://test/agents/a".into(), tenant: "acme".into() }];
    let (_dir, addr) = gateway(&server, Some(&ca.file()), rules).await;

    let anonymous = tls_channel(addr, &ca.file(), None).await;
    let refused = match anonymous {
        Err(err) => err,
        Ok(channel) => format!("{:?}", definitions(channel, "").await.unwrap_err()),
    };
    assert!(refused.contains("CertificateRequired") || refused.contains("certificate"), "{refused}");

    let acme = tls_channel(addr, &ca.file(), Some(&agent)).await.expect("mTLS connects");
    assert_eq!(definitions(acme.clone(), "acme").await.unwrap(), 0);
    let answered = execute(acme.clone(), "acme").await.unwrap();
    assert_eq!(answered.error.unwrap().kind(), pb::ErrorKind::ToolNotFound, "the call ran, as acme");
    for claimed in ["globex", ""] {
        let denied = execute(acme.clone(), claimed).await.unwrap_err();
        assert_eq!(denied.code(), tonic::Code::PermissionDenied, "{claimed}: {denied:?}");
        assert!(denied.message().contains("\"acme\""), "{}", denied.message());
        assert_eq!(definitions(acme.clone(), claimed).await.unwrap_err().code(), tonic::Code::PermissionDenied);
    }
    // ToolReview too: its own tenant's reviews, not another's, nor every tenant's.
    let mut review = ToolReviewClient::new(acme.clone());
    let pending = |tenant: &str, all_tenants| pb::ListPendingRequest { tenant: tenant.into(), all_tenants };
    assert!(review.list_pending(pending("acme", false)).await.is_ok());
    for request in [pending("globex", false), pending("", true)] {
        let denied = review.list_pending(request).await.unwrap_err();
        assert_eq!(denied.code(), tonic::Code::PermissionDenied, "{denied:?}");
    }
    let decide = pb::DecideRequest { call_id: "c".into(), tenant: "globex".into(), action: 1, ..Default::default() };
    assert_eq!(review.decide(decide).await.unwrap_err().code(), tonic::Code::PermissionDenied);
    // A certificate no rule names authenticates, and is held to no tenant.
    let other = tls_channel(addr, &ca.file(), Some(&unmapped)).await.expect("mTLS connects");
    assert_eq!(definitions(other, "globex").await.unwrap(), 0);
}
