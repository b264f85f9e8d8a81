//! The MCP front door as an OAuth 2.1 resource server: JWTs signed by a test issuer (`tests/data/jwt/`, a key made
//! for these tests alone), checked against its JWKS from a file or a real HTTP server, over real HTTP with rmcp.

use crate::support;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::{Gateway, start_gateway, temp_config};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::PathBuf;
use tempfile::TempDir;
use toolgate::config::{JwksSource, JwtSettings, McpFrontSettings};

const ISSUER: &str = "https://issuer.test/";
const KEYS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/jwt");

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// A token the test issuer signed, for `audience`, expiring `expires_in` seconds from now (negative: past).
fn token(audience: &str, expires_in: i64, user: &str) -> String {
    let key = EncodingKey::from_rsa_pem(&std::fs::read(format!("{KEYS}/private.pem")).unwrap()).unwrap();
    let header = Header { kid: Some("test-key-1".into()), ..Header::new(Algorithm::RS256) };
    let exp = now().saturating_add_signed(expires_in);
    let claims = json!({"iss": ISSUER, "aud": audience, "exp": exp, "sub": user, "org": "acme"});
    encode(&header, &claims, &key).unwrap()
}

/// A gateway whose front door trusts the test issuer's keys from `jwks`, with an acme tool injecting `user_id`.
async fn front(jwks: JwksSource) -> (TempDir, Gateway, SocketAddr, String) {
    toolgate::tls::install_provider(); // the process-wide rustls provider the gateway installs too
    let (dir, mut config) = temp_config();
    let addr = support::free_addr();
    let audience = format!("http://{addr}/mcp");
    let jwt = JwtSettings {
        jwks,
        issuer: ISSUER.into(),
        audience: audience.clone(),
        user_claim: "sub".into(),
        tenant_claim: Some("org".into()),
        refresh: std::time::Duration::from_secs(300),
    };
    config.mcp_front = McpFrontSettings {
        listen: Some(addr),
        allowed_hosts: vec!["127.0.0.1".into()],
        jwt: Some(jwt),
        ..Default::default()
    };
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(json!({"name": "profile", "tenant": "acme",
        "input_schema": {"type": "object", "properties": {"user_id": {"type": "string"}}},
        "inject": [{"param": "user_id", "from": "user_id"}], "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();
    (dir, gw, addr, audience)
}

async fn post_initialize(addr: SocketAddr, token: &str) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// Lists and calls as the token's user: what the tool received. `None` when the handshake is refused.
async fn whoami(audience: &str, token: &str) -> Option<Value> {
    let config = StreamableHttpClientTransportConfig::with_uri(audience).auth_header(token);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    let host = match ().serve(transport).await {
        Ok(host) => host,
        Err(err) => {
            eprintln!("handshake refused: {err}");
            return None;
        }
    };
    let tools = host.list_all_tools().await.unwrap();
    assert_eq!(tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>(), ["profile"], "acme's tools");
    let params = rmcp::model::CallToolRequestParams::new("profile")
        .with_arguments(serde_json::from_value(json!({"user_id": "mallory"})).unwrap());
    Some(host.call_tool(params).await.unwrap().structured_content.unwrap_or_default())
}

#[tokio::test]
async fn a_valid_jwt_speaks_for_its_user_and_tenant_and_others_get_a_challenge() {
    let (_dir, _gw, addr, audience) = front(JwksSource::File(PathBuf::from(KEYS).join("jwks.json"))).await;

    let received = whoami(&audience, &token(&audience, 600, "carol")).await.expect("a valid JWT is accepted");
    assert_eq!(received, json!({"user_id": "carol"}), "the sub claim, never the model's value");

    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource");
    for (why, bad) in [
        ("expired", token(&audience, -3600, "carol")),
        ("for another audience", token("https://elsewhere.test/mcp", 600, "carol")),
        ("not a JWT", "garbage".to_owned()),
    ] {
        let refused = post_initialize(addr, &bad).await;
        assert_eq!(refused.status(), 401, "{why}");
        let challenge = refused.headers()["www-authenticate"].to_str().unwrap();
        assert!(challenge.contains(&format!("resource_metadata=\"{metadata_url}\"")), "{why}: {challenge}");
    }
    let document: Value = reqwest::get(&metadata_url).await.unwrap().json().await.unwrap();
    assert_eq!(document["resource"], audience.as_str());
    assert_eq!(document["authorization_servers"], json!([ISSUER]));
}

#[tokio::test]
async fn the_issuers_keys_are_fetched_from_its_jwks_url() {
    let jwks = std::fs::read_to_string(format!("{KEYS}/jwks.json")).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = listener.local_addr().unwrap();
    let app = axum::Router::new().route("/jwks.json", axum::routing::get(move || std::future::ready(jwks.clone())));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let (_dir, _gw, _addr, audience) = front(JwksSource::Url(format!("http://{issuer}/jwks.json"))).await;

    let token = token(&audience, 600, "dave");
    for _ in 0..100 {
        if let Some(received) = whoami(&audience, &token).await {
            assert_eq!(received, json!({"user_id": "dave"}));
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the keys from the JWKS URL were never used");
}
