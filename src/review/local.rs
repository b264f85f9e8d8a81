//! The local review queue: each reviewed call's state machine, held in memory and written through to the store.
//!
//! One lock guards every record. A change is written to the store on a blocking thread that holds the lock (an
//! owned guard moved into the task) and only then applied in memory, so nothing is visible before it is durable,
//! a record changes in one place at a time, and a caller dropped mid-write cannot leave memory and store apart:
//! the blocking task runs to its end either way.

use super::api::{EventKind, KeyChanges, Queue, ReviewEvent, Step, Submitted};
use super::record::{Decision, ReviewKey, ReviewRecord, ReviewState, reviewer_name, unix_ms};
use super::store::ReviewStore;
use super::{ReviewError, ReviewSettings};
use crate::pipeline::ToolMessage;
use crate::store::StoreError;
use async_trait::async_trait;
use std::collections::HashMap;
use std::collections::hash_map::Entry as Slot;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::{Mutex, OwnedMutexGuard, broadcast, watch};

const EVENT_CAPACITY: usize = 1024;

struct Entry {
    record: ReviewRecord,
    /// Marked changed on every change of `record`. A waiter subscribes before it looks, so it misses no change.
    changed: watch::Sender<()>,
}

impl Entry {
    fn new(record: ReviewRecord) -> Self {
        Self { record, changed: watch::Sender::new(()) }
    }
}

type Records = HashMap<ReviewKey, Entry>;

/// One gateway's calls waiting for a person, and the outcome of those decided, so each reviewed call runs exactly
/// once. `ReviewQueue` uses it when there is no cluster.
pub(super) struct LocalQueue {
    store: Arc<dyn ReviewStore>,
    settings: ReviewSettings,
    /// Held across each store write, see the module doc.
    records: Arc<Mutex<Records>>,
    events: broadcast::Sender<ReviewEvent>,
    /// Set when the gateway shuts down: waiters answer at once, watchers end.
    closing: watch::Sender<bool>,
    /// How many records are `Pending`, kept by `commit` for readers that cannot wait for the lock.
    pending: Arc<AtomicUsize>,
}

impl LocalQueue {
    /// Loads every stored record (blocking; call it at startup, like `Registry::local`). A record found `Running`
    /// becomes `Lost`, and settled records older than `keep_decided` are deleted.
    pub fn open(store: Arc<dyn ReviewStore>, settings: ReviewSettings) -> Result<Self, StoreError> {
        let now = unix_ms();
        let (mut records, mut expired) = (Records::new(), Vec::new());
        for mut record in store.load()? {
            if matches!(record.state, ReviewState::Running(_)) {
                tracing::warn!(
                    tenant = %record.key.tenant, call_id = %record.key.call_id, tool = %record.tool,
                    "reviewed call was running when the gateway stopped: it is lost and will not run again"
                );
                record.state = ReviewState::Lost;
                store.put(&record)?;
            }
            if record.expired(now, settings.keep_decided) {
                expired.push(record.key);
            } else {
                records.insert(record.key.clone(), Entry::new(record));
            }
        }
        if !expired.is_empty() {
            store.delete_all(&expired)?;
        }
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        let closing = watch::Sender::new(false);
        let pending = records.values().filter(|e| e.record.state == ReviewState::Pending).count();
        let pending = Arc::new(AtomicUsize::new(pending));
        Ok(Self { store, settings, records: Arc::new(Mutex::new(records)), events, closing, pending })
    }
}

#[async_trait]
impl Queue for LocalQueue {
    async fn submit(&self, mut record: ReviewRecord) -> Result<Submitted, ReviewError> {
        let records = self.lock().await;
        if let Some(Entry { record: current, .. }) = records.get(&record.key) {
            if current.same_call(&record) {
                return Ok(Submitted::Existing(current.state.clone()));
            }
            if !current.is_settled() {
                return Err(ReviewError::Conflict);
            }
        }
        let max = self.settings.max_pending;
        if records.values().filter(|e| e.record.state == ReviewState::Pending).count() >= max {
            return Err(ReviewError::Full { max });
        }
        record.state = ReviewState::Pending;
        record.decided_ms = None;
        self.commit(records, record, Some(EventKind::Pending)).await?;
        Ok(Submitted::New)
    }

    /// Takes the next step for a call; `None` if the key is unknown. Of all the callers that see a decided call,
    /// exactly one gets `Run`, and only once `Running` is durable.
    async fn claim(&self, key: &ReviewKey) -> Result<Option<Step>, ReviewError> {
        let records = self.lock().await;
        let Some(Entry { record, .. }) = records.get(key) else { return Ok(None) };
        let step = match &record.state {
            ReviewState::Pending | ReviewState::Running(_) => Step::Wait,
            ReviewState::Done(message) => Step::Done(message.clone()),
            ReviewState::Lost => Step::Lost(record.clone()),
            ReviewState::Decided(decision) => {
                let running = ReviewRecord { state: ReviewState::Running(decision.clone()), ..record.clone() };
                return Ok(Some(Step::Run(self.commit(records, running, None).await?)));
            }
        };
        Ok(Some(step))
    }

