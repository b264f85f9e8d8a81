//! TLS on the gateway's HTTP doors, with certificates made in the test: the MCP front door reached over TLS by
//! the official MCP SDK's client, a caller without a client certificate refused under mTLS, and a certificate
//! mapped to a tenant refused with a token of another; the console served over TLS, its session cookie Secure.

use crate::support;
use crate::support::temp_config;
use crate::support::tls::{Ca, Leaf, Pair};
use reqwest::redirect::Policy;
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;
use toolgate::config::{Config, McpFrontSettings, Principal};
use toolgate::tls::{ClientFiles, ClientTls, Identities, IdentityRule, ServerFiles};

const ACME: &str = "acme-token";
const GLOBEX: &str = "globex-token";

/// Starts a gateway serving `[tls]` with `server` (requiring client certificates signed by `client_ca`, if given).
async fn start(mut config: Config, server: &Pair, client_ca: Option<&Path>, identities: Vec<IdentityRule>) {
    let client_ca = client_ca.map(Path::to_path_buf);
    config.tls.server = Some(ServerFiles { cert: server.cert.clone(), key: server.key.clone(), client_ca });
    config.tls.identities = Identities::new(identities);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    tokio::spawn(toolgate::run(listener, config, std::future::pending()));
}

/// An HTTP client trusting `ca` and presenting `identity`, as the gateway's own are built.
fn https_client(ca: &Path, identity: Option<&Pair>) -> reqwest::Client {
    let files = ClientFiles {
        ca: Some(ca.to_path_buf()),
        cert: identity.map(|p| p.cert.clone()),
        key: identity.map(|p| p.key.clone()),
    };
    let tls = ClientTls::load(files).unwrap();
    reqwest::Client::builder()
        .tls_backend_preconfigured((*tls.http()).clone())
        .redirect(Policy::none())
        .build()
        .unwrap()
}

/// Waits until something listens on `addr`.
async fn listening(addr: SocketAddr) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("nothing listens on {addr}");
}

/// The MCP handshake and `tools/list` with `token` over `client`: the error's text when refused.
async fn list_tools(client: reqwest::Client, url: &str, token: &str) -> Result<usize, String> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let session = ().serve(transport).await.map_err(|e| format!("{e:?}"))?;
    let tools = session.list_all_tools().await.map_err(|e| format!("{e:?}"))?;
    Ok(tools.len())
}

#[tokio::test]
async fn the_mcp_front_door_speaks_mtls_and_holds_a_certificate_to_its_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "ca");
    let server = ca.sign(Leaf::server("server"));
    let agent = ca.sign(Leaf::client("agent", "agent-acme", None));
    let (_data, mut config) = temp_config();
    let door = support::free_addr();
    let principal = |tenant: &str| Principal { tenant: tenant.into(), user_id: "u".into(), ..Principal::default() };
    config.mcp_front = McpFrontSettings {
        listen: Some(door),
        allowed_hosts: vec!["localhost".into()],
        allowed_origins: Vec::new(),
        tokens: vec![(ACME.into(), principal("acme")), (GLOBEX.into(), principal("globex"))],
        jwt: None,
        ..McpFrontSettings::default()
    };
    let rules = vec![IdentityRule { name: "agent-acme".into(), tenant: "acme".into() }];
    start(config, &server, Some(&ca.file()), rules).await;
    listening(door).await;
    let url = format!("https://localhost:{}/mcp", door.port());

    let agent_client = https_client(&ca.file(), Some(&agent));
    assert_eq!(list_tools(agent_client.clone(), &url, ACME).await, Ok(0), "mTLS, and the certificate's own tenant");
    let refused = list_tools(agent_client, &url, GLOBEX).await.unwrap_err();
    assert!(
        refused.contains("403") && refused.contains(r#"acts for tenant \"acme\""#),
        "another tenant's token: {refused}"
    );

    let anonymous = list_tools(https_client(&ca.file(), None), &url, ACME).await.unwrap_err();
    assert!(anonymous.contains("CertificateRequired"), "refused in the handshake, before any request: {anonymous}");
    let plain = list_tools(reqwest::Client::new(), &format!("http://localhost:{}/mcp", door.port()), ACME).await;
    assert!(plain.is_err(), "plain HTTP is not served: {plain:?}");
}

#[tokio::test]
async fn the_console_is_served_over_tls_with_a_secure_session_cookie() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "ca");
    let server = ca.sign(Leaf::server("server"));
    let (_data, mut config) = temp_config();
    let console = support::free_addr();
    config.console.listen = Some(console);
    config.tokens.review = Some("review-secret".into());
    start(config, &server, None, Vec::new()).await;
    listening(console).await;
    let base = format!("https://localhost:{}", console.port());
    let http = https_client(&ca.file(), None);

    let page = http.get(format!("{base}/login")).send().await.expect("the login page over TLS");
    assert_eq!(page.status(), 200);
    assert_eq!(page.version(), reqwest::Version::HTTP_2, "ALPN chose HTTP/2");
    let login_cookie = page.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(login_cookie.contains("; Secure"), "the login form's cookie too: {login_cookie}");
    let html = page.text().await.unwrap();
    let csrf = html.split("name=\"csrf\" value=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap();
    let form = [("name", "ana"), ("token", "review-secret"), ("csrf", csrf)];
    let sent = login_cookie.split(';').next().unwrap();
    let login = http.post(format!("{base}/login")).header("cookie", sent).form(&form).send().await.unwrap();
    assert_eq!(login.status(), 303);
    let cookie = login.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.contains("; Secure"), "{cookie}");

    let plain = reqwest::Client::new().get(format!("http://localhost:{}/login", console.port())).send().await;
    assert!(plain.is_err(), "plain HTTP is not served: {plain:?}");
    let untrusted = https_client(&Ca::new(dir.path(), "rogue").file(), None).get(format!("{base}/login")).send().await;
    assert!(untrusted.is_err(), "the console's certificate is the configured one");
}
