//! Cluster mode over TLS: a `redis-server` of the test's own that speaks only TLS (`--tls-port`) and requires
//! client certificates, with certificates made in the test. Two gateway processes share a tool through it with
//! `rediss://` and `[tls.client]`; a client without a certificate, or trusting another CA, is refused with the
//! cause; a CA bundle replaced on disk is used by the next connection.

use crate::support;
use crate::support::backends::start_http;
use crate::support::eventually;
use crate::support::tls::{Ca, Leaf, Pair};
use serde_json::json;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use toolgate::cluster::{ClusterSettings, Redis};
use toolgate::pb::v1 as pb;
use toolgate::tls::{ClientFiles, ClientTls};

/// A `redis-server` serving TLS only, on a free port; killed on drop.
struct TlsRedis {
    port: u16,
    child: Child,
}

impl TlsRedis {
    fn start(ca: &Ca, server: &Pair) -> Self {
        let port = support::free_addr().port();
        let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
        let child = Command::new("redis-server")
            .args(["--port", "0", "--tls-port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "no", "--tls-auth-clients", "yes"])
            .args(["--tls-cert-file", &path(&server.cert), "--tls-key-file", &path(&server.key)])
            .args(["--tls-ca-cert-file", &path(&ca.file())])
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("this test needs redis-server on PATH (apt install redis-server): {e}"));
        // Killed on drop from here on, even if it never listens.
        let redis = Self { port, child };
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return redis;
            }
            #[expect(clippy::disallowed_methods, reason = "a sync start-up wait for redis-server, before any runtime")]
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("redis-server did not listen on its TLS port {port}; is it built with TLS (BUILD_TLS=yes)?");
    }
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client_files(ca: &Ca, identity: Option<&Pair>) -> ClientFiles {
    ClientFiles { ca: Some(ca.file()), cert: identity.map(|p| p.cert.clone()), key: identity.map(|p| p.key.clone()) }
}

/// A Redis handle with `files` as `[tls.client]`.
fn handle(url: &str, files: ClientFiles) -> (Redis, Arc<ClientTls>) {
    let settings = ClusterSettings {
        redis_url: url.to_owned(),
        topology: toolgate::cluster::Topology::parse(url).unwrap(),
        key_prefix: "tls".into(),
        sync_interval: Duration::from_secs(1),
        op_timeout: Duration::from_secs(2),
        rate_precheck: true,
    };
    let tls = Arc::new(ClientTls::load(files).unwrap());
    (Redis::with_tls(settings, Some(Arc::clone(&tls))).unwrap(), tls)
}

/// PING: the error when refused.
async fn ping(redis: &Redis) -> Result<(), String> {
    let ping =
        |mut conn: toolgate::cluster::Conn| async move { redis::cmd("PING").query_async::<String>(&mut conn).await };
    redis.run(ping).await.map(drop).map_err(|e| e.to_string())
}

#[tokio::test]
#[ignore = "needs redis-server built with TLS (Debian's is); .ci/run runs it"]
async fn a_fleet_shares_its_registry_over_rediss_with_client_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, rogue) = (Ca::new(dir.path(), "ca"), Ca::new(dir.path(), "rogue"));
    let server = ca.sign(Leaf::server("redis"));
    let client = ca.sign(Leaf::client("gateway", "toolgate", None));
    let redis = TlsRedis::start(&ca, &server);
    let url = format!("rediss://localhost:{}", redis.port);

    assert_eq!(ping(&handle(&url, client_files(&ca, Some(&client))).0).await, Ok(()));
    let anonymous = ping(&handle(&url, client_files(&ca, None)).0).await.unwrap_err();
    assert!(anonymous.contains("TLS: it requires a client certificate"), "{anonymous}");
    let untrusted = ping(&handle(&url, client_files(&rogue, Some(&client))).0).await.unwrap_err();
    assert!(untrusted.contains("TLS: its certificate is not signed by a trusted CA"), "{untrusted}");

    // Rotation: once the CA bundle is replaced and reloaded, the next connection trusts the new one.
    let bundle = dir.path().join("bundle.pem");
    std::fs::write(&bundle, &rogue.cert_pem).unwrap();
    let (rotating, tls) = handle(&url, ClientFiles { ca: Some(bundle.clone()), ..client_files(&ca, Some(&client)) });
    assert!(ping(&rotating).await.is_err());
    std::fs::write(&bundle, &ca.cert_pem).unwrap();
    assert!(tls.watched().check(), "the replaced bundle is loaded");
    assert_eq!(ping(&rotating).await, Ok(()), "the handle made its connection again with the new bundle");

    let files = client_files(&ca, Some(&client));
    let show = |p: Option<std::path::PathBuf>| p.unwrap().display().to_string();
    let extra = format!(
        "[tls.client]\nca = \"{}\"\ncert = \"{}\"\nkey = \"{}\"\n",
        show(files.ca),
        show(files.cert),
        show(files.key)
    );
    let http = start_http().await;
    let mut nodes = support::cluster::fleet::start(2, &url, "tls", &extra).await;
    let spec = json!({"name": "lookup", "input_schema": {"type": "object"}, "backend": {"http": {"url": format!("{http}/echo")}}});
    nodes[0].register(spec).await.unwrap();
    let other = &mut nodes[1];
    eventually(Duration::from_secs(15), "the tool on the other gateway", async || {
        other.version("lookup").await == Some(1)
    })
    .await;
    let answer = other.call("c1", "lookup", r#"{"q": 1}"#, pb::CallContext::default()).await;
    assert_eq!(answer.content, r#"{"q": 1}"#, "{answer:?}");
}
