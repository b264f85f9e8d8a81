//! What reaches a host while its call runs: the call's progress, and the requests (sampling, elicitation, roots)
//! and log messages of the MCP server the call runs on, each on the stream of the host's own `tools/call`.
#![allow(deprecated)] // Logging, deprecated by SEP-2577 from 2026-07-28 on, is still relayed for 2025-11-25 hosts.

use crate::backend::{CallHost, Progress, ProgressSink};
use futures::future::BoxFuture;
use rmcp::model::{
    ClientResult, GetExtensions, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam,
    ProgressToken, ProtocolVersion, RequestId, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, Peer, PeerRequestOptions, RequestContext, ServiceError};
use rmcp::{ErrorData, RoleServer};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Progress reports of one call waiting to reach its host; past it, reports are dropped.
const PROGRESS_BACKLOG: usize = 64;

/// Log messages of one call waiting to reach its host; past it, messages are dropped.
const LOG_BACKLOG: usize = 64;

/// The lowest level of log message a session's host asked for (`logging/setLevel`); every level until it asks.
#[derive(Debug, Default)]
pub struct LogLevel(AtomicU8);

impl LogLevel {
    pub fn set(&self, level: LoggingLevel) {
        self.0.store(level as u8, Ordering::Relaxed);
    }

    fn lets_through(&self, level: LoggingLevel) -> bool {
        level as u8 >= self.0.load(Ordering::Relaxed)
    }
}

/// The host of one call: its session, and the request its `tools/call` came in as, whose stream carries what the
/// call's server asks of it.
#[derive(Debug)]
pub struct Host {
    peer: Peer<RoleServer>,
    call: RequestId,
    level: Arc<LogLevel>,
    /// How long the host (its user, for an elicitation) may take to answer.
    wait: Duration,
    logs: Mutex<LogRelay>,
}

/// The task that tells the host its call's log messages in order: started by the first, ended with the call.
#[derive(Debug, Default)]
enum LogRelay {
    #[default]
    Idle,
    Open(tokio::sync::mpsc::Sender<LoggingMessageNotificationParam>, tokio::task::JoinHandle<()>),
    Ended,
}

impl Host {
    pub fn of(context: &RequestContext<RoleServer>, level: Arc<LogLevel>, wait: Duration) -> Arc<Self> {
        let logs = Mutex::default();
        Arc::new(Self { peer: context.peer.clone(), call: context.id.clone(), level, wait, logs })
    }

    /// Waits until the host's session has taken every log message of the call, so that all of them come before
    /// its result; one the server sends later is of a call that has ended, and is dropped.
    pub async fn finish(&self) {
        let relay = std::mem::replace(&mut *self.logs.lock().expect("logs lock"), LogRelay::Ended);
        if let LogRelay::Open(queue, told) = relay {
            drop(queue);
            let _ = told.await;
        }
    }

    /// Whether the host declared, when it connected, the capability the request needs.
    fn declares(&self, request: &ServerRequest) -> Result<(), ErrorData> {
        let info = self.peer.peer_info();
        // A 2026-07-28 host cannot answer a request on its call's stream: it is asked by a multi-round-trip result.
        if info.as_ref().is_some_and(|info| info.protocol_version >= ProtocolVersion::V_2026_07_28) {
            let refused = "a 2026-07-28 host is asked for input by a multi-round-trip result, which toolgate does not \
                           make of an MCP server's request yet; call on 2025-11-25 to be asked";
            return Err(ErrorData::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, refused, None));
        }
        let capabilities = info.as_ref().map(|info| &info.capabilities);
        let (declared, needs) = match request {
            ServerRequest::CreateMessageRequest(_) => (capabilities.is_some_and(|c| c.sampling.is_some()), "sampling"),
            ServerRequest::ElicitRequest(_) => (capabilities.is_some_and(|c| c.elicitation.is_some()), "elicitation"),
            ServerRequest::ListRootsRequest(_) => (capabilities.is_some_and(|c| c.roots.is_some()), "roots"),
            _ => (false, "a capability toolgate does not pass on"),
        };
        match declared {
            true => Ok(()),
            false => Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("the host that made this call did not declare {needs}"),
                None,
            )),
        }
    }
}

