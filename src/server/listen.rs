//! The listener: HTTP/2 connections served by hyper, with `Execute` answered by its own path (`execute.rs`) and
//! every other request routed to the tonic services. The accept loop and graceful stop are tonic's own.

use super::execute::{self, FastExecute, UnaryBody};
use super::shed::{self, DataPlane, Shedding};
use super::status::ServiceError;
use crate::coalesce::Coalesced;
use crate::grpc_wire;
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
use tonic::Status;
use tonic::codegen::Service;
use tonic::service::Routes;
use tower::ServiceExt;

/// How often an HTTP/2 ping checks that a client is still there, and how long its answer may take.
const KEEPALIVE: Duration = Duration::from_secs(20);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause after a failed accept (out of file descriptors, say), so the loop does not spin on it.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A response from either path.
pub type ResponseBody = Either<UnaryBody, tonic::body::Body>;

/// Sends each request to its path: `Execute` to `FastExecute`, the rest to the tonic services; `Execute` and
/// `ExecuteBatch` under the data plane's overload shedding.
#[derive(Clone)]
pub struct Dispatch {
    execute: DataPlane,
    batch: DataPlane,
    routes: Routes,
}

impl Dispatch {
    pub fn new(execute: FastExecute, routes: Routes, shedding: &Shedding) -> Self {
        let routes = routes.prepare();
        let execute = Arc::new(execute);
        let fast = tower::service_fn(move |request: Request<Incoming>| {
            let execute = Arc::clone(&execute);
            async move { Ok::<_, Infallible>(execute.serve(request).await.map(Either::Left)) }
        });
        let tonic_routes = routes.clone();
        let batch = tower::service_fn(move |request| routed(tonic_routes.clone(), request));
        Self { execute: shedding.layer("Execute", fast), batch: shedding.layer("ExecuteBatch", batch), routes }
    }
}

impl hyper::service::Service<Request<Incoming>> for Dispatch {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    /// Answers within the caller's `grpc-timeout`, as tonic's server did for every method: past it, with
    /// DEADLINE_EXCEEDED. (`Execute` answers a little before it on its own, with a TIMEOUT message.)
    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let timeout = grpc_wire::timeout(request.headers());
        let data_plane = match (request.method(), request.uri().path()) {
            (&Method::POST, execute::PATH) => Some(self.execute.clone()),
            (&Method::POST, BATCH_PATH) => Some(self.batch.clone()),
            _ => None,
        };
        let routes = self.routes.clone();
        Box::pin(async move {
            let answer = async move {
                match data_plane {
                    Some(service) => Ok(service.oneshot(request).await.unwrap_or_else(shed::broken)),
                    None => routed(routes, request).await,
                }
            };
            match timeout {
                Some(timeout) => tokio::time::timeout(timeout, answer).await.unwrap_or_else(|_| Ok(expired(timeout))),
                None => answer.await,
            }
        })
    }
}

/// The path of the data plane's other method, served by tonic.
const BATCH_PATH: &str = "/toolgate.v1.ToolGateway/ExecuteBatch";

/// A request answered by the tonic services.
async fn routed(mut routes: Routes, request: Request<Incoming>) -> Result<Response<ResponseBody>, Infallible> {
    std::future::poll_fn(|cx| Service::<Request<Incoming>>::poll_ready(&mut routes, cx)).await?;
    Ok(routes.call(request).await?.map(Either::Right))
}

/// The answer to a request still running when its `grpc-timeout` expired.
fn expired(timeout: Duration) -> Response<ResponseBody> {
    let status: Status =
        ServiceError::DeadlineExceeded(format!("no answer within the call's timeout of {timeout:?}")).into();
    status.into_http::<UnaryBody>().map(Either::Left)
}

/// Serves `dispatch` on every connection `listener` accepts until `shutdown`; then asks every connection to finish
/// what it is doing, and returns once all have closed.
pub async fn serve(listener: TcpListener, dispatch: Dispatch, shutdown: impl Future<Output = ()>) {
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        // A peer that vanishes without closing its connection (a worker's host lost, say) is found within
        // KEEPALIVE + KEEPALIVE_TIMEOUT, and its streams end: a worker is detached and its calls fail at once.
        .keep_alive_interval(Some(KEEPALIVE))
        .keep_alive_timeout(KEEPALIVE_TIMEOUT);
    // hyper's default of 200 streams per connection stays: tonic lifted it, but each stream may hold a request of
    // up to `max_request_bytes` while it is read.
    let (stopping, stop_seen) = watch::channel(());
    accept(listener, &dispatch, &builder, &stop_seen, shutdown).await;
    // The listener is closed by now, so clients arriving during the drain are refused rather than left waiting in
    // the backlog.
    let _ = stopping.send(());
    drop(stop_seen);
    stopping.closed().await;
}

/// Accepts connections (no delay, coalesced writes) and serves each, until `shutdown`; then closes the listener.
async fn accept(
    listener: TcpListener,
    dispatch: &Dispatch,
    builder: &hyper::server::conn::http2::Builder<TokioExecutor>,
    stop: &watch::Receiver<()>,
    shutdown: impl Future<Output = ()>,
) {
    let mut shutdown = pin!(shutdown);
    let mut incoming = pin!(crate::coalesce::incoming(listener));
    loop {
        tokio::select! {
            () = &mut shutdown => return,
            accepted = incoming.next() => match accepted {
                Some(Ok(io)) => spawn_connection(io, dispatch.clone(), builder.clone(), stop.clone()),
                Some(Err(err)) => {
                    tracing::warn!(error = %err, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
                None => return,
            },
        }
    }
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
