//! Concurrency caps: at most `max` calls of a tool in flight, through one tokio semaphore per tool; and the
//! tool's pace, so that a call that waited for a slot never starts when it could no longer finish in time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::ToolKey;

/// A call refused because its tool had `max` calls in flight until the caller's deadline, or until it could no
/// longer finish by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the tool already runs its maximum of {max} concurrent calls")]
pub struct Saturated {
    pub max: u32,
}

/// How long a tool's successful attempts take, smoothed as TCP smooths round trips (RFC 6298): a mean and a mean
/// deviation, each a moving average; an attempt is expected to take the mean and twice the deviation.
#[derive(Default)]
struct Pace {
    /// The mean and the deviation, in seconds; `None` until the first success.
    stats: Mutex<Option<(f64, f64)>>,
}

impl Pace {
    fn record(&self, took: Duration) {
        let took = took.as_secs_f64();
        let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        *stats = Some(match *stats {
            None => (took, took / 2.0),
            Some((mean, deviation)) => {
                (mean + (took - mean) / 8.0, deviation + ((took - mean).abs() - deviation) / 4.0)
            }
        });
    }

    /// How long the next attempt is expected to take; zero before any success.
    fn expected(&self) -> Duration {
        let stats = *self.stats.lock().unwrap_or_else(|p| p.into_inner());
        stats.map_or(Duration::ZERO, |(mean, deviation)| {
            Duration::try_from_secs_f64(mean + 2.0 * deviation).unwrap_or(Duration::MAX)
        })
    }
}

/// One tool's cap, with the `max` its semaphore was built for, and its pace.
struct Cap {
    max: u32,
    semaphore: Arc<Semaphore>,
    pace: Arc<Pace>,
}

/// A call's slot of its tool's cap, freed when dropped; none for a tool without a cap.
#[must_use = "the slot is freed when dropped"]
pub struct Slot {
    permit: Option<OwnedSemaphorePermit>,
    pace: Option<Arc<Pace>>,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot").field("capped", &self.is_capped()).finish()
    }
}

impl Slot {
    /// Tells the tool's pace that an attempt under this slot succeeded, and how long it took.
    pub fn succeeded(&self, took: Duration) {
        if let Some(pace) = &self.pace {
            pace.record(took);
        }
    }

    /// Whether the call holds a slot of a cap.
    pub fn is_capped(&self) -> bool {
        self.permit.is_some()
    }
}

/// Concurrency caps of every tool, each a semaphore created at the tool's first capped call.
///
/// When a tool's `max` changes, a new semaphore replaces the old (the pace stays): calls holding or awaiting an
/// old permit finish under the old cap, so for a while both caps' calls may run.
#[derive(Default)]
pub struct Concurrency {
    tools: RwLock<HashMap<ToolKey, Cap>>,
}

impl Concurrency {
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits for one of `tool`'s `max` slots until `until` (`None`: without limit); the slot is freed when
    /// dropped. `max == 0` means unlimited: a slot at once, and nothing is stored.
    pub async fn acquire(&self, tool: &ToolKey, max: u32, until: Option<Instant>) -> Result<Slot, Saturated> {
        self.wait(tool, max, until, false).await
    }

    /// A slot for a call whose answer is due by `due`. One free at once is taken whatever the time left (the
    /// caller chose its deadline, and the pace learns only from calls that run). One that must be waited for
    /// is waited for only while an attempt of the tool's expected length would still end by `due`; and when it
    /// comes, the call is refused rather than started if it no longer would. Under overload, the slots go to
    /// calls that can finish instead of to calls that would start late and time out.
    pub async fn acquire_to_finish(&self, tool: &ToolKey, max: u32, due: Instant) -> Result<Slot, Saturated> {
        self.wait(tool, max, Some(due), true).await
    }

