//! One connected worker: the queue of jobs its stream sends, and its calls waiting for a result. Once closed, a
//! link takes no call and every call still waiting has failed.

use super::Job;
use crate::backend::{BackendError, Output};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{mpsc, oneshot, watch};

/// What a waiting call is told.
type Reply = oneshot::Sender<Result<Output, BackendError>>;

/// One connected worker, shared by the pool's routes, its stream and the calls it is serving.
pub struct WorkerLink {
    /// The gateway's id for the connection, as the welcome and the logs show it.
    pub id: String,
    /// The worker's own name for itself; may be empty.
    pub name: String,
    /// `(tenant, name)` of each tool it serves.
    pub tools: Vec<(String, String)>,
    /// Bounded: when the worker's stream falls behind, callers wait here, within their own timeout.
    jobs: mpsc::Sender<Job>,
    /// Calls waiting for their result, and whether the link is closed; one lock, so no call can be added to a
    /// link after it closed and wait forever.
    pending: Mutex<Pending>,
    /// Flips to true once, when the link closes; the stream's two halves watch it to end.
    closed: watch::Sender<bool>,
    next_invocation: AtomicU64,
}

#[derive(Default)]
struct Pending {
    closed: bool,
    calls: HashMap<String, Reply>,
}

impl WorkerLink {
    /// A link and the receiving end of its job queue, which the worker's stream drains.
    pub(super) fn new(
        id: String,
        name: String,
        tools: Vec<(String, String)>,
        queue: usize,
    ) -> (Self, mpsc::Receiver<Job>) {
        let (jobs, receiver) = mpsc::channel(queue);
        let link = Self {
            id,
            name,
            tools,
            jobs,
            pending: Mutex::default(),
            closed: watch::Sender::new(false),
            next_invocation: AtomicU64::new(1),
        };
        (link, receiver)
    }

    /// Resolves once the link is closed; at once when it already is.
    pub async fn closed(&self) {
        let mut closed = self.closed.subscribe();
        // The sender lives in `self`, so the wait cannot fail while we borrow it.
        let _ = closed.wait_for(|closed| *closed).await;
    }

    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Calls waiting for a result now.
    pub fn pending_count(&self) -> usize {
        self.lock().calls.len()
    }

    /// Hands a waiting call its result. A result no call waits for (the call gave up, or the id is wrong) is
    /// logged and dropped; returns whether a call took it.
    pub fn complete(&self, invocation_id: &str, result: Result<Output, BackendError>) -> bool {
        let waiting = self.lock().calls.remove(invocation_id);
        match waiting {
            // The caller may have given up between the lookup and now; then the result has nowhere to go.
            Some(reply) => reply.send(result).is_ok(),
            None => {
                tracing::warn!(worker_id = %self.id, worker = %self.name, invocation_id, "a result no call waits for (the call gave up, or the id is unknown); ignored");
                false
            }
        }
    }

    /// Closes the link and fails every waiting call: each learns it when its reply is dropped unsent. Returns how
    /// many calls were waiting, or `None` when the link was already closed.
    pub(super) fn close(&self) -> Option<usize> {
        let calls = {
            let mut pending = self.lock();
            if pending.closed {
                return None;
            }
            pending.closed = true;
            std::mem::take(&mut pending.calls)
        };
        let failed = calls.len();
        drop(calls);
        self.closed.send_replace(true);
        Some(failed)
    }

    /// Sends `job` to the worker and waits for its result; `gone()` is the error when the link closes first.
    pub(super) async fn run(
        &self,
        job: impl FnOnce(String) -> Job,
        gone: impl Fn() -> BackendError,
    ) -> Result<Output, BackendError> {
        let id = self.next_invocation.fetch_add(1, Ordering::Relaxed).to_string();
        let (reply, mut result) = oneshot::channel();
        {
            let mut pending = self.lock();
            if pending.closed {
                return Err(gone());
            }
            pending.calls.insert(id.clone(), reply);
        }
        // From here the entry is removed however this future ends, dropped by a timeout included.
        let _waiting = Waiting { link: self, id: &id };
        tokio::select! {
            // Closing drops the reply, which also ends a wait for room in the queue.
            biased;
            outcome = &mut result => return outcome.unwrap_or_else(|_| Err(gone())),
            sent = self.jobs.send(job(id.clone())) => if sent.is_err() {
                return Err(gone());
            },
        }
        result.await.unwrap_or_else(|_| Err(gone()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        // The map stays consistent under a panic: every change is one insert or remove.
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Removes a call's entry when its wait ends, so a caller that gives up leaves nothing behind.
struct Waiting<'a> {
    link: &'a WorkerLink,
    id: &'a str,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.link.lock().calls.remove(self.id);
    }
}
