//! Shared admission: a call's session budgets and global GCRA rate limit checked in one Redis round trip.
//!
//! One Lua script checks the budgets of the session (as [`crate::policy::Budgets`] does locally), counts the
//! call if they pass, then runs GCRA on the server's clock (as governor does locally), so the gateways' clocks
//! do not matter. A refusal by Redis is remembered until the key's allow time, and a later call of that key
//! asking no budget is refused locally, with no round trip: GCRA's allow time never moves earlier.
//!
//! | key | type | holds |
//! |---|---|---|
//! | `{p}:budget:{tenant}\0{session}` | hash | `calls`, `tool_calls\0{tool}`, `failures\0{tool}`; expires after the idle TTL |
//! | `{p}:rate:{tenant}\0{tool}\0{count}/{per_ns}/{burst}\0{key}` | string | the theoretical arrival time, µs of Redis's clock; expires when back to a fresh key's state |

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use redis::{Script, Value};

use crate::cluster::{ClusterError, Redis};
use crate::policy::{BudgetExceeded, BudgetLimits, PolicyError, RateLimited, RateRule, SessionKey, ToolKey};

/// Pre-check entries kept at most: past it the expired ones are dropped, then all if still full.
const MAX_PRECHECK: usize = 100_000;
/// The longest burst window, as locally: 100 years, in µs. Keeps every time the script handles below 2^53.
const MAX_WINDOW_MICROS: u64 = 100 * 365 * 24 * 3600 * 1_000_000;
// A stored arrival time is at most now + tolerance + interval: exact in a Lua double until 2033 at least.
const _: () = assert!(2_000_000_000_000_000 + 2 * MAX_WINDOW_MICROS < 1 << 53);

/// KEYS: the budget key if ARGV[1] is 1, then the rate key if ARGV[7] is 1.
/// ARGV: has_budget, tool, max_calls, max_tool_calls, max_consecutive_failures (-1: none), idle_ttl_ms,
/// has_rate, emission interval µs, tolerance µs (interval × (burst − 1)).
/// Returns {0, failures_before} | {1, which budget (1 calls, 2 tool calls, 3 failures), limit} | {2, retry µs}.
const ADMIT_LUA: &str = r#"
local next_key, failures = 1, 0
if ARGV[1] == '1' then
  local key = KEYS[1]
  next_key = 2
  local tool_calls, tool_failures = 'tool_calls\0' .. ARGV[2], 'failures\0' .. ARGV[2]
  local held = redis.call('HMGET', key, 'calls', tool_calls, tool_failures)
  local calls = tonumber(held[1]) or 0
  local mine = tonumber(held[2]) or 0
  failures = tonumber(held[3]) or 0
  local limits = {{tonumber(ARGV[3]), calls}, {tonumber(ARGV[4]), mine}, {tonumber(ARGV[5]), failures}}
  local ttl = tonumber(ARGV[6])
  for which, pair in ipairs(limits) do
    if pair[1] >= 0 and pair[2] >= pair[1] then
      redis.call('PEXPIRE', key, ttl)
      return {1, which, pair[1]}
    end
  end
  redis.call('HINCRBY', key, 'calls', 1)
  redis.call('HINCRBY', key, tool_calls, 1)
  redis.call('PEXPIRE', key, ttl)
end
if ARGV[7] == '1' then
  local key = KEYS[next_key]
  -- Redis before 5 refuses writes after TIME unless effects are replicated; a no-op since 7.
  if redis.replicate_commands then redis.replicate_commands() end
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
  local interval, tolerance = tonumber(ARGV[8]), tonumber(ARGV[9])
  local tat = tonumber(redis.call('GET', key) or '') or now
  local earliest = tat - tolerance
  if now < earliest then
    return {2, earliest - now}
  end
  local next_tat = math.max(tat, now) + interval
  redis.call('SET', key, string.format('%.0f', next_tat), 'PX', math.ceil((next_tat - now) / 1000))
end
return {0, failures}
"#;

/// KEYS: the budget key. ARGV: tool, 1 if the call failed, idle_ttl_ms. A session gone meanwhile stays gone.
const RECORD_LUA: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local field = 'failures\0' .. ARGV[1]
if ARGV[2] == '1' then
  redis.call('HINCRBY', KEYS[1], field, 1)
else
  redis.call('HDEL', KEYS[1], field)
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"#;

