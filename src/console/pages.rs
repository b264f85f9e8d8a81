//! The console's handlers: login and logout, the pending reviews (live), one review, and the verdict on it.

use super::Console;
use super::detail::{Detail, ReviewPage, decided};
use super::identical;
use super::session::{self, Session};
use super::throttle;
use super::views::{LoginPage, MessagePage, ReviewsPage, Row, Rows, User, pretty};
use crate::cluster::ClusterError;
use crate::review::{self, ReviewError, ReviewKey, ReviewVerdict, VerdictError, reviewer_name};
use crate::wire::side_listener::Peer;
use askama::Template;
use axum::extract::{ConnectInfo, Extension, Form, Query, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::header::{COOKIE, RETRY_AFTER, SET_COOKIE};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use std::sync::Arc;
use subtle::ConstantTimeEq;

type Shared = State<Arc<Console>>;

/// A page with its status; a template that fails to render is a 500 that says so.
pub(super) fn page(status: StatusCode, template: &impl Template) -> Response {
    match template.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(err) => {
            tracing::error!(error = %err, "a console page failed to render");
            (StatusCode::INTERNAL_SERVER_ERROR, "the page failed to render").into_response()
        }
    }
}

pub(super) fn message(status: StatusCode, session: &Session, title: &str, text: String) -> Response {
    let view = MessagePage { user: Some(User::from(session)), title: title.to_owned(), message: text };
    page(status, &view)
}

/// The page a request gets while the sessions' Redis does not answer (503): no one is let in, and no one is
/// logged out.
pub(super) fn sessions_unavailable(err: &ClusterError) -> Response {
    tracing::warn!(error = %err, "console sessions unavailable");
    let text = "The console keeps its sessions in Redis, which does not answer: no one can log in or out, and no \
                page opens, until it does. Try again in a moment."
        .to_owned();
    let view = MessagePage { user: None, title: "Sessions unavailable".into(), message: text };
    ([(RETRY_AFTER, "5")], page(StatusCode::SERVICE_UNAVAILABLE, &view)).into_response()
}

pub async fn login_form(State(console): Shared) -> Response {
    login_page(&console, StatusCode::OK, None)
}

/// The login form with a fresh CSRF token, which its cookie holds too.
fn login_page(console: &Console, status: StatusCode, error: Option<&str>) -> Response {
    let (csrf, cookie) = session::login_form_token(console.tls);
    let view = LoginPage { user: None, error: error.map(str::to_owned), closed: console.sessions.closed(), csrf };
    ([(SET_COOKIE, cookie)], page(status, &view)).into_response()
}

#[derive(Deserialize)]
pub struct LoginForm {
    name: String,
    #[serde(default)]
    token: String,
    #[serde(default)]
    csrf: String,
}

