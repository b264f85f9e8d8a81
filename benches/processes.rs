//! The gateway's CPU per call against the tool server's, each in a process of its own. The e2e bench's forecast
//! call (`e2e_support/workload.rs`), each with an id of its own, is sent at concurrency 64 from this process
//! straight to an echo ToolRuntime ("direct"), and through two `toolgate serve` processes configured as the e2e
//! bench's gateway, the same but for the call-id record: "gateway" has it, "unrecorded" does not. With
//! `PROCS_BEFORE=<a toolgate binary>` the second is that build instead, with the record too ("before"): a
//! before-and-after comparison in one run. The modes take turns in rounds whose order rotates, so drift falls on
//! all of them alike.
//!
//! The echo ToolRuntime is this bench's own binary in a child process (`--echo-child`), so that its CPU time is its
//! own; each process's CPU time comes from its CPU-time clock (`clock_getcpuclockid`). The echo server serves one
//! side of a call; the gateway serves the agent and is the tool's client, so its floor is about 2× the echo
//! server's CPU per call.
//! Spans and metrics go to an OTLP sink in this process, as in the e2e bench.
//!
//! Prints, per mode, the median over the rounds of calls a second and of each process's CPU per call (read to the
//! nanosecond from each process's CPU-time clock), then the gateway's CPU per call as a multiple of the echo
//! server's in the direct runs, and the record's share of the gateway's CPU: (gateway − unrecorded) / gateway (with
//! `PROCS_BEFORE`, what this build saves on that one), each as the median of the rounds' own and from the means.
//! Exits non-zero if any call failed. Without `--bench` (as under `cargo test --benches`) it runs a short smoke
//! pass.
//!
//! Run: `cargo bench --bench processes` (`PROCS_ROUNDS`, default 7; `PROCS_REQUESTS`, calls per run, default
//! 24,000; `TOOLGATE_BIN` measures another build of the gateway).

/// The shipped binary's allocator, for the echo child as for the gateway.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[allow(dead_code)]
#[path = "e2e_support/cpu.rs"]
mod cpu;
#[allow(dead_code)]
#[path = "e2e_support/load.rs"]
mod load;
#[allow(dead_code)]
#[path = "e2e_support/otlp_sink.rs"]
mod otlp_sink;
#[path = "../tests/it/support/ports.rs"]
mod ports;
#[allow(dead_code)]
#[path = "hardening_support/served.rs"]
mod served;
#[allow(dead_code)]
#[path = "e2e_support/stack.rs"]
mod stack;
#[allow(dead_code)]
#[path = "e2e_support/workload.rs"]
mod workload;

use load::median;
use serde_json::json;
use std::net::SocketAddr;
use std::process::{ExitCode, Stdio};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use workload::{Caller, Mode};

/// The argument that makes this binary the echo ToolRuntime.
const ECHO_CHILD: &str = "--echo-child";
/// Calls in flight: one per load worker, each its own agent.
const CONCURRENCY: usize = 64;
/// The measured modes: "console" is the unrecorded gateway here.
const MODES: [Mode; 3] = [Mode::Direct, Mode::Gateway, Mode::Console];

fn main() -> ExitCode {
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    if std::env::args().any(|a| a == ECHO_CHILD) {
        return runtime.block_on(echo_child());
    }
    stack::init_logging();
    match plan().and_then(|plan| runtime.block_on(run(plan))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(reason) => {
            eprintln!("processes: {reason}");
            ExitCode::FAILURE
        }
    }
}

/// The echo child: serves until its parent closes its standard input (it has gone), having written its address.
async fn echo_child() -> ExitCode {
    println!("{}", stack::start_runtime().await);
    let _ = tokio::task::spawn_blocking(|| std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new())).await;
    ExitCode::SUCCESS
}

/// Rounds, calls per run and warm-up calls per mode.
#[derive(Clone, Copy)]
struct Plan {
    rounds: usize,
    requests: usize,
    warmup: usize,
}

fn plan() -> Result<Plan, String> {
    let count = |name: &str, default: usize| match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(text) => text
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or(format!("{name} must be a positive integer, got {text:?}")),
    };
    if !std::env::args().any(|a| a == "--bench") {
        return Ok(Plan { rounds: 1, requests: 300, warmup: 64 });
    }
    Ok(Plan { rounds: count("PROCS_ROUNDS", 7)?, requests: count("PROCS_REQUESTS", 24_000)?, warmup: 2_000 })
}

