//! The review queue in Redis, shared by every gateway: any gateway may decide a call, and the one waiting on it
//! hears of it through pub/sub.
//!
//! Redis is the source of truth. A record is the hash `{p}:review:tenant\0call_id` (fields `state`, `call` = the
//! submitted record as JSON, `fp` = its same-call fingerprint, `decision`, `dms` = decided_ms, `by` = the reviewer, `done` = the
//! answer, `lease` = when a `Running` record is deemed abandoned); `{p}:reviews_pending` lists pending calls by
//! creation time. Every change is one Lua script (see `scripts`) that ends with a PUBLISH on `{p}:reviews`, which
//! the follower (see `follower`) turns into wake-ups and events here.

mod follower;
mod scripts;

use super::api::{EventKind, KeyChanges, Queue, ReviewEvent, Step, Submitted};
use super::record::{Decision, ReviewKey, ReviewRecord, ReviewState, reviewer_name, unix_ms};
use super::{ReviewError, ReviewSettings};
use crate::cluster::Redis;
use crate::pipeline::ToolMessage;
use async_trait::async_trait;
use follower::{Follower, KeyWatch};
use scripts::{CLAIM_SCRIPT, DECIDE_SCRIPT, FIELDS, FINISH_SCRIPT, LIST_SCRIPT, SUBMIT_SCRIPT};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, watch};

/// A waiter claims again at least this often, in case a message was missed.
const HEAL_EVERY: Duration = Duration::from_secs(2);

/// The review queue of a cluster. Built by `ReviewQueue::shared`.
pub struct SharedQueue {
    redis: Redis,
    settings: ReviewSettings,
    running_lease: Duration,
    follower: Follower,
}

impl SharedQueue {
    /// The queue, with its follower task started (it holds only a `Weak` to the queue).
    pub fn start(redis: Redis, settings: ReviewSettings, running_lease: Duration) -> Arc<Self> {
        let queue = Arc::new(Self { redis, settings, running_lease, follower: Follower::new() });
        follower::spawn(&queue);
        queue
    }
}

#[async_trait]
impl Queue for SharedQueue {
    async fn ready(&self) {
        self.follower.ready().await;
    }

    async fn submit(&self, mut record: ReviewRecord) -> Result<Submitted, ReviewError> {
        record.state = ReviewState::Pending;
        record.decided_ms = None;
        let fingerprint =
            serde_json::to_string(&(&record.session_id, &record.tool, &record.tool_tenant, &record.arguments))
                .expect("strings always serialize");
        let json = serde_json::to_string(&record).expect("a ReviewRecord always serializes");
        let (key, member) = (self.record_key(&record.key), member(&record.key));
        let max = self.settings.max_pending;
        let mut invocation = SUBMIT_SCRIPT.key(&key);
        invocation.key(self.pending_key()).arg(self.common_args()).arg(member).arg(fingerprint).arg(json);
        invocation.arg(record.created_ms).arg(max);
        let reply: Vec<String> =
            self.redis.run(|mut conn| async move { invocation.invoke_async(&mut conn).await }).await?;
        match word(&reply) {
            "new" => {
                self.redis.replicated(&key).await?;
                Ok(Submitted::New)
            }
            "existing" => {
                // A retry of a submission whose wait for the replicas failed: acknowledged once they have it.
                self.redis.replicated(&key).await?;
                Ok(Submitted::Existing(self.parse(&reply[1..])?.state))
            }
            "conflict" => Err(ReviewError::Conflict),
            "full" => Err(ReviewError::Full { max }),
            other => Err(self.unexpected("submit", other)),
        }
    }

    async fn claim(&self, key: &ReviewKey) -> Result<Option<Step>, ReviewError> {
        let record_key = self.record_key(key);
        let mut invocation = CLAIM_SCRIPT.key(&record_key);
        invocation.key(self.pending_key()).arg(self.common_args());
        let reply: Vec<String> =
            self.redis.run(|mut conn| async move { invocation.invoke_async(&mut conn).await }).await?;
        if reply.is_empty() {
            return Ok(None);
        }
        let record = self.parse(&reply[1..])?;
        let step = match (word(&reply), record.state.clone()) {
            ("run", ReviewState::Running(_)) => Step::Run(record),
            ("seen", ReviewState::Pending | ReviewState::Running(_) | ReviewState::Decided(_)) => Step::Wait,
            ("seen", ReviewState::Done(message)) => Step::Done(message),
            ("seen", ReviewState::Lost) => Step::Lost(record),
            (other, _) => return Err(self.unexpected("claim", other)),
        };
        Ok(Some(step))
    }

