//! At most one run per call id: a call sent again with the same tenant and id, and the same tool, arguments and
//! context, within the window gets the first call's outcome (waiting for it while it runs) and never runs the
//! tool again; the same id with anything else is refused.
//!
//! The record lives on this gateway (`local`, bounded) or, in cluster mode, in Redis (`shared`), behind
//! [`Idempotency`], so the executor does not know which. Only final outcomes of calls that reached their tool are
//! kept: a call refused before its tool was reached (by a budget, the rate limit, injection or a full concurrency
//! cap), or whose outcome is retryable (a timeout, a 5xx), releases its id, so sending it again may run it; a
//! call still running is waited on, never run twice. Reviewed calls keep their own record (the review queue).
//!
//! A recorded call runs in a task of its own with the tool's timeout, not its caller's deadline: a caller that
//! times out and retries is the case this exists for, so the first run must go on and its outcome be kept.

mod local;
mod shared;

use super::{CallRequest, Executor};
use crate::cluster::Redis;
use crate::pipeline::{CallContext, CallError, ErrorKind, Prepared, ToolCall, ToolMessage};
use crate::registry::CompiledTool;
use futures::FutureExt as _;
use local::LocalStore;
use opentelemetry::context::FutureExt as _;
use sha2::{Digest, Sha256};
use shared::{Registration, SharedStore};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// `[idempotency]`: how long a call's outcome answers its id, and how many ids and outcome bytes this gateway keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdempotencySettings {
    /// Zero turns the record off.
    pub window: Duration,
    /// The local record's bound (cluster mode keeps the record in Redis, where the window bounds it).
    pub max_entries: usize,
    /// The local record's bound on the outcomes it keeps, approximately; past it the oldest are stubbed.
    pub max_bytes: usize,
}

impl Default for IdempotencySettings {
    fn default() -> Self {
        Self { window: Duration::from_secs(600), max_entries: 10_000, max_bytes: 64 << 20 }
    }
}

/// Calls by id, on this gateway or in the cluster's Redis.
pub struct Idempotency {
    backing: Backing,
}

enum Backing {
    Off,
    Local(LocalStore),
    Shared(Arc<SharedStore>),
}

/// A call's id within its tenant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallKey {
    pub tenant: String,
    pub call_id: String,
}

/// SHA-256 of what makes two calls the same call: the tool, the model's text and the caller's context.
pub type Fingerprint = [u8; 32];

/// What a claim on a call id found.
pub enum Claimed {
    /// Nobody had it: this caller runs the call and must `finish` or `release` the claim.
    Run(Claim),
    /// The same call is running: wait for a change, then claim again.
    Running(Waiter),
    Done(Box<ToolMessage>),
    /// The id is another call's.
    Conflict,
    /// The gateway running it stopped (its lease ran out): whether the tool ran is unknown.
    Lost,
    /// The local record is full of running calls: this one runs unrecorded.
    Full,
    /// Redis did not answer: the call runs unrecorded (failing open, like budgets).
    Unreachable(String),
}

/// The right to settle a call id, held by the one caller running it.
pub struct Claim {
    pub key: CallKey,
    /// Which claim of the id this is, so that a stale claim cannot settle a later one.
    pub token: String,
}

/// A wait for the next change of a running call.
pub struct Waiter {
    changed: watch::Receiver<()>,
    /// Cluster mode claims again at least this often, in case a message was missed.
    heal: Option<Duration>,
    _registration: Option<Registration>,
}

impl Waiter {
    fn local(changed: watch::Receiver<()>) -> Self {
        Self { changed, heal: None, _registration: None }
    }

    pub(crate) fn shared(changed: watch::Receiver<()>, heal: Duration, registration: Registration) -> Self {
        Self { changed, heal: Some(heal), _registration: Some(registration) }
    }

    /// Ends at the next change (a closed channel is one: the running call settled), or the next heal.
    pub async fn changed(&mut self) {
        let changed = self.changed.changed().map(|_| ());
        match self.heal {
            Some(every) => drop(tokio::time::timeout(every, changed).await),
            None => changed.await,
        }
    }
}

impl Idempotency {
    pub fn off() -> Self {
        Self { backing: Backing::Off }
    }

    pub fn local(settings: IdempotencySettings) -> Self {
        match settings.window {
            Duration::ZERO => Self::off(),
            window => {
                Self { backing: Backing::Local(LocalStore::new(window, settings.max_entries, settings.max_bytes)) }
            }
        }
    }

