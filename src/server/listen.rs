//! The listener: HTTP/2 connections served by hyper, with `Execute` answered by its own path (`execute.rs`) and
//! every other request routed to the tonic services. The accept loop and graceful stop are tonic's own.

use super::execute::{self, FastExecute, UnaryBody};
use crate::coalesce::Coalesced;
use futures::StreamExt;
use http::{Method, Request, Response};
use http_body_util::Either;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tonic::codegen::Service;
use tonic::service::Routes;

/// How often an HTTP/2 ping checks that a client is still there, and how long its answer may take.
const KEEPALIVE: Duration = Duration::from_secs(20);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause after a failed accept (out of file descriptors, say), so the loop does not spin on it.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A response from either path.
pub type ResponseBody = Either<UnaryBody, tonic::body::Body>;

/// Sends each request to its path: `Execute` to `FastExecute`, the rest to the tonic services.
#[derive(Clone)]
pub struct Dispatch {
    execute: Arc<FastExecute>,
    routes: Routes,
}

impl Dispatch {
    pub fn new(execute: FastExecute, routes: Routes) -> Self {
        Self { execute: Arc::new(execute), routes: routes.prepare() }
    }
}

impl hyper::service::Service<Request<Incoming>> for Dispatch {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        if request.uri().path() == execute::PATH && request.method() == Method::POST {
            let execute = Arc::clone(&self.execute);
            return Box::pin(async move { Ok(execute.serve(request).await.map(Either::Left)) });
        }
        let mut routes = self.routes.clone();
        Box::pin(async move {
            std::future::poll_fn(|cx| Service::<Request<Incoming>>::poll_ready(&mut routes, cx)).await?;
            Ok(routes.call(request).await?.map(Either::Right))
        })
    }
}

/// Serves `dispatch` on every connection `listener` accepts (no delay, coalesced writes) until `shutdown`; then
/// asks every connection to finish what it is doing, and returns once all have closed.
pub async fn serve(listener: TcpListener, dispatch: Dispatch, shutdown: impl Future<Output = ()>) {
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        // A peer that vanishes without closing its connection (a worker's host lost, say) is found within
        // KEEPALIVE + KEEPALIVE_TIMEOUT, and its streams end: a worker is detached and its calls fail at once.
        .keep_alive_interval(Some(KEEPALIVE))
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        // As tonic's server: streams per connection are not capped here; the policy caps calls.
        .max_concurrent_streams(None);
    let (stopping, stop_seen) = watch::channel(());
    let mut shutdown = pin!(shutdown);
    let mut incoming = pin!(crate::coalesce::incoming(listener));
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = incoming.next() => match accepted {
                Some(Ok(io)) => spawn_connection(io, dispatch.clone(), builder.clone(), stop_seen.clone()),
                Some(Err(err)) => {
                    tracing::warn!(error = %err, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
                None => break,
            },
        }
    }
    let _ = stopping.send(());
    drop(stop_seen);
    stopping.closed().await;
}

/// Serves one connection in a task of its own; once `stop` changes, it finishes its streams and closes.
fn spawn_connection(
    io: Coalesced<TcpStream>,
    dispatch: Dispatch,
    builder: hyper::server::conn::http2::Builder<TokioExecutor>,
    mut stop: watch::Receiver<()>,
) {
    tokio::spawn(async move {
        let mut connection = pin!(builder.serve_connection(TokioIo::new(io), dispatch));
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
