//! The domain form of what a call produces: `ToolMessage`, `ToolError`, `Repair`, `Violation`.

use super::blocks::ResultBlock;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One tool call as the model wrote it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// Raw JSON text, possibly broken.
    pub arguments: String,
}

/// Who is calling. The model never writes any of this.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallContext {
    pub tenant: String,
    pub user_id: String,
    pub session_id: String,
    pub values: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ToolStatus {
    Success,
    Error,
    PendingReview,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorKind {
    ToolNotFound,
    MalformedArguments,
    InvalidArguments,
    ToolError,
    Timeout,
    RateLimited,
    Unavailable,
    Rejected,
    PermissionDenied,
    BudgetExceeded,
    Internal,
    PolicyDenied,
}

/// One schema violation; paths are JSON pointers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    pub instance_path: String,
    pub schema_path: String,
    pub message: String,
}

/// One recorded change to a call; `before` and `after` are JSON text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repair {
    pub rule: String,
    pub path: String,
    pub before: String,
    pub after: String,
}

/// What the caller can do about a failure. `CallError::class` decides it, once for every failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// Nothing: the same call would fail the same way.
    Fatal,
    /// Send the same call again later: the failure was transient.
    Retryable,
    /// Let the model correct its call: the arguments were wrong.
    ModelFixable,
}

impl FailureClass {
    pub fn retryable(self) -> bool {
        self == FailureClass::Retryable
    }

    pub fn model_fixable(self) -> bool {
        self == FailureClass::ModelFixable
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolError {
    pub kind: ErrorKind,
    pub message: String,
    pub model_fixable: bool,
    pub retryable: bool,
    pub retry_after_ms: u64,
    pub violations: Vec<Violation>,
    pub suggestions: Vec<String>,
    pub original_arguments: String,
}

/// The one answer to a call, success or error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolMessage {
    pub tool_call_id: String,
    pub name: String,
    pub status: ToolStatus,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
    pub repairs: Vec<Repair>,
    pub effective_arguments: String,
    pub attempts: u32,
    pub duration_us: u64,
    /// A packed parallel call split into the calls the model meant: one part per call, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<ToolPart>,
    /// The result's content blocks, when it holds more than text (an image, audio, a resource); `content` is
    /// then what a model that reads only text gets. Empty for a result of text alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<ResultBlock>,
}

/// One of the calls a packed parallel call was split into, and how it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolPart {
    pub status: ToolStatus,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
    pub effective_arguments: String,
    /// Repairs of this part's own arguments, after the split.
    pub repairs: Vec<Repair>,
    pub attempts: u32,
}