    async fn watch<'a>(&'a self, key: &ReviewKey) -> Option<Box<dyn KeyChanges + 'a>> {
        Some(Box::new(SharedChanges(KeyWatch::new(&self.follower, key))))
    }

    fn close(&self) {
        self.follower.close();
    }

    fn closing(&self) -> watch::Receiver<bool> {
        self.follower.closing()
    }

    async fn finish(&self, key: &ReviewKey, message: ToolMessage) -> Result<(), ReviewError> {
        let done = serde_json::to_string(&message).expect("a ToolMessage always serializes");
        let record_key = self.record_key(key);
        let mut invocation = FINISH_SCRIPT.key(&record_key);
        invocation.key(self.pending_key()).arg(self.common_args()).arg(done);
        let reply: Vec<String> =
            self.redis.run(|mut conn| async move { invocation.invoke_async(&mut conn).await }).await?;
        match word(&reply) {
            "done" => Ok(()),
            "not_found" => Err(ReviewError::NotFound),
            "not_running" => Err(ReviewError::NotRunning),
            other => Err(self.unexpected("finish", other)),
        }
    }

    async fn decide(&self, key: &ReviewKey, decision: Decision, by: Option<&str>) -> Result<ReviewRecord, ReviewError> {
        let decision = serde_json::to_string(&decision).expect("a Decision always serializes");
        let by = by.and_then(reviewer_name).unwrap_or_default();
        let record_key = self.record_key(key);
        let mut invocation = DECIDE_SCRIPT.key(&record_key);
        invocation.key(self.pending_key()).arg(self.common_args()).arg(member(key)).arg(decision).arg(unix_ms());
        invocation.arg(by);
        let reply: Vec<String> =
            self.redis.run(|mut conn| async move { invocation.invoke_async(&mut conn).await }).await?;
        match word(&reply) {
            "decided" => {
                self.redis.replicated(&record_key).await?;
                self.parse(&reply[1..])
            }
            "not_found" => Err(ReviewError::NotFound),
            "already" => Err(ReviewError::AlreadyDecided),
            other => Err(self.unexpected("decide", other)),
        }
    }

    async fn pending(&self, tenant: Option<&str>) -> Vec<ReviewRecord> {
        match self.list(tenant).await {
            Ok(pending) => pending,
            Err(err) => {
                tracing::warn!(error = %err, "listing pending reviews failed");
                Vec::new()
            }
        }
    }

    /// Subscribes first, then lists: an event may repeat what the list shows, but none is missed.
    async fn subscribe_with_pending(
        &self,
        tenant: Option<&str>,
    ) -> (Vec<ReviewRecord>, broadcast::Receiver<ReviewEvent>) {
        let events = self.follower.subscribe();
        (self.pending(tenant).await, events)
    }

    fn pending_count(&self) -> usize {
        self.follower.pending_count()
    }

    async fn get(&self, key: &ReviewKey) -> Option<ReviewRecord> {
        let record_key = self.record_key(key);
        let read = self.redis.run(|mut conn| async move {
            redis::cmd("HMGET").arg(record_key).arg(&FIELDS).query_async::<Vec<Option<String>>>(&mut conn).await
        });
        let fields = match read.await {
            Ok(fields) if fields[0].is_some() => fields.into_iter().map(Option::unwrap_or_default).collect::<Vec<_>>(),
            Ok(_) => return None,
            Err(err) => {
                tracing::warn!(error = %err, call_id = %key.call_id, tenant = %key.tenant, "reading a review failed");
                return None;
            }
        };
        self.parse(&fields).inspect_err(|err| tracing::warn!(error = %err, "unreadable review")).ok()
    }

    fn subscribe(&self) -> broadcast::Receiver<ReviewEvent> {
        self.follower.subscribe()
    }
}

