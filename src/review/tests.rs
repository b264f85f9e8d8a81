//! Tests of the review queue over a real redb store in a temporary directory; waiting runs on paused time.

use super::*;
use crate::pipeline::{ToolMessage, ToolStatus};
use crate::registry::{RedbStore, ToolStore};
use crate::store::Database;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

fn open_in(dir: &Path, settings: ReviewSettings) -> ReviewQueue {
    let store = Database::open(dir).unwrap();
    ReviewQueue::local(Arc::new(RedbReviewStore::new(&store).unwrap()), settings).unwrap()
}

fn queue() -> (tempfile::TempDir, ReviewQueue) {
    let dir = tempfile::tempdir().unwrap();
    let queue = open_in(dir.path(), ReviewSettings::default());
    (dir, queue)
}

fn key(tenant: &str, call_id: &str) -> ReviewKey {
    ReviewKey { tenant: tenant.into(), call_id: call_id.into() }
}

fn call(tenant: &str, call_id: &str, arguments: &str) -> ReviewRecord {
    ReviewRecord {
        key: key(tenant, call_id),
        session_id: "s1".into(),
        user_id: "u1".into(),
        values: [("region".to_owned(), "eu".to_owned())].into(),
        tool: "refund".into(),
        tool_tenant: String::new(),
        arguments: arguments.into(),
        original_arguments: arguments.into(),
        repairs: Vec::new(),
        created_ms: 1_000,
        decided_ms: None,
        decided_by: None,
        rule: None,
        waits_until_ms: None,
        state: ReviewState::Pending,
    }
}

fn message(call_id: &str, content: &str) -> ToolMessage {
    ToolMessage {
        tool_call_id: call_id.into(),
        name: "refund".into(),
        status: ToolStatus::Success,
        content: content.into(),
        structured: None,
        error: None,
        repairs: Vec::new(),
        effective_arguments: "{}".into(),
        attempts: 1,
        duration_us: 10,
        parts: Vec::new(),
        blocks: Vec::new(),
    }
}

/// Submits a call, decides it, and optionally claims (and finishes) it.
async fn drive(queue: &ReviewQueue, call_id: &str, decision: Decision, run: bool, finish: Option<&str>) -> ReviewKey {
    let k = key("acme", call_id);
    assert_eq!(queue.submit(call("acme", call_id, "{}")).await.unwrap(), Submitted::New);
    queue.decide(&k, decision, None).await.unwrap();
    if run {
        assert!(matches!(queue.claim(&k).await.unwrap(), Some(Step::Run(_))));
    }
    if let Some(content) = finish {
        queue.finish(&k, message(call_id, content)).await.unwrap();
    }
    k
}

