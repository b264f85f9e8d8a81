//! The gRPC backend: a tool server implementing `toolgate.v1.ToolRuntime/Invoke`.

use super::{BackendError, Invocation, Output};
use crate::pb::v1 as pb;
use crate::pipeline::FailureClass;
use crate::tls::ClientTls;
use crate::wire::client::{CallFailure, Link, Target};
use crate::wire::{frame, protobuf};
use bytes::Bytes;
use prost::Message;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The method every gRPC tool server implements.
const INVOKE: &str = "/toolgate.v1.ToolRuntime/Invoke";

/// One lazily connected HTTP/2 connection per target, shared by all calls to it.
pub struct GrpcChannels {
    /// Read on every call, written once per target: a read lock, not a mutex, so calls never queue here.
    targets: RwLock<HashMap<String, Arc<Target>>>,
    /// For `https://` targets.
    tls: Arc<ClientTls>,
    connect_timeout: Duration,
    max_result_bytes: usize,
}

impl GrpcChannels {
    pub fn new(connect_timeout: Duration, max_result_bytes: usize, tls: Arc<ClientTls>) -> Self {
        Self { targets: RwLock::default(), tls, connect_timeout, max_result_bytes }
    }

    fn target(&self, target: &str) -> Result<Arc<Target>, BackendError> {
        if let Some(found) = self.targets.read().unwrap_or_else(|p| p.into_inner()).get(target) {
            return Ok(Arc::clone(found));
        }
        let mut targets = self.targets.write().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = targets.get(target) {
            return Ok(Arc::clone(found));
        }
        let made = Arc::new(Target::new(target, INVOKE, &self.tls).map_err(BackendError::Unavailable)?);
        targets.insert(target.to_owned(), Arc::clone(&made));
        Ok(made)
    }

    /// The connection to `target`, if any call has used it.
    pub fn link(&self, target: &str) -> Option<Link> {
        self.targets.read().unwrap_or_else(|p| p.into_inner()).get(target).map(|t| t.link())
    }

    pub async fn invoke(&self, target: &str, call: Invocation<'_>) -> Result<Output, BackendError> {
        let server = self.target(target)?;
        let framed = invoke_request(&call);
        let answer = server.unary(framed, call.trace, self.max_result_bytes, self.connect_timeout).await;
        let message = answer.map_err(failure)?;
        let response = pb::InvokeResponse::decode(message)
            .map_err(|e| BackendError::Unavailable(format!("gRPC Internal: the answer does not decode: {e}")))?;
        if response.is_error {
            let message = if response.error_message.is_empty() { response.content } else { response.error_message };
            return Err(BackendError::fatal(message));
        }
        let structured = (!response.structured.is_empty()).then_some(response.structured);
        Ok(Output::text(response.content, structured))
    }
}

/// `call` as a framed `InvokeRequest`, written from its borrowed strings (`wire::protobuf`): a prost struct would
/// copy each of them first, six allocations a call.
fn invoke_request(call: &Invocation<'_>) -> Bytes {
    let ctx = call.context;
    let strings = call.call_id.len() + call.tool.len() + call.arguments.len() + ctx.tenant.len() + ctx.user_id.len();
    let mut buf = Vec::with_capacity(frame::PREFIX + strings + ctx.session_id.len() + 32);
    buf.extend_from_slice(&[0; frame::PREFIX]);
    protobuf::string(&mut buf, 1, call.call_id);
    protobuf::string(&mut buf, 2, call.tool);
    protobuf::string(&mut buf, 3, call.arguments);
    // Always there, empty or not, as prost writes a message field that is set.
    protobuf::nested(&mut buf, 4, |buf| {
        protobuf::string(buf, 1, &ctx.tenant);
        protobuf::string(buf, 2, &ctx.user_id);
        protobuf::string(buf, 3, &ctx.session_id);
        for (name, value) in &ctx.values {
            protobuf::nested(buf, 4, |entry| {
                protobuf::string(entry, 1, name);
                protobuf::string(entry, 2, value);
            });
        }
    });
    let len = u32::try_from(buf.len() - frame::PREFIX).unwrap_or(u32::MAX);
    buf[1..frame::PREFIX].copy_from_slice(&len.to_be_bytes());
    // Exactly as long as it holds, the buffer becomes the `Bytes` as it is; with room to spare, `Bytes` would
    // allocate a header for it. The allocator shrinks a block in place.
    buf.shrink_to_fit();
    Bytes::from(buf)
}

