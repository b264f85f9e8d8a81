//! Shared admission on a real Redis: budgets and GCRA rate limits in one round trip, shared by every gateway.

use crate::support;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::cluster::{Prefix, PrivateRedis, connect, redis_url};
use toolgate::cluster::{ClusterError, ClusterSettings, Redis};
use toolgate::policy::shared::{Admitted, BudgetAsk, RateAsk, SharedAdmission};
use toolgate::policy::{
    BudgetExceeded, BudgetLimits, PolicyError, RateLimited, RateRule, SessionKey, ToolKey, parse_rate,
};

const HOUR: Duration = Duration::from_secs(3600);

fn rule(text: &str, burst: u32) -> RateRule {
    RateRule { rate: parse_rate(text).unwrap(), burst }
}

fn limits(max_calls: Option<u32>, max_tool_calls: Option<u32>, max_failures: Option<u32>) -> BudgetLimits {
    BudgetLimits { max_calls, max_tool_calls, max_consecutive_failures: max_failures }
}

fn search() -> ToolKey {
    ToolKey::new("acme", "search")
}

fn session(id: &str) -> SessionKey {
    SessionKey::new("acme", id)
}

fn admission(prefix: &Prefix, precheck: bool) -> SharedAdmission {
    let settings = ClusterSettings { rate_precheck: precheck, ..prefix.settings() };
    SharedAdmission::new(Redis::new(settings).unwrap())
}

async fn rate(
    admission: &SharedAdmission,
    tool: &ToolKey,
    rule: &RateRule,
    key: &str,
) -> Result<Admitted, PolicyError> {
    admission.admit(None, Some(RateAsk { tool, rule, key })).await.expect("Redis answers")
}

async fn admitted(admission: &SharedAdmission, tool: &ToolKey, rule: &RateRule, key: &str, calls: usize) -> usize {
    let mut admitted = 0;
    for _ in 0..calls {
        admitted += usize::from(rate(admission, tool, rule, key).await.is_ok());
    }
    admitted
}

async fn budget(
    admission: &SharedAdmission,
    session: &SessionKey,
    tool: &str,
    limits: BudgetLimits,
    idle_ttl: Duration,
) -> Result<Admitted, PolicyError> {
    let ask = BudgetAsk { session, tool, limits, idle_ttl };
    admission.admit(Some(ask), None).await.expect("Redis answers")
}

/// A gateway's settings on a Redis of the test's own.
fn settings_at(url: &str) -> ClusterSettings {
    ClusterSettings {
        redis_url: url.into(),
        topology: toolgate::cluster::Topology::parse(url).unwrap(),
        key_prefix: "tgtest-admit".into(),
        sync_interval: Duration::from_millis(200),
        op_timeout: Duration::from_millis(300),
        rate_precheck: true,
    }
}

fn retry_after(outcome: Result<Admitted, PolicyError>) -> Duration {
    match outcome {
        Err(PolicyError::RateLimited(RateLimited { retry_after })) => retry_after,
        other => panic!("expected a rate refusal, got {other:?}"),
    }
}

fn refused(limit: BudgetExceeded) -> Result<Admitted, PolicyError> {
    Err(PolicyError::Budget(limit))
}

