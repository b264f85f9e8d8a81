//! The gateway's listener on hyper's HTTP/2 server: each accepted connection (no delay, coalesced writes) served by
//! one service in a task of its own, with keepalive pings, and a graceful stop that lets every connection finish.

use super::coalesce::Coalesced;
use super::socket::{Listener, Stream};
use http::{Request, Response};
use http_body::Body;
use hyper::body::Incoming;
use hyper::server::conn::http2::Builder;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::error::Error;
use std::future::Future;
use std::pin::pin;
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
pub trait Answer: Body<Data: Send, Error: Into<BoxError>> + Send + 'static {}

impl<B> Answer for B where B: Body<Data: Send, Error: Into<BoxError>> + Send + 'static {}

/// Serves `service` on every connection `listener` accepts until `shutdown`; then asks every connection to finish
/// what it is doing, and returns once all have closed.
pub async fn serve<S, B>(listener: Listener, service: S, shutdown: impl Future<Output = ()>)
where
    S: Served<B>,
    B: Answer,
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
    accept(listener, &service, &builder, &stop_seen, shutdown).await;
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
) where
    S: Served<B>,
    B: Answer,
{
    let mut shutdown = pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok(io) => spawn_connection(Coalesced::new(io), service.clone(), builder.clone(), stop.clone()),
                Err(err) => {
                    tracing::warn!(error = %err, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
}

/// Serves one connection in a task of its own; once `stop` changes, it finishes its streams and closes.
fn spawn_connection<S, B>(
    io: Coalesced<Stream>,
    service: S,
    builder: Builder<TokioExecutor>,
    mut stop: watch::Receiver<()>,
) where
    S: Served<B>,
    B: Answer,
{
    tokio::spawn(async move {
        let mut connection = pin!(builder.serve_connection(TokioIo::new(io), service));
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
