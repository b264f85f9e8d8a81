//! The gRPC backend: a tool server implementing `toolgate.v1.ToolRuntime/Invoke`.

use super::{BackendError, Invocation, Output};
use crate::coalesce::CoalescingConnector;
use crate::pb::v1::{self as pb, tool_runtime_client::ToolRuntimeClient};
use std::collections::HashMap;
use std::sync::RwLock;
use std::time::Duration;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::{Channel, Endpoint};

/// One lazily connected channel per target, shared by all calls to it.
pub struct GrpcChannels {
    /// Read on every call, written once per target: a read lock, not a mutex, so calls never queue here.
    channels: RwLock<HashMap<String, Channel>>,
    connect_timeout: Duration,
    max_result_bytes: usize,
}

impl GrpcChannels {
    pub fn new(connect_timeout: Duration, max_result_bytes: usize) -> Self {
        Self { channels: RwLock::default(), connect_timeout, max_result_bytes }
    }

    fn channel(&self, target: &str) -> Result<Channel, BackendError> {
        if let Some(channel) = self.channels.read().unwrap_or_else(|p| p.into_inner()).get(target) {
            return Ok(channel.clone());
        }
        let mut channels = self.channels.write().unwrap_or_else(|p| p.into_inner());
        if let Some(channel) = channels.get(target) {
            return Ok(channel.clone());
        }
        let endpoint = Endpoint::from_shared(target.to_owned())
            .map_err(|e| BackendError::Unavailable(format!("bad gRPC target {target:?}: {e}")))?
            .connect_timeout(self.connect_timeout);
        let channel = endpoint.connect_with_connector_lazy(CoalescingConnector);
        channels.insert(target.to_owned(), channel.clone());
        Ok(channel)
    }

    pub async fn invoke(&self, target: &str, call: Invocation<'_>) -> Result<Output, BackendError> {
        let mut client = ToolRuntimeClient::new(self.channel(target)?).max_decoding_message_size(self.max_result_bytes);
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
            if let Ok(mut value) = value.parse::<MetadataValue<Ascii>>() {
                // New on every call: HPACK's table would gain nothing from it but lose the entries it evicts.
                value.set_sensitive(true);
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
