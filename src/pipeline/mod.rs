//! The pure call pipeline: resolve → parse → (repair) → validate → (inject). No I/O, no clocks.
//! The server and the offline `toolgate repair` command both run it.

mod answer;
mod message;
mod parse;
mod resolve;
mod validate;

pub use answer::{Messages, error_message, success_message};
pub use message::{CallContext, ErrorKind, Repair, Status, ToolCall, ToolError, ToolMessage, Violation};
pub use parse::{ParseLimits, parse_arguments};
pub use resolve::{Resolved, resolve_tool};
pub use validate::validate_arguments;

use crate::registry::{Catalog, CompiledTool};
use serde_json::Value;
use std::sync::Arc;

/// Why a call did not reach, or did not succeed on, its backend.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    #[error("tool not found")]
    NotFound { suggestions: Vec<String> },
    #[error("malformed arguments: {0}")]
    Malformed(String),
    #[error("invalid arguments: {} violation(s)", .0.len())]
    Invalid(Vec<Violation>),
    #[error("tool error: {message}")]
    Tool { message: String, retryable: bool, model_fixable: bool },
    #[error("timed out after {after_ms} ms")]
    Timeout { after_ms: u64 },
    #[error("unavailable: {0}")]
    Unavailable(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl CallError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            CallError::NotFound { .. } => ErrorKind::ToolNotFound,
            CallError::Malformed(_) => ErrorKind::MalformedArguments,
            CallError::Invalid(_) => ErrorKind::InvalidArguments,
            CallError::Tool { .. } => ErrorKind::ToolError,
            CallError::Timeout { .. } => ErrorKind::Timeout,
            CallError::Unavailable(_) => ErrorKind::Unavailable,
            CallError::Internal(_) => ErrorKind::Internal,
        }
    }
}

/// A call ready to dispatch: the tool, and exactly what it will receive.
#[derive(Debug)]
pub struct Prepared {
    pub tool: Arc<CompiledTool>,
    pub arguments: Value,
    /// The JSON text the tool receives: the model's own text when nothing was changed.
    pub arguments_text: String,
    pub repairs: Vec<Repair>,
}

/// A call that failed before dispatch, with the tool it resolved to, if it got that far.
#[derive(Debug)]
pub struct Rejected {
    pub tool: Option<Arc<CompiledTool>>,
    pub repairs: Vec<Repair>,
    pub error: CallError,
}

/// Runs the pure stages on one call.
pub fn prepare(
    catalog: &Catalog,
    call: &ToolCall,
    ctx: &CallContext,
    limits: ParseLimits,
) -> Result<Prepared, Rejected> {
    let Resolved { tool, repair } = resolve_tool(catalog, &ctx.tenant, &call.name).map_err(|error| Rejected {
        tool: None,
        repairs: Vec::new(),
        error,
    })?;
    let repairs: Vec<Repair> = repair.into_iter().collect();
    let reject = |error| Rejected { tool: Some(Arc::clone(&tool)), repairs: repairs.clone(), error };
    let arguments = parse_arguments(&call.arguments, limits).map_err(reject)?;
    // Seam: argument repair runs here, only when the value fails its schema.
    let violations = validate_arguments(&tool, &arguments);
    if !violations.is_empty() {
        return Err(reject(CallError::Invalid(violations)));
    }
    // Seam: injection of runtime values runs here, after validation of the model's part.
    let arguments_text =
        if call.arguments.trim().is_empty() { "{}".to_owned() } else { call.arguments.trim().to_owned() };
    Ok(Prepared { tool, arguments, arguments_text, repairs })
}