    /// The record in the cluster's Redis; starts the task that hears other gateways finish calls.
    pub fn shared(redis: Redis, settings: IdempotencySettings) -> Self {
        match settings.window {
            Duration::ZERO => Self::off(),
            window => Self { backing: Backing::Shared(SharedStore::start(redis, window)) },
        }
    }

    pub fn enabled(&self) -> bool {
        !matches!(self.backing, Backing::Off)
    }

    /// Claims `key` for the call `fingerprint` names; a running claim not settled within `lease` is lost.
    pub async fn claim(&self, key: &CallKey, fingerprint: &Fingerprint, lease: Duration) -> Claimed {
        match &self.backing {
            Backing::Off => Claimed::Full,
            Backing::Local(store) => store.claim(key, fingerprint),
            Backing::Shared(store) => store.claim(key, fingerprint, lease).await,
        }
    }

    pub async fn finish(&self, claim: &Claim, message: &ToolMessage) {
        match &self.backing {
            Backing::Off => {}
            Backing::Local(store) => store.finish(claim, message),
            Backing::Shared(store) => store.finish(claim, message).await,
        }
    }

    pub async fn release(&self, claim: &Claim) {
        match &self.backing {
            Backing::Off => {}
            Backing::Local(store) => store.release(claim),
            Backing::Shared(store) => store.release(claim).await,
        }
    }
}

#[cfg(test)]
impl Claimed {
    fn word(&self) -> &'static str {
        match self {
            Claimed::Run(_) => "run",
            Claimed::Running(_) => "running",
            Claimed::Done(_) => "done",
            Claimed::Conflict => "conflict",
            Claimed::Lost => "lost",
            Claimed::Full => "full",
            Claimed::Unreachable(_) => "unreachable",
        }
    }
}

/// Whether an outcome is kept for the call's id: only when the tool may have run and the outcome is final (a
/// success, or a fatal or model-fixable failure). A call that never reached its tool, or whose outcome says to try
/// again (a timeout, a 5xx, a backend unavailable: `retryable`), may be sent again and run: keeping that answer
/// would make `retryable` a lie for the window.
fn kept(message: &ToolMessage) -> bool {
    let retryable = message.error.as_ref().is_some_and(|e| e.retryable);
    message.attempts > 0 && !retryable
}

/// The most a recorded call's latest start is set before its caller's deadline.
const START_MARGIN: Duration = Duration::from_millis(20);

const LOST: &str = "the gateway running this call stopped; whether it completed is unknown, so it is not run again";

impl Executor {
    /// `admit`, at most once per call id: also answers whether the message is an earlier call's outcome.
    pub(super) async fn admit_once(self: &Arc<Self>, req: CallRequest<'_>, prepared: Prepared) -> (ToolMessage, bool) {
        if !self.once.enabled() || req.call.id.is_empty() {
            return (self.admit(req, prepared).await, false);
        }
        Box::pin(self.once(req, prepared)).await
    }

    async fn once(self: &Arc<Self>, req: CallRequest<'_>, prepared: Prepared) -> (ToolMessage, bool) {
        let CallRequest { call, ctx, deadline, .. } = req;
        let key = CallKey { tenant: ctx.tenant.clone(), call_id: call.id.clone() };
        let fingerprint = fingerprint(call, ctx, &prepared.tool);
        let lease = self.lease(&prepared.tool);
        let name = prepared.tool.spec.name.clone();
        loop {
            let claimed = self.once.claim(&key, &fingerprint, lease).await;
            return match claimed {
                Claimed::Run(claim) => (self.run_claimed(req, prepared, claim).await, false),
                Claimed::Done(message) => (ToolMessage { tool_call_id: call.id.clone(), ..*message }, true),
                Claimed::Running(mut waiter) => match deadline {
                    None => {
                        waiter.changed().await;
                        continue;
                    }
                    Some(until) if tokio::time::timeout_at(until, waiter.changed()).await.is_ok() => continue,
                    Some(_) => (self.still_running(call, &name), true),
                },
                Claimed::Conflict => (self.conflict(call, &name), false),
                Claimed::Lost => (self.error(call, &name, CallError::OutcomeUnknown(LOST.into()), Vec::new()), false),
                Claimed::Full => {
                    tracing::debug!(call_id = %call.id, "every recorded call is running: this one runs unrecorded");
                    (self.admit(req, prepared).await, false)
                }
                Claimed::Unreachable(reason) => {
                    tracing::debug!(call_id = %call.id, %reason, "Redis down: the call runs unrecorded");
                    self.telemetry.fail_open(&name, "idempotency");
                    (self.admit(req, prepared).await, false)
                }
            };
        }
    }

