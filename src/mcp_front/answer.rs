//! What an MCP host sees: registered tools as MCP `Tool`s (model-facing schema, provider-safe name, hints from the
//! spec), and a `ToolMessage` as a `CallToolResult` (its content blocks as they came, when it has more than text). Every toolgate error is a result with `isError: true` whose
//! text is the model-facing content, the typed error in `_meta`, never in `structuredContent` (hosts check that
//! against `outputSchema`, even on errors).

use crate::pipeline::{ResultBlock, ToolMessage, ToolStatus};
use crate::registry::CompiledTool;
use rmcp::model::{
    CallToolResult, ContentBlock, JsonObject, MetaObject, Resource, ResourceContents, Tool, ToolAnnotations,
};
use serde_json::{Value, json};
use std::sync::Arc;

/// The `_meta` key toolgate's own fields go under.
pub const META_KEY: &str = "dev.toolgate/call";

/// What a host is told to do with a call that waits for a reviewer.
const AGAIN: &str = "Call the tool again with the same arguments to get its outcome once a person has decided.";

/// A registered tool as `tools/list` shows it.
pub fn tool(compiled: &CompiledTool) -> Tool {
    let spec = &compiled.spec;
    let mut tool =
        Tool::new(compiled.safe_name.clone(), spec.description.clone(), Arc::new(object(compiled.model_schema())));
    if let Some(output) = spec.output_schema.as_ref() {
        tool = tool.with_raw_output_schema(Arc::new(object(output)));
    }
    // Hints only, from what the spec says: an idempotent tool may be retried; a reviewed one changes something.
    let annotations =
        ToolAnnotations::new().idempotent(spec.limits.idempotent).read_only(false).destructive(spec.review.required);
    let mut meta = JsonObject::new();
    meta.insert("dev.toolgate/tool".into(), json!({"name": spec.name, "requires_review": spec.review.required}));
    tool.with_annotations(annotations).with_meta(MetaObject(meta))
}

fn object(schema: &Value) -> JsonObject {
    match schema {
        Value::Object(map) => map.clone(),
        // A boolean schema: `true` takes anything, as the empty object schema does.
        _ => JsonObject::new(),
    }
}

/// A call's answer as the host gets it.
pub fn result(message: ToolMessage) -> CallToolResult {
    let meta = MetaObject(JsonObject::from_iter([(META_KEY.to_string(), meta_of(&message))]));
    let mut result = match message.status {
        ToolStatus::Success => {
            let content = match message.blocks.is_empty() {
                true => vec![ContentBlock::text(message.content)],
                false => message.blocks.into_iter().map(block).collect(),
            };
            let mut ok = CallToolResult::success(content);
            ok.structured_content = message.structured.as_deref().and_then(|s| serde_json::from_str(s).ok());
            ok
        }
        ToolStatus::Error => CallToolResult::error(vec![ContentBlock::text(message.content)]),
        ToolStatus::PendingReview => {
            CallToolResult::error(vec![ContentBlock::text(format!("{} {AGAIN}", message.content))])
        }
    };
    result.meta = Some(meta);
    result
}

/// A result's block as MCP carries it.
fn block(block: ResultBlock) -> ContentBlock {
    match block {
        ResultBlock::Text { text } => ContentBlock::text(text),
        ResultBlock::Image { data, mime_type } => ContentBlock::image(data, mime_type),
        ResultBlock::Audio { data, mime_type } => ContentBlock::audio(data, mime_type),
        ResultBlock::ResourceLink { uri, name, mime_type, description } => {
            let mut link = Resource::new(uri, name);
            (link.mime_type, link.description) = (mime_type, description);
            ContentBlock::resource_link(link)
        }
        ResultBlock::Resource { uri, mime_type, text, blob } => ContentBlock::resource(match (text, blob) {
            (Some(text), _) => ResourceContents::TextResourceContents { uri, mime_type, text, meta: None },
            (None, blob) => {
                ResourceContents::BlobResourceContents { uri, mime_type, blob: blob.unwrap_or_default(), meta: None }
            }
        }),
    }
}

/// The answer to a `tools/call` shed past `limits.max_calls_in_flight`: an `UNAVAILABLE` error the host may retry,
/// as `Execute` answers one with `grpc-retry-pushback-ms`.
pub fn shed(name: &str, max: usize) -> CallToolResult {
    let retry_after_ms = crate::handles::RETRY_AFTER_MS;
    let text = format!("Error: {name} is unavailable right now: the gateway is busy. You may try again later.");
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    let error = json!({
        "kind": crate::pipeline::ErrorKind::Unavailable,
        "message": format!("the gateway is at its limit of {max} calls in flight; retry after {retry_after_ms} ms"),
        "model_fixable": false,
        "retryable": true,
        "retry_after_ms": retry_after_ms,
    });
    let meta = json!({"tool": name, "status": ToolStatus::Error, "attempts": 0, "error": error});
    result.meta = Some(MetaObject(JsonObject::from_iter([(META_KEY.to_string(), meta)])));
    result
}

/// Toolgate's account of the call: its status, the repairs and the arguments that ran, or the typed error.
fn meta_of(m: &ToolMessage) -> Value {
    let mut meta = json!({
        "tool": m.name,
        "status": m.status,
        "repairs": m.repairs,
        "attempts": m.attempts,
    });
    // What ran, when something did: an object, else absent, as in `toolgate call`'s output.
    if let Ok(effective) = serde_json::from_str::<Value>(&m.effective_arguments) {
        meta["effective_arguments"] = effective;
    }
    if let Some(error) = &m.error {
        meta["error"] = json!({
            "kind": error.kind,
            "message": error.message,
            "model_fixable": error.model_fixable,
            "retryable": error.retryable,
            "retry_after_ms": error.retry_after_ms,
            "violations": error.violations,
            "suggestions": error.suggestions,
            "original_arguments": error.original_arguments,
        });
    }
    meta
}
