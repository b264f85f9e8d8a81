//! The domain `ToolSpec`: what an operator registers, in the snake_case form of spec files and the store.

pub use crate::policy::rules::PolicyRule;
use crate::policy::rules::RuleError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// A tool as registered. `version` is owned by the registry: it is ignored on input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The arguments' JSON Schema. Spec files may also give it as a string holding JSON.
    #[serde(deserialize_with = "schema_value")]
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// `None` only for offline use (`toolgate repair`); the registry requires one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<Backend>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inject: Vec<Injection>,
    #[serde(default)]
    pub repair: RepairPolicy,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub review: Review,
    #[serde(default, skip_serializing_if = "Budget::is_default")]
    pub budget: Budget,
    /// Rules on what a call says, run in order after the config's rules that match the tool; never shown to models.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy: Vec<PolicyRule>,
    /// Empty means shared by every tenant.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub version: u64,
}

impl ToolSpec {
    /// A spec with only a name and schema, for offline pipelines that never dispatch.
    pub fn offline(name: &str, description: &str, input_schema: Value) -> Self {
        Self {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema,
            output_schema: None,
            backend: None,
            inject: Vec::new(),
            repair: RepairPolicy::default(),
            limits: Limits::default(),
            review: Review::default(),
            budget: Budget::default(),
            policy: Vec::new(),
            tenant: String::new(),
            labels: BTreeMap::new(),
            version: 0,
        }
    }

    /// Equal in everything an operator controls, ignoring the registry-owned version.
    pub fn same_definition(&self, other: &ToolSpec) -> bool {
        let mut a = self.clone();
        a.version = other.version;
        &a == other
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Backend {
    Grpc { target: String },
    Http(HttpBackend),
    Mcp { server: String, tool: String },
    Worker {},
}

impl Backend {
    pub fn kind(&self) -> &'static str {
        match self {
            Backend::Grpc { .. } => "grpc",
            Backend::Http(_) => "http",
            Backend::Mcp { .. } => "mcp",
            Backend::Worker {} => "worker",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpBackend {
    pub url: String,
    /// Empty means POST.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub method: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

impl HttpBackend {
    /// For a `url` of `unix:/path/to.sock[:/request/path]`: the socket, and the request's path (`/` if none).
    pub fn unix_socket(&self) -> Option<(std::path::PathBuf, String)> {
        let rest = self.url.strip_prefix("unix:")?;
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        let (socket, path) = match rest.split_once(":/") {
            Some((socket, path)) => (socket, format!("/{path}")),
            None => (rest, "/".to_owned()),
        };
        (socket.starts_with('/') && socket.len() > 1).then(|| (socket.into(), path))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Injection {
    pub param: String,
    pub from: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepairPolicy {
    /// `None` means the gateway default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub aliases: BTreeMap<String, String>,
    #[serde(default)]
    pub drop_unknown: bool,
    /// Whether a packed parallel call (one array per parameter that takes one value) may be split into the calls
    /// the model meant. `None`: yes when the tool is safe to repeat (`limits.idempotent`); never under review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_parallel: Option<bool>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LimitKey {
    #[default]
    Tool,
    Tenant,
    User,
    Session,
}

/// Where a rate limit is counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RateScope {
    /// Every gateway together in cluster mode (one Redis round trip per call), else this gateway.
    #[default]
    Cluster,
    /// Each gateway on its own, with no Redis round trip.
    Gateway,
}

/// What a cluster-wide rate limit does while Redis is unreachable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RedisDown {
    /// Admit the call, and count it in `toolgate.cluster.fail_open`.
    #[default]
    FailOpen,
    /// Answer RATE_LIMITED, retryable.
    FailClosed,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rate: String,
    #[serde(default)]
    pub burst: u32,
    #[serde(default)]
    pub key: LimitKey,
    #[serde(default)]
    pub max_concurrency: u32,
    /// 0 means the gateway default.
    #[serde(default)]
    pub timeout_ms: u64,
    #[serde(default)]
    pub retries: u32,
    #[serde(default)]
    pub idempotent: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub scope: RateScope,
    #[serde(default, skip_serializing_if = "is_default")]
    pub when_redis_down: RedisDown,
}

impl Limits {
    /// How long one attempt of the tool may take: its own `timeout_ms`, or the gateway's `default`.
    pub fn timeout(&self, default: std::time::Duration) -> std::time::Duration {
        match self.timeout_ms {
            0 => default,
            ms => std::time::Duration::from_millis(ms),
        }
    }

    /// How many times one call may run the tool: `retries + 1` for an idempotent tool, else once.
    pub fn max_attempts(&self) -> u32 {
        if self.idempotent { self.retries.saturating_add(1) } else { 1 }
    }
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Review {
    #[serde(default)]
    pub required: bool,
    /// With `required`: an MCP host that can ask its user (elicitation) may have the user confirm the call
    /// instead of a reviewer. Calls through other doors still wait for a reviewer.
    #[serde(default)]
    pub caller_may_confirm: bool,
}

/// Per-session budgets of one tool; 0 means the gateway's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Calls of this tool in one session.
    #[serde(default)]
    pub max_calls: u32,
    /// Failed calls of this tool in a row in one session.
    #[serde(default)]
    pub max_consecutive_failures: u32,
}

impl Budget {
    fn is_default(&self) -> bool {
        *self == Budget::default()
    }
}

/// Accepts the schema as a JSON value or as a string holding JSON.
fn schema_value<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Value, D::Error> {
    match Value::deserialize(de)? {
        Value::String(text) => serde_json::from_str(&text)
            .map_err(|e| serde::de::Error::custom(format!("input_schema is not valid JSON: {e}"))),
        other => Ok(other),
    }
}

/// Why a spec was refused. Each names the field and the reason.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    #[error("name {0} is invalid: it must match ^[A-Za-z0-9_.-]{{1,128}}$")]
    Name(String),
    #[error("tenant {0}")]
    Tenant(String),
    #[error("description {0}")]
    Description(String),
    #[error("labels {0}")]
    Labels(String),
    #[error("input_schema {0}")]
    InputSchema(String),
    #[error("output_schema {0}")]
    OutputSchema(String),
    #[error("backend {0}")]
    Backend(String),
    #[error("repair.aliases {0}")]
    Alias(String),
    #[error("repair.split_parallel {0}")]
    Split(&'static str),
    #[error("inject{0}")]
    Inject(String),
    #[error("limits.{0}")]
    Limits(String),
    #[error("policy: {0}")]
    Policy(#[from] RuleError),
}
