//! `ToolGateway/Execute`, the call every agent step makes, served without tonic's server stack: the data token
//! checked, the body gathered into one message, the call run by the same `GatewayService`, and the answer
//! written as HEADERS, one DATA frame and trailers. Every other method goes to the tonic services.

use super::auth::RequireToken;
use super::gateway::GatewayService;
use super::status::ServiceError;
use crate::grpc_wire::{self, Gather};
use crate::pb::v1 as pb;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, header};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use prost::Message;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
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
            Ok(response) => UnaryBody::ok(grpc_wire::encode(&response)),
            Err(status) => status.into_http(),
        }
    }

    async fn answer<B>(&self, request: Request<B>) -> Result<pb::ExecuteResponse, Status>
    where
        B: Body<Data = Bytes> + Unpin,
        B::Error: std::fmt::Display,
    {
        let (parts, mut body) = request.into_parts();
        let given = parts.headers.get(header::AUTHORIZATION).map(HeaderValue::as_bytes).unwrap_or_default();
        self.token.check(given).map_err(ServiceError::Unauthenticated)?;
        if let Some(encoding) = parts.headers.get("grpc-encoding").filter(|e| e.as_bytes() != b"identity") {
            let encoding = String::from_utf8_lossy(encoding.as_bytes()).into_owned();
            return Err(
                ServiceError::Unimplemented(format!("messages compressed with {encoding:?} are not accepted")).into()
            );
        }
        let mut gathered = Gather::new(self.max_request_bytes);
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| ServiceError::Aborted(format!("the request body broke off: {e}")))?;
            if let Ok(data) = frame.into_data() {
                gathered.push(data).map_err(ServiceError::from)?;
            }
        }
        let message = gathered.finish().map_err(ServiceError::from)?;
        let request = pb::ExecuteRequest::decode(message)
            .map_err(|e| ServiceError::BadRequest(format!("the request is not an ExecuteRequest: {e}")))?;
        let metadata = MetadataMap::from_headers(parts.headers);
        Ok(self.gateway.execute_request(&metadata, request).await?)
    }
}

/// A unary answer's body: its one framed message, then the OK trailers. Empty for a trailers-only answer, whose
/// status is in its headers.
#[derive(Debug, Default)]
pub struct UnaryBody {
    message: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl UnaryBody {
    fn ok(message: Bytes) -> Response<UnaryBody> {
        let mut trailers = HeaderMap::with_capacity(1);
        trailers.insert("grpc-status", HeaderValue::from_static("0"));
        let mut response = Response::new(UnaryBody { message: Some(message), trailers: Some(trailers) });
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        response
    }
}

impl Body for UnaryBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(message) = this.message.take() {
            return Poll::Ready(Some(Ok(Frame::data(message))));
        }
        Poll::Ready(this.trailers.take().map(|trailers| Ok(Frame::trailers(trailers))))
    }

    fn is_end_stream(&self) -> bool {
        self.message.is_none() && self.trailers.is_none()
    }
}