/// The echo ToolRuntime in a child process, killed when dropped.
struct EchoChild {
    child: tokio::process::Child,
    addr: SocketAddr,
}

impl EchoChild {
    async fn start() -> Result<EchoChild, String> {
        let exe = std::env::current_exe().map_err(|e| format!("this bench's own path: {e}"))?;
        let mut child = tokio::process::Command::new(exe)
            .arg(ECHO_CHILD)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("the echo child did not start: {e}"))?;
        let stdout = child.stdout.take().ok_or("the echo child has no stdout")?;
        let line = BufReader::new(stdout).lines().next_line().await.map_err(|e| format!("the echo child: {e}"))?;
        let addr = line.ok_or("the echo child stopped before saying its address")?;
        let addr = addr.parse().map_err(|e| format!("the echo child's address {addr:?}: {e}"))?;
        Ok(EchoChild { child, addr })
    }
}

/// CPU time of each process, read before and after a run.
#[derive(Clone, Copy)]
struct Cpus {
    echo: Duration,
    gateway: Duration,
    unrecorded: Duration,
}

/// The three processes measured.
struct Processes {
    echo: EchoChild,
    gateway: served::Served,
    unrecorded: served::Served,
}

impl Processes {
    fn cpus(&self) -> Result<Cpus, String> {
        let known = |cpu: Option<Duration>, what: &str| {
            cpu.ok_or(format!("the {what} process's CPU time is unknown (no /proc, or it stopped)"))
        };
        Ok(Cpus {
            echo: known(self.echo.child.id().and_then(cpu::cpu_of), "echo")?,
            gateway: known(self.gateway.cpu(), "gateway")?,
            unrecorded: known(self.unrecorded.cpu(), "second gateway")?,
        })
    }
}

/// One mode's rounds: calls a second, and CPU microseconds per call of the echo server and of the gateway it used.
#[derive(Default)]
struct Rounds {
    rps: Vec<f64>,
    echo_us: Vec<f64>,
    gateway_us: Vec<f64>,
}

async fn run(plan: Plan) -> Result<(), String> {
    let sink = otlp_sink::Sink::start().await;
    let echo = EchoChild::start().await?;
    let runtime = format!("http://{}", echo.addr);
    let gateway = served::Served::start(&stack::config_text(&sink.endpoint, None)).await;
    let unrecorded = match before() {
        Some(bin) => served::Served::start_build(bin.as_ref(), &stack::config_text(&sink.endpoint, None)).await,
        None => {
            let second = Some(stack::Second::Unrecorded);
            served::Served::start(&stack::config_text(&sink.endpoint, second)).await
        }
    };
    for served in [&gateway, &unrecorded] {
        served.register(workload::spec(&runtime)).await;
    }
    let direct = stack::connect(echo.addr).await;
    let callers: Vec<Caller> = (0..CONCURRENCY)
        .map(|w| Caller::new(direct.clone(), gateway.channel.clone(), unrecorded.channel.clone(), w))
        .collect();
    workload::preflight(&mut callers[0].clone(), 0).await.map_err(|e| format!("the preflight call failed: {e}"))?;
    let processes = Processes { echo, gateway, unrecorded };
    let rounds = measure(plan, &callers, &processes).await?;
    report(plan, &rounds);
    Ok(())
}

/// The warm-up, then the rounds.
async fn measure(plan: Plan, callers: &[Caller], processes: &Processes) -> Result<[Rounds; 3], String> {
    for mode in MODES {
        check(mode, load::drive(mode, plan.warmup, callers).await)?;
    }
    let mut rounds: [Rounds; 3] = Default::default();
    for round in 0..plan.rounds {
        for i in 0..MODES.len() {
            let i = (i + round) % MODES.len();
            let before = processes.cpus()?;
            let run = check(MODES[i], load::drive(MODES[i], plan.requests, callers).await)?;
            let after = processes.cpus()?;
            let per_call =
                |before: Duration, after: Duration| (after - before).as_secs_f64() * 1e6 / plan.requests as f64;
            let gateway = match MODES[i] {
                Mode::Gateway => per_call(before.gateway, after.gateway),
                Mode::Console => per_call(before.unrecorded, after.unrecorded),
                _ => 0.0,
            };
            rounds[i].rps.push(run.throughput());
            rounds[i].echo_us.push(per_call(before.echo, after.echo));
            rounds[i].gateway_us.push(gateway);
        }
        eprintln!("processes: round {}/{} done", round + 1, plan.rounds);
    }
    Ok(rounds)
}

