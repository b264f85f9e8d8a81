//! The record of calls by id kept on this gateway: a map bounded in entries and in bytes, each finished call
//! kept for the window. Past the entry bound the oldest finished call is forgotten; past the byte bound the
//! oldest finished outcomes are replaced by a small stub, so the record that a call ran is never lost to size.
//!
//! A call id is kept as a keyed hash of it, not its text: the record holds thousands of ids, and each one kept as
//! text was allocated with its call and touched again, long out of cache, when it was forgotten.

use super::kept::{Kept, Spares};
use super::{CallId, Claim, ClaimKey, Claimed, Fingerprint, FingerprintKey, Waiter};
use crate::pipeline::{ErrorKind, ToolError, ToolMessage, ToolStatus};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Charged to every finished entry on top of its text: the entry, its key and the message's fixed fields.
const ENTRY_OVERHEAD: usize = 256;

/// A call id within its tenant as the record knows it: SipHash-1-3 of both, 128 bits, keyed with the gateway's
/// secret (the fingerprints' key). Two ids share one with odds of 2^-128 a pair, and no one without the key can
/// make them.
type IdHash = u128;

/// The map's hasher: an `IdHash` is already a keyed hash that no caller can steer, so its low 64 bits are taken as
/// they are rather than hashed again.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_u128(&mut self, hash: u128) {
        self.0 = hash as u64;
    }

    /// Not reached: the map's only key is an `IdHash`, hashed by `write_u128`.
    fn write(&mut self, bytes: &[u8]) {
        self.0 = bytes.iter().fold(self.0, |h, b| h.rotate_left(8) ^ u64::from(*b));
    }
}

pub(super) struct LocalStore {
    window: Duration,
    max_entries: usize,
    max_bytes: usize,
    ids: FingerprintKey,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<IdHash, Entry, BuildHasherDefault<Prehashed>>,
    /// Finished calls in the order they finished, which (the window being fixed) is the order they expire in.
    /// An item whose entry has since gone or changed (another generation) is skipped.
    finished: VecDeque<(IdHash, u64, Instant)>,
    /// Items of `finished` before this index are stubs or gone: where the next stub is looked for.
    stubbed_up_to: usize,
    /// What the finished entries' outcomes take, approximately (see `entry_bytes`).
    bytes: usize,
    /// Forgotten outcomes' buffers, for the next outcomes kept.
    spares: Spares,
    next_generation: u64,
}

struct Entry {
    fingerprint: Fingerprint,
    generation: u64,
    state: State,
}

enum State {
    /// Made for the first caller that waits (most calls have none), and dropped when the call settles, which wakes
    /// every waiter.
    Running(Option<watch::Sender<()>>),
    Done(Outcome),
}

struct Outcome {
    kept: Kept,
    /// Charged to `Inner::bytes` while the entry is kept.
    bytes: usize,
    stub: bool,
}

impl Outcome {
    /// The stub kept in place of `of`.
    fn stub(of: &ToolMessage, spares: &mut Spares) -> Self {
        let message = stub(of);
        Self { bytes: entry_bytes(&message), kept: Kept::of(&message, spares), stub: true }
    }
}

impl LocalStore {
    pub(super) fn new(window: Duration, max_entries: usize, max_bytes: usize, ids: FingerprintKey) -> Self {
        let (max_entries, max_bytes) = (max_entries.max(1), max_bytes.max(1));
        Self { window, max_entries, max_bytes, ids, inner: Mutex::default() }
    }

    fn id_of(&self, key: CallId<'_>) -> IdHash {
        let mut hash = self.ids.hasher();
        hash.part(key.tenant.as_bytes());
        hash.part(key.call_id.as_bytes());
        u128::from_le_bytes(hash.finish())
    }

    pub(super) fn claim(&self, key: CallId<'_>, fingerprint: &Fingerprint) -> Claimed {
        let id = self.id_of(key);
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.sweep(Instant::now());
        if let Some(entry) = inner.entries.get_mut(&id) {
            if entry.fingerprint != *fingerprint {
                return Claimed::Conflict;
            }
            return match &mut entry.state {
                State::Running(waiters) => {
                    Claimed::Running(Waiter::local(waiters.get_or_insert_with(|| watch::Sender::new(())).subscribe()))
                }
                State::Done(outcome) => Claimed::Done(Box::new(outcome.kept.message())),
            };
        }
        if inner.entries.len() >= self.max_entries && !inner.evict_oldest() {
            return Claimed::Full;
        }
        inner.next_generation += 1;
        let generation = inner.next_generation;
        inner.entries.insert(id, Entry { fingerprint: *fingerprint, generation, state: State::Running(None) });
        Claimed::Run(Claim { key: ClaimKey::Local(id), token: generation })
    }

    /// Keeps the call's answer for the window (a stub in its place when the bytes bound needs it); its waiters
    /// wake and read it.
    pub(super) fn finish(&self, claim: &Claim, message: &ToolMessage) {
        let ClaimKey::Local(id) = claim.key else { return };
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let inner = &mut *guard;
        let Some(entry) = inner.entries.get_mut(&id).filter(|e| e.generation == claim.token) else {
            return;
        };
        let bytes = entry_bytes(message);
        let outcome = match bytes > self.max_bytes {
            // Alone past the bound: kept as a stub at once rather than pushing every other outcome out.
            true => Outcome::stub(message, &mut inner.spares),
            false => {
                let kept = Kept::of(message, &mut inner.spares);
                Outcome { bytes: bytes + kept.slack(), kept, stub: false }
            }
        };
        let bytes = outcome.bytes;
        entry.state = State::Done(outcome);
        let generation = entry.generation;
        inner.bytes += bytes;
        inner.finished.push_back((id, generation, Instant::now() + self.window));
        inner.shrink(self.max_bytes);
    }

