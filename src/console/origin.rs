//! The names the console answers to: a request's `Host` (or HTTP/2 `:authority`) must be one of `[console]
//! allowed_hosts` (the loopback names unless set), and a browser's `Origin`, when sent, the same. A page a
//! DNS-rebinding site serves reaches 127.0.0.1 under the site's own name, and is refused before any handler.

use crate::config::AllowedHost;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header;
use http::uri::Authority;
use http::{HeaderMap, StatusCode, Uri};
use std::sync::Arc;

/// The names answered, as configured.
pub struct Hosts {
    allowed: Vec<AllowedHost>,
}

impl Hosts {
    pub fn new(allowed: Vec<AllowedHost>) -> Self {
        Self { allowed }
    }

    /// Whether `authority` names this console.
    fn admits(&self, authority: &Authority) -> bool {
        let asked = AllowedHost::new(authority.host(), authority.port_u16());
        self.allowed.iter().any(|a| a.host == asked.host && a.port.is_none_or(|port| asked.port == Some(port)))
    }

    /// The names, as an answer lists them.
    fn listed(&self) -> String {
        let names: Vec<_> = self
            .allowed
            .iter()
            .map(|a| {
                let host = if a.host.contains(':') { format!("[{}]", a.host) } else { a.host.clone() };
                a.port.map_or(host.clone(), |port| format!("{host}:{port}"))
            })
            .collect();
        names.join(", ")
    }
}

/// Refuses a request sent to a name the console does not answer to (403), or without one (400); then one whose
/// `Origin` is another site's (403): a form posted from elsewhere never reaches a handler (SameSite=Strict keeps
/// the cookie from it too; this holds for a browser that does not honour that).
pub async fn same_site(State(hosts): State<Arc<Hosts>>, request: Request, next: Next) -> Response {
    let Some(authority) = authority(request.uri(), request.headers()) else {
        return (StatusCode::BAD_REQUEST, "the request names no host (a Host header)").into_response();
    };
    if !hosts.admits(&authority) {
        let text = format!(
            "this console does not answer to the host {:?}: it answers to {} only (a page served under another \
             name is refused). An operator serving it under that name adds it to [console] allowed_hosts.",
            authority.as_str(),
            hosts.listed(),
        );
        return (StatusCode::FORBIDDEN, text).into_response();
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let sent = origin.to_str().ok().and_then(|o| o.split_once("://")).and_then(|(_, rest)| parse(rest));
        let ours = sent
            .is_some_and(|o| o.host().eq_ignore_ascii_case(authority.host()) && o.port_u16() == authority.port_u16());
        if !ours {
            return (StatusCode::FORBIDDEN, "a request from another origin").into_response();
        }
    }
    next.run(request).await
}

/// The host a request is sent to: its `Host` header, else (HTTP/2) the `:authority` of its URI.
fn authority(uri: &Uri, headers: &HeaderMap) -> Option<Authority> {
    match headers.get(header::HOST) {
        Some(host) => parse(host.to_str().ok()?),
        None => uri.authority().and_then(|a| parse(a.as_str())),
    }
}

/// A host and port, never with a user part (`evil@127.0.0.1` names no host of ours).
fn parse(text: &str) -> Option<Authority> {
    text.parse::<Authority>().ok().filter(|a| !a.as_str().contains('@'))
}