    async fn wait(&self, tool: &ToolKey, max: u32, until: Option<Instant>, paced: bool) -> Result<Slot, Saturated> {
        if max == 0 {
            return Ok(Slot { permit: None, pace: None });
        }
        let (semaphore, pace) = match self.try_acquire(tool, max) {
            Ok(slot) => return Ok(slot),
            Err(waiting) => waiting,
        };
        let expected = || if paced { pace.expected() } else { Duration::ZERO };
        let wait = Arc::clone(&semaphore).acquire_owned();
        let permit = match until {
            None => wait.await,
            Some(until) => {
                let give_up = until.checked_sub(expected()).unwrap_or_else(Instant::now);
                tokio::time::timeout_at(give_up, wait).await.map_err(|_elapsed| Saturated { max })?
            }
        };
        // The semaphores are never closed, so an acquire only ends with a permit.
        let permit = permit.map_err(|_closed| Saturated { max })?;
        // The pace may have changed during the wait.
        if until.is_some_and(|until| until.saturating_duration_since(Instant::now()) < expected()) {
            return Err(Saturated { max });
        }
        Ok(Slot { permit: Some(permit), pace: Some(pace) })
    }

    /// A slot if one is free now, else the semaphore to wait on and the pace. The `Arc`s are cloned under the
    /// lock, which is what lets `evict_idle` trust the reference count.
    fn try_acquire(&self, tool: &ToolKey, max: u32) -> Result<Slot, (Arc<Semaphore>, Arc<Pace>)> {
        let take = |cap: &Cap| match Arc::clone(&cap.semaphore).try_acquire_owned() {
            Ok(permit) => Ok(Slot { permit: Some(permit), pace: Some(Arc::clone(&cap.pace)) }),
            Err(_) => Err((Arc::clone(&cap.semaphore), Arc::clone(&cap.pace))),
        };
        if let Some(cap) = self.tools.read().unwrap_or_else(|p| p.into_inner()).get(tool).filter(|cap| cap.max == max) {
            return take(cap);
        }
        let mut tools = self.tools.write().unwrap_or_else(|p| p.into_inner());
        let semaphore = || Arc::new(Semaphore::new(max as usize));
        let cap = tools
            .entry(tool.clone())
            .and_modify(|cap| {
                if cap.max != max {
                    *cap = Cap { max, semaphore: semaphore(), pace: Arc::clone(&cap.pace) }
                }
            })
            .or_insert_with(|| Cap { max, semaphore: semaphore(), pace: Arc::default() });
        take(cap)
    }

    /// Forgets the semaphores no call holds or awaits: a tool that was deleted or lost its cap.
    pub fn evict_idle(&self) {
        let mut tools = self.tools.write().unwrap_or_else(|p| p.into_inner());
        // Permits and waiters each hold a clone, and clones are only made under the lock, so a count of one
        // means the semaphore is idle and stays so.
        tools.retain(|_, cap| Arc::strong_count(&cap.semaphore) > 1);
    }

