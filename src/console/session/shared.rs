//! The console's sessions in the cluster's Redis, so that any gateway of a fleet behind a plain load balancer
//! answers a logged-in reviewer, a restart logs no one out, and a logout ends a session on every gateway.
//!
//! A session is the string `{p}:console_session:{h}`, where `h` is the SHA-256 of its id (hex): the id itself,
//! the cookie's value, is never in Redis, so reading Redis gives no one a session. It holds the session as JSON
//! (name, admin, CSRF token, client, login time in Unix ms, and `opened_by`), written once at login with a TTL of
//! LIFETIME, so its TTL is always what is left of the session. `opened_by` is HMAC-SHA256 of the id keyed with the
//! token that opened it (`Sessions::opened_by`): a gateway lets a session in only while the token of its role is
//! that one, so a token changed in the config (a gateway restarted with another, or one configured with another)
//! ends, on that gateway, the sessions the old one opened, as a restart ends them all on a single gateway. A
//! gateway that refuses a session leaves it in Redis, for the gateways still holding its token during a rolling
//! change; it expires with its TTL. Lacking the id, a Redis reader cannot test guesses of a token against it.
//!
//! Each role's sessions are bounded as in memory: each is also a member `client h` of the sorted set
//! `{p}:console_sessions:{role}`, scored by its login time; a login drops the members older than LIFETIME, adds
//! its own, and renews the set's TTL to LIFETIME (so an idle fleet leaves nothing behind), and past MAX_SESSIONS
//! ends the oldest session of the client holding the most. Every command touches one key, for a Redis Cluster
//! may keep the set and a session on different shards: a login writes the set, then the session; an eviction and
//! a logout delete the session, then its member. A step that fails in between leaves a member without a
//! session, which only counts against the bound until it is LIFETIME old, and lets no one in.
//!
//! Every lookup is one GET under the op timeout. While Redis does not answer, each operation fails, and the
//! console answers 503 rather than let anyone in or log anyone out.

use super::{LIFETIME, MAX_SESSIONS, Session, hex};
use crate::cluster::{ClusterError, Redis};
use crate::review::unix_ms;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::net::IpAddr;
use subtle::ConstantTimeEq;

/// What Redis holds of one session.
#[derive(Serialize, Deserialize)]
struct Stored {
    name: String,
    admin: bool,
    csrf: String,
    client: IpAddr,
    started_ms: u64,
    /// HMAC-SHA256 of the id, keyed with the token that opened the session (hex).
    opened_by: String,
}

/// The sessions in Redis. Built by `Sessions::shared`.
pub struct SharedSessions {
    redis: Redis,
}

impl SharedSessions {
    pub fn new(redis: Redis) -> Self {
        Self { redis }
    }

    /// Records a new session: its member in its role's set, then the session. Two round trips, and two more for
    /// each session a full set ends.
    pub async fn insert(&self, id: &str, session: &Session, opened_by: String) -> Result<(), ClusterError> {
        self.up()?;
        let (now, lifetime) = (unix_ms(), lifetime_ms());
        let hash = digest(id);
        let (index, member) = (self.index(session.admin), member(session.client, &hash));
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("ZREMRANGEBYSCORE")
            .arg(&index)
            .arg("-inf")
            .arg(now.saturating_sub(lifetime))
            .ignore()
            .zadd(&index, &member, now)
            .ignore()
            .pexpire(&index, lifetime as i64)
            .ignore()
            .zcard(&index);
        let (held,): (usize,) = self.redis.run(|mut conn| async move { pipe.query_async(&mut conn).await }).await?;
        let (name, csrf) = (session.name.clone(), session.csrf.clone());
        let stored = Stored { name, admin: session.admin, csrf, client: session.client, started_ms: now, opened_by };
        let json = serde_json::to_string(&stored).expect("a session is JSON");
        let key = self.key(&hash);
        self.redis
            .run(|mut conn| async move {
                redis::cmd("SET").arg(key).arg(json).arg("PX").arg(lifetime).query_async::<()>(&mut conn).await
            })
            .await?;
        if held > MAX_SESSIONS {
            self.make_room(&index, &member, held - MAX_SESSIONS).await?;
        }
        Ok(())
    }

    /// The session `id` names, if Redis holds it and `opened_by(admin)` (what this gateway's token of the
    /// session's role makes of the id) is what opened it. One GET.
    pub async fn find(
        &self,
        id: &str,
        opened_by: impl Fn(bool) -> Option<String>,
    ) -> Result<Option<Session>, ClusterError> {
        if !well_formed(id) {
            return Ok(None);
        }
        self.up()?;
        let key = self.key(&digest(id));
        let json: Option<String> =
            self.redis.run(|mut conn| async move { redis::cmd("GET").arg(key).query_async(&mut conn).await }).await?;
        let Some(json) = json else { return Ok(None) };
        let stored: Stored = match serde_json::from_str(&json) {
            Ok(stored) => stored,
            Err(err) => {
                tracing::warn!(error = %err, "an unreadable console session in Redis: refused");
                return Ok(None);
            }
        };
        let ours = opened_by(stored.admin)
            .is_some_and(|expected| bool::from(expected.as_bytes().ct_eq(stored.opened_by.as_bytes())));
        if !ours {
            tracing::info!(reviewer = %stored.name, "a console session opened by a token this gateway no longer holds: refused");
            return Ok(None);
        }
        Ok(Some(Session { name: stored.name, admin: stored.admin, csrf: stored.csrf, client: stored.client }))
    }