static ADMIT: LazyLock<Script> = LazyLock::new(|| Script::new(ADMIT_LUA));
static RECORD: LazyLock<Script> = LazyLock::new(|| Script::new(RECORD_LUA));

/// The session budgets one call is checked against.
pub struct BudgetAsk<'a> {
    pub session: &'a SessionKey,
    pub tool: &'a str,
    pub limits: BudgetLimits,
    /// The session is forgotten once unseen this long.
    pub idle_ttl: Duration,
}

/// The rate limit one call is checked against.
pub struct RateAsk<'a> {
    pub tool: &'a ToolKey,
    pub rule: &'a RateRule,
    /// The limit key's value: "" for the whole tool, else the tenant, user or session.
    pub key: &'a str,
}

/// What an admitted call leaves behind: how many failures in a row the tool had in the session before it
/// (0 when no budget was asked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Admitted {
    pub failures_before: u32,
}

/// Budgets and rate limits shared by every gateway on one Redis.
pub struct SharedAdmission {
    redis: Redis,
    /// `None` when `rate_precheck` is off.
    precheck: Option<Precheck>,
}

impl SharedAdmission {
    /// The pre-check is on iff the settings' `rate_precheck` is.
    pub fn new(redis: Redis) -> Self {
        let precheck = redis.settings().rate_precheck.then(|| Precheck::new(MAX_PRECHECK));
        Self { redis, precheck }
    }

    /// Checks the budgets, counts the call if they pass, then checks the rate limit: one round trip, or none
    /// when nothing is asked or the pre-check refuses. A budget refusal counts nothing and skips the rate
    /// check; a rate refusal is not counted by the limiter but the call still counts towards the budgets.
    ///
    /// `Ok(Ok(admitted))`, `Ok(Err(PolicyError::Budget | PolicyError::RateLimited))`, or `Err` when Redis did
    /// not answer, or answered what this gateway cannot read.
    pub async fn admit(
        &self,
        budget: Option<BudgetAsk<'_>>,
        rate: Option<RateAsk<'_>>,
    ) -> Result<Result<Admitted, PolicyError>, ClusterError> {
        let budget = budget.filter(|ask| !ask.session.session_id.is_empty());
        if budget.is_none() && rate.is_none() {
            return Ok(Ok(Admitted::default()));
        }
        // A shared tool's limit is keyed by the tool's tenant, a session's budget by the caller's: on a Redis
        // Cluster they may lie in two slots, which one script cannot touch. Then two round trips, in the same order.
        if let (Some(ask), Some(limit)) = (&budget, &rate)
            && self.redis.settings().topology.is_sharded()
            && !self.redis.same_slot(&self.budget_key(ask.session), &self.rate_key(limit))
        {
            let admitted = match Box::pin(self.admit(budget, None)).await? {
                Ok(admitted) => admitted,
                refused => return Ok(refused),
            };
            return Ok(Box::pin(self.admit(None, rate)).await?.map(|_| admitted));
        }
        let rate_key = rate.as_ref().map(|ask| self.rate_key(ask));
        let started = Instant::now();
        if let (None, Some(key), Some(precheck)) = (&budget, &rate_key, &self.precheck)
            && let Some(retry_after) = precheck.refused(key, started)
        {
            return Ok(Err(RateLimited { retry_after }.into()));
        }
        if self.redis.recently_failed() {
            return Err(self.redis.unavailable("down, and tried again less than 500 ms ago".into()));
        }
        let mut invocation = ADMIT.prepare_invoke();
        match &budget {
            Some(ask) => {
                invocation
                    .key(self.budget_key(ask.session))
                    .arg(1)
                    .arg(ask.tool)
                    .arg(limit_arg(ask.limits.max_calls))
                    .arg(limit_arg(ask.limits.max_tool_calls))
                    .arg(limit_arg(ask.limits.max_consecutive_failures))
                    .arg(millis_arg(ask.idle_ttl));
            }
            None => {
                invocation.arg(0).arg("").arg(-1).arg(-1).arg(-1).arg(1);
            }
        }
        match (&rate, &rate_key) {
            (Some(ask), Some(key)) => {
                let (interval, tolerance) = gcra_micros(ask.rule);
                invocation.key(key).arg(1).arg(interval).arg(tolerance);
            }
            _ => {
                invocation.arg(0).arg(1).arg(0);
            }
        }
        let reply: Value = self.redis.run(|mut conn| async move { invocation.invoke_async(&mut conn).await }).await?;
        let outcome = self.read_admit(&reply)?;
        if let (Err(PolicyError::RateLimited(limited)), Some(key), Some(precheck)) =
            (&outcome, rate_key, &self.precheck)
        {
            precheck.remember(key, started + limited.retry_after, started);
        }
        Ok(outcome)
    }

