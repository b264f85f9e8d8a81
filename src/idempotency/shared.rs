//! The record of calls by id in the cluster's Redis, so that a call retried through another gateway finds the
//! first one: claimed, waited on, and answered from one place.
//!
//! A call is the hash `{p}:call:tenant\0call_id`: `fp` (its fingerprint, hex), `owner` (the claim's token) and
//! `lease` (Redis time, in ms, after which a claim still running was abandoned by a gateway that stopped) while it
//! runs, then `done` (the answer as JSON). It expires `lease + window` after the claim, and `window` after the
//! finish. Finishing or releasing publishes `tenant\0call_id` on `{p}:calls`, which wakes that call's waiters on
//! every gateway; a waiter also claims again every second, in case a message was lost. Each step is one script,
//! so one round trip, and only the claim is on the caller's path: the outcome (or the release) is written after
//! the answer, by a task of its own that tries again while Redis fails over. A retry that comes first finds the
//! call still running and waits for that write; one that never lands leaves the claim to lapse into `lost`, so the
//! call is never run twice.

use super::{CallId, CallKey, Claim, ClaimKey, Claimed, Fingerprint, Waiter};
use crate::cluster::{ClusterError, Redis};
use crate::pipeline::ToolMessage;
use futures::StreamExt;
use redis::Script;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;
use tokio::sync::watch;

/// A waiter claims again at least this often.
const HEAL_EVERY: Duration = Duration::from_secs(1);
/// How long the follower waits before subscribing again after losing its subscription.
const RETRY_EVERY: Duration = Duration::from_millis(500);
/// How often, and how long apart at first (doubling), an outcome's write is tried before it is given up.
const WRITE_TRIES: u32 = 6;
const WRITE_BACKOFF: Duration = Duration::from_millis(100);

/// `ARGV[1]` fingerprint, `[2]` owner, `[3]` lease ms, `[4]` window ms. Replies `claimed`, `running`, `done` and
/// the answer, `conflict`, or `lost`.
static CLAIM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local r = redis.call('HMGET', KEYS[1], 'fp', 'lease', 'done')
if not r[1] then
  redis.call('HSET', KEYS[1], 'fp', ARGV[1], 'owner', ARGV[2], 'lease', now + tonumber(ARGV[3]))
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) + tonumber(ARGV[4]))
  return {'claimed'}
end
if r[1] ~= ARGV[1] then return {'conflict'} end
if r[3] then return {'done', r[3]} end
if tonumber(r[2]) < now then return {'lost'} end
return {'running'}
",
    )
});

/// `ARGV[1]` owner, `[2]` answer JSON, `[3]` window ms, `[4]` channel, `[5]` member. Settles the owner's claim.
static FINISH: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'done', ARGV[2])
redis.call('HDEL', KEYS[1], 'owner', 'lease')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
",
    )
});

/// `ARGV[1]` owner, `[2]` channel, `[3]` member. Forgets the owner's claim.
static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
",
    )
});

/// Calls by id in Redis. Built by `Idempotency::shared`.
pub struct SharedStore {
    redis: Redis,
    window: Duration,
    /// One sender per call some caller here waits on, marked changed by each message about it.
    waiters: Mutex<HashMap<String, watch::Sender<()>>>,
    /// Dropped with the store, which ends the follower.
    _alive: watch::Sender<()>,
    /// This gateway's part of every claim token, and a counter for the rest.
    instance: u64,
    claims: AtomicU64,
    /// Held while the store is, and so by each outcome still being written: a gateway stopping waits for them.
    _gateway_alive: Option<tokio::sync::mpsc::Sender<()>>,
}

impl SharedStore {
    /// The store, with the task following `{p}:calls` started (it holds only a `Weak`).
    pub fn start(redis: Redis, window: Duration, gateway_alive: Option<tokio::sync::mpsc::Sender<()>>) -> Arc<Self> {
        let (alive, gone) = watch::channel(());
        let instance = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
        let store = Arc::new(Self {
            redis,
            window,
            waiters: Mutex::default(),
            _alive: alive,
            instance,
            claims: AtomicU64::new(0),
            _gateway_alive: gateway_alive,
        });
        spawn_follower(&store, gone);
        store
    }

