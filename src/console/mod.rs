//! The web console for reviewers and operators: server-rendered pages on a listener of its own (`[console]
//! listen`), each asset embedded in the binary, behind a login with the review or admin token: the pending reviews
//! and their verdicts, the recent calls and an overview of the last hour, and (admin only) the tools with their
//! backends' health. Its verdicts go through `review::decide`, as ToolReview's do, so an edit is checked the same
//! way. It reads the core (`handles::Core`) and runs no call.

mod assets;
mod detail;
mod identical;
mod operators;
mod origin;
mod pages;
mod session;
mod throttle;
mod tools;
mod views;

use crate::cluster::Redis;
use crate::config::{ConsoleSettings, Tokens};
use crate::handles::Core;
use crate::pipeline::ParseLimits;
use crate::policy::rules::GatewayRules;
use crate::wire::listen::Inbound;
use crate::wire::side_listener::{self, BindError, Peer, SideListener};
use axum::error_handling::HandleErrorLayer;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use http::header::{self, HeaderValue};
use http::{Method, StatusCode};
use session::Sessions;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;

pub use tools::Defaults;

/// What the console reads of the configuration: `[console]`, and the few gateway-wide settings its pages use.
#[derive(Clone)]
pub struct ConsoleDoorSettings {
    pub console: ConsoleSettings,
    /// The review and admin tokens a reviewer or operator logs in with.
    pub tokens: Tokens,
    /// A reviewer's edit is parsed within these, as a model's arguments are.
    pub parse_limits: ParseLimits,
    /// A form is at most this size.
    pub max_request_bytes: usize,
    /// What the tools page shows where a tool's spec leaves a setting to the gateway.
    pub defaults: Defaults,
    /// `[[policy]]`, for the tools page.
    pub rules: Arc<GatewayRules>,
    /// Cluster mode's Redis, where the sessions are kept so that every gateway of the fleet knows them.
    pub redis: Option<Redis>,
}

/// What every handler shares.
pub struct Console {
    sessions: Sessions,
    /// Wrong logins per client.
    throttle: throttle::Throttle,
    /// The review queue, the registry, the backends' health and the recent calls.
    core: Arc<Core>,
    limits: ParseLimits,
    /// What the tools page shows where a tool's spec leaves a setting to the gateway.
    defaults: Defaults,
    /// `[[policy]]`, for the tools page.
    rules: Arc<GatewayRules>,
    /// Served over TLS: the session cookie is marked Secure.
    tls: bool,
}

/// Nothing but this page's own assets runs or loads: no inline script or style, no other origin, no framing.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
                   form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/// A console request that takes longer is cut: pages read memory and the review queue only.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Requests served at once; past it, 503 at once.
const MAX_IN_FLIGHT: usize = 64;

/// Binds the console's port, when `[console] listen` sets one.
pub async fn bind(console: &ConsoleSettings) -> Result<Option<TcpListener>, BindError> {
    let Some(addr) = console.listen else { return Ok(None) };
    side_listener::bind(addr).await.map(Some)
}

/// Serves the console on `listener` in a task of its own; dropping the returned sender stops it (and, once the
/// task ends, its handle to the core).
pub fn spawn(
    listener: TcpListener,
    settings: ConsoleDoorSettings,
    core: Arc<Core>,
    inbound: Option<Inbound>,
) -> std::io::Result<tokio::sync::oneshot::Sender<()>> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let addr = listener.local_addr()?;
    let tls = inbound.is_some();
    let listener = SideListener::new(listener, inbound);
    let ConsoleDoorSettings {
        console: section,
        tokens,
        parse_limits: limits,
        max_request_bytes,
        defaults,
        rules,
        redis,
    } = settings;
    let sessions = match redis {
        Some(redis) => Sessions::shared(redis, &tokens),
        None => Sessions::local(&tokens),
    };
    let throttle = throttle::Throttle::default();
    let console = Arc::new(Console { sessions, throttle, core, limits, defaults, rules, tls });
    if !console.sessions.closed() {
        tracing::warn!(%addr, "the console has no review or admin token to log in with: any local process may decide reviews");
    }
    if !addr.ip().is_loopback() && section.allowed_hosts.iter().all(|h| is_loopback_name(&h.host)) {
        tracing::warn!(%addr, "the console answers to loopback names only: set [console] allowed_hosts to the names it is served under");
    }
    tracing::info!(%addr, "serving the console at {}://{addr}/", listener.scheme());
    let hosts = origin::Hosts::new(section.allowed_hosts);
    let app = router(console, hosts, max_request_bytes).into_make_service_with_connect_info::<Peer>();
    tokio::spawn(async move {
        let stopped = async move {
            let _ = stopped.await;
        };
        if let Err(err) = axum::serve(listener, app).with_graceful_shutdown(stopped).await {
            tracing::error!(%addr, error = %err, "the console stopped");
        }
    });
    Ok(stop)
}

