//! The record of calls by id kept on this gateway: a map bounded in entries and in bytes, each finished call
//! kept for the window. Past the entry bound the oldest finished call is forgotten; past the byte bound the
//! oldest finished outcomes are replaced by a small stub, so the record that a call ran is never lost to size.

use super::kept::Kept;
use super::{CallKey, Claim, Claimed, Fingerprint, Waiter};
use crate::pipeline::{ErrorKind, ToolError, ToolMessage, ToolStatus};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Charged to every finished entry on top of its text: the entry, its key and the message's fixed fields.
const ENTRY_OVERHEAD: usize = 256;

pub(super) struct LocalStore {
    window: Duration,
    max_entries: usize,
    max_bytes: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<Arc<CallKey>, Entry>,
    /// Finished calls in the order they finished, which (the window being fixed) is the order they expire in.
    /// An item whose entry has since gone or changed (another generation) is skipped.
    finished: VecDeque<(Arc<CallKey>, u64, Instant)>,
    /// Items of `finished` before this index are stubs or gone: where the next stub is looked for.
    stubbed_up_to: usize,
    /// What the finished entries' outcomes take, approximately (see `entry_bytes`).
    bytes: usize,
    next_generation: u64,
}

struct Entry {
    fingerprint: Fingerprint,
    generation: u64,
    state: State,
}

enum State {
    /// Dropped when the call settles, which wakes every waiter.
    Running(watch::Sender<()>),
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
    fn stub(key: &CallKey, of: &ToolMessage) -> Self {
        let message = stub(of);
        Self { bytes: entry_bytes(key, &message), kept: Kept::of(&message), stub: true }
    }
}

impl LocalStore {
    pub(super) fn new(window: Duration, max_entries: usize, max_bytes: usize) -> Self {
        Self { window, max_entries: max_entries.max(1), max_bytes: max_bytes.max(1), inner: Mutex::default() }
    }

    pub(super) fn claim(&self, key: &Arc<CallKey>, fingerprint: &Fingerprint) -> Claimed {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.sweep(Instant::now());
        if let Some(entry) = inner.entries.get(&**key) {
            return match &entry.state {
                _ if entry.fingerprint != *fingerprint => Claimed::Conflict,
                State::Running(sender) => Claimed::Running(Waiter::local(sender.subscribe())),
                State::Done(outcome) => Claimed::Done(Box::new(outcome.kept.message())),
            };
        }
        if inner.entries.len() >= self.max_entries && !inner.evict_oldest() {
            return Claimed::Full;
        }
        inner.next_generation += 1;
        let generation = inner.next_generation;
        let entry = Entry { fingerprint: *fingerprint, generation, state: State::Running(watch::Sender::new(())) };
        inner.entries.insert(Arc::clone(key), entry);
        Claimed::Run(Claim { key: Arc::clone(key), token: generation })
    }

    /// Keeps the call's answer for the window (a stub in its place when the bytes bound needs it); its waiters
    /// wake and read it.
    pub(super) fn finish(&self, claim: &Claim, message: &ToolMessage) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let Some(entry) = inner.entries.get_mut(&*claim.key).filter(|e| e.generation == claim.token) else {
            return;
        };
        let bytes = entry_bytes(&claim.key, message);
        let outcome = match bytes > self.max_bytes {
            // Alone past the bound: kept as a stub at once rather than pushing every other outcome out.
            true => Outcome::stub(&claim.key, message),
            false => Outcome { kept: Kept::of(message), bytes, stub: false },
        };
        let bytes = outcome.bytes;
        entry.state = State::Done(outcome);
        let generation = entry.generation;
        inner.bytes += bytes;
        inner.finished.push_back((Arc::clone(&claim.key), generation, Instant::now() + self.window));
        inner.shrink(self.max_bytes);
    }

    /// Forgets a claimed call that never reached its tool; its waiters wake and claim it themselves.
    pub(super) fn release(&self, claim: &Claim) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if inner.entries.get(&*claim.key).is_some_and(|e| e.generation == claim.token) {
            inner.remove(&claim.key);
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
        let (key, generation, _) = self.finished.pop_front()?;
        self.stubbed_up_to = self.stubbed_up_to.saturating_sub(1);
        let done =
            self.entries.get(&key).is_some_and(|e| e.generation == generation && matches!(e.state, State::Done(_)));
        if done {
            self.remove(&key);
        }
        Some(done)
    }

    fn remove(&mut self, key: &CallKey) {
        if let Some(Entry { state: State::Done(outcome), .. }) = self.entries.remove(key) {
            self.bytes -= outcome.bytes;
        }
    }

    /// Stubs the oldest kept outcomes until the total is within `max_bytes`. The record of each call stays, so
    /// that a retry is still answered rather than run again. Stubs count too but are small: only a bound too
    /// small for `max_entries` stubs can leave the total above it, once every outcome is a stub.
    fn shrink(&mut self, max_bytes: usize) {
        while self.bytes > max_bytes && self.stubbed_up_to < self.finished.len() {
            let (key, generation, _) = &self.finished[self.stubbed_up_to];
            self.stubbed_up_to += 1;
            let Some(entry) = self.entries.get_mut(key).filter(|e| e.generation == *generation) else { continue };
            let State::Done(outcome) = &mut entry.state else { continue };
            if outcome.stub {
                continue;
            }
            let replaced = Outcome::stub(key, &outcome.kept.message());
            self.bytes = self.bytes - outcome.bytes + replaced.bytes;
            *outcome = replaced;
        }
    }
}

