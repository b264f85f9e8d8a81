//! The Prometheus scrape endpoint: `GET /metrics` on its own HTTP port, closed by the admin token when one is set.

use super::auth::RequireToken;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::future::Future;
use std::sync::Arc;

struct Scrape {
    registry: prometheus::Registry,
    token: RequireToken,
}

/// Serves `registry` on `listener` until `shutdown`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    registry: prometheus::Registry,
    token: RequireToken,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let state = Arc::new(Scrape { registry, token });
    let app = axum::Router::new().route("/metrics", axum::routing::get(scrape)).with_state(state);
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await
}

async fn scrape(State(state): State<Arc<Scrape>>, headers: HeaderMap) -> Response {
    let given = headers.get(header::AUTHORIZATION).map(|v| v.as_bytes()).unwrap_or_default();
    if let Err(reason) = state.token.check(given) {
        return (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], reason).into_response();
    }
    match prometheus::TextEncoder::new().encode_to_string(&state.registry.gather()) {
        Ok(text) => ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], text).into_response(),
        Err(err) => (StatusCode::INTERNAL_SERVER_ERROR, err.to_string()).into_response(),
    }
}
