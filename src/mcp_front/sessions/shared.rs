//! A fleet's MCP sessions (cluster mode): each 2025-11-25 session's record in Redis, one key per session
//! (`{p}:mcp_session:<id>`: its owner's digest and the host's `initialize` params, as JSON), so that a gateway
//! that never saw the session can resume it. The record is written when the session opens, its TTL (the idle
//! timeout) is set again by every request on it at any gateway, and it is deleted by `DELETE`; a gateway's copy
//! ending on its own (idle, the gateway stopping) leaves it for the others. Single-key commands only.

use crate::cluster::{ClusterError, Redis};
use crate::config::Principal;
use rmcp::model::InitializeRequestParams;
use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore, SessionStoreError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// A record longer than this is not written: an `initialize` this large is no host's.
const MAX_RECORD_BYTES: usize = 64 * 1024;

/// What a gateway needs to answer as the session: who opened it, and what the host said when it did.
#[derive(Serialize, Deserialize)]
struct Record {
    /// SHA-256 of the owner principal, in hex: whoever else sends its id is answered 404.
    owner: String,
    initialize: InitializeRequestParams,
}

/// Why a session's record was not written.
#[derive(Debug)]
pub enum Unrecorded {
    /// Redis did not take it: the host may try again.
    Unavailable(ClusterError),
    /// The `initialize` is too large to keep.
    TooLarge,
}

/// The sessions' records, and what passes between the SDK's store calls and the session guard.
pub struct FleetSessions {
    redis: Redis,
    /// A record lives this long after the last request on it, at any gateway.
    idle: Duration,
    /// The `initialize` params of sessions opened here, from the SDK's `store` until the guard writes the record
    /// with the owner it knows.
    opened: Mutex<HashMap<String, InitializeRequestParams>>,
    /// The records the guard found for sessions being resumed here, until the SDK `load`s them.
    resuming: Mutex<HashMap<String, InitializeRequestParams>>,
}

