//! End-to-end load: one small forecast call (203 bytes of arguments, a schema of six properties) sent three ways,
//! straight to a ToolRuntime `Invoke` ("direct"), through the gateway's `Execute` with everything on ("gateway"),
//! through the gateway with arguments it must repair on every call ("repair"), and through a second gateway that
//! is the first with its web console on ("console", whose cost to the call path is console/gateway).
//!
//! One process on 127.0.0.1 holds the echo ToolRuntime, the real gateway (`toolgate::run`, a temp data dir, the
//! tool registered), a minimal OTLP/gRPC sink (`e2e_support/otlp_sink.rs`) and the load client. "Everything on":
//! schema validation, `user_id` injected from the call context, a rate limit per user and session budgets that
//! never refuse but are checked and counted on every call, and spans and metrics exported over OTLP every second.
//! Each of 64 load workers is its own agent (user, session) and all share one HTTP/2 channel per server.
//!
//! After a warm-up, `E2E_ROUNDS` rounds (default 5) each run every mode once at concurrency 1 (`E2E_C1_REQUESTS`
//! calls, default 5,000) and once at concurrency 64 (`E2E_REQUESTS`, default 60,000), the modes' order rotating
//! each round so drift falls on all of them alike. Latencies are pooled across rounds for p50/p99; throughput, and
//! the process's CPU time per call, are the median of the rounds'. Prints a table, one JSON line per mode, one JSON
//! line of ratios to direct, what the sink received, and the machine with the share of its cores other processes
//! used meanwhile (a build beside the bench skews the rounds it overlaps). Exits non-zero if any call failed or was
//! not a SUCCESS, or no span reached the sink.
//! Without `--bench` (as under `cargo test --benches`) it runs a short smoke pass instead.
//!
//! Run: `cargo bench --bench e2e` (`E2E_ROUNDS=9 E2E_REQUESTS=50000 cargo bench --bench e2e`; `E2E_OTEL=off` runs the
//! gateway without telemetry, to tell its share; `E2E_IDEMPOTENCY=off` without the call-id record, `=<n>` with a record
//! of at most n ids; `E2E_CONSOLE=off` starts the "console" mode's gateway without its console, an A/A run whose
//! console/gateway ratios are the noise floor; `E2E_CONSOLE=unrecorded` starts it without its console and without
//! the call-id record, so console/gateway is the record's cost in one run; `E2E_ONLY=gateway` runs one mode alone,
//! to profile it).

/// The shipped binary's allocator (see `src/main.rs`), so the gateway here costs what it costs there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "e2e_support/cpu.rs"]
mod cpu;
#[path = "e2e_support/load.rs"]
mod load;
#[path = "e2e_support/otlp_sink.rs"]
mod otlp_sink;
#[path = "e2e_support/report.rs"]
mod report;
#[path = "e2e_support/stack.rs"]
mod stack;
#[path = "e2e_support/workload.rs"]
mod workload;

use cpu::Snapshot;
use load::{Summary, Tally, drive};
use otlp_sink::{Received, Sink};
use stack::{Gateway, Second, connect, init_logging, start_runtime};
use std::process::ExitCode;
use workload::{Caller, Mode, preflight};

/// Calls in flight in the concurrent runs: one per load worker.
const CONCURRENCY: usize = 64;

/// How much load to apply.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub rounds: usize,
    pub c1_requests: usize,
    pub c64_requests: usize,
    /// Calls of each mode at concurrency 64 before the first round; counted, not measured.
    pub warmup: usize,
    pub smoke: bool,
}

fn env_count(name: &str, default: usize) -> Result<usize, String> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(text) => match text.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("{name} must be a positive integer, got {text:?}")),
        },
    }
}

fn plan() -> Result<Plan, String> {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let (rounds, c1, c64, warmup) = if smoke { (1, 40, 100, 20) } else { (5, 5_000, 60_000, 2_000) };
    if let Ok(only) = std::env::var("E2E_ONLY")
        && !Mode::ALL.iter().any(|mode| mode.name() == only)
    {
        return Err(format!("E2E_ONLY must name a mode (direct, gateway, repair or console), got {only:?}"));
    }
    Second::from_env()?;
    Ok(Plan {
        rounds: env_count("E2E_ROUNDS", rounds)?,
        c1_requests: env_count("E2E_C1_REQUESTS", c1)?,
        c64_requests: env_count("E2E_REQUESTS", c64)?,
        warmup,
        smoke,
    })
}

/// What a whole run measured, and how the gateway stopped.
pub struct Outcome {
    pub summaries: Vec<Summary>,
    /// The share of the cores other processes used, over the warm-up and rounds, then per round.
    pub others_share: Option<f64>,
    pub others_share_rounds: Vec<Option<f64>>,
    pub received: Received,
    pub stopped: Result<(), String>,
}

