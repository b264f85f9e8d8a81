//! No tool runs twice for one call id across a cluster: two gateways on one Redis, a call given up on one and
//! retried through the other, which waits for the first call's outcome rather than running the tool again.

use crate::support::cluster::{Prefix, redis_url};
use crate::support::idempotency::{Counting, request, specs, start};
use crate::support::{Gateway, kind_of, start_gateway, status_of, temp_config};
use std::time::Duration;
use tempfile::TempDir;
use toolgate::idempotency::IdempotencySettings;
use toolgate::pb::v1::{self as pb, ErrorKind as K, ToolStatus};

const ARGS: &str = r#"{"n": 1}"#;

async fn gateway(prefix: &Prefix) -> (TempDir, Gateway) {
    let (dir, mut config) = temp_config();
    config.cluster = Some(prefix.settings());
    config.idempotency = IdempotencySettings::default();
    (dir, start_gateway(config).await)
}

async fn execute(gw: &mut Gateway, id: &str, name: &str, timeout: Option<Duration>) -> Option<pb::ToolMessage> {
    gw.gateway.execute(request(id, name, ARGS, timeout)).await.ok().map(|r| r.into_inner().message.unwrap())
}

/// Two gateways on `prefix`, with the tools registered through the first and known to the second, and the tool
/// server's count of calls so far.
async fn two_gateways(prefix: &Prefix) -> ([TempDir; 2], Gateway, Gateway, Counting, usize) {
    let ((dir_a, mut a), (dir_b, mut b)) = (gateway(prefix).await, gateway(prefix).await);
    let tool = Counting::default();
    let target = start(tool.clone()).await;
    for spec in specs(&target) {
        a.register(spec).await.unwrap();
    }
    // B learns the tools from Redis (`quick` was registered last); calls with no id are never recorded.
    let until = tokio::time::Instant::now() + Duration::from_secs(5);
    while execute(&mut b, "", "quick", None).await.is_some_and(|m| kind_of(&m) == K::ToolNotFound) {
        assert!(tokio::time::Instant::now() < until, "gateway B never learned the tools");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let base = tool.calls();
    ([dir_a, dir_b], a, b, tool, base)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_call_retried_through_another_gateway_runs_once() {
    let prefix = Prefix::new(&redis_url());
    let (_dirs, mut a, mut b, tool, base) = two_gateways(&prefix).await;

    // The first caller gives up on A while the tool is held.
    if let Some(m) = execute(&mut a, "x1", "held", Some(Duration::from_millis(300))).await {
        assert_eq!(kind_of(&m), K::Timeout, "{m:?}");
    }
    tool.wait_for_calls(base + 1).await;
    // A retry through B during the call waits for it, and does not run the tool.
    let m = execute(&mut b, "x1", "held", Some(Duration::from_millis(300))).await.expect("a message");
    assert!(kind_of(&m) == K::Timeout && m.content.contains("still running"), "{m:?}");
    assert_eq!(tool.calls(), base + 1);

    // One that waits as long as it takes gets the outcome, told through Redis when A's call finishes.
    let mut client = b.gateway.clone();
    let retry = tokio::spawn(async move { client.execute(request("x1", "held", ARGS, None)).await });
    tool.release_one();
    let m = retry.await.unwrap().expect("a message").into_inner().message.unwrap();
    let expected = format!(r#"run {} of held with {ARGS}"#, base + 1);
    assert_eq!((status_of(&m), m.content.as_str()), (ToolStatus::Success, expected.as_str()), "{m:?}");

    // After the call, either gateway answers from the record; other arguments are refused on both.
    for gw in [&mut a, &mut b] {
        assert_eq!(execute(gw, "x1", "held", None).await.unwrap().content, expected);
        let other = gw.gateway.execute(request("x1", "held", r#"{"n": 2}"#, None)).await.unwrap();
        assert_eq!(kind_of(&other.into_inner().message.unwrap()), K::InvalidArguments);
    }
    assert_eq!(tool.calls(), base + 1, "the tool ran once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_retryable_failure_releases_its_id_in_redis_and_a_final_one_keeps_it() {
    let prefix = Prefix::new(&redis_url());
    let (_dirs, mut a, mut b, tool, base) = two_gateways(&prefix).await;
    // A retryable failure on A: the same id sent through B runs again.
    for (gw, run) in [(&mut a, 1), (&mut b, 2)] {
        let m = execute(gw, "y1", "overloaded", None).await.expect("a message");
        assert!(kind_of(&m) == K::ToolError && m.error.as_ref().unwrap().retryable, "{m:?}");
        assert_eq!(tool.calls(), base + run, "try {run} reached the tool");
    }
    // A final failure on A: B answers it from the record, and the tool does not run.
    let first = execute(&mut a, "y2", "refusing", None).await.expect("a message");
    assert!(kind_of(&first) == K::ToolError && !first.error.as_ref().unwrap().retryable, "{first:?}");
    let again = execute(&mut b, "y2", "refusing", None).await.expect("a message");
    assert_eq!(again.content, first.content);
    assert_eq!(tool.calls(), base + 3, "the final failure ran once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_claim_whose_gateway_stopped_is_lost_after_its_lease_and_never_runs_again() {
    use toolgate::idempotency::{CallId, Claimed, FingerprintKey, Idempotency};
    let prefix = Prefix::new(&redis_url());
    let settings = IdempotencySettings::default();
    let key = CallId { tenant: "acme", call_id: "gone-1" };
    // Long enough that the second gateway's first claim, which opens its Redis connection, falls inside it
    // on a loaded machine.
    let lease = Duration::from_secs(2);
    // Every gateway of a cluster fingerprints with the key it shares (app::open::fingerprint_key).
    let key_of_the_cluster = FingerprintKey::new([3; 16]);
    // A gateway claims the call, then stops without settling it.
    let dead = Idempotency::shared(prefix.redis(), settings, key_of_the_cluster, None);
    assert!(matches!(dead.claim(key, &[7; 16], lease, false).await, Claimed::Run(_)));
    drop(dead);
    let other = Idempotency::shared(prefix.redis(), settings, key_of_the_cluster, None);
    assert!(matches!(other.claim(key, &[7; 16], lease, false).await, Claimed::Running(_)), "within the lease it runs");
    let until = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        match other.claim(key, &[7; 16], lease, false).await {
            Claimed::Lost => break,
            Claimed::Running(_) => assert!(tokio::time::Instant::now() < until, "the lease never ran out"),
            _ => panic!("a lapsed claim must not be run again"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        matches!(other.claim(key, &[8; 16], lease, false).await, Claimed::Conflict),
        "other arguments still conflict"
    );
}
