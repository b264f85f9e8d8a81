//! `[mcp_front]`: the MCP front door's listener, the hosts and origins it accepts, its bounds on sessions, and the
//! bearer tokens that say who is calling. A token is read from the environment variable its entry names, never
//! from the file.

use super::ConfigError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// The table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMcpFront {
    /// Serves `http://{listen}/mcp`; absent, there is no front door (unless `--mcp-listen` sets one).
    pub listen: Option<String>,
    /// `Host` values accepted, as names or `host:port` (a sidecar is reached by its service name).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin` values accepted, with their scheme (`http://localhost:*`); empty: loopback origins only.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// MCP sessions open at once, in all (default 1,024) and for one principal (default 64).
    pub max_sessions: Option<usize>,
    pub max_sessions_per_principal: Option<usize>,
    /// A session with no request for this long ends (default 300).
    pub session_idle_s: Option<u64>,
    /// How long a user is given to answer a confirmation (`elicitation/create`) before the call is left to a
    /// reviewer (default 30).
    pub confirm_timeout_s: Option<u64>,
    /// The environment variable holding the key (32 bytes or more) a waiting reviewed call's `requestState` is
    /// sealed with on 2026-07-28. Unset: one generated at start, or in cluster mode one shared through Redis.
    pub state_key_env: Option<String>,
    /// How long a waiting reviewed call's `requestState` holds (default 3,600).
    pub request_state_ttl_s: Option<u64>,
    #[serde(default)]
    pub tokens: Vec<RawToken>,
    /// OAuth 2.1 resource server: callers present a JWT the issuer signed.
    pub jwt: Option<RawJwt>,
}

/// `[mcp_front.jwt]`: how a JWT is checked, and which claims say who is calling.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawJwt {
    /// The issuer's JWKS: an `https://`/`http://` URL (fetched at start and every `refresh_s`) or a file path.
    pub jwks: String,
    pub issuer: String,
    /// The front door's canonical URL, which tokens must be issued for (`aud`).
    pub audience: String,
    pub user_claim: Option<String>,
    pub tenant_claim: Option<String>,
    pub refresh_s: Option<u64>,
}

/// Where the issuer's keys are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    Url(String),
    File(std::path::PathBuf),
}

/// The claim that names the user, unless `user_claim` says otherwise.
pub const DEFAULT_USER_CLAIM: &str = "sub";
/// How often the JWKS is fetched again.
pub const DEFAULT_JWKS_REFRESH: std::time::Duration = std::time::Duration::from_secs(300);

/// `[mcp_front.jwt]` as checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtSettings {
    pub jwks: JwksSource,
    pub issuer: String,
    pub audience: String,
    pub user_claim: String,
    /// `None`: every JWT caller is of the shared tenant.
    pub tenant_claim: Option<String>,
    pub refresh: std::time::Duration,
}

impl JwtSettings {
    fn from_raw(raw: RawJwt, base: &Path) -> Result<Self, ConfigError> {
        let invalid = |reason: &str| ConfigError::Invalid(format!("mcp_front.jwt.{reason}"));
        if raw.issuer.is_empty() || raw.audience.is_empty() {
            return Err(invalid("issuer and audience are required"));
        }
        if url::Url::parse(&raw.audience).is_err() {
            return Err(invalid(
                "audience must be the front door's canonical URL, such as https://toolgate.example/mcp",
            ));
        }
        let jwks = if raw.jwks.starts_with("https://") || raw.jwks.starts_with("http://") {
            JwksSource::Url(raw.jwks)
        } else {
            JwksSource::File(base.join(raw.jwks))
        };
        Ok(Self {
            jwks,
            issuer: raw.issuer,
            audience: raw.audience,
            user_claim: raw.user_claim.unwrap_or_else(|| DEFAULT_USER_CLAIM.into()),
            tenant_claim: raw.tenant_claim,
            refresh: raw.refresh_s.map_or(DEFAULT_JWKS_REFRESH, |s| std::time::Duration::from_secs(s.max(1))),
        })
    }
}