    /// Records how an admitted call ended: a failure extends the tool's failures in a row, a success ends
    /// them. A session that expired meanwhile stays gone. One round trip; none for an empty session id.
    pub async fn record(
        &self,
        session: &SessionKey,
        tool: &str,
        failed: bool,
        idle_ttl: Duration,
    ) -> Result<(), ClusterError> {
        if session.session_id.is_empty() {
            return Ok(());
        }
        let mut invocation = RECORD.key(self.budget_key(session));
        invocation.arg(tool).arg(u8::from(failed)).arg(millis_arg(idle_ttl));
        let _: Value = self.redis.run(|mut conn| async move { invocation.invoke_async(&mut conn).await }).await?;
        Ok(())
    }

    /// Drops the pre-check entries whose refusal has ended.
    pub fn evict_idle(&self) {
        if let Some(precheck) = &self.precheck {
            precheck.sweep(Instant::now());
        }
    }

    /// How many refusals the pre-check remembers.
    pub fn precheck_len(&self) -> usize {
        self.precheck.as_ref().map_or(0, |precheck| lock(&precheck.until).len())
    }

    fn budget_key(&self, session: &SessionKey) -> String {
        self.redis.key("budget", &[&session.tenant, &session.session_id])
    }

    /// The tool, the rule (a changed rule starts fresh, as locally) and the limit key's value.
    fn rate_key(&self, ask: &RateAsk<'_>) -> String {
        let rate = ask.rule.rate;
        let rule = format!("{}/{}/{}", rate.count, rate.per.as_nanos(), ask.rule.burst);
        self.redis.key("rate", &[&ask.tool.tenant, &ask.tool.name, &rule, ask.key])
    }

    fn read_admit(&self, reply: &Value) -> Result<Result<Admitted, PolicyError>, ClusterError> {
        let corrupt = |why: String| self.redis.corrupt("admission reply", why);
        let Value::Array(items) = reply else { return Err(corrupt(format!("not an array: {reply:?}"))) };
        let numbers: Option<Vec<i64>> =
            items.iter().map(|item| if let Value::Int(n) = item { Some(*n) } else { None }).collect();
        let count = |n: i64| u32::try_from(n).map_err(|_| corrupt(format!("{n} is no count")));
        match numbers.as_deref() {
            Some([0, failures]) => Ok(Ok(Admitted { failures_before: count(*failures)? })),
            Some([1, which, limit]) => {
                let limit = count(*limit)?;
                let exceeded = match which {
                    1 => BudgetExceeded::Calls { limit },
                    2 => BudgetExceeded::ToolCalls { limit },
                    3 => BudgetExceeded::ConsecutiveFailures { limit },
                    _ => return Err(corrupt(format!("no budget {which}"))),
                };
                Ok(Err(exceeded.into()))
            }
            Some([2, micros]) if *micros > 0 => {
                let retry_after = Duration::from_micros(micros.unsigned_abs());
                Ok(Err(RateLimited { retry_after }.into()))
            }
            _ => Err(corrupt(format!("unexpected {reply:?}"))),
        }
    }
}

/// GCRA's emission interval (`per / count`, at least 1 µs) and tolerance (`interval × (burst − 1)`), as
/// governor's `Quota::with_period(interval).allow_burst(burst)`; a burst 0 is `count`. The tolerance is
/// clamped to 100 years, as locally.
fn gcra_micros(rule: &RateRule) -> (u64, u64) {
    let per = u64::try_from(rule.rate.per.as_micros()).unwrap_or(u64::MAX);
    let interval = (per / u64::from(rule.rate.count.get())).clamp(1, MAX_WINDOW_MICROS);
    let burst = if rule.burst == 0 { rule.rate.count.get() } else { rule.burst };
    let tolerance = interval.saturating_mul(u64::from(burst.saturating_sub(1))).min(MAX_WINDOW_MICROS);
    (interval, tolerance)
}

/// A budget's limit for the script: -1 is none.
fn limit_arg(limit: Option<u32>) -> i64 {
    limit.map_or(-1, i64::from)
}

