//! One HTTP/2 connection to a gRPC tool server, spoken with `h2` directly: opened on first use, opened again once
//! it has closed, and shared by every call to that server. A unary call is one HEADERS and one DATA frame out, and
//! the answer's HEADERS, DATA and trailers back: tonic's channel would add a buffer task and a tower stack to each.

use super::coalesce::Coalesced;
use super::frame::{FrameError, Gather};
use super::socket::Stream;
use super::status::{TLS_FAILURE, http_code, status_in, transport};
use crate::tls::ClientTls;
use bytes::Bytes;
use h2::client::SendRequest;
use http::{HeaderName, HeaderValue, Method, Request, Uri, header};
use rustls::pki_types::ServerName;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tokio::net::{TcpStream, UnixStream};
use tonic::{Code, Status};

/// The flow-control windows and header limit hyper's client (under tonic's channels) uses.
const STREAM_WINDOW: u32 = 2 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 5 * 1024 * 1024;
const MAX_HEADER_LIST: u32 = 16 * 1024;

/// Why a call got no answer from the tool server.
#[derive(Debug)]
pub enum CallFailure {
    /// The server's status, or the transport's failure as the status a gRPC client reports for it.
    Status(Status),
    /// The answer is larger than the gateway takes.
    TooLarge { limit: usize },
}

impl From<Status> for CallFailure {
    fn from(status: Status) -> Self {
        CallFailure::Status(status)
    }
}

/// A target's connection as a status page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// No call has connected yet: the first call connects.
    Never,
    /// A connection is open.
    Open,
    /// The connection closed; the next call opens another.
    Closed,
    /// The last connect failed, this long ago, for this reason.
    Failed { ago: Duration, reason: String },
}

/// A live connection: the handle calls open streams on, and whether the connection task has ended.
#[derive(Clone)]
struct Live {
    send: SendRequest<Bytes>,
    closed: Arc<AtomicBool>,
}

/// A tool server's address and its connection, if one is open.
pub struct Target {
    /// `http://host:port/toolgate.v1.ToolRuntime/Invoke`: the target's scheme and authority, the method's path.
    uri: Uri,
    dial: Dial,
    /// The target as errors name it: `host:port`, or `unix:/path`.
    shown: String,
    live: RwLock<Option<Live>>,
    /// Held while connecting, so that calls arriving meanwhile wait for that connection instead of opening more.
    connecting: tokio::sync::Mutex<()>,
    /// When the last connect failed, and why: the calls that were waiting for it fail with it, rather than each
    /// wait out a connect of its own in turn.
    failed: Mutex<Option<(Instant, Status)>>,
}

/// Where a target's connection goes.
enum Dial {
    /// With `tls`, TLS to the server named so (its certificate checked against the name, which is sent as SNI).
    Host {
        host: String,
        port: u16,
        tls: Option<(ServerName<'static>, Arc<ClientTls>)>,
    },
    Unix(PathBuf),
}

impl Target {
    /// `target` is a registered `grpc.target`: `http://host:port` or `https://host:port` (any path ignored, as
    /// tonic's channels do), or `unix:/path/to.sock`. An `https` target speaks TLS with `tls`'s configuration.
    pub fn new(target: &str, path: &str, tls: &Arc<ClientTls>) -> Result<Self, String> {
        let (live, connecting, failed) = (RwLock::new(None), tokio::sync::Mutex::new(()), Mutex::new(None));
        let bad = |e: &dyn std::fmt::Display| format!("bad gRPC target {target:?}: {e}");
        if let Some(socket) = super::socket::unix_path(target) {
            let uri = Uri::builder().scheme("http").authority("localhost").path_and_query(path).build();
            let shown = format!("unix:{}", socket.display());
            return Ok(Self {
                uri: uri.map_err(|e| bad(&e))?,
                dial: Dial::Unix(socket),
                shown,
                live,
                connecting,
                failed,
            });
        }
        let parsed: Uri = target.parse().map_err(|e| bad(&e))?;
        let (Some(host), Some(authority)) = (parsed.host(), parsed.authority()) else {
            return Err(bad(&"no host"));
        };
        let secure = parsed.scheme_str() == Some("https");
        let uri = Uri::builder()
            .scheme(if secure { "https" } else { "http" })
            .authority(authority.clone())
            .path_and_query(path)
            .build()
            .map_err(|e| bad(&e))?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
        let port = parsed.port_u16().unwrap_or(if secure { 443 } else { 80 });
        let tls = match secure {
            true => Some((ServerName::try_from(host.clone()).map_err(|e| bad(&e))?, Arc::clone(tls))),
            false => None,
        };
        let shown = format!("{}{authority}", if secure { "https://" } else { "" });
        Ok(Self { uri, dial: Dial::Host { host, port, tls }, shown, live, connecting, failed })
    }

