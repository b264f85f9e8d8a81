//! The operators' tools page, opened by the admin token: the catalog with each tool's backend health, and one tool
//! in full (its model-facing schema beside the full one, injected parameters, limits, review and budget settings),
//! with the MCP servers and workers this gateway holds. Secrets in a backend's definition are never shown.

use super::Console;
use super::session::Session;
use super::views::{User, pretty};
use crate::backend::mcp::McpStatus;
use crate::backend::mcp::spec::redacted_url;
use crate::backend::{Health, HealthSnapshot};
use crate::policy::rules::{OnError, Rule, RuleAction};
use crate::registry::{Backend, CompiledTool, LimitKey, RateScope, RedisDown};
use askama::Template;
use axum::extract::{Extension, Query, State};
use axum::response::Response;
use http::StatusCode;
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// Tools listed on one page at most; a filter narrows the rest.
const MAX_LISTED: usize = 500;

/// What a tool inherits from the gateway where its spec says 0.
#[derive(Debug, Clone, Copy)]
pub struct Defaults {
    pub timeout: Duration,
    /// Calls of one tool in one session (`budgets.max_tool_calls`).
    pub max_tool_calls: Option<u32>,
    pub max_consecutive_failures: Option<u32>,
    /// Calls of all tools in one session (`budgets.max_calls`).
    pub max_session_calls: Option<u32>,
}

#[derive(Template)]
#[template(path = "console/tools.html")]
pub struct ToolsPage {
    pub user: Option<User>,
    pub q: String,
    pub tools: Vec<ToolRow>,
    /// Tools matching the filter, of which `tools` are the first `MAX_LISTED`.
    pub matching: usize,
    pub servers: Vec<ServerRow>,
    pub workers: Vec<WorkerRow>,
}

