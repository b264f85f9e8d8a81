//! The session guard, the middleware after authentication: a request on a session goes on only from its owner, and a
//! new session is opened only with room for it; a 2026-07-28 request, which opens none, takes no room (but a listen).
//! In cluster mode a session is the fleet's: one opened here is recorded in Redis before its id is answered (503 with
//! `Retry-After` if it cannot be), one this gateway does not hold is resumed from its record for its owner, and one
//! closed through another gateway ends here at its next request. While Redis cannot say whether a session it does
//! not hold exists, a request on it is answered 503 with `Retry-After`, never 404: a 404 would make the host start
//! over.

use super::shared::Unrecorded;
use super::{Elsewhere, McpSessions};
use crate::cluster::ClusterError;
use crate::config::Principal;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{Method, StatusCode};
use rmcp::model::ProtocolVersion;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::SessionId;
use std::sync::Arc;

/// The header a session's id travels in.
const SESSION_HEADER: &str = "mcp-session-id";

/// How long a caller refused a session is told to wait: sessions end when closed or idle, not at once.
const RETRY_AFTER_S: &str = "5";

/// How long a caller is told to wait while Redis cannot say what the fleet holds: a moment's outage.
const REDIS_RETRY_AFTER_S: &str = "1";

fn full(limit: usize, whose: &str) -> Response {
    let reason = format!(
        "the MCP front door has its limit of {limit} open sessions {whose}: close one (DELETE /mcp) or wait for an \
         idle one to end"
    );
    (StatusCode::SERVICE_UNAVAILABLE, [(http::header::RETRY_AFTER, RETRY_AFTER_S)], reason).into_response()
}

fn redis_down(err: &ClusterError, doing: &str) -> Response {
    tracing::debug!(error = %err, "an MCP session could not be {doing}");
    let reason = format!("the MCP session cannot be {doing} while the fleet's Redis is unavailable: retry shortly");
    (StatusCode::SERVICE_UNAVAILABLE, [(http::header::RETRY_AFTER, REDIS_RETRY_AFTER_S)], reason).into_response()
}

/// The SDK answers a closed session 202 Accepted, which the official Python SDKs log as a failed termination on
/// every close: the session is gone at once, so 204 No Content says so.
fn closed(mut response: Response) -> Response {
    if response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

/// The middleware: a request on a session (`on_session`), or one that may open one (`open`).
pub async fn guard(State(sessions): State<Arc<McpSessions>>, request: Request, next: Next) -> Response {
    let principal = request.extensions().get::<Principal>().cloned().unwrap_or_default();
    let id = request.headers().get(SESSION_HEADER).map(|v| v.to_str().unwrap_or_default().to_owned());
    match id {
        Some(id) => on_session(&sessions, &principal, &id, request, next).await,
        // Only a POST without a session opens one (with `initialize`); anything else the SDK refuses.
        None if request.method() != Method::POST => next.run(request).await,
        // A 2026-07-28 request stands alone: it takes no place among the sessions, however many run at once.
        None if takes_no_place(&request) => next.run(request).await,
        None => open(&sessions, &principal, request, next).await,
    }
}

/// A request that needs no place among the sessions: of 2026-07-28 or later (by its `MCP-Protocol-Version`, read as
/// the SDK reads it), with an `Mcp-Method` (which the SDK holds to the body's method) that is neither `initialize`
/// nor `subscriptions/listen`. The SDK refuses an `initialize` whose `Mcp-Method` says otherwise before it opens
/// anything (`a_2026_call_takes_no_session_place_and_cannot_open_one` holds it to that); a listen stays open as long
/// as a session may, and is held to the sessions' caps, the only bound on how many a caller keeps open.
fn takes_no_place(request: &Request) -> bool {
    let headers = request.headers();
    let version = headers.get("mcp-protocol-version").and_then(|v| v.to_str().ok());
    let standard = version.is_some_and(|v| v >= ProtocolVersion::STANDARD_HEADERS.as_str());
    standard
        && headers.get("mcp-method").is_some_and(|method| method != "initialize" && method != "subscriptions/listen")
}

/// A request on session `id`: its owner's on a session held here, or one the fleet holds, resumed here.
async fn on_session(
    sessions: &Arc<McpSessions>,
    principal: &Principal,
    id: &str,
    request: Request,
    next: Next,
) -> Response {
    match sessions.owner(id) {
        Some(owner) if owner != *principal => return not_found(),
        Some(_) if sessions.still_open(id).await => return pass(request, next).await,
        Some(_) => {
            // Closed through another gateway, or idle on all of them: this gateway's copy ends too.
            let _ = sessions.close_session(&SessionId::from(id)).await;
            return not_found();
        }
        None => {}
    }
    let initialize = match sessions.elsewhere(id, principal).await {
        Elsewhere::Resumable(initialize) => initialize,
        Elsewhere::Unknown => return not_found(),
        Elsewhere::Unreachable(err) => return redis_down(&err, "resumed"),
    };
    // A `DELETE` needs no copy here: the SDK deletes the record.
    if request.method() == Method::DELETE {
        return pass(request, next).await;
    }
    let reservation = match sessions.reserve(principal) {
        Ok(reservation) => reservation,
        Err((limit, whose)) => return full(limit, whose),
    };
    // The SDK, not holding the session, loads this record, makes the session under its id and replays the
    // host's `initialize` and `initialized` into it (answering them to no one), then serves the request.
    let resuming = sessions.resuming(id, initialize);
    let response = next.run(request).await;
    drop(resuming);
    tracing::debug!(session = id, status = %response.status(), "an MCP session opened elsewhere was resumed");
    reservation.bind(id).await;
    response
}

async fn pass(request: Request, next: Next) -> Response {
    let delete = request.method() == Method::DELETE;
    let response = next.run(request).await;
    if delete { closed(response) } else { response }
}

/// A request that may open a session (an `initialize`): only with room for it, and in cluster mode only once
/// the fleet's record of it is written.
async fn open(sessions: &Arc<McpSessions>, principal: &Principal, request: Request, next: Next) -> Response {
    let reservation = match sessions.reserve(principal) {
        Ok(reservation) => reservation,
        Err((limit, whose)) => return full(limit, whose),
    };
    let response = next.run(request).await;
    let Some(id) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned) else {
        return response;
    };
    if let Err(unrecorded) = sessions.record(&id, principal).await {
        // No other gateway could resume it: the session is not opened at all, and the host may try again.
        let _ = sessions.close_session(&SessionId::from(id)).await;
        return match unrecorded {
            Unrecorded::Unavailable(err) => redis_down(&err, "opened"),
            Unrecorded::TooLarge => {
                let reason = "the initialize request is too large to keep for the fleet's other gateways";
                (StatusCode::PAYLOAD_TOO_LARGE, reason).into_response()
            }
        };
    }
    reservation.bind(&id).await;
    response
}
