//! The pure call pipeline: resolve → parse → validate → repair → inject. No I/O, no clocks.
//! The server and the offline `toolgate repair` command both run it.

mod answer;
mod blocks;
mod from_text;
mod inject;
mod message;
mod parse;
pub mod repair;
mod resolve;
mod split;
mod strict;
mod text_calls;
mod validate;
pub mod violations;

pub use answer::{MAX_ECHOED_ARGUMENTS, Messages, echoed_arguments, error_message, success_message};
pub use blocks::{ResultBlock, text_and_blocks};
pub use from_text::{TextExtraction, calls_from_text};
pub use inject::{OVERRIDE_REMOVED, inject, strip_overrides};
pub use message::{
    CallContext, ErrorKind, FailureClass, Repair, ToolCall, ToolError, ToolMessage, ToolPart, ToolStatus, Violation,
};
pub use parse::{ParseLimits, parse_arguments};
pub use repair::{RepairRule, RepairSettings, Repaired, repair_arguments};
pub use resolve::{Resolved, exact as exact_tool, resolve_tool, resolves};
pub use split::{MAX_PARTS, Split, SplitMode};
pub use strict::from_str as read_json;
pub use text_calls::{
    Envelope, Format as TextFormat, FromText, MAX_TEXT_BYTES, MAX_TEXT_CALLS, Reason as RefusalReason, TextCall,
    TextRefusal,
};
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
    Tool { message: String, class: FailureClass },
    #[error("timed out after {after_ms} ms")]
    Timeout { after_ms: u64 },
    #[error("unavailable: {0}")]
    Unavailable(String),
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    #[error("rate limited; retry after {retry_after_ms} ms")]
    RateLimited { retry_after_ms: u64 },
    /// The reason is for the model: which budget of the session is spent.
    #[error("budget exceeded: {0}")]
    BudgetExceeded(String),
    #[error("busy: {max} calls already running")]
    Busy { max: u32 },
    #[error("rejected by a reviewer{}", if feedback.trim().is_empty() { String::new() } else { format!(": {feedback}") })]
    Rejected { feedback: String },
    #[error("internal error: {0}")]
    Internal(String),
    /// The gateway stopped while the call ran (a reviewed call found `Running` after a restart, a recorded call
    /// whose gateway died): it may have taken effect. Kind `INTERNAL`, neither retryable nor the model's to fix.
    #[error("outcome unknown: {0}")]
    OutcomeUnknown(String),
    /// A policy rule denied the call: `message` is the rule's, for the model; `error` says why the rule could
    /// not be evaluated, when its `on_error` denied it.
    #[error("denied by policy rule {rule}{}", error.as_ref().map(|e| format!(" (its condition could not be evaluated: {e})")).unwrap_or_default())]
    PolicyDenied { rule: String, message: String, model_fixable: bool, error: Option<String> },
}

impl CallError {
    /// Whether the failure is fatal, retryable or the model's to fix: the one place this is decided.
    pub fn class(&self) -> FailureClass {
        match self {
            CallError::NotFound { .. } | CallError::Malformed(_) | CallError::Invalid(_) => FailureClass::ModelFixable,
            CallError::Tool { class, .. } => *class,
            CallError::PolicyDenied { model_fixable: true, .. } => FailureClass::ModelFixable,
            CallError::PolicyDenied { model_fixable: false, .. } => FailureClass::Fatal,
            CallError::Timeout { .. }
            | CallError::Unavailable(_)
            | CallError::RateLimited { .. }
            | CallError::Busy { .. } => FailureClass::Retryable,
            CallError::PermissionDenied(_)
            | CallError::BudgetExceeded(_)
            | CallError::Rejected { .. }
            | CallError::Internal(_)
            | CallError::OutcomeUnknown(_) => FailureClass::Fatal,
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            CallError::NotFound { .. } => ErrorKind::ToolNotFound,
            CallError::Malformed(_) => ErrorKind::MalformedArguments,
            CallError::Invalid(_) => ErrorKind::InvalidArguments,
            CallError::Tool { .. } => ErrorKind::ToolError,
            CallError::Timeout { .. } => ErrorKind::Timeout,
            CallError::Unavailable(_) => ErrorKind::Unavailable,
            CallError::PermissionDenied(_) => ErrorKind::PermissionDenied,
            CallError::RateLimited { .. } => ErrorKind::RateLimited,
            CallError::BudgetExceeded(_) => ErrorKind::BudgetExceeded,
            CallError::Busy { .. } => ErrorKind::Unavailable,
            CallError::Rejected { .. } => ErrorKind::Rejected,
            CallError::Internal(_) | CallError::OutcomeUnknown(_) => ErrorKind::Internal,
            CallError::PolicyDenied { .. } => ErrorKind::PolicyDenied,
        }
    }
}

/// The model's part of a call, checked: resolved, parsed, overrides of injected parameters removed, and valid
/// against the model-facing schema as sent or once repaired.
#[derive(Debug, Clone)]
pub struct Checked {
    pub tool: Arc<CompiledTool>,
    pub arguments: Value,
    /// The model's arguments as JSON text: its own text when nothing was changed.
    pub text: String,
    pub repairs: Vec<Repair>,
}

