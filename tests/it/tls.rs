//! TLS to tool servers over real connections, with certificates made in the test: a gRPC ToolRuntime, an HTTP
//! tool server and an MCP server over streamable HTTP, each reached with the right CA, and refused, with the cause
//! and the endpoint named in the operator's error (the model only learns the tool is unavailable) or the MCP
//! server's status, for a wrong CA, an expired certificate, a name mismatch, and a missing client certificate;
//! mTLS with the client certificate.

use crate::support;
use crate::support::backends::Runtime;
use crate::support::tls::{Ca, Leaf, Pair, server_config, start_tls_http, start_tls_mcp, start_tls_runtime};
use crate::support::{Gateway, kind_of, start_gateway, status_of, temp_config};
use serde_json::json;
use std::path::Path;
use toolgate::pb::v1::{self as pb, ToolStatus};
use toolgate::tls::ClientFiles;

/// A gateway whose `[tls.client]` trusts `ca` and presents `identity`.
async fn gateway(ca: Option<&Path>, identity: Option<&Pair>) -> (tempfile::TempDir, Gateway) {
    let (dir, mut config) = temp_config();
    config.tls.client = ClientFiles {
        ca: ca.map(Path::to_path_buf),
        cert: identity.map(|p| p.cert.clone()),
        key: identity.map(|p| p.key.clone()),
    };
    (dir, start_gateway(config).await)
}

/// Registers `grpc` (a gRPC tool on `port`) and `http` (an HTTP tool on `http_port`), both over TLS to `host`.
async fn tools(gw: &mut Gateway, host: &str, port: u16, http_port: u16) {
    let object = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let grpc = json!({"name": "grpc", "input_schema": object, "backend": {"grpc": {"target": format!("https://{host}:{port}")}}});
    let http = json!({"name": "http", "input_schema": object, "backend": {"http": {"url": format!("https://{host}:{http_port}/echo")}}});
    gw.register(grpc).await.unwrap();
    gw.register(http).await.unwrap();
}

/// Calls both tools: each answer's error message (empty on success).
async fn both(gw: &mut Gateway) -> [(ToolStatus, String); 2] {
    let mut out = Vec::new();
    for tool in ["grpc", "http"] {
        let m = gw.call(tool, r#"{"n": 1}"#).await;
        if status_of(&m) == ToolStatus::Error {
            assert_eq!(kind_of(&m), pb::ErrorKind::Unavailable, "{tool}: {m:?}");
            assert!(
                m.content.contains("unavailable") && !m.content.contains("certificate"),
                "the model is not told why: {}",
                m.content
            );
        }
        out.push((status_of(&m), m.error.map(|e| e.message).unwrap_or_default()));
    }
    out.try_into().unwrap()
}

/// The gateway's CA, and server certificates: a good one, one another CA signed, an expired one, one for another
/// name.
struct Certs {
    ca: Ca,
    good: Pair,
    untrusted: Pair,
    expired: Pair,
    other_name: Pair,
}

impl Certs {
    fn new(dir: &Path) -> Self {
        let (ca, rogue) = (Ca::new(dir, "ca"), Ca::new(dir, "rogue"));
        let other = Leaf { names: &["other.example"], common_name: "other.example", ..Leaf::server("other") };
        Certs {
            good: ca.sign(Leaf::server("good")),
            untrusted: rogue.sign(Leaf::server("untrusted")),
            expired: ca.sign(Leaf { expired: true, ..Leaf::server("expired") }),
            other_name: ca.sign(other),
            ca,
        }
    }
}

#[tokio::test]
async fn tool_servers_over_tls_are_reached_with_the_right_ca_and_refused_otherwise_with_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let Certs { ca, good, untrusted, expired, other_name } = Certs::new(dir.path());
    // (the server's certificate, the name connected to, what the operator's error must say)
    let cases: [(&Pair, &str, &str); 4] = [
        (&good, "localhost", ""),
        (&untrusted, "localhost", "not signed by a trusted CA"),
        (&expired, "localhost", "has expired"),
        (&other_name, "localhost", "name mismatch"),
    ];
    for (pair, host, says) in cases {
        let grpc_port = start_tls_runtime(Runtime::default(), server_config(pair, None, &[b"h2"])).await;
        let http_port = start_tls_http(server_config(pair, None, &[b"h2", b"http/1.1"])).await;
        let (_dir, mut gw) = gateway(Some(&ca.file()), None).await;
        tools(&mut gw, host, grpc_port, http_port).await;
        for (tool, (status, error)) in ["grpc", "http"].iter().zip(both(&mut gw).await) {
            if says.is_empty() {
                assert_eq!(status, ToolStatus::Success, "{tool} with {}: {error}", pair.cert.display());
            } else {
                assert!(error.contains(says), "{tool} with {}: {error}", pair.cert.display());
                let port = if *tool == "grpc" { grpc_port } else { http_port };
                assert!(error.contains(&format!("localhost:{port}")), "{tool}: the endpoint is named: {error}");
            }
        }
    }
    // The system's roots do not hold the test CA: the same good certificate is refused without [tls.client] ca.
    let grpc_port = start_tls_runtime(Runtime::default(), server_config(&good, None, &[b"h2"])).await;
    let http_port = start_tls_http(server_config(&good, None, &[b"h2", b"http/1.1"])).await;
    let (_dir, mut gw) = gateway(None, None).await;
    tools(&mut gw, "localhost", grpc_port, http_port).await;
    for (status, error) in both(&mut gw).await {
        assert!(status == ToolStatus::Error && error.contains("not signed by a trusted CA"), "{error}");
    }
}