/// `[[mcp_front.tokens]]`: a static bearer token and the principal it stands for.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawToken {
    /// The environment variable holding the token.
    pub token_env: String,
    pub user_id: String,
    #[serde(default)]
    pub tenant: String,
    /// Further context values an injected parameter may be filled from (`context.<name>`).
    #[serde(default)]
    pub values: BTreeMap<String, String>,
}

/// Who is calling, as a token says: every injected value of its calls comes from here, never from the client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Principal {
    pub tenant: String,
    pub user_id: String,
    pub values: BTreeMap<String, String>,
}

/// MCP sessions open at once, in all.
pub const DEFAULT_MAX_SESSIONS: usize = 1024;
/// MCP sessions open at once for one principal.
pub const DEFAULT_MAX_SESSIONS_PER_PRINCIPAL: usize = 64;
/// An MCP session idle this long ends.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(300);
/// A waiting reviewed call's `requestState` holds this long.
pub const DEFAULT_REQUEST_STATE_TTL: Duration = Duration::from_secs(3600);
/// The fewest bytes a configured `requestState` key may have.
pub const MIN_STATE_KEY_BYTES: usize = 32;
/// How long a confirmation asked of the user may take.
pub const DEFAULT_CONFIRM_TIMEOUT: Duration = Duration::from_secs(30);

/// The front door as configured.
#[derive(Clone, PartialEq)]
pub struct McpFrontSettings {
    pub listen: Option<SocketAddr>,
    /// `Host` values accepted; loopback names by default.
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted when one is sent; loopback origins by default. Empty: none.
    pub allowed_origins: Vec<String>,
    /// Each token with its principal. With no token and no `jwt`, there is no authentication (then the door
    /// listens on loopback only).
    pub tokens: Vec<(String, Principal)>,
    pub jwt: Option<JwtSettings>,
    /// Sessions open at once, in all and for one principal: past either, `initialize` is answered 503.
    pub max_sessions: usize,
    pub max_sessions_per_principal: usize,
    /// A session idle this long ends, and its id is answered 404 from then on.
    pub session_idle: Duration,
    /// How long a confirmation asked of the user may take before the call is left to a reviewer.
    pub confirm_timeout: Duration,
    /// The configured key `requestState` is sealed with (`state_key_env`), if one is.
    pub state_key: Option<String>,
    pub request_state_ttl: Duration,
}

impl Default for McpFrontSettings {
    fn default() -> Self {
        Self {
            listen: None,
            allowed_hosts: LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect(),
            allowed_origins: loopback_origins(),
            tokens: Vec::new(),
            jwt: None,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_principal: DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
            session_idle: DEFAULT_SESSION_IDLE,
            confirm_timeout: DEFAULT_CONFIRM_TIMEOUT,
            state_key: None,
            request_state_ttl: DEFAULT_REQUEST_STATE_TTL,
        }
    }
}

impl std::fmt::Debug for McpFrontSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpFrontSettings")
            .field("listen", &self.listen)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("tokens", &self.tokens.iter().map(|(_, p)| p).collect::<Vec<_>>())
            .field("jwt", &self.jwt)
            .field("max_sessions", &self.max_sessions)
            .field("max_sessions_per_principal", &self.max_sessions_per_principal)
            .field("session_idle", &self.session_idle)
            .field("confirm_timeout", &self.confirm_timeout)
            .field("state_key", &self.state_key.as_ref().map(|_| "<redacted>"))
            .field("request_state_ttl", &self.request_state_ttl)
            .finish()
    }
}

/// Hosts accepted when none are configured: loopback only, as the MCP transport spec advises.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Origins accepted when none are configured: pages served from loopback, on any port.
fn loopback_origins() -> Vec<String> {
    let hosts = ["localhost", "127.0.0.1", "[::1]"];
    ["http", "https"].iter().flat_map(|scheme| hosts.map(|host| format!("{scheme}://{host}:*"))).collect()
}