impl CallHost for Host {
    fn ask(&self, mut request: ServerRequest) -> BoxFuture<'static, Result<ClientResult, ErrorData>> {
        if let Err(refused) = self.declares(&request) {
            return Box::pin(std::future::ready(Err(refused)));
        }
        // On the stream of the host's call, as the server sent it on the stream of the gateway's.
        request.extensions_mut().insert(OriginatingRequestId(self.call.clone()));
        let (peer, wait) = (self.peer.clone(), self.wait);
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(wait);
        // Sent from a task of its own: the SDK would mark the request as one of the server request's being
        // answered on this task (a task-local), over the mark set above.
        let asked = tokio::spawn(async move {
            let handle = peer.send_request_with_option(request, options).await.map_err(failed)?;
            handle.await_response().await.map_err(failed)
        });
        Box::pin(async move {
            asked.await.unwrap_or_else(|e| Err(ErrorData::internal_error(format!("asking the host failed: {e}"), None)))
        })
    }

    fn log(&self, message: LoggingMessageNotificationParam) {
        if !self.level.lets_through(message.level) {
            return;
        }
        let mut relay = self.logs.lock().expect("logs lock");
        if let LogRelay::Idle = *relay {
            let (queue, messages) = tokio::sync::mpsc::channel(LOG_BACKLOG);
            *relay = LogRelay::Open(queue, tokio::spawn(tell_logs(messages, self.peer.clone())));
        }
        if let LogRelay::Open(queue, _) = &*relay {
            let _ = queue.try_send(message);
        }
    }
}

/// Passes a call's log messages on to the host until the call ends; a host gone is no error of the server's.
async fn tell_logs(mut messages: tokio::sync::mpsc::Receiver<LoggingMessageNotificationParam>, peer: Peer<RoleServer>) {
    while let Some(message) = messages.recv().await {
        if peer.notify_logging_message(message).await.is_err() {
            return;
        }
    }
}

/// The host's own error as it answered it; a host gone, or too slow, as an internal error of the request.
fn failed(err: ServiceError) -> ErrorData {
    match err {
        ServiceError::McpError(data) => data,
        other => ErrorData::internal_error(format!("the host did not answer: {other}"), None),
    }
}

/// Where a call's progress goes when the host asked to hear it (a `progressToken`), and the task that tells the
/// host: the call's handler drops the sink and waits for the task, so all of it arrives before the result.
pub fn progress_of(
    context: &RequestContext<RoleServer>,
) -> (Option<ProgressSink>, Option<tokio::task::JoinHandle<()>>) {
    let Some(token) = context.meta.get_progress_token() else { return (None, None) };
    let (sink, reports) = tokio::sync::mpsc::channel(PROGRESS_BACKLOG);
    (Some(sink), Some(tokio::spawn(tell_progress(reports, token, context.peer.clone()))))
}

/// Passes a call's progress on to the host, under the host's token, until the call ends. The SDK handles each
/// notification from a server in a task of its own, so reports may come out of order: one that would not increase
/// the progress the host was told is dropped, as the protocol has progress only increase.
async fn tell_progress(
    mut reports: tokio::sync::mpsc::Receiver<Progress>,
    token: ProgressToken,
    peer: Peer<RoleServer>,
) {
    let mut told = f64::NEG_INFINITY;
    while let Some(report) = reports.recv().await {
        if report.progress <= told {
            continue;
        }
        told = report.progress;
        let mut note = ProgressNotificationParam::new(token.clone(), report.progress);
        (note.total, note.message) = (report.total, report.message);
        if peer.notify_progress(note).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_lets_through_itself_and_above_and_every_level_until_one_is_set() {
        let level = LogLevel::default();
        assert!(level.lets_through(LoggingLevel::Debug));
        level.set(LoggingLevel::Warning);
        assert!(!level.lets_through(LoggingLevel::Info) && !level.lets_through(LoggingLevel::Notice));
        assert!(level.lets_through(LoggingLevel::Warning) && level.lets_through(LoggingLevel::Emergency));
    }
}
