//! The review queue shared through Redis: two `ReviewQueue::shared` on one key prefix act as two gateways.

use crate::support;
use crate::support::cluster::{Prefix, redis_url};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{Instant, timeout};
use toolgate::cluster::{ClusterSettings, Redis};
use toolgate::pipeline::{ToolMessage, ToolStatus};
use toolgate::review::{
    Decision, EventKind, ReviewError, ReviewKey, ReviewQueue, ReviewRecord, ReviewSettings, ReviewState, Step,
    Submitted,
};

const LEASE: Duration = Duration::from_secs(30);

/// Two gateways on one fresh prefix, both following the channel.
async fn gateways(settings: ReviewSettings, lease: Duration) -> (Prefix, Arc<ReviewQueue>, Arc<ReviewQueue>) {
    let prefix = Prefix::new(&redis_url());
    let a = Arc::new(ReviewQueue::shared(prefix.redis(), settings, lease));
    let b = Arc::new(ReviewQueue::shared(prefix.redis(), settings, lease));
    for queue in [&a, &b] {
        timeout(Duration::from_secs(5), queue.ready()).await.expect("the follower subscribes");
    }
    (prefix, a, b)
}

fn key(call_id: &str) -> ReviewKey {
    ReviewKey { tenant: "acme".into(), call_id: call_id.into() }
}

fn call(call_id: &str, arguments: &str) -> ReviewRecord {
    ReviewRecord {
        key: key(call_id),
        session_id: "s1".into(),
        user_id: "u1".into(),
        values: BTreeMap::from([("region".to_owned(), "eu".to_owned())]),
        tool: "refund".into(),
        tool_tenant: String::new(),
        arguments: arguments.into(),
        original_arguments: arguments.into(),
        repairs: Vec::new(),
        created_ms: toolgate::review::unix_ms(),
        decided_ms: None,
        decided_by: None,
        rule: None,
        waits_until_ms: None,
        state: ReviewState::Pending,
    }
}

