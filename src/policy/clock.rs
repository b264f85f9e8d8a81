//! The policy clock: real monotonic time in production, a hand-advanced fake in tests, one type for both.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Time as the policy module sees it: a `Duration` since the clock's origin.
///
/// Rate limiters, budgets and eviction all read the same `Clock`, so a test drives every limit by calling
/// [`Clock::advance`] on a fake clock instead of sleeping. Clones share one time line.
#[derive(Clone, Debug)]
pub struct Clock {
    source: Source,
}

#[derive(Clone, Debug)]
enum Source {
    /// Monotonic time since `origin`.
    Real { origin: Instant },
    /// Nanoseconds since the origin, moved only by `advance`; shared by clones.
    Fake { nanos: Arc<AtomicU64> },
}

impl Clock {
    /// A clock that follows the monotonic system clock, starting at zero now.
    pub fn real() -> Self {
        Self { source: Source::Real { origin: Instant::now() } }
    }

    /// A clock that stands still at zero until [`Clock::advance`] moves it.
    pub fn fake() -> Self {
        Self { source: Source::Fake { nanos: Arc::new(AtomicU64::new(0)) } }
    }

    /// Time since the clock's origin. Never goes backwards.
    pub fn now(&self) -> Duration {
        match &self.source {
            Source::Real { origin } => origin.elapsed(),
            Source::Fake { nanos } => Duration::from_nanos(nanos.load(Ordering::Acquire)),
        }
    }

    /// Moves a fake clock forward by `by`, for every clone at once.
    ///
    /// # Panics
    /// On a real clock, which only time moves, and if the fake time would pass ~584 years.
    pub fn advance(&self, by: Duration) {
        let Source::Fake { nanos } = &self.source else {
            panic!("advance called on a real clock; only a fake clock can be moved by hand");
        };
        let by = u64::try_from(by.as_nanos()).expect("a fake clock advance fits in u64 nanoseconds");
        nanos
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| now.checked_add(by))
            .expect("a fake clock stays within u64 nanoseconds");
    }

    /// Whether this is a fake clock (tests).
    pub fn is_fake(&self) -> bool {
        matches!(self.source, Source::Fake { .. })
    }
}

/// governor reads the same time line: its instants are `Duration`s since the clock's origin.
///
/// `ReasonablyRealtime` is deliberately not implemented: it is only needed by governor's async waiting
/// (`until_ready`), which the policy never uses since a limited call is refused, not delayed.
impl governor::clock::Clock for Clock {
    type Instant = Duration;

    fn now(&self) -> Duration {
        Clock::now(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fake_clock_moves_only_when_advanced_and_clones_share_it() {
        let clock = Clock::fake();
        let clone = clock.clone();
        assert_eq!(clock.now(), Duration::ZERO);
        clock.advance(Duration::from_millis(250));
        assert_eq!(clone.now(), Duration::from_millis(250));
        clone.advance(Duration::from_nanos(1));
        assert_eq!(clock.now(), Duration::from_nanos(250_000_001));
        assert_eq!(governor::clock::Clock::now(&clock), clock.now());
        assert!(clock.is_fake());
    }

    #[test]
    fn a_real_clock_is_monotonic() {
        let clock = Clock::real();
        let first = clock.now();
        #[expect(clippy::disallowed_methods, reason = "a plain test thread: the real clock must see time pass")]
        std::thread::sleep(Duration::from_millis(2));
        let later = clock.now();
        assert!(later >= first + Duration::from_millis(2), "it moves with time: {first:?} then {later:?}");
        assert!(!clock.is_fake());
    }

    #[test]
    #[should_panic(expected = "real clock")]
    fn advancing_a_real_clock_panics() {
        Clock::real().advance(Duration::from_secs(1));
    }
}
