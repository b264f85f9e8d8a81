//! The gRPC backend: a tool server implementing `toolgate.v1.ToolRuntime/Invoke`.

use super::{BackendError, Invocation, Output};
use crate::pb::v1::{self as pb, tool_runtime_client::ToolRuntimeClient};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use std::collections::HashMap;
use std::sync::RwLock;
use std::time::Duration;

/// One HTTP/2 client for every plain-text target: calls go straight onto the target's multiplexed connection
/// from the calling task, without the extra task and queue hop of a tonic `Channel`.
type H2 = Client<HttpConnector, tonic::body::Body>;

/// The gRPC client of each target, built once and shared by all calls to it.
pub struct GrpcChannels {
    h2: H2,
    /// Read on every call, written once per target: a read lock, not a mutex, so calls never queue here.
    origins: RwLock<HashMap<String, http::Uri>>,
    max_result_bytes: usize,
}

impl GrpcChannels {
    pub fn new(connect_timeout: Duration, max_result_bytes: usize) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(connect_timeout));
        let h2 = Client::builder(TokioExecutor::new()).http2_only(true).build(connector);
        Self { h2, origins: RwLock::default(), max_result_bytes }
    }

    fn origin(&self, target: &str) -> Result<http::Uri, BackendError> {
        if let Some(origin) = self.origins.read().unwrap_or_else(|p| p.into_inner()).get(target) {
            return Ok(origin.clone());
        }
        let bad = |reason: &str| BackendError::Unavailable(format!("bad gRPC target {target:?}: {reason}"));
        let origin: http::Uri = target.parse().map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
        if origin.scheme_str() != Some("http") || origin.authority().is_none() {
            return Err(bad("this gateway reaches gRPC tool servers over plain-text HTTP/2 only (http://host:port)"));
        }
        self.origins.write().unwrap_or_else(|p| p.into_inner()).insert(target.to_owned(), origin.clone());
        Ok(origin)
    }

    pub async fn invoke(&self, target: &str, call: Invocation<'_>) -> Result<Output, BackendError> {
        let mut client = ToolRuntimeClient::with_origin(self.h2.clone(), self.origin(target)?)
            .max_decoding_message_size(self.max_result_bytes);
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
        let mut request = tonic::Request::new(request);
        for (name, value) in call.trace {
            // Trace headers are ASCII by construction; one that is not is left out rather than fail the call.
            if let Ok(value) = value.parse() {
                request.metadata_mut().insert(*name, value);
            }
        }
        let response = client.invoke(request).await.map_err(status_error)?.into_inner();
        if response.is_error {
            let message = if response.error_message.is_empty() { response.content } else { response.error_message };
            return Err(BackendError::Tool { message, retryable: false, model_fixable: false });
        }
        let structured = (!response.structured.is_empty()).then_some(response.structured);
        Ok(Output { content: response.content, structured })
    }
}

fn status_error(status: tonic::Status) -> BackendError {
    use tonic::Code;
    let message = format!("gRPC {:?}: {}", status.code(), status.message());
    match status.code() {
        Code::Unavailable | Code::Unknown | Code::Internal | Code::Unimplemented => BackendError::Unavailable(message),
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange | Code::NotFound => {
            BackendError::Tool { message, retryable: false, model_fixable: true }
        }
        Code::ResourceExhausted | Code::Aborted | Code::DeadlineExceeded => {
            BackendError::Tool { message, retryable: true, model_fixable: false }
        }
        _ => BackendError::Tool { message, retryable: false, model_fixable: false },
    }
}
