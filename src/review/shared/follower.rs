//! What one gateway hears of every gateway's review changes: the task that follows `{p}:reviews`, the wake-ups
//! of this gateway's waiters, the events of its watchers, and the pending count the metrics read.

use super::{SharedQueue, parse_message};
use crate::review::{ReviewEvent, ReviewKey};
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{broadcast, watch};

const EVENT_CAPACITY: usize = 1024;
/// How long the follower waits before subscribing again after losing its subscription.
const RETRY_EVERY: Duration = Duration::from_millis(500);
/// How often the pending count is read again, besides after each event.
const COUNT_EVERY: Duration = Duration::from_secs(5);

/// The local side of the subscription, owned by the queue.
pub(super) struct Follower {
    /// One sender per key some caller waits on here, marked changed by each message about it.
    waiters: Mutex<HashMap<ReviewKey, watch::Sender<()>>>,
    /// Replaced (closing every receiver) when a lost subscription comes back, since events may have been missed.
    events: Mutex<broadcast::Sender<ReviewEvent>>,
    closing: watch::Sender<bool>,
    /// Whether the task is subscribed now.
    following: watch::Sender<bool>,
    pending: AtomicUsize,
}

impl Follower {
    pub(super) fn new() -> Self {
        Self {
            waiters: Mutex::default(),
            events: Mutex::new(broadcast::channel(EVENT_CAPACITY).0),
            closing: watch::Sender::new(false),
            following: watch::Sender::new(false),
            pending: AtomicUsize::new(0),
        }
    }

    pub(super) async fn ready(&self) {
        // The sender lives as long as `self`, so this ends only when subscribed.
        let _ = self.following.subscribe().wait_for(|following| *following).await;
    }

    pub(super) fn close(&self) {
        self.closing.send_replace(true);
    }

    pub(super) fn closing(&self) -> watch::Receiver<bool> {
        self.closing.subscribe()
    }

    pub(super) fn subscribe(&self) -> broadcast::Receiver<ReviewEvent> {
        self.events.lock().expect("events lock").subscribe()
    }

    pub(super) fn pending_count(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }

    fn wake(&self, key: &ReviewKey) {
        if let Some(sender) = self.waiters.lock().expect("waiters lock").get(key) {
            sender.send_replace(());
        }
    }

    /// Subscribed (again): every waiter claims again, and if this is a resubscription, watchers must resync.
    fn on_subscribed(&self, again: bool) {
        self.waiters.lock().expect("waiters lock").values().for_each(|sender| {
            sender.send_replace(());
        });
        if again {
            *self.events.lock().expect("events lock") = broadcast::channel(EVENT_CAPACITY).0;
        }
        self.following.send_replace(true);
    }
}

/// One caller's wait for changes of one key; forgets the key when its last waiter goes.
pub(super) struct KeyWatch<'a> {
    follower: &'a Follower,
    key: ReviewKey,
    changed: Option<watch::Receiver<()>>,
}

impl<'a> KeyWatch<'a> {
    pub(super) fn new(follower: &'a Follower, key: &ReviewKey) -> Self {
        let mut waiters = follower.waiters.lock().expect("waiters lock");
        let changed = waiters.entry(key.clone()).or_insert_with(|| watch::Sender::new(())).subscribe();
        Self { follower, key: key.clone(), changed: Some(changed) }
    }

    /// Ends at the next message about the key, or the next resubscription, since the last call.
    pub(super) async fn changed(&mut self) {
        let changed = self.changed.as_mut().expect("present until drop");
        if changed.changed().await.is_err() {
            // Cannot happen (the sender stays while a receiver does); never busy-loop if it did.
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for KeyWatch<'_> {
    fn drop(&mut self) {
        let mut waiters = self.follower.waiters.lock().expect("waiters lock");
        drop(self.changed.take());
        if waiters.get(&self.key).is_some_and(|sender| sender.receiver_count() == 0) {
            waiters.remove(&self.key);
        }
    }
}

/// Starts the task following `queue`'s channel, until the queue closes or is dropped.
pub(super) fn spawn(queue: &Arc<SharedQueue>) {
    let (weak, closing) = (Arc::downgrade(queue), queue.follower.closing());
    let (redis, channel) = (queue.redis.clone(), queue.channel());
    tokio::spawn(async move {
        let mut closing = closing;
        let mut again = false;
        loop {
            match subscribe(&redis, &channel).await {
                Ok(stream) => {
                    let Some(queue) = weak.upgrade() else { return };
                    queue.follower.on_subscribed(again);
                    queue.refresh_count().await;
                    drop(queue);
                    again = true;
                    if follow(&weak, stream, &mut closing).await {
                        return;
                    }
                    let Some(queue) = weak.upgrade() else { return };
                    queue.follower.following.send_replace(false);
                    tracing::warn!(channel = %channel, "lost the subscription to review changes; subscribing again");
                }
                Err(err) => tracing::debug!(error = %err, "subscribing to review changes failed"),
            }
            tokio::select! {
                () = tokio::time::sleep(RETRY_EVERY) => {}
                () = closed(&mut closing) => return,
            }
        }
    });
}

async fn subscribe(redis: &crate::cluster::Redis, channel: &str) -> Result<redis::aio::PubSubStream, String> {
    let mut pubsub = redis.pubsub().await.map_err(|e| e.to_string())?;
    match tokio::time::timeout(redis.settings().op_timeout.max(Duration::from_secs(1)), pubsub.subscribe(channel)).await
    {
        Ok(Ok(())) => Ok(pubsub.into_on_message()),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err("no answer to SUBSCRIBE".into()),
    }
}

/// Handles messages until the subscription ends (`false`) or the queue closes or goes (`true`).
async fn follow(
    weak: &Weak<SharedQueue>,
    mut stream: redis::aio::PubSubStream,
    closing: &mut watch::Receiver<bool>,
) -> bool {
    let mut recount = tokio::time::interval(COUNT_EVERY);
    loop {
        tokio::select! {
            message = stream.next() => {
                let Some(message) = message else { return false };
                let Some(queue) = weak.upgrade() else { return true };
                queue.on_message(&message).await;
            }
            _ = recount.tick() => {
                let Some(queue) = weak.upgrade() else { return true };
                queue.refresh_count().await;
            }
            () = closed(closing) => return true,
        }
    }
}

/// Ends when the queue closes, or is dropped.
async fn closed(closing: &mut watch::Receiver<bool>) {
    let _ = closing.wait_for(|closed| *closed).await;
}

impl SharedQueue {
    /// Wakes the record's waiters here, and sends reviewers' events on.
    async fn on_message(&self, message: &redis::Msg) {
        let parsed =
            std::str::from_utf8(message.get_payload_bytes()).map_err(|e| e.to_string()).and_then(parse_message);
        let (kind, record) = match parsed {
            Ok(parsed) => parsed,
            Err(reason) => {
                tracing::warn!(%reason, "unreadable review change on the channel");
                return;
            }
        };
        self.follower.wake(&record.key);
        if let Some(kind) = kind {
            // No subscriber is not an error: nobody is watching.
            let _ = self.follower.events.lock().expect("events lock").send(ReviewEvent { kind, record });
            self.refresh_count().await;
        }
    }

    async fn refresh_count(&self) {
        let key = self.pending_key();
        let count = self
            .redis
            .run(|mut conn| async move { redis::cmd("ZCARD").arg(key).query_async::<usize>(&mut conn).await });
        if let Ok(count) = count.await {
            self.follower.pending.store(count, Ordering::Relaxed);
        }
    }
}
