//! Hardening under load, against the real `toolgate serve` process that cargo builds beside this bench:
//! - **attack**: 8 concurrent worst-case calls (a recursive `anyOf` tree, a lookaround `pattern` on 80,000
//!   characters, a 1 MiB unknown tool name among 10,000 tools) while a health check and a valid call to another
//!   tool are probed; their p99 should stay under 50 ms. Also reports the gateway's RSS and CPU.
//! - **round 2** (issue 47): 8 callers sending `ExecuteBatch`es of 128 calls to a 3,000-hop `$ref` chain, 500
//!   strings on a catastrophic `pattern`, and a deny-list attack inside `not`, beside the same probes; run it
//!   against an older build with `TOOLGATE_BIN` for the before figures.
//! - **overload**: four times the sustainable load offered open-loop to a gateway with a cap on calls in flight;
//!   the admitted calls' p99 should stay within 2× of the unloaded p99 and health should answer throughout.
//!
//! Prints one line per figure and one JSON line per scenario. Exits non-zero on a wrong answer (an attack call
//! not refused as an ERROR message, a failed valid call or health check, a call failing otherwise than shed);
//! the latency targets are reported, not asserted. Without `--bench` (as under `cargo test --benches`) it runs
//! a short smoke pass. Run: `cargo bench --bench hardening` (`HARDENING_SECONDS=30` for longer runs).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "hardening_support/attack.rs"]
mod attack;
#[path = "hardening_support/overload.rs"]
mod overload;
#[path = "../tests/it/support/ports.rs"]
mod ports;
#[path = "hardening_support/round2.rs"]
mod round2;
#[path = "hardening_support/served.rs"]
mod served;

use served::Served;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let seconds = std::env::var("HARDENING_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(15);
    let duration = if smoke { Duration::from_secs(2) } else { Duration::from_secs(seconds) };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    let failures = runtime.block_on(async {
        let mut failures = run_attack(smoke, duration).await;
        failures.extend(run_round2(duration).await);
        failures.extend(run_overload(duration).await);
        failures
    });
    if failures.is_empty() {
        return ExitCode::SUCCESS;
    }
    for failure in &failures {
        eprintln!("FAILED: {failure}");
    }
    ExitCode::FAILURE
}

async fn run_attack(smoke: bool, duration: Duration) -> Vec<String> {
    let gateway = Served::start("").await;
    let fillers = if smoke { 200 } else { 10_000 };
    attack::register(&gateway, fillers).await;
    let outcome = attack::run(&gateway, duration).await;
    println!("attack: {} attackers, {fillers} other tools, {duration:?}", attack::ATTACKERS);
    println!("  health check  {}", outcome.health.summary());
    println!("  valid call    {}", outcome.valid.summary());
    println!("  attack calls  {}", outcome.attacks.summary());
    println!(
        "  gateway RSS {:.1} MiB before, peak {:.1} MiB; CPU {:.2} s over the run",
        outcome.rss_before_mib,
        outcome.rss_peak_mib,
        outcome.gateway_cpu.as_secs_f64()
    );
    let met = outcome.health.ms(99.0) < 50.0 && outcome.valid.ms(99.0) < 50.0;
    println!("  target p99 < 50 ms for both: {}", if met { "met" } else { "MISSED" });
    let json = serde_json::json!({"scenario": "attack", "health_p99_ms": outcome.health.ms(99.0),
        "valid_p99_ms": outcome.valid.ms(99.0), "attack_calls": outcome.attacks.0.len(),
        "attack_p50_ms": outcome.attacks.ms(50.0), "rss_peak_mib": outcome.rss_peak_mib,
        "rss_before_mib": outcome.rss_before_mib, "gateway_cpu_s": outcome.gateway_cpu.as_secs_f64()});
    println!("{json}");
    let mut failures = outcome.failures;
    if outcome.attacks.0.is_empty() {
        failures.push("no attack call was answered".into());
    }
    failures
}

async fn run_round2(duration: Duration) -> Vec<String> {
    let gateway = Served::start("").await;
    let registered = round2::register(&gateway).await;
    let outcome = round2::run(&gateway, registered, duration).await;
    round2::report(outcome, duration)
}

async fn run_overload(duration: Duration) -> Vec<String> {
    let gateway = Served::start(&overload::config()).await;
    overload::register(&gateway).await;
    let outcome = overload::run(&gateway, duration).await;
    let ratio = outcome.admitted.ms(99.0) / outcome.unloaded.ms(99.0).max(f64::MIN_POSITIVE);
    println!("overload: cap {} in flight, a {} ms tool, {duration:?} at 4x", overload::CAP, overload::TOOL_MS);
    println!("  unloaded      {}", outcome.unloaded.summary());
    println!("  sustainable   {:.0} calls/s; offered {:.0} calls/s", outcome.sustainable_per_s, outcome.offered_per_s);
    println!("  admitted      {}", outcome.admitted.summary());
    println!("  shed          {} ({:.0}% of sent)", outcome.shed, shed_share(&outcome));
    println!("  health check  {}", outcome.health.summary());
    println!(
        "  admitted p99 / unloaded p99 = {ratio:.2} (target <= 2): {}",
        if ratio <= 2.0 { "met" } else { "MISSED" }
    );
    let json = serde_json::json!({"scenario": "overload", "unloaded_p99_ms": outcome.unloaded.ms(99.0),
        "admitted_p99_ms": outcome.admitted.ms(99.0), "ratio": ratio, "sustainable_per_s": outcome.sustainable_per_s,
        "offered_per_s": outcome.offered_per_s, "admitted": outcome.admitted.0.len(), "shed": outcome.shed,
        "health_p99_ms": outcome.health.ms(99.0), "health_max_ms": outcome.health.ms(100.0)});
    println!("{json}");
    let mut failures = outcome.failures;
    if outcome.other_errors > 0 {
        failures.push(format!("{} calls failed otherwise than shed", outcome.other_errors));
    }
    if outcome.shed == 0 {
        failures.push("four times the sustainable load shed no call".into());
    }
    failures
}

fn shed_share(outcome: &overload::Overload) -> f64 {
    let sent = outcome.shed + outcome.admitted.0.len() as u64 + outcome.other_errors;
    100.0 * outcome.shed as f64 / sent.max(1) as f64
}
