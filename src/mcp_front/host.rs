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
use tokio::sync::mpsc;

/// Progress reports and log messages of one call waiting to reach its host; past it, they are dropped.
const BACKLOG: usize = 64;

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
    /// The token the host asked to hear the call's progress under, if it did.
    progress: Option<ProgressToken>,
    notes: Mutex<Relay>,
}

/// What the call's server tells its host while the call runs.
#[derive(Debug)]
enum Note {
    Progress(Progress),
    Log(LoggingMessageNotificationParam),
}

/// The task that tells the host its call's notes in the order the server sent them: started by the first, so a
/// call with none spawns nothing, and ended with the call.
#[derive(Debug, Default)]
enum Relay {
    #[default]
    Idle,
    Open(mpsc::Sender<Note>, tokio::task::JoinHandle<()>),
    Ended,
}

impl Host {
    pub fn of(context: &RequestContext<RoleServer>, level: Arc<LogLevel>, wait: Duration) -> Arc<Self> {
        let (peer, call, progress) = (context.peer.clone(), context.id.clone(), context.meta.get_progress_token());
        Arc::new(Self { peer, call, level, wait, progress, notes: Mutex::default() })
    }

    /// Where the call's progress goes, if the host asked to hear it (a `progressToken`).
    pub fn progress(self: &Arc<Self>) -> Option<Arc<dyn ProgressSink>> {
        self.progress.is_some().then(|| Arc::clone(self) as Arc<dyn ProgressSink>)
    }

    /// Waits until the host's session has taken every note of the call, so that all of them come before its
    /// result; one the server sends later is of a call that has ended, and is dropped.
    pub async fn finish(&self) {
        let relay = std::mem::replace(&mut *self.notes.lock().expect("notes lock"), Relay::Ended);
        if let Relay::Open(queue, told) = relay {
            drop(queue);
            let _ = told.await;
        }
    }

    /// Queues a note for the host, starting the task that tells it with the first.
    fn tell(&self, note: Note) {
        let mut relay = self.notes.lock().expect("notes lock");
        if let Relay::Idle = *relay {
            let (queue, notes) = mpsc::channel(BACKLOG);
            let token = self.progress.clone();
            *relay = Relay::Open(queue, tokio::spawn(tell_notes(notes, token, self.peer.clone())));
        }
        if let Relay::Open(queue, _) = &*relay {
            let _ = queue.try_send(note);
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
        if self.level.lets_through(message.level) {
            self.tell(Note::Log(message));
        }
    }
}

impl ProgressSink for Host {
    fn report(&self, progress: Progress) {
        self.tell(Note::Progress(progress));
    }
}

/// Passes a call's notes on to the host until the call ends, its progress under the host's own token. A host
/// gone is no error of the server's. Progress that would not increase what the host was told is dropped, as the
/// protocol has progress only increase.
async fn tell_notes(mut notes: mpsc::Receiver<Note>, token: Option<ProgressToken>, peer: Peer<RoleServer>) {
    let mut told = f64::NEG_INFINITY;
    while let Some(note) = notes.recv().await {
        let sent = match note {
            Note::Progress(report) => {
                let Some(token) = token.as_ref().filter(|_| report.progress > told) else { continue };
                told = report.progress;
                let mut note = ProgressNotificationParam::new(token.clone(), report.progress);
                (note.total, note.message) = (report.total, report.message);
                peer.notify_progress(note).await
            }
            Note::Log(message) => peer.notify_logging_message(message).await,
        };
        if sent.is_err() {
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