    /// How many tools have a semaphore.
    pub fn tool_count(&self) -> usize {
        self.tools.read().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::poll;

    use super::*;

    fn search() -> ToolKey {
        ToolKey::new("acme", "search")
    }

    #[tokio::test(start_paused = true)]
    async fn unlimited_needs_no_permit_and_stores_nothing() {
        let caps = Concurrency::new();
        for _ in 0..3 {
            assert!(!caps.acquire(&search(), 0, None).await.unwrap().is_capped());
        }
        assert_eq!(caps.tool_count(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_third_call_under_a_cap_of_two_times_out_at_its_deadline() {
        let caps = Concurrency::new();
        let _first = caps.acquire(&search(), 2, None).await.unwrap();
        let _second = caps.acquire(&search(), 2, None).await.unwrap();
        let start = Instant::now();
        let third = caps.acquire(&search(), 2, Some(start + Duration::from_millis(250))).await;
        assert_eq!(third.unwrap_err(), Saturated { max: 2 });
        assert_eq!(start.elapsed(), Duration::from_millis(250));
        assert!(caps.acquire(&ToolKey::new("acme", "fetch"), 2, Some(start)).await.unwrap().is_capped());
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_call_gets_the_permit_a_finished_call_drops() {
        let caps = Concurrency::new();
        let first = caps.acquire(&search(), 2, None).await.unwrap();
        let _second = caps.acquire(&search(), 2, None).await.unwrap();
        let start = Instant::now();
        let tool = search();
        let third = caps.acquire(&tool, 2, Some(start + Duration::from_secs(5)));
        tokio::pin!(third);
        assert!(poll!(&mut third).is_pending());
        drop(first);
        assert!(third.await.unwrap().is_capped());
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_without_a_deadline_waits_as_long_as_it_takes() {
        let caps = Concurrency::new();
        let held = caps.acquire(&search(), 1, None).await.unwrap();
        let tool = search();
        let waiter = caps.acquire(&tool, 1, None);
        tokio::pin!(waiter);
        assert!(poll!(&mut waiter).is_pending());
        tokio::time::advance(Duration::from_secs(24 * 3600)).await;
        assert!(poll!(&mut waiter).is_pending());
        drop(held);
        assert!(waiter.await.unwrap().is_capped());
    }

    #[tokio::test(start_paused = true)]
    async fn a_changed_cap_replaces_the_semaphore() {
        let caps = Concurrency::new();
        let _held = caps.acquire(&search(), 1, None).await.unwrap();
        let now = Some(Instant::now());
        assert!(caps.acquire(&search(), 1, now).await.is_err());
        let _a = caps.acquire(&search(), 2, now).await.unwrap();
        let _b = caps.acquire(&search(), 2, now).await.unwrap();
        assert_eq!(caps.acquire(&search(), 2, now).await.unwrap_err(), Saturated { max: 2 });
        assert_eq!(caps.tool_count(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn evict_idle_keeps_only_semaphores_in_use() {
        let caps = Concurrency::new();
        let held = caps.acquire(&search(), 1, None).await.unwrap();
        drop(caps.acquire(&ToolKey::new("acme", "fetch"), 1, None).await.unwrap());
        caps.evict_idle();
        assert_eq!(caps.tool_count(), 1);
        assert!(caps.acquire(&search(), 1, Some(Instant::now())).await.is_err(), "the held cap survived");
        drop(held);
        caps.evict_idle();
        assert_eq!(caps.tool_count(), 0);
    }

    /// A cap of one on `search`, its tool's pace told of one success that took `took`, and its slot, held.
    async fn paced(caps: &Concurrency, took: Duration) -> Slot {
        let slot = caps.acquire(&search(), 1, None).await.unwrap();
        slot.succeeded(took);
        slot
    }

    #[test]
    fn the_pace_expects_twice_a_first_attempt_then_settles_on_a_steady_one() {
        let pace = Pace::default();
        assert_eq!(pace.expected(), Duration::ZERO, "nothing expected before a success");
        pace.record(Duration::from_secs(1));
        assert_eq!(pace.expected(), Duration::from_secs(2));
        for _ in 0..50 {
            pace.record(Duration::from_secs(1));
        }
        let steady = pace.expected();
        assert!(steady >= Duration::from_secs(1) && steady < Duration::from_millis(1001), "{steady:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_call_gives_up_once_it_could_no_longer_finish() {
        let caps = Concurrency::new();
        let _held = paced(&caps, Duration::from_secs(1)).await;
        let start = Instant::now();
        let refused = caps.acquire_to_finish(&search(), 1, start + Duration::from_secs(5)).await;
        assert_eq!(refused.unwrap_err(), Saturated { max: 1 });
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(3),
            "at its deadline less the 2 s an attempt is expected to take"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_slot_that_comes_too_late_is_not_taken_but_one_in_time_is() {
        let caps = Concurrency::new();
        let held = paced(&caps, Duration::from_secs(1)).await;
        let (tool, start) = (search(), Instant::now());
        let late = caps.acquire_to_finish(&tool, 1, start + Duration::from_secs(10));
        tokio::pin!(late);
        assert!(poll!(&mut late).is_pending());
        // While it waits, the tool turns slow: an attempt is now expected to take over 13 s.
        held.succeeded(Duration::from_secs(20));
        drop(held);
        assert_eq!(late.await.unwrap_err(), Saturated { max: 1 });
        assert_eq!(start.elapsed(), Duration::ZERO, "refused when the slot came");

        // A free slot is taken whatever the time left; a waiting call with time enough takes the next.
        let held = caps.acquire_to_finish(&tool, 1, start).await.unwrap();
        assert!(held.is_capped());
        let in_time = caps.acquire_to_finish(&tool, 1, start + Duration::from_secs(60));
        tokio::pin!(in_time);
        assert!(poll!(&mut in_time).is_pending());
        tokio::time::advance(Duration::from_secs(30)).await;
        drop(held);
        assert!(in_time.await.unwrap().is_capped(), "30 s left, about 14 s expected");
    }
}