fn pttl(prefix: &Prefix, kind: &str) -> Option<i64> {
    let key = prefix.keys().into_iter().find(|key| key.starts_with(&format!("{}:{kind}:", prefix.prefix)))?;
    redis::cmd("PTTL").arg(key).query(&mut connect(&redis_url())).ok()
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn ten_a_minute_admits_ten_then_one_every_six_seconds() {
    // A minute-scale rate: each wait below is most of a 6 s interval whatever the calls before it took on a
    // loaded machine, where a per-second rate's 100 ms would be eaten by a few slow round trips.
    let prefix = Prefix::new(&redis_url());
    let (gateway, ten) = (admission(&prefix, true), rule("10/m", 0));
    let interval = Duration::from_secs(6);
    assert_eq!(admitted(&gateway, &search(), &ten, "", 10).await, 10);
    let wait = retry_after(rate(&gateway, &search(), &ten, "").await);
    assert!(wait > interval / 2 && wait <= interval, "{wait:?}");
    tokio::time::sleep(wait).await;
    assert_eq!(rate(&gateway, &search(), &ten, "").await, Ok(Admitted::default()), "admitted once waited");
    let again = retry_after(rate(&gateway, &search(), &ten, "").await);
    assert!(again > interval / 2 && again <= interval, "{again:?}");
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_burst_admits_that_many_at_once_then_the_steady_rate() {
    let prefix = Prefix::new(&redis_url());
    // 10/m: the five calls and the three take far less than the 6 s interval, even on a loaded machine.
    let (gateway, bursty) = (admission(&prefix, false), rule("10/m", 3));
    assert_eq!(admitted(&gateway, &search(), &bursty, "", 5).await, 3);
    let wait = retry_after(rate(&gateway, &search(), &bursty, "").await);
    assert!(wait <= Duration::from_secs(6), "{wait:?}");
    tokio::time::sleep(wait).await;
    assert_eq!(admitted(&gateway, &search(), &bursty, "", 3).await, 1, "then one per 6 s");
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn keys_and_tools_are_independent() {
    let prefix = Prefix::new(&redis_url());
    let (gateway, one) = (admission(&prefix, true), rule("1/m", 0));
    assert!(rate(&gateway, &search(), &one, "a").await.is_ok());
    assert!(rate(&gateway, &search(), &one, "a").await.is_err());
    assert!(rate(&gateway, &search(), &one, "b").await.is_ok(), "another key");
    assert!(rate(&gateway, &ToolKey::new("acme", "fetch"), &one, "a").await.is_ok(), "another tool");
    assert!(rate(&gateway, &ToolKey::new("other", "search"), &one, "a").await.is_ok(), "another tenant");
    assert!(rate(&gateway, &search(), &one, "b").await.is_err());
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_changed_rule_starts_fresh_and_an_unchanged_one_keeps_its_state() {
    let prefix = Prefix::new(&redis_url());
    let gateway = admission(&prefix, true);
    assert_eq!(admitted(&gateway, &search(), &rule("2/m", 0), "", 3).await, 2);
    assert_eq!(admitted(&gateway, &search(), &rule("2/m", 0), "", 1).await, 0, "same rule, same state");
    assert_eq!(admitted(&gateway, &search(), &rule("5/m", 0), "", 6).await, 5, "new rule, fresh state");
    assert_eq!(admitted(&gateway, &search(), &rule("5/m", 2), "", 3).await, 2, "a new burst is a new rule");
    assert_eq!(admitted(&gateway, &search(), &rule("5/h", 2), "", 3).await, 2, "a new period is a new rule");
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_rate_key_expires_once_back_to_a_fresh_keys_state() {
    let prefix = Prefix::new(&redis_url());
    let gateway = admission(&prefix, true);
    // 20/m, not 20/s: the key must outlive the two Redis connections that read its TTL.
    rate(&gateway, &search(), &rule("20/m", 0), "").await.unwrap();
    let ttl = pttl(&prefix, "rate").expect("a rate key");
    assert!((1..=3000).contains(&ttl), "one call of 20/m is forgotten 3 s later: {ttl}");
    // Gone once its TTL ran out: waited for, not slept for.
    let waiting = Instant::now();
    while !prefix.keys().is_empty() {
        assert!(waiting.elapsed() < Duration::from_secs(10), "the key outlived its TTL: {:?}", prefix.keys());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let started = Instant::now();
    assert_eq!(admitted(&gateway, &search(), &rule("10/s", 0), "", 10).await, 10);
    let ttl = pttl(&prefix, "rate").expect("a rate key");
    // Ten calls of 10/s take a second to forget, counted from the first: less what the calls themselves took.
    let spent = i64::try_from(started.elapsed().as_millis()).unwrap();
    assert!(
        ttl <= 1000 && ttl >= 1000 - spent - 20,
        "ten calls of 10/s take a second to forget: {ttl} ({spent} ms spent)"
    );
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn each_budget_refuses_with_its_own_error_and_refusals_are_not_counted() {
    let prefix = Prefix::new(&redis_url());
    let gateway = admission(&prefix, true);
    let (s1, three) = (session("s1"), limits(Some(3), None, None));
    assert!(budget(&gateway, &s1, "search", BudgetLimits::default(), HOUR).await.is_ok());
    assert!(budget(&gateway, &s1, "fetch", three, HOUR).await.is_ok());
    assert!(budget(&gateway, &s1, "search", three, HOUR).await.is_ok());
    assert_eq!(budget(&gateway, &s1, "fetch", three, HOUR).await, refused(BudgetExceeded::Calls { limit: 3 }));
    assert_eq!(budget(&gateway, &s1, "fetch", three, HOUR).await, refused(BudgetExceeded::Calls { limit: 3 }));
    let four = limits(Some(4), None, None);
    assert!(budget(&gateway, &s1, "fetch", four, HOUR).await.is_ok(), "the refused calls were not counted");
    assert!(budget(&gateway, &session("s2"), "fetch", three, HOUR).await.is_ok(), "another session");
    assert!(budget(&gateway, &SessionKey::new("other", "s1"), "fetch", three, HOUR).await.is_ok(), "another tenant");

    let (s3, two) = (session("s3"), limits(None, Some(2), None));
    for tool in ["search", "fetch"] {
        assert!(budget(&gateway, &s3, tool, two, HOUR).await.is_ok());
        assert!(budget(&gateway, &s3, tool, two, HOUR).await.is_ok());
        assert_eq!(budget(&gateway, &s3, tool, two, HOUR).await, refused(BudgetExceeded::ToolCalls { limit: 2 }));
    }
    let all = limits(Some(1), Some(1), Some(0));
    let s4 = session("s4");
    assert_eq!(
        budget(&gateway, &s4, "search", all, HOUR).await,
        refused(BudgetExceeded::ConsecutiveFailures { limit: 0 })
    );
    assert!(budget(&gateway, &s4, "search", limits(Some(1), Some(1), None), HOUR).await.is_ok());
    assert_eq!(budget(&gateway, &s4, "search", all, HOUR).await, refused(BudgetExceeded::Calls { limit: 1 }));
    let tool_only = limits(None, Some(1), None);
    assert_eq!(budget(&gateway, &s4, "search", tool_only, HOUR).await, refused(BudgetExceeded::ToolCalls { limit: 1 }));
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn failures_in_a_row_refuse_the_tool_until_a_success_and_are_reported_before_each_call() {
    let prefix = Prefix::new(&redis_url());
    let gateway = admission(&prefix, true);
    let (s1, two) = (session("s1"), limits(None, None, Some(2)));
    for failures_before in 0..2 {
        assert_eq!(budget(&gateway, &s1, "search", two, HOUR).await, Ok(Admitted { failures_before }));
        gateway.record(&s1, "search", true, HOUR).await.unwrap();
    }
    let stopped = refused(BudgetExceeded::ConsecutiveFailures { limit: 2 });
    assert_eq!(budget(&gateway, &s1, "search", two, HOUR).await, stopped);
    assert_eq!(budget(&gateway, &s1, "fetch", two, HOUR).await, Ok(Admitted { failures_before: 0 }), "another tool");
    assert!(budget(&gateway, &session("s2"), "search", two, HOUR).await.is_ok(), "another session");
    gateway.record(&s1, "search", false, HOUR).await.unwrap();
    assert_eq!(budget(&gateway, &s1, "search", two, HOUR).await, Ok(Admitted { failures_before: 0 }));
    gateway.record(&s1, "search", true, HOUR).await.unwrap();
    assert_eq!(budget(&gateway, &s1, "search", two, HOUR).await, Ok(Admitted { failures_before: 1 }));
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn an_empty_session_is_never_limited_nor_stored() {
    let prefix = Prefix::new(&redis_url());
    let gateway = admission(&prefix, true);
    let none = limits(Some(0), Some(0), Some(0));
    for _ in 0..3 {
        assert_eq!(budget(&gateway, &session(""), "search", none, HOUR).await, Ok(Admitted::default()));
        gateway.record(&session(""), "search", true, HOUR).await.unwrap();
    }
    assert_eq!(prefix.keys(), Vec::<String>::new());
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn an_idle_session_expires_and_a_late_record_does_not_bring_it_back() {
    let prefix = Prefix::new(&redis_url());
    let gateway = admission(&prefix, true);
    // An idle TTL of 2 s, and steps of 1.2 s: a refresh is seen 0.8 s before the key would expire without it, a
    // margin no scheduling on a loaded machine reaches.
    let (s1, one, ttl) = (session("s1"), limits(Some(1), None, None), Duration::from_secs(2));
    let step = Duration::from_millis(1200);
    assert!(budget(&gateway, &s1, "search", one, ttl).await.is_ok());
    let left = pttl(&prefix, "budget").expect("a budget key");
    assert!((1..=2000).contains(&left), "{left}");
    tokio::time::sleep(step).await;
    assert!(budget(&gateway, &s1, "search", one, ttl).await.is_err());
    tokio::time::sleep(step).await;
    // 2.4 s after the first call: alive only because the refused call at 1.2 s marked it seen.
    assert!(budget(&gateway, &s1, "search", one, ttl).await.is_err(), "a refused call still marks it seen");
    let waiting = Instant::now();
    while !prefix.keys().is_empty() {
        assert!(waiting.elapsed() < Duration::from_secs(10), "unseen for its idle TTL, yet kept");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    gateway.record(&s1, "search", true, ttl).await.unwrap();
    assert_eq!(prefix.keys(), Vec::<String>::new(), "recording does not recreate it");
    assert_eq!(budget(&gateway, &s1, "search", one, ttl).await, Ok(Admitted::default()), "it starts afresh");
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn budget_and_rate_in_one_call_budget_first() {
    let prefix = Prefix::new(&redis_url());
    let gateway = admission(&prefix, true);
    let (tool, one) = (search(), rule("1/m", 0));
    let s1 = session("s1");
    let both = |max_calls| {
        let ask =
            BudgetAsk { session: &s1, tool: "search", limits: limits(Some(max_calls), None, None), idle_ttl: HOUR };
        gateway.admit(Some(ask), Some(RateAsk { tool: &tool, rule: &one, key: "" }))
    };
    assert_eq!(both(0).await.unwrap(), refused(BudgetExceeded::Calls { limit: 0 }));
    assert_eq!(both(5).await.unwrap(), Ok(Admitted::default()), "the budget refusal took no rate slot");
    assert!(retry_after(both(5).await.unwrap()) > Duration::from_secs(50));
    assert_eq!(both(2).await.unwrap(), refused(BudgetExceeded::Calls { limit: 2 }), "the rate refusal counted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn two_gateways_share_limits_exactly_under_concurrent_calls() {
    let prefix = Prefix::new(&redis_url());
    let gateways = [Arc::new(admission(&prefix, true)), Arc::new(admission(&prefix, true))];
    let tasks: Vec<_> = (0..80)
        .map(|i| {
            let gateway = Arc::clone(&gateways[i % 2]);
            tokio::spawn(async move {
                let (tool, twenty) = (search(), rule("20/m", 0));
                let rated = gateway.admit(None, Some(RateAsk { tool: &tool, rule: &twenty, key: "" })).await;
                let s1 = session("s1");
                let ask =
                    BudgetAsk { session: &s1, tool: "fetch", limits: limits(Some(7), None, None), idle_ttl: HOUR };
                let budgeted = gateway.admit(Some(ask), None).await;
                (rated.unwrap().is_ok(), budgeted.unwrap().is_ok())
            })
        })
        .collect();
    let (mut rated, mut budgeted) = (0, 0);
    for task in tasks {
        let (rate_ok, budget_ok) = task.await.unwrap();
        rated += usize::from(rate_ok);
        budgeted += usize::from(budget_ok);
    }
    assert_eq!((rated, budgeted), (20, 7));
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn the_precheck_refuses_a_refused_key_without_asking_redis() {
    let mut private = PrivateRedis::start();
    let gateway = SharedAdmission::new(Redis::new(settings_at(&private.url())).unwrap());
    let one = rule("1/m", 0);
    assert!(rate(&gateway, &search(), &one, "").await.is_ok());
    let first = retry_after(rate(&gateway, &search(), &one, "").await);
    assert_eq!(gateway.precheck_len(), 1);
    private.stop();
    let local = retry_after(rate(&gateway, &search(), &one, "").await);
    assert!(local <= first && local > Duration::from_secs(50), "{local:?} after {first:?}");
    let other_key = gateway.admit(None, Some(RateAsk { tool: &search(), rule: &one, key: "b" })).await;
    assert!(matches!(other_key, Err(ClusterError::Unavailable { .. })), "{other_key:?}");
    let s1 = session("s1");
    let ask = BudgetAsk { session: &s1, tool: "search", limits: BudgetLimits::default(), idle_ttl: HOUR };
    let with_budget = gateway.admit(Some(ask), Some(RateAsk { tool: &search(), rule: &one, key: "" })).await;
    assert!(matches!(with_budget, Err(ClusterError::Unavailable { .. })), "a budget must be counted: {with_budget:?}");
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn the_precheck_is_skipped_when_a_budget_is_asked_or_it_is_off() {
    let prefix = Prefix::new(&redis_url());
    let (on, off, one) = (admission(&prefix, true), admission(&prefix, false), rule("1/m", 0));
    let delete_rate_keys = || {
        let keys: Vec<String> = prefix.keys().into_iter().filter(|key| key.contains(":rate:")).collect();
        let _: () = redis::cmd("DEL").arg(keys).query(&mut connect(&redis_url())).unwrap();
    };
    assert!(rate(&on, &search(), &one, "").await.is_ok());
    assert!(rate(&on, &search(), &one, "").await.is_err());
    assert!(rate(&off, &search(), &one, "").await.is_err());
    delete_rate_keys();
    assert!(rate(&on, &search(), &one, "").await.is_err(), "refused from memory: Redis would admit a fresh key");
    assert_eq!(off.precheck_len(), 0);
    assert!(rate(&off, &search(), &one, "").await.is_ok(), "no pre-check: Redis admitted the fresh key");
    delete_rate_keys();
    let s1 = session("s1");
    let ask = BudgetAsk { session: &s1, tool: "search", limits: BudgetLimits::default(), idle_ttl: HOUR };
    let with_budget = on.admit(Some(ask), Some(RateAsk { tool: &search(), rule: &one, key: "" })).await.unwrap();
    assert_eq!(with_budget, Ok(Admitted::default()), "with a budget asked, Redis decides");
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn evict_idle_drops_precheck_entries_once_their_refusal_ends() {
    let prefix = Prefix::new(&redis_url());
    let gateway = admission(&prefix, true);
    // 1/s: the refusal lasts about a second, far longer than the steps below take on a loaded machine.
    let ten = rule("1/s", 1);
    assert!(rate(&gateway, &search(), &ten, "").await.is_ok());
    let wait = retry_after(rate(&gateway, &search(), &ten, "").await);
    gateway.evict_idle();
    assert_eq!(gateway.precheck_len(), 1);
    tokio::time::sleep(wait).await;
    gateway.evict_idle();
    assert_eq!(gateway.precheck_len(), 0);
    assert!(rate(&gateway, &search(), &ten, "").await.is_ok());
}

#[tokio::test]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn nothing_asked_needs_no_redis_and_anything_asked_fails_when_redis_is_down() {
    // "Redis" here is a port that counts the connections it is asked for and closes each at once.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("redis://{}", listener.local_addr().unwrap());
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&asked);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(stream);
        }
    });
    let gateway = SharedAdmission::new(Redis::new(settings_at(&url)).unwrap());
    assert_eq!(gateway.admit(None, None).await.unwrap(), Ok(Admitted::default()));
    let no_session =
        BudgetAsk { session: &session(""), tool: "search", limits: limits(Some(0), None, None), idle_ttl: HOUR };
    assert_eq!(gateway.admit(Some(no_session), None).await.unwrap(), Ok(Admitted::default()));
    gateway.record(&session(""), "search", true, HOUR).await.unwrap();
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 0, "nothing asked: Redis was never dialled");
    let rated = gateway.admit(None, Some(RateAsk { tool: &search(), rule: &rule("1/s", 0), key: "" })).await;
    assert!(matches!(rated, Err(ClusterError::Unavailable { .. })), "{rated:?}");
    // The dial may time out before this test's accept loop gets to run on a loaded machine: wait for it.
    let dialled = async || asked.load(std::sync::atomic::Ordering::SeqCst) > 0;
    support::eventually(Duration::from_secs(10), "asking for a rate dials it", dialled).await;
    let s1 = session("s1");
    let ask = BudgetAsk { session: &s1, tool: "search", limits: BudgetLimits::default(), idle_ttl: HOUR };
    assert!(matches!(gateway.admit(Some(ask), None).await, Err(ClusterError::Unavailable { .. })));
    assert!(matches!(gateway.record(&s1, "search", true, HOUR).await, Err(ClusterError::Unavailable { .. })));
}
