//! The pure call pipeline: resolve → parse → repair → validate → (inject). No I/O, no clocks.
//! The server and the offline `toolgate repair` command both run it.

mod answer;
mod message;
mod parse;
pub mod repair;
mod resolve;
mod validate;

pub use answer::{Messages, error_message, success_message};
pub use message::{CallContext, ErrorKind, Repair, Status, ToolCall, ToolError, ToolMessage, Violation};
pub use parse::{ParseLimits, parse_arguments};
pub use repair::{RepairSettings, Repaired, Rule, repair_arguments};
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

/// How the pure stages run: the gateway's limits and repair settings.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PrepareOptions {
    pub limits: ParseLimits,
    pub repair: RepairSettings,
}

/// Runs the pure stages on one call. Arguments valid as received pass through untouched; others are
/// repaired when every change is exact, or refused with the violations of what the model sent.
pub fn prepare(
    catalog: &Catalog,
    call: &ToolCall,
    ctx: &CallContext,
    options: &PrepareOptions,
) -> Result<Prepared, Rejected> {
    let Resolved { tool, mut repairs } = resolve_tool(catalog, &ctx.tenant, &call.name, options.repair)
        .map_err(|error| Rejected { tool: None, repairs: Vec::new(), error })?;
    let settings = options.repair.for_tool(tool.spec.repair.enabled);
    let reject =
        |error, repairs: &[Repair]| Rejected { tool: Some(Arc::clone(&tool)), repairs: repairs.to_vec(), error };
    let (arguments, syntax) =
        parse_arguments(&call.arguments, options.limits, settings).map_err(|e| reject(e, &repairs))?;
    let reformatted = !syntax.is_empty();
    repairs.extend(syntax);
    // Seam: injection of runtime values will run on what this returns, after validation of the model's part.
    if tool.validator.is_valid(&arguments) {
        let arguments_text = match call.arguments.trim() {
            _ if reformatted => arguments.to_string(),
            "" => "{}".to_owned(),
            text => text.to_owned(),
        };
        return Ok(Prepared { tool, arguments, arguments_text, repairs });
    }
    match repair_arguments(&tool, &arguments, settings, options.limits.max_depth) {
        Some(Repaired { value, repairs: fixes }) => {
            repairs.extend(fixes);
            Ok(Prepared { arguments_text: value.to_string(), arguments: value, tool, repairs })
        }
        None => Err(reject(CallError::Invalid(validate_arguments(&tool, &arguments)), &repairs)),
    }
}
