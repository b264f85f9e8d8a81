//! The one place errors become `tonic::Status`: an exhaustive match, so no new variant slips through unmapped.

use crate::backend::mcp::McpError;
use crate::registry::RegistryError;
use crate::review::ReviewError;
use crate::store::StoreError;
use crate::wire::frame::FrameError;
use tonic::{Code, Status};

/// The gRPC retry-throttling header (gRFC A6): how long a client should wait before it tries again.
pub const RETRY_PUSHBACK: &str = "grpc-retry-pushback-ms";

/// Failures of a request itself. Tool-level failures are `ToolMessage`s, never these.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller is known, and may not do this: a client certificate mapped to another tenant.
    #[error("{0}")]
    PermissionDenied(String),
    #[error(transparent)]
    Review(#[from] ReviewError),
    #[error(transparent)]
    Mcp(#[from] McpError),
    /// The request conflicts with the state it would change, e.g. a worker claiming a tool served elsewhere.
    #[error("{0}")]
    FailedPrecondition(String),
    /// A stream that cannot go on; the client should start it again.
    #[error("{0}")]
    Aborted(String),
    /// The request asks for something this server does not do, such as a compression it does not accept.
    #[error("{0}")]
    Unimplemented(String),
    /// The request was still running when its caller's `grpc-timeout` expired.
    #[error("{0}")]
    DeadlineExceeded(String),
    /// The gateway had its limit of calls in flight: the request was refused at once, and may be sent again after
    /// `retry_after_ms` (written as `grpc-retry-pushback-ms`, which gRPC clients with a retry policy honour).
    #[error("the gateway is at its limit of {max} calls in flight; retry after {retry_after_ms} ms")]
    Overloaded { max: usize, retry_after_ms: u64 },
    /// The gateway cannot take this request up now, and it may be sent again shortly: the CPU pool's queue is full.
    #[error("{0}")]
    Busy(String),
    /// A failure of the gateway itself, never of the request.
    #[error("{0}")]
    Internal(String),
    /// A request body that is not one gRPC message within the size limit.
    #[error("{0}")]
    Frame(#[from] FrameError),
}

impl From<ServiceError> for Status {
    fn from(err: ServiceError) -> Status {
        let code = match &err {
            ServiceError::BadRequest(_) => Code::InvalidArgument,
            ServiceError::Unauthenticated(_) => Code::Unauthenticated,
            ServiceError::FailedPrecondition(_) => Code::FailedPrecondition,
            ServiceError::Aborted(_) => Code::Aborted,
            ServiceError::Unimplemented(_) => Code::Unimplemented,
            ServiceError::PermissionDenied(_) => Code::PermissionDenied,
            ServiceError::DeadlineExceeded(_) => Code::DeadlineExceeded,
            ServiceError::Overloaded { .. } | ServiceError::Busy(_) => Code::Unavailable,
            ServiceError::Internal(_) => Code::Internal,
            // OUT_OF_RANGE, as tonic answers a message over its decoding limit.
            ServiceError::Frame(FrameError::TooLarge { .. }) => Code::OutOfRange,
            ServiceError::Frame(FrameError::Compressed) => Code::Unimplemented,
            ServiceError::Frame(FrameError::Truncated | FrameError::Missing) => Code::InvalidArgument,
            ServiceError::Review(e) => match e {
                ReviewError::NotFound => Code::NotFound,
                ReviewError::AlreadyDecided | ReviewError::NotRunning => Code::FailedPrecondition,
                ReviewError::Conflict => Code::AlreadyExists,
                ReviewError::Full { .. } => Code::ResourceExhausted,
                ReviewError::Store(_) => Code::Internal,
                ReviewError::Unavailable(_) => Code::Unavailable,
            },
            ServiceError::Mcp(e) => match e {
                McpError::Invalid(_) => Code::InvalidArgument,
                McpError::NotFound(_) => Code::NotFound,
                McpError::Store(_) => Code::Internal,
            },
            ServiceError::Registry(e) => match e {
                RegistryError::Spec(_) => Code::InvalidArgument,
                RegistryError::NotFound { .. } => Code::NotFound,
                RegistryError::Unavailable(_) => Code::Unavailable,
                RegistryError::Store(s) => match s {
                    StoreError::Db(_) | StoreError::Corrupt { .. } | StoreError::Dir { .. } => Code::Internal,
                },
            },
        };
        if code == Code::Internal {
            tracing::error!(error = %err, "internal error");
        }
        let mut status = Status::new(code, err.to_string());
        if let ServiceError::Overloaded { retry_after_ms, .. } = err {
            status.metadata_mut().insert(RETRY_PUSHBACK, retry_after_ms.into());
        }
        status
    }
}
