//! The MCP front door: MCP over Streamable HTTP at `/mcp` on a listener of its own (`[mcp_front]`), served by the
//! official SDK's server side (`rmcp`), so that any MCP host gets repair, validation, injection and policy by
//! pointing at toolgate. Calls go through the same executor as `Execute`; the caller is the principal its bearer
//! token stands for, and an injected parameter is filled from that principal alone.

mod answer;
mod auth;
mod confirm;
mod handler;
mod jwt;

use super::ServeError;
use super::side_listener::{Peer, SideListener};
use crate::config::Config;
use crate::executor::Executor;
use crate::wire::listen::Inbound;
use auth::Principals;
use axum::error_handling::HandleErrorLayer;
use axum::response::IntoResponse;
use handler::FrontDoor;
use http::StatusCode;
use jwt::JwtVerifier;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower_http::limit::RequestBodyLimitLayer;

/// The front door, bound, with the JWT issuer's keys read: ready to serve.
pub struct Bound {
    listener: TcpListener,
    jwt: Option<Arc<JwtVerifier>>,
}

/// Binds the front door's port, when one is configured, and reads the JWT issuer's keys.
pub async fn bind(config: &Config) -> Result<Option<Bound>, ServeError> {
    let Some(addr) = config.mcp_front.listen else { return Ok(None) };
    let failed = |reason: String| ServeError::McpFront { addr, reason };
    let listener = TcpListener::bind(addr).await.map_err(|e| failed(e.to_string()))?;
    let jwt = match config.mcp_front.jwt.clone() {
        Some(settings) => Some(JwtVerifier::start(settings).await.map_err(|e| failed(format!("JWKS: {e}")))?),
        None => None,
    };
    Ok(Some(Bound { listener, jwt }))
}

/// Serves the front door on `listener` in a task of its own; dropping the returned sender stops it, ending every
/// MCP session.
pub fn spawn(
    bound: Bound,
    config: &Config,
    executor: Arc<Executor>,
    inbound: Option<Inbound>,
) -> Result<tokio::sync::oneshot::Sender<()>, ServeError> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let Bound { listener, jwt } = bound;
    let addr = listener.local_addr().map_err(|e| ServeError::Listener(e.to_string()))?;
    let listener = SideListener::new(listener, inbound);
    if config.mcp_front.tokens.is_empty() && jwt.is_none() {
        tracing::warn!(%addr, "the MCP front door has no [[mcp_front.tokens]] nor [mcp_front.jwt]: any local process may call every tool");
    }
    tracing::info!(%addr, "serving MCP at {}://{addr}/mcp", listener.scheme());
    let http = http_config(config);
    let sessions_end = http.cancellation_token.clone();
    let app = router(config, executor, http, jwt);
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

/// The SDK's own checks: `Host` and `Origin` from the config (DNS rebinding), and the body limit.
fn http_config(config: &Config) -> StreamableHttpServerConfig {
    let front = &config.mcp_front;
    StreamableHttpServerConfig::default()
        .with_allowed_hosts(front.allowed_hosts.clone())
        .with_allowed_origins(front.allowed_origins.clone())
        .with_max_request_body_bytes(config.max_request_bytes)
        // No SSE priming event before each answer: it lets a client resume a cut stream, which a call's one
        // answer does not need, and it costs every call a write.
        .with_sse_retry(None)
}

/// The front door's stack. Layers run outermost first, in the order written:
fn router(
    config: &Config,
    executor: Arc<Executor>,
    http: StreamableHttpServerConfig,
    jwt: Option<Arc<JwtVerifier>>,
) -> axum::Router {
    let mcp = StreamableHttpService::new(
        move || Ok(FrontDoor::new(Arc::clone(&executor))),
        Arc::new(LocalSessionManager::default()),
        http,
    );
    let mcp = ServiceBuilder::new()
        // 4. The body limit, enforced while the body streams in (the SDK checks it again as it reads).
        .layer(RequestBodyLimitLayer::new(config.max_request_bytes))
        .map_response(IntoResponse::into_response)
        .service(mcp);
    let principals = Principals::new(config.mcp_front.tokens.clone(), jwt.clone());
    let stack = ServiceBuilder::new()
        // 1. Overload answers 503 at once: the load shedder below refuses a request it cannot start.
        .layer(HandleErrorLayer::new(|_: tower::BoxError| async { overloaded() }))
        // 2. Past `max_calls_in_flight` requests at once, shed rather than queue (as `Execute` does).
        .load_shed()
        .concurrency_limit(config.max_calls_in_flight)
        // 3. Authentication before any body is read: an unknown caller costs a header lookup.
        .layer(axum::middleware::from_fn_with_state(principals, auth::require));
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

fn overloaded() -> axum::response::Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(http::header::RETRY_AFTER, "1")],
        "the gateway is at its limit of calls in flight",
    )
        .into_response()
}