    async fn watch<'a>(&'a self, key: &ReviewKey) -> Option<Box<dyn KeyChanges + 'a>> {
        let changed = self.lock().await.get(key)?.changed.subscribe();
        Some(Box::new(LocalChanges { records: Arc::clone(&self.records), key: key.clone(), changed }))
    }

    fn close(&self) {
        self.closing.send_replace(true);
    }

    fn closing(&self) -> watch::Receiver<bool> {
        self.closing.subscribe()
    }

    async fn finish(&self, key: &ReviewKey, message: ToolMessage) -> Result<(), ReviewError> {
        let records = self.lock().await;
        let current = &records.get(key).ok_or(ReviewError::NotFound)?.record;
        if !matches!(current.state, ReviewState::Running(_) | ReviewState::Lost) {
            return Err(ReviewError::NotRunning);
        }
        let done = ReviewRecord { state: ReviewState::Done(message), ..current.clone() };
        self.commit(records, done, None).await?;
        Ok(())
    }

    async fn decide(&self, key: &ReviewKey, decision: Decision, by: Option<&str>) -> Result<ReviewRecord, ReviewError> {
        let records = self.lock().await;
        let current = &records.get(key).ok_or(ReviewError::NotFound)?.record;
        if current.state != ReviewState::Pending {
            return Err(ReviewError::AlreadyDecided);
        }
        let decided = ReviewRecord {
            state: ReviewState::Decided(decision),
            decided_ms: Some(unix_ms()),
            decided_by: by.and_then(reviewer_name),
            ..current.clone()
        };
        self.commit(records, decided, Some(EventKind::Decided)).await
    }

    /// The calls waiting for a decision, oldest first: of one tenant, or of all with `None`.
    async fn pending(&self, tenant: Option<&str>) -> Vec<ReviewRecord> {
        pending_in(&*self.lock().await, tenant)
    }

    /// The pending calls now and every change after them, with none missed or repeated between the two (events
    /// are sent under the lock this takes).
    async fn subscribe_with_pending(
        &self,
        tenant: Option<&str>,
    ) -> (Vec<ReviewRecord>, broadcast::Receiver<ReviewEvent>) {
        let records = self.lock().await;
        (pending_in(&records, tenant), self.events.subscribe())
    }

    /// How many calls wait for a decision, across tenants, without waiting for the lock.
    fn pending_count(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }

    async fn get(&self, key: &ReviewKey) -> Option<ReviewRecord> {
        self.lock().await.get(key).map(|e| e.record.clone())
    }

    /// Every change from now on. A receiver that falls behind by more than 1024 events gets `Lagged`.
    fn subscribe(&self) -> broadcast::Receiver<ReviewEvent> {
        self.events.subscribe()
    }

    /// Deletes settled records decided (or created) more than `keep_decided` before `now_ms`.
    async fn prune_at(&self, now_ms: u64) -> Result<usize, ReviewError> {
        let mut records = self.lock().await;
        let keep = self.settings.keep_decided;
        let expired: Vec<ReviewKey> =
            records.values().filter(|e| e.record.expired(now_ms, keep)).map(|e| e.record.key.clone()).collect();
        if expired.is_empty() {
            return Ok(0);
        }
        let store = Arc::clone(&self.store);
        let removed = tokio::task::spawn_blocking(move || {
            store.delete_all(&expired)?;
            for key in &expired {
                // Dropping the entry drops its watch sender, which wakes its waiters to find the key gone.
                records.remove(key);
            }
            Ok::<_, StoreError>(expired.len())
        });
        Ok(removed.await.expect("review store task panicked")?)
    }
}

impl LocalQueue {
    async fn lock(&self) -> OwnedMutexGuard<Records> {
        Arc::clone(&self.records).lock_owned().await
    }

    /// Writes `record`, then makes it visible, wakes its waiters and sends `event`, all under `records`.
    async fn commit(
        &self,
        mut records: OwnedMutexGuard<Records>,
        record: ReviewRecord,
        event: Option<EventKind>,
    ) -> Result<ReviewRecord, ReviewError> {
        let store = Arc::clone(&self.store);
        let events = self.events.clone();
        let pending = Arc::clone(&self.pending);
        let write = tokio::task::spawn_blocking(move || {
            store.put(&record)?;
            let was_pending = records.get(&record.key).is_some_and(|e| e.record.state == ReviewState::Pending);
            match (was_pending, record.state == ReviewState::Pending) {
                (false, true) => pending.fetch_add(1, Ordering::Relaxed),
                (true, false) => pending.fetch_sub(1, Ordering::Relaxed),
                _ => 0,
            };
            match records.entry(record.key.clone()) {
                Slot::Occupied(mut slot) => {
                    slot.get_mut().record = record.clone();
                    slot.get().changed.send_replace(());
                }
                Slot::Vacant(slot) => {
                    slot.insert(Entry::new(record.clone()));
                }
            }
            if let Some(kind) = event {
                // No subscriber is not an error: nobody is watching.
                let _ = events.send(ReviewEvent { kind, record: record.clone() });
            }
            Ok::<_, StoreError>(record)
        });
        Ok(write.await.expect("review store task panicked")?)
    }
}

fn pending_in(records: &Records, tenant: Option<&str>) -> Vec<ReviewRecord> {
    let mut pending: Vec<ReviewRecord> = records
        .values()
        .map(|e| &e.record)
        .filter(|r| r.state == ReviewState::Pending && tenant.is_none_or(|t| r.key.tenant == t))
        .cloned()
        .collect();
    pending.sort_by(|a, b| (a.created_ms, &a.key).cmp(&(b.created_ms, &b.key)));
    pending
}

/// A waiter's view of one record's changes.
struct LocalChanges {
    records: Arc<Mutex<Records>>,
    key: ReviewKey,
    changed: watch::Receiver<()>,
}

#[async_trait]
impl KeyChanges for LocalChanges {
    async fn changed(&mut self) {
        if self.changed.changed().await.is_err() {
            // The record was removed (pruned): the claim that follows finds the key unknown, unless a new record
            // came under it meanwhile, whose changes are followed from now on.
            if let Some(entry) = self.records.lock().await.get(&self.key) {
                self.changed = entry.changed.subscribe();
            }
        }
    }
}