    /// Ends the session `id` names (`session`) on every gateway: the session, then its member.
    pub async fn remove(&self, id: &str, session: &Session) -> Result<(), ClusterError> {
        if !well_formed(id) {
            return Ok(());
        }
        self.up()?;
        let hash = digest(id);
        self.end(&self.index(session.admin), &member(session.client, &hash)).await
    }

    /// Ends the `excess` oldest sessions of the clients holding the most in `index`, never `new` (the login
    /// being made room for).
    async fn make_room(&self, index: &str, new: &str, excess: usize) -> Result<(), ClusterError> {
        let key = index.to_owned();
        let members: Vec<(String, f64)> = self
            .redis
            .run(|mut conn| async move {
                redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).arg("WITHSCORES").query_async(&mut conn).await
            })
            .await?;
        for victim in victims(&members, new, excess) {
            self.end(index, &victim).await?;
        }
        Ok(())
    }

    /// Deletes the session a member names, then the member.
    async fn end(&self, index: &str, member: &str) -> Result<(), ClusterError> {
        let hash = member.rsplit(' ').next().unwrap_or_default();
        let key = self.key(hash);
        self.redis.run(|mut conn| async move { redis::cmd("DEL").arg(key).query_async::<()>(&mut conn).await }).await?;
        let (index, member) = (index.to_owned(), member.to_owned());
        self.redis
            .run(|mut conn| async move { redis::cmd("ZREM").arg(index).arg(member).query_async::<()>(&mut conn).await })
            .await
    }

    /// Refuses at once while Redis failed moments ago, rather than wait out the op timeout on every page.
    fn up(&self) -> Result<(), ClusterError> {
        if self.redis.recently_failed() {
            return Err(self.redis.unavailable("Redis failed moments ago".into()));
        }
        Ok(())
    }

    fn key(&self, hash: &str) -> String {
        self.redis.key("console_session", &[hash])
    }

    fn index(&self, admin: bool) -> String {
        self.redis.key("console_sessions", &[if admin { "admin" } else { "review" }])
    }
}

/// The members to end so that `excess` fewer remain: each time, the oldest of the client holding the most (of
/// those already there: `new` is neither counted nor ended).
fn victims(members: &[(String, f64)], new: &str, excess: usize) -> Vec<String> {
    let client = |member: &str| member.split(' ').next().unwrap_or_default().to_owned();
    let mut held: HashMap<String, Vec<(f64, &str)>> = HashMap::new();
    for (member, score) in members.iter().filter(|(m, _)| m != new) {
        held.entry(client(member)).or_default().push((*score, member));
    }
    let mut ended = Vec::new();
    for _ in 0..excess {
        let Some(busiest) = held.values_mut().filter(|v| !v.is_empty()).max_by_key(|v| v.len()) else { break };
        let oldest = (0..busiest.len()).min_by(|&a, &b| busiest[a].0.total_cmp(&busiest[b].0)).unwrap_or(0);
        ended.push(busiest.swap_remove(oldest).1.to_owned());
    }
    ended
}

/// A set member: the client, then the id's hash.
fn member(client: IpAddr, hash: &str) -> String {
    format!("{client} {hash}")
}

/// SHA-256 of an id, in hex: what names its key.
fn digest(id: &str) -> String {
    hex(&Sha256::digest(id.as_bytes()))
}

/// An id as `random_token` makes them: 64 hex digits. Any other cookie costs no round trip.
fn well_formed(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

fn lifetime_ms() -> u64 {
    u64::try_from(LIFETIME.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_set_ends_the_oldest_of_the_busiest_client_and_never_the_new_login() {
        let members: Vec<(String, f64)> = [("10.0.0.1 a", 1.0), ("10.0.0.2 b", 2.0), ("10.0.0.2 c", 3.0)]
            .into_iter()
            .chain([("10.0.0.2 new", 0.5)])
            .map(|(m, s)| (m.to_owned(), s))
            .collect();
        assert_eq!(victims(&members, "10.0.0.2 new", 1), ["10.0.0.2 b"]);
        let two = victims(&members, "10.0.0.2 new", 2);
        assert_eq!(two[0], "10.0.0.2 b");
        assert!(two[1] == "10.0.0.1 a" || two[1] == "10.0.0.2 c", "{two:?}");
        assert_eq!(victims(&members, "10.0.0.2 new", 9).len(), 3, "never the new login");
    }

    #[test]
    fn only_an_id_the_console_makes_is_looked_up_and_its_key_holds_a_hash_of_it() {
        let id = super::super::random_token();
        assert!(well_formed(&id) && !well_formed("forged") && !well_formed(&format!("{id}0")));
        let hash = digest(&id);
        assert_eq!(hash.len(), 64);
        assert_ne!(hash, id);
        assert_eq!(member(IpAddr::from([10, 0, 0, 1]), &hash).rsplit(' ').next(), Some(hash.as_str()));
    }
}
