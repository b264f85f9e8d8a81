//! Rate limits: parsing `N/unit` rates, and GCRA checks through one keyed governor limiter per tool.

use std::collections::HashMap;
use std::fmt;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};

use super::{Clock, ToolKey};

/// A tool's key count is read once every this many checks: `DashMap::len` locks every shard, too dear for each call.
const LEN_SAMPLE_EVERY: u32 = 16;
/// The longest burst window a quota may span; longer ones would overflow governor's u64 nanoseconds.
const MAX_WINDOW: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

type KeyedLimiter = RateLimiter<String, DashMapStateStore<String>, Clock, NoOpMiddleware<Duration>>;

/// `count` calls every `per`: the steady rate of a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    pub count: NonZeroU32,
    pub per: Duration,
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match UNITS.iter().find(|unit| Duration::from_secs(unit.seconds) == self.per) {
            Some(unit) => write!(f, "{}/{}", self.count, unit.short),
            None => write!(f, "{} per {:?}", self.count, self.per),
        }
    }
}

struct Unit {
    short: &'static str,
    long: &'static str,
    seconds: u64,
}

const UNITS: [Unit; 4] = [
    Unit { short: "s", long: "second", seconds: 1 },
    Unit { short: "m", long: "minute", seconds: 60 },
    Unit { short: "h", long: "hour", seconds: 3600 },
    Unit { short: "d", long: "day", seconds: 86_400 },
];

/// Reads `10/s`, `600/m`, `100/h`, `1000/d` or `N/second|minute|hour|day`, with spaces allowed around each part.
///
/// Refuses a count of 0, one above `u32::MAX`, and a rate faster than one call per nanosecond.
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    let invalid = |why: String| {
        format!("invalid rate {text:?}: {why}; expected N/s, N/m, N/h or N/d (or N/second, N/minute, N/hour, N/day)")
    };
    let (count, unit) = text.split_once('/').ok_or_else(|| invalid("no '/' between count and unit".into()))?;
    let (count, unit) = (count.trim(), unit.trim());
    if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(format!("count {count:?} is not a whole number")));
    }
    let count: u32 = count.parse().map_err(|_| invalid(format!("count {count} is larger than {}", u32::MAX)))?;
    let count = NonZeroU32::new(count).ok_or_else(|| invalid("count must be at least 1".into()))?;
    let unit = UNITS
        .iter()
        .find(|u| u.short == unit || u.long == unit)
        .ok_or_else(|| invalid(format!("unknown unit {unit:?}")))?;
    let per = Duration::from_secs(unit.seconds);
    if per.as_nanos() < u128::from(count.get()) {
        return Err(invalid("more than one call per nanosecond cannot be timed".into()));
    }
    Ok(Rate { count, per })
}

/// A tool's rate limit: the steady `rate`, and how many calls may arrive at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateRule {
    pub rate: Rate,
    /// Calls admitted at once before the steady rate applies; 0 means `rate.count`.
    pub burst: u32,
}

impl RateRule {
    /// The governor quota: one call every `per / count` (at least 1 ns), up to `burst` at once.
    ///
    /// A burst whose window would pass 100 years is clamped to it, since governor keeps time in u64 nanoseconds.
    pub fn quota(&self) -> Quota {
        let period = (self.rate.per / self.rate.count.get()).clamp(Duration::from_nanos(1), MAX_WINDOW);
        let most = u32::try_from(MAX_WINDOW.as_nanos() / period.as_nanos()).unwrap_or(u32::MAX).max(1);
        let burst = if self.burst == 0 { self.rate.count.get() } else { self.burst };
        let burst = NonZeroU32::new(burst.min(most)).unwrap_or(NonZeroU32::MIN);
        Quota::with_period(period).expect("the period is at least 1 ns").allow_burst(burst)
    }
}

/// A call refused by a rate limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("rate limit reached; retry after {retry_after:?}")]
pub struct RateLimited {
    /// How long until the same key would be admitted, by the policy clock.
    pub retry_after: Duration,
}