/// The run, or why it failed.
fn check(mode: Mode, run: load::Run) -> Result<load::Run, String> {
    match run.failures {
        0 => Ok(run),
        n => Err(format!("{n} {} calls failed; the first: {}", mode_name(mode), run.first_failure.unwrap_or_default())),
    }
}

/// `PROCS_BEFORE`: the other build the second gateway runs.
fn before() -> Option<std::ffi::OsString> {
    std::env::var_os("PROCS_BEFORE").filter(|bin| !bin.is_empty())
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Console if before().is_some() => "before",
        Mode::Console => "unrecorded",
        mode => mode.name(),
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The smallest and largest finite value, or "?" for none (a round whose echo server used no CPU time at all).
fn range(values: &[f64]) -> String {
    let finite = values.iter().copied().filter(|v| v.is_finite());
    match finite.fold(None, |span: Option<(f64, f64)>, v| Some(span.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v)))))
    {
        Some((min, max)) => format!("{min:.1}–{max:.1}"),
        None => "?".into(),
    }
}

fn report(plan: Plan, rounds: &[Rounds; 3]) {
    println!(
        "processes: {} rounds of {} calls per mode at c={CONCURRENCY}; medians (range over the rounds)",
        plan.rounds, plan.requests
    );
    println!("{:<11} {:>10} {:>22} {:>22}", "mode", "calls/s", "echo CPU µs/call", "gateway CPU µs/call");
    for (mode, r) in MODES.into_iter().zip(rounds) {
        let gateway = if mode == Mode::Direct {
            "-".into()
        } else {
            format!("{:.1} ({})", median(&r.gateway_us), range(&r.gateway_us))
        };
        let echo = format!("{:.1} ({})", median(&r.echo_us), range(&r.echo_us));
        println!("{:<11} {:>10.0} {echo:>22} {gateway:>22}", mode_name(mode), median(&r.rps));
    }
    // Medians of the rounds' ratios lead: a round that another job on the machine slowed (every process's CPU per
    // call up by a fifth or more, as happens on a shared VM) moves a mean over the rounds, not them. The means
    // (all the CPU over all the calls) follow.
    let echo = mean(&rounds[0].echo_us);
    let (on, off) = (mean(&rounds[1].gateway_us), mean(&rounds[2].gateway_us));
    let per_round =
        |gateway: &[f64]| -> Vec<f64> { gateway.iter().zip(&rounds[0].echo_us).map(|(g, e)| g / e).collect() };
    let (on_ratios, off_ratios) = (per_round(&rounds[1].gateway_us), per_round(&rounds[2].gateway_us));
    let shares: Vec<f64> =
        rounds[1].gateway_us.iter().zip(&rounds[2].gateway_us).map(|(on, off)| (on - off) / on * 100.0).collect();
    let (second, what) = match before() {
        Some(_) => ("before", "the part of this build's CPU the one before did without"),
        None => ("unrecorded", "the record's share"),
    };
    println!(
        "gateway / echo CPU per call, median of the rounds: {:.2}× ({}), {second} {:.2}× ({}); {what}: {:.1}% ({})",
        median(&on_ratios),
        range(&on_ratios),
        median(&off_ratios),
        range(&off_ratios),
        median(&shares),
        range(&shares),
    );
    println!(
        "the same from the means over the rounds: {:.2}×, {second} {:.2}×; {what}: {:.1}%",
        on / echo,
        off / echo,
        (on - off) / on * 100.0,
    );
    let line = json!({
        "bench": "processes", "rounds": plan.rounds, "requests": plan.requests, "concurrency": CONCURRENCY,
        "second": second, "echo_cpu_us": echo, "gateway_cpu_us": on, "second_cpu_us": off,
        "gateway_per_echo": on / echo, "second_per_echo": off / echo, "share": (on - off) / on,
        "median_gateway_per_echo": median(&on_ratios), "median_second_per_echo": median(&off_ratios),
        "median_share": median(&shares) / 100.0,
        "rps": {"direct": median(&rounds[0].rps), "gateway": median(&rounds[1].rps), second: median(&rounds[2].rps)},
        "rounds_cpu_us": {"echo": rounds[0].echo_us, "gateway": rounds[1].gateway_us, second: rounds[2].gateway_us},
    });
    println!("{line}");
}