/// A positive count or number of seconds, or `default` when absent.
fn positive<T: PartialEq + From<u8>>(value: Option<T>, default: T, name: &str) -> Result<T, ConfigError> {
    match value {
        Some(v) if v == T::from(0) => Err(ConfigError::Invalid(format!("mcp_front.{name} must be at least 1"))),
        Some(v) => Ok(v),
        None => Ok(default),
    }
}

/// Each token, read from the variable its entry names, with its principal.
fn tokens(raw: Vec<RawToken>, env: impl Fn(&str) -> Option<String>) -> Result<Vec<(String, Principal)>, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid(format!("mcp_front.tokens: {reason}"));
    let mut tokens = Vec::with_capacity(raw.len());
    for t in raw {
        let token = env(&t.token_env)
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| invalid(format!("the variable {:?} is not set or empty", t.token_env)))?;
        if t.user_id.is_empty() {
            return Err(invalid(format!("the token in {:?} needs a user_id", t.token_env)));
        }
        if tokens.iter().any(|(known, _)| *known == token) {
            return Err(invalid(format!("the token in {:?} is given twice", t.token_env)));
        }
        tokens.push((token, Principal { tenant: t.tenant, user_id: t.user_id, values: t.values }));
    }
    Ok(tokens)
}

impl McpFrontSettings {
    /// Reads the table, with `listen` overridden by `--mcp-listen` / `TOOLGATE_MCP_LISTEN`, and each token from the
    /// environment variable it names (`env` reads it; the process environment in production).
    pub fn from_raw(
        raw: RawMcpFront,
        listen: Option<String>,
        base: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let invalid = |reason: String| ConfigError::Invalid(format!("mcp_front.{reason}"));
        let listen = match listen.or(raw.listen) {
            None => None,
            Some(text) => Some(super::console::address(&text).map_err(|e| {
                invalid(format!("listen {text:?} is not a port or an address like 127.0.0.1:8808: {e}"))
            })?),
        };
        let state_key = match &raw.state_key_env {
            None => None,
            Some(name) => match env(name) {
                Some(key) if key.len() >= MIN_STATE_KEY_BYTES => Some(key),
                _ => {
                    return Err(invalid(format!(
                        "state_key_env: the variable {name:?} must hold a key of {MIN_STATE_KEY_BYTES} bytes or more"
                    )));
                }
            },
        };
        let tokens = tokens(raw.tokens, env)?;
        let allowed_hosts = if raw.allowed_hosts.is_empty() {
            LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect()
        } else {
            raw.allowed_hosts
        };
        let allowed_origins = if raw.allowed_origins.is_empty() { loopback_origins() } else { raw.allowed_origins };
        let jwt = raw.jwt.map(|jwt| JwtSettings::from_raw(jwt, base)).transpose()?;
        let d = Self::default();
        let settings = Self {
            listen,
            allowed_hosts,
            allowed_origins,
            tokens,
            jwt,
            max_sessions: positive(raw.max_sessions, d.max_sessions, "max_sessions")?,
            max_sessions_per_principal: positive(
                raw.max_sessions_per_principal,
                d.max_sessions_per_principal,
                "max_sessions_per_principal",
            )?,
            session_idle: Duration::from_secs(positive(
                raw.session_idle_s,
                d.session_idle.as_secs(),
                "session_idle_s",
            )?),
            confirm_timeout: Duration::from_secs(positive(
                raw.confirm_timeout_s,
                d.confirm_timeout.as_secs(),
                "confirm_timeout_s",
            )?),
            state_key,
            request_state_ttl: Duration::from_secs(positive(
                raw.request_state_ttl_s,
                d.request_state_ttl.as_secs(),
                "request_state_ttl_s",
            )?),
        };
        settings.check()?;
        Ok(settings)
    }

