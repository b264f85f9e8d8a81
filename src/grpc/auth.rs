//! Who may call: bearer tokens (a plane with a configured token refuses requests that do not carry it, as
//! UNAUTHENTICATED), and the tenant a client certificate acts for (another refused as PERMISSION_DENIED).

use super::status::ServiceError;
use crate::tls::PeerIdentity;
use std::sync::Arc;
use subtle::ConstantTimeEq;
use tonic::service::Interceptor;
use tonic::{Request, Status};

/// Checks `authorization: Bearer <token>` on every request of one plane; lets all through when no token is set.
#[derive(Clone)]
pub struct RequireToken {
    plane: &'static str,
    /// Any of these is accepted; none means the plane is open.
    expected: Arc<[Arc<[u8]>]>,
}

impl RequireToken {
    pub fn new(plane: &'static str, token: Option<&str>) -> Self {
        Self::any(plane, &[token])
    }

    /// A plane that accepts any of `tokens` (those set), such as review, which the admin token also opens.
    pub fn any(plane: &'static str, tokens: &[Option<&str>]) -> Self {
        let expected = tokens.iter().flatten().map(|t| Arc::from(format!("Bearer {t}").into_bytes())).collect();
        Self { plane, expected }
    }

    /// Checks an `authorization` value (empty when absent); the error says why it was refused.
    pub fn check(&self, given: &[u8]) -> Result<(), String> {
        if self.expected.is_empty() {
            return Ok(());
        }
        // Constant time, and every candidate compared, so the timing tells neither how much of a guess was
        // right nor which token it resembled.
        let matched = self.expected.iter().fold(subtle::Choice::from(0), |any, e| any | given.ct_eq(e));
        if bool::from(matched) {
            Ok(())
        } else {
            let reason = if given.is_empty() { "is missing" } else { "does not match" };
            Err(format!("the {} plane's bearer token {reason}", self.plane))
        }
    }
}

impl Interceptor for RequireToken {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let given = request.metadata().get("authorization").map(|v| v.as_bytes()).unwrap_or_default();
        match self.check(given) {
            Ok(()) => Ok(request),
            Err(reason) => Err(ServiceError::Unauthenticated(reason).into()),
        }
    }
}

/// Refuses a tenant the caller's client certificate does not act for (`[[tls.identities]]`).
pub fn claims(peer: Option<&PeerIdentity>, tenant: &str) -> Result<(), ServiceError> {
    match peer {
        Some(peer) if !peer.may_claim(tenant) => Err(ServiceError::PermissionDenied(format!(
            "the client certificate acts for tenant {:?}; it may not call as tenant {tenant:?}",
            peer.tenant.as_deref().unwrap_or_default()
        ))),
        _ => Ok(()),
    }
}

/// `claims` for a request about one tenant, or (`None`) about every tenant, which a certificate that acts for one
/// may not make.
pub fn claims_scope(peer: Option<&PeerIdentity>, tenant: Option<&str>) -> Result<(), ServiceError> {
    match (peer.and_then(|p| p.tenant.as_deref()), tenant) {
        (Some(own), None) => Err(ServiceError::PermissionDenied(format!(
            "the client certificate acts for tenant {own:?}; it may not ask about every tenant"
        ))),
        (_, Some(tenant)) => claims(peer, tenant),
        (None, None) => Ok(()),
    }
}
