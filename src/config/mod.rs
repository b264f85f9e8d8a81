//! Configuration: the TOML file (`RawConfig`, unknown fields refused) layered under flags and environment,
//! validated into `Config`.

mod console;
mod listen;
mod mcp_front;
mod raw;
mod sections;
mod tls;

pub use console::{AllowedHost, ConsoleSettings, RawConsole};
pub use mcp_front::{JwksSource, JwtSettings, McpFrontSettings, Principal, RawJwt, RawMcpFront, RawToken};
pub use raw::{Overrides, RawAuth, RawBudgets, RawConfig, RawIdempotency, RawLimits, RawRepair, RawReview};
pub use tls::{RawTls, TlsSettings};

use crate::backend::mcp::McpServerSpec;
use crate::cluster::ClusterSettings;
use crate::idempotency::IdempotencySettings;
use crate::pipeline::{Messages, ParseLimits, RepairSettings};
use crate::policy::PolicySettings;
use crate::policy::rules::GatewayRules;
use crate::registry::{DEFAULT_COMPILED_VALIDATORS, DEFAULT_MAX_SCHEMA_BYTES, SchemaDocuments, ToolSpec};
use crate::review::ReviewSettings;
use crate::telemetry::TelemetrySettings;
use crate::wire::socket::Address;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:50051";
pub const DEFAULT_DATA_DIR: &str = "./toolgate-data";
/// Calls in flight past which `Execute` sheds load: far above what one agent host sends, and low enough that a
/// flood of slow calls cannot hold unbounded memory.
pub const DEFAULT_CALLS_IN_FLIGHT: usize = 1024;
/// A whole gRPC request past 8 MiB is refused before decoding.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 8 * 1024 * 1024;
/// A tool's result past 4 MiB is refused.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 4 * 1024 * 1024;
/// Calls in one `ExecuteBatch`.
pub const DEFAULT_MAX_BATCH_CALLS: usize = 128;
/// Calls of one batch that run at once.
pub const DEFAULT_BATCH_CONCURRENCY: usize = 16;
/// How long a call of a tool that sets no `limits.timeout_ms` may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting to a backend may take.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {path}: {reason}")]
    File { path: String, reason: String },
    #[error("config: {0}")]
    Invalid(String),
}

/// Bearer tokens of the planes; `None` leaves a plane open (review falls back to the admin token).
#[derive(Clone, Default, PartialEq)]
pub struct Tokens {
    pub admin: Option<String>,
    pub data: Option<String>,
    pub review: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |t: &Option<String>| if t.is_some() { "set" } else { "unset" };
        f.debug_struct("Tokens")
            .field("admin", &shown(&self.admin))
            .field("data", &shown(&self.data))
            .field("review", &shown(&self.review))
            .finish()
    }
}

/// The validated configuration the server runs on.
#[derive(Debug, Clone)]
pub struct Config {
    /// `host:port`, or `unix:/path/to.sock`.
    pub listen: Address,
    /// The mode of a Unix socket's file (`0o660`: its owner and group may connect); `None` leaves the umask's.
    pub listen_mode: Option<u32>,
    pub data_dir: PathBuf,
    /// Bounds a whole gRPC request; larger ones are refused before decoding.
    pub max_request_bytes: usize,
    pub parse_limits: ParseLimits,
    pub repair: RepairSettings,
    pub max_result_bytes: usize,
    pub max_batch_calls: usize,
    pub batch_concurrency: usize,
    /// `Execute` and `ExecuteBatch` requests running at once, gateway-wide; past it they are shed (UNAVAILABLE).
    pub max_calls_in_flight: usize,
    pub default_timeout: Duration,
    pub connect_timeout: Duration,
    pub messages: Messages,
    pub documents: SchemaDocuments,
    pub tools: Vec<ToolSpec>,
    pub mcp_servers: Vec<McpServerSpec>,
    pub tokens: Tokens,
    /// `[budgets]`, with the bounds of the policy's state.
    pub policy: PolicySettings,
    pub review: ReviewSettings,
    pub idempotency: IdempotencySettings,
    pub telemetry: TelemetrySettings,
    /// `Some` in cluster mode.
    pub cluster: Option<ClusterSettings>,
    pub mcp_front: McpFrontSettings,
    pub console: ConsoleSettings,
    pub tls: TlsSettings,
    /// `[[policy]]`: the rules that apply before each tool's own.
    pub rules: Arc<GatewayRules>,
}