impl SharedQueue {
    async fn list(&self, tenant: Option<&str>) -> Result<Vec<ReviewRecord>, ReviewError> {
        let mut invocation = LIST_SCRIPT.key(self.pending_key());
        invocation.arg(self.redis.key("review", &[""]));
        let reply: Vec<String> =
            self.redis.run(|mut conn| async move { invocation.invoke_async(&mut conn).await }).await?;
        let mut pending = Vec::with_capacity(reply.len() / FIELDS.len());
        for fields in reply.chunks(FIELDS.len()) {
            let record = self.parse(fields)?;
            if record.state == ReviewState::Pending && tenant.is_none_or(|t| record.key.tenant == t) {
                pending.push(record);
            }
        }
        Ok(pending)
    }

    /// A record from its fields in `FIELDS` order.
    fn parse(&self, fields: &[String]) -> Result<ReviewRecord, ReviewError> {
        record_from(fields).map_err(|reason| self.redis.corrupt("review record", reason).into())
    }

    fn unexpected(&self, script: &str, word: &str) -> ReviewError {
        self.redis.corrupt(format!("reply to the {script} script"), format!("{word:?}")).into()
    }

    fn record_key(&self, key: &ReviewKey) -> String {
        self.redis.key("review", &[&key.tenant, &key.call_id])
    }

    fn pending_key(&self) -> String {
        self.redis.key("reviews_pending", &[])
    }

    fn channel(&self) -> String {
        self.redis.key("reviews", &[])
    }

    /// `ARGV[1..=3]` of every state-changing script: the channel, keep_decided and the running lease, in ms.
    fn common_args(&self) -> (String, u64, u64) {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        (self.channel(), ms(self.settings.keep_decided), ms(self.running_lease))
    }
}

/// The pending set's member for a key: the key's parts as in its hash's name.
fn member(key: &ReviewKey) -> String {
    format!("{}\0{}", key.tenant, key.call_id)
}

fn word(reply: &[String]) -> &str {
    reply.first().map_or("", String::as_str)
}

/// A record from its fields in `FIELDS` order: `call` holds the submitted record, the others its state now.
fn record_from(fields: &[String]) -> Result<ReviewRecord, String> {
    let [state, dms, decision, done, by, call] = fields else {
        return Err(format!("{} fields instead of {}", fields.len(), FIELDS.len()));
    };
    let mut record: ReviewRecord = serde_json::from_str(call).map_err(|e| format!("call: {e}"))?;
    let decision = || serde_json::from_str::<Decision>(decision).map_err(|e| format!("decision: {e}"));
    record.state = match state.as_str() {
        "pending" => ReviewState::Pending,
        "decided" => ReviewState::Decided(decision()?),
        "running" => ReviewState::Running(decision()?),
        "lost" => ReviewState::Lost,
        "done" => ReviewState::Done(serde_json::from_str(done).map_err(|e| format!("done: {e}"))?),
        other => return Err(format!("unknown state {other:?}")),
    };
    record.decided_ms = if dms.is_empty() { None } else { Some(dms.parse().map_err(|e| format!("dms: {e}"))?) };
    record.decided_by = (!by.is_empty()).then(|| by.clone());
    Ok(record)
}

/// A message from the channel: the change's kind, then the record's fields. Only `pending` and `decided` are
/// events reviewers see; every kind wakes the record's waiters.
fn parse_message(payload: &str) -> Result<(Option<EventKind>, ReviewRecord), String> {
    let mut parts = payload.splitn(FIELDS.len() + 1, '\n');
    let kind = match parts.next().unwrap_or_default() {
        "pending" => Some(EventKind::Pending),
        "decided" => Some(EventKind::Decided),
        _ => None,
    };
    let fields: Vec<String> = parts.map(str::to_owned).collect();
    Ok((kind, record_from(&fields)?))
}

/// A waiter's view of one record's changes: each message about it, and a claim at least every `HEAL_EVERY`, in
/// case a message was missed.
struct SharedChanges<'a>(KeyWatch<'a>);

#[async_trait]
impl KeyChanges for SharedChanges<'_> {
    async fn changed(&mut self) {
        tokio::select! {
            () = self.0.changed() => {}
            () = tokio::time::sleep(HEAL_EVERY) => {}
        }
    }
}
