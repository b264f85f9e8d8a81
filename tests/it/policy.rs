//! Rate limits, concurrency caps and session budgets over real gRPC, with time moved by hand on a fake clock.

use crate::support::backends::{Runtime, start_runtime};
use crate::support::{Gateway, city_schema, kind_of, start_gateway_with_clock, status_of, temp_config};
use serde_json::{Value, json};
use std::time::Duration;
use toolgate::pb::v1::{self as pb, ErrorKind as K, ToolStatus};
use toolgate::policy::Clock;

fn tool(name: &str, target: &str, extra: Value) -> Value {
    let mut spec = json!({"name": name, "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}}});
    spec.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    spec
}

fn ctx(tenant: &str, user: &str, session: &str) -> pb::CallContext {
    pb::CallContext { tenant: tenant.into(), user_id: user.into(), session_id: session.into(), ..Default::default() }
}

/// Calls `name` `n` times and returns how many succeeded.
async fn successes(gw: &mut Gateway, name: &str, context: &pb::CallContext, n: usize) -> usize {
    let mut ok = 0;
    for _ in 0..n {
        ok += usize::from(status_of(&gw.call_as(name, "{}", context.clone()).await) == ToolStatus::Success);
    }
    ok
}

#[tokio::test]
async fn a_rate_limit_admits_exactly_its_rate_and_says_when_to_retry() {
    let (_dir, config) = temp_config();
    let clock = Clock::fake();
    let mut gw = start_gateway_with_clock(config, clock.clone()).await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(tool("search", &target, json!({"limits": {"rate": "10/s"}}))).await.unwrap();
    let anyone = ctx("", "", "");

    assert_eq!(successes(&mut gw, "search", &anyone, 10).await, 10, "the whole burst at once");
    let limited = gw.call_as("search", "{}", anyone.clone()).await;
    assert_eq!(kind_of(&limited), K::RateLimited, "{limited:?}");
    let error = limited.error.clone().unwrap();
    assert_eq!((error.retryable, error.model_fixable, error.retry_after_ms), (true, false, 100));
    assert_eq!(limited.content, "Error: search is rate limited. Try again in 0.1 seconds, or go on without it.");

    clock.advance(Duration::from_millis(99));
    let early = gw.call_as("search", "{}", anyone.clone()).await;
    assert_eq!(early.error.unwrap().retry_after_ms, 1, "1 ms short of the next slot");
    clock.advance(Duration::from_millis(1));
    assert_eq!(successes(&mut gw, "search", &anyone, 2).await, 1, "exactly one slot came free");
    clock.advance(Duration::from_secs(1));
    assert_eq!(successes(&mut gw, "search", &anyone, 11).await, 10, "a second later the burst is back");
}

#[tokio::test]
async fn the_key_dimensions_are_kept_apart() {
    let (_dir, config) = temp_config();
    let clock = Clock::fake();
    let mut gw = start_gateway_with_clock(config, clock.clone()).await;
    let target = start_runtime(Runtime::default()).await;
    for (name, key) in
        [("per_user", "USER"), ("per_tenant", "TENANT"), ("per_session", "SESSION"), ("per_tool", "TOOL")]
    {
        gw.register(tool(name, &target, json!({"limits": {"rate": "2/m", "key": key}}))).await.unwrap();
    }
    let (a, b) = (ctx("t1", "ann", "s1"), ctx("t1", "bob", "s2"));
    let other_tenant = ctx("t2", "ann", "s1");

    assert_eq!(successes(&mut gw, "per_user", &a, 3).await, 2);
    assert_eq!(successes(&mut gw, "per_user", &b, 3).await, 2, "bob has his own budget");
    let limited = gw.call_as("per_user", "{}", a.clone()).await;
    assert_eq!(limited.error.unwrap().retry_after_ms, 30_000, "2/m frees a slot every 30 s");

    assert_eq!(successes(&mut gw, "per_tenant", &a, 3).await, 2);
    assert_eq!(successes(&mut gw, "per_tenant", &b, 1).await, 0, "same tenant, same bucket");
    assert_eq!(successes(&mut gw, "per_tenant", &other_tenant, 3).await, 2);

    assert_eq!(successes(&mut gw, "per_session", &a, 3).await, 2);
    assert_eq!(successes(&mut gw, "per_session", &b, 3).await, 2, "another session");

    assert_eq!(successes(&mut gw, "per_tool", &a, 1).await, 1);
    assert_eq!(successes(&mut gw, "per_tool", &other_tenant, 3).await, 1, "one bucket for every caller");

    clock.advance(Duration::from_secs(30));
    assert_eq!(successes(&mut gw, "per_user", &a, 2).await, 1, "30 s later one slot is back");
}

#[tokio::test]
async fn a_burst_then_the_steady_rate() {
    let (_dir, config) = temp_config();
    let clock = Clock::fake();
    let mut gw = start_gateway_with_clock(config, clock.clone()).await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(tool("bursty", &target, json!({"limits": {"rate": "1/s", "burst": 3}}))).await.unwrap();
    let anyone = ctx("", "", "");
    assert_eq!(successes(&mut gw, "bursty", &anyone, 4).await, 3);
    let limited = gw.call_as("bursty", "{}", anyone.clone()).await;
    assert_eq!(limited.error.unwrap().retry_after_ms, 1000);
    let bad = gw.register(tool("bad", &target, json!({"limits": {"rate": "ten per second"}}))).await.unwrap_err();
    assert!(bad.message().contains("limits.rate"), "{}", bad.message());
}

#[tokio::test]
async fn beyond_its_concurrency_cap_a_call_waits_until_its_deadline() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway_with_clock(config, Clock::real()).await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    let schema = json!({"type": "object", "properties": {"ms": {"type": "integer"}}});
    let spec = json!({"name": "sleep", "input_schema": schema, "limits": {"max_concurrency": 2},
        "backend": {"grpc": {"target": target}}});
    gw.register(spec).await.unwrap();
    // Two calls hold both slots for 5 s: far longer than anything below takes, however loaded the machine.
    let slow: Vec<_> = (0..2)
        .map(|i| {
            let mut client = gw.gateway.clone();
            tokio::spawn(async move {
                let call =
                    pb::ToolCall { id: format!("slow{i}"), name: "sleep".into(), arguments: r#"{"ms": 5000}"#.into() };
                client
                    .execute(pb::ExecuteRequest { call: Some(call), ..Default::default() })
                    .await
                    .unwrap()
                    .into_inner()
            })
        })
        .collect();
    // Both reached the tool: both slots are taken.
    let waiting = std::time::Instant::now();
    while runtime.calls.load(std::sync::atomic::Ordering::SeqCst) < 2 {
        assert!(waiting.elapsed() < Duration::from_secs(30), "the slow calls never reached the tool");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let call = pb::ToolCall { id: "late".into(), name: "sleep".into(), arguments: r#"{"ms": 0}"#.into() };
    let mut request = tonic::Request::new(pb::ExecuteRequest { call: Some(call.clone()), ..Default::default() });
    request.set_timeout(Duration::from_millis(400));
    let sent = std::time::Instant::now();
    let refused = gw.gateway.execute(request).await.unwrap().into_inner().message.unwrap();
    let waited = sent.elapsed();
    assert_eq!(kind_of(&refused), K::Unavailable, "{refused:?}");
    assert!(refused.error.as_ref().unwrap().retryable);
    assert_eq!(refused.content, "Error: sleep is busy right now. You may try again later.");
    // It waited for a slot until (about) its deadline, rather than being refused at once; and never ran.
    assert!(waited >= Duration::from_millis(250), "refused after {waited:?}, not at its deadline");
    assert_eq!(runtime.calls.load(std::sync::atomic::Ordering::SeqCst), 2, "the refused call never reached the tool");

    let mut patient = tonic::Request::new(pb::ExecuteRequest { call: Some(call), ..Default::default() });
    patient.set_timeout(Duration::from_secs(30));
    let waited = gw.gateway.execute(patient).await.unwrap().into_inner().message.unwrap();
    assert_eq!(status_of(&waited), ToolStatus::Success, "it got a slot once one was freed: {waited:?}");
    for task in slow {
        assert_eq!(status_of(&task.await.unwrap().message.unwrap()), ToolStatus::Success);
    }
}

#[tokio::test]
async fn behind_its_cap_a_call_that_could_no_longer_finish_is_refused_without_running() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway_with_clock(config, Clock::real()).await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    let schema = json!({"type": "object", "properties": {"ms": {"type": "integer"}}});
    let spec = json!({"name": "sleep", "input_schema": schema, "limits": {"max_concurrency": 1},
        "backend": {"grpc": {"target": target}}});
    gw.register(spec).await.unwrap();
    let call = |id: &str, timeout: Option<Duration>| {
        let (mut client, id) = (gw.gateway.clone(), id.to_owned());
        tokio::spawn(async move {
            let call = pb::ToolCall { id, name: "sleep".into(), arguments: r#"{"ms": 2000}"#.into() };
            let mut request = tonic::Request::new(pb::ExecuteRequest { call: Some(call), ..Default::default() });
            if let Some(timeout) = timeout {
                request.set_timeout(timeout);
            }
            client.execute(request).await.unwrap().into_inner().message.unwrap()
        })
    };
    // The gateway learns how long the tool takes: 2 s.
    assert_eq!(status_of(&call("pace", None).await.unwrap()), ToolStatus::Success);
    let ran = || runtime.calls.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(ran(), 1);

    // Four calls of 2 s at once, each with 5 s to answer, one slot: at most two can end in time. Those with a
    // call id run as recorded calls, the others not.
    let answers =
        futures::future::join_all(["d16-0", "", "d16-2", ""].map(|id| call(id, Some(Duration::from_secs(5))))).await;
    let answers: Vec<_> = answers.into_iter().map(Result::unwrap).collect();
    let succeeded = answers.iter().filter(|m| status_of(m) == ToolStatus::Success).count();
    // Every call that started ended in time; the others never reached the tool and were told it is busy.
    assert_eq!(ran(), 1 + succeeded, "a call reached the tool and did not succeed: {answers:#?}");
    assert!(succeeded >= 1, "{answers:#?}");
    for refused in answers.iter().filter(|m| status_of(m) != ToolStatus::Success) {
        assert_eq!(kind_of(refused), K::Unavailable, "{refused:?}");
        assert!(refused.error.as_ref().unwrap().retryable, "{refused:?}");
        assert_eq!(refused.content, "Error: sleep is busy right now. You may try again later.");
    }
}

#[tokio::test]
async fn a_session_stops_at_its_call_budget() {
    let (_dir, mut config) = temp_config();
    config.policy.budgets.max_calls = Some(3);
    let clock = Clock::fake();
    let idle_ttl = config.policy.session_idle_ttl;
    let mut gw = start_gateway_with_clock(config, clock.clone()).await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(tool("a", &target, json!({}))).await.unwrap();
    gw.register(tool("b", &target, json!({"budget": {"max_calls": 1}}))).await.unwrap();
    let (s1, s2, none) = (ctx("t", "u", "s1"), ctx("t", "u", "s2"), ctx("t", "u", ""));

    assert_eq!(successes(&mut gw, "a", &s1, 2).await, 2);
    assert_eq!(successes(&mut gw, "b", &s1, 1).await, 1);
    let spent = gw.call_as("a", "{}", s1.clone()).await;
    assert_eq!(kind_of(&spent), K::BudgetExceeded, "{spent:?}");
    assert_eq!(
        spent.content,
        "Error: This session has used its budget of 3 tool calls. Stop calling a and answer with the information you already have."
    );
    let error = spent.error.unwrap();
    assert!(!error.retryable && !error.model_fixable);

    assert_eq!(successes(&mut gw, "b", &s2, 2).await, 1, "a tool's own budget of 1 call per session");
    assert_eq!(successes(&mut gw, "a", &s2, 2).await, 2, "another session, its own budget");
    assert_eq!(successes(&mut gw, "a", &none, 5).await, 5, "no session, no session budget");

    clock.advance(idle_ttl + Duration::from_secs(1));
    assert_eq!(successes(&mut gw, "a", &s1, 3).await, 3, "an idle session expires and starts over");
}

#[tokio::test]
async fn consecutive_failures_stop_the_retry_loop() {
    let (_dir, mut config) = temp_config();
    config.policy.budgets.max_consecutive_failures = Some(3);
    let mut gw = start_gateway_with_clock(config, Clock::fake()).await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(json!({"name": "weather", "input_schema": city_schema(), "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();
    gw.register(tool("fail", &target, json!({"budget": {"max_consecutive_failures": 1}}))).await.unwrap();
    let s = ctx("t", "u", "s1");
    for _ in 0..2 {
        assert_eq!(kind_of(&gw.call_as("weather", "{}", s.clone()).await), K::InvalidArguments);
    }
    assert_eq!(status_of(&gw.call_as("weather", r#"{"city": "Oslo"}"#, s.clone()).await), ToolStatus::Success);
    for _ in 0..3 {
        assert_eq!(kind_of(&gw.call_as("weather", "{}", s.clone()).await), K::InvalidArguments, "a success reset");
    }
    let stopped = gw.call_as("weather", r#"{"city": "Oslo"}"#, s.clone()).await;
    assert_eq!(kind_of(&stopped), K::BudgetExceeded, "{stopped:?}");
    assert!(stopped.content.contains("weather has failed 3 times in a row in this session."), "{}", stopped.content);

    assert_eq!(kind_of(&gw.call_as("fail", "{}", s.clone()).await), K::ToolError);
    assert_eq!(kind_of(&gw.call_as("fail", "{}", s.clone()).await), K::BudgetExceeded, "its own limit of 1");
    let other = ctx("t", "u", "s2");
    assert_eq!(status_of(&gw.call_as("weather", r#"{"city": "Oslo"}"#, other).await), ToolStatus::Success);
}
