//! The review queue's one API, `Queue`, which the local queue (redb) and the shared one (Redis) implement, with
//! the `wait` loop written once.

use super::ReviewError;
use super::record::{Decision, ReviewKey, ReviewRecord, ReviewState};
use crate::pipeline::ToolMessage;
use async_trait::async_trait;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

/// What `submit` did.
#[derive(Debug, Clone, PartialEq)]
#[expect(clippy::large_enum_variant, reason = "returned once per submit: a box would buy nothing")]
pub enum Submitted {
    /// The call was queued as `Pending`.
    New,
    /// The same call was already here (a retry); it is left as it was, in this state.
    Existing(ReviewState),
}

/// What the executor does next for a call, as `claim` and `wait` tell it.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Not decided yet, or another executor runs it now.
    Wait,
    /// This caller, and no other, runs it now; the record's state is `Running(decision)`. Call `finish` after.
    Run(ReviewRecord),
    /// It already ran: answer with this message.
    Done(ToolMessage),
    /// The gateway stopped while it ran; it must not run again. `finish` records the answer given instead.
    Lost(ReviewRecord),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A call waits for a decision.
    Pending,
    /// A call was decided and no longer waits.
    Decided,
}

/// A change reviewers see: sent once the change is durable, in the order the changes happened.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewEvent {
    pub kind: EventKind,
    pub record: ReviewRecord,
}

/// Calls waiting for a person, and the outcome of those decided, so each reviewed call runs exactly once.
#[async_trait]
pub trait Queue: Send + Sync {
    /// Waits until this queue hears every gateway's changes: at once when local, and when shared, once it is
    /// subscribed to Redis. Changes made before that are not announced to this gateway's watchers.
    async fn ready(&self) {}

    /// Queues a call as `Pending`, whatever the state `record` carries. See `Submitted` and `ReviewError` for
    /// what a call id already in use gives.
    async fn submit(&self, record: ReviewRecord) -> Result<Submitted, ReviewError>;

    /// Takes the next step for a call; `None` if the key is unknown. Of all the callers that see a decided call,
    /// on every gateway, exactly one gets `Run`, and only once `Running` is durable.
    async fn claim(&self, key: &ReviewKey) -> Result<Option<Step>, ReviewError>;

    /// The changes of the record under `key` from now on; `None` when the queue knows the key is unknown.
    async fn watch<'a>(&'a self, key: &ReviewKey) -> Option<Box<dyn KeyChanges + 'a>>;

    /// Claims until the step is not `Wait`, waiting for each change of the record in between, or until `until`
    /// or the queue closes, when it returns `Some(Step::Wait)`. `None` if the key is unknown (or its record was
    /// pruned meanwhile). Only the waiting is cut short: a claim, once begun, completes.
    async fn wait(&self, key: &ReviewKey, until: Option<Instant>) -> Result<Option<Step>, ReviewError> {
        let mut closing = self.closing();
        // Subscribed before the first claim, so a change between a claim and the wait is not missed.
        let Some(mut changes) = self.watch(key).await else { return Ok(None) };
        loop {
            match self.claim(key).await? {
                Some(Step::Wait) => {}
                step => return Ok(step),
            }
            let change = async {
                tokio::select! {
                    () = changes.changed() => true,
                    _ = closing.wait_for(|closed| *closed) => false,
                }
            };
            let woken = match until {
                Some(until) => tokio::time::timeout_at(until, change).await.unwrap_or(false),
                None => change.await,
            };
            if !woken {
                return Ok(Some(Step::Wait));
            }
        }
    }

    /// Starts the shutdown: every waiter answers now (its call stays pending, durably), and watchers end.
    fn close(&self);

    /// Becomes `true` when the queue closes.
    fn closing(&self) -> watch::Receiver<bool>;

    /// Records the answer of a call that ran (`Running`) or was lost (`Lost`), and wakes its waiters.
    async fn finish(&self, key: &ReviewKey, message: ToolMessage) -> Result<(), ReviewError>;

    /// Decides a `Pending` call, wakes its waiters and tells subscribers. `by` names the reviewer (`None` over the
    /// API; see `reviewer_name`). Returns the updated record.
    async fn decide(&self, key: &ReviewKey, decision: Decision, by: Option<&str>) -> Result<ReviewRecord, ReviewError>;

    /// The calls waiting for a decision, oldest first: of one tenant, or of all with `None`. Empty, and logged,
    /// when Redis does not answer.
    async fn pending(&self, tenant: Option<&str>) -> Vec<ReviewRecord>;

    /// The pending calls now and every change after them, with none missed between the two. Local: none is
    /// repeated either. Shared: an event of a change the list already shows may follow it.
    async fn subscribe_with_pending(
        &self,
        tenant: Option<&str>,
    ) -> (Vec<ReviewRecord>, broadcast::Receiver<ReviewEvent>);

    /// How many calls wait for a decision, across tenants (and gateways), without waiting for anything.
    fn pending_count(&self) -> usize;

    /// The record under `key`; `None` when there is none, or (shared, logged) when Redis does not answer.
    async fn get(&self, key: &ReviewKey) -> Option<ReviewRecord>;

    /// Every change from now on. A receiver that falls behind by more than 1024 events gets `Lagged`; when
    /// shared, the channel also closes when the subscription to Redis was lost, since events may have been
    /// missed: watch again to resync.
    fn subscribe(&self) -> broadcast::Receiver<ReviewEvent>;

    /// Deletes settled records decided (or created) more than `keep_decided` before `now_ms`. Returns how many went.
    /// Shared: Redis expires them itself, so this does nothing.
    async fn prune_at(&self, _now_ms: u64) -> Result<usize, ReviewError> {
        Ok(0)
    }

    /// Deletes settled records older than `keep_decided` by the wall clock.
    async fn prune(&self) -> Result<usize, ReviewError> {
        self.prune_at(super::unix_ms()).await
    }
}

/// The changes of one record, as `Queue::watch` gives them.
#[async_trait]
pub trait KeyChanges: Send {
    /// Ends at the record's next change since the last call (or when it is worth claiming again).
    async fn changed(&mut self);
}
