//! The MCP front door: MCP over Streamable HTTP at `/mcp` on a listener of its own (`[mcp_front]`), served by the
//! official SDK's server side (`rmcp`), and a plain 2026-07-28 call by a direct path beside it (`direct`), so that
//! any MCP host gets repair, validation, injection and policy by pointing at toolgate. Calls go through the same
//! executor as `Execute`; the caller is the principal its bearer token stands for, and an injected parameter is
//! filled from that principal alone.

mod answer;
mod auth;
mod calls;
mod confirm;
mod direct;
mod handler;
mod host;
mod jwt;
mod listen;
mod offers;
mod reviewed;
mod sessions;
mod state;

/// How often a session's change follower checks whether its session is gone, when nothing changes.
const SESSION_CHECK: std::time::Duration = std::time::Duration::from_secs(30);

use crate::cluster::Redis;
use crate::config::McpFrontSettings;
use crate::handles::Core;
use crate::wire::listen::Inbound;
use crate::wire::side_listener::{self, BindError, Peer, SideListener};
use auth::Principals;
use axum::response::IntoResponse;
use handler::FrontDoor;
use jwt::JwtVerifier;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sessions::McpSessions;
use state::StateKey;
use std::sync::Arc;
use tokio::net::TcpListener;
use tower::ServiceBuilder;

/// What the front door reads of the configuration: `[mcp_front]`, and the request size limit.
#[derive(Clone)]
pub struct FrontDoorSettings {
    pub front: McpFrontSettings,
    /// A request body is at most this size (`limits.max_request_bytes`, as on gRPC).
    pub max_request_bytes: usize,
    /// The key a waiting reviewed call's `requestState` is sealed with (`state`).
    pub state_key: [u8; 32],
    /// Cluster mode's Redis: each session is recorded there, so that any gateway of the fleet can resume it.
    pub redis: Option<Redis>,
}

/// The front door, bound, with the JWT issuer's keys read: ready to serve.
pub struct Bound {
    listener: TcpListener,
    jwt: Option<Arc<JwtVerifier>>,
}

/// Binds the front door's port, when `[mcp_front] listen` sets one, and reads the JWT issuer's keys.
pub async fn bind(front: &McpFrontSettings) -> Result<Option<Bound>, BindError> {
    let Some(addr) = front.listen else { return Ok(None) };
    let listener = side_listener::bind(addr).await?;
    let jwt = match front.jwt.clone() {
        Some(settings) => {
            Some(JwtVerifier::start(settings).await.map_err(|e| BindError { addr, reason: format!("JWKS: {e}") })?)
        }
        None => None,
    };
    Ok(Some(Bound { listener, jwt }))
}

/// Serves the front door on `bound` in a task of its own; dropping the returned sender stops it, ending every
/// MCP session (and, once the task ends, its handle to the core). Its calls are held to the core's cap on calls
/// in flight, the one the gRPC door's are held to.
pub fn spawn(
    bound: Bound,
    settings: &FrontDoorSettings,
    core: Arc<Core>,
    inbound: Option<Inbound>,
) -> std::io::Result<tokio::sync::oneshot::Sender<()>> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let Bound { listener, jwt } = bound;
    let addr = listener.local_addr()?;
    let listener = SideListener::new(listener, inbound);
    if settings.front.tokens.is_empty() && jwt.is_none() {
        tracing::warn!(%addr, "the MCP front door has no [[mcp_front.tokens]] nor [mcp_front.jwt]: any local process may call every tool");
    }
    tracing::info!(%addr, "serving MCP at {}://{addr}/mcp", listener.scheme());
    let http = http_config(settings);
    let sessions_end = http.cancellation_token.clone();
    let state_key = Arc::new(StateKey::new(settings.state_key, settings.front.request_state_ttl));
    let door = FrontDoor::new(core, settings.front.confirm_timeout, state_key);
    let app = router(&settings.front, settings.redis.clone(), door, http, jwt);
    tokio::spawn(async move {
        let stopped = async move {
            let _ = stopped.await;
            // Open SSE streams would hold the graceful stop forever: the sessions end first.
            sessions_end.cancel();
        };
        let app = app.into_make_service_with_connect_info::<Peer>();
        if let Err(err) = axum::serve(listener, app).with_graceful_shutdown(stopped).await {
            tracing::error!(%addr, error = %err, "the MCP front door stopped");
        }
    });
    Ok(stop)
}

