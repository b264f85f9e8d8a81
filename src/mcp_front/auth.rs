//! Who is calling: the request's bearer token looked up among the configured ones, or checked as a JWT, its
//! principal put on the request for the handler. With neither configured every caller is the empty principal (the
//! door then listens on loopback only). A token is compared in constant time and never forwarded anywhere.

use super::jwt::JwtVerifier;
use crate::config::Principal;
use crate::wire::side_listener::Peer;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::response::Response;
use http::{StatusCode, header};
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The tokens and their principals.
#[derive(Clone)]
pub struct Principals {
    tokens: Arc<Vec<(String, Principal)>>,
    jwt: Option<Arc<JwtVerifier>>,
}

impl Principals {
    pub fn new(tokens: Vec<(String, Principal)>, jwt: Option<Arc<JwtVerifier>>) -> Self {
        Self { tokens: Arc::new(tokens), jwt }
    }

    /// The caller's principal, or why the request is refused: `None` when it carries no token at all.
    fn authenticate(&self, request: &Request) -> Result<Principal, Option<&'static str>> {
        if self.tokens.is_empty() && self.jwt.is_none() {
            return Ok(Principal::default());
        }
        // The scheme is case-insensitive (RFC 7235).
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .ok_or(None)?;
        // Every token is compared, so the time taken does not say which one came close.
        let mut found = None;
        for (token, principal) in self.tokens.iter() {
            if bool::from(token.as_bytes().ct_eq(presented.as_bytes())) {
                found = Some(principal.clone());
            }
        }
        match (found, &self.jwt) {
            (Some(principal), _) => Ok(principal),
            (None, Some(jwt)) => jwt.verify(presented).map_err(Some),
            (None, None) => Err(Some("the bearer token is not valid")),
        }
    }
}

/// The middleware: `request` goes on with its principal, or is answered 401 here (403 when its client certificate
/// acts for another tenant than its token, `[[tls.identities]]`).
pub async fn require(State(principals): State<Principals>, mut request: Request, next: Next) -> Response {
    match principals.authenticate(&request) {
        Ok(principal) => {
            let peer = request.extensions().get::<ConnectInfo<Peer>>().and_then(|info| info.0.identity.as_deref());
            if let Some(peer) = peer
                && !peer.may_claim(&principal.tenant)
            {
                let own = peer.tenant.as_deref().unwrap_or_default();
                let reason = format!(
                    "the client certificate acts for tenant {own:?}; it may not use a token of tenant {:?}",
                    principal.tenant
                );
                return (StatusCode::FORBIDDEN, reason).into_response();
            }
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(reason) => unauthorized(reason, principals.jwt.as_deref()),
    }
}

/// A 401 with its challenge; with a JWT issuer, the challenge says where its metadata is (RFC 9728). A request
/// with no token gets no error code (RFC 6750, section 3.1); one with a bad token gets `invalid_token`.
fn unauthorized(reason: Option<&'static str>, jwt: Option<&JwtVerifier>) -> Response {
    let mut response = Response::new(Body::from(reason.unwrap_or("a bearer token is required")));
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    let mut params: Vec<String> =
        jwt.map(|j| format!("resource_metadata=\"{}\"", j.metadata_url())).into_iter().collect();
    if let Some(reason) = reason {
        params.push(format!("error=\"invalid_token\", error_description=\"{reason}\""));
    }
    let challenge = if params.is_empty() { "Bearer".to_owned() } else { format!("Bearer {}", params.join(", ")) };
    if let Ok(value) = http::HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}
