//! `ToolGateway/Execute`, the call every agent step makes, served without tonic's server stack: the data token
//! checked, the body gathered into one message, the call run by the same `GatewayService`, and the answer
//! written as HEADERS, one DATA frame and trailers (`wire::unary`). Every other method goes to the tonic services.

use super::auth::RequireToken;
use super::gateway::GatewayService;
use super::status::ServiceError;
use crate::pb::v1 as pb;
use crate::tls::PeerIdentity;
use crate::wire::frame::encode;
use crate::wire::unary::{BodyError, UnaryBody, compressed_with, read_message};
use bytes::Bytes;
use http::{HeaderValue, Request, Response, header};
use http_body::Body;
use prost::Message;
use std::sync::Arc;
use tonic::Status;
use tonic::metadata::MetadataMap;

/// The path of the one method served here.
pub const PATH: &str = "/toolgate.v1.ToolGateway/Execute";

/// What `Execute` needs: the service that runs calls, the data plane's token and the request size limit.
pub struct FastExecute {
    gateway: Arc<GatewayService>,
    token: RequireToken,
    max_request_bytes: usize,
}

impl FastExecute {
    pub fn new(gateway: Arc<GatewayService>, token: RequireToken, max_request_bytes: usize) -> Self {
        Self { gateway, token, max_request_bytes }
    }

    /// Answers one `Execute` request: a `ToolMessage`, or the status of a request that was not one.
    pub async fn serve<B>(&self, request: Request<B>) -> Response<UnaryBody>
    where
        B: Body<Data = Bytes> + Unpin,
        B::Error: std::fmt::Display,
    {
        match self.answer(request).await {
            Ok(response) => UnaryBody::ok(encode(&response)),
            Err(status) => status.into_http(),
        }
    }

    async fn answer<B>(&self, request: Request<B>) -> Result<pb::ExecuteResponse, Status>
    where
        B: Body<Data = Bytes> + Unpin,
        B::Error: std::fmt::Display,
    {
        let (parts, body) = request.into_parts();
        let given = parts.headers.get(header::AUTHORIZATION).map(HeaderValue::as_bytes).unwrap_or_default();
        self.token.check(given).map_err(ServiceError::Unauthenticated)?;
        if let Some(encoding) = compressed_with(&parts.headers) {
            return Err(
                ServiceError::Unimplemented(format!("messages compressed with {encoding:?} are not accepted")).into()
            );
        }
        let message = read_message(body, self.max_request_bytes).await.map_err(|e| match e {
            BodyError::BrokeOff(e) => ServiceError::Aborted(format!("the request body broke off: {e}")),
            BodyError::Frame(e) => ServiceError::from(e),
        })?;
        let request = pb::ExecuteRequest::decode(message)
            .map_err(|e| ServiceError::BadRequest(format!("the request is not an ExecuteRequest: {e}")))?;
        let peer = parts.extensions.get::<PeerIdentity>();
        let metadata = MetadataMap::from_headers(parts.headers);
        Ok(self.gateway.execute_request(&metadata, peer, request).await?)
    }
}
