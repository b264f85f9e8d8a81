//! Human review of tool calls: a call whose tool requires review waits here until a person approves, edits or
//! rejects it, and its outcome is kept so the tool runs exactly once, across retries and restarts.
//!
//! A record moves `Pending → Decided → Running → Done`; a record found `Running` at startup (or, in a cluster,
//! past its lease) becomes `Lost`, since whether its tool completed is unknown, and it never runs again. Every
//! change is written to the store (or Redis) before anyone can see it. This module owns no gRPC and runs no tool:
//! the executor submits, claims and finishes. [`Queue`] is the one API; `local` keeps the queue on this gateway
//! (redb), `shared` in the cluster's Redis, and [`ReviewQueue`] is the handle that holds either.

mod api;
mod local;
mod record;
mod shared;
mod store;
mod verdict;

pub use api::{EventKind, KeyChanges, Queue, ReviewEvent, Step, Submitted};
pub use record::{Decision, ReviewKey, ReviewRecord, ReviewRule, ReviewState, reviewer_name, unix_ms};
pub use store::{RedbReviewStore, ReviewStore};
pub use verdict::{ReviewVerdict, VerdictError, decide};

use crate::cluster::{ClusterError, Redis};
use crate::store::StoreError;
use local::LocalQueue;
use shared::SharedQueue;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("no call under review has this id")]
    NotFound,
    #[error("this call was already decided")]
    AlreadyDecided,
    #[error("a different call is already under review with this call id")]
    Conflict,
    #[error("the review queue is full: {max} calls already wait for a decision")]
    Full { max: usize },
    #[error("this call is not running, so it cannot be finished")]
    NotRunning,
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The cluster's Redis did not answer, or holds what this gateway cannot read: retry later.
    #[error("the shared review queue is unavailable: {0}")]
    Unavailable(String),
}

impl From<ClusterError> for ReviewError {
    fn from(err: ClusterError) -> Self {
        ReviewError::Unavailable(err.to_string())
    }
}

/// Calls that may wait for a decision at once.
pub const DEFAULT_MAX_PENDING: usize = 10_000;
/// A decided call's outcome answers its id for a day.
pub const DEFAULT_KEEP_DECIDED: Duration = Duration::from_secs(24 * 60 * 60);
/// A waiting call with no deadline of its own waits ten minutes for a decision.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(600);

/// `[review]`: how long a call waits for a decision, and the bounds of the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReviewSettings {
    /// How long a waiting call with no deadline of its own waits for a decision.
    pub max_wait: Duration,
    /// Calls that may wait for a decision at once; one more is refused with `ReviewError::Full`.
    pub max_pending: usize,
    /// How long a finished (`Done` or `Lost`) record is kept, so a retried call id gets its outcome back instead
    /// of running again.
    pub keep_decided: Duration,
}

impl Default for ReviewSettings {
    fn default() -> Self {
        Self { max_wait: DEFAULT_MAX_WAIT, max_pending: DEFAULT_MAX_PENDING, keep_decided: DEFAULT_KEEP_DECIDED }
    }
}

#[cfg(test)]
mod tests;

/// The queue a gateway holds: on this gateway or in the cluster's Redis. It derefs to `Queue`.
pub struct ReviewQueue {
    /// Held here alone: a shared queue's follower task holds a `Weak`, so dropping the queue stops it.
    queue: Arc<dyn Queue>,
}

impl ReviewQueue {
    /// Loads every stored record (blocking; call it at startup, like `Registry::local`). A record found `Running`
    /// becomes `Lost`, and settled records older than `keep_decided` are deleted.
    pub fn local(store: Arc<dyn ReviewStore>, settings: ReviewSettings) -> Result<Self, StoreError> {
        Ok(Self { queue: Arc::new(LocalQueue::open(store, settings)?) })
    }

    /// A queue kept in the cluster's Redis, shared by every gateway on the same prefix. A call stays `Running`
    /// for at most `running_lease` before another gateway may declare it `Lost`. Starts the task that follows
    /// every gateway's changes (so it must be called within a Tokio runtime); it connects in the background,
    /// so the gateway starts while Redis is down.
    pub fn shared(redis: Redis, settings: ReviewSettings, running_lease: Duration) -> Self {
        Self { queue: SharedQueue::start(redis, settings, running_lease) }
    }
}

impl Deref for ReviewQueue {
    type Target = dyn Queue;

    fn deref(&self) -> &Self::Target {
        &*self.queue
    }
}