/// The modes of round `round`, rotated so that each mode in turn runs first; only the one `E2E_ONLY` names, if set.
fn order(round: usize) -> Vec<Mode> {
    let mut modes = Mode::ALL;
    modes.rotate_left(round % Mode::ALL.len());
    let only = std::env::var("E2E_ONLY").ok();
    modes.into_iter().filter(|mode| only.as_deref().is_none_or(|name| name == mode.name())).collect()
}

/// What the warm-up and rounds measured.
struct Measured {
    tallies: [Tally; 4],
    others_share: Option<f64>,
    others_share_rounds: Vec<Option<f64>>,
}

/// The warm-up, then the rounds: per round every mode at c=1, then every mode at c=64.
async fn measure(plan: Plan, callers: &[Caller]) -> Measured {
    let (all, cores) = (Snapshot::now(), cpu::cores());
    let mut tallies: [Tally; 4] = Default::default();
    let mut others_share_rounds = Vec::new();
    for mode in order(0) {
        tallies[mode as usize].count(&mut drive(mode, plan.warmup, callers).await);
    }
    for round in 0..plan.rounds {
        let started = Snapshot::now();
        for mode in order(round) {
            tallies[mode as usize].add_c1(drive(mode, plan.c1_requests, &callers[..1]).await);
        }
        let mut throughputs = Vec::new();
        for mode in order(round) {
            let run = drive(mode, plan.c64_requests, callers).await;
            throughputs.push(format!("{} {:.0}/s", mode.name(), run.throughput()));
            tallies[mode as usize].add_c64(run);
        }
        let others = started.others_share(cores);
        others_share_rounds.push(others);
        let others = others.map_or("?".into(), |share| format!("{:.0}%", share * 100.0));
        let (round, rounds, throughputs) = (round + 1, plan.rounds, throughputs.join(", "));
        eprintln!(
            "e2e: round {round}/{rounds} at c={CONCURRENCY}: {throughputs}; other processes used {others} of the cores"
        );
    }
    Measured { tallies, others_share: all.others_share(cores), others_share_rounds }
}

/// Starts everything, checks one call of each mode in depth, measures, then stops the gateway so that its last
/// spans and metrics reach the sink before it is read.
async fn run(plan: Plan) -> Result<Outcome, String> {
    let sink = Sink::start().await;
    let runtime = start_runtime().await;
    let second = Second::from_env()?;
    let gateway = Gateway::start(runtime, &sink.endpoint, None).await;
    let console = Gateway::start(runtime, &sink.endpoint, Some(second)).await;
    let runtime_channel = connect(runtime).await;
    let (gateway_channel, console_channel) = (gateway.channel.clone(), console.channel.clone());
    let callers: Vec<Caller> = (0..CONCURRENCY)
        .map(|w| Caller::new(runtime_channel.clone(), gateway_channel.clone(), console_channel.clone(), w))
        .collect();
    preflight(&mut callers[0].clone(), 0).await.map_err(|e| format!("the preflight call failed: {e}"))?;
    let Measured { tallies, others_share, others_share_rounds } = measure(plan, &callers).await;
    drop(callers);
    let stopped = gateway.stop().await.and(console.stop().await);
    let summaries = Mode::ALL.into_iter().zip(tallies).map(|(mode, tally)| tally.summary(mode)).collect();
    Ok(Outcome { summaries, others_share, others_share_rounds, received: sink.received(), stopped })
}

/// Failure if any call failed, the gateway stopped badly, or no span arrived.
fn verdict(outcome: &Outcome) -> ExitCode {
    let mut ok = true;
    for s in outcome.summaries.iter().filter(|s| s.failures > 0) {
        let first = s.first_failure.as_deref().unwrap_or("?");
        eprintln!("e2e: {} of {} {} calls failed; the first: {first}", s.failures, s.requests, s.mode.name());
        ok = false;
    }
    if let Err(reason) = &outcome.stopped {
        eprintln!("e2e: {reason}");
        ok = false;
    }
    if outcome.received.spans == 0 && !stack::telemetry_off() {
        eprintln!("e2e: the OTLP sink received no span from the gateway");
        ok = false;
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

#[tokio::main]
async fn main() -> ExitCode {
    init_logging();
    let outcome = match plan() {
        Ok(plan) => run(plan).await.map(|outcome| (plan, outcome)),
        Err(reason) => Err(reason),
    };
    match outcome {
        Ok((plan, outcome)) => {
            report::print(plan, CONCURRENCY, &outcome);
            verdict(&outcome)
        }
        Err(reason) => {
            eprintln!("e2e: {reason}");
            ExitCode::FAILURE
        }
    }
}
