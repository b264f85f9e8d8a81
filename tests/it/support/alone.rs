//! A test that measures the whole process (its CPU time, its peak RSS: `meter`) runs in a process of its own, as
//! it did when each suite was a binary: here every suite's tests share one process, and any of them running
//! beside it would be counted in its window.

use std::process::Command;

/// Set in the child process to the name of the one test it runs.
const ALONE: &str = "TOOLGATE_IT_ALONE";

/// Whether the calling test is to run its body here. In the test binary's own process, it runs the calling test
/// again in a child process of this binary, alone (`<name> --exact --test-threads=1`), shows what the child wrote,
/// asserts that the test passed there, and returns false: the caller returns at once. In that child, it returns
/// true. Call it first thing in the test, on the test's own thread (libtest names it after the test).
pub fn in_own_process() -> bool {
    if std::env::var_os(ALONE).is_some() {
        return true;
    }
    let thread = std::thread::current();
    let name = thread.name().filter(|n| n.contains("::")).expect("called on the thread libtest runs a test on");
    let exe = std::env::current_exe().expect("the path of the test binary");
    let out = Command::new(exe)
        .args([name, "--exact", "--include-ignored", "--test-threads=1", "--nocapture"])
        .env(ALONE, name)
        .output()
        .expect("the test binary runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprint!("{stderr}");
    let ran = stdout.contains("test result: ok. 1 passed;");
    assert!(out.status.success() && ran, "{name}, run alone in a process of its own, failed:\n{stdout}\n{stderr}");
    false
}