fn locked<T>(map: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    map.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The owner as the record names it: the same principal on every gateway gives the same digest.
fn owner_of(principal: &Principal) -> String {
    let canonical = serde_json::to_vec(&(&principal.tenant, &principal.user_id, &principal.values)).expect("JSON");
    crate::mcp_front::reviewed::hex(&Sha256::digest(canonical))
}

impl FleetSessions {
    pub fn new(redis: Redis, idle: Duration) -> Self {
        Self { redis, idle, opened: Mutex::default(), resuming: Mutex::default() }
    }

    fn key(&self, id: &str) -> String {
        self.redis.key("mcp_session", &[id])
    }

    fn ttl_ms(&self) -> u64 {
        self.idle.as_millis().clamp(1, u128::from(u64::MAX)) as u64
    }

    /// Redis down a moment ago: asked again only every so often (`Redis::recently_failed`).
    fn check_up(&self) -> Result<(), ClusterError> {
        match self.redis.recently_failed() {
            true => Err(self.redis.unavailable("Redis failed a moment ago".into())),
            false => Ok(()),
        }
    }

    /// Writes the record of session `id`, just opened here by `owner`.
    pub async fn record(&self, id: &str, owner: &Principal) -> Result<(), Unrecorded> {
        let kept = locked(&self.opened).remove(id);
        let Some(initialize) = kept else {
            let reason = "the SDK kept no initialize for the session".to_owned();
            return Err(Unrecorded::Unavailable(self.redis.unavailable(reason)));
        };
        let record = serde_json::to_string(&Record { owner: owner_of(owner), initialize }).expect("JSON");
        if record.len() > MAX_RECORD_BYTES {
            return Err(Unrecorded::TooLarge);
        }
        let (key, ttl) = (self.key(id), self.ttl_ms());
        self.redis
            .run(|mut conn| async move {
                redis::cmd("SET").arg(&key).arg(&record).arg("PX").arg(ttl).query_async::<()>(&mut conn).await
            })
            .await
            .map_err(Unrecorded::Unavailable)
    }

    /// Whether session `id`'s record is still there (its TTL set again), or was deleted (closed through another
    /// gateway) or expired.
    pub async fn touch(&self, id: &str) -> Result<bool, ClusterError> {
        self.check_up()?;
        let (key, ttl) = (self.key(id), self.ttl_ms());
        let set: i64 = self
            .redis
            .run(|mut conn| async move { redis::cmd("PEXPIRE").arg(&key).arg(ttl).query_async(&mut conn).await })
            .await?;
        Ok(set == 1)
    }

    /// The `initialize` params of session `id` if it is open and `principal`'s (its TTL set again), else `None`.
    pub async fn lookup(
        &self,
        id: &str,
        principal: &Principal,
    ) -> Result<Option<InitializeRequestParams>, ClusterError> {
        self.check_up()?;
        let (key, ttl) = (self.key(id), self.ttl_ms());
        let found: Option<String> = self
            .redis
            .run(
                |mut conn| async move { redis::cmd("GETEX").arg(&key).arg("PX").arg(ttl).query_async(&mut conn).await },
            )
            .await?;
        let Some(found) = found else { return Ok(None) };
        match serde_json::from_str::<Record>(&found) {
            Ok(record) if record.owner == owner_of(principal) => Ok(Some(record.initialize)),
            Ok(_) => Ok(None),
            Err(err) => {
                // Answered as unknown: the host opens a new session, rather than retry a record none can read.
                tracing::warn!(error = %self.redis.corrupt("MCP session record", err), "an MCP session was not resumed");
                Ok(None)
            }
        }
    }

    /// Keeps session `id`'s record for the SDK's `load`, until the returned guard is dropped.
    pub fn resuming(&self, id: &str, initialize: InitializeRequestParams) -> Resuming<'_> {
        locked(&self.resuming).insert(id.to_owned(), initialize);
        Resuming { shared: self, id: id.to_owned() }
    }

    /// Forgets what this gateway kept of session `id` (its record stays, for the other gateways).
    pub fn forget(&self, id: &str) {
        locked(&self.opened).remove(id);
    }
}

/// A record kept for the SDK while one request resumes its session.
pub struct Resuming<'a> {
    shared: &'a FleetSessions,
    id: String,
}

impl Drop for Resuming<'_> {
    fn drop(&mut self) {
        locked(&self.shared.resuming).remove(&self.id);
    }
}

/// The SDK's side: it `store`s a session it opened (kept for `record`), `load`s one it does not hold when a
/// request names it (what the guard found), and `delete`s one on `DELETE`.
#[async_trait::async_trait]
impl SessionStore for FleetSessions {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        Ok(locked(&self.resuming).get(id).cloned().map(SessionState::new))
    }

    async fn store(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        locked(&self.opened).insert(id.to_owned(), state.initialize_params.clone());
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        let key = self.key(id);
        let deleted =
            self.redis.run(|mut conn| async move { redis::cmd("DEL").arg(&key).query_async::<i64>(&mut conn).await });
        deleted.await.map(drop).map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::owner_of;
    use crate::config::Principal;

    #[test]
    fn an_owner_is_the_whole_principal_and_only_it() {
        let alice = Principal { tenant: "acme".into(), user_id: "alice".into(), ..Principal::default() };
        assert_eq!(owner_of(&alice), owner_of(&alice.clone()));
        let other_tenant = Principal { tenant: "globex".into(), ..alice.clone() };
        let mut with_values = alice.clone();
        with_values.values.insert("region".into(), "eu".into());
        for other in [other_tenant, with_values, Principal::default()] {
            assert_ne!(owner_of(&alice), owner_of(&other), "{other:?}");
        }
        // Parts that run together are not confused: ("ab", "c") is not ("a", "bc").
        let split =
            |t: &str, u: &str| owner_of(&Principal { tenant: t.into(), user_id: u.into(), ..Principal::default() });
        assert_ne!(split("ab", "c"), split("a", "bc"));
    }
}
