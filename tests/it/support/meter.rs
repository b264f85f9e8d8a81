//! The process's own CPU time and peak memory, for the hardening suites' cost checks (the gateway runs in the
//! test's process). A test that measures them runs in a process of its own (`alone`), so nothing else is counted.

/// CPU time this process has used, in seconds (`utime + stime` of /proc/self/stat, in clock ticks of 10 ms).
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let fields: Vec<&str> = stat.rsplit_once(')').expect("a comm field").1.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

/// A `/proc/self/status` figure in MB.
pub fn status_mb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("{field} in /proc/self/status"));
    line.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap() / 1024.0
}

/// The process's CPU time and memory when a measured piece of work starts.
pub struct Meter {
    cpu: f64,
    rss: f64,
    peak: f64,
}

impl Meter {
    pub fn start() -> Self {
        // Writing 5 to clear_refs resets VmHWM to the current RSS, so a peak an earlier test set is forgotten.
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        Self { cpu: cpu_seconds(), rss: status_mb("VmRSS:"), peak: status_mb("VmHWM:") }
    }

    /// CPU seconds spent and MB of peak RSS growth since `start`. A peak above the one at the start was set by the
    /// work; if it did not rise (or Linux refused the reset), the RSS now is the least the work reached.
    pub fn finish(&self) -> (f64, f64) {
        let (peak, rss) = (status_mb("VmHWM:"), status_mb("VmRSS:"));
        let reached = if peak > self.peak { peak } else { rss };
        (cpu_seconds() - self.cpu, reached - self.rss)
    }
}

/// Runs `work`, then asserts it took under 1 s of the process's CPU and grew its peak RSS by under 50 MB.
pub async fn bounded<T>(what: &str, work: impl std::future::Future<Output = T>) -> T {
    let meter = Meter::start();
    let out = work.await;
    let (spent, grown) = meter.finish();
    eprintln!("{what}: {spent:.2} s of CPU, peak RSS {grown:+.1} MB");
    assert!(spent < 1.0, "{what}: {spent:.2} s of CPU, the bound is 1 s");
    assert!(grown < 50.0, "{what}: peak RSS grew by {grown:.1} MB, the bound is 50 MB");
    out
}
