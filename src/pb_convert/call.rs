//! Calls and their answers: `pb::ToolCall` and `pb::CallContext` in, `pb::ToolMessage` out, and a call under
//! review as reviewers see it.

use crate::pb::v1 as pb;
use crate::pipeline::{
    CallContext, ErrorKind, Repair, ResultBlock, TextExtraction, ToolCall, ToolError, ToolMessage, ToolPart,
    ToolStatus, Violation,
};
use crate::review::ReviewRecord;

impl From<pb::ToolCall> for ToolCall {
    fn from(call: pb::ToolCall) -> Self {
        ToolCall { id: call.id, name: call.name, arguments: call.arguments }
    }
}

impl From<TextExtraction> for pb::CallsFromTextResponse {
    fn from(extraction: TextExtraction) -> Self {
        let found = extraction.found;
        pb::CallsFromTextResponse {
            calls: (extraction.calls.into_iter())
                .map(|(call, _)| pb::ToolCall { id: call.id, name: call.name, arguments: call.arguments })
                .collect(),
            envelope: found.envelope.map(|e| e.name().to_owned()).unwrap_or_default(),
            wrappers: found.wrappers.iter().map(|w| (*w).to_owned()).collect(),
            rest: found.rest,
            refusal_reason: found.refusal.as_ref().map(|r| r.reason.name().to_owned()).unwrap_or_default(),
            refusal: found.refusal.map(|r| r.detail).unwrap_or_default(),
            messages: Vec::new(),
            format: String::new(),
        }
    }
}

impl From<pb::CallContext> for CallContext {
    fn from(ctx: pb::CallContext) -> Self {
        CallContext {
            tenant: ctx.tenant,
            user_id: ctx.user_id,
            session_id: ctx.session_id,
            values: ctx.values.into_iter().collect(),
        }
    }
}

impl From<&CallContext> for pb::CallContext {
    fn from(ctx: &CallContext) -> Self {
        pb::CallContext {
            tenant: ctx.tenant.clone(),
            user_id: ctx.user_id.clone(),
            session_id: ctx.session_id.clone(),
            values: ctx.values.clone().into_iter().collect(),
        }
    }
}

impl From<ToolMessage> for pb::ToolMessage {
    fn from(m: ToolMessage) -> Self {
        let status = pb::ToolStatus::from(m.status);
        pb::ToolMessage {
            tool_call_id: m.tool_call_id,
            name: m.name,
            status: status.into(),
            content: m.content,
            structured: m.structured.unwrap_or_default(),
            error: m.error.map(pb::ToolError::from),
            repairs: m.repairs.into_iter().map(pb::Repair::from).collect(),
            effective_arguments: m.effective_arguments,
            attempts: m.attempts,
            duration_us: m.duration_us,
            parts: m.parts.into_iter().map(pb::ToolMessagePart::from).collect(),
            blocks: m.blocks.into_iter().map(pb::ResultBlock::from).collect(),
        }
    }
}

impl From<ResultBlock> for pb::ResultBlock {
    fn from(block: ResultBlock) -> Self {
        use pb::result_block::Block;
        let media = |data, mime_type| pb::MediaBlock { data, mime_type };
        let block = match block {
            ResultBlock::Text { text } => Block::Text(pb::TextBlock { text }),
            ResultBlock::Image { data, mime_type } => Block::Image(media(data, mime_type)),
            ResultBlock::Audio { data, mime_type } => Block::Audio(media(data, mime_type)),
            ResultBlock::ResourceLink { uri, name, mime_type, description } => {
                Block::ResourceLink(pb::ResourceLinkBlock { uri, name, mime_type, description })
            }
            ResultBlock::Resource { uri, mime_type, text, blob } => {
                let contents = match (text, blob) {
                    (Some(text), _) => Some(pb::resource_block::Contents::Text(text)),
                    (None, blob) => blob.map(pb::resource_block::Contents::Blob),
                };
                Block::Resource(pb::ResourceBlock { uri, mime_type, contents })
            }
        };
        pb::ResultBlock { block: Some(block) }
    }
}

impl From<ToolPart> for pb::ToolMessagePart {
    fn from(p: ToolPart) -> Self {
        pb::ToolMessagePart {
            status: pb::ToolStatus::from(p.status).into(),
            content: p.content,
            structured: p.structured.unwrap_or_default(),
            error: p.error.map(pb::ToolError::from),
            effective_arguments: p.effective_arguments,
            repairs: p.repairs.into_iter().map(pb::Repair::from).collect(),
            attempts: p.attempts,
        }
    }
}

impl From<ToolStatus> for pb::ToolStatus {
    fn from(status: ToolStatus) -> Self {
        match status {
            ToolStatus::Success => pb::ToolStatus::Success,
            ToolStatus::Error => pb::ToolStatus::Error,
            ToolStatus::PendingReview => pb::ToolStatus::PendingReview,
        }
    }
}

impl From<ToolError> for pb::ToolError {
    fn from(e: ToolError) -> Self {
        pb::ToolError {
            kind: pb::ErrorKind::from(e.kind).into(),
            message: e.message,
            model_fixable: e.model_fixable,
            retryable: e.retryable,
            retry_after_ms: e.retry_after_ms,
            violations: e.violations.into_iter().map(pb::Violation::from).collect(),
            suggestions: e.suggestions,
            original_arguments: e.original_arguments,
        }
    }
}

impl From<Violation> for pb::Violation {
    fn from(v: Violation) -> Self {
        pb::Violation { instance_path: v.instance_path, schema_path: v.schema_path, message: v.message }
    }
}

impl From<ErrorKind> for pb::ErrorKind {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::ToolNotFound => pb::ErrorKind::ToolNotFound,
            ErrorKind::MalformedArguments => pb::ErrorKind::MalformedArguments,
            ErrorKind::InvalidArguments => pb::ErrorKind::InvalidArguments,
            ErrorKind::ToolError => pb::ErrorKind::ToolError,
            ErrorKind::Timeout => pb::ErrorKind::Timeout,
            ErrorKind::RateLimited => pb::ErrorKind::RateLimited,
            ErrorKind::Unavailable => pb::ErrorKind::Unavailable,
            ErrorKind::Rejected => pb::ErrorKind::Rejected,
            ErrorKind::PermissionDenied => pb::ErrorKind::PermissionDenied,
            ErrorKind::BudgetExceeded => pb::ErrorKind::BudgetExceeded,
            ErrorKind::Internal => pb::ErrorKind::Internal,
            ErrorKind::PolicyDenied => pb::ErrorKind::PolicyDenied,
        }
    }
}

impl From<Repair> for pb::Repair {
    fn from(r: Repair) -> Self {
        pb::Repair { rule: r.rule, path: r.path, before: r.before, after: r.after }
    }
}

impl From<&ReviewRecord> for pb::PendingReview {
    fn from(record: &ReviewRecord) -> Self {
        pb::PendingReview {
            call_id: record.key.call_id.clone(),
            tenant: record.key.tenant.clone(),
            session_id: record.session_id.clone(),
            user_id: record.user_id.clone(),
            tool: record.tool.clone(),
            arguments: record.arguments.clone(),
            repairs: record.repairs.iter().cloned().map(pb::Repair::from).collect(),
            created_ms: record.created_ms,
            decided_by: record.decided_by.clone().unwrap_or_default(),
            decided_ms: record.decided_ms.unwrap_or_default(),
            rule: record.rule.as_ref().map(|r| r.name.clone()).unwrap_or_default(),
            rule_message: record.rule.as_ref().map(|r| r.message.clone()).unwrap_or_default(),
        }
    }
}