/// The SDK's own checks: `Host` and `Origin` from the config (DNS rebinding; an `Origin` sent is always checked,
/// against loopback origins by default), and the body limit, enforced while the body streams in (413 past it).
fn http_config(settings: &FrontDoorSettings) -> StreamableHttpServerConfig {
    let front = &settings.front;
    StreamableHttpServerConfig::default()
        .with_allowed_hosts(front.allowed_hosts.clone())
        .with_allowed_origins(front.allowed_origins.clone())
        .enforce_origin_validation()
        .with_max_request_body_bytes(settings.max_request_bytes)
        // No SSE priming event before each answer: it lets a client resume a cut stream, which a call's one
        // answer does not need, and it costs every call a write.
        .with_sse_retry(None)
        // A request served without a session (2026-07-28) whose answer is all it sends is answered as one JSON
        // body rather than an event stream; one that relays progress, a log message or a server's request first
        // still streams. Sessions (2025-11-25) always stream.
        .with_json_response(true)
}

/// The front door's stack. Layers run outermost first, in the order written:
fn router(
    front: &McpFrontSettings,
    redis: Option<Redis>,
    door: FrontDoor,
    mut http: StreamableHttpServerConfig,
    jwt: Option<Arc<JwtVerifier>>,
) -> axum::Router {
    let (max, per_principal, idle) = (front.max_sessions, front.max_sessions_per_principal, front.session_idle);
    let sessions = Arc::new(match redis {
        Some(redis) => McpSessions::shared(redis, max, per_principal, idle),
        None => McpSessions::local(max, per_principal, idle),
    });
    // In cluster mode the SDK restores, from the fleet's records, a session another gateway opened.
    http.session_store = sessions.store();
    let checks =
        direct::DoorChecks { allowed_hosts: http.allowed_hosts.clone(), max_body: http.max_request_body_bytes };
    let direct_door = door.clone();
    let mcp = StreamableHttpService::new(move || Ok(door.for_session()), Arc::clone(&sessions), http);
    let mcp = ServiceBuilder::new().map_response(IntoResponse::into_response).service(mcp);
    // 3. A 2026-07-28 call that needs no stream is served without the SDK; anything else by it.
    let mcp = direct::Direct::new(direct_door, checks, mcp);
    let principals = Principals::new(front.tokens.clone(), jwt.clone());
    let stack = ServiceBuilder::new()
        // 1. Authentication before any body is read: an unknown caller costs a header lookup.
        .layer(axum::middleware::from_fn_with_state(principals, auth::require))
        // 2. A session is its opener's alone, and there are only so many. (Calls are shed in the handler, by
        //    the gateway-wide `max_calls_in_flight`, since a call's HTTP answer is a stream that outlives it.)
        .layer(axum::middleware::from_fn_with_state(sessions, sessions::guard));
    let router = axum::Router::new().route_service("/mcp", mcp).layer(stack);
    // The RFC 9728 document is public: a host reads it to learn where to get a token.
    match jwt {
        Some(jwt) => {
            let document = jwt.metadata().to_string();
            let answer =
                move || std::future::ready(([(http::header::CONTENT_TYPE, "application/json")], document.clone()));
            let metadata = axum::routing::get(answer);
            router.route(jwt::METADATA_PATH, metadata.clone()).route(&format!("{}/mcp", jwt::METADATA_PATH), metadata)
        }
        None => router,
    }
}
