//! `[cluster]` in the config: the Redis URL that turns cluster mode on, its key prefix and its timings.

use super::topology::{self, Topology};
use serde::Deserialize;
use std::time::Duration;

/// Every key and channel starts with it, unless `key_prefix` says otherwise.
pub const DEFAULT_KEY_PREFIX: &str = "toolgate";
/// How often the registry's version is compared with Redis's.
pub const DEFAULT_SYNC_INTERVAL: Duration = Duration::from_secs(1);
/// How long one Redis command on the call path may take before Redis counts as down.
pub const DEFAULT_OP_TIMEOUT: Duration = Duration::from_millis(250);

/// The `[cluster]` table as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCluster {
    /// `redis://[:password@]host:port/db`, `redis+cluster://host:port,…` (a Redis Cluster's seed nodes) or
    /// `redis+sentinel://host:port,…/<master name>[/<db>]`; `rediss…` for TLS (with `[tls.client]`). Unset: a
    /// single gateway on its embedded store.
    pub redis_url: Option<String>,
    /// Every key and channel starts with it, so several fleets can share one Redis. Default `toolgate`.
    pub key_prefix: Option<String>,
    /// How often the registry's version is compared with Redis's, so a missed notification heals. Default 1000.
    pub sync_interval_ms: Option<u64>,
    /// How long one Redis command on the call path may take before Redis counts as down. Default 250.
    pub op_timeout_ms: Option<u64>,
    /// Refuse locally, with no round trip, a key Redis refused until a time not yet reached. Default true.
    pub rate_precheck: Option<bool>,
}

/// Cluster mode as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSettings {
    pub redis_url: String,
    /// What the URL names: one primary, a Redis Cluster or a Sentinel set.
    pub topology: Topology,
    pub key_prefix: String,
    pub sync_interval: Duration,
    pub op_timeout: Duration,
    pub rate_precheck: bool,
}

impl ClusterSettings {
    /// `None` when no Redis URL is set, from the file or `override_url` (`--redis-url`, `TOOLGATE_REDIS_URL`).
    pub fn from_raw(raw: RawCluster, override_url: Option<String>) -> Result<Option<Self>, String> {
        let Some(redis_url) = override_url.or(raw.redis_url) else {
            if raw.key_prefix.is_some() || raw.sync_interval_ms.is_some() || raw.op_timeout_ms.is_some() {
                return Err("cluster: settings given but no redis_url, so cluster mode is off".into());
            }
            return Ok(None);
        };
        let topology = Topology::parse(&redis_url)
            .map_err(|e| format!("cluster.redis_url {:?}: {e}", topology::hide_password(&redis_url)))?;
        let key_prefix = raw.key_prefix.unwrap_or_else(|| DEFAULT_KEY_PREFIX.into());
        if key_prefix.is_empty() || key_prefix.chars().any(|c| c.is_whitespace() || c.is_control() || "{}".contains(c))
        {
            return Err(format!(
                "cluster.key_prefix {key_prefix:?} must be non-empty, with no space, control or brace"
            ));
        }
        let positive = |name: &str, ms: Option<u64>, default: Duration| match ms.map(Duration::from_millis) {
            None => Ok(default),
            Some(Duration::ZERO) => Err(format!("cluster.{name} must be greater than 0")),
            Some(given) => Ok(given),
        };
        Ok(Some(Self {
            redis_url,
            topology,
            key_prefix,
            sync_interval: positive("sync_interval_ms", raw.sync_interval_ms, DEFAULT_SYNC_INTERVAL)?,
            op_timeout: positive("op_timeout_ms", raw.op_timeout_ms, DEFAULT_OP_TIMEOUT)?,
            rate_precheck: raw.rate_precheck.unwrap_or(true),
        }))
    }

    /// The URL with its password, if any, hidden: for logs and errors.
    pub fn shown_url(&self) -> String {
        topology::hide_password(&self.redis_url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, url: Option<&str>) -> Result<Option<ClusterSettings>, String> {
        ClusterSettings::from_raw(toml::from_str(text).unwrap(), url.map(String::from))
    }

    #[test]
    fn off_without_a_url_and_defaults_with_one() {
        assert_eq!(parse("", None), Ok(None));
        let on = parse("redis_url = \"redis://127.0.0.1:6379\"", None).unwrap().unwrap();
        assert_eq!(
            (on.key_prefix.as_str(), on.sync_interval, on.op_timeout),
            ("toolgate", Duration::from_secs(1), Duration::from_millis(250))
        );
        let flag = parse("redis_url = \"redis://a:1\"", Some("redis://b:2")).unwrap().unwrap();
        assert_eq!(flag.redis_url, "redis://b:2", "the flag wins");
        assert!(parse("redis_url = \"rediss://redis.internal:6380\"", None).unwrap().is_some(), "TLS");
    }

    #[test]
    fn bad_settings_are_refused_with_their_name() {
        let cases = [
            ("redis_url = \"http://x\"", "scheme"),
            ("redis_url = \"redis+cluster://:pw@a\"", "no port"),
            ("redis_url = \"redis://x\"\nkey_prefix = \"{a}\"", "brace"),
            ("redis_url = \"nope\"", "cluster.redis_url"),
            ("redis_url = \"redis://x\"\nkey_prefix = \"\"", "key_prefix"),
            ("redis_url = \"redis://x\"\nop_timeout_ms = 0", "op_timeout_ms must be"),
            ("key_prefix = \"a\"", "no redis_url"),
        ];
        for (text, why) in cases {
            let err = parse(text, None).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    #[test]
    fn the_password_is_never_shown() {
        let on = parse("redis_url = \"redis://:secret@127.0.0.1:6379/0\"", None).unwrap().unwrap();
        assert!(!on.shown_url().contains("secret"), "{}", on.shown_url());
    }
}
