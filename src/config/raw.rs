//! The config file as written (`RawConfig` and its tables, every field optional, unknown fields refused) and
//! the flags and environment that win over it (`Overrides`).

use super::console::RawConsole;
use super::mcp_front::RawMcpFront;
use crate::backend::mcp::McpServerSpec;
use crate::cluster::RawCluster;
use crate::pipeline::Messages;
use crate::policy::rules::RawScopedRule;
use crate::registry::ToolSpec;
use crate::telemetry::RawTelemetry;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The file as written. Every field is optional; defaults live in `Config::from_raw`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub listen: Option<String>,
    /// A Unix socket's file mode, such as `0o660`.
    pub listen_mode: Option<u32>,
    pub data_dir: Option<PathBuf>,
    #[serde(default)]
    pub limits: RawLimits,
    #[serde(default)]
    pub repair: RawRepair,
    #[serde(default)]
    pub auth: RawAuth,
    #[serde(default)]
    pub budgets: RawBudgets,
    #[serde(default)]
    pub review: RawReview,
    #[serde(default)]
    pub idempotency: RawIdempotency,
    #[serde(default)]
    pub telemetry: RawTelemetry,
    /// Cluster mode: many gateways on one Redis.
    #[serde(default)]
    pub cluster: RawCluster,
    /// Templates of the model-facing error text.
    #[serde(default)]
    pub messages: Messages,
    /// Schema documents a `$ref` may point at, by URI: `"https://schemas.example/money.json" = "money.json"`.
    /// Relative paths are read from the config file's folder. Nothing else remote ever resolves.
    #[serde(default)]
    pub schema_documents: BTreeMap<String, PathBuf>,
    /// Tools declared statically; registered at start.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// MCP servers whose tools are imported; stored at start, like those added over the admin API.
    #[serde(default)]
    pub mcp_servers: Vec<McpServerSpec>,
    /// The MCP front door: MCP hosts call the registered tools through toolgate.
    #[serde(default)]
    pub mcp_front: RawMcpFront,
    /// The web console for reviewers and operators.
    #[serde(default)]
    pub console: RawConsole,
    /// Policy rules for every tool, or the tools they name or label; they run before a tool's own.
    #[serde(default)]
    pub policy: Vec<RawScopedRule>,
    /// TLS for the gateway's listeners and for the connections it opens.
    #[serde(default)]
    pub tls: super::tls::RawTls,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    pub max_request_bytes: Option<usize>,
    pub max_argument_bytes: Option<usize>,
    pub max_depth: Option<usize>,
    pub max_result_bytes: Option<usize>,
    pub max_batch_calls: Option<usize>,
    pub batch_concurrency: Option<usize>,
    pub default_timeout_ms: Option<u64>,
    pub connect_timeout_ms: Option<u64>,
    pub max_compiled_validators: Option<usize>,
    /// The largest input or output schema a registration may carry, as compact JSON.
    pub max_schema_bytes: Option<usize>,
    pub max_calls_in_flight: Option<usize>,
}

/// `[repair]`: argument repair for every tool (a tool's own `repair.enabled` wins), and rules turned off by name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRepair {
    pub enabled: Option<bool>,
    #[serde(default)]
    pub disabled_rules: Vec<String>,
}

/// `[auth]`: bearer tokens. When one is set, requests to its plane without `authorization: Bearer <token>` are
/// refused. Prefer the environment (`TOOLGATE_ADMIN_TOKEN`, `TOOLGATE_DATA_TOKEN`, `TOOLGATE_REVIEW_TOKEN`) to the
/// file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAuth {
    /// Closes the admin plane: ToolRegistry, McpRegistry, ToolWorker, and ToolReview unless `review_token` is set.
    pub admin_token: Option<String>,
    /// Closes ToolGateway, the data plane agents call.
    pub data_token: Option<String>,
    /// Opens ToolReview alone (the admin token opens it too), for reviewers and agents that resume reviews.
    pub review_token: Option<String>,
}

/// `[budgets]`: per-session limits, the gateway's recursion limit. 0 or absent means unlimited.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBudgets {
    /// Calls of any tool in one session.
    pub max_calls: Option<u32>,
    /// Calls of one tool in one session, unless the tool sets its own `budget.max_calls`.
    pub max_tool_calls: Option<u32>,
    /// Failed calls of one tool in a row, unless the tool sets its own `budget.max_consecutive_failures`.
    pub max_consecutive_failures: Option<u32>,
    /// A session idle this long is forgotten.
    pub session_idle_ttl_s: Option<u64>,
    pub max_sessions: Option<usize>,
}

/// `[review]`: human review of calls to tools with `review.required`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReview {
    /// How long a waiting `Execute` with no deadline of its own waits for a decision.
    pub max_wait_ms: Option<u64>,
    pub max_pending: Option<usize>,
    /// How long a decided call's outcome is kept for an `Execute` of the same call id.
    pub keep_decided_s: Option<u64>,
}

/// `[idempotency]`: a call sent again under the same id within the window gets the first call's outcome.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIdempotency {
    /// How long a call's outcome answers its id; 0 turns the record off.
    pub window_ms: Option<u64>,
    /// Call ids this gateway keeps at most (cluster mode keeps them in Redis).
    pub max_entries: Option<usize>,
    /// Bytes of outcomes this gateway keeps at most; past it the oldest are replaced by a stub.
    pub max_bytes: Option<usize>,
}

/// Flags and environment variables, which win over the file.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub listen: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub admin_token: Option<String>,
    pub data_token: Option<String>,
    pub review_token: Option<String>,
    /// The OTLP/gRPC collector (`--otlp-endpoint`, `OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub otlp_endpoint: Option<String>,
    /// TLS to an `https://` collector: its CA and a client certificate and key (`OTEL_EXPORTER_OTLP_CERTIFICATE`,
    /// `OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE`, `OTEL_EXPORTER_OTLP_CLIENT_KEY`); `[tls.client]` when none is set.
    pub otlp_certificate: Option<PathBuf>,
    pub otlp_client_certificate: Option<PathBuf>,
    pub otlp_client_key: Option<PathBuf>,
    /// Redis, which turns cluster mode on (`--redis-url`, `TOOLGATE_REDIS_URL`).
    pub redis_url: Option<String>,
    /// The MCP front door's address (`--mcp-listen`, `TOOLGATE_MCP_LISTEN`).
    pub mcp_listen: Option<String>,
    /// The web console's address (`--console-listen`, `TOOLGATE_CONSOLE_LISTEN`).
    pub console_listen: Option<String>,
}
