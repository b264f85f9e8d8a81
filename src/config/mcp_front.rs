//! `[mcp_front]`: the MCP front door's listener, the hosts and origins it accepts, and the bearer tokens that say
//! who is calling. A token is read from the environment variable its entry names, never from the file.

use super::ConfigError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

/// The table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMcpFront {
    /// Serves `http://{listen}/mcp`; absent, there is no front door (unless `--mcp-listen` sets one).
    pub listen: Option<String>,
    /// `Host` values accepted, as names or `host:port` (a sidecar is reached by its service name).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin` values accepted, with their scheme (`http://localhost:*`); empty accepts none that is sent.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
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
            user_claim: raw.user_claim.unwrap_or_else(|| "sub".into()),
            tenant_claim: raw.tenant_claim,
            refresh: std::time::Duration::from_secs(raw.refresh_s.unwrap_or(300).max(1)),
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Principal {
    pub tenant: String,
    pub user_id: String,
    pub values: BTreeMap<String, String>,
}

/// The front door as configured.
#[derive(Clone, Default, PartialEq)]
pub struct McpFrontSettings {
    pub listen: Option<SocketAddr>,
    pub allowed_hosts: Vec<String>,
    pub allowed_origins: Vec<String>,
    /// Each token with its principal. With no token and no `jwt`, there is no authentication (then the door
    /// listens on loopback only).
    pub tokens: Vec<(String, Principal)>,
    pub jwt: Option<JwtSettings>,
}

impl std::fmt::Debug for McpFrontSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpFrontSettings")
            .field("listen", &self.listen)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("tokens", &self.tokens.iter().map(|(_, p)| p).collect::<Vec<_>>())
            .field("jwt", &self.jwt)
            .finish()
    }
}

/// Hosts accepted when none are configured: loopback only, as the MCP transport spec advises.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

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
            Some(text) => Some(
                text.parse::<SocketAddr>()
                    .map_err(|e| invalid(format!("listen {text:?} is not an address like 127.0.0.1:8808: {e}")))?,
            ),
        };
        let mut tokens = Vec::with_capacity(raw.tokens.len());
        for t in raw.tokens {
            let token = env(&t.token_env)
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| invalid(format!("tokens: the variable {:?} is not set or empty", t.token_env)))?;
            if t.user_id.is_empty() {
                return Err(invalid(format!("tokens: the token in {:?} needs a user_id", t.token_env)));
            }
            if tokens.iter().any(|(known, _)| *known == token) {
                return Err(invalid(format!("tokens: the token in {:?} is given twice", t.token_env)));
            }
            tokens.push((token, Principal { tenant: t.tenant, user_id: t.user_id, values: t.values }));
        }
        let allowed_hosts = if raw.allowed_hosts.is_empty() {
            LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect()
        } else {
            raw.allowed_hosts
        };
        let jwt = raw.jwt.map(|jwt| JwtSettings::from_raw(jwt, base)).transpose()?;
        let settings = Self { listen, allowed_hosts, allowed_origins: raw.allowed_origins, tokens, jwt };
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
        let flag = McpFrontSettings::from_raw(RawMcpFront::default(), Some("127.0.0.1:9".into()), Path::new("."), none)
            .unwrap();
        assert_eq!(flag.listen, Some("127.0.0.1:9".parse().unwrap()));
    }
}
