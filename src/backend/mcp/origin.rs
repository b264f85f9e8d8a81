//! The HTTP client of the gateway's MCP sessions: reqwest's, with each log message on a request's response
//! stream marked with that request's id (`listener::CARRIED_BY`). The SDK keeps which stream carried a server's
//! request, not a notification; the mark lets a log message reach the host of the call it came with.

use super::listener::CARRIED_BY;
use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, RequestId};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use serde_json::Value;
use sse_stream::Sse;
use std::collections::HashMap;
use std::sync::Arc;

type Events = BoxStream<'static, Result<Sse, SseError>>;
type Failure = StreamableHttpError<reqwest::Error>;

/// reqwest's client, marking log messages with the request whose response carried them.
#[derive(Clone)]
pub struct OriginClient(pub reqwest::Client);

impl StreamableHttpClient for OriginClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let carried_by = request_id(&message);
        let response = self.0.post_message(uri, message, session_id, auth_header, custom_headers).await?;
        Ok(marked_response(response, carried_by))
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let carried_by = request_id(&message);
        let response = self
            .0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(marked_response(response, carried_by))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failure> {
        self.0.delete_session(uri, session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, Failure> {
        let events = self.0.get_stream(uri, session_id, last_event_id, auth_header, custom_headers).await?;
        Ok(marked(events, None))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, Failure> {
        let events = self
            .0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(marked(events, None))
    }
}

fn request_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
        _ => None,
    }
}

fn marked_response(response: StreamableHttpPostResponse, carried_by: Option<RequestId>) -> StreamableHttpPostResponse {
    match response {
        StreamableHttpPostResponse::Sse(events, session) => {
            StreamableHttpPostResponse::Sse(marked(events, carried_by), session)
        }
        other => other,
    }
}

/// The stream with every log message marked with the request that carried it; on a stream that carries no
/// request (the session's own), a mark the server wrote itself is taken out, so no call hears another's.
fn marked(events: Events, carried_by: Option<RequestId>) -> Events {
    let carried_by = carried_by.map(|id| serde_json::to_value(id).expect("a request id is JSON"));
    events
        .map(move |event| {
            event.map(|mut sse| {
                if let Some(data) = sse.data.as_mut() {
                    mark(data, carried_by.as_ref());
                }
                sse
            })
        })
        .boxed()
}

/// Marks one event's data if it is a `notifications/message`; any other message is left as it came, unparsed
/// unless it names that method.
fn mark(data: &mut String, carried_by: Option<&Value>) {
    if !data.contains("notifications/message") {
        return;
    }
    let Ok(mut message) = serde_json::from_str::<Value>(data) else { return };
    if message.get("method").and_then(Value::as_str) != Some("notifications/message") {
        return;
    }
    let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else { return };
    match carried_by {
        Some(id) => {
            let meta = params.entry("_meta").or_insert_with(|| Value::Object(Default::default()));
            let Some(meta) = meta.as_object_mut() else { return };
            meta.insert(CARRIED_BY.to_owned(), id.clone());
        }
        None => {
            let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) else { return };
            if meta.remove(CARRIED_BY).is_none() {
                return;
            }
        }
    }
    *data = message.to_string();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_log_message_is_marked_with_the_request_that_carried_it_and_nothing_else_is() {
        let mut log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                             "params": {"level": "info", "data": "started"}})
        .to_string();
        mark(&mut log, Some(&json!(7)));
        let log: Value = serde_json::from_str(&log).unwrap();
        assert_eq!(log["params"]["_meta"][CARRIED_BY], json!(7));
        assert_eq!(log["params"]["data"], "started");
        let result = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text",
                            "text": "notifications/message"}]}})
        .to_string();
        let mut same = result.clone();
        mark(&mut same, Some(&json!(7)));
        assert_eq!(same, result, "a result that only mentions the method is left as it came");
    }

    #[test]
    fn a_mark_the_server_wrote_itself_is_taken_out_on_its_own_stream() {
        let forged = json!({"jsonrpc": "2.0", "method": "notifications/message",
                            "params": {"level": "info", "data": "x", "_meta": {CARRIED_BY: 3, "other": 1}}});
        let mut data = forged.to_string();
        mark(&mut data, None);
        let data: Value = serde_json::from_str(&data).unwrap();
        assert_eq!(data["params"]["_meta"], json!({"other": 1}));
        let mut plain = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info",
                               "data": "y"}})
        .to_string();
        let before = plain.clone();
        mark(&mut plain, None);
        assert_eq!(plain, before);
    }
}