/// A call ready to dispatch: the tool, and exactly what it will receive.
#[derive(Debug)]
pub struct Prepared {
    pub tool: Arc<CompiledTool>,
    /// What the tool receives, injected parameters included.
    pub arguments: Value,
    /// `arguments` as JSON text: the model's own text when nothing was changed or injected.
    pub arguments_text: String,
    /// The model-controlled part of `arguments_text`, reported to the agent; never shows an injected value.
    pub effective_arguments: String,
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
pub struct PipelineSettings {
    pub limits: ParseLimits,
    pub repair: RepairSettings,
    pub split: SplitMode,
}

/// Runs the pure stages on one call: `check`, then `complete` with the context's values.
pub fn prepare(
    catalog: &Catalog,
    call: &ToolCall,
    ctx: &CallContext,
    options: &PipelineSettings,
) -> Result<Prepared, Rejected> {
    complete(check(catalog, call, &ctx.tenant, options)?, ctx)
}

/// A checked call: one call, or a packed parallel call split into the calls the model meant.
#[derive(Debug, Clone)]
pub enum Check {
    One(Checked),
    Split(Split),
}

/// Resolves the tool and checks what the model wrote, never splitting it: `check_call` for one call only.
pub fn check(
    catalog: &Catalog,
    call: &ToolCall,
    tenant: &str,
    options: &PipelineSettings,
) -> Result<Checked, Rejected> {
    let options = PipelineSettings { split: SplitMode::Never, ..*options };
    match check_call(catalog, call, tenant, &options)? {
        Check::One(checked) => Ok(checked),
        Check::Split(_) => unreachable!("a call is never split with SplitMode::Never"),
    }
}

/// Resolves the tool and checks what the model wrote. Arguments valid as received pass through untouched;
/// others are repaired when every change is exact, or split into the calls the model meant (`split`), or refused
/// with the violations of what the model sent. The checks share one budget of pattern work: a call that spends
/// it is refused, whatever the checks decided without it.
pub fn check_call(
    catalog: &Catalog,
    call: &ToolCall,
    tenant: &str,
    options: &PipelineSettings,
) -> Result<Check, Rejected> {
    let (checked, unfinished) = crate::registry::within_budget(|| check_unbounded(catalog, call, tenant, options));
    let Some(reason) = unfinished else { return checked };
    let (tool, repairs, violations) = match checked {
        Ok(Check::One(c)) => (Some(c.tool), c.repairs, Vec::new()),
        Ok(Check::Split(s)) => (Some(s.tool), s.repairs, Vec::new()),
        Err(Rejected { tool, repairs, error: CallError::Invalid(v) }) => (tool, repairs, v),
        Err(Rejected { tool, repairs, .. }) => (tool, repairs, Vec::new()),
    };
    Err(Rejected { tool, repairs, error: unfinished_check(violations, reason) })
}

/// The refusal of a call whose checks could not finish: what was found, and why the rest was not (unless a
/// violation found says it already, at its place).
fn unfinished_check(mut violations: Vec<Violation>, reason: String) -> CallError {
    let said = |v: &Violation| v.message.strip_prefix("the string ") == reason.strip_prefix("a string ");
    if !violations.iter().any(said) {
        violations.truncate(violations::MAX_VIOLATIONS - 1);
        violations.push(Violation { instance_path: String::new(), schema_path: String::new(), message: reason });
    }
    CallError::Invalid(violations)
}

fn check_unbounded(
    catalog: &Catalog,
    call: &ToolCall,
    tenant: &str,
    options: &PipelineSettings,
) -> Result<Check, Rejected> {
    let Resolved { tool, mut repairs } = resolve_tool(catalog, tenant, &call.name, options.repair)
        .map_err(|error| Rejected { tool: None, repairs: Vec::new(), error })?;
    let settings = options.repair.for_tool(tool.spec.repair.enabled);
    if !repairs.is_empty() && !settings.enabled {
        // The tool turned repair off, its name's too: the name as called is offered, not read.
        let suggestions = vec![tool.spec.name.clone()];
        return Err(Rejected { tool: None, repairs: Vec::new(), error: CallError::NotFound { suggestions } });
    }
    let reject =
        |error, repairs: &[Repair]| Rejected { tool: Some(Arc::clone(&tool)), repairs: repairs.to_vec(), error };
    let (mut arguments, syntax) =
        parse_arguments(&call.arguments, options.limits, settings).map_err(|e| reject(e, &repairs))?;
    let overrides = strip_overrides(&tool, &mut arguments);
    let reformatted = !syntax.is_empty() || !overrides.is_empty();
    repairs.extend(syntax);
    repairs.extend(overrides);
    if tool.model_validator().is_valid(&arguments) {
        let text = match call.arguments.trim() {
            _ if reformatted => json_text(&arguments),
            "" => "{}".to_owned(),
            text => text.to_owned(),
        };
        return Ok(Check::One(Checked { tool, arguments, text, repairs }));
    }
    repaired_or_split(tool, arguments, repairs, settings, options)
}

/// Arguments that fail the schema as sent: repaired into a valid call, split into the calls the model meant, or
/// refused with the violations of what the model sent.
fn repaired_or_split(
    tool: Arc<CompiledTool>,
    arguments: Value,
    mut repairs: Vec<Repair>,
    settings: RepairSettings,
    options: &PipelineSettings,
) -> Result<Check, Rejected> {
    let max_depth = options.limits.max_depth;
    let refused = |error, repairs| Err(Rejected { tool: Some(Arc::clone(&tool)), repairs, error });
    match repair_arguments(&tool, &arguments, settings, max_depth) {
        Ok(Some(Repaired { mut value, repairs: fixes })) => {
            repairs.extend(fixes);
            // Repair may decode or unwrap what the first strip could not see into: strip what will be sent.
            let late = strip_overrides(&tool, &mut value);
            let valid = late.is_empty() || tool.model_validator().is_valid(&value);
            repairs.extend(late);
            if !valid {
                return refused(CallError::Invalid(validate_arguments(&tool, &arguments)), repairs);
            }
            Ok(Check::One(Checked { text: json_text(&value), arguments: value, tool, repairs }))
        }
        Ok(None) => match split::split(&tool, &arguments, settings, options.split, max_depth) {
            split::Outcome::Split(parts, record, one_call_each) => {
                repairs.push(record);
                Ok(Check::Split(Split { tool, parts, repairs, sent: arguments, one_call_each }))
            }
            split::Outcome::NotPacked => refused(CallError::Invalid(validate_arguments(&tool, &arguments)), repairs),
            split::Outcome::NotAllowed(line) => refused(split::refusal(&tool, &arguments, line), repairs),
        },
        Err(error) => refused(error, repairs),
    }
}

/// Checks arguments a reviewer wrote in place of the model's: strict JSON within the limits, no injected
/// parameter, valid against the model-facing schema. Nothing is repaired: a person can write it right.
pub fn check_edit(tool: &Arc<CompiledTool>, text: &str, limits: ParseLimits) -> Result<Checked, CallError> {
    let (mut arguments, _) = parse_arguments(text, limits, RepairSettings::off())?;
    // Every problem at once, so a reviewer fixes the edit in one go: the injected values it sets, then the rest.
    let set_by_gateway = strip_overrides(tool, &mut arguments).into_iter().map(|o| Violation {
        instance_path: o.path,
        schema_path: String::new(),
        message: "is set by the gateway and cannot be edited".into(),
    });
    let mut violations: Vec<Violation> = set_by_gateway.collect();
    let ((valid, invalid), unfinished) = crate::registry::within_budget(|| {
        let valid = tool.model_validator().is_valid(&arguments);
        (valid, if valid { Vec::new() } else { validate_arguments(tool, &arguments) })
    });
    violations.extend(invalid);
    if let Some(reason) = unfinished {
        return Err(unfinished_check(violations, reason));
    }
    if !valid || !violations.is_empty() {
        return Err(CallError::Invalid(violations));
    }
    Ok(Checked { tool: Arc::clone(tool), text: json_text(&arguments), arguments, repairs: Vec::new() })
}

/// Adds the injected parameters from `ctx`, then validates the whole input schema, so the tool receives exactly
/// what it declared. A context that cannot satisfy it is the operator's to fix, not the model's.
pub fn complete(checked: Checked, ctx: &CallContext) -> Result<Prepared, Rejected> {
    let Checked { tool, arguments, text, repairs } = checked;
    if tool.injections.is_empty() {
        return Ok(Prepared { tool, arguments, arguments_text: text.clone(), effective_arguments: text, repairs });
    }
    let validator = tool.validator.get();
    let before = arguments.as_object().map_or(0, serde_json::Map::len);
    let injected = match inject(&tool, arguments, ctx) {
        Ok(full) => match crate::registry::within_budget(|| validator.is_valid(&full)) {
            (_, Some(reason)) => Err(unfinished_check(Vec::new(), reason)),
            (true, None) => Ok(full),
            (false, None) => Err(CallError::PermissionDenied(validate::describe_injected(&tool, &full))),
        },
        Err(error) => Err(error),
    };
    match injected {
        Ok(full) => {
            let arguments_text = inject::appended(&tool, &text, &full, before).unwrap_or_else(|| json_text(&full));
            Ok(Prepared { arguments_text, arguments: full, effective_arguments: text, tool, repairs })
        }
        Err(error) => Err(Rejected { tool: Some(tool), repairs, error }),
    }
}

/// Compact JSON text of a value, as its `Display` writes it, written into bytes rather than through a formatter:
/// half the instructions for a call's arguments.
pub fn json_text(value: &serde_json::Value) -> String {
    let mut bytes = Vec::with_capacity(128);
    // Writing a `Value` to a `Vec` cannot fail: its keys are strings and the writer does not.
    let _ = serde_json::to_writer(&mut bytes, value);
    String::from_utf8(bytes).unwrap_or_default()
}
