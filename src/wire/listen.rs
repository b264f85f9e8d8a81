//! The gateway's listener on hyper's HTTP/2 server: each accepted connection (no delay, coalesced writes) served by
//! one service in a task of its own, with keepalive pings, and a graceful stop that lets every connection finish.

use super::coalesce::Coalesced;
use super::socket::{Listener, Stream};
use crate::tls::{Identities, PeerIdentity, ServerTls};
use http::{Request, Response};
use http_body::Body;
use hyper::body::Incoming;
use hyper::server::conn::http2::Builder;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::error::Error;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How often an HTTP/2 ping checks that a client is still there, and how long its answer may take.
const KEEPALIVE: Duration = Duration::from_secs(20);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause after a failed accept (out of file descriptors, say), so the loop does not spin on it.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

type BoxError = Box<dyn Error + Send + Sync>;

/// What hyper's HTTP/2 server needs of a service to serve it on every connection, each in a task of its own.
pub trait Served<B>:
    hyper::service::Service<Request<Incoming>, Response = Response<B>, Future: Send + 'static, Error: Into<BoxError>>
    + Clone
    + Send
    + 'static
{
}

impl<S, B> Served<B> for S where
    S: hyper::service::Service<
            Request<Incoming>,
            Response = Response<B>,
            Future: Send + 'static,
            Error: Into<BoxError>,
        > + Clone
        + Send
        + 'static
{
}

/// What hyper's HTTP/2 server needs of an answer's body to send it from a connection's task.
pub trait SendableBody: Body<Data: Send, Error: Into<BoxError>> + Send + 'static {}

impl<B> SendableBody for B where B: Body<Data: Send, Error: Into<BoxError>> + Send + 'static {}

/// TLS on a listener's connections (ALPN `h2`), and what their client certificates say.
#[derive(Clone)]
pub struct Inbound {
    pub tls: Arc<ServerTls>,
    pub identities: Identities,
}

/// How long a client has to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `service` on every connection `listener` accepts (over TLS with `inbound`) until `shutdown`; then asks
/// every connection to finish what it is doing, and returns once all have closed.
pub async fn serve<S, B>(listener: Listener, service: S, shutdown: impl Future<Output = ()>, inbound: Option<Inbound>)
where
    S: Served<B>,
    B: SendableBody,
{
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        // A peer that vanishes without closing its connection (a worker's host lost, say) is found within
        // KEEPALIVE + KEEPALIVE_TIMEOUT, and its streams end: a worker is detached and its calls fail at once.
        .keep_alive_interval(Some(KEEPALIVE))
        .keep_alive_timeout(KEEPALIVE_TIMEOUT);
    // hyper's default of 200 streams per connection stays: tonic lifted it, but each stream may hold a request of
    // up to `max_request_bytes` while it is read.
    let (stopping, stop_seen) = watch::channel(());
    accept(listener, &service, &builder, &stop_seen, shutdown, inbound.as_ref()).await;
    // The listener is closed by now, so clients arriving during the drain are refused rather than left waiting in
    // the backlog.
    let _ = stopping.send(());
    drop(stop_seen);
    stopping.closed().await;
}

/// Accepts connections (no delay, coalesced writes) and serves each, until `shutdown`; then closes the listener.
async fn accept<S, B>(
    listener: Listener,
    service: &S,
    builder: &Builder<TokioExecutor>,
    stop: &watch::Receiver<()>,
    shutdown: impl Future<Output = ()>,
    inbound: Option<&Inbound>,
) where
    S: Served<B>,
    B: SendableBody,
{
    let mut shutdown = pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok(io) => spawn_connection(io, service.clone(), builder.clone(), stop.clone(), inbound.cloned()),
                Err(err) => {
                    tracing::warn!(error = %err, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
}

/// Serves one connection in a task of its own, after its TLS handshake with `inbound`; once `stop` changes, it
/// finishes its streams and closes.
fn spawn_connection<S, B>(
    io: Stream,
    service: S,
    builder: Builder<TokioExecutor>,
    mut stop: watch::Receiver<()>,
    inbound: Option<Inbound>,
) where
    S: Served<B>,
    B: SendableBody,
{
    tokio::spawn(async move {
        let (io, peer) = match inbound {
            None => (io, None),
            Some(inbound) => match handshake(io, &inbound.tls.h2(), &inbound.identities).await {
                Some(done) => done,
                None => return,
            },
        };
        let service = WithPeer { inner: service, peer };
        let mut connection = pin!(builder.serve_connection(TokioIo::new(Coalesced::new(io)), service));
        let result = tokio::select! {
            result = &mut connection => result,
            _ = stop.changed() => {
                connection.as_mut().graceful_shutdown();
                connection.await
            }
        };
        if let Err(err) = result {
            tracing::debug!(error = %err, "a connection ended with an error");
        }
    });
}

/// The server's side of a client's TLS handshake, within `HANDSHAKE_TIMEOUT`, and the identity its certificate
/// gives; `None`, logged with its cause, for a handshake that fails or takes too long.
pub async fn handshake(
    io: Stream,
    acceptor: &tokio_rustls::TlsAcceptor,
    identities: &Identities,
) -> Option<(Stream, Option<Arc<PeerIdentity>>)> {
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, io.accept_tls(acceptor)).await {
        Ok(Ok(tls)) => {
            let peer = tls.peer_certificates().and_then(|chain| identities.of(chain)).map(Arc::new);
            Some((tls, peer))
        }
        Ok(Err(err)) => {
            let reason = crate::tls::tls_failure(&err).unwrap_or_else(|| err.to_string());
            tracing::info!(error = %reason, "a client's TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::info!(?HANDSHAKE_TIMEOUT, "a client did not finish its TLS handshake in time");
            None
        }
    }
}

/// A connection's service, putting what its client certificate says on each of its requests.
#[derive(Clone)]
struct WithPeer<S> {
    inner: S,
    peer: Option<Arc<PeerIdentity>>,
}

impl<S: hyper::service::Service<Request<Incoming>>> hyper::service::Service<Request<Incoming>> for WithPeer<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn call(&self, mut request: Request<Incoming>) -> Self::Future {
        if let Some(peer) = &self.peer {
            request.extensions_mut().insert(PeerIdentity::clone(peer));
        }
        self.inner.call(request)
    }
}