fn message(content: &str) -> ToolMessage {
    ToolMessage {
        tool_call_id: "c1".into(),
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

/// Polls `check` every 10 ms for up to 15 s: what it waits for comes over Redis pub/sub within milliseconds, and
/// the deadline is for a loaded machine.
async fn eventually(what: &str, check: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(15);
    while !check() {
        assert!(Instant::now() < until, "{what} did not happen within 15 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_call_submitted_on_one_gateway_is_decided_on_another_and_runs_once() {
    let (_prefix, a, b) = gateways(ReviewSettings::default(), LEASE).await;
    let k = key("c1");
    assert_eq!(a.submit(call("c1", r#"{"amount":5}"#)).await.unwrap(), Submitted::New);
    let listed = b.pending(Some("acme")).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].arguments, r#"{"amount":5}"#);
    assert_eq!(listed[0].values["region"], "eu");
    assert!(b.pending(Some("other")).await.is_empty());

    let waiting = tokio::spawn({
        let (a, k) = (Arc::clone(&a), k.clone());
        async move { a.wait(&k, Some(Instant::now() + Duration::from_secs(10))).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiting.is_finished(), "a pending call is waited on");
    let decided_at = Instant::now();
    let edit = Decision::Edit { arguments: r#"{"amount":4}"#.into() };
    let decided = b.decide(&k, edit, Some("Ana\nfrom B")).await.unwrap();
    assert!(decided.decided_ms.is_some());
    // Who decided travels with the record to every gateway, on one line.
    assert_eq!(decided.decided_by.as_deref(), Some("Anafrom B"));
    assert_eq!(a.get(&k).await.unwrap().decided_by.as_deref(), Some("Anafrom B"));
    // B claims as A's waiter wakes: exactly one runs it; if B does, A's waiter gets B's answer.
    let on_b = b.claim(&k).await.unwrap().unwrap();
    if matches!(on_b, Step::Run(_)) {
        b.finish(&k, message("by B")).await.unwrap();
    }
    // Woken by the decision, not by its 10 s deadline: half of that is a margin no scheduling delay reaches.
    let on_a = timeout(Duration::from_secs(5), waiting).await.expect("A wakes at once").unwrap().unwrap().unwrap();
    assert!(decided_at.elapsed() < Duration::from_secs(5), "{:?}", decided_at.elapsed());
    let runs = [&on_a, &on_b].into_iter().filter(|s| matches!(s, Step::Run(_))).count();
    assert_eq!(runs, 1, "A: {on_a:?}, B: {on_b:?}");
    // Whoever ran it finishes it; the other gateway then sees the answer.
    let (answer, other) = match on_a {
        Step::Run(run) => {
            assert_eq!(run.state, ReviewState::Running(Decision::Edit { arguments: r#"{"amount":4}"#.into() }));
            assert_eq!(b.claim(&k).await.unwrap(), Some(Step::Wait), "running on A: B waits");
            a.finish(&k, message("refunded")).await.unwrap();
            (message("refunded"), &b)
        }
        step => {
            assert_eq!(step, Step::Done(message("by B")));
            (message("by B"), &a)
        }
    };
    assert_eq!(other.get(&k).await.unwrap().state, ReviewState::Done(answer.clone()));
    assert_eq!(other.claim(&k).await.unwrap(), Some(Step::Done(answer)));
    assert!(matches!(b.finish(&k, message("again")).await, Err(ReviewError::NotRunning)));
    assert_eq!(b.claim(&key("unknown")).await.unwrap(), None);
    assert!(b.get(&key("unknown")).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn of_many_claimers_on_two_gateways_exactly_one_runs() {
    let (_prefix, a, b) = gateways(ReviewSettings::default(), LEASE).await;
    let k = key("c1");
    a.submit(call("c1", "{}")).await.unwrap();
    b.decide(&k, Decision::Approve, None).await.unwrap();
    let claims: Vec<_> = (0..16)
        .map(|i| {
            let (queue, k) = (Arc::clone(if i % 2 == 0 { &a } else { &b }), k.clone());
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_retry_is_existing_another_call_conflicts_and_a_settled_id_is_reused() {
    let (_prefix, a, b) = gateways(ReviewSettings::default(), LEASE).await;
    let k = key("c1");
    a.submit(call("c1", "{}")).await.unwrap();
    assert_eq!(b.submit(call("c1", "{}")).await.unwrap(), Submitted::Existing(ReviewState::Pending));
    assert!(matches!(b.submit(call("c1", r#"{"other":1}"#)).await, Err(ReviewError::Conflict)));

    b.decide(&k, Decision::Reject { feedback: "no".into() }, None).await.unwrap();
    assert!(matches!(a.decide(&k, Decision::Approve, None).await, Err(ReviewError::AlreadyDecided)));
    assert!(matches!(a.decide(&key("nope"), Decision::Approve, None).await, Err(ReviewError::NotFound)));
    let decided = ReviewState::Decided(Decision::Reject { feedback: "no".into() });
    assert_eq!(a.submit(call("c1", "{}")).await.unwrap(), Submitted::Existing(decided));

    assert!(matches!(a.claim(&k).await.unwrap(), Some(Step::Run(_))));
    a.finish(&k, message("rejected")).await.unwrap();
    assert_eq!(b.submit(call("c1", "{}")).await.unwrap(), Submitted::Existing(ReviewState::Done(message("rejected"))));
    // Once settled, the id may carry another call.
    assert_eq!(b.submit(call("c1", r#"{"other":1}"#)).await.unwrap(), Submitted::New);
    assert_eq!(a.get(&k).await.unwrap().state, ReviewState::Pending);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn max_pending_counts_every_gateways_calls() {
    let settings = ReviewSettings { max_pending: 2, ..ReviewSettings::default() };
    let (_prefix, a, b) = gateways(settings, LEASE).await;
    a.submit(call("c1", "{}")).await.unwrap();
    b.submit(call("c2", "{}")).await.unwrap();
    assert!(matches!(b.submit(call("c3", "{}")).await, Err(ReviewError::Full { max: 2 })));
    a.decide(&key("c1"), Decision::Approve, None).await.unwrap();
    assert_eq!(b.submit(call("c3", "{}")).await.unwrap(), Submitted::New);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_running_call_past_its_lease_is_lost_and_never_runs_again() {
    // Long enough that B's first claim, which may open its Redis connection, falls inside it on a loaded machine.
    let (_prefix, a, b) = gateways(ReviewSettings::default(), Duration::from_secs(2)).await;
    let k = key("c1");
    a.submit(call("c1", "{}")).await.unwrap();
    a.decide(&k, Decision::Approve, None).await.unwrap();
    assert!(matches!(a.claim(&k).await.unwrap(), Some(Step::Run(_))));
    assert_eq!(b.claim(&k).await.unwrap(), Some(Step::Wait), "within its lease, it runs on A");
    let until = Instant::now() + Duration::from_secs(15);
    let lost = loop {
        match b.claim(&k).await.unwrap() {
            Some(Step::Lost(lost)) => break lost,
            Some(Step::Wait) => assert!(Instant::now() < until, "the lease never ran out"),
            other => panic!("past its lease, the call is lost, not {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(lost.key, k);
    assert_eq!(a.claim(&k).await.unwrap(), Some(Step::Lost(lost)));
    b.finish(&k, message("lost")).await.unwrap();
    assert_eq!(a.claim(&k).await.unwrap(), Some(Step::Done(message("lost"))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_watcher_on_one_gateway_sees_the_other_gateways_changes() {
    let (_prefix, a, b) = gateways(ReviewSettings::default(), LEASE).await;
    a.submit(call("c0", "{}")).await.unwrap();
    let (listed, mut events) = b.subscribe_with_pending(Some("acme")).await;
    assert_eq!(listed.iter().map(|r| r.key.call_id.as_str()).collect::<Vec<_>>(), ["c0"]);
    eventually("B's pending count of 1", || b.pending_count() == 1).await;

    a.submit(call("c1", "{}")).await.unwrap();
    a.decide(&key("c1"), Decision::Approve, None).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = timeout(Duration::from_secs(15), events.recv()).await.expect("an event").unwrap();
        if event.record.key.call_id == "c1" {
            seen.push((event.kind, event.record.state));
        }
    }
    assert_eq!(
        seen,
        [(EventKind::Pending, ReviewState::Pending), (EventKind::Decided, ReviewState::Decided(Decision::Approve))]
    );
    eventually("B's pending count of 1 again", || b.pending_count() == 1).await;
    a.decide(&key("c0"), Decision::Approve, None).await.unwrap();
    eventually("B's pending count of 0", || b.pending_count() == 0).await;
}

/// How many connections are subscribed to the prefix's review channel.
fn subscribers(prefix: &Prefix) -> i64 {
    let mut conn = support::cluster::connect(&redis_url());
    let channel = format!("{}:reviews", prefix.prefix);
    let (_, count): (String, i64) = redis::cmd("PUBSUB").arg("NUMSUB").arg(channel).query(&mut conn).unwrap();
    count
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn closing_ends_a_wait_at_once_and_the_follower_stops_on_close_or_drop() {
    let (prefix, a, b) = gateways(ReviewSettings::default(), LEASE).await;
    assert_eq!(subscribers(&prefix), 2);
    let k = key("c1");
    a.submit(call("c1", "{}")).await.unwrap();
    let waiting = tokio::spawn({
        let (a, k) = (Arc::clone(&a), k.clone());
        async move { a.wait(&k, None).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    a.close();
    // The wait has no deadline: without the close it would never end, so 5 s is room, not a speed test.
    let step = timeout(Duration::from_secs(5), waiting).await.expect("the waiter answers").unwrap().unwrap();
    assert_eq!(step, Some(Step::Wait));
    eventually("A's follower stopping on close", || subscribers(&prefix) == 1).await;
    drop(b);
    eventually("B's follower stopping on drop", || subscribers(&prefix) == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn without_redis_submit_fails_quickly_as_unavailable() {
    let settings = ClusterSettings {
        redis_url: "redis://127.0.0.1:1".into(),
        topology: toolgate::cluster::Topology::parse("redis://127.0.0.1:1").unwrap(),
        key_prefix: "unreachable".into(),
        sync_interval: Duration::from_millis(200),
        op_timeout: Duration::from_millis(500),
        rate_precheck: true,
    };
    let queue = ReviewQueue::shared(Redis::new(settings).unwrap(), ReviewSettings::default(), LEASE);
    let started = Instant::now();
    let submitted = queue.submit(call("c1", "{}")).await;
    assert!(matches!(submitted, Err(ReviewError::Unavailable(_))), "{submitted:?}");
    // Quickly: a refused dial answers at once, not after retries; 10 s is far beyond any stall and far short of
    // waiting for Redis to come back.
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert!(matches!(queue.claim(&key("c1")).await, Err(ReviewError::Unavailable(_))));
    assert!(queue.pending(None).await.is_empty());
    assert_eq!(queue.pending_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn after_redis_restarts_the_follower_subscribes_again_and_watchers_must_resync() {
    let mut server = support::cluster::PrivateRedis::start();
    let settings = ClusterSettings { redis_url: server.url(), ..Prefix::new(&redis_url()).settings() };
    let a = Arc::new(ReviewQueue::shared(Redis::new(settings.clone()).unwrap(), ReviewSettings::default(), LEASE));
    let b = ReviewQueue::shared(Redis::new(settings).unwrap(), ReviewSettings::default(), LEASE);
    for queue in [&*a, &b] {
        timeout(Duration::from_secs(5), queue.ready()).await.expect("the follower subscribes");
    }
    let mut events = b.subscribe();
    server.stop();
    server.restart();
    let closed = timeout(Duration::from_secs(5), events.recv()).await.expect("the old watch ends");
    assert!(closed.is_err(), "events may have been missed: the watch closes");
    timeout(Duration::from_secs(5), b.ready()).await.expect("B follows again");

    // The first command after the restart may find the old connection gone.
    let until = Instant::now() + Duration::from_secs(5);
    while a.submit(call("c1", "{}")).await.is_err() {
        assert!(Instant::now() < until, "Redis answers again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    timeout(Duration::from_secs(5), a.ready()).await.expect("A follows again");
    let waiting = tokio::spawn({
        let a = Arc::clone(&a);
        async move { a.wait(&key("c1"), Some(Instant::now() + Duration::from_secs(10))).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    b.decide(&key("c1"), Decision::Approve, None).await.unwrap();
    // Woken by the decision, not by its 10 s deadline.
    let step = timeout(Duration::from_secs(5), waiting).await.expect("A wakes at once").unwrap().unwrap();
    assert!(matches!(step, Some(Step::Run(_))), "{step:?}");
}
