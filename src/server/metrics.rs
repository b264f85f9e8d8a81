//! The Prometheus scrape endpoint (`GET /metrics` on its own HTTP port, closed by the admin token when one is set),
//! and the telemetry as configured: its gauges, and the calls it keeps for the console.

use super::ServeError;
use super::auth::RequireToken;
use crate::cluster::Redis;
use crate::config::Config;
use crate::registry::Registry;
use crate::review::ReviewQueue;
use crate::telemetry::{Gauges, Telemetry};
use crate::tls::ClientTls;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Binds the Prometheus endpoint's port, when one is configured.
pub async fn bind(config: &Config) -> Result<Option<TcpListener>, ServeError> {
    let Some(addr) = config.telemetry.prometheus_listen else { return Ok(None) };
    let listener = TcpListener::bind(addr).await.map_err(|e| ServeError::Metrics { addr, reason: e.to_string() })?;
    Ok(Some(listener))
}

/// Serves `/metrics` on `listener` in a task of its own; dropping the returned sender stops it.
pub fn spawn(listener: TcpListener, config: &Config, telemetry: &Telemetry) -> tokio::sync::oneshot::Sender<()> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let token = RequireToken::new("admin", config.tokens.admin.as_deref());
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

/// Telemetry as configured, with gauges reading the registry and the review queue while they live.
pub(super) fn telemetry(
    config: &Config,
    registry: &Arc<Registry>,
    reviews: &Arc<ReviewQueue>,
    redis: Option<&Redis>,
    collector: &Arc<ClientTls>,
) -> Result<Telemetry, ServeError> {
    let (registry, reviews) = (Arc::downgrade(registry), Arc::downgrade(reviews));
    let degraded = redis.map(|redis| redis.watch_down());
    let gauges = Gauges {
        registered_tools: Box::new(move || registry.upgrade().map_or(0, |r| r.catalog().len() as u64)),
        pending_reviews: Box::new(move || reviews.upgrade().map_or(0, |q| q.pending_count() as u64)),
        cluster_degraded: degraded
            .map(|down| Box::new(move || u64::from(*down.borrow())) as Box<dyn Fn() -> u64 + Send + Sync>),
    };
    let mut telemetry = Telemetry::new(&config.telemetry, gauges, collector)?;
    if config.console.listen.is_some() {
        telemetry.keep_recent(config.console.recent_calls);
    }
    Ok(telemetry)
}
