//! The sealed `requestState` of a reviewed call on protocol 2026-07-28 (SEP-2322): a call that waits for its
//! reviewer answers `InputRequiredResult` carrying it, and the host's retry brings it back. It is sealed (HMAC-SHA256
//! with the front door's key, from the config or shared through Redis in cluster mode) and binds who called, the
//! tool, the arguments' digest, the tool's definition as registered (its policy) and an expiry, so that a retry
//! with other arguments, under a changed policy, or too late never runs.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A state longer than this is not one the front door sealed.
const MAX_STATE_BYTES: usize = 4096;

/// What a state binds: a retry must match it in all but the expiry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The reviewed call's id, which its review is filed under.
    pub call: String,
    pub tenant: String,
    pub user: String,
    pub tool: String,
    /// SHA-256 of the arguments as the host sent them, in hex.
    pub arguments: String,
    /// SHA-256 of the tool's registered definition, in hex.
    pub policy: String,
    /// Unix time, in milliseconds, after which the state is refused.
    #[serde(default)]
    pub expires_ms: u64,
}

/// Why a state was refused; the host is told only that it is invalid or expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateRefusal {
    Malformed,
    Forged,
    Expired,
    /// Sealed by this gateway, but for another caller, tool, arguments or policy.
    Unbound,
}

/// The key states are sealed with, and how long one holds.
pub struct StateKey {
    key: [u8; 32],
    ttl: Duration,
}

impl StateKey {
    pub fn new(key: [u8; 32], ttl: Duration) -> Self {
        Self { key, ttl }
    }

    fn mac(&self) -> Hmac<Sha256> {
        <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key).expect("HMAC takes a key of any length")
    }

    /// The state of a pending call: `claims`, expiring a `ttl` from now.
    pub fn seal(&self, claims: &Claims) -> String {
        let claims = Claims { expires_ms: now_ms() + self.ttl.as_millis() as u64, ..claims.clone() };
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).expect("claims are JSON"));
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        format!("{body}.{}", URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()))
    }

    /// The claims of a state this key sealed, unexpired, if they bind `expected` (its expiry aside).
    pub fn open(&self, state: &str, expected: Option<&Claims>) -> Result<Claims, StateRefusal> {
        if state.len() > MAX_STATE_BYTES {
            return Err(StateRefusal::Malformed);
        }
        let (body, tag) = state.split_once('.').ok_or(StateRefusal::Malformed)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| StateRefusal::Malformed)?;
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        mac.verify_slice(&tag).map_err(|_| StateRefusal::Forged)?;
        let body = URL_SAFE_NO_PAD.decode(body).map_err(|_| StateRefusal::Malformed)?;
        let claims: Claims = serde_json::from_slice(&body).map_err(|_| StateRefusal::Malformed)?;
        if claims.expires_ms <= now_ms() {
            return Err(StateRefusal::Expired);
        }
        match expected {
            Some(expected) if *expected == Claims { expires_ms: expected.expires_ms, ..claims.clone() } => Ok(claims),
            _ => Err(StateRefusal::Unbound),
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> Claims {
        Claims {
            call: "mcp-1".into(),
            tenant: "acme".into(),
            user: "alice".into(),
            tool: "transfer".into(),
            arguments: "aa".into(),
            policy: "bb".into(),
            expires_ms: 0,
        }
    }

    #[test]
    fn a_sealed_state_opens_for_the_call_it_binds_and_no_other() {
        let key = StateKey::new([7; 32], Duration::from_secs(60));
        let state = key.seal(&claims());
        assert_eq!(key.open(&state, Some(&claims())).unwrap().call, "mcp-1");
        let other = Claims { arguments: "cc".into(), ..claims() };
        assert_eq!(key.open(&state, Some(&other)), Err(StateRefusal::Unbound));
        let repolicied = Claims { policy: "dd".into(), ..claims() };
        assert_eq!(key.open(&state, Some(&repolicied)), Err(StateRefusal::Unbound));
        assert_eq!(key.open(&state, None), Err(StateRefusal::Unbound), "a call that needs no review binds nothing");
    }

    #[test]
    fn a_state_of_another_key_a_changed_one_or_an_expired_one_is_refused() {
        let key = StateKey::new([7; 32], Duration::from_secs(60));
        let state = key.seal(&claims());
        assert_eq!(
            StateKey::new([8; 32], Duration::from_secs(60)).open(&state, Some(&claims())),
            Err(StateRefusal::Forged)
        );
        let (body, tag) = state.split_once('.').unwrap();
        let mut forged = serde_json::from_slice::<Claims>(&URL_SAFE_NO_PAD.decode(body).unwrap()).unwrap();
        forged.arguments = "cc".into();
        let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap()));
        assert_eq!(key.open(&forged, Some(&claims())), Err(StateRefusal::Forged));
        assert_eq!(key.open("nonsense", Some(&claims())), Err(StateRefusal::Malformed));
        let expired = StateKey::new([7; 32], Duration::ZERO).seal(&claims());
        assert_eq!(key.open(&expired, Some(&claims())), Err(StateRefusal::Expired));
    }
}