    pub async fn claim(
        self: &Arc<Self>,
        key: CallId<'_>,
        fingerprint: &Fingerprint,
        lease: Duration,
        durable: bool,
    ) -> Claimed {
        if self.redis.recently_failed() {
            return Claimed::Unreachable("Redis failed moments ago".into());
        }
        let key = Arc::new(key.owned());
        let member = member(&key);
        // Registered before the claim is read, so that a finish in between still wakes this caller.
        let (registration, changed) = Registration::new(self, &member);
        let token = self.claims.fetch_add(1, Ordering::Relaxed);
        let hash_key = self.redis.key("call", &[&key.tenant, &key.call_id]);
        let mut claim = redis::cmd("EVALSHA");
        claim.arg(CLAIM.get_hash()).arg(1).arg(&hash_key);
        claim.arg(hex(fingerprint)).arg(self.owner(token)).arg(millis(lease)).arg(millis(self.window));
        let (reply, on_replica) = match self.claimed(&hash_key, claim, durable).await {
            Ok(reply) => reply,
            Err(err) => return Claimed::Unreachable(err.to_string()),
        };
        if !on_replica && reply.first().is_some_and(|word| word == "claimed") {
            // A failover now would lose the claim, and the call could run again: it is not run, nor kept.
            self.release(&Claim { key: ClaimKey::Shared(key), token });
            return Claimed::Unreachable("the claim is not on a replica yet (a failover is under way)".into());
        }
        match reply.first().map(String::as_str) {
            Some("claimed") => Claimed::Run(Claim { key: ClaimKey::Shared(key), token }),
            Some("running") => Claimed::Running(Waiter::shared(changed, HEAL_EVERY, registration)),
            Some("done") => match reply.get(1).map(|json| serde_json::from_str::<ToolMessage>(json)) {
                Some(Ok(message)) => Claimed::Done(Box::new(message)),
                other => {
                    let reason = other.map_or("missing".into(), |e| e.err().map(|e| e.to_string()).unwrap_or_default());
                    tracing::error!(call_id = %key.call_id, %reason, "an unreadable call outcome in Redis");
                    Claimed::Lost
                }
            },
            Some("conflict") => Claimed::Conflict,
            Some("lost") => Claimed::Lost,
            other => Claimed::Unreachable(format!("unexpected reply {other:?} to a claim")),
        }
    }

    /// Keeps the call's outcome for its id, and wakes its waiters everywhere: written after the caller's answer.
    pub fn finish(self: &Arc<Self>, claim: &Claim, message: &ToolMessage) {
        let ClaimKey::Shared(key) = &claim.key else { return };
        let json = serde_json::to_string(message).expect("a ToolMessage always serializes");
        let mut invocation = FINISH.key(self.redis.key("call", &[&key.tenant, &key.call_id]));
        invocation.arg(self.owner(claim.token)).arg(json).arg(millis(self.window)).arg(self.channel()).arg(member(key));
        // Retries of the call wait until its lease runs out, then answer that it was lost.
        self.write(invocation, key, "a call's outcome was not recorded in Redis");
    }

    /// Forgets the claim of a call that did not run: written after the caller's answer.
    pub fn release(self: &Arc<Self>, claim: &Claim) {
        let ClaimKey::Shared(key) = &claim.key else { return };
        let mut invocation = RELEASE.key(self.redis.key("call", &[&key.tenant, &key.call_id]));
        invocation.arg(self.owner(claim.token)).arg(self.channel()).arg(member(key));
        self.write(invocation, key, "a call that did not run is still claimed in Redis");
    }

    /// Runs a settling script in a task of its own, tried again (100 ms, doubling) while Redis does not answer.
    fn write(self: &Arc<Self>, invocation: redis::ScriptInvocation<'static>, key: &CallKey, failed: &'static str) {
        let (store, call_id) = (Arc::clone(self), key.call_id.clone());
        tokio::spawn(async move {
            let (invocation, mut backoff) = (&invocation, WRITE_BACKOFF);
            for attempt in 1..=WRITE_TRIES {
                let outcome =
                    store.redis.run(|mut conn| async move { invocation.invoke_async::<i64>(&mut conn).await }).await;
                match outcome {
                    Ok(_) => return,
                    Err(err) if attempt == WRITE_TRIES => tracing::warn!(%call_id, error = %err, "{failed}"),
                    Err(_) => tokio::time::sleep(backoff).await,
                }
                backoff *= 2;
            }
        });
    }