#[tokio::test]
async fn a_tool_server_that_requires_a_client_certificate_gets_the_gateways() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "ca");
    let server = ca.sign(Leaf::server("server"));
    let client = ca.sign(Leaf::client("client", "toolgate", None));
    let grpc_port = start_tls_runtime(Runtime::default(), server_config(&server, Some(&ca.file()), &[b"h2"])).await;
    let http_port = start_tls_http(server_config(&server, Some(&ca.file()), &[b"h2", b"http/1.1"])).await;

    let (_dir, mut without) = gateway(Some(&ca.file()), None).await;
    tools(&mut without, "localhost", grpc_port, http_port).await;
    for (status, error) in both(&mut without).await {
        assert!(status == ToolStatus::Error && error.contains("client certificate"), "{error}");
    }
    let (_dir, mut with) = gateway(Some(&ca.file()), Some(&client)).await;
    tools(&mut with, "localhost", grpc_port, http_port).await;
    for (status, error) in both(&mut with).await {
        assert_eq!(status, ToolStatus::Success, "{error}");
    }
}

/// Adds the MCP server on `port` (reached as `host`) to `gw`: its status after the first connection attempt.
async fn mcp(gw: &Gateway, host: &str, port: u16) -> pb::McpServerStatus {
    let mut admin = support::mcp::admin(gw).await;
    support::mcp::add(&mut admin, support::mcp::http_server("secure", &format!("https://{host}:{port}/mcp"))).await
}

#[tokio::test]
async fn an_mcp_server_over_https_is_reached_with_the_right_ca_and_refused_otherwise_with_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let Certs { ca, good, untrusted, expired, other_name } = Certs::new(dir.path());
    let client = ca.sign(Leaf::client("client", "toolgate", None));
    let http = [b"h2".as_slice(), b"http/1.1"];
    // (the server's certificate, whether it requires a client certificate, the gateway's, what the status says)
    let cases: [(&Pair, bool, Option<&Pair>, &str); 6] = [
        (&good, false, None, ""),
        (&untrusted, false, None, "not signed by a trusted CA"),
        (&expired, false, None, "has expired"),
        (&other_name, false, None, "name mismatch"),
        (&good, true, None, "client certificate"),
        (&good, true, Some(&client), ""),
    ];
    for (pair, mutual, identity, says) in cases {
        let port = start_tls_mcp(server_config(pair, mutual.then(|| ca.file()).as_deref(), &http)).await;
        let (_dir, mut gw) = gateway(Some(&ca.file()), identity).await;
        let status = mcp(&gw, "localhost", port).await;
        let what = format!("{} (mutual: {mutual}, identity: {})", pair.cert.display(), identity.is_some());
        if says.is_empty() {
            assert!(status.connected && status.tools == ["secure__echo"], "{what}: {status:?}");
            let echoed = gw.call("secure__echo", r#"{"text": "over TLS"}"#).await;
            assert_eq!(echoed.content, "over TLS", "{what}: {echoed:?}");
        } else {
            assert!(!status.connected, "{what}: {status:?}");
            assert!(status.last_error.contains(says), "{what}: {}", status.last_error);
            assert!(
                status.last_error.contains(&format!("localhost:{port}")),
                "the endpoint is named: {}",
                status.last_error
            );
        }
    }
}

/// The same cause, and the endpoint, in the log line of the failed call (`toolgate serve`, at INFO).
#[tokio::test]
async fn the_log_names_the_cause_and_the_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, rogue) = (Ca::new(dir.path(), "ca"), Ca::new(dir.path(), "rogue"));
    let port =
        start_tls_runtime(Runtime::default(), server_config(&rogue.sign(Leaf::server("s")), None, &[b"h2"])).await;
    let addr = support::free_addr();
    let config = dir.path().join("toolgate.toml");
    let text = format!(
        "listen = \"{addr}\"\ndata_dir = \"{}\"\n[tls.client]\nca = \"{}\"\n[[tools]]\nname = \"t\"\n\
         input_schema = {{ type = \"object\" }}\nbackend = {{ grpc = {{ target = \"https://localhost:{port}\" }} }}\n",
        dir.path().join("data").display(),
        ca.file().display()
    );
    std::fs::write(&config, text).unwrap();
    let server = support::serve_process(&["--config", config.to_str().unwrap()]);
    let mut gateway = pb::tool_gateway_client::ToolGatewayClient::new(support::connect(addr).await);
    let call = pb::ToolCall { id: "c1".into(), name: "t".into(), arguments: "{}".into() };
    let answer = gateway.execute(pb::ExecuteRequest { call: Some(call), ..Default::default() }).await.unwrap();
    assert_eq!(answer.into_inner().message.unwrap().error.unwrap().kind(), pb::ErrorKind::Unavailable);
    let stderr = support::log_of(server).await;
    let failed = stderr.lines().find(|l| l.contains("call failed")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(failed.contains("not signed by a trusted CA") && failed.contains(&format!("localhost:{port}")), "{failed}");
}
