//! The call-id store: calls by id within their tenant, claimed by the one caller that runs them, waited on by
//! the others, and finished with their outcome, which answers the id for the window.
//!
//! The record lives on this gateway (`local`, bounded) or, in cluster mode, in Redis (`shared`), behind
//! [`Idempotency`], so its user does not know which. What is kept, and when a call runs, is the executor's
//! (`executor/once.rs`); reviewed calls keep their own record (the review queue).

mod local;
mod shared;

use crate::cluster::Redis;
use crate::pipeline::ToolMessage;
use futures::FutureExt as _;
use local::LocalStore;
use shared::{Registration, SharedStore};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// A call's outcome answers its id for ten minutes.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(600);
/// Call ids this gateway keeps at most.
pub const DEFAULT_MAX_ENTRIES: usize = 10_000;
/// Outcome bytes this gateway keeps at most, approximately.
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

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
        Self { window: DEFAULT_WINDOW, max_entries: DEFAULT_MAX_ENTRIES, max_bytes: DEFAULT_MAX_BYTES }
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
