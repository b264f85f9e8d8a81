//! Bearer tokens: a plane with a configured token refuses requests that do not carry it, as UNAUTHENTICATED.

use super::status::ServiceError;
use std::sync::Arc;
use subtle::ConstantTimeEq;
use tonic::service::Interceptor;
use tonic::{Request, Status};

/// Checks `authorization: Bearer <token>` on every request of one plane; lets all through when no token is set.
#[derive(Clone)]
pub struct RequireToken {
    plane: &'static str,
    expected: Option<Arc<[u8]>>,
}

impl RequireToken {
    pub fn new(plane: &'static str, token: Option<&str>) -> Self {
        Self { plane, expected: token.map(|t| Arc::from(format!("Bearer {t}").into_bytes())) }
    }

    /// Checks an `authorization` value (empty when absent); the error says why it was refused.
    pub fn check(&self, given: &[u8]) -> Result<(), String> {
        let Some(expected) = &self.expected else { return Ok(()) };
        // Constant time, so the comparison does not tell how much of a guess was right.
        if bool::from(given.ct_eq(expected)) {
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
