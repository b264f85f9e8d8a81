//! The Prometheus scrape endpoint: `GET /metrics` on its own HTTP port (`[telemetry] prometheus_listen`), closed by
//! the admin token when one is set, serving what `Telemetry` registered.

use super::ServeError;
use crate::grpc::RequireToken;
use crate::telemetry::Telemetry;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Binds the Prometheus endpoint's port, when one is configured.
pub async fn bind(addr: Option<SocketAddr>) -> Result<Option<TcpListener>, ServeError> {
    let Some(addr) = addr else { return Ok(None) };
    let listener = TcpListener::bind(addr).await.map_err(|e| ServeError::Metrics { addr, reason: e.to_string() })?;
    Ok(Some(listener))
}

/// Serves `/metrics` on `listener` in a task of its own; dropping the returned sender stops it.
pub fn spawn(
    listener: TcpListener,
    admin_token: Option<&str>,
    telemetry: &Telemetry,
) -> tokio::sync::oneshot::Sender<()> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let token = RequireToken::new("admin", admin_token);
    let registry = telemetry.prometheus().cloned().unwrap_or_default();
    let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    tracing::info!(%addr, "serving Prometheus metrics at /metrics");
    tokio::spawn(async move {
        let stopped = async {
            let _ = stopped.await;
        };
        if let Err(err) = serve(listener, registry, token, stopped).await {
            tracing::error!(%addr, error = %err, "the metrics endpoint stopped");
        }
    });
    stop
}

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