#[derive(Template)]
#[template(path = "console/tool.html")]
pub struct ToolPage {
    pub user: Option<User>,
    pub row: ToolRow,
    pub description: String,
    pub backend: String,
    pub model_schema: String,
    pub full_schema: String,
    pub injected: Vec<(String, String)>,
    pub settings: Vec<(&'static str, String)>,
    pub labels: Vec<(String, String)>,
    /// The policy rules its calls are judged by, in order: the config's that apply, then its own.
    pub rules: Vec<RuleView>,
}

/// One policy rule as the tool page shows it.
pub struct RuleView {
    pub name: String,
    pub action: &'static str,
    pub when: String,
    pub message: String,
    pub on_error: &'static str,
}

/// One tool in the list.
pub struct ToolRow {
    pub name: String,
    pub tenant: String,
    pub backend: &'static str,
    pub health: &'static str,
    pub health_detail: String,
    pub review: bool,
    pub injected: usize,
}

impl ToolRow {
    fn new(tool: &CompiledTool, health: Health) -> Self {
        Self {
            name: tool.spec.name.clone(),
            tenant: tool.spec.tenant.clone(),
            backend: tool.spec.backend.as_ref().map_or("none", Backend::kind),
            health: health.state.name(),
            health_detail: health.detail,
            review: tool.spec.review.required,
            injected: tool.injections.len(),
        }
    }
}

/// One MCP server as this gateway holds it.
pub struct ServerRow {
    pub name: String,
    pub transport: String,
    pub health: &'static str,
    pub tools: usize,
    pub connects: u32,
    pub last_error: String,
    pub problems: Vec<String>,
}

impl From<&McpStatus> for ServerRow {
    fn from(s: &McpStatus) -> Self {
        let transport = match (&s.spec.url, &s.spec.command) {
            (Some(url), _) => format!("streamable HTTP {url}"),
            (None, Some(command)) => format!("stdio: {command}"),
            (None, None) => String::new(),
        };
        Self {
            name: s.spec.name.clone(),
            transport,
            health: if s.connected { "up" } else { "down" },
            tools: s.tools.len(),
            connects: s.connects,
            last_error: s.last_error.clone(),
            problems: s.problems.clone(),
        }
    }
}

/// One connected worker.
pub struct WorkerRow {
    pub id: String,
    pub name: String,
    pub tools: String,
    pub waiting: usize,
}

#[derive(Debug, Default, Deserialize)]
pub struct ToolsQuery {
    #[serde(default)]
    q: String,
}

#[derive(Debug, Deserialize)]
pub struct WhichTool {
    #[serde(default)]
    tenant: String,
    name: String,
}

type Shared = State<Arc<Console>>;

/// The tools page is for operators: a session the review token opened is refused, saying why.
fn refused(session: &Session) -> Option<Response> {
    let text = "The tools page shows every tool's definition and backend: log in with the admin token to see it.";
    (!session.admin).then(|| super::pages::message(StatusCode::FORBIDDEN, session, "Admin only", text.to_owned()))
}

pub async fn tools(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Query(query): Query<ToolsQuery>,
) -> Response {
    if let Some(refusal) = refused(&session) {
        return refusal;
    }
    let catalog = console.core.registry.catalog();
    let health = console.core.backends.health();
    let needle = query.q.trim().to_lowercase();
    let mut matching: Vec<&Arc<CompiledTool>> = catalog
        .all()
        .iter()
        .filter(|t| needle.is_empty() || t.spec.name.to_lowercase().contains(&needle) || t.spec.tenant == query.q)
        .collect();
    matching.sort_by(|a, b| (&a.spec.tenant, &a.spec.name).cmp(&(&b.spec.tenant, &b.spec.name)));
    let tools = matching.iter().take(MAX_LISTED).map(|t| ToolRow::new(t, health.of(t))).collect();
    let mut servers: Vec<ServerRow> = health.mcp_servers().map(ServerRow::from).collect();
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    let view = ToolsPage {
        user: Some(User::from(&session)),
        q: query.q,
        tools,
        matching: matching.len(),
        servers,
        workers: workers(&health),
    };
    super::pages::page(StatusCode::OK, &view)
}

fn workers(health: &HealthSnapshot<'_>) -> Vec<WorkerRow> {
    let tool_name = |(tenant, name): &(String, String)| {
        if tenant.is_empty() { name.clone() } else { format!("{name} ({tenant})") }
    };
    let row = |link: &Arc<crate::backend::worker::WorkerLink>| WorkerRow {
        id: link.id.clone(),
        name: link.name.clone(),
        tools: link.tools.iter().map(tool_name).collect::<Vec<_>>().join(", "),
        waiting: link.pending_count(),
    };
    health.workers().iter().map(row).collect()
}

pub async fn tool(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Query(which): Query<WhichTool>,
) -> Response {
    if let Some(refusal) = refused(&session) {
        return refusal;
    }
    let catalog = console.core.registry.catalog();
    let Some(tool) = catalog.get(&which.tenant, &which.name) else {
        let text = format!("No tool {:?} is registered in tenant {:?}.", which.name, which.tenant);
        return super::pages::message(StatusCode::NOT_FOUND, &session, "Not found", text);
    };
    let health = console.core.backends.health().of(tool);
    let spec = &tool.spec;
    let view = ToolPage {
        user: Some(User::from(&session)),
        row: ToolRow::new(tool, health),
        description: spec.description.clone(),
        backend: backend_text(spec.backend.as_ref()),
        model_schema: pretty(&tool.model_schema().to_string()),
        full_schema: pretty(&spec.input_schema.to_string()),
        injected: tool.injections.iter().map(|i| (i.param.clone(), i.source.describe())).collect(),
        settings: settings(tool, &console.defaults),
        labels: spec.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        rules: console.rules.for_tool(&spec.name, &spec.labels, &tool.rules).iter().map(|r| rule_view(r)).collect(),
    };
    super::pages::page(StatusCode::OK, &view)
}

/// Where the tool runs, with what may hold a secret hidden: header values, a URL's password and query.
fn backend_text(backend: Option<&Backend>) -> String {
    match backend {
        None => "none".into(),
        Some(Backend::Grpc { target }) => format!("gRPC ToolRuntime at {}", without_secrets(target)),
        Some(Backend::Http(http)) => {
            let method = if http.method.is_empty() { "POST" } else { http.method.as_str() };
            let headers: Vec<&str> = http.headers.keys().map(String::as_str).collect();
            let shown = if headers.is_empty() { String::new() } else { format!(" (headers: {})", headers.join(", ")) };
            format!("HTTP {method} {}{shown}", without_secrets(&http.url))
        }
        Some(Backend::Mcp { server, tool }) => format!("MCP server {server:?}, tool {tool:?}"),
        Some(Backend::Worker {}) => "connected workers (ToolWorker.Connect)".into(),
    }
}

fn rule_view(rule: &Rule) -> RuleView {
    let name = |action: RuleAction| match action {
        RuleAction::Deny => "deny",
        RuleAction::Review => "review",
    };
    let on_error = match rule.on_error {
        OnError::Deny => "deny",
        OnError::Review => "review",
        OnError::Allow => "skip the rule",
    };
    RuleView {
        name: rule.name.to_string(),
        action: name(rule.action),
        when: rule.source.when.clone(),
        message: rule.message.to_string(),
        on_error,
    }
}

/// A URL as registered, unless it holds a password or a query (which often carry secrets): then with those hidden.
fn without_secrets(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) if parsed.password().is_none() && parsed.query().is_none() => url.to_owned(),
        _ => redacted_url(url),
    }
}

