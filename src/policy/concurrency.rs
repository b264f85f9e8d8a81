//! Concurrency caps: at most `max` calls of a tool in flight, through one tokio semaphore per tool.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::ToolKey;

/// A call refused because its tool had `max` calls in flight until the caller's deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the tool already runs its maximum of {max} concurrent calls")]
pub struct Saturated {
    pub max: u32,
}

/// One tool's cap, with the `max` its semaphore was built for.
struct Cap {
    max: u32,
    semaphore: Arc<Semaphore>,
}

/// Concurrency caps of every tool, each a semaphore created at the tool's first capped call.
///
/// When a tool's `max` changes, a new semaphore replaces the old: calls holding or awaiting an old permit
/// finish under the old cap, so for a while both caps' calls may run.
#[derive(Default)]
pub struct Concurrency {
    tools: RwLock<HashMap<ToolKey, Cap>>,
}

impl Concurrency {
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits for one of `tool`'s `max` slots until `until` (`None`: without limit); the slot is freed when the
    /// permit is dropped. `max == 0` means unlimited: `Ok(None)` at once, and nothing is stored.
    pub async fn acquire(
        &self,
        tool: &ToolKey,
        max: u32,
        until: Option<Instant>,
    ) -> Result<Option<OwnedSemaphorePermit>, Saturated> {
        if max == 0 {
            return Ok(None);
        }
        let semaphore = match self.try_acquire(tool, max) {
            Ok(permit) => return Ok(Some(permit)),
            Err(semaphore) => semaphore,
        };
        let wait = semaphore.acquire_owned();
        let permit = match until {
            None => wait.await,
            Some(deadline) => tokio::time::timeout_at(deadline, wait).await.map_err(|_elapsed| Saturated { max })?,
        };
        // The semaphores are never closed, so an acquire only ends with a permit.
        permit.map(Some).map_err(|_closed| Saturated { max })
    }

    /// A permit if one is free now, else the semaphore to wait on. The `Arc` is cloned under the lock, which is
    /// what lets `evict_idle` trust the reference count.
    fn try_acquire(&self, tool: &ToolKey, max: u32) -> Result<OwnedSemaphorePermit, Arc<Semaphore>> {
        let take = |cap: &Cap| Arc::clone(&cap.semaphore).try_acquire_owned().map_err(|_| Arc::clone(&cap.semaphore));
        if let Some(cap) = self.tools.read().unwrap_or_else(|p| p.into_inner()).get(tool).filter(|cap| cap.max == max) {
            return take(cap);
        }
        let mut tools = self.tools.write().unwrap_or_else(|p| p.into_inner());
        let fresh = || Cap { max, semaphore: Arc::new(Semaphore::new(max as usize)) };
        let cap = tools
            .entry(tool.clone())
            .and_modify(|cap| {
                if cap.max != max {
                    *cap = fresh()
                }
            })
            .or_insert_with(fresh);
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
            assert!(caps.acquire(&search(), 0, None).await.unwrap().is_none());
        }
        assert_eq!(caps.tool_count(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_third_call_under_a_cap_of_two_times_out_at_its_deadline() {
        let caps = Concurrency::new();
        let _first = caps.acquire(&search(), 2, None).await.unwrap().unwrap();
        let _second = caps.acquire(&search(), 2, None).await.unwrap().unwrap();
        let start = Instant::now();
        let third = caps.acquire(&search(), 2, Some(start + Duration::from_millis(250))).await;
        assert_eq!(third.unwrap_err(), Saturated { max: 2 });
        assert_eq!(start.elapsed(), Duration::from_millis(250));
        assert!(caps.acquire(&ToolKey::new("acme", "fetch"), 2, Some(start)).await.unwrap().is_some());
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
        assert!(third.await.unwrap().is_some());
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
        assert!(waiter.await.unwrap().is_some());
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
}