/// One tool's limiter, with the rule it was built from.
struct ToolLimiter {
    rule: RateRule,
    limiter: KeyedLimiter,
    /// Counts checks, so the key count is sampled only every `LEN_SAMPLE_EVERY` of them.
    checks: AtomicU32,
    /// A sweep runs when the key count passes this; it doubles when keys survive a sweep, so sweeping stays
    /// amortised O(1) per new key even when every key is still inside its window.
    sweep_above: AtomicUsize,
}

impl ToolLimiter {
    fn new(rule: RateRule, clock: Clock, max_keys: usize) -> Self {
        Self {
            rule,
            limiter: RateLimiter::dashmap_with_clock(rule.quota(), clock),
            checks: AtomicU32::new(0),
            sweep_above: AtomicUsize::new(max_keys),
        }
    }

    fn check(&self, key: &str, max_keys: usize) -> Result<(), RateLimited> {
        let outcome = self.limiter.check_key(&key.to_owned());
        if self.checks.fetch_add(1, Ordering::Relaxed).is_multiple_of(LEN_SAMPLE_EVERY)
            && self.limiter.len() > self.sweep_above.load(Ordering::Relaxed)
        {
            self.sweep(max_keys);
        }
        outcome.map_err(|not_until| {
            let now = governor::clock::Clock::now(self.limiter.clock());
            RateLimited { retry_after: not_until.wait_time_from(now) }
        })
    }

    /// Drops the keys whose state is the same as a fresh key's (governor keeps each one emission interval
    /// longer than needed). A key still inside its window is kept: dropping it would reset its limit.
    fn sweep(&self, max_keys: usize) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
        let left = self.limiter.len();
        self.sweep_above.store(max_keys.max(left.saturating_mul(2)), Ordering::Relaxed);
    }
}

/// Rate limits of every tool: one keyed limiter per tool, its keys the limit-dimension values.
///
/// A check holds only the read side of one `RwLock`; the write side is taken to add a tool, to rebuild the
/// limiter of a tool whose rule changed, and to drop the limiters a sweep emptied.
pub struct RateLimiters {
    clock: Clock,
    max_keys_per_tool: usize,
    tools: RwLock<HashMap<ToolKey, ToolLimiter>>,
}

impl RateLimiters {
    /// `max_keys_per_tool` is where a tool's stale keys start being swept during checks.
    pub fn new(clock: Clock, max_keys_per_tool: usize) -> Self {
        Self { clock, max_keys_per_tool, tools: RwLock::new(HashMap::new()) }
    }

    /// Admits one call of `tool` under `rule` for `key` ("" for the whole tool, else the tenant, user or
    /// session), or says how long until it would be admitted. A refused call is not counted.
    pub fn check(&self, tool: &ToolKey, rule: &RateRule, key: &str) -> Result<(), RateLimited> {
        if let Some(limiter) = read(&self.tools).get(tool).filter(|limiter| limiter.rule == *rule) {
            return limiter.check(key, self.max_keys_per_tool);
        }
        let mut tools = write(&self.tools);
        let limiter = tools
            .entry(tool.clone())
            .and_modify(|limiter| {
                if limiter.rule != *rule {
                    *limiter = ToolLimiter::new(*rule, self.clock.clone(), self.max_keys_per_tool);
                }
            })
            .or_insert_with(|| ToolLimiter::new(*rule, self.clock.clone(), self.max_keys_per_tool));
        limiter.check(key, self.max_keys_per_tool)
    }

    /// Forgets every key whose state is the same as a fresh key's, and the limiters left with no key.
    pub fn evict_idle(&self) {
        for limiter in read(&self.tools).values() {
            limiter.sweep(self.max_keys_per_tool);
        }
        // Keys are only added under the read lock, so a limiter empty here stays empty until removed.
        write(&self.tools).retain(|_, limiter| !limiter.limiter.is_empty());
    }

    /// How many tools have a limiter.
    pub fn tool_count(&self) -> usize {
        read(&self.tools).len()
    }

