//! One `tools/call`: the request built from an invocation, and the server's answer (a result, a JSON-RPC error,
//! or a broken session) made into an `Output` or a `BackendError`.

use super::listener::{Relays, call_key, progress_key};
use super::server::OutputSchema;
use crate::backend::{BackendError, CallHost, Invocation, Output, ProgressSink};
use crate::pipeline::ResultBlock;
use rmcp::model::{
    CallToolRequest, CancelledNotificationParam, ClientRequest, JsonObject, RequestId, RequestMetaObject,
    ResourceContents, ServerResult,
};
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode, MetaObject};
use rmcp::service::PeerRequestOptions;
use rmcp::service::{Peer, RoleClient, ServiceError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What became of a call, and what it tells about the session and the server's tool list.
#[derive(Debug)]
pub struct CallOutcome {
    pub result: Result<Output, BackendError>,
    /// The transport is gone: the session must be opened again.
    pub session_broken: bool,
    /// The server refused the tool or its parameters: its tool list may have changed since the last import.
    pub list_stale: bool,
    pub output_violation: bool,
}

/// How a result is checked.
pub struct Checks<'a> {
    pub output: Option<&'a OutputSchema>,
    pub pass_invalid_output: bool,
    pub max_result_bytes: usize,
}

pub async fn call(
    peer: &Peer<RoleClient>,
    tool: &str,
    call: Invocation<'_>,
    checks: Checks<'_>,
    (server, relays): (&str, &Relays),
) -> CallOutcome {
    let arguments = match serde_json::from_str::<JsonObject>(call.arguments) {
        Ok(arguments) => arguments,
        // The pipeline validated an object schema, so this is a gateway bug, not the model's.
        Err(err) => return failed(BackendError::Unavailable(format!("arguments are not a JSON object: {err}"))),
    };
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.arguments = Some(arguments);
    params.meta = trace_meta(call.trace);
    let answered = match (call.progress, call.host) {
        (None, None) => peer.call_tool_once(params).await,
        (sink, host) => call_relayed(peer, params, (server, relays), sink, host).await,
    };
    match answered {
        Ok(CallToolResponse::Complete(result)) => answer(result, &checks),
        Ok(_) => failed(BackendError::fatal(
            "the MCP server asked for input or started a task; toolgate supports complete results only",
        )),
        Err(err) => service_error(err),
    }
}

/// The W3C trace context in `_meta` (SEP-414), so the server can continue the gateway's trace.
fn trace_meta(trace: &[(&'static str, String)]) -> Option<RequestMetaObject> {
    if trace.is_empty() {
        return None;
    }
    let mut meta = MetaObject::new();
    for (name, value) in trace {
        meta.0.insert((*name).to_owned(), value.clone().into());
    }
    Some(RequestMetaObject(meta))
}

/// `tools/call` with what the server sends the caller routed to it until the answer: the progress it reports
/// under the request's token (the SDK gives every request one) to `sink`, and the requests and log messages the
/// request's response stream carries to `host`, each as the transport reads it (`ordered`), so all of it before
/// the answer. The routes open as the request is queued, a round trip before the server can send anything for it
/// (a server's request that still arrives first waits for its route: `Relays::host_awaited`).
/// Abandoned (the gateway's deadline), the request is cancelled at the server, as `call_tool_once` does.
async fn call_relayed(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    (server, relays): (&str, &Relays),
    sink: Option<&Arc<dyn ProgressSink>>,
    host: Option<&Arc<dyn CallHost>>,
) -> Result<CallToolResponse, ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer.send_request_with_option(request, PeerRequestOptions::no_options()).await?;
    let _progress = sink.map(|sink| Route::open(&relays.progress, progress_key(server, &handle.progress_token), sink));
    // Opened for a call without a host too, so that a server's request for it is refused at once (`host_awaited`).
    let _host = Route::open(&relays.hosts, call_key(server, &handle.id), &host.cloned());
    relays.opened.notify_waiters();
    let mut abandoned = Abandoned { peer, id: Some(handle.id.clone()) };
    let answer = handle.await_response().await;
    abandoned.id = None;
    match answer? {
        ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
        ServerResult::InputRequiredResult(result) => Ok(CallToolResponse::InputRequired(result)),
        ServerResult::CreateTaskResult(result) => Ok(CallToolResponse::Task(result)),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// A request whose answer is no longer awaited: the server is told to stop.
struct Abandoned<'a> {
    peer: &'a Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        let cancel = CancelledNotificationParam::new(Some(id), Some("request abandoned by the gateway".into()));
        tokio::spawn(async move { peer.notify_cancelled(cancel).await });
    }
}

/// A route from a call's key (its progress token, or its request id) to its caller, until the call ends.
struct Route<'a, T> {
    key: String,
    routes: &'a Mutex<HashMap<String, T>>,
}