/// The console's routes and its stack. Layers run outermost first, in the order written:
pub fn router(console: Arc<Console>, hosts: origin::Hosts, max_body: usize) -> axum::Router {
    let pages = axum::Router::new()
        .route("/", get(|| async { Redirect::to("/reviews") }))
        .route("/reviews", get(pages::reviews))
        .route("/reviews/rows", get(pages::rows))
        .route("/review", get(pages::review))
        .route("/review/decide", post(pages::decide))
        .route("/logout", post(pages::logout))
        .route("/calls", get(operators::calls))
        .route("/call", get(operators::call))
        .route("/overview", get(operators::overview))
        .route("/tools", get(tools::tools))
        .route("/tool", get(tools::tool))
        // 5. Every page but these needs a session: without one, a page redirects to the login.
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&console), require_session));
    let open = axum::Router::new()
        .route("/login", get(pages::login_form).post(pages::login))
        .route("/assets/{name}", get(assets::serve));
    let stack = ServiceBuilder::new()
        // 1. Overload and timeouts answer 503 at once: the layers below refuse what they cannot serve.
        .layer(HandleErrorLayer::new(|_: tower::BoxError| async { StatusCode::SERVICE_UNAVAILABLE }))
        // 2. Past MAX_IN_FLIGHT requests at once, shed rather than queue.
        .load_shed()
        .concurrency_limit(MAX_IN_FLIGHT)
        // 3. No request holds a slot longer than REQUEST_TIMEOUT.
        .layer(TimeoutLayer::with_status_code(StatusCode::SERVICE_UNAVAILABLE, REQUEST_TIMEOUT))
        // 4. Every answer carries the security headers; a request to another host name, or from another origin,
        //    is refused before routing.
        .layer(SetResponseHeaderLayer::overriding(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP)))
        .layer(SetResponseHeaderLayer::overriding(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")))
        .layer(SetResponseHeaderLayer::overriding(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")))
        .layer(SetResponseHeaderLayer::overriding(header::REFERRER_POLICY, HeaderValue::from_static("same-origin")))
        .layer(SetResponseHeaderLayer::if_not_present(header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .layer(axum::middleware::from_fn_with_state(Arc::new(hosts), origin::same_site));
    // A form is at most a request's size, enforced by the extractors that read it (edited arguments are bounded
    // again when parsed).
    pages.merge(open).with_state(console).layer(axum::extract::DefaultBodyLimit::max(max_body)).layer(stack)
}

/// A session from the cookie, put where handlers find it; else the login page (or, for a POST, 401); and while
/// the sessions' Redis does not answer, 503 (nobody is let in, and nobody logged out).
async fn require_session(State(console): State<Arc<Console>>, mut request: Request, next: Next) -> Response {
    let cookies = request.headers().get(header::COOKIE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let found = match console.sessions.find(cookies).await {
        Ok(found) => found,
        Err(err) => return pages::sessions_unavailable(&err),
    };
    match found {
        Some(session) => {
            request.extensions_mut().insert(session);
            next.run(request).await
        }
        // The pending list refreshing itself: htmx follows `HX-Redirect` with the whole page, rather than putting
        // the login form in the table.
        None if request.headers().contains_key("hx-request") => {
            (StatusCode::UNAUTHORIZED, [("hx-redirect", "/login")], "log in first").into_response()
        }
        None if request.method() == Method::GET => Redirect::to("/login").into_response(),
        None => (StatusCode::UNAUTHORIZED, "log in first").into_response(),
    }
}

/// A name every host resolves to itself.
fn is_loopback_name(host: &str) -> bool {
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}