    /// With no token, anyone who reaches the port is a caller: only loopback may be listened on then.
    fn check(&self) -> Result<(), ConfigError> {
        if let Some(addr) = self.listen
            && self.tokens.is_empty()
            && self.jwt.is_none()
            && !addr.ip().is_loopback()
        {
            return Err(ConfigError::Invalid(format!(
                "mcp_front.listen {addr} is not a loopback address, and neither [[mcp_front.tokens]] nor \
                 [mcp_front.jwt] is configured: add one, or listen on 127.0.0.1"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(listen: &str, tokens: Vec<RawToken>) -> RawMcpFront {
        RawMcpFront { listen: Some(listen.into()), tokens, ..RawMcpFront::default() }
    }

    fn token(env: &str, user: &str) -> RawToken {
        RawToken { token_env: env.into(), user_id: user.into(), tenant: "acme".into(), values: BTreeMap::new() }
    }

    #[test]
    fn tokens_come_from_the_environment_and_open_other_addresses() {
        let env = |name: &str| (name == "ALICE").then(|| "s3cret".to_string());
        let settings =
            McpFrontSettings::from_raw(raw("0.0.0.0:8808", vec![token("ALICE", "alice")]), None, Path::new("."), env)
                .unwrap();
        assert_eq!(settings.tokens[0].0, "s3cret");
        assert_eq!(settings.tokens[0].1.user_id, "alice");
        assert_eq!(settings.allowed_hosts, LOOPBACK_HOSTS);
        assert!(settings.allowed_origins.contains(&"http://[::1]:*".to_string()), "loopback origins by default");
        assert_eq!((settings.max_sessions, settings.max_sessions_per_principal), (1024, 64));
        assert!(!format!("{settings:?}").contains("s3cret"), "a token never shows in logs");
    }

    #[test]
    fn a_missing_variable_an_open_door_beyond_loopback_and_a_bad_address_are_refused() {
        let none = |_: &str| None;
        let missing =
            McpFrontSettings::from_raw(raw("127.0.0.1:8808", vec![token("BOB", "bob")]), None, Path::new("."), none);
        assert!(missing.unwrap_err().to_string().contains("\"BOB\" is not set"));
        let open = McpFrontSettings::from_raw(raw("0.0.0.0:8808", Vec::new()), None, Path::new("."), none);
        assert!(open.unwrap_err().to_string().contains("not a loopback address"));
        let bad = McpFrontSettings::from_raw(raw("nowhere", Vec::new()), None, Path::new("."), none);
        assert!(bad.unwrap_err().to_string().contains("mcp_front.listen \"nowhere\""));
        let zero = RawMcpFront { max_sessions_per_principal: Some(0), ..raw("127.0.0.1:8808", Vec::new()) };
        let zero = McpFrontSettings::from_raw(zero, None, Path::new("."), none);
        assert!(zero.unwrap_err().to_string().contains("mcp_front.max_sessions_per_principal must be at least 1"));
        let flag = McpFrontSettings::from_raw(RawMcpFront::default(), Some("127.0.0.1:9".into()), Path::new("."), none)
            .unwrap();
        assert_eq!(flag.listen, Some("127.0.0.1:9".parse().unwrap()));
        let port = McpFrontSettings::from_raw(RawMcpFront::default(), Some("18818".into()), Path::new("."), none);
        assert_eq!(port.unwrap().listen, Some("127.0.0.1:18818".parse().unwrap()), "a port alone, as --console-listen");
    }

    #[test]
    fn a_state_key_comes_from_its_variable_and_must_be_long_enough() {
        let env = |name: &str| match name {
            "LONG" => Some("k".repeat(MIN_STATE_KEY_BYTES)),
            "SHORT" => Some("k".into()),
            _ => None,
        };
        let with = |name: &str| RawMcpFront { state_key_env: Some(name.into()), ..RawMcpFront::default() };
        let long = McpFrontSettings::from_raw(with("LONG"), None, Path::new("."), env).unwrap();
        assert_eq!(long.state_key.as_deref().map(str::len), Some(MIN_STATE_KEY_BYTES));
        for name in ["SHORT", "UNSET"] {
            let refused = McpFrontSettings::from_raw(with(name), None, Path::new("."), env).unwrap_err().to_string();
            assert!(refused.contains("mcp_front.state_key_env") && refused.contains(name), "{refused}");
        }
        let debug = format!("{long:?}");
        assert!(!debug.contains(&"k".repeat(MIN_STATE_KEY_BYTES)), "the key is not in the config's Debug: {debug}");
    }
}
