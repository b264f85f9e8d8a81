//! The front door's direct path. A 2026-07-28 `tools/call` needs no session, and when its tool cannot talk back
//! (any backend but an MCP server's: no progress, log message or request), its answer is its only message: such a
//! call is served here, through the same executor and the same start and answer as the SDK's path, without the
//! SDK's task, transport and copies per request. Every other request goes to the SDK, unchanged.

mod shape;

use super::calls::{self, CallStart, Cleared, HostCall};
use super::handler::FrontDoor;
use crate::executor::{CallRequest, Detachable, ReviewMode};
use crate::telemetry::{Door, in_context};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use http::request::Parts;
use http::{Request, StatusCode};
use rmcp::model::{ServerJsonRpcMessage, ServerResult};
use shape::DirectCall;
pub use shape::DoorChecks;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Service, ServiceExt};

/// The front door's `/mcp` service: the direct path before `sdk`. The router clones it for each request, and it
/// clones itself into each request's future: the SDK's service (its whole configuration) is cloned only for a
/// request handed to it, and the SDK clones it again in its own `call`.
#[derive(Clone)]
pub struct Direct<S> {
    door: Arc<FrontDoor>,
    checks: Arc<DoorChecks>,
    sdk: Arc<S>,
}

impl<S> Direct<S> {
    pub fn new(door: FrontDoor, checks: DoorChecks, sdk: S) -> Self {
        Self { door: Arc::new(door), checks: Arc::new(checks), sdk: Arc::new(sdk) }
    }
}

impl<S> Service<Request<Body>> for Direct<S>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + Sync + 'static,
    S::Future: Send,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The SDK's service is made ready when a request is handed to it.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.serve(request).await) })
    }
}

impl<S> Direct<S>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + Sync + 'static,
    S::Future: Send,
{
    async fn serve(self, request: Request<Body>) -> Response {
        let (parts, body) = request.into_parts();
        let Some(length) = shape::by_head(&parts, &self.checks) else {
            return self.pass(Request::from_parts(parts, body)).await;
        };
        // The length is the one the head declared, at most the body limit, and the body cannot exceed it. One that
        // cannot be read is answered as the SDK answers it.
        let bytes = match axum::body::to_bytes(body, length).await {
            Ok(bytes) => bytes,
            Err(e) => {
                return (StatusCode::INTERNAL_SERVER_ERROR, format!("Failed to read request body: {e}"))
                    .into_response();
            }
        };
        match shape::by_body(&parts, &bytes, self.door.core()) {
            Some(call) => run(&self.door, &parts, call).await,
            None => self.pass(Request::from_parts(parts, Body::from(bytes))).await,
        }
    }

    async fn pass(self, request: Request<Body>) -> Response {
        match S::clone(&self.sdk).oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

/// Runs the call, and answers it as the SDK would: one JSON-RPC message in a JSON body. A host that goes away
/// before the answer does not cancel the call, as it does not on the SDK's path (whose handler runs in a task of
/// its own): it finishes in a task of its own.
async fn run(door: &FrontDoor, parts: &Parts, direct: DirectCall) -> Response {
    let DirectCall { id, principal, name, arguments, meta } = direct;
    let parent = calls::parent(meta.get_traceparent(), &parts.headers);
    let arguments = serde_json::Value::Object(arguments.unwrap_or_default()).to_string();
    let asked = HostCall { principal, session: String::new(), name, arguments, request_state: None };
    let answered = match calls::start(door.core(), door.state_key(), asked) {
        CallStart::Answered(answered) => answered,
        CallStart::Run(Cleared { permit, call, ctx, reviewed }) => {
            let core = Arc::clone(door.core());
            // Built in its box: the run is a large future, and `Box::new` would build it on the stack and copy it.
            let run = Box::write(Box::new_uninit(), async move {
                let req = CallRequest { door: Door::Mcp, ..CallRequest::new(&call, &ctx, None, ReviewMode::Defer) };
                let message = core.executor.execute(req).await;
                drop(permit);
                message
            });
            let run = Detachable::new(Box::into_pin(run), parent.clone(), "its answer is lost");
            let message = in_context(&parent, std::pin::pin!(run)).await;
            Ok(calls::answer(door.state_key(), reviewed, true, message))
        }
    };
    let message = match answered {
        Ok(response) => ServerJsonRpcMessage::response(ServerResult::from(response), id),
        // Only a `requestState` refused answers so, and such a retry is the SDK's; rmcp answers it 200 too.
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    };
    match serde_json::to_vec(&message) {
        Ok(body) => ([(http::header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(err) => {
            (StatusCode::INTERNAL_SERVER_ERROR, format!("the answer could not be written: {err}")).into_response()
        }
    }
}
