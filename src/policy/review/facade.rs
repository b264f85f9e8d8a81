//! `ReviewQueue`: one API over the two places a queue can live, this gateway (`LocalQueue`, redb) or the
//! cluster's Redis (`SharedQueue`), so the executor and the ToolReview service need not know which.

use super::queue::LocalQueue;
use super::record::{Decision, ReviewKey, ReviewRecord};
use super::store::ReviewStore;
use super::{ReviewError, ReviewEvent, ReviewSettings, Step, Submitted};
use crate::cluster::Redis;
use crate::cluster::review::SharedQueue;
use crate::pipeline::ToolMessage;
use crate::registry::StoreError;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

/// Calls waiting for a person, and the outcome of those decided, so each reviewed call runs exactly once.
pub struct ReviewQueue {
    backing: Backing,
}

enum Backing {
    Local(LocalQueue),
    /// Held here alone: the follower task holds a `Weak`, so dropping the queue stops it.
    Shared(Arc<SharedQueue>),
}

macro_rules! dispatch {
    ($self:ident, $q:ident => $e:expr) => {
        match &$self.backing {
            Backing::Local($q) => $e,
            Backing::Shared($q) => $e,
        }
    };
}

impl ReviewQueue {
    /// Loads every stored record (blocking; call it at startup, like `Registry::open`). A record found `Running`
    /// becomes `Lost`, and settled records older than `keep_done` are deleted.
    pub fn open(store: Arc<dyn ReviewStore>, settings: ReviewSettings) -> Result<Self, StoreError> {
        Ok(Self { backing: Backing::Local(LocalQueue::open(store, settings)?) })
    }

    /// A queue kept in the cluster's Redis, shared by every gateway on the same prefix. A call stays `Running`
    /// for at most `running_lease` before another gateway may declare it `Lost`. Starts the task that follows
    /// every gateway's changes (so it must be called within a Tokio runtime); it connects in the background,
    /// so the gateway starts while Redis is down.
    pub fn shared(redis: Redis, settings: ReviewSettings, running_lease: Duration) -> Self {
        Self { backing: Backing::Shared(SharedQueue::start(redis, settings, running_lease)) }
    }

    /// Waits until this queue hears every gateway's changes: at once when local, and when shared, once it is
    /// subscribed to Redis. Changes made before that are not announced to this gateway's watchers.
    pub async fn ready(&self) {
        if let Backing::Shared(q) = &self.backing {
            q.ready().await;
        }
    }

    /// Queues a call as `Pending`, whatever the state `record` carries. See `Submitted` and `ReviewError` for
    /// what a call id already in use gives.
    pub async fn submit(&self, record: ReviewRecord) -> Result<Submitted, ReviewError> {
        dispatch!(self, q => q.submit(record).await)
    }

    /// Takes the next step for a call; `None` if the key is unknown. Of all the callers that see a decided call,
    /// on every gateway, exactly one gets `Run`, and only once `Running` is durable.
    pub async fn claim(&self, key: &ReviewKey) -> Result<Option<Step>, ReviewError> {
        dispatch!(self, q => q.claim(key).await)
    }

    /// Claims until the step is not `Wait`, waiting for each change of the record in between, or until `until`
    /// or the queue closes, when it returns `Some(Step::Wait)`. `None` if the key is unknown.
    pub async fn wait(&self, key: &ReviewKey, until: Option<Instant>) -> Result<Option<Step>, ReviewError> {
        dispatch!(self, q => q.wait(key, until).await)
    }

    /// Starts the shutdown: every waiter answers now (its call stays pending, durably), and watchers end.
    pub fn close(&self) {
        dispatch!(self, q => q.close())
    }

    /// Becomes `true` when the queue closes.
    pub fn closing(&self) -> watch::Receiver<bool> {
        dispatch!(self, q => q.closing())
    }

    /// Records the answer of a call that ran (`Running`) or was lost (`Lost`), and wakes its waiters.
    pub async fn finish(&self, key: &ReviewKey, message: ToolMessage) -> Result<(), ReviewError> {
        dispatch!(self, q => q.finish(key, message).await)
    }

    /// Decides a `Pending` call, wakes its waiters and tells subscribers. Returns the updated record.
    pub async fn decide(&self, key: &ReviewKey, decision: Decision) -> Result<ReviewRecord, ReviewError> {
        dispatch!(self, q => q.decide(key, decision).await)
    }

    /// The calls waiting for a decision, oldest first: of one tenant, or of all with `None`. Empty, and logged,
    /// when Redis does not answer.
    pub async fn pending(&self, tenant: Option<&str>) -> Vec<ReviewRecord> {
        dispatch!(self, q => q.pending(tenant).await)
    }

    /// The pending calls now and every change after them, with none missed between the two. Local: none is
    /// repeated either. Shared: an event of a change the list already shows may follow it.
    pub async fn subscribe_with_pending(
        &self,
        tenant: Option<&str>,
    ) -> (Vec<ReviewRecord>, broadcast::Receiver<ReviewEvent>) {
        dispatch!(self, q => q.subscribe_with_pending(tenant).await)
    }

    /// How many calls wait for a decision, across tenants (and gateways), without waiting for anything.
    pub fn pending_count(&self) -> usize {
        dispatch!(self, q => q.pending_count())
    }

    /// The record under `key`; `None` when there is none, or (shared, logged) when Redis does not answer.
    pub async fn get(&self, key: &ReviewKey) -> Option<ReviewRecord> {
        dispatch!(self, q => q.get(key).await)
    }

    /// Every change from now on. A receiver that falls behind by more than 1024 events gets `Lagged`; when
    /// shared, the channel also closes when the subscription to Redis was lost, since events may have been
    /// missed: watch again to resync.
    pub fn subscribe(&self) -> broadcast::Receiver<ReviewEvent> {
        dispatch!(self, q => q.subscribe())
    }

    /// Deletes settled records older than `keep_done` by the wall clock. Returns how many went. Shared: Redis
    /// expires them itself, so this does nothing.
    pub async fn prune(&self) -> Result<usize, ReviewError> {
        match &self.backing {
            Backing::Local(q) => q.prune().await,
            Backing::Shared(_) => Ok(0),
        }
    }

    /// Deletes settled records decided (or created) more than `keep_done` before `now_ms` (local only).
    pub async fn prune_at(&self, now_ms: u64) -> Result<usize, ReviewError> {
        match &self.backing {
            Backing::Local(q) => q.prune_at(now_ms).await,
            Backing::Shared(_) => Ok(0),
        }
    }
}
