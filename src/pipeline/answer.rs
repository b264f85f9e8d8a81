//! Answer: the `ToolMessage` for a call, with model-facing error text from configurable templates.

use super::CallError;
use super::message::{Repair, ToolCall, ToolError, ToolMessage, ToolStatus, Violation};
use crate::registry::MAX_NAME_LEN;
use serde::Deserialize;

/// The templates of model-facing error text. `{name}` is the tool, `{suggestions}` the names offered.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Messages {
    pub tool_not_found: String,
    pub did_you_mean: String,
    pub malformed_arguments: String,
    pub invalid_arguments: String,
    /// Appended to errors the model can fix. LangGraph's ToolNode uses the same words.
    pub fix_suffix: String,
}

impl Default for Messages {
    fn default() -> Self {
        Self {
            tool_not_found: "Error: {name} is not a valid tool.".into(),
            did_you_mean: " Did you mean {suggestions}?".into(),
            malformed_arguments: "Error: the arguments for {name} could not be read: {reason}.".into(),
            invalid_arguments: "Error: invalid arguments for {name}:".into(),
            fix_suffix: " Please fix your mistakes.".into(),
        }
    }
}

/// Longest violation message shown to the model: messages quote the offending value, which may be huge.
const MAX_VIOLATION_CHARS: usize = 240;
/// Most violation lines shown to the model; `error.violations` keeps them all.
const MAX_VIOLATION_LINES: usize = 20;

/// The most of a call's arguments an error answer echoes in `original_arguments`, in bytes: past it the text is
/// cut on a character boundary and ends with `…`. Every error kind is bounded alike: the caller holds the whole
/// call, and an answer repeating it could be megabytes (a batch of 128 calls of 60 KB to a missing tool answered
/// 7.7 MB, past a gRPC client's default 4 MiB).
pub const MAX_ECHOED_ARGUMENTS: usize = 4 * 1024;

/// `arguments` as an error answer echoes them: whole up to `MAX_ECHOED_ARGUMENTS` bytes, else cut and marked.
pub fn echoed_arguments(arguments: &str) -> String {
    if arguments.len() <= MAX_ECHOED_ARGUMENTS {
        return arguments.to_owned();
    }
    format!("{}…", &arguments[..arguments.floor_char_boundary(MAX_ECHOED_ARGUMENTS)])
}

/// The message for a call the backend answered.
pub fn success_message(call: &ToolCall, name: &str, content: String, structured: Option<String>) -> ToolMessage {
    ToolMessage {
        tool_call_id: call.id.clone(),
        name: name.to_owned(),
        status: ToolStatus::Success,
        content,
        structured,
        error: None,
        repairs: Vec::new(),
        effective_arguments: String::new(),
        attempts: 1,
        duration_us: 0,
        parts: Vec::new(),
        blocks: Vec::new(),
    }
}

/// `name` cut to the longest a registered name can be, with `…` when cut: a called name is quoted in answers and
/// repairs, and one of megabytes would make an answer no client accepts.
pub(crate) fn quoted_name(name: &str) -> std::borrow::Cow<'_, str> {
    match name.char_indices().nth(MAX_NAME_LEN) {
        Some((at, _)) => format!("{}…", &name[..at]).into(),
        None => name.into(),
    }
}

/// The message for a call that failed. `name` is the resolved tool, or the name as called (then cut to a bound).
pub fn error_message(
    call: &ToolCall,
    name: &str,
    error: CallError,
    repairs: Vec<Repair>,
    messages: &Messages,
) -> ToolMessage {
    let name = &*quoted_name(name);
    let content = model_text(name, &error, messages);
    let class = error.class();
    let retry_after_ms = match &error {
        CallError::RateLimited { retry_after_ms } => *retry_after_ms,
        _ => 0,
    };
    let kind = error.kind();
    let (violations, suggestions) = match error.clone() {
        CallError::Invalid(v) => (v, Vec::new()),
        CallError::NotFound { suggestions } => (Vec::new(), suggestions),
        _ => (Vec::new(), Vec::new()),
    };
    let message = match &error {
        CallError::NotFound { .. } => format!("tool {name:?} not found"),
        other => other.to_string(),
    };
    ToolMessage {
        tool_call_id: call.id.clone(),
        name: name.to_owned(),
        status: ToolStatus::Error,
        content,
        structured: None,
        error: Some(ToolError {
            kind,
            message,
            model_fixable: class.model_fixable(),
            retryable: class.retryable(),
            retry_after_ms,
            violations,
            suggestions,
            original_arguments: echoed_arguments(&call.arguments),
        }),
        repairs,
        effective_arguments: String::new(),
        attempts: 0,
        duration_us: 0,
        parts: Vec::new(),
        blocks: Vec::new(),
    }
}

