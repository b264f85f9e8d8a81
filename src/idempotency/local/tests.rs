//! The local record: claims, waiters, tenancy, the entry and byte bounds, and the window.

use super::*;

fn key(id: &str) -> CallId<'_> {
    CallId { tenant: "t", call_id: id }
}

fn new_store(window: Duration, max_entries: usize, max_bytes: usize) -> LocalStore {
    LocalStore::new(window, max_entries, max_bytes, FingerprintKey::new([7; 16]))
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
    match store.claim(key(id), &[fp; 16]) {
        Claimed::Run(claim) => claim,
        other => panic!("{id} should run, got {}", other.word()),
    }
}

#[tokio::test]
async fn a_claimed_id_is_waited_on_then_answered_and_other_arguments_conflict() {
    let store = new_store(Duration::from_secs(60), 10, 1 << 20);
    let claim = run(&store, "a", 1);
    let Claimed::Running(mut waiter) = store.claim(key("a"), &[1; 16]) else { panic!("should wait") };
    assert_eq!(store.claim(key("a"), &[2; 16]).word(), "conflict");
    store.finish(&claim, &message("first"));
    waiter.changed().await;
    let Claimed::Done(done) = store.claim(key("a"), &[1; 16]) else { panic!("should be done") };
    assert_eq!(done.content, "first");
    assert_eq!(store.claim(key("a"), &[2; 16]).word(), "conflict", "a finished id still conflicts");
}

#[tokio::test]
async fn an_id_is_its_tenants_alone_and_every_waiter_wakes() {
    let store = new_store(Duration::from_secs(60), 10, 1 << 20);
    let claim = run(&store, "a", 1);
    let other = CallId { tenant: "u", call_id: "a" };
    assert_eq!(store.claim(other, &[2; 16]).word(), "run", "the same id in another tenant is another call");
    let joined = CallId { tenant: "ta", call_id: "" };
    assert_eq!(store.claim(joined, &[1; 16]).word(), "run", "tenant and id are hashed apart, not joined");
    let mut waiters: Vec<_> = (0..3)
        .map(|_| match store.claim(key("a"), &[1; 16]) {
            Claimed::Running(waiter) => waiter,
            other => panic!("should wait, got {}", other.word()),
        })
        .collect();
    store.finish(&claim, &message("first"));
    for waiter in &mut waiters {
        tokio::time::timeout(Duration::from_secs(5), waiter.changed()).await.expect("each waiter wakes");
    }
    assert_eq!(store.claim(key("a"), &[1; 16]).word(), "done");
}

#[tokio::test]
async fn a_released_id_runs_again() {
    let store = new_store(Duration::from_secs(60), 10, 1 << 20);
    let claim = run(&store, "a", 1);
    let Claimed::Running(mut waiter) = store.claim(key("a"), &[1; 16]) else { panic!("should wait") };
    store.release(&claim);
    waiter.changed().await;
    run(&store, "a", 1);
}

#[test]
fn the_store_stays_bounded_dropping_the_oldest_finished_call() {
    let store = new_store(Duration::from_secs(60), 100, 1 << 20);
    for i in 0..10_000 {
        let claim = run(&store, &i.to_string(), 1);
        store.finish(&claim, &message("x"));
    }
    assert_eq!(store.len(), (100, 100));
    assert_eq!(store.claim(key("9999"), &[1; 16]).word(), "done", "the newest is kept");
    let Claimed::Done(oldest) = store.claim(key("9900"), &[1; 16]) else { panic!("the oldest kept is done") };
    assert_eq!(*oldest, message("x"), "outcomes kept in buffers earlier ones lent are whole");
    let spares = || store.inner.lock().unwrap().spares.len();
    let claim = run(&store, "0", 1);
    assert_eq!(spares(), 1, "the outcome forgotten for this claim lends its buffer");
    store.finish(&claim, &message("y"));
    assert_eq!(spares(), 0, "to this outcome");
    // Every entry running: nothing can be dropped, so a new call is not recorded.
    let full = new_store(Duration::from_secs(60), 2, 1 << 20);
    let _held = (run(&full, "a", 1), run(&full, "b", 1));
    assert_eq!(full.claim(key("c"), &[1; 16]).word(), "full");
}

#[tokio::test(start_paused = true)]
async fn a_finished_call_is_forgotten_after_the_window() {
    let store = new_store(Duration::from_millis(100), 10, 1 << 20);
    store.finish(&run(&store, "a", 1), &message("x"));
    assert_eq!(store.claim(key("a"), &[1; 16]).word(), "done");
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
    let store = new_store(Duration::from_secs(60), 10_000, MAX);
    for i in 0..1_000 {
        finish_large(&store, &i.to_string(), 64 << 10);
        assert!(store.bytes() <= MAX, "after {i}: {} bytes kept, bound {MAX}", store.bytes());
    }
    assert_eq!(store.len(), (1_000, 1_000), "no record of a call that ran is dropped");
    let Claimed::Done(newest) = store.claim(key("999"), &[1; 16]) else { panic!("the newest is kept") };
    assert_eq!(newest.content.len(), 64 << 10, "the newest outcome is kept whole");
    let Claimed::Done(oldest) = store.claim(key("0"), &[1; 16]) else { panic!("the oldest is recorded") };
    assert!(is_stub(&oldest), "the oldest outcome is a stub: {oldest:?}");
    assert_eq!((oldest.tool_call_id.as_str(), oldest.name.as_str(), oldest.attempts), ("c", "echo", 1));
}

#[test]
fn a_stubbed_call_sent_again_gets_the_stub_and_never_runs_again() {
    let store = new_store(Duration::from_secs(60), 10, 4096);
    finish_large(&store, "huge", 8192);
    assert!(store.bytes() <= 4096, "an outcome alone past the bound is stubbed at once");
    finish_large(&store, "a", 1000);
    finish_large(&store, "b", 1000);
    for id in ["huge", "a"] {
        for _ in 0..3 {
            let Claimed::Done(again) = store.claim(key(id), &[1; 16]) else { panic!("{id} must not run again") };
            assert!(is_stub(&again), "{id}: {again:?}");
        }
        assert_eq!(store.claim(key(id), &[2; 16]).word(), "conflict", "{id} still holds its id");
    }
    let Claimed::Done(kept) = store.claim(key("b"), &[1; 16]) else { panic!("b is kept") };
    assert_eq!(kept.content.len(), 1000);
}

#[tokio::test(start_paused = true)]
async fn the_byte_total_falls_when_outcomes_expire_or_are_evicted() {
    let store = new_store(Duration::from_millis(100), 2, 1 << 20);
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
    assert_eq!(store.claim(key("c"), &[1; 16]).word(), "run", "c expired");
    assert_eq!(store.bytes(), 0, "the expired outcome's bytes are gone");
}
