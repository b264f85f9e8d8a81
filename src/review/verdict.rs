//! A reviewer's verdict made into a `Decision` and recorded, the one way every door decides: edited arguments
//! must be strict JSON that fits the tool's model-facing schema and sets no injected parameter.

use super::{Decision, ReviewError, ReviewKey, ReviewQueue, ReviewRecord};
use crate::pipeline::{CallError, ParseLimits, Violation, check_edit};
use crate::registry::Registry;

/// What a reviewer asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewVerdict {
    Approve,
    /// The arguments to run instead, as JSON text.
    Edit(String),
    /// What the model is told.
    Reject(String),
}

/// Why a verdict was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum VerdictError {
    #[error(transparent)]
    Review(#[from] ReviewError),
    #[error("tool {0:?} no longer exists; reject the call")]
    ToolGone(String),
    /// The edited arguments do not fit: their violations, or why they cannot be read.
    #[error("the edited arguments {}", edit_error(.0))]
    Edit(CallError),
}

impl VerdictError {
    /// The schema violations of an edit that does not fit, for a form to show beside the field.
    pub fn violations(&self) -> &[Violation] {
        match self {
            VerdictError::Edit(CallError::Invalid(violations)) => violations,
            _ => &[],
        }
    }
}

fn edit_error(error: &CallError) -> String {
    match error {
        CallError::Invalid(violations) => {
            let lines: Vec<_> = violations.iter().map(|v| format!("{}: {}", v.instance_path, v.message)).collect();
            format!("do not fit the tool's schema: {}", lines.join("; "))
        }
        CallError::Malformed(reason) => format!("cannot be used: {reason}"),
        other => format!("cannot be used: {other}"),
    }
}

/// Checks `verdict` against the pending call under `key` and records it, by `by` (`None` over the API).
pub async fn decide(
    queue: &ReviewQueue,
    registry: &Registry,
    limits: ParseLimits,
    key: &ReviewKey,
    verdict: ReviewVerdict,
    by: Option<&str>,
) -> Result<ReviewRecord, VerdictError> {
    let decision = match verdict {
        ReviewVerdict::Approve => Decision::Approve,
        ReviewVerdict::Reject(feedback) => Decision::Reject { feedback },
        ReviewVerdict::Edit(text) => {
            let record = queue.get(key).await.ok_or(ReviewError::NotFound)?;
            let catalog = registry.catalog();
            let tool = catalog.get(&record.tool_tenant, &record.tool).ok_or(VerdictError::ToolGone(record.tool))?;
            let checked = check_edit(tool, &text, limits).map_err(VerdictError::Edit)?;
            Decision::Edit { arguments: checked.text }
        }
    };
    Ok(queue.decide(key, decision, by).await?)
}
