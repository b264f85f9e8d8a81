//! Overload shedding on the gRPC data plane: `Execute` and `ExecuteBatch` under the gateway-wide cap on calls in
//! flight (`core::Shedding`, which the MCP front door's `tools/call` is held to as well).
//! Past it a request is answered at once with UNAVAILABLE and a retry hint, and counted, rather than queued: a
//! queue in front of a saturated gateway only grows, and every call in it would answer late.

use super::status::ServiceError;
use crate::handles::{RETRY_AFTER_MS, Shedding};
use crate::wire::unary::{ResponseBody, UnaryBody};
use http::{Request, Response};
use http_body_util::Either;
use hyper::body::Incoming;
use std::convert::Infallible;
use std::sync::Arc;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower::load_shed::error::Overloaded;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Service, ServiceBuilder};

/// A data-plane method behind the shedding layers.
/// Its error is never produced (the rescue answers every refusal) but is the layers' own type: a poll_ready
/// failure passes through `map_result` by `From`, which `Infallible` has not.
pub type DataPlane = BoxCloneSyncService<Request<Incoming>, Response<ResponseBody>, BoxError>;

/// `inner` (the method `method` names) under the data plane's layers, listed outermost first. The order
/// matters: the cap must be the innermost layer, so that load shedding sees it as not ready, and the rescue the
/// outermost, so that a shed request still gets a gRPC answer rather than a broken stream.
pub fn layer<S>(shedding: &Shedding, method: &'static str, inner: S) -> DataPlane
where
    S: Service<Request<Incoming>, Response = Response<ResponseBody>, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    let counted = shedding.clone();
    let rescue = move |result: Result<Response<ResponseBody>, BoxError>| {
        Ok::<_, BoxError>(result.unwrap_or_else(|error| refused(method, &counted, error)))
    };
    let service = ServiceBuilder::new()
        // Rescue: a shed request becomes UNAVAILABLE with `grpc-retry-pushback-ms`, counted by method.
        .map_result(rescue)
        // Load shed: with no permit free, refuse now instead of waiting for one.
        .load_shed()
        // The cap: one permit per request, shared gateway-wide, held until its answer is ready.
        .layer(GlobalConcurrencyLimitLayer::with_semaphore(Arc::clone(shedding.semaphore())))
        .service(inner);
    BoxCloneSyncService::new(service)
}

/// The answer to a request the layers refused: UNAVAILABLE with a retry hint when shed.
fn refused(method: &'static str, shedding: &Shedding, error: BoxError) -> Response<ResponseBody> {
    if !error.is::<Overloaded>() {
        return broken(error);
    }
    shedding.shed(method);
    let status = tonic::Status::from(ServiceError::Overloaded { max: shedding.max(), retry_after_ms: RETRY_AFTER_MS });
    status.into_http::<UnaryBody>().map(Either::Left)
}

/// INTERNAL, for a layer that failed otherwise. None can (each inner service is infallible), but if one ever
/// does the caller gets an answer, not a reset stream.
pub fn broken(error: BoxError) -> Response<ResponseBody> {
    let status = tonic::Status::from(ServiceError::Internal(format!("the data plane's layers failed: {error}")));
    status.into_http::<UnaryBody>().map(Either::Left)
}
