//! Configuration: the TOML file (`RawConfig`, unknown fields refused) layered under flags and environment,
//! validated into `Config`.

mod console;
mod listen;
mod mcp_front;
mod raw;
mod tls;

pub use console::{AllowedHost, ConsoleSettings, RawConsole};
pub use mcp_front::{JwksSource, JwtSettings, McpFrontSettings, Principal, RawJwt, RawMcpFront, RawToken};
pub use raw::{Overrides, RawAuth, RawBudgets, RawConfig, RawIdempotency, RawLimits, RawRepair, RawReview};
pub use tls::{RawTls, TlsConfig};

use crate::backend::mcp::McpServerSpec;
use crate::cluster::ClusterSettings;
use crate::idempotency::IdempotencySettings;
use crate::pipeline::{Messages, ParseLimits, RepairSettings};
use crate::policy::rules::GatewayRules;
use crate::registry::{DEFAULT_COMPILED_VALIDATORS, DEFAULT_MAX_SCHEMA_BYTES, SchemaDocuments, ToolSpec};
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

/// Session budgets as configured; `None` is unlimited.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetConfig {
    pub max_calls: Option<u32>,
    pub max_tool_calls: Option<u32>,
    pub max_consecutive_failures: Option<u32>,
    pub session_idle_ttl: Duration,
    pub max_sessions: usize,
}

/// Review settings as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewConfig {
    pub max_wait: Duration,
    pub max_pending: usize,
    pub keep_decided: Duration,
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
    pub budgets: BudgetConfig,
    pub review: ReviewConfig,
    pub idempotency: IdempotencySettings,
    pub telemetry: TelemetrySettings,
    /// `Some` in cluster mode.
    pub cluster: Option<ClusterSettings>,
    pub mcp_front: McpFrontSettings,
    pub console: ConsoleSettings,
    pub tls: TlsConfig,
    /// `[[policy]]`: the rules that apply before each tool's own.
    pub policy: Arc<GatewayRules>,
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

    pub fn from_raw(raw: RawConfig, overrides: Overrides, base: &Path) -> Result<Self, ConfigError> {
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
            max_request_bytes: l.max_request_bytes.unwrap_or(8 * 1024 * 1024),
            parse_limits,
            repair: RepairSettings::with_disabled(
                raw.repair.enabled.unwrap_or(true),
                raw.repair.disabled_rules.iter().map(String::as_str),
            )
            .map_err(|e| ConfigError::Invalid(format!("repair.disabled_rules: {e}")))?,
            max_result_bytes: l.max_result_bytes.unwrap_or(4 * 1024 * 1024),
            max_batch_calls: l.max_batch_calls.unwrap_or(128),
            batch_concurrency: l.batch_concurrency.unwrap_or(16),
            max_calls_in_flight: l.max_calls_in_flight.unwrap_or(DEFAULT_CALLS_IN_FLIGHT),
            default_timeout: Duration::from_millis(l.default_timeout_ms.unwrap_or(30_000)),
            connect_timeout: Duration::from_millis(l.connect_timeout_ms.unwrap_or(5_000)),
            messages: raw.messages,
            documents: load_documents(&raw.schema_documents, base)?
                .with_validator_capacity(validators)
                .with_max_schema_bytes(max_schema_bytes),
            tools: raw.tools,
            mcp_servers: raw.mcp_servers,
            tokens,
            budgets: budgets(&raw.budgets),
            review: ReviewConfig {
                max_wait: Duration::from_millis(raw.review.max_wait_ms.unwrap_or(600_000)),
                max_pending: raw.review.max_pending.unwrap_or(10_000),
                keep_decided: Duration::from_secs(raw.review.keep_decided_s.unwrap_or(86_400)),
            },
            idempotency: IdempotencySettings {
                window: raw.idempotency.window_ms.map_or(IdempotencySettings::default().window, Duration::from_millis),
                max_entries: raw.idempotency.max_entries.unwrap_or(IdempotencySettings::default().max_entries),
                max_bytes: raw.idempotency.max_bytes.unwrap_or(IdempotencySettings::default().max_bytes),
            },
            telemetry: TelemetrySettings::from_raw(raw.telemetry, overrides.otlp_endpoint)
                .map_err(|e| ConfigError::Invalid(format!("telemetry.{e}")))?,
            cluster: ClusterSettings::from_raw(raw.cluster, overrides.redis_url).map_err(ConfigError::Invalid)?,
            mcp_front: McpFrontSettings::from_raw(raw.mcp_front, overrides.mcp_listen, base, |name| {
                std::env::var(name).ok()
            })?,
            console: ConsoleSettings::from_raw(raw.console, overrides.console_listen, closed)?,
            tls: TlsConfig::from_raw(raw.tls, base, collector)?,
            policy: Arc::new(
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
            ("budgets.max_sessions", self.budgets.max_sessions),
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

fn budgets(raw: &RawBudgets) -> BudgetConfig {
    let limit = |v: Option<u32>| v.filter(|n| *n > 0);
    BudgetConfig {
        max_calls: limit(raw.max_calls),
        max_tool_calls: limit(raw.max_tool_calls),
        max_consecutive_failures: limit(raw.max_consecutive_failures),
        session_idle_ttl: Duration::from_secs(raw.session_idle_ttl_s.unwrap_or(3_600)),
        max_sessions: raw.max_sessions.unwrap_or(100_000),
    }
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