    /// The connection now: open, closed, never opened, or why the last connect failed.
    pub fn link(&self) -> Link {
        if self.current().is_some() {
            return Link::Open;
        }
        let failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, status)) = failed.as_ref() {
            return Link::Failed { ago: at.elapsed(), reason: status.message().to_owned() };
        }
        match *self.live.read().unwrap_or_else(|p| p.into_inner()) {
            Some(_) => Link::Closed,
            None => Link::Never,
        }
    }

    fn current(&self) -> Option<Live> {
        let live = self.live.read().unwrap_or_else(|p| p.into_inner());
        live.as_ref().filter(|l| !l.closed.load(Ordering::Acquire)).cloned()
    }

    /// The open connection, or a new one.
    async fn connection(&self, connect_timeout: Duration) -> Result<Live, Status> {
        if let Some(live) = self.current() {
            return Ok(live);
        }
        let queued = Instant::now();
        let _connecting = self.connecting.lock().await;
        if let Some(live) = self.current() {
            return Ok(live);
        }
        if let Some(status) = self.failed_since(queued) {
            return Err(status);
        }
        match self.connect(connect_timeout).await {
            Ok(live) => {
                *self.live.write().unwrap_or_else(|p| p.into_inner()) = Some(live.clone());
                // A failure before this connect is history: what a status page shows is this connection.
                *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = None;
                Ok(live)
            }
            Err(status) => {
                *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), status.clone()));
                Err(status)
            }
        }
    }

    /// Why the last connect failed, if it failed after `since`.
    fn failed_since(&self, since: Instant) -> Option<Status> {
        let failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        failed.as_ref().filter(|(at, _)| *at >= since).map(|(_, status)| status.clone())
    }

    /// A socket to the target, its TLS handshake done, within `connect_timeout`.
    async fn dial(&self, connect_timeout: Duration) -> io::Result<Stream> {
        let connect = async {
            match &self.dial {
                Dial::Host { host, port, tls } => {
                    let tcp = TcpStream::connect((host.as_str(), *port)).await?;
                    tcp.set_nodelay(true)?;
                    match tls {
                        Some((name, config)) => Stream::Tcp(tcp).tls(config.h2(), name.clone()).await,
                        None => Ok(Stream::Tcp(tcp)),
                    }
                }
                Dial::Unix(path) => UnixStream::connect(path).await.map(Stream::Unix),
            }
        };
        let late = || io::Error::new(io::ErrorKind::TimedOut, format!("no connection within {connect_timeout:?}"));
        tokio::time::timeout(connect_timeout, connect).await.map_err(|_| late())?
    }

    async fn connect(&self, connect_timeout: Duration) -> Result<Live, Status> {
        let unavailable = |what: String| Status::unavailable(format!("connecting to {}: {what}", self.shown));
        let failed = |e: io::Error| match crate::tls::tls_failure(&e) {
            Some(tls) => unavailable(format!("{TLS_FAILURE}{tls}")),
            None => unavailable(e.to_string()),
        };
        let tcp = self.dial(connect_timeout).await.map_err(failed)?;
        let (send, connection) = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .max_header_list_size(MAX_HEADER_LIST)
            .enable_push(false)
            .handshake::<_, Bytes>(Coalesced::new(tcp))
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        let closed = Arc::new(AtomicBool::new(false));
        let ended = Arc::clone(&closed);
        let authority = self.shown.clone();
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(target = %authority, error = %err, "connection to a gRPC tool server ended");
            }
            ended.store(true, Ordering::Release);
        });
        Ok(Live { send, closed })
    }

    /// One unary call: `message` (already framed) out with the `trace` headers, the answer's one message back,
    /// at most `limit` bytes. A connection found closed before the request left is replaced once, and the request
    /// sent on the new one: the server never saw it.
    pub async fn unary(
        &self,
        message: Bytes,
        trace: &[(&'static str, String)],
        limit: usize,
        connect_timeout: Duration,
    ) -> Result<Bytes, CallFailure> {
        self.exchange(message, trace, limit, connect_timeout).await.map_err(|failure| match failure {
            CallFailure::Status(status) if status.message().starts_with(TLS_FAILURE) => {
                CallFailure::Status(Status::unavailable(format!("{}: {}", self.shown, status.message())))
            }
            other => other,
        })
    }

    async fn exchange(
        &self,
        message: Bytes,
        trace: &[(&'static str, String)],
        limit: usize,
        connect_timeout: Duration,
    ) -> Result<Bytes, CallFailure> {
        let mut replace = true;
        loop {
            let live = self.connection(connect_timeout).await?;
            let sent = match live.send.clone().ready().await {
                Ok(mut ready) => ready.send_request(self.request(trace), false),
                Err(err) => Err(err),
            };
            match sent {
                Ok((response, mut stream)) => {
                    stream.send_data(message, true).map_err(transport)?;
                    return answer(response, limit).await;
                }
                Err(err) if replace && connection_gone(&err) => {
                    tracing::debug!(target = %self.shown, error = %err, "connection closed; opening another");
                    live.closed.store(true, Ordering::Release);
                    replace = false;
                }
                Err(err) => return Err(transport(err).into()),
            }
        }
    }

    fn request(&self, trace: &[(&'static str, String)]) -> Request<()> {
        let mut request = Request::new(());
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.uri.clone();
        let headers = request.headers_mut();
        for (name, value) in trace {
            // Trace headers are ASCII by construction; one that is not is left out rather than fail the call.
            if let (Some(name), Ok(mut value)) = (static_name(name), HeaderValue::from_str(value)) {
                // New on every call: HPACK's table would gain nothing from it but lose the entries it evicts.
                value.set_sensitive(true);
                headers.insert(name, value);
            }
        }
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        headers.insert(header::TE, HeaderValue::from_static("trailers"));
        headers.insert(header::USER_AGENT, HeaderValue::from_static(USER_AGENT));
        request
    }
}

const USER_AGENT: &str = concat!("toolgate/", env!("CARGO_PKG_VERSION"));

/// `name` as a header name that borrows it (inserted by `&str`, a name is copied on every call); `None` for a name
/// that is not lowercase letters, digits and dashes, which `HeaderName::from_static` would panic on or copy.
fn static_name(name: &'static str) -> Option<HeaderName> {
    let valid = !name.is_empty() && name.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'));
    valid.then(|| HeaderName::from_static(name))
}

/// Reads the answer: its status (in the headers of a trailers-only answer, or in the trailers), and its message.
async fn answer(response: h2::client::ResponseFuture, limit: usize) -> Result<Bytes, CallFailure> {
    let (head, mut body) = response.await.map_err(transport)?.into_parts();
    // A trailers-only answer, or an HTTP error from a proxy that says which gRPC status it means.
    if let Some(status) = status_in(&head.headers) {
        return Err(status_or_ok(status).unwrap_or_else(|| Status::internal("an OK answer with no message")).into());
    }
    if head.status != http::StatusCode::OK {
        return Err(Status::new(http_code(head.status), format!("HTTP status {}", head.status)).into());
    }
    let mut gathered = Gather::new(limit);
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(transport)?;
        let _ = body.flow_control().release_capacity(chunk.len());
        gathered.push(chunk).map_err(frame_failure)?;
    }
    let trailers = body.trailers().await.map_err(transport)?.unwrap_or_default();
    // OK, as nearly every answer is, read without building a `Status` (which copies the trailers).
    if trailers.get("grpc-status").is_none_or(|code| code.as_bytes() != b"0") {
        let status = status_in(&trailers).unwrap_or_else(|| Status::internal("the answer ended without a grpc-status"));
        if let Some(failed) = status_or_ok(status) {
            return Err(failed.into());
        }
    }
    gathered.finish().map_err(frame_failure)
}

/// `None` for an OK status.
fn status_or_ok(status: Status) -> Option<Status> {
    (status.code() != Code::Ok).then_some(status)
}

fn frame_failure(err: FrameError) -> CallFailure {
    match err {
        FrameError::TooLarge { limit, .. } => CallFailure::TooLarge { limit },
        other => CallFailure::Status(Status::internal(format!("a malformed answer: {other}"))),
    }
}

/// Whether a request could not be sent because its connection is gone: closed, failed or going away.
fn connection_gone(err: &h2::Error) -> bool {
    err.is_io() || err.is_go_away()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_header_name_is_borrowed_when_lowercase_and_left_out_otherwise() {
        assert_eq!(static_name("traceparent").map(|n| n.as_str().to_owned()), Some("traceparent".to_owned()));
        for bad in ["", "TraceParent", "trace parent", "tracé"] {
            assert!(static_name(bad).is_none(), "{bad:?}");
        }
    }
}
