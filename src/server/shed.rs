//! Overload shedding on the data plane: one gateway-wide cap on `Execute`, `ExecuteBatch` and the MCP front door's
//! `tools/call` requests in flight.
//! Past it a request is answered at once with UNAVAILABLE and a retry hint, and counted, rather than queued: a
//! queue in front of a saturated gateway only grows, and every call in it would answer late.

use super::status::ServiceError;
use crate::telemetry::Telemetry;
use crate::wire::unary::{ResponseBody, UnaryBody};
use http::{Request, Response};
use http_body_util::Either;
use hyper::body::Incoming;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::limit::GlobalConcurrencyLimitLayer;
use tower::load_shed::error::Overloaded;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Service, ServiceBuilder};

/// A data-plane method behind the shedding layers.
/// Its error is never produced (the rescue answers every refusal) but is the layers' own type: a poll_ready
/// failure passes through `map_result` by `From`, which `Infallible` has not.
pub type DataPlane = BoxCloneSyncService<Request<Incoming>, Response<ResponseBody>, BoxError>;

/// How long a shed caller is told to wait before it tries again: about the time a typical call takes to leave
/// room, short enough that a burst's retries are not all pushed far out.
pub const RETRY_AFTER_MS: u64 = 100;

/// The cap shared by every connection and both methods, and where shed requests are counted.
#[derive(Clone)]
pub struct Shedding {
    in_flight: Arc<Semaphore>,
    max: usize,
    telemetry: Arc<Telemetry>,
}

impl Shedding {
    pub fn new(max: usize, telemetry: Arc<Telemetry>) -> Self {
        Self { in_flight: Arc::new(Semaphore::new(max)), max, telemetry }
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max
    }

    /// A permit from the same cap for a call that comes through another door (the MCP front door's `tools/call`),
    /// held until the call is answered; `None`, counted as shed under `method`, when every permit is taken.
    pub fn try_enter(&self, method: &'static str) -> Option<OwnedSemaphorePermit> {
        let permit = Arc::clone(&self.in_flight).try_acquire_owned().ok();
        if permit.is_none() {
            self.telemetry.shed(method);
        }
        permit
    }

    /// `inner` (the method `method` names) under the data plane's layers, listed outermost first. The order
    /// matters: the cap must be the innermost layer, so that load shedding sees it as not ready, and the rescue
    /// the outermost, so that a shed request still gets a gRPC answer rather than a broken stream.
    pub fn layer<S>(&self, method: &'static str, inner: S) -> DataPlane
    where
        S: Service<Request<Incoming>, Response = Response<ResponseBody>, Error = Infallible>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        let (max, telemetry) = (self.max, Arc::clone(&self.telemetry));
        let rescue = move |result: Result<Response<ResponseBody>, BoxError>| {
            Ok::<_, BoxError>(result.unwrap_or_else(|error| refused(method, max, &telemetry, error)))
        };
        let service = ServiceBuilder::new()
            // Rescue: a shed request becomes UNAVAILABLE with `grpc-retry-pushback-ms`, counted by method.
            .map_result(rescue)
            // Load shed: with no permit free, refuse now instead of waiting for one.
            .load_shed()
            // The cap: one permit per request, shared gateway-wide, held until its answer is ready.
            .layer(GlobalConcurrencyLimitLayer::with_semaphore(Arc::clone(&self.in_flight)))
            .service(inner);
        BoxCloneSyncService::new(service)
    }
}

/// The answer to a request the layers refused: UNAVAILABLE with a retry hint when shed.
fn refused(method: &'static str, max: usize, telemetry: &Telemetry, error: BoxError) -> Response<ResponseBody> {
    if !error.is::<Overloaded>() {
        return broken(error);
    }
    telemetry.shed(method);
    let status = tonic::Status::from(ServiceError::Overloaded { max, retry_after_ms: RETRY_AFTER_MS });
    status.into_http::<UnaryBody>().map(Either::Left)
}

/// INTERNAL, for a layer that failed otherwise. None can (each inner service is infallible), but if one ever
/// does the caller gets an answer, not a reset stream.
pub fn broken(error: BoxError) -> Response<ResponseBody> {
    let status = tonic::Status::from(ServiceError::Internal(format!("the data plane's layers failed: {error}")));
    status.into_http::<UnaryBody>().map(Either::Left)
}