fn model_text(name: &str, error: &CallError, m: &Messages) -> String {
    let fill = |template: &str| template.replace("{name}", name);
    match error {
        CallError::NotFound { suggestions } => {
            let mut text = fill(&m.tool_not_found);
            if !suggestions.is_empty() {
                text += &m.did_you_mean.replace("{suggestions}", &suggestions.join(" or "));
            }
            text
        }
        CallError::Malformed(reason) => fill(&m.malformed_arguments).replace("{reason}", reason) + &m.fix_suffix,
        // The violations end with a line break: the suffix starts a line of its own.
        CallError::Invalid(violations) => {
            fill(&m.invalid_arguments) + &violation_lines(violations) + m.fix_suffix.trim_start()
        }
        CallError::Tool { message, class } => {
            let suffix = if class.model_fixable() { m.fix_suffix.as_str() } else { "" };
            format!("Error: {name} failed: {message}{suffix}")
        }
        CallError::Timeout { after_ms } => {
            format!("Error: {name} did not answer within {after_ms} ms. You may try again later.")
        }
        CallError::Unavailable(_) => format!("Error: {name} is unavailable right now. You may try again later."),
        CallError::PermissionDenied(_) => format!("Error: {name} cannot be run for this caller."),
        CallError::RateLimited { retry_after_ms } => format!(
            "Error: {name} is rate limited. Try again in {:.1} seconds, or go on without it.",
            (*retry_after_ms as f64 / 1000.0).max(0.1)
        ),
        CallError::BudgetExceeded(reason) => {
            format!("Error: {reason} Stop calling {name} and answer with the information you already have.")
        }
        CallError::Busy { .. } => format!("Error: {name} is busy right now. You may try again later."),
        CallError::Rejected { feedback } if feedback.trim().is_empty() => {
            format!("The call to {name} was rejected by a human reviewer.")
        }
        CallError::Rejected { feedback } => feedback.clone(),
        CallError::Internal(_) => format!("Error: {name} could not be run because of an internal error."),
        // It may have run: a blind retry could do it twice.
        CallError::OutcomeUnknown(_) => format!(
            "Error: {name} was interrupted while it ran, so whether it took effect is unknown. Do not call it again \
             before checking whether it did; if you cannot check, tell the user."
        ),
        CallError::PolicyDenied { message, .. } => message.clone(),
    }
}

/// One line per violation, naming the parameter; the message says what was expected and what was given.
fn violation_lines(violations: &[Violation]) -> String {
    let mut text = String::new();
    for v in violations.iter().take(MAX_VIOLATION_LINES) {
        text += &format!("\n- {}: {}", parameter_name(&v.instance_path), truncate(&v.message));
    }
    if violations.len() > MAX_VIOLATION_LINES {
        text += &format!("\n- and {} more", violations.len() - MAX_VIOLATION_LINES);
    }
    text + "\n"
}

/// `/a/0/b` → `a[0].b`; the root is `arguments`.
fn parameter_name(pointer: &str) -> String {
    if pointer.is_empty() {
        return "arguments".into();
    }
    let mut name = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if segment.bytes().all(|b| b.is_ascii_digit()) && !name.is_empty() {
            name += &format!("[{segment}]");
        } else {
            if !name.is_empty() {
                name.push('.');
            }
            name += &segment;
        }
    }
    name
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_VIOLATION_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call() -> ToolCall {
        ToolCall { id: "c1".into(), name: "get_weathr".into(), arguments: "{\"x\":1}".into() }
    }

    #[test]
    fn not_found_suggests() {
        let err = CallError::NotFound { suggestions: vec!["get_weather".into()] };
        let msg = error_message(&call(), "get_weathr", err, vec![], &Messages::default());
        assert_eq!(msg.content, "Error: get_weathr is not a valid tool. Did you mean get_weather?");
        let e = msg.error.unwrap();
        assert_eq!((e.model_fixable, e.retryable, e.original_arguments.as_str()), (true, false, "{\"x\":1}"));
    }

    #[test]
    fn original_arguments_are_echoed_up_to_a_bound_cut_on_a_character_boundary() {
        let whole = format!("{{\"x\": \"{}\"}}", "a".repeat(MAX_ECHOED_ARGUMENTS - 10));
        assert_eq!(echoed_arguments(&whole), whole, "at the bound: whole");
        let big = format!("{{\"x\": \"{}\"}}", "é".repeat(MAX_ECHOED_ARGUMENTS));
        let call = ToolCall { arguments: big.clone(), ..call() };
        let echoed = error_message(&call, "t", CallError::Internal(String::new()), vec![], &Messages::default())
            .error
            .unwrap()
            .original_arguments;
        let kept = echoed.strip_suffix('…').expect("marked as cut");
        assert!(kept.len() <= MAX_ECHOED_ARGUMENTS && kept.len() > MAX_ECHOED_ARGUMENTS - 2, "{}", kept.len());
        assert!(big.starts_with(kept));
    }

    #[test]
    fn a_huge_name_is_quoted_cut_everywhere() {
        let name = "é".repeat(100_000);
        let msg =
            error_message(&call(), &name, CallError::NotFound { suggestions: vec![] }, vec![], &Messages::default());
        let cut = format!("{}…", "é".repeat(MAX_NAME_LEN));
        assert_eq!(msg.content, format!("Error: {cut} is not a valid tool."));
        assert_eq!((msg.name.as_str(), msg.error.unwrap().message), (cut.as_str(), format!("tool {cut:?} not found")));
    }

    #[test]
    fn invalid_lists_each_violation_and_ends_with_the_suffix() {
        let v = |p: &str, m: &str| Violation { instance_path: p.into(), schema_path: String::new(), message: m.into() };
        let err = CallError::Invalid(vec![
            v("", "\"city\" is a required property"),
            v("/days/0", "\"5\" is not of type \"integer\""),
        ]);
        let msg = error_message(&call(), "get_weather", err, vec![], &Messages::default());
        assert_eq!(
            msg.content,
            "Error: invalid arguments for get_weather:\n- arguments: \"city\" is a required property\n- days[0]: \"5\" is not of type \"integer\"\nPlease fix your mistakes."
        );
    }
}
