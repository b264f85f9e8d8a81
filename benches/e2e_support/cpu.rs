//! CPU accounting for the end-to-end bench (`cargo bench --bench e2e`), on Linux: the CPU time this
//! process used, and the CPU time everything else on the machine used meanwhile, which shows when another job (a
//! build, say) shared the cores with a run.

use std::time::{Duration, Instant};

/// Clock ticks per second of `/proc/stat` (`USER_HZ`, 100 on every Linux this runs on).
const USER_HZ: u64 = 100;

fn ticks(n: u64) -> Duration {
    Duration::from_millis(n * 1_000 / USER_HZ)
}

/// CPU time this whole process has used (all threads: client, servers, the gateway, the OTel SDK's exporters and the
/// sink), to the nanosecond, from its CPU-time clock; `None` where there is none.
pub fn process_cpu() -> Option<Duration> {
    Some(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID.now().ok()?.into())
}

/// CPU time process `pid` has used (user and system, all threads, those gone included), to the nanosecond, from its
/// CPU-time clock: `/proc/<pid>/stat` counts in 10 ms ticks, a few percent of a bench's round. `None` where there
/// is no such process. (The processes bench's; the e2e bench, which shares this file, has one process.)
#[allow(dead_code)]
pub fn cpu_of(pid: u32) -> Option<Duration> {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).ok()?);
    Some(nix::time::clock_getcpuclockid(pid).ok()?.now().ok()?.into())
}

/// CPU time every core of the machine has spent busy (user, nice, system, irq, softirq, steal), from `/proc/stat`.
fn machine_busy() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let values: Vec<u64> = line.split_whitespace().skip(1).map_while(|v| v.parse().ok()).collect();
    let [user, nice, system, _idle, _iowait, irq, softirq, steal, ..] = values[..] else { return None };
    Some(ticks(user + nice + system + irq + softirq + steal))
}

/// A point in time to measure others' CPU use from.
#[derive(Clone, Copy)]
pub struct Snapshot {
    at: Instant,
    own: Option<Duration>,
    busy: Option<Duration>,
}

impl Snapshot {
    pub fn now() -> Snapshot {
        Snapshot { at: Instant::now(), own: process_cpu(), busy: machine_busy() }
    }

    /// The share of all cores' time since this snapshot that other processes used: 0.0 on an otherwise idle
    /// machine, 0.5 when another job kept one of two cores busy. `None` without `/proc`.
    pub fn others_share(&self, cores: usize) -> Option<f64> {
        let later = Snapshot::now();
        let others = (later.busy? - self.busy?).saturating_sub(later.own? - self.own?);
        let capacity = later.at.duration_since(self.at).as_secs_f64() * cores.max(1) as f64;
        Some((others.as_secs_f64() / capacity).clamp(0.0, 1.0))
    }
}

/// Logical cores this process may use.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