impl<'a, T: Clone> Route<'a, T> {
    fn open(routes: &'a Mutex<HashMap<String, T>>, key: String, to: &T) -> Self {
        routes.lock().expect("routes lock").insert(key.clone(), to.clone());
        Self { key, routes }
    }
}

impl<T> Drop for Route<'_, T> {
    fn drop(&mut self) {
        self.routes.lock().expect("routes lock").remove(&self.key);
    }
}

fn failed(err: BackendError) -> CallOutcome {
    CallOutcome { result: Err(err), session_broken: false, list_stale: false, output_violation: false }
}

/// A result: `isError` is the tool's failure, with its text; otherwise its text and structured content, the
/// latter checked against the tool's `outputSchema`.
pub fn answer(result: CallToolResult, checks: &Checks<'_>) -> CallOutcome {
    let (mut content, blocks) = crate::pipeline::text_and_blocks(result.content.iter().map(block_of).collect());
    let structured = result.structured_content.as_ref().map(|v| v.to_string());
    // Once each: the text of a result with blocks is made of its blocks, so they are counted in its place.
    let carried = match blocks.is_empty() {
        true => content.len(),
        false => blocks.iter().map(ResultBlock::size).sum(),
    };
    let size = carried + structured.as_ref().map_or(0, String::len);
    if size > checks.max_result_bytes {
        let message = format!("the result is {size} bytes, over the limit of {}", checks.max_result_bytes);
        return failed(BackendError::fatal(message));
    }
    if content.is_empty()
        && let Some(json) = &structured
    {
        content.clone_from(json);
    }
    if result.is_error == Some(true) {
        return failed(BackendError::fatal(content));
    }
    let violation = checks.output.and_then(|output| match &result.structured_content {
        None => Some("declares an outputSchema but returned no structuredContent".to_owned()),
        // A check that could not finish is a violation: the result is not known to match.
        Some(value) => match crate::registry::within_budget(|| output.validator.is_valid(value)) {
            (_, Some(reason)) => Some(reason),
            (true, None) => None,
            (false, None) => crate::pipeline::violations::describe(&output.schema, value)
                .first()
                .map(|v| format!("{} at {:?}", v.message, v.instance_path)),
        },
    });
    let Some(reason) = violation else {
        return CallOutcome {
            result: Ok(Output { content, structured, blocks }),
            session_broken: false,
            list_stale: false,
            output_violation: false,
        };
    };
    let message = format!("the result does not match the tool's outputSchema: {reason}");
    if checks.pass_invalid_output {
        tracing::warn!(%message, "MCP result passed through despite its outputSchema");
        return CallOutcome {
            result: Ok(Output { content, structured, blocks }),
            session_broken: false,
            list_stale: false,
            output_violation: true,
        };
    }
    CallOutcome {
        result: Err(BackendError::fatal(message)),
        session_broken: false,
        list_stale: false,
        output_violation: true,
    }
}

/// An MCP content block as the gateway carries it; annotations and `_meta` are not kept.
fn block_of(block: &ContentBlock) -> ResultBlock {
    match block {
        ContentBlock::Text(text) => ResultBlock::Text { text: text.text.clone() },
        ContentBlock::Image(image) => {
            ResultBlock::Image { data: image.data.clone(), mime_type: image.mime_type.clone() }
        }
        ContentBlock::Audio(audio) => {
            ResultBlock::Audio { data: audio.data.clone(), mime_type: audio.mime_type.clone() }
        }
        ContentBlock::ResourceLink(link) => ResultBlock::ResourceLink {
            uri: link.uri.clone(),
            name: link.name.clone(),
            mime_type: link.mime_type.clone(),
            description: link.description.clone(),
        },
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, mime_type, text, .. } => ResultBlock::Resource {
                uri: uri.clone(),
                mime_type: mime_type.clone(),
                text: Some(text.clone()),
                blob: None,
            },
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => ResultBlock::Resource {
                uri: uri.clone(),
                mime_type: mime_type.clone(),
                text: None,
                blob: Some(blob.clone()),
            },
            _ => unknown(block),
        },
        _ => unknown(block),
    }
}

/// A kind of block newer than this gateway: its JSON, as text, so nothing is lost.
fn unknown(block: &ContentBlock) -> ResultBlock {
    ResultBlock::Text { text: serde_json::to_string(block).unwrap_or_default() }
}

