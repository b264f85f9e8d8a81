//! A session's transport with what a server sends for a call routed as it arrives: its progress, and the log
//! messages its response stream carried. The SDK hands each notification to a task of its own, so one could
//! reach its caller out of order, or after the answer that followed it on the wire; routed here, in the order
//! the transport received them, each is queued for the caller before the answer is even read.
#![allow(deprecated)] // Logging, deprecated by SEP-2577 from 2026-07-28 on, is still relayed for 2025-11-25 hosts.

use super::listener::{CARRIED_BY, Relays};
use crate::backend::Progress;
use rmcp::RoleClient;
use rmcp::model::{
    JsonRpcMessage, JsonRpcNotification, LoggingMessageNotification, NotificationMetaObject, ProgressNotificationParam,
    RequestId, ServerNotification,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// A transport whose progress and call-carried log messages go straight to their calls.
pub struct InOrder<T> {
    inner: T,
    relays: Relays,
    server: String,
}

impl<T> InOrder<T> {
    pub fn new(inner: T, relays: Relays, server: String) -> Self {
        Self { inner, relays, server }
    }

    /// The message, unless it was a call's to route: progress (of a call that has ended, or whose caller is that
    /// far behind, it is dropped), or a log message its call's response stream carried. A log message of no call
    /// goes on to the session's handler, which logs it.
    fn route(&self, message: RxJsonRpcMessage<RoleClient>) -> Option<RxJsonRpcMessage<RoleClient>> {
        let JsonRpcMessage::Notification(JsonRpcNotification { jsonrpc, notification }) = message else {
            return Some(message);
        };
        match notification {
            ServerNotification::ProgressNotification(progress) => {
                self.progress(progress.params);
                None
            }
            ServerNotification::LoggingMessageNotification(log) => self.log(log).map(|log| {
                let notification = ServerNotification::LoggingMessageNotification(log);
                JsonRpcMessage::Notification(JsonRpcNotification { jsonrpc, notification })
            }),
            notification => Some(JsonRpcMessage::Notification(JsonRpcNotification { jsonrpc, notification })),
        }
    }

    fn progress(&self, params: ProgressNotificationParam) {
        if let Some(sink) = self.relays.progress_of(&self.server, &params.progress_token) {
            sink.report(Progress { progress: params.progress, total: params.total, message: params.message });
        }
    }

    /// Queues a log message with the host of the call that carried it; gives back one of no such call.
    fn log(&self, log: LoggingMessageNotification) -> Option<LoggingMessageNotification> {
        let meta = log.extensions.get::<NotificationMetaObject>();
        let carried_by = meta.and_then(|meta| meta.get(CARRIED_BY));
        let call = carried_by.and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
        let Some(call) = call else { return Some(log) };
        match self.relays.host_of(&self.server, &call) {
            Some(host) => {
                host.log(log.params);
                None
            }
            None => Some(log),
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for InOrder<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = self.inner.receive().await?;
            if let Some(message) = self.route(message) {
                return Some(message);
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