/// Roughly what a kept outcome takes in memory: its text and a fixed overhead.
fn entry_bytes(key: &CallKey, message: &ToolMessage) -> usize {
    let repairs = message.repairs.iter().map(|r| r.rule.len() + r.path.len() + r.before.len() + r.after.len());
    let error = message.error.as_ref().map_or(0, |e| {
        let violations = e.violations.iter().map(|v| v.instance_path.len() + v.schema_path.len() + v.message.len());
        let suggestions = e.suggestions.iter().map(String::len);
        e.message.len() + e.original_arguments.len() + violations.sum::<usize>() + suggestions.sum::<usize>()
    });
    let text = [&key.tenant, &key.call_id, &message.tool_call_id, &message.name, &message.content];
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
mod tests {
    use super::*;

    fn key(id: &str) -> Arc<CallKey> {
        Arc::new(CallKey { tenant: "t".into(), call_id: id.into() })
    }

    fn message(content: &str) -> ToolMessage {
        ToolMessage {
            tool_call_id: "c".into(),
            name: "echo".into(),
            status: ToolStatus::Success,
            content: content.into(),
            structured: None,
            error: None,
            repairs: Vec::new(),
            effective_arguments: String::new(),
            attempts: 1,
            duration_us: 0,
            parts: Vec::new(),
            blocks: Vec::new(),
        }
    }

    fn run(store: &LocalStore, id: &str, fp: u8) -> Claim {
        match store.claim(&key(id), &[fp; 16]) {
            Claimed::Run(claim) => claim,
            other => panic!("{id} should run, got {}", other.word()),
        }
    }

    #[tokio::test]
    async fn a_claimed_id_is_waited_on_then_answered_and_other_arguments_conflict() {
        let store = LocalStore::new(Duration::from_secs(60), 10, 1 << 20);
        let claim = run(&store, "a", 1);
        let Claimed::Running(mut waiter) = store.claim(&key("a"), &[1; 16]) else { panic!("should wait") };
        assert_eq!(store.claim(&key("a"), &[2; 16]).word(), "conflict");
        store.finish(&claim, &message("first"));
        waiter.changed().await;
        let Claimed::Done(done) = store.claim(&key("a"), &[1; 16]) else { panic!("should be done") };
        assert_eq!(done.content, "first");
        assert_eq!(store.claim(&key("a"), &[2; 16]).word(), "conflict", "a finished id still conflicts");
    }

    #[tokio::test]
    async fn a_released_id_runs_again() {
        let store = LocalStore::new(Duration::from_secs(60), 10, 1 << 20);
        let claim = run(&store, "a", 1);
        let Claimed::Running(mut waiter) = store.claim(&key("a"), &[1; 16]) else { panic!("should wait") };
        store.release(&claim);
        waiter.changed().await;
        run(&store, "a", 1);
    }

    #[test]
    fn the_store_stays_bounded_dropping_the_oldest_finished_call() {
        let store = LocalStore::new(Duration::from_secs(60), 100, 1 << 20);
        for i in 0..10_000 {
            let claim = run(&store, &i.to_string(), 1);
            store.finish(&claim, &message("x"));
        }
        assert_eq!(store.len(), (100, 100));
        assert_eq!(store.claim(&key("9999"), &[1; 16]).word(), "done", "the newest is kept");
        run(&store, "0", 1);
        // Every entry running: nothing can be dropped, so a new call is not recorded.
        let full = LocalStore::new(Duration::from_secs(60), 2, 1 << 20);
        let _held = (run(&full, "a", 1), run(&full, "b", 1));
        assert_eq!(full.claim(&key("c"), &[1; 16]).word(), "full");
    }

    #[tokio::test(start_paused = true)]
    async fn a_finished_call_is_forgotten_after_the_window() {
        let store = LocalStore::new(Duration::from_millis(100), 10, 1 << 20);
        store.finish(&run(&store, "a", 1), &message("x"));
        assert_eq!(store.claim(&key("a"), &[1; 16]).word(), "done");
        tokio::time::advance(Duration::from_millis(101)).await;
        run(&store, "a", 2);
        assert_eq!(store.len(), (1, 0));
    }

    fn finish_large(store: &LocalStore, id: &str, bytes: usize) {
        let mut large = message(&"x".repeat(bytes));
        large.structured = Some("y".repeat(bytes));
        store.finish(&run(store, id, 1), &large);
    }

    fn is_stub(message: &ToolMessage) -> bool {
        let error = message.error.as_ref().expect("a stub is an error");
        message.status == ToolStatus::Error
            && (error.kind, error.retryable, error.model_fixable) == (ErrorKind::Internal, false, false)
            && message.content.contains("already ran")
            && message.content.contains("not run again")
    }

    #[test]
    fn the_bytes_kept_stay_within_the_bound_stubbing_the_oldest_outcomes() {
        const MAX: usize = 1 << 20;
        let store = LocalStore::new(Duration::from_secs(60), 10_000, MAX);
        for i in 0..1_000 {
            finish_large(&store, &i.to_string(), 64 << 10);
            assert!(store.bytes() <= MAX, "after {i}: {} bytes kept, bound {MAX}", store.bytes());
        }
        assert_eq!(store.len(), (1_000, 1_000), "no record of a call that ran is dropped");
        let Claimed::Done(newest) = store.claim(&key("999"), &[1; 16]) else { panic!("the newest is kept") };
        assert_eq!(newest.content.len(), 64 << 10, "the newest outcome is kept whole");
        let Claimed::Done(oldest) = store.claim(&key("0"), &[1; 16]) else { panic!("the oldest is recorded") };
        assert!(is_stub(&oldest), "the oldest outcome is a stub: {oldest:?}");
        assert_eq!((oldest.tool_call_id.as_str(), oldest.name.as_str(), oldest.attempts), ("c", "echo", 1));
    }

    #[test]
    fn a_stubbed_call_sent_again_gets_the_stub_and_never_runs_again() {
        let store = LocalStore::new(Duration::from_secs(60), 10, 4096);
        finish_large(&store, "huge", 8192);
        assert!(store.bytes() <= 4096, "an outcome alone past the bound is stubbed at once");
        finish_large(&store, "a", 1000);
        finish_large(&store, "b", 1000);
        for id in ["huge", "a"] {
            for _ in 0..3 {
                let Claimed::Done(again) = store.claim(&key(id), &[1; 16]) else { panic!("{id} must not run again") };
                assert!(is_stub(&again), "{id}: {again:?}");
            }
            assert_eq!(store.claim(&key(id), &[2; 16]).word(), "conflict", "{id} still holds its id");
        }
        let Claimed::Done(kept) = store.claim(&key("b"), &[1; 16]) else { panic!("b is kept") };
        assert_eq!(kept.content.len(), 1000);
    }

    #[tokio::test(start_paused = true)]
    async fn the_byte_total_falls_when_outcomes_expire_or_are_evicted() {
        let store = LocalStore::new(Duration::from_millis(100), 2, 1 << 20);
        assert_eq!(store.bytes(), 0);
        finish_large(&store, "a", 1000);
        let one = store.bytes();
        assert!(one > 2000, "{one}");
        finish_large(&store, "b", 1000);
        assert_eq!(store.bytes(), 2 * one);
        // A third past max_entries evicts the oldest: its bytes go with it.
        finish_large(&store, "c", 1000);
        assert_eq!((store.len().0, store.bytes()), (2, 2 * one));
        run(&store, "a", 1);
        assert_eq!(store.bytes(), one, "b evicted for a's new claim; a running counts nothing");
        tokio::time::advance(Duration::from_millis(101)).await;
        assert_eq!(store.claim(&key("c"), &[1; 16]).word(), "run", "c expired");
        assert_eq!(store.bytes(), 0, "the expired outcome's bytes are gone");
    }
}
