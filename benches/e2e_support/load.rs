//! The end-to-end bench's load client (`cargo bench --bench e2e`): runs of N calls at a given concurrency, and the
//! per-mode tally that pools latencies across rounds and takes the median of the rounds' throughputs.

use super::cpu::process_cpu;
use super::workload::{Caller, Mode};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Per-call budget: a call that takes longer counts as a failure, so no run waits forever.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// One run: every call's latency in nanoseconds, unsorted, how long the whole run took, and the process CPU time it
/// used.
pub struct Run {
    pub latencies: Vec<u64>,
    pub elapsed: Duration,
    pub cpu: Option<Duration>,
    pub failures: usize,
    pub first_failure: Option<String>,
}

impl Run {
    pub fn throughput(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    /// Process CPU time per call, in microseconds.
    pub fn cpu_us_per_call(&self) -> Option<f64> {
        Some(self.cpu?.as_secs_f64() * 1e6 / self.latencies.len() as f64)
    }
}

/// What one worker measured.
struct WorkerRun {
    latencies: Vec<u64>,
    failures: usize,
    first_failure: Option<String>,
}

async fn work(mut caller: Caller, mode: Mode, next: Arc<AtomicUsize>, requests: usize, share: usize) -> WorkerRun {
    let mut run = WorkerRun { latencies: Vec::with_capacity(share), failures: 0, first_failure: None };
    while next.fetch_add(1, Ordering::Relaxed) < requests {
        let sent = Instant::now();
        let outcome = match tokio::time::timeout(CALL_TIMEOUT, caller.call(mode)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("{}: no answer within {CALL_TIMEOUT:?}", mode.name())),
        };
        run.latencies.push(u64::try_from(sent.elapsed().as_nanos()).unwrap_or(u64::MAX));
        if let Err(reason) = outcome {
            run.failures += 1;
            run.first_failure.get_or_insert(reason);
        }
    }
    run
}

/// Sends `requests` calls of `mode` with `callers.len()` in flight: each worker, as its own agent, takes the next
/// call until none are left.
pub async fn drive(mode: Mode, requests: usize, callers: &[Caller]) -> Run {
    let next = Arc::new(AtomicUsize::new(0));
    let share = requests / callers.len().max(1) + 1;
    let (started, cpu) = (Instant::now(), process_cpu());
    let workers: Vec<_> = callers
        .iter()
        .take(requests)
        .map(|caller| tokio::spawn(work(caller.clone(), mode, Arc::clone(&next), requests, share)))
        .collect();
    let mut run = Run {
        latencies: Vec::with_capacity(requests),
        elapsed: Duration::ZERO,
        cpu: None,
        failures: 0,
        first_failure: None,
    };
    for worker in workers {
        let worker = worker.await.expect("a load worker panicked");
        run.latencies.extend(worker.latencies);
        run.failures += worker.failures;
        run.first_failure = run.first_failure.or(worker.first_failure);
    }
    run.elapsed = started.elapsed();
    run.cpu = process_cpu().zip(cpu).map(|(after, before)| after.saturating_sub(before));
    run
}

/// Nearest-rank percentile of sorted nanoseconds, in microseconds.
pub fn percentile_us(sorted: &[u64], p: f64) -> f64 {
    let n = sorted.len();
    let rank = ((p * n as f64).ceil() as usize).clamp(1, n.max(1));
    sorted.get(rank - 1).map_or(f64::NAN, |&ns| ns as f64 / 1_000.0)
}

/// The median, `NaN` for none.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Everything measured for one mode over all rounds.
#[derive(Default)]
pub struct Tally {
    c1: Vec<u64>,
    c64: Vec<u64>,
    c64_rps: Vec<f64>,
    c64_cpu: Vec<f64>,
    c1_cpu: Vec<f64>,
    /// Calls sent, warm-up included.
    pub requests: usize,
    pub failures: usize,
    pub first_failure: Option<String>,
}

impl Tally {
    /// Counts a run's calls and failures without keeping its latencies (the warm-up).
    pub fn count(&mut self, run: &mut Run) {
        self.requests += run.latencies.len();
        self.failures += run.failures;
        self.first_failure = self.first_failure.take().or(run.first_failure.take());
    }

    pub fn add_c1(&mut self, mut run: Run) {
        self.count(&mut run);
        self.c1_cpu.extend(run.cpu_us_per_call());
        self.c1.extend(run.latencies);
    }

    pub fn add_c64(&mut self, mut run: Run) {
        self.count(&mut run);
        self.c64_rps.push(run.throughput());
        self.c64_cpu.extend(run.cpu_us_per_call());
        self.c64.extend(run.latencies);
    }

    pub fn summary(mut self, mode: Mode) -> Summary {
        self.c1.sort_unstable();
        self.c64.sort_unstable();
        Summary {
            mode,
            c1_p50_us: percentile_us(&self.c1, 0.50),
            c1_p99_us: percentile_us(&self.c1, 0.99),
            c1_cpu_us: median(&self.c1_cpu),
            c64_rps: median(&self.c64_rps),
            c64_rps_rounds: self.c64_rps,
            c64_cpu_us: median(&self.c64_cpu),
            c64_p50_us: percentile_us(&self.c64, 0.50),
            c64_p99_us: percentile_us(&self.c64, 0.99),
            requests: self.requests,
            failures: self.failures,
            first_failure: self.first_failure,
        }
    }
}

/// One mode's figures: c=1 latency over the pooled samples, and at c=64 the median throughput of the rounds and the
/// latency over the pooled samples. CPU is the whole process's per call, the median of the rounds'; `NaN` without
/// `/proc`.
pub struct Summary {
    pub mode: Mode,
    pub c1_p50_us: f64,
    pub c1_p99_us: f64,
    pub c1_cpu_us: f64,
    pub c64_rps: f64,
    pub c64_rps_rounds: Vec<f64>,
    pub c64_cpu_us: f64,
    pub c64_p50_us: f64,
    pub c64_p99_us: f64,
    pub requests: usize,
    pub failures: usize,
    pub first_failure: Option<String>,
}