fn failure(failure: CallFailure) -> BackendError {
    match failure {
        CallFailure::Status(status) => status_error(status),
        // The same call would answer the same: not worth a retry.
        CallFailure::TooLarge { limit } => {
            BackendError::fatal(format!("the result is over the limit of {limit} bytes"))
        }
    }
}

fn status_error(status: tonic::Status) -> BackendError {
    use tonic::Code;
    let message = format!("gRPC {:?}: {}", status.code(), status.message());
    match status.code() {
        Code::Unavailable | Code::Unknown | Code::Internal | Code::Unimplemented => BackendError::Unavailable(message),
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange | Code::NotFound => {
            BackendError::Tool { message, class: FailureClass::ModelFixable }
        }
        Code::ResourceExhausted | Code::Aborted | Code::DeadlineExceeded => {
            BackendError::Tool { message, class: FailureClass::Retryable }
        }
        _ => BackendError::fatal(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::CallContext;

    /// The request prost writes for `call`, as the backend wrote it before `invoke_request`.
    fn prost_request(call: &Invocation<'_>) -> pb::InvokeRequest {
        let ctx = call.context;
        pb::InvokeRequest {
            call_id: call.call_id.to_owned(),
            tool: call.tool.to_owned(),
            arguments: call.arguments.to_owned(),
            context: Some(pb::CallContext {
                tenant: ctx.tenant.clone(),
                user_id: ctx.user_id.clone(),
                session_id: ctx.session_id.clone(),
                values: ctx.values.clone().into_iter().collect(),
            }),
        }
    }

    fn invocation<'a>(call_id: &'a str, arguments: &'a str, context: &'a CallContext) -> Invocation<'a> {
        Invocation {
            call_id,
            tool: "forecast",
            tenant: &context.tenant,
            arguments,
            context,
            trace: &[],
            budget: Duration::from_secs(1),
            progress: None,
            host: None,
        }
    }

    #[test]
    fn the_request_is_what_prost_writes_and_reads() {
        let long = format!("{{\"q\": \"{}\"}}", "é".repeat(300));
        let empty = CallContext::default();
        let mut full =
            CallContext { tenant: "acme".into(), user_id: "u-1".into(), session_id: "s".repeat(200), ..empty.clone() };
        let mut one = full.clone();
        one.values.insert("region".into(), "eu".into());
        full.values.extend([("a".into(), String::new()), (String::new(), "b".into()), ("c".into(), "d".repeat(130))]);
        for (id, arguments, context) in
            [("", "", &empty), ("call-1", "{}", &empty), ("c", &long, &one), ("x", "{}", &full)]
        {
            let call = invocation(id, arguments, context);
            let framed = invoke_request(&call);
            let (prefix, message) = framed.split_at(frame::PREFIX);
            assert_eq!(prefix[0], 0, "not compressed");
            assert_eq!(u32::from_be_bytes(prefix[1..].try_into().unwrap()) as usize, message.len());
            let expected = prost_request(&call);
            assert_eq!(pb::InvokeRequest::decode(message).unwrap(), expected, "{id:?}");
            // With at most one value the map's order is fixed, so the bytes can be held to prost's too.
            if context.values.len() <= 1 {
                assert_eq!(message, &expected.encode_to_vec()[..], "{id:?}");
            }
        }
    }
}
