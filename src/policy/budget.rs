//! Per-session budgets, the gateway's recursion limit: calls per session, per tool, and failures in a row.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use super::{Clock, SessionKey};

/// The budgets one call is checked against; `None` is no limit. They come from the called tool's spec, but
/// every call of a session counts towards `max_calls`, whatever the tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BudgetLimits {
    /// Calls of the session, all tools together.
    pub max_calls: Option<u32>,
    /// Calls of this tool in the session.
    pub max_tool_calls: Option<u32>,
    /// Failed calls of this tool in a row in the session; only a success resets the count.
    pub max_consecutive_failures: Option<u32>,
}

/// Which budget refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BudgetExceeded {
    #[error("the session has used its budget of {limit} calls")]
    Calls { limit: u32 },
    #[error("the session has used its budget of {limit} calls of this tool")]
    ToolCalls { limit: u32 },
    #[error("this tool failed {limit} times in a row in this session")]
    ConsecutiveFailures { limit: u32 },
}

#[derive(Debug, Clone, Copy, Default)]
struct ToolTally {
    calls: u32,
    consecutive_failures: u32,
}

#[derive(Debug, Default)]
struct Session {
    calls: u32,
    last_seen: Duration,
    /// Bounded by the registry: tool names are those of registered tools.
    tools: HashMap<String, ToolTally>,
}

impl Session {
    /// Checks the three budgets and, if they all pass, counts the call.
    fn admit(&mut self, tool: &str, limits: &BudgetLimits) -> Result<(), BudgetExceeded> {
        let tally = self.tools.get(tool).copied().unwrap_or_default();
        if let Some(limit) = limits.max_calls.filter(|&limit| self.calls >= limit) {
            return Err(BudgetExceeded::Calls { limit });
        }
        if let Some(limit) = limits.max_tool_calls.filter(|&limit| tally.calls >= limit) {
            return Err(BudgetExceeded::ToolCalls { limit });
        }
        if let Some(limit) = limits.max_consecutive_failures.filter(|&limit| tally.consecutive_failures >= limit) {
            return Err(BudgetExceeded::ConsecutiveFailures { limit });
        }
        self.calls = self.calls.saturating_add(1);
        self.tally(tool).calls = tally.calls.saturating_add(1);
        Ok(())
    }

    fn tally(&mut self, tool: &str) -> &mut ToolTally {
        // Looked up first so the name is only copied for a tool's first call.
        if !self.tools.contains_key(tool) {
            self.tools.insert(tool.to_owned(), ToolTally::default());
        }
        self.tools.get_mut(tool).expect("inserted above")
    }
}

/// The budgets of every live session.
///
/// Each session's counts sit behind their own `Mutex`, so concurrent calls of one session check and count
/// one at a time, while other sessions only share the read side of the map's `RwLock`.
pub struct Budgets {
    clock: Clock,
    idle_ttl: Duration,
    max_sessions: usize,
    sessions: RwLock<HashMap<SessionKey, Mutex<Session>>>,
}

impl Budgets {
    /// Sessions unseen for `idle_ttl` are forgotten; at most `max_sessions` are kept.
    pub fn new(clock: Clock, idle_ttl: Duration, max_sessions: usize) -> Self {
        Self { clock, idle_ttl, max_sessions: max_sessions.max(1), sessions: RwLock::new(HashMap::new()) }
    }

    /// Admits and counts one call of `tool` in `session`, or says which budget it would exceed; a refused call
    /// is not counted. An empty session id is no session: always admitted, nothing stored.
    pub fn admit(&self, session: &SessionKey, tool: &str, limits: &BudgetLimits) -> Result<(), BudgetExceeded> {
        if session.session_id.is_empty() {
            return Ok(());
        }
        let now = self.clock.now();
        if let Some(state) = read(&self.sessions).get(session) {
            let mut state = lock(state);
            // Expired but not swept yet: it starts over, as if it had been.
            if self.is_idle(state.last_seen, now) {
                *state = Session::default();
            }
            state.last_seen = now;
            return state.admit(tool, limits);
        }
        let mut sessions = write(&self.sessions);
        if !sessions.contains_key(session) && sessions.len() >= self.max_sessions {
            self.make_room(&mut sessions, now);
        }
        let state = sessions.entry(session.clone()).or_default().get_mut().unwrap_or_else(|p| p.into_inner());
        state.last_seen = now;
        state.admit(tool, limits)
    }

    /// Records how an admitted call ended: a failure extends the tool's run of failures, a success ends it.
    /// A session forgotten meanwhile stays forgotten.
    pub fn record(&self, session: &SessionKey, tool: &str, failed: bool) {
        if session.session_id.is_empty() {
            return;
        }
        let now = self.clock.now();
        if let Some(state) = read(&self.sessions).get(session) {
            let mut state = lock(state);
            state.last_seen = now;
            let tally = state.tally(tool);
            tally.consecutive_failures = if failed { tally.consecutive_failures.saturating_add(1) } else { 0 };
        }
    }