    /// Forgets a claimed call that never reached its tool; its waiters wake and claim it themselves.
    pub(super) fn release(&self, claim: &Claim) {
        let ClaimKey::Local(id) = claim.key else { return };
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if inner.entries.get(&id).is_some_and(|e| e.generation == claim.token) {
            inner.remove(id);
        }
    }

    #[cfg(test)]
    fn len(&self) -> (usize, usize) {
        let inner = self.inner.lock().unwrap();
        (inner.entries.len(), inner.finished.len())
    }

    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.inner.lock().unwrap().bytes
    }
}

impl Inner {
    /// Drops the finished calls whose window has passed.
    fn sweep(&mut self, now: Instant) {
        while self.finished.front().is_some_and(|(_, _, expires)| *expires <= now) {
            self.pop_finished();
        }
    }

    /// Drops the finished call that would expire first; `false` when every entry is still running.
    fn evict_oldest(&mut self) -> bool {
        while let Some(dropped) = self.pop_finished() {
            if dropped {
                return true;
            }
        }
        false
    }

    /// Drops the oldest item of `finished` and its entry if still that one: `Some(true)` when an entry went.
    fn pop_finished(&mut self) -> Option<bool> {
        let (id, generation, _) = self.finished.pop_front()?;
        self.stubbed_up_to = self.stubbed_up_to.saturating_sub(1);
        let done =
            self.entries.get(&id).is_some_and(|e| e.generation == generation && matches!(e.state, State::Done(_)));
        if done {
            self.remove(id);
        }
        Some(done)
    }

    fn remove(&mut self, id: IdHash) {
        if let Some(Entry { state: State::Done(outcome), .. }) = self.entries.remove(&id) {
            self.bytes -= outcome.bytes;
            self.spares.lend(outcome.kept);
        }
    }

    /// Stubs the oldest kept outcomes until the total is within `max_bytes`. The record of each call stays, so
    /// that a retry is still answered rather than run again. Stubs count too but are small: only a bound too
    /// small for `max_entries` stubs can leave the total above it, once every outcome is a stub.
    fn shrink(&mut self, max_bytes: usize) {
        while self.bytes > max_bytes && self.stubbed_up_to < self.finished.len() {
            let (id, generation, _) = &self.finished[self.stubbed_up_to];
            self.stubbed_up_to += 1;
            let Some(entry) = self.entries.get_mut(id).filter(|e| e.generation == *generation) else { continue };
            let State::Done(outcome) = &mut entry.state else { continue };
            if outcome.stub {
                continue;
            }
            let replaced = Outcome::stub(&outcome.kept.message(), &mut self.spares);
            self.bytes = self.bytes - outcome.bytes + replaced.bytes;
            self.spares.lend(std::mem::replace(outcome, replaced).kept);
        }
    }
}

/// Roughly what a kept outcome takes in memory: its text and a fixed overhead.
fn entry_bytes(message: &ToolMessage) -> usize {
    let repairs = message.repairs.iter().map(|r| r.rule.len() + r.path.len() + r.before.len() + r.after.len());
    let error = message.error.as_ref().map_or(0, |e| {
        let violations = e.violations.iter().map(|v| v.instance_path.len() + v.schema_path.len() + v.message.len());
        let suggestions = e.suggestions.iter().map(String::len);
        e.message.len() + e.original_arguments.len() + violations.sum::<usize>() + suggestions.sum::<usize>()
    });
    let text = [&message.tool_call_id, &message.name, &message.content];
    ENTRY_OVERHEAD
        + text.iter().map(|s| s.len()).sum::<usize>()
        + message.structured.as_ref().map_or(0, String::len)
        + message.effective_arguments.len()
        + repairs.sum::<usize>()
        + error
        + message.blocks.iter().map(crate::pipeline::ResultBlock::size).sum::<usize>()
}

/// What a retry gets when the call's outcome was not kept: it ran, so it is not run again.
fn stub(message: &ToolMessage) -> ToolMessage {
    let what = "this call already ran; its outcome was not kept because the gateway's record of outcomes was \
                full, so it is not run again";
    ToolMessage {
        tool_call_id: message.tool_call_id.clone(),
        name: message.name.clone(),
        status: ToolStatus::Error,
        content: format!(
            "Error: the call to {} already ran, but its outcome was not kept because the gateway's \
                          record of outcomes was full; it is not run again.",
            message.name
        ),
        structured: None,
        error: Some(ToolError {
            kind: ErrorKind::Internal,
            message: what.into(),
            model_fixable: false,
            retryable: false,
            retry_after_ms: 0,
            violations: Vec::new(),
            suggestions: Vec::new(),
            original_arguments: String::new(),
        }),
        repairs: Vec::new(),
        effective_arguments: String::new(),
        attempts: message.attempts,
        duration_us: message.duration_us,
        parts: Vec::new(),
        blocks: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