/// A login: its form must be one this console served, and a client that has guessed wrong too often waits (429)
/// before its token is even compared.
pub async fn login(
    State(console): Shared,
    ConnectInfo(peer): ConnectInfo<Peer>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    let cookies = headers.get(COOKIE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if !session::login_form_matches(cookies, &form.csrf) {
        let expired = "This login form was not served by this console, or has expired: log in again.";
        return login_page(&console, StatusCode::FORBIDDEN, Some(expired));
    }
    let Some(name) = reviewer_name(&form.name) else {
        return login_page(
            &console,
            StatusCode::UNAUTHORIZED,
            Some("Give your name: decisions are recorded under it."),
        );
    };
    let client = throttle::client(peer.addr);
    if let Err(wait) = console.throttle.take(client) {
        let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        tracing::warn!(%client, "console login refused: too many wrong tokens from this address");
        let text = format!("Too many wrong tokens from your address: try again in {seconds} s.");
        let page = login_page(&console, StatusCode::TOO_MANY_REQUESTS, Some(&text));
        return ([(RETRY_AFTER, seconds.to_string())], page).into_response();
    }
    let login = match console.sessions.login(&form.token, &name, client).await {
        Ok(login) => login,
        Err(err) => {
            // The attempt is not counted against the client: its token may well be right.
            console.throttle.give_back(client);
            return sessions_unavailable(&err);
        }
    };
    match login {
        Some(login) => {
            console.throttle.give_back(client);
            tracing::info!(reviewer = %name, admin = login.session.admin, "console login");
            ([(SET_COOKIE, session::set_cookie(&login.id, console.tls))], Redirect::to("/reviews")).into_response()
        }
        None => login_page(
            &console,
            StatusCode::UNAUTHORIZED,
            Some("That token opens neither the reviews nor the admin plane."),
        ),
    }
}

#[derive(Deserialize)]
pub struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

pub async fn logout(
    State(console): Shared,
    Extension(session): Extension<Session>,
    headers: HeaderMap,
    Form(form): Form<CsrfForm>,
) -> Response {
    if !csrf_ok(&session, &form.csrf) {
        return csrf_refused(&session);
    }
    let cookies = headers.get(COOKIE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if let Err(err) = console.sessions.logout(cookies, &session).await {
        return sessions_unavailable(&err);
    }
    ([(SET_COOKIE, session::clear_cookie())], Redirect::to("/login")).into_response()
}

/// Which call the reviewer just decided, so the list confirms it.
#[derive(Deserialize)]
pub struct Confirm {
    #[serde(default)]
    tenant: String,
    #[serde(default)]
    decided: String,
}

pub async fn reviews(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Query(confirm): Query<Confirm>,
) -> Response {
    let rows = pending_rows(&console).await;
    let key = ReviewKey { tenant: confirm.tenant, call_id: confirm.decided };
    let record = if key.call_id.is_empty() { None } else { console.core.reviews.get(&key).await };
    // Said from the record, never from the link: a crafted link can only show what is true.
    let confirmation =
        record.as_ref().and_then(|r| Some(format!("{} call {}: {}.", r.tool, r.key.call_id, decided(r)?)));
    page(StatusCode::OK, &ReviewsPage { user: Some(User::from(&session)), rows, confirmation })
}

pub async fn rows(State(console): Shared) -> Response {
    page(StatusCode::OK, &Rows { rows: pending_rows(&console).await })
}

/// The pending calls, oldest first, identical calls as one row: the oldest's, with their count.
async fn pending_rows(console: &Console) -> Vec<Row> {
    let pending = console.core.reviews.pending(None).await;
    let groups = identical::groups(&pending);
    groups.iter().map(|group| Row { identical: group.len(), ..Row::from(group[0]) }).collect()
}

#[derive(Deserialize)]
pub struct Which {
    #[serde(default)]
    tenant: String,
    call_id: String,
}

pub async fn review(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Query(which): Query<Which>,
) -> Response {
    let key = ReviewKey { tenant: which.tenant, call_id: which.call_id };
    review_page(&console, &session, &key, None, None, Vec::new(), StatusCode::OK).await
}

/// One review's page; `edit_text` and `error` carry a refused verdict back to the form.
async fn review_page(
    console: &Console,
    session: &Session,
    key: &ReviewKey,
    edit_text: Option<String>,
    error: Option<String>,
    violations: Vec<crate::pipeline::Violation>,
    status: StatusCode,
) -> Response {
    let Some(record) = console.core.reviews.get(key).await else {
        let text = format!("No call under review has the id {:?} in tenant {:?}.", key.call_id, key.tenant);
        return message(StatusCode::NOT_FOUND, session, "Not found", text);
    };
    let catalog = console.core.registry.catalog();
    let tool = catalog.get(&record.tool_tenant, &record.tool);
    let pending = console.core.reviews.pending(Some(&record.key.tenant)).await;
    let others = identical::others(&pending, &record);
    let review = Detail::new(&record, tool.map(|t| &**t), console.limits, others);
    let edit_text = edit_text.unwrap_or_else(|| pretty(&record.arguments));
    let view = ReviewPage { user: Some(User::from(session)), review, edit_text, error, violations };
    page(status, &view)
}

#[derive(Deserialize)]
pub struct DecideForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    tenant: String,
    call_id: String,
    action: String,
    #[serde(default)]
    arguments: String,
    #[serde(default)]
    feedback: String,
}

pub async fn decide(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Form(form): Form<DecideForm>,
) -> Response {
    if !csrf_ok(&session, &form.csrf) {
        return csrf_refused(&session);
    }
    let key = ReviewKey { tenant: form.tenant, call_id: form.call_id };
    let verdict = match form.action.as_str() {
        "approve" => ReviewVerdict::Approve,
        "edit" => ReviewVerdict::Edit(form.arguments.clone()),
        "reject" => ReviewVerdict::Reject(form.feedback),
        other => {
            return message(
                StatusCode::BAD_REQUEST,
                &session,
                "Unknown action",
                format!("{other:?} is not approve, edit or reject."),
            );
        }
    };
    let (queue, registry) = (&console.core.reviews, &console.core.registry);
    match review::decide(queue, registry, console.limits, &key, verdict, Some(&session.name)).await {
        Ok(decided) => {
            tracing::info!(call_id = %key.call_id, tenant = %key.tenant, tool = %decided.tool, reviewer = %session.name, "review decided in the console");
            let query = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("decided", &key.call_id)
                .append_pair("tenant", &key.tenant)
                .finish();
            Redirect::to(&format!("/reviews?{query}")).into_response()
        }
        Err(VerdictError::Review(ReviewError::NotFound)) => {
            message(StatusCode::NOT_FOUND, &session, "Not found", "This call is no longer under review.".into())
        }
        Err(VerdictError::Review(ReviewError::AlreadyDecided)) => {
            let first = console.core.reviews.get(&key).await.as_ref().and_then(decided);
            let text = match first {
                Some(first) => format!("Another decision came first: this call was {first}."),
                None => "Another decision came first.".to_owned(),
            };
            message(StatusCode::CONFLICT, &session, "Already decided", text)
        }
        Err(refused) => {
            let violations = refused.violations().to_vec();
            let edit = Some(form.arguments).filter(|_| form.action == "edit");
            let status = StatusCode::UNPROCESSABLE_ENTITY;
            review_page(&console, &session, &key, edit, Some(refused.to_string()), violations, status).await
        }
    }
}

fn csrf_ok(session: &Session, given: &str) -> bool {
    !given.is_empty() && bool::from(given.as_bytes().ct_eq(session.csrf.as_bytes()))
}

fn csrf_refused(session: &Session) -> Response {
    let text = "The form did not carry this session's CSRF token. Reload the page and try again.".to_owned();
    message(StatusCode::FORBIDDEN, session, "Refused", text)
}