    /// Runs the claim, on every replica too for a `durable` one (`Redis::durably`): the reply, and whether the
    /// claim is on every replica (or was not asked to be).
    async fn claimed(&self, key: &str, claim: redis::Cmd, durable: bool) -> Result<(Vec<String>, bool), ClusterError> {
        let mut pipe = redis::pipe();
        pipe.add_command(claim);
        let (mut replies, on_replica) = self.redis.durably(key, pipe, Some(&CLAIM), durable).await?;
        let first = replies.drain(..).next().unwrap_or(redis::Value::Nil);
        let reply = redis::from_redis_value(first).map_err(|e| self.redis.corrupt("claim reply", e))?;
        Ok((reply, on_replica))
    }

    /// A claim's owner in Redis: this gateway's part and the claim's number, unique across the cluster.
    fn owner(&self, token: u64) -> String {
        format!("{:016x}-{token}", self.instance)
    }

    fn channel(&self) -> String {
        self.redis.key("calls", &[])
    }

    fn wake(&self, member: &str) {
        if let Some(sender) = self.waiters.lock().unwrap_or_else(|p| p.into_inner()).get(member) {
            sender.send_replace(());
        }
    }

    /// Subscribed (again): messages may have been missed, so every waiter claims again.
    fn wake_all(&self) {
        self.waiters.lock().unwrap_or_else(|p| p.into_inner()).values().for_each(|sender| {
            sender.send_replace(());
        });
    }
}

/// One caller's interest in one call's changes; forgets the call when its last waiter goes.
pub struct Registration {
    store: Weak<SharedStore>,
    member: String,
}

impl Registration {
    fn new(store: &Arc<SharedStore>, member: &str) -> (Self, watch::Receiver<()>) {
        let mut waiters = store.waiters.lock().unwrap_or_else(|p| p.into_inner());
        let changed = waiters.entry(member.to_owned()).or_insert_with(|| watch::Sender::new(())).subscribe();
        (Self { store: Arc::downgrade(store), member: member.to_owned() }, changed)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let Some(store) = self.store.upgrade() else { return };
        let mut waiters = store.waiters.lock().unwrap_or_else(|p| p.into_inner());
        // The `Waiter` drops its receiver before this; a claim that ran or answered at once never had one kept.
        if waiters.get(&self.member).is_some_and(|sender| sender.receiver_count() == 0) {
            waiters.remove(&self.member);
        }
    }
}

fn spawn_follower(store: &Arc<SharedStore>, mut gone: watch::Receiver<()>) {
    let (weak, redis, channel) = (Arc::downgrade(store), store.redis.clone(), store.channel());
    tokio::spawn(async move {
        loop {
            if let Ok(mut messages) = subscribe(&redis, &channel).await {
                let Some(store) = weak.upgrade() else { return };
                store.wake_all();
                drop(store);
                loop {
                    tokio::select! {
                        message = messages.next() => {
                            let Some(message) = message else { break };
                            let Some(store) = weak.upgrade() else { return };
                            store.wake(&String::from_utf8_lossy(message.get_payload_bytes()));
                        }
                        _ = gone.changed() => return,
                    }
                }
                tracing::warn!(channel = %channel, "lost the subscription to finished calls; subscribing again");
            }
            tokio::select! {
                () = tokio::time::sleep(RETRY_EVERY) => {}
                _ = gone.changed() => return,
            }
        }
    });
}

async fn subscribe(redis: &Redis, channel: &str) -> Result<redis::aio::PubSubStream, String> {
    let mut pubsub = redis.pubsub().await.map_err(|e| e.to_string())?;
    match tokio::time::timeout(redis.settings().op_timeout.max(Duration::from_secs(1)), pubsub.subscribe(channel)).await
    {
        Ok(Ok(())) => Ok(pubsub.into_on_message()),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err("no answer to SUBSCRIBE".into()),
    }
}

/// The call's key parts as in its hash's name, which is also what the channel carries.
fn member(key: &CallKey) -> String {
    format!("{}\0{}", key.tenant, key.call_id)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}