impl Default for Config {
    fn default() -> Self {
        Config::from_raw(RawConfig::default(), Overrides::default(), Path::new(".")).expect("the defaults are valid")
    }
}

impl Config {
    /// Reads `file` if given, then applies the overrides.
    pub fn load(file: Option<&Path>, overrides: Overrides) -> Result<Self, ConfigError> {
        let Some(path) = file else {
            return Config::from_raw(RawConfig::default(), overrides, Path::new("."));
        };
        let file_error = |reason: String| ConfigError::File { path: path.display().to_string(), reason };
        let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
        let raw: RawConfig = toml::from_str(&text).map_err(|e| file_error(e.to_string()))?;
        Config::from_raw(raw, overrides, path.parent().unwrap_or(Path::new(".")))
    }

    /// Validates `raw` under `overrides`, reading the variables `[mcp_front]` names from the process environment.
    pub fn from_raw(raw: RawConfig, overrides: Overrides, base: &Path) -> Result<Self, ConfigError> {
        Config::from_raw_in(raw, overrides, base, |name| std::env::var(name).ok())
    }

    /// `from_raw` in the environment `env` reads: the variables `[[mcp_front.tokens]] token_env` and
    /// `state_key_env` name. A check of a config written for another process (a container's) gives that one's.
    pub fn from_raw_in(
        raw: RawConfig,
        overrides: Overrides,
        base: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let collector = tls::collector_files(&overrides);
        let (listen, listen_mode) = listen::from_raw(overrides.listen.or(raw.listen), raw.listen_mode)?;
        let l = raw.limits;
        let parse_limits = ParseLimits {
            max_bytes: l.max_argument_bytes.unwrap_or(ParseLimits::default().max_bytes),
            max_depth: l.max_depth.unwrap_or(ParseLimits::default().max_depth),
        };
        let validators = l.max_compiled_validators.unwrap_or(DEFAULT_COMPILED_VALIDATORS);
        if validators == 0 {
            return Err(ConfigError::Invalid("limits.max_compiled_validators must be greater than 0".into()));
        }
        let max_schema_bytes = l.max_schema_bytes.unwrap_or(DEFAULT_MAX_SCHEMA_BYTES);
        if max_schema_bytes == 0 {
            return Err(ConfigError::Invalid("limits.max_schema_bytes must be greater than 0".into()));
        }
        let tokens = tokens(Tokens {
            admin: overrides.admin_token.or(raw.auth.admin_token),
            data: overrides.data_token.or(raw.auth.data_token),
            review: overrides.review_token.or(raw.auth.review_token),
        })?;
        let closed = tokens.admin.is_some() || tokens.review.is_some();
        let config = Config {
            listen,
            listen_mode,
            data_dir: overrides.data_dir.or(raw.data_dir).unwrap_or_else(|| DEFAULT_DATA_DIR.into()),
            max_request_bytes: l.max_request_bytes.unwrap_or(DEFAULT_MAX_REQUEST_BYTES),
            parse_limits,
            repair: RepairSettings::with_disabled(
                raw.repair.enabled.unwrap_or(RepairSettings::default().enabled),
                raw.repair.disabled_rules.iter().map(String::as_str),
            )
            .map_err(|e| ConfigError::Invalid(format!("repair.disabled_rules: {e}")))?,
            max_result_bytes: l.max_result_bytes.unwrap_or(DEFAULT_MAX_RESULT_BYTES),
            max_batch_calls: l.max_batch_calls.unwrap_or(DEFAULT_MAX_BATCH_CALLS),
            batch_concurrency: l.batch_concurrency.unwrap_or(DEFAULT_BATCH_CONCURRENCY),
            max_calls_in_flight: l.max_calls_in_flight.unwrap_or(DEFAULT_CALLS_IN_FLIGHT),
            default_timeout: l.default_timeout_ms.map_or(DEFAULT_TIMEOUT, Duration::from_millis),
            connect_timeout: l.connect_timeout_ms.map_or(DEFAULT_CONNECT_TIMEOUT, Duration::from_millis),
            messages: raw.messages,
            documents: load_documents(&raw.schema_documents, base)?
                .with_validator_capacity(validators)
                .with_max_schema_bytes(max_schema_bytes),
            tools: raw.tools,
            mcp_servers: raw.mcp_servers,
            tokens,
            policy: sections::policy(&raw.budgets),
            review: sections::review(&raw.review),
            idempotency: sections::idempotency(&raw.idempotency),
            telemetry: TelemetrySettings::from_raw(raw.telemetry, overrides.otlp_endpoint)
                .map_err(|e| ConfigError::Invalid(format!("telemetry.{e}")))?,
            cluster: ClusterSettings::from_raw(raw.cluster, overrides.redis_url).map_err(ConfigError::Invalid)?,
            mcp_front: McpFrontSettings::from_raw(raw.mcp_front, overrides.mcp_listen, base, env)?,
            console: ConsoleSettings::from_raw(raw.console, overrides.console_listen, closed)?,
            tls: TlsSettings::from_raw(raw.tls, base, collector)?,
            rules: Arc::new(
                GatewayRules::compile(raw.policy).map_err(|e| ConfigError::Invalid(format!("[[policy]] {e}")))?,
            ),
        };
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<(), ConfigError> {
        let positive = [
            ("limits.max_request_bytes", self.max_request_bytes),
            ("limits.max_argument_bytes", self.parse_limits.max_bytes),
            ("limits.max_depth", self.parse_limits.max_depth),
            ("limits.max_result_bytes", self.max_result_bytes),
            ("limits.max_batch_calls", self.max_batch_calls),
            ("limits.batch_concurrency", self.batch_concurrency),
            ("limits.max_calls_in_flight", self.max_calls_in_flight),
            ("budgets.max_sessions", self.policy.max_sessions),
            ("review.max_pending", self.review.max_pending),
            ("idempotency.max_entries", self.idempotency.max_entries),
            ("idempotency.max_bytes", self.idempotency.max_bytes),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(ConfigError::Invalid(format!("{name} must be greater than 0")));
        }
        let grpc = match &self.listen {
            Address::Tcp(addr) => Some(*addr),
            Address::Unix(_) => None,
        };
        if grpc.is_some() && self.telemetry.prometheus_listen == grpc {
            return Err(ConfigError::Invalid("telemetry.prometheus_listen must differ from listen".into()));
        }
        if let Some(front) = self.mcp_front.listen
            && (Some(front) == grpc || self.telemetry.prometheus_listen == Some(front))
        {
            return Err(ConfigError::Invalid(
                "mcp_front.listen must differ from listen and telemetry.prometheus_listen".into(),
            ));
        }
        if let Some(console) = self.console.listen {
            let others = [grpc, self.telemetry.prometheus_listen, self.mcp_front.listen];
            if others.contains(&Some(console)) {
                return Err(ConfigError::Invalid(
                    "console.listen must differ from listen, telemetry.prometheus_listen and mcp_front.listen".into(),
                ));
            }
        }
        if self.default_timeout.is_zero() {
            return Err(ConfigError::Invalid("limits.default_timeout_ms must be greater than 0".into()));
        }
        for (i, server) in self.mcp_servers.iter().enumerate() {
            server.check().map_err(|e| ConfigError::Invalid(format!("mcp_servers[{i}] ({}): {e}", server.name)))?;
            if self.mcp_servers[..i].iter().any(|s| s.name == server.name) {
                return Err(ConfigError::Invalid(format!("mcp_servers: {:?} is declared twice", server.name)));
            }
        }
        Ok(())
    }
}

fn tokens(tokens: Tokens) -> Result<Tokens, ConfigError> {
    for (name, token) in
        [("admin_token", &tokens.admin), ("data_token", &tokens.data), ("review_token", &tokens.review)]
    {
        if token.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(ConfigError::Invalid(format!("auth.{name} is empty: remove it to leave its plane open")));
        }
    }
    Ok(tokens)
}

fn load_documents(entries: &BTreeMap<String, PathBuf>, base: &Path) -> Result<SchemaDocuments, ConfigError> {
    let mut docs = HashMap::new();
    for (uri, path) in entries {
        let path = base.join(path);
        let invalid =
            |reason: String| ConfigError::Invalid(format!("schema_documents {uri:?} ({}): {reason}", path.display()));
        let text = std::fs::read_to_string(&path).map_err(|e| invalid(e.to_string()))?;
        let value = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        docs.insert(uri.clone(), value);
    }
    Ok(SchemaDocuments::new(docs))
}

#[cfg(test)]
mod tests;