fn redis_down(policy: RedisDown) -> &'static str {
    match policy {
        RedisDown::FailOpen => "fail open: calls run, past the shared limit",
        RedisDown::FailClosed => "fail closed: calls are refused (RATE_LIMITED, retryable)",
    }
}

/// The tool's limits, review and budget settings, each with the value that applies (the gateway's where the
/// spec leaves it at 0).
fn settings(tool: &CompiledTool, defaults: &Defaults) -> Vec<(&'static str, String)> {
    let (limits, spec) = (&tool.spec.limits, &tool.spec);
    let or_default = |own: u32, default: Option<u32>| match (own, default) {
        (0, Some(d)) => format!("{d} (the gateway's default)"),
        (0, None) => "unlimited".to_owned(),
        (n, _) => n.to_string(),
    };
    let rate = if limits.rate.is_empty() {
        "none".to_owned()
    } else {
        let key = match limits.key {
            LimitKey::Tool => "the tool",
            LimitKey::Tenant => "tenant",
            LimitKey::User => "user",
            LimitKey::Session => "session",
        };
        let scope = match limits.scope {
            RateScope::Cluster => "counted across the cluster",
            RateScope::Gateway => "counted by each gateway",
        };
        format!("{} per {key}, burst {}, {scope}", limits.rate, limits.burst)
    };
    let timeout = match limits.timeout_ms {
        0 => format!("{} ms (the gateway's default)", defaults.timeout.as_millis()),
        ms => format!("{ms} ms"),
    };
    let concurrency = match limits.max_concurrency {
        0 => "unlimited".to_owned(),
        n => format!("{n} at once"),
    };
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_owned();
    vec![
        ("Rate limit", rate),
        ("When Redis is down (cluster mode)", redis_down(limits.when_redis_down).to_owned()),
        ("Concurrency", concurrency),
        ("Timeout per attempt", timeout),
        ("Retries", limits.retries.to_string()),
        ("Idempotent", yes_no(limits.idempotent)),
        ("Review required", yes_no(spec.review.required)),
        ("MCP host may confirm instead", yes_no(spec.review.caller_may_confirm)),
        ("Calls per session", or_default(spec.budget.max_calls, defaults.max_tool_calls)),
        (
            "Failures in a row per session",
            or_default(spec.budget.max_consecutive_failures, defaults.max_consecutive_failures),
        ),
        ("Calls of all tools per session", defaults.max_session_calls.map_or("unlimited".into(), |n| n.to_string())),
        ("Repair", if spec.repair.enabled == Some(false) { "off".into() } else { "on".into() }),
        ("Version", spec.version.to_string()),
    ]
}
