//! `[tls]`: the gateway's certificate for its listeners (and `client_ca` for mTLS), `[tls.client]` for the
//! connections it opens, `[[tls.identities]]` mapping client certificates to tenants, and how often the files are
//! looked at for changes. Relative paths are read from the config file's folder.

use super::{ConfigError, Overrides};
use crate::tls::{ClientFiles, Identities, IdentityRule, ServerFiles};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTls {
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub client_ca: Option<PathBuf>,
    pub reload_interval_ms: Option<u64>,
    #[serde(default)]
    pub client: RawTlsClient,
    #[serde(default)]
    pub identities: Vec<RawIdentity>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTlsClient {
    pub ca: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIdentity {
    pub name: String,
    pub tenant: String,
}

/// TLS as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// Inbound: `None` serves plain HTTP/2.
    pub server: Option<ServerFiles>,
    /// Outbound.
    pub client: ClientFiles,
    pub identities: Identities,
    /// To the OTLP collector, from the `OTEL_EXPORTER_OTLP_*` certificate variables; `None` uses `client`.
    pub collector: Option<ClientFiles>,
    /// How often the files are looked at for changes.
    pub reload_every: Duration,
}

impl Default for TlsSettings {
    fn default() -> Self {
        Self {
            server: None,
            client: ClientFiles::default(),
            identities: Identities::default(),
            collector: None,
            reload_every: DEFAULT_RELOAD,
        }
    }
}

const DEFAULT_RELOAD: Duration = Duration::from_secs(5);

impl TlsSettings {
    pub fn from_raw(raw: RawTls, base: &Path, collector: Option<ClientFiles>) -> Result<Self, ConfigError> {
        let at = |path: Option<PathBuf>| path.map(|p| base.join(p));
        let invalid = |reason: &str| ConfigError::Invalid(format!("tls.{reason}"));
        let server = match (at(raw.cert), at(raw.key), at(raw.client_ca)) {
            (Some(cert), Some(key), client_ca) => Some(ServerFiles { cert, key, client_ca }),
            (None, None, None) => None,
            (None, None, Some(_)) => {
                return Err(invalid("client_ca needs cert and key: the gateway's own certificate"));
            }
            _ => return Err(invalid("cert and key go together")),
        };
        if !raw.identities.is_empty() && server.as_ref().is_none_or(|s| s.client_ca.is_none()) {
            return Err(invalid("identities need client certificates: set tls.client_ca"));
        }
        let client = ClientFiles { ca: at(raw.client.ca), cert: at(raw.client.cert), key: at(raw.client.key) };
        if client.cert.is_some() != client.key.is_some() {
            return Err(invalid("client.cert and client.key go together"));
        }
        if collector.as_ref().is_some_and(|c| c.cert.is_some() != c.key.is_some()) {
            return Err(ConfigError::Invalid(
                "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together".into(),
            ));
        }
        let mut rules = Vec::with_capacity(raw.identities.len());
        for identity in raw.identities {
            if identity.name.trim().is_empty() || identity.tenant.trim().is_empty() {
                return Err(invalid("identities: each needs a name and a tenant"));
            }
            rules.push(IdentityRule { name: identity.name, tenant: identity.tenant });
        }
        let reload_every = match raw.reload_interval_ms {
            None => DEFAULT_RELOAD,
            Some(0) => return Err(invalid("reload_interval_ms must be greater than 0")),
            Some(ms) => Duration::from_millis(ms),
        };
        Ok(Self { server, client, identities: Identities::new(rules), collector, reload_every })
    }
}

/// The collector's TLS files the overrides name, if any.
pub fn collector_files(overrides: &Overrides) -> Option<ClientFiles> {
    let files = ClientFiles {
        ca: overrides.otlp_certificate.clone(),
        cert: overrides.otlp_client_certificate.clone(),
        key: overrides.otlp_client_key.clone(),
    };
    (files != ClientFiles::default()).then_some(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<TlsSettings, String> {
        TlsSettings::from_raw(toml::from_str(text).unwrap(), Path::new("/etc/toolgate"), None)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn files_are_read_from_the_config_folder_and_go_in_pairs() {
        let config =
            parse("cert = \"s.pem\"\nkey = \"/k.pem\"\nclient_ca = \"ca.pem\"\n[client]\nca = \"roots.pem\"\n")
                .unwrap();
        let server = config.server.unwrap();
        assert_eq!((server.cert, server.key), (PathBuf::from("/etc/toolgate/s.pem"), PathBuf::from("/k.pem")));
        assert_eq!(config.client.ca, Some(PathBuf::from("/etc/toolgate/roots.pem")));
        assert_eq!(parse("").unwrap(), TlsSettings::default());
        for (text, says) in [
            ("cert = \"s.pem\"", "cert and key go together"),
            ("client_ca = \"ca.pem\"", "client_ca needs cert and key"),
            ("[client]\ncert = \"c.pem\"", "client.cert and client.key"),
            ("cert = \"s\"\nkey = \"k\"\n[[identities]]\nname = \"a\"\ntenant = \"t\"", "need client certificates"),
            ("reload_interval_ms = 0", "greater than 0"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