#[tokio::test]
async fn an_approved_call_runs_once_and_its_answer_is_kept() {
    let (_dir, queue) = queue();
    let k = key("acme", "c1");
    assert_eq!(queue.submit(call("acme", "c1", r#"{"amount":5}"#)).await.unwrap(), Submitted::New);
    assert_eq!(queue.pending(Some("acme")).await.len(), 1);
    assert_eq!(queue.pending(None).await.len(), 1);
    assert_eq!(queue.pending_count(), 1);
    assert!(queue.pending(Some("other")).await.is_empty());
    assert_eq!(queue.claim(&k).await.unwrap(), Some(Step::Wait));
    assert!(matches!(queue.finish(&k, message("c1", "x")).await, Err(ReviewError::NotRunning)));

    let decided = queue.decide(&k, Decision::Approve, Some("  ana  ")).await.unwrap();
    assert_eq!(decided.state, ReviewState::Decided(Decision::Approve));
    assert!(decided.decided_ms.is_some());
    assert_eq!(decided.decided_by.as_deref(), Some("ana"));
    assert!(queue.pending(None).await.is_empty());
    assert_eq!(queue.pending_count(), 0);
    assert!(matches!(queue.decide(&k, Decision::Approve, None).await, Err(ReviewError::AlreadyDecided)));
    assert!(matches!(queue.decide(&key("acme", "nope"), Decision::Approve, None).await, Err(ReviewError::NotFound)));

    let (a, b) = tokio::join!(queue.claim(&k), queue.claim(&k));
    let steps = [a.unwrap().unwrap(), b.unwrap().unwrap()];
    let runs: Vec<_> = steps.iter().filter_map(|s| if let Step::Run(r) = s { Some(r) } else { None }).collect();
    assert_eq!(runs.len(), 1, "{steps:?}");
    assert_eq!(runs[0].state, ReviewState::Running(Decision::Approve));
    assert!(steps.contains(&Step::Wait));
    assert_eq!(queue.claim(&k).await.unwrap(), Some(Step::Wait));

    queue.finish(&k, message("c1", "refunded")).await.unwrap();
    assert_eq!(queue.claim(&k).await.unwrap(), Some(Step::Done(message("c1", "refunded"))));
    assert!(matches!(queue.finish(&k, message("c1", "again")).await, Err(ReviewError::NotRunning)));
    assert_eq!(queue.claim(&key("acme", "unknown")).await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_many_concurrent_claimers_exactly_one_runs() {
    let (_dir, queue) = queue();
    let queue = Arc::new(queue);
    let k = drive(&queue, "c1", Decision::Approve, false, None).await;
    let claims: Vec<_> = (0..16)
        .map(|_| {
            let (queue, k) = (Arc::clone(&queue), k.clone());
            tokio::spawn(async move { queue.claim(&k).await.unwrap().unwrap() })
        })
        .collect();
    let mut runs = 0;
    for claim in claims {
        match claim.await.unwrap() {
            Step::Run(_) => runs += 1,
            step => assert_eq!(step, Step::Wait),
        }
    }
    assert_eq!(runs, 1);
}

#[tokio::test(start_paused = true)]
async fn wait_wakes_when_the_call_is_decided() {
    let (_dir, queue) = queue();
    let queue = Arc::new(queue);
    let k = key("acme", "c1");
    queue.submit(call("acme", "c1", "{}")).await.unwrap();
    let start = Instant::now();
    let waiter = {
        let (queue, k) = (Arc::clone(&queue), k.clone());
        tokio::spawn(async move { queue.wait(&k, Some(start + Duration::from_secs(60))).await })
    };
    // Paused time: this only lets the waiter park on the record before the decision comes.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!waiter.is_finished());
    queue.decide(&k, Decision::Approve, None).await.unwrap();
    let step = waiter.await.unwrap().unwrap().unwrap();
    assert!(matches!(step, Step::Run(ref r) if r.state == ReviewState::Running(Decision::Approve)), "{step:?}");
    assert!(start.elapsed() < Duration::from_secs(60));
}

#[tokio::test(start_paused = true)]
async fn a_waiter_behind_a_running_call_gets_its_answer() {
    let (_dir, queue) = queue();
    let queue = Arc::new(queue);
    let k = drive(&queue, "c1", Decision::Approve, true, None).await;
    let waiter = {
        let (queue, k) = (Arc::clone(&queue), k.clone());
        tokio::spawn(async move { queue.wait(&k, None).await })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!waiter.is_finished(), "a running call is not run twice");
    queue.finish(&k, message("c1", "ok")).await.unwrap();
    assert_eq!(waiter.await.unwrap().unwrap(), Some(Step::Done(message("c1", "ok"))));
}

#[tokio::test(start_paused = true)]
async fn wait_gives_up_at_the_deadline_and_knows_no_unknown_key() {
    let (_dir, queue) = queue();
    let k = key("acme", "c1");
    queue.submit(call("acme", "c1", "{}")).await.unwrap();
    let start = Instant::now();
    let until = start + Duration::from_secs(30);
    assert_eq!(queue.wait(&k, Some(until)).await.unwrap(), Some(Step::Wait));
    assert_eq!(start.elapsed(), Duration::from_secs(30));
    assert_eq!(queue.wait(&key("acme", "unknown"), Some(until)).await.unwrap(), None);
    // A decided call is claimed at once, even past the deadline.
    queue.decide(&k, Decision::Approve, None).await.unwrap();
    assert!(matches!(queue.wait(&k, Some(until)).await.unwrap(), Some(Step::Run(_))));
}

#[tokio::test]
async fn rejections_and_edits_reach_the_runner() {
    let (_dir, queue) = queue();
    let reject = Decision::Reject { feedback: "too large".into() };
    let edit = Decision::Edit { arguments: r#"{"amount":1}"#.into() };
    for (id, decision) in [("r", reject), ("e", edit)] {
        let k = drive(&queue, id, decision.clone(), false, None).await;
        match queue.wait(&k, None).await.unwrap() {
            Some(Step::Run(record)) => assert_eq!(record.state, ReviewState::Running(decision)),
            step => panic!("{step:?}"),
        }
    }
}

#[tokio::test]
async fn a_call_id_is_kept_by_its_call_until_that_call_is_settled() {
    let (_dir, queue) = queue();
    let k = key("acme", "c1");
    queue.submit(call("acme", "c1", "{}")).await.unwrap();
    assert_eq!(queue.submit(call("acme", "c1", "{}")).await.unwrap(), Submitted::Existing(ReviewState::Pending));
    assert!(matches!(queue.submit(call("acme", "c1", r#"{"a":1}"#)).await, Err(ReviewError::Conflict)));
    let other_session = ReviewRecord { session_id: "s2".into(), ..call("acme", "c1", "{}") };
    assert!(matches!(queue.submit(other_session).await, Err(ReviewError::Conflict)));
    // Another tenant's call id is another key.
    assert_eq!(queue.submit(call("beta", "c1", r#"{"a":1}"#)).await.unwrap(), Submitted::New);

    queue.decide(&k, Decision::Approve, None).await.unwrap();
    assert!(matches!(queue.submit(call("acme", "c1", r#"{"a":1}"#)).await, Err(ReviewError::Conflict)));
    assert!(matches!(queue.claim(&k).await.unwrap(), Some(Step::Run(_))));
    queue.finish(&k, message("c1", "done")).await.unwrap();
    let done = ReviewState::Done(message("c1", "done"));
    assert_eq!(queue.submit(call("acme", "c1", "{}")).await.unwrap(), Submitted::Existing(done));

    assert_eq!(queue.submit(call("acme", "c1", r#"{"a":2}"#)).await.unwrap(), Submitted::New);
    let replaced = queue.get(&k).await.unwrap();
    assert_eq!(
        (replaced.state, replaced.decided_ms, replaced.arguments.as_str()),
        (ReviewState::Pending, None, r#"{"a":2}"#)
    );
    assert_eq!(queue.pending(Some("acme")).await.len(), 1);
}

#[tokio::test]
async fn records_survive_a_restart_and_a_running_call_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let queue = open_in(dir.path(), ReviewSettings::default());
    queue.submit(call("acme", "pending", "{}")).await.unwrap();
    let decided = drive(&queue, "decided", Decision::Approve, false, None).await;
    let running = drive(&queue, "running", Decision::Approve, true, None).await;
    let done = drive(&queue, "done", Decision::Approve, true, Some("ok")).await;
    drop(queue);

    let store = Database::open(dir.path()).unwrap();
    assert!(RedbStore::new(&store).unwrap().load().unwrap().is_empty(), "the tools table is untouched");
    let queue = ReviewQueue::local(Arc::new(RedbReviewStore::new(&store).unwrap()), ReviewSettings::default()).unwrap();
    drop(store);
    let pending = queue.pending(None).await;
    assert_eq!((pending.len(), queue.pending_count()), (1, 1), "counted at open too");
    assert_eq!(pending[0].values.get("region").map(String::as_str), Some("eu"));
    let decided = queue.get(&decided).await.unwrap();
    assert_eq!(decided.state, ReviewState::Decided(Decision::Approve));
    assert!(decided.decided_ms.is_some());
    assert_eq!(queue.claim(&done).await.unwrap(), Some(Step::Done(message("done", "ok"))));
    let Some(Step::Lost(lost)) = queue.claim(&running).await.unwrap() else { panic!("a running call is lost") };
    assert_eq!(lost.state, ReviewState::Lost);
    queue.finish(&running, message("running", "lost")).await.unwrap();
    drop(queue);

    // Lost is what was persisted, and the answer given for it is kept.
    let queue = open_in(dir.path(), ReviewSettings::default());
    assert_eq!(queue.claim(&running).await.unwrap(), Some(Step::Done(message("running", "lost"))));
}

#[tokio::test]
async fn a_full_queue_refuses_new_calls_but_not_retries() {
    let dir = tempfile::tempdir().unwrap();
    let queue = open_in(dir.path(), ReviewSettings { max_pending: 2, ..ReviewSettings::default() });
    queue.submit(call("acme", "c1", "{}")).await.unwrap();
    queue.submit(call("beta", "c2", "{}")).await.unwrap();
    assert!(matches!(queue.submit(call("acme", "c3", "{}")).await, Err(ReviewError::Full { max: 2 })));
    assert_eq!(queue.submit(call("acme", "c1", "{}")).await.unwrap(), Submitted::Existing(ReviewState::Pending));
    queue.decide(&key("acme", "c1"), Decision::Approve, None).await.unwrap();
    assert_eq!(queue.submit(call("acme", "c3", "{}")).await.unwrap(), Submitted::New);
}

#[tokio::test]
async fn subscribers_see_each_call_pending_then_decided() {
    let (_dir, queue) = queue();
    queue.submit(call("acme", "old", "{}")).await.unwrap();
    let mut events = queue.subscribe();
    let (now, mut watch) = queue.subscribe_with_pending(Some("acme")).await;
    assert_eq!(now.iter().map(|r| r.key.call_id.as_str()).collect::<Vec<_>>(), ["old"]);

    queue.submit(call("acme", "c1", "{}")).await.unwrap();
    let decided = queue.decide(&key("acme", "c1"), Decision::Approve, None).await.unwrap();
    for receiver in [&mut events, &mut watch] {
        let first = receiver.recv().await.unwrap();
        assert_eq!(
            (first.kind, first.record.state, first.record.key),
            (EventKind::Pending, ReviewState::Pending, key("acme", "c1"))
        );
        assert_eq!(receiver.recv().await.unwrap(), ReviewEvent { kind: EventKind::Decided, record: decided.clone() });
        assert!(receiver.try_recv().is_err());
    }
}

#[tokio::test]
async fn prune_removes_settled_calls_past_keep_done_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let keep_decided = Duration::from_secs(3600);
    let settings = ReviewSettings { keep_decided, ..ReviewSettings::default() };
    let queue = open_in(dir.path(), settings);
    queue.submit(call("acme", "pending", "{}")).await.unwrap();
    let running = drive(&queue, "running", Decision::Approve, true, None).await;
    let done = drive(&queue, "done", Decision::Approve, true, Some("ok")).await;
    let decided_ms = queue.get(&done).await.unwrap().decided_ms.unwrap();
    let limit = decided_ms + 3_600_000;

    assert_eq!(queue.prune_at(limit).await.unwrap(), 0);
    assert_eq!(queue.prune_at(limit + 1).await.unwrap(), 1);
    assert_eq!(queue.get(&done).await, None);
    assert!(queue.get(&running).await.is_some());
    assert_eq!(queue.pending(None).await.len(), 1);
    drop(queue);

    let queue = open_in(dir.path(), settings);
    assert_eq!(queue.get(&done).await, None, "pruned from the store too");
    assert_eq!(queue.pending(None).await.len(), 1);
}

#[tokio::test]
async fn open_prunes_old_settled_records() {
    let dir = tempfile::tempdir().unwrap();
    let store = Database::open(dir.path()).unwrap();
    let old = ReviewRecord {
        decided_ms: Some(1),
        decided_by: None,
        rule: None,
        state: ReviewState::Done(message("old", "ok")),
        ..call("acme", "old", "{}")
    };
    let old_pending = call("acme", "waiting", "{}");
    RedbReviewStore::new(&store).unwrap().put(&old).unwrap();
    RedbReviewStore::new(&store).unwrap().put(&old_pending).unwrap();
    let queue = ReviewQueue::local(Arc::new(RedbReviewStore::new(&store).unwrap()), ReviewSettings::default()).unwrap();
    assert_eq!(queue.get(&old.key).await, None);
    assert_eq!(queue.get(&old_pending.key).await, Some(old_pending));
    assert_eq!(RedbReviewStore::new(&store).unwrap().load().unwrap().len(), 1);
}
