//! Micro-benchmarks of the policy checks on their pass path (no limit hit), one call at a time, on a real clock.
//!
//! Run: `cargo bench --bench policy -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use futures::executor::block_on;
use toolgate::policy::{BudgetLimits, Clock, Policy, PolicySettings, RateRule, SessionKey, ToolKey, parse_rate};

fn benches(c: &mut Criterion) {
    let policy = Policy::local(Clock::real(), PolicySettings::default());
    let tool = ToolKey::new("acme", "search");
    let session = SessionKey::new("acme", "session-7f3a");
    let limits =
        BudgetLimits { max_calls: Some(u32::MAX), max_tool_calls: Some(u32::MAX), max_consecutive_failures: Some(3) };
    // The fastest rate governor can time: far above what one core can call, so no check is refused.
    let rule = RateRule { rate: parse_rate("1000000000/s").unwrap(), burst: 0 };

    c.bench_function("budget/admit+record", |b| {
        b.iter(|| {
            policy.budgets.admit(black_box(&session), black_box("search"), &limits).unwrap();
            policy.budgets.record(&session, "search", false);
        })
    });
    c.bench_function("rate/check", |b| {
        b.iter(|| policy.rates.check(black_box(&tool), &rule, black_box("user-42")).unwrap())
    });
    c.bench_function("concurrency/acquire max 0", |b| {
        b.iter(|| block_on(policy.concurrency.acquire(black_box(&tool), 0, None)).unwrap())
    });
    c.bench_function("concurrency/acquire max 64", |b| {
        b.iter(|| block_on(policy.concurrency.acquire(black_box(&tool), 64, None)).unwrap())
    });
    c.bench_function("all/admit+rate+acquire 64+record", |b| {
        b.iter(|| {
            policy.budgets.admit(black_box(&session), "search", &limits).unwrap();
            policy.rates.check(&tool, &rule, "user-42").unwrap();
            let permit = block_on(policy.concurrency.acquire(&tool, 64, None)).unwrap();
            drop(permit);
            policy.budgets.record(&session, "search", false);
        })
    });
    // What was measured is the pass path of checks that do refuse: past the limits, each says so (checked in the
    // smoke pass of `cargo test --benches` too).
    let one = RateRule { rate: parse_rate("1/h").unwrap(), burst: 1 };
    assert!(policy.rates.check(&tool, &one, "smoke").is_ok() && policy.rates.check(&tool, &one, "smoke").is_err());
    let spent = BudgetLimits { max_calls: Some(1), max_tool_calls: None, max_consecutive_failures: None };
    let fresh = SessionKey::new("acme", "smoke");
    assert!(policy.budgets.admit(&fresh, "search", &spent).is_ok());
    policy.budgets.record(&fresh, "search", false);
    assert!(policy.budgets.admit(&fresh, "search", &spent).is_err(), "a spent session budget refuses");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    runtime.block_on(async {
        let permit = policy.concurrency.acquire(&tool, 1, None).await.unwrap();
        let past = Some(tokio::time::Instant::now());
        assert!(policy.concurrency.acquire(&tool, 1, past).await.is_err(), "a full cap refuses at the deadline");
        drop(permit);
    });
}

criterion_group!(policy, benches);
criterion_main!(policy);