/// A JSON-RPC error is the tool's, and a permanent one: the pipeline already validated the arguments against the
/// imported schema, so invalid params (or an unknown tool, which MCP reports the same way) mean the server's list
/// changed, and are not the model's to fix. A closed or failing transport means the server is unavailable and its
/// session must be opened again; an answer that never came is worth a retry.
fn service_error(err: ServiceError) -> CallOutcome {
    let tool_error = |message: String| BackendError::fatal(message);
    let (result, session_broken, list_stale) = match err {
        ServiceError::McpError(data) => {
            let stale = matches!(data.code, ErrorCode::INVALID_PARAMS | ErrorCode::METHOD_NOT_FOUND);
            (tool_error(format!("MCP error {}: {}", data.code.0, data.message)), false, stale)
        }
        ServiceError::TransportSend(_) | ServiceError::TransportClosed => {
            (BackendError::Unavailable(format!("the MCP server's connection is lost: {err}")), true, false)
        }
        ServiceError::Timeout { .. } | ServiceError::Cancelled { .. } => {
            (BackendError::Unavailable(format!("MCP: {err}")), false, false)
        }
        other => (tool_error(format!("MCP: {other}")), false, false),
    };
    CallOutcome { result: Err(result), session_broken, list_stale, output_violation: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::FailureClass;
    use serde_json::json;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    fn checks(output: Option<&OutputSchema>, pass: bool) -> Checks<'_> {
        Checks { output, pass_invalid_output: pass, max_result_bytes: 1 << 20 }
    }

    #[test]
    fn text_and_structured_content_become_the_output() {
        let r = result(json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                              "structuredContent": {"sum": 3}}));
        let out = answer(r, &checks(None, false)).result.unwrap();
        assert_eq!((out.content.as_str(), out.structured.as_deref()), ("a\nb", Some(r#"{"sum":3}"#)));
    }

    #[test]
    fn is_error_is_a_tool_error_with_the_servers_text() {
        let r = result(json!({"content": [{"type": "text", "text": "disk full"}], "isError": true}));
        let err = answer(r, &checks(None, false)).result.unwrap_err();
        assert_eq!(err, BackendError::fatal("disk full"));
    }

    #[test]
    fn an_output_schema_violation_fails_or_passes_as_configured() {
        let schema = json!({"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]});
        let validator = OutputSchema { validator: jsonschema::validator_for(&schema).unwrap(), schema };
        let bad = || result(json!({"content": [], "structuredContent": {"sum": "x"}}));
        let failed = answer(bad(), &checks(Some(&validator), false));
        assert!(failed.output_violation);
        assert!(
            matches!(failed.result, Err(BackendError::Tool { ref message, .. }) if message.contains("outputSchema"))
        );
        let passed = answer(bad(), &checks(Some(&validator), true));
        assert!(passed.output_violation && passed.result.is_ok());
        let missing =
            answer(result(json!({"content": [{"type": "text", "text": "t"}]})), &checks(Some(&validator), false));
        assert!(missing.output_violation && missing.result.is_err());
        let good =
            answer(result(json!({"content": [], "structuredContent": {"sum": 1}})), &checks(Some(&validator), false));
        assert!(!good.output_violation);
        assert_eq!(good.result.unwrap().content, r#"{"sum":1}"#, "no text: the structured JSON is the content");
    }

    #[test]
    fn an_oversized_result_is_refused() {
        let r = result(json!({"content": [{"type": "text", "text": "x".repeat(100)}]}));
        let out = answer(r, &Checks { output: None, pass_invalid_output: false, max_result_bytes: 10 });
        assert!(
            matches!(out.result, Err(BackendError::Tool { ref message, .. }) if message.contains("over the limit"))
        );
    }

    #[test]
    fn errors_map_to_tool_errors_or_unavailable_and_say_what_to_do_with_the_session() {
        let rpc = |code| ServiceError::McpError(rmcp::model::ErrorData::new(code, "no", None));
        let invalid = service_error(rpc(ErrorCode::INVALID_PARAMS));
        assert!(matches!(invalid.result, Err(BackendError::Tool { class: FailureClass::Fatal, .. })));
        assert!(invalid.list_stale && !invalid.session_broken);
        let internal = service_error(rpc(ErrorCode::INTERNAL_ERROR));
        assert!(matches!(internal.result, Err(BackendError::Tool { .. })) && !internal.list_stale);
        let closed = service_error(ServiceError::TransportClosed);
        assert!(matches!(closed.result, Err(BackendError::Unavailable(_))) && closed.session_broken);
        let unexpected = service_error(ServiceError::UnexpectedResponse);
        assert!(matches!(unexpected.result, Err(BackendError::Tool { class, .. }) if !class.retryable()));
    }

    #[test]
    fn the_size_limit_counts_each_byte_once() {
        let r = result(json!({"content": [], "structuredContent": {"a": "x".repeat(60)}}));
        let checks = Checks { output: None, pass_invalid_output: false, max_result_bytes: 80 };
        assert!(answer(r, &checks).result.is_ok(), "structured content copied into the text is not counted twice");
        let image = json!({"type": "image", "data": "QUJD", "mimeType": "image/png"});
        let mixed = json!({"content": [{"type": "text", "text": "y".repeat(60)}, image]});
        let kept = answer(result(mixed.clone()), &checks).result.expect("text and image, each counted once");
        assert_eq!(kept.blocks.len(), 2);
        let tight = Checks { max_result_bytes: 70, ..checks };
        assert!(answer(result(mixed), &tight).result.is_err(), "the blocks are counted");
    }
}