    /// Forgets the sessions unseen for longer than the idle TTL.
    pub fn evict_idle(&self) {
        let now = self.clock.now();
        // Found under the read lock, so calls of other sessions go on during the scan.
        let idle: Vec<SessionKey> = read(&self.sessions)
            .iter()
            .filter(|(_, state)| self.is_idle(lock(state).last_seen, now))
            .map(|(key, _)| key.clone())
            .collect();
        if idle.is_empty() {
            return;
        }
        let mut sessions = write(&self.sessions);
        for key in idle {
            // Seen again since the scan: keep it.
            if sessions.get_mut(&key).is_some_and(|state| self.is_idle(inner(state).last_seen, now)) {
                sessions.remove(&key);
            }
        }
    }

    /// How many sessions are stored.
    pub fn session_count(&self) -> usize {
        read(&self.sessions).len()
    }

    fn is_idle(&self, last_seen: Duration, now: Duration) -> bool {
        now.saturating_sub(last_seen) > self.idle_ttl
    }

    /// Called when the map is full: forgets the idle sessions, then if fewer than an eighth of the slots are
    /// free, the least recently seen sessions until they are. The free eighth keeps this amortised O(1) per new
    /// session. A forgotten session restarts with fresh budgets, which a caller could get anyway from a new
    /// session id, so forgetting early grants nothing new.
    fn make_room(&self, sessions: &mut HashMap<SessionKey, Mutex<Session>>, now: Duration) {
        sessions.retain(|_, state| !self.is_idle(inner(state).last_seen, now));
        let keep = self.max_sessions - self.max_sessions.div_ceil(8);
        if sessions.len() <= keep {
            return;
        }
        let excess = sessions.len() - keep;
        let mut by_age: Vec<(Duration, SessionKey)> =
            sessions.iter_mut().map(|(key, state)| (inner(state).last_seen, key.clone())).collect();
        by_age.select_nth_unstable_by_key(excess - 1, |(last_seen, _)| *last_seen);
        for (_, key) in &by_age[..excess] {
            sessions.remove(key);
        }
    }
}

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn lock(state: &Mutex<Session>) -> MutexGuard<'_, Session> {
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A session under the map's write lock, where no one else can hold its `Mutex`.
fn inner(state: &mut Mutex<Session>) -> &mut Session {
    state.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Barrier};

    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn session(id: &str) -> SessionKey {
        SessionKey::new("acme", id)
    }

    fn limits(max_calls: Option<u32>, max_tool_calls: Option<u32>, max_failures: Option<u32>) -> BudgetLimits {
        BudgetLimits { max_calls, max_tool_calls, max_consecutive_failures: max_failures }
    }

    #[test]
    fn max_calls_counts_every_call_of_the_session() {
        let budgets = Budgets::new(Clock::fake(), HOUR, 100);
        let three = limits(Some(3), None, None);
        assert_eq!(budgets.admit(&session("s1"), "search", &BudgetLimits::default()), Ok(()));
        assert_eq!(budgets.admit(&session("s1"), "fetch", &three), Ok(()));
        assert_eq!(budgets.admit(&session("s1"), "search", &three), Ok(()));
        assert_eq!(budgets.admit(&session("s1"), "fetch", &three), Err(BudgetExceeded::Calls { limit: 3 }));
        assert_eq!(budgets.admit(&session("s1"), "fetch", &three), Err(BudgetExceeded::Calls { limit: 3 }));
        assert_eq!(budgets.admit(&session("s2"), "fetch", &three), Ok(()), "another session");
        assert_eq!(budgets.admit(&SessionKey::new("other", "s1"), "fetch", &three), Ok(()), "another tenant");
    }

    #[test]
    fn max_tool_calls_counts_each_tool_apart() {
        let budgets = Budgets::new(Clock::fake(), HOUR, 100);
        let two = limits(None, Some(2), None);
        for tool in ["search", "fetch"] {
            assert_eq!(budgets.admit(&session("s1"), tool, &two), Ok(()));
            assert_eq!(budgets.admit(&session("s1"), tool, &two), Ok(()));
            assert_eq!(budgets.admit(&session("s1"), tool, &two), Err(BudgetExceeded::ToolCalls { limit: 2 }));
        }
        assert_eq!(budgets.admit(&session("s1"), "search", &limits(None, Some(3), None)), Ok(()));
    }

    #[test]
    fn failures_in_a_row_stop_that_tool_until_a_success() {
        let budgets = Budgets::new(Clock::fake(), HOUR, 100);
        let (s1, two) = (session("s1"), limits(None, None, Some(2)));
        for _ in 0..2 {
            budgets.admit(&s1, "search", &two).unwrap();
            budgets.record(&s1, "search", true);
        }
        assert_eq!(budgets.admit(&s1, "search", &two), Err(BudgetExceeded::ConsecutiveFailures { limit: 2 }));
        assert_eq!(budgets.admit(&s1, "fetch", &two), Ok(()), "another tool");
        assert_eq!(budgets.admit(&session("s2"), "search", &two), Ok(()), "another session");
        budgets.record(&s1, "search", false);
        assert_eq!(budgets.admit(&s1, "search", &two), Ok(()));
        budgets.record(&s1, "search", true);
        assert_eq!(budgets.admit(&s1, "search", &two), Ok(()), "one failure since the success");
    }

    #[test]
    fn the_first_limit_reached_is_the_one_named() {
        let budgets = Budgets::new(Clock::fake(), HOUR, 100);
        let all = limits(Some(1), Some(1), Some(0));
        assert_eq!(
            budgets.admit(&session("s1"), "search", &all),
            Err(BudgetExceeded::ConsecutiveFailures { limit: 0 })
        );
        assert_eq!(budgets.admit(&session("s1"), "search", &limits(Some(1), Some(1), None)), Ok(()));
        assert_eq!(budgets.admit(&session("s1"), "search", &all), Err(BudgetExceeded::Calls { limit: 1 }));
        assert_eq!(
            budgets.admit(&session("s1"), "search", &limits(None, Some(1), None)),
            Err(BudgetExceeded::ToolCalls { limit: 1 })
        );
    }

    #[test]
    fn an_idle_session_is_forgotten_and_starts_afresh() {
        let clock = Clock::fake();
        let budgets = Budgets::new(clock.clone(), HOUR, 100);
        let one = limits(Some(1), None, None);
        budgets.admit(&session("idle"), "search", &one).unwrap();
        budgets.admit(&session("busy"), "search", &one).unwrap();
        clock.advance(HOUR);
        assert!(budgets.admit(&session("busy"), "search", &one).is_err(), "a refused call still marks it seen");
        budgets.evict_idle();
        assert_eq!(budgets.session_count(), 2, "unseen for exactly the TTL: kept");
        clock.advance(Duration::from_nanos(1));
        budgets.evict_idle();
        assert_eq!(budgets.session_count(), 1);
        assert_eq!(budgets.admit(&session("idle"), "search", &one), Ok(()));
        assert!(budgets.admit(&session("busy"), "search", &one).is_err());
    }

    #[test]
    fn an_empty_session_is_never_limited_nor_stored() {
        let budgets = Budgets::new(Clock::fake(), HOUR, 100);
        let none = limits(Some(0), Some(0), Some(0));
        for _ in 0..3 {
            assert_eq!(budgets.admit(&session(""), "search", &none), Ok(()));
            budgets.record(&session(""), "search", true);
        }
        assert_eq!(budgets.session_count(), 0);
    }

    #[test]
    fn a_full_map_forgets_idle_then_least_recent_sessions() {
        let clock = Clock::fake();
        let budgets = Budgets::new(clock.clone(), HOUR, 16);
        let one = limits(Some(1), None, None);
        for id in 0..16 {
            budgets.admit(&session(&format!("s{id}")), "search", &one).unwrap();
            clock.advance(Duration::from_secs(1));
        }
        budgets.admit(&session("s17"), "search", &one).unwrap();
        assert_eq!(budgets.session_count(), 15, "the two oldest forgotten, leaving 14 and the new one");
        assert_eq!(budgets.admit(&session("s0"), "search", &one), Ok(()), "s0 was forgotten");
        assert!(budgets.admit(&session("s2"), "search", &one).is_err(), "s2 was kept");
        clock.advance(2 * HOUR);
        assert_eq!(budgets.admit(&session("s2"), "search", &one), Ok(()), "expired, so it starts over");
        for id in 100..105 {
            budgets.admit(&session(&format!("s{id}")), "search", &one).unwrap();
        }
        assert_eq!(budgets.session_count(), 1 + 5, "the idle ones went first; s2 was seen");
    }

    #[test]
    fn concurrent_calls_of_one_session_never_share_the_last_slot() {
        let budgets = Arc::new(Budgets::new(Clock::fake(), HOUR, 100));
        let start = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (budgets, start) = (Arc::clone(&budgets), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    budgets.admit(&session("s1"), "search", &limits(Some(5), None, None)).is_ok()
                })
            })
            .collect();
        let admitted = threads.into_iter().map(|thread| thread.join().unwrap()).filter(|&ok| ok).count();
        assert_eq!(admitted, 5);
        assert_eq!(budgets.admit(&session("s1"), "search", &limits(Some(6), None, None)), Ok(()), "counted 5");
    }
}
