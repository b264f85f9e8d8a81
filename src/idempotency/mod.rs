//! The call-id store: calls by id within their tenant, claimed by the one caller that runs them, waited on by
//! the others, and finished with their outcome, which answers the id for the window.
//!
//! The record lives on this gateway (`local`, bounded) or, in cluster mode, in Redis (`shared`), behind
//! [`Idempotency`], so its user does not know which. What is kept, and when a call runs, is the executor's
//! (`executor/once.rs`); reviewed calls keep their own record (the review queue).

mod kept;
mod local;
mod shared;

use crate::cluster::Redis;
use crate::pipeline::ToolMessage;
use futures::FutureExt as _;
use local::LocalStore;
use shared::{Registration, SharedStore};
use siphasher::sip128::{Hasher128, SipHasher13};
use std::hash::Hasher as _;
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
    key: FingerprintKey,
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

/// A call's id within its tenant, borrowed from the call: the local record keeps only a hash of it, so a claim
/// copies nothing.
#[derive(Debug, Clone, Copy)]
pub struct CallId<'a> {
    pub tenant: &'a str,
    pub call_id: &'a str,
}

impl CallId<'_> {
    fn owned(self) -> CallKey {
        CallKey { tenant: self.tenant.to_owned(), call_id: self.call_id.to_owned() }
    }
}

/// A keyed hash (SipHash-1-3, 128 bits) of what makes two calls the same call: the tool, the model's text and the
/// caller's context. The record is this gateway's memory or its cluster's Redis, so no one outside needs to check
/// a fingerprint; the secret key keeps anyone from making a call of theirs hash like another's.
pub type Fingerprint = [u8; 16];

/// The secret fingerprints are keyed with: one per gateway, or in cluster mode one shared through Redis so that
/// every gateway fingerprints a call alike.
#[derive(Clone, Copy)]
pub struct FingerprintKey([u8; 16]);

impl FingerprintKey {
    pub fn new(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    /// A fresh key from the OS's random source.
    pub fn random() -> Self {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).expect("the OS random source is available");
        Self(bytes)
    }

    pub fn hasher(&self) -> Fingerprinter {
        Fingerprinter(SipHasher13::new_with_key(&self.0))
    }
}

/// A fingerprint being made: each part length-prefixed, so that no two different calls hash the same bytes.
pub struct Fingerprinter(SipHasher13);

impl Fingerprinter {
    pub fn part(&mut self, bytes: &[u8]) {
        self.0.write(&(bytes.len() as u64).to_le_bytes());
        self.0.write(bytes);
    }

    pub fn finish(&self) -> Fingerprint {
        self.0.finish128().as_bytes()
    }
}

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
    key: ClaimKey,
    /// Which claim of the id this is, so that a stale claim cannot settle a later one.
    token: u64,
}

/// The id a claim settles, as its record names it.
enum ClaimKey {
    /// The local record's keyed hash of the tenant and call id (`local::IdHash`).
    Local(u128),
    /// Redis's record keeps the id itself.
    Shared(Arc<CallKey>),
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
        Self { backing: Backing::Off, key: FingerprintKey([0; 16]) }
    }

    pub fn local(settings: IdempotencySettings, key: FingerprintKey) -> Self {
        match settings.window {
            Duration::ZERO => Self::off(),
            window => {
                let store = LocalStore::new(window, settings.max_entries, settings.max_bytes, key);
                Self { backing: Backing::Local(store), key }
            }
        }
    }

    /// The record in the cluster's Redis; starts the task that hears other gateways finish calls. `key` must be
    /// every gateway's of the cluster.
    /// `alive` is held by each outcome still being written after its caller's answer.
    pub fn shared(
        redis: Redis,
        settings: IdempotencySettings,
        key: FingerprintKey,
        alive: Option<tokio::sync::mpsc::Sender<()>>,
    ) -> Self {
        match settings.window {
            Duration::ZERO => Self::off(),
            window => Self { backing: Backing::Shared(SharedStore::start(redis, window, alive)), key },
        }
    }

    /// A fingerprint to make, with this record's key.
    pub fn fingerprinter(&self) -> Fingerprinter {
        self.key.hasher()
    }

    pub fn enabled(&self) -> bool {
        !matches!(self.backing, Backing::Off)
    }

    // Redis's futures are boxed: large, they would make every caller's future as large, and be copied with it on
    // the local record's path too.

    /// Claims `key` for the call `fingerprint` names; a running claim not settled within `lease` is lost. A
    /// `durable` claim in Redis waits for a replica (`Redis::replicated`), so that a failover cannot lose it.
    pub async fn claim(&self, key: CallId<'_>, fingerprint: &Fingerprint, lease: Duration, durable: bool) -> Claimed {
        match &self.backing {
            Backing::Off => Claimed::Full,
            Backing::Local(store) => store.claim(key, fingerprint),
            Backing::Shared(store) => Box::pin(store.claim(key, fingerprint, lease, durable)).await,
        }
    }

    pub async fn finish(&self, claim: &Claim, message: &ToolMessage) {
        match &self.backing {
            Backing::Off => {}
            Backing::Local(store) => store.finish(claim, message),
            Backing::Shared(store) => store.finish(claim, message),
        }
    }

    pub async fn release(&self, claim: &Claim) {
        match &self.backing {
            Backing::Off => {}
            Backing::Local(store) => store.release(claim),
            Backing::Shared(store) => store.release(claim),
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