    /// Runs a claimed call in a task of its own, which settles the claim however the call ends; the caller
    /// waits for it until its deadline.
    async fn run_claimed(self: &Arc<Self>, req: CallRequest<'_>, prepared: Prepared, claim: Claim) -> ToolMessage {
        let CallRequest { call, ctx, deadline, mode, door, .. } = req;
        let name = prepared.tool.spec.name.clone();
        let shown = name.clone();
        let (this, owned_call, owned_ctx) = (Arc::clone(self), call.clone(), ctx.clone());
        // The tool may run on past the caller's deadline, but starts before it, a little early so that a call
        // refused for want of a concurrency slot is answered as such rather than as still running.
        let start_by =
            deadline.map(|until| until - (until.saturating_duration_since(Instant::now()) / 10).min(START_MARGIN));
        let task = async move {
            let req = CallRequest { call: &owned_call, ctx: &owned_ctx, deadline: None, start_by, mode, door };
            let run = AssertUnwindSafe(this.admit(req, prepared));
            let (ran, message) = match run.catch_unwind().await {
                // A call that never reached its tool did not happen: it may be sent again.
                Ok(message) => (kept(&message), message),
                // It may have: at most once means not again.
                Err(_) => {
                    (true, this.error(&owned_call, &name, CallError::Internal("the call panicked".into()), Vec::new()))
                }
            };
            if ran {
                this.once.finish(&claim, &message).await;
            } else {
                this.once.release(&claim).await;
            }
            message
        };
        let handle = tokio::spawn(task.with_current_context());
        let joined = match deadline {
            None => handle.await,
            Some(until) => match tokio::time::timeout_at(until, handle).await {
                Ok(joined) => joined,
                Err(_) => return self.still_running(call, &shown),
            },
        };
        joined.unwrap_or_else(|err| {
            self.error(call, &shown, CallError::Internal(format!("the call's task failed: {err}")), Vec::new())
        })
    }

    /// A running claim older than this was abandoned: the longest the call can take (a wait for a concurrency
    /// slot, then every attempt) and a margin.
    fn lease(&self, tool: &CompiledTool) -> Duration {
        let limits = &tool.spec.limits;
        let timeout = match limits.timeout_ms {
            0 => self.settings.default_timeout,
            ms => Duration::from_millis(ms),
        };
        let attempts = if limits.idempotent { limits.retries + 1 } else { 1 };
        timeout.saturating_mul(attempts.saturating_add(1)) + Duration::from_secs(5)
    }

    /// The caller's deadline came while the call still runs: a retry with the same id gets its outcome.
    fn still_running(&self, call: &ToolCall, name: &str) -> ToolMessage {
        let mut message = self.error(call, name, CallError::Timeout { after_ms: 0 }, Vec::new());
        let text = format!(
            "The call to {name} is still running. Send the same call again, with the same call id {:?}, to get its \
             result; it will not run twice.",
            call.id
        );
        if let Some(error) = message.error.as_mut() {
            error.message = format!("the caller's deadline passed while call id {:?} is still running", call.id);
        }
        message.content = text;
        message
    }

    /// A call id already used for a different call: refused, so that neither call's outcome is mistaken for the
    /// other's. The model did not choose the id, so it is not told to fix anything.
    fn conflict(&self, call: &ToolCall, name: &str) -> ToolMessage {
        let mut message = self.error(call, name, CallError::Internal(String::new()), Vec::new());
        let what = format!(
            "call id {:?} was already used for a different call (another tool, arguments or context); this call \
             was not run",
            call.id
        );
        if let Some(error) = message.error.as_mut() {
            error.kind = ErrorKind::InvalidArguments;
            error.model_fixable = false;
            error.retryable = false;
            error.message = what.clone();
        }
        message.content = format!("Error: {what}. Send it with a new call id.");
        message
    }
}

/// Each part length-prefixed, so that no two different calls hash the same bytes.
fn fingerprint(call: &ToolCall, ctx: &CallContext, tool: &CompiledTool) -> Fingerprint {
    let mut hash = Sha256::new();
    let mut part = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    for text in [&tool.spec.tenant, &tool.spec.name, &call.arguments, &ctx.user_id, &ctx.session_id] {
        part(text.as_bytes());
    }
    for (name, value) in &ctx.values {
        part(name.as_bytes());
        part(value.as_bytes());
    }
    hash.finalize().into()
}
