//! The listener's routing: `Execute` answered by its own path (`execute.rs`), every other request routed to the
//! tonic services, each within the caller's `grpc-timeout`. The connections are served by `wire::listen`.

use super::execute::{self, FastExecute};
use super::shed::{self, DataPlane};
use super::status::ServiceError;
use crate::handles::Shedding;
use crate::wire;
use crate::wire::unary::{ResponseBody, UnaryBody};
use http::{Method, Request, Response};
use http_body_util::Either;
use hyper::body::Incoming;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tonic::Status;
use tonic::codegen::Service;
use tonic::service::Routes;
use tower::ServiceExt;

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
        // Boxed here, where it is made: a call's future is kilobytes, and each layer around it would move it. Built
        // in its box: `Box::pin` would build it on the stack and copy all of it, where only what it holds is written.
        let fast = tower::service_fn(move |request: Request<Incoming>| {
            let execute = Arc::clone(&execute);
            let answer =
                Box::write(Box::new_uninit(), async move { Ok(execute.serve(request).await.map(Either::Left)) });
            Box::into_pin(answer) as BoxedAnswer
        });
        let tonic_routes = routes.clone();
        let batch = tower::service_fn(move |request| routed(tonic_routes.clone(), request));
        let (execute, batch) = (shed::layer(shedding, "Execute", fast), shed::layer(shedding, "ExecuteBatch", batch));
        Self { execute, batch, routes }
    }
}

impl hyper::service::Service<Request<Incoming>> for Dispatch {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    /// Answers within the caller's `grpc-timeout`, as tonic's server did for every method: past it, with
    /// DEADLINE_EXCEEDED. (`Execute` answers a little before it on its own, with a TIMEOUT message.)
    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let timeout = wire::status::timeout(request.headers());
        // The tonic routes are cloned only for a request they serve.
        let route = match (request.method(), request.uri().path()) {
            (&Method::POST, execute::PATH) => Either::Left(self.execute.clone()),
            (&Method::POST, BATCH_PATH) => Either::Left(self.batch.clone()),
            _ => Either::Right(self.routes.clone()),
        };
        // Built in its box, as `fast` is, rather than copied into it.
        let answer = Box::write(Box::new_uninit(), async move {
            let answer = async move {
                match route {
                    Either::Left(data_plane) => Ok(data_plane.oneshot(request).await.unwrap_or_else(shed::broken)),
                    Either::Right(routes) => routed(routes, request).await,
                }
            };
            match timeout {
                Some(timeout) => tokio::time::timeout(timeout, answer).await.unwrap_or_else(|_| Ok(expired(timeout))),
                None => answer.await,
            }
        });
        Box::into_pin(answer)
    }
}

/// An answer on its way, boxed.
type BoxedAnswer = Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>;

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
