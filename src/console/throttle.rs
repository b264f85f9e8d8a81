//! How fast one client may guess at the console's tokens: a bucket of login attempts per client address (an IPv6
//! client by its /64), refilled at a steady rate. An attempt takes one before the token is compared and a login
//! that succeeds gives it back, so only wrong guesses spend the bucket, and an empty bucket refuses even the right
//! token (else the answer would tell a guess apart). The table of clients is bounded.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong guesses a client may make at once.
pub const BURST: u32 = 10;
/// Then one more each this long: 10 a minute.
pub const REFILL: Duration = Duration::from_secs(6);
/// Clients tracked at most; past it, those whose bucket is full again are forgotten, then the fullest.
const MAX_CLIENTS: usize = 4_096;

/// The buckets, by client.
#[derive(Default)]
pub struct Throttle {
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

#[derive(Clone, Copy)]
struct Bucket {
    attempts: f64,
    at: Instant,
}

impl Bucket {
    /// What is left now, refilled for the time since it was last seen.
    fn now(self, now: Instant) -> f64 {
        let refilled = now.saturating_duration_since(self.at).as_secs_f64() / REFILL.as_secs_f64();
        (self.attempts + refilled).min(f64::from(BURST))
    }
}

impl Throttle {
    /// Takes one attempt for `client` (as `client` names it); with none left, how long until one is.
    pub fn take(&self, key: IpAddr) -> Result<(), Duration> {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if !buckets.contains_key(&key) && buckets.len() >= MAX_CLIENTS {
            make_room(&mut buckets, now);
        }
        let full = Bucket { attempts: f64::from(BURST), at: now };
        let bucket = buckets.entry(key).or_insert(full);
        let left = bucket.now(now);
        if left < 1.0 {
            return Err(REFILL.mul_f64(1.0 - left));
        }
        *bucket = Bucket { attempts: left - 1.0, at: now };
        Ok(())
    }

    /// Gives back the attempt a login that succeeded took.
    pub fn give_back(&self, key: IpAddr) {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(bucket) = buckets.get_mut(&key) {
            *bucket = Bucket { attempts: (bucket.now(now) + 1.0).min(f64::from(BURST)), at: now };
        }
    }
}

/// Forgets the clients whose bucket is full again (as good as never seen), or else the one with the most left.
fn make_room(buckets: &mut HashMap<IpAddr, Bucket>, now: Instant) {
    buckets.retain(|_, b| b.now(now) < f64::from(BURST));
    if buckets.len() >= MAX_CLIENTS
        && let Some(fullest) = buckets.iter().max_by(|a, b| a.1.now(now).total_cmp(&b.1.now(now))).map(|(k, _)| *k)
    {
        buckets.remove(&fullest);
    }
}

/// A client as the console counts it, from its connection's address: an IPv6 one by its /64 (one host may hold a
/// whole /64), an IPv4 one mapped into IPv6 as the IPv4 address.
pub fn client(addr: Option<SocketAddr>) -> IpAddr {
    match addr.map(|a| a.ip().to_canonical()) {
        Some(IpAddr::V6(v6)) => IpAddr::V6(Ipv6Addr::from(v6.to_bits() & !u128::from(u64::MAX))),
        Some(v4) => v4,
        None => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_gets_its_burst_then_waits_and_a_success_costs_nothing() {
        let throttle = Throttle::default();
        let (one, other) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]));
        throttle.take(one).unwrap();
        throttle.give_back(one);
        for _ in 0..BURST {
            throttle.take(one).unwrap();
        }
        let wait = throttle.take(one).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= REFILL, "{wait:?}");
        throttle.take(other).expect("another client has its own bucket");
    }

    #[test]
    fn an_ipv6_client_is_its_64_and_the_table_stays_bounded() {
        let at = |addr: &str| client(Some(addr.parse().unwrap()));
        assert_eq!(at("[2001:db8::1]:1"), at("[2001:db8::ffff:1]:2"));
        assert_ne!(at("[2001:db8::1]:1"), at("[2001:db8:0:1::1]:1"));
        assert_eq!(at("[::ffff:10.0.0.1]:1"), IpAddr::from([10, 0, 0, 1]));
        let throttle = Throttle::default();
        for i in 0..MAX_CLIENTS as u32 + 10 {
            throttle.take(IpAddr::from(i.to_be_bytes())).unwrap();
        }
        assert!(throttle.buckets.lock().unwrap().len() <= MAX_CLIENTS);
    }
}
