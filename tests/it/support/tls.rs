//! Certificates made in the test (rcgen), written as PEM files, and real servers speaking TLS with them: a gRPC
//! ToolRuntime, an HTTP tool server and an MCP server, each optionally requiring a client certificate.

use crate::support::backends::Runtime;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use toolgate::pb::v1::tool_runtime_server::ToolRuntimeServer;

/// A CA, and the files of what it signs.
pub struct Ca {
    pub name: &'static str,
    pub cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
    dir: PathBuf,
}

/// A certificate and its key, as files.
#[derive(Debug, Clone)]
pub struct Pair {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// How a leaf certificate is made.
pub struct Leaf<'a> {
    pub file: &'a str,
    /// DNS names and IP addresses it is valid for (`localhost`, `127.0.0.1`).
    pub names: &'a [&'a str],
    /// A URI alternative name (a SPIFFE ID), if any.
    pub uri: Option<&'a str>,
    pub common_name: &'a str,
    pub expired: bool,
    pub client: bool,
}

impl<'a> Leaf<'a> {
    pub fn server(file: &'a str) -> Self {
        Leaf {
            file,
            names: &["localhost", "127.0.0.1"],
            uri: None,
            common_name: "localhost",
            expired: false,
            client: false,
        }
    }

    pub fn client(file: &'a str, common_name: &'a str, uri: Option<&'a str>) -> Self {
        Leaf { file, names: &[], uri, common_name, expired: false, client: true }
    }
}

impl Ca {
    pub fn new(dir: &Path, name: &'static str) -> Self {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let cert = params.self_signed(&key).unwrap();
        let ca = Self { name, cert_pem: cert.pem(), issuer: Issuer::new(params, key), dir: dir.to_path_buf() };
        std::fs::write(ca.file(), &ca.cert_pem).unwrap();
        ca
    }

    /// The CA's certificate file.
    pub fn file(&self) -> PathBuf {
        self.dir.join(format!("{}.pem", self.name))
    }

    /// Signs a leaf certificate; writes `<file>.pem` and `<file>-key.pem`.
    pub fn sign(&self, leaf: Leaf<'_>) -> Pair {
        let names: Vec<String> = leaf.names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name.push(DnType::CommonName, leaf.common_name);
        if let Some(uri) = leaf.uri {
            params.subject_alt_names.push(SanType::URI(uri.try_into().unwrap()));
        }
        if leaf.expired {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        params.extended_key_usages = vec![if leaf.client {
            rcgen::ExtendedKeyUsagePurpose::ClientAuth
        } else {
            rcgen::ExtendedKeyUsagePurpose::ServerAuth
        }];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let pair = Pair {
            cert: self.dir.join(format!("{}.pem", leaf.file)),
            key: self.dir.join(format!("{}-key.pem", leaf.file)),
        };
        std::fs::write(&pair.cert, cert.pem()).unwrap();
        std::fs::write(&pair.key, key.serialize_pem()).unwrap();
        pair
    }
}

/// A rustls server configuration from files: `client_ca` makes a client certificate mandatory.
pub fn server_config(pair: &Pair, client_ca: Option<&Path>, alpn: &[&[u8]]) -> Arc<rustls::ServerConfig> {
    toolgate::tls::install_provider();
    let files = toolgate::tls::ServerFiles {
        cert: pair.cert.clone(),
        key: pair.key.clone(),
        client_ca: client_ca.map(Path::to_path_buf),
    };
    let tls = toolgate::tls::ServerTls::load(files).unwrap();
    let acceptor = if alpn.contains(&b"http/1.1".as_slice()) { tls.http() } else { tls.h2() };
    Arc::clone(acceptor.config())
}

/// A TLS connection tonic can serve.
pub struct TlsIo(tokio_rustls::server::TlsStream<TcpStream>);

impl tonic::transport::server::Connected for TlsIo {
    type ConnectInfo = ();
    fn connect_info(&self) -> Self::ConnectInfo {}
}

impl AsyncRead for TlsIo {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsIo {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

/// TLS connections accepted on `listener` (handshakes that fail are dropped, as a server would).
pub fn tls_incoming(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
) -> tokio::sync::mpsc::Receiver<std::io::Result<TlsIo>> {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let (acceptor, tx) = (acceptor.clone(), tx.clone());
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(tcp).await {
                    let _ = tx.send(Ok(TlsIo(tls))).await;
                }
            });
        }
    });
    rx
}

/// The ToolRuntime over TLS on 127.0.0.1:0: its port.
pub async fn start_tls_runtime(runtime: Runtime, config: Arc<rustls::ServerConfig>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let incoming = tokio_stream::wrappers::ReceiverStream::new(tls_incoming(listener, config));
    tokio::spawn(
        tonic::transport::Server::builder().add_service(ToolRuntimeServer::new(runtime)).serve_with_incoming(incoming),
    );
    port
}

/// An HTTP tool server over TLS on 127.0.0.1:0 (`POST /echo` answers the body): its port.
pub async fn start_tls_http(config: Arc<rustls::ServerConfig>) -> u16 {
    let app = axum::Router::new().route(
        "/echo",
        axum::routing::post(|body: String| async move { ([("content-type", "application/json")], body) }),
    );
    serve_tls(app, config).await
}

/// An MCP server (the official SDK's server side) over streamable HTTP and TLS on 127.0.0.1:0, at `/mcp`, with one
/// tool, `echo`, answering its `text`: its port.
pub async fn start_tls_mcp(config: Arc<rustls::ServerConfig>) -> u16 {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    let sessions = Arc::new(LocalSessionManager::default());
    let mcp = StreamableHttpService::new(|| Ok(Echo), sessions, StreamableHttpServerConfig::default());
    serve_tls(axum::Router::new().route_service("/mcp", mcp), config).await
}

/// The MCP server's handler.
#[derive(Clone)]
struct Echo;

impl rmcp::ServerHandler for Echo {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(rmcp::model::ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<rmcp::model::PaginatedRequestParams>,
        _: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let schema = serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let tool = rmcp::model::Tool::new("echo", "Answers its text.", Arc::new(schema.as_object().unwrap().clone()));
        Ok(rmcp::model::ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        _: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let text = request.arguments.and_then(|a| a.get("text")?.as_str().map(str::to_owned)).unwrap_or_default();
        Ok(rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(text)]).into())
    }
}

/// Serves `app` over TLS on 127.0.0.1:0, HTTP/1.1 or HTTP/2 as ALPN chose: its port.
async fn serve_tls(app: axum::Router, config: Arc<rustls::ServerConfig>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut incoming = tls_incoming(listener, config);
    tokio::spawn(async move {
        while let Some(Ok(io)) = incoming.recv().await {
            let service = hyper_util::service::TowerToHyperService::new(app.clone());
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(io);
                let _ = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    port
}
