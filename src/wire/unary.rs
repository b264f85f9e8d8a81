//! A unary gRPC exchange on hyper's HTTP/2 server, as the listener's own `Execute` path speaks it: the request's one
//! message gathered from its body, and the answer written as HEADERS, one DATA frame and the OK trailers.

use super::frame::{FrameError, Gather};
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Response, header};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Either};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A response from either path: a unary answer written here, or one from the tonic services.
pub type ResponseBody = Either<UnaryBody, tonic::body::Body>;

/// Why a request body is not one message.
#[derive(Debug)]
pub enum BodyError {
    /// The body broke off before its end, with the error the body reported.
    BrokeOff(String),
    /// The body is not one uncompressed message within the limit.
    Frame(FrameError),
}

/// The `grpc-encoding` a request names, if it is not `identity`: its messages may be compressed.
pub fn compressed_with(headers: &HeaderMap) -> Option<String> {
    let encoding = headers.get("grpc-encoding").filter(|e| e.as_bytes() != b"identity")?;
    Some(String::from_utf8_lossy(encoding.as_bytes()).into_owned())
}

/// The one message of a request's body, at most `limit` bytes; refused as soon as the body cannot be one.
pub async fn read_message<B>(mut body: B, limit: usize) -> Result<Bytes, BodyError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let mut gathered = Gather::new(limit);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError::BrokeOff(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            gathered.push(data).map_err(BodyError::Frame)?;
        }
    }
    gathered.finish().map_err(BodyError::Frame)
}

/// A unary answer's body: its one framed message, then the OK trailers. Empty for a trailers-only answer, whose
/// status is in its headers.
#[derive(Debug, Default)]
pub struct UnaryBody {
    message: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl UnaryBody {
    /// The OK answer carrying `message` (already framed): `content-type: application/grpc`, the message, and
    /// `grpc-status: 0` in the trailers.
    pub fn ok(message: Bytes) -> Response<UnaryBody> {
        let mut trailers = HeaderMap::with_capacity(1);
        // A `HeaderName` made of the static name borrows it; inserted by `&str`, it would be copied.
        trailers.insert(HeaderName::from_static("grpc-status"), HeaderValue::from_static("0"));
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