    /// How many keys `tool`'s limiter holds.
    pub fn key_count(&self, tool: &ToolKey) -> usize {
        read(&self.tools).get(tool).map_or(0, |limiter| limiter.limiter.len())
    }
}

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str, burst: u32) -> RateRule {
        RateRule { rate: parse_rate(text).unwrap(), burst }
    }

    fn tool(name: &str) -> ToolKey {
        ToolKey::new("acme", name)
    }

    fn admitted(limits: &RateLimiters, tool: &ToolKey, rule: &RateRule, key: &str, calls: usize) -> usize {
        (0..calls).filter(|_| limits.check(tool, rule, key).is_ok()).count()
    }

    #[test]
    fn ten_per_second_admits_ten_then_one_every_hundred_milliseconds() {
        let clock = Clock::fake();
        let limits = RateLimiters::new(clock.clone(), 1000);
        let (search, ten) = (tool("search"), rule("10/s", 0));
        assert_eq!(admitted(&limits, &search, &ten, "", 10), 10);
        let refused = limits.check(&search, &ten, "").unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_millis(100));
        clock.advance(Duration::from_millis(99));
        assert_eq!(limits.check(&search, &ten, "").unwrap_err().retry_after, Duration::from_millis(1));
        clock.advance(Duration::from_millis(1));
        assert_eq!(admitted(&limits, &search, &ten, "", 5), 1);
    }

    #[test]
    fn a_burst_admits_that_many_at_once_then_the_steady_rate() {
        let clock = Clock::fake();
        let limits = RateLimiters::new(clock.clone(), 1000);
        let (search, bursty) = (tool("search"), rule("1/s", 3));
        assert_eq!(admitted(&limits, &search, &bursty, "", 3), 3);
        assert_eq!(limits.check(&search, &bursty, ""), Err(RateLimited { retry_after: Duration::from_secs(1) }));
        clock.advance(Duration::from_secs(1));
        assert_eq!(admitted(&limits, &search, &bursty, "", 3), 1);
    }

    #[test]
    fn keys_and_tools_are_independent() {
        let limits = RateLimiters::new(Clock::fake(), 1000);
        let one = rule("1/m", 0);
        assert!(limits.check(&tool("search"), &one, "a").is_ok());
        assert!(limits.check(&tool("search"), &one, "a").is_err());
        assert!(limits.check(&tool("search"), &one, "b").is_ok());
        assert!(limits.check(&tool("fetch"), &one, "a").is_ok());
        assert!(limits.check(&ToolKey::new("other", "search"), &one, "a").is_ok());
        assert_eq!(limits.tool_count(), 3);
        assert_eq!(limits.key_count(&tool("search")), 2);
    }

    #[test]
    fn a_changed_rule_rebuilds_the_limiter_and_an_unchanged_one_keeps_its_state() {
        let limits = RateLimiters::new(Clock::fake(), 1000);
        let search = tool("search");
        assert_eq!(admitted(&limits, &search, &rule("2/m", 0), "", 3), 2);
        assert_eq!(admitted(&limits, &search, &rule("2/m", 0), "", 1), 0, "same rule, same state");
        assert_eq!(admitted(&limits, &search, &rule("5/m", 0), "", 6), 5, "new rule, fresh state");
        assert_eq!(admitted(&limits, &search, &rule("5/m", 2), "", 3), 2, "a new burst is a new rule");
    }

    #[test]
    fn evict_idle_forgets_keys_once_their_window_has_passed() {
        let clock = Clock::fake();
        let limits = RateLimiters::new(clock.clone(), 1000);
        let every_second = rule("1/s", 2);
        for key in ["a", "b", "c"] {
            limits.check(&tool("search"), &every_second, key).unwrap();
        }
        limits.check(&tool("fetch"), &rule("1/h", 0), "a").unwrap();
        // governor keeps a key one emission interval past the end of its window: 1 s + 1 s here.
        clock.advance(Duration::from_millis(1999));
        limits.evict_idle();
        assert_eq!((limits.tool_count(), limits.key_count(&tool("search"))), (2, 3), "still inside the window");
        clock.advance(Duration::from_millis(1));
        limits.evict_idle();
        assert_eq!((limits.tool_count(), limits.key_count(&tool("search"))), (1, 0));
        assert_eq!(limits.key_count(&tool("fetch")), 1);
        clock.advance(Duration::from_secs(2 * 3600));
        limits.evict_idle();
        assert_eq!(limits.tool_count(), 0);
        assert_eq!(limits.check(&tool("search"), &every_second, "a"), Ok(()), "a forgotten key starts fresh");
    }

    #[test]
    fn checks_sweep_a_tool_whose_keys_pass_the_bound() {
        let clock = Clock::fake();
        let limits = RateLimiters::new(clock.clone(), 8);
        let (search, every_second) = (tool("search"), rule("1/s", 0));
        for key in 0..100 {
            limits.check(&search, &every_second, &format!("old-{key}")).unwrap();
        }
        assert_eq!(limits.key_count(&search), 100, "keys inside their window are never dropped");
        clock.advance(Duration::from_secs(2));
        for key in 0..LEN_SAMPLE_EVERY {
            limits.check(&search, &every_second, &format!("new-{key}")).unwrap();
        }
        assert!(limits.key_count(&search) <= LEN_SAMPLE_EVERY as usize, "{}", limits.key_count(&search));
    }

    #[test]
    fn quotas_clamp_what_governor_cannot_time() {
        let huge_burst = rule("1/d", u32::MAX).quota();
        assert!(huge_burst.burst_size_replenished_in() <= MAX_WINDOW);
        let fast = RateRule { rate: Rate { count: NonZeroU32::MAX, per: Duration::from_secs(1) }, burst: 0 };
        assert_eq!(fast.quota().replenish_interval(), Duration::from_nanos(1));
        assert_eq!(rule("7/s", 0).quota().burst_size().get(), 7);
    }

    #[test]
    fn parse_rate_reads_counts_and_units() {
        let good = [
            ("10/s", 10, 1),
            ("600/m", 600, 60),
            ("100/h", 100, 3600),
            ("1000/d", 1000, 86_400),
            (" 5 / second ", 5, 1),
            ("5/minute", 5, 60),
            ("5/hour", 5, 3600),
            ("5/day", 5, 86_400),
            ("007/s", 7, 1),
            ("1000000000/s", 1_000_000_000, 1),
            ("4294967295/d", u32::MAX, 86_400),
        ];
        for (text, count, seconds) in good {
            let rate = parse_rate(text).unwrap_or_else(|err| panic!("{text:?}: {err}"));
            assert_eq!((rate.count.get(), rate.per), (count, Duration::from_secs(seconds)), "{text:?}");
        }
    }

    #[test]
    fn parse_rate_refuses_with_the_text_and_the_accepted_forms() {
        let bad = [
            ("", "no '/'"),
            ("10", "no '/'"),
            ("0/s", "at least 1"),
            ("/s", "not a whole number"),
            ("-1/s", "not a whole number"),
            ("+1/s", "not a whole number"),
            ("1.5/s", "not a whole number"),
            ("1 0/s", "not a whole number"),
            ("4294967296/s", "larger than 4294967295"),
            ("99999999999999999999999/s", "larger than"),
            ("1000000001/s", "one call per nanosecond"),
            ("10/", "unknown unit \"\""),
            ("10/ms", "unknown unit \"ms\""),
            ("10/seconds", "unknown unit"),
            ("10/S", "unknown unit"),
            ("10/s/s", "unknown unit"),
        ];
        for (text, why) in bad {
            let err = parse_rate(text).expect_err(text);
            assert!(err.contains(why), "{text:?}: {err}");
            assert!(err.contains(&format!("{text:?}")) && err.contains("N/s, N/m, N/h or N/d"), "{err}");
        }
    }

    #[test]
    fn a_rate_displays_as_it_is_written() {
        assert_eq!(parse_rate("600 / minute").unwrap().to_string(), "600/m");
        let odd = Rate { count: NonZeroU32::new(3).unwrap(), per: Duration::from_millis(1500) };
        assert_eq!(odd.to_string(), "3 per 1.5s");
    }
}
