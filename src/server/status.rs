//! The one place errors become `tonic::Status`: an exhaustive match, so no new variant slips through unmapped.

use crate::backend::mcp::McpError;
use crate::grpc_wire::FrameError;
use crate::policy::review::ReviewError;
use crate::registry::{RegistryError, StoreError};
use tonic::{Code, Status};

/// Failures of a request itself. Tool-level failures are `ToolMessage`s, never these.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthenticated(String),
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
            ServiceError::DeadlineExceeded(_) => Code::DeadlineExceeded,
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
        Status::new(code, err.to_string())
    }
}
