//! How many replicas the primaries have had lately. A durable write waits for that many, and a primary found with
//! fewer is not trusted with one: in a failover the old primary loses its replicas one by one while it still takes
//! writes that the promoted one never sees, and the promoted one starts with fewer until they resync. A count
//! lower for longer than [`FORGET_AFTER`] (a replica gone for good) becomes the count.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a lower count of replicas is distrusted.
pub const FORGET_AFTER: Duration = Duration::from_secs(10);

/// The most replicas seen, and since when fewer have been (if they have).
pub struct ReplicaFloor(Mutex<(usize, Option<Instant>)>);

impl ReplicaFloor {
    /// None expected until a primary says how many it has.
    pub fn new() -> Self {
        Self(Mutex::new((0, None)))
    }

    /// How many replicas a write waits for.
    pub fn expected(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    /// A primary has `replicas` now: whether that is as many as lately (else a write on it is not durable).
    pub fn enough(&self, replicas: usize, now: Instant) -> bool {
        let mut floor = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (most, fewer_since) = &mut *floor;
        if replicas >= *most {
            (*most, *fewer_since) = (replicas, None);
            return true;
        }
        let since = *fewer_since.get_or_insert(now);
        if now.duration_since(since) >= FORGET_AFTER {
            (*most, *fewer_since) = (replicas, None);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewer_replicas_are_distrusted_until_they_come_back_or_are_forgotten() {
        let floor = ReplicaFloor::new();
        let start = Instant::now();
        assert_eq!(floor.expected(), 0, "nothing to wait for before a primary is heard from");
        assert!(floor.enough(2, start), "more than expected is enough");
        assert_eq!(floor.expected(), 2);
        assert!(!floor.enough(1, start), "one replica of two gone: a failover may be under way");
        assert!(floor.enough(2, start + Duration::from_secs(1)), "back");
        assert!(!floor.enough(1, start + Duration::from_secs(2)));
        assert!(!floor.enough(1, start + Duration::from_secs(11)), "fewer since 2 s, not 10");
        assert!(floor.enough(1, start + Duration::from_secs(12)), "gone for good after 10 s");
        assert_eq!(floor.expected(), 1);
    }
}
