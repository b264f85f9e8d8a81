//! The gRPC backend: a tool server implementing `toolgate.v1.ToolRuntime/Invoke`.

use super::{BackendError, Invocation, Output};
use crate::pb::v1 as pb;
use crate::pipeline::FailureClass;
use crate::tls::ClientTls;
use crate::wire::client::{CallFailure, Link, Target};
use crate::wire::frame;
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
        let ctx = call.context;
        let request = pb::InvokeRequest {
            call_id: call.call_id.to_owned(),
            tool: call.tool.to_owned(),
            arguments: call.arguments.to_owned(),
            context: Some(pb::CallContext {
                tenant: ctx.tenant.clone(),
                user_id: ctx.user_id.clone(),
                session_id: ctx.session_id.clone(),
                values: ctx.values.clone().into_iter().collect(),
            }),
        };
        let framed = frame::encode(&request);
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