/// A TTL in whole milliseconds, at least 1 (PEXPIRE refuses 0).
fn millis_arg(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).clamp(1, MAX_WINDOW_MICROS / 1000)
}

/// Rate keys Redis refused, each with when the refusal ends by this gateway's clock.
struct Precheck {
    max: usize,
    until: Mutex<HashMap<String, Instant>>,
}

impl Precheck {
    fn new(max: usize) -> Self {
        Self { max: max.max(1), until: Mutex::new(HashMap::new()) }
    }

    /// How long `key` stays refused, if it still is at `now`.
    fn refused(&self, key: &str, now: Instant) -> Option<Duration> {
        let until = *lock(&self.until).get(key)?;
        (until > now).then(|| until - now)
    }

    /// Remembers that `key` is refused until `until`. A full map drops its expired entries, then all of them.
    fn remember(&self, key: String, until: Instant, now: Instant) {
        let mut map = lock(&self.until);
        if map.len() >= self.max && !map.contains_key(&key) {
            map.retain(|_, until| *until > now);
            if map.len() >= self.max {
                map.clear();
            }
        }
        map.insert(key, until);
    }

    fn sweep(&self, now: Instant) {
        let mut map = lock(&self.until);
        map.retain(|_, until| *until > now);
        let keep = self.max.min(map.len().saturating_mul(2));
        map.shrink_to(keep);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::parse_rate;

    fn rule(text: &str, burst: u32) -> RateRule {
        RateRule { rate: parse_rate(text).unwrap(), burst }
    }

    #[test]
    fn gcra_matches_governors_quota() {
        // The script's emission interval and tolerance are those of the governor `Quota` the local limiter runs:
        // its replenish interval, and the time its burst less one takes to replenish.
        for (text, burst) in [("10/s", 0), ("1/s", 3), ("1/s", 1), ("600/m", 0), ("5/h", 2), ("7/s", 100)] {
            let rule = rule(text, burst);
            let quota = rule.quota();
            let interval = u64::try_from(quota.replenish_interval().as_micros()).unwrap();
            let tolerance = interval * u64::from(quota.burst_size().get() - 1);
            assert_eq!(gcra_micros(&rule), (interval, tolerance), "{text} burst {burst}");
        }
        assert_eq!(gcra_micros(&rule("1000000000/s", 0)).0, 1, "at least 1 µs (governor's interval is 1 ns)");
        assert_eq!(gcra_micros(&rule("1/d", u32::MAX)).1, MAX_WINDOW_MICROS, "clamped to 100 years, as the quota is");
        assert!(rule("1/d", u32::MAX).quota().burst_size_replenished_in().as_micros() <= u128::from(MAX_WINDOW_MICROS));
    }

    #[test]
    fn the_precheck_refuses_until_its_time_then_forgets() {
        let precheck = Precheck::new(10);
        let now = Instant::now();
        precheck.remember("k".into(), now + Duration::from_millis(100), now);
        assert_eq!(precheck.refused("k", now + Duration::from_millis(40)), Some(Duration::from_millis(60)));
        assert_eq!(precheck.refused("other", now), None);
        assert_eq!(precheck.refused("k", now + Duration::from_millis(100)), None, "admitted from then on");
        precheck.sweep(now + Duration::from_millis(99));
        assert_eq!(lock(&precheck.until).len(), 1);
        precheck.sweep(now + Duration::from_millis(100));
        assert_eq!(lock(&precheck.until).len(), 0);
    }

    #[test]
    fn a_full_precheck_drops_expired_entries_then_everything() {
        let precheck = Precheck::new(4);
        let now = Instant::now();
        for (i, ms) in [10, 10, 500, 500].into_iter().enumerate() {
            precheck.remember(format!("k{i}"), now + Duration::from_millis(ms), now);
        }
        let later = now + Duration::from_millis(20);
        precheck.remember("k4".into(), later + Duration::from_millis(500), later);
        assert_eq!(lock(&precheck.until).len(), 3, "the two expired ones went");
        precheck.remember("k5".into(), later + Duration::from_millis(500), later);
        precheck.remember("k6".into(), later + Duration::from_millis(500), later);
        assert_eq!(lock(&precheck.until).len(), 1, "still full: cleared, then the new one");
        assert!(precheck.refused("k6", later).is_some());
    }
}
