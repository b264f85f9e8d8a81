//! How each tool's backend looks from this gateway now: its MCP server's session, the workers connected for it,
//! its gRPC tool server's connection. Read when a page asks (the console's tools page), never on the call path,
//! and never by calling out: what it reports is what the gateway already knows.

use super::Backends;
use super::mcp::McpStatus;
use crate::registry::{Backend, CompiledTool};
use crate::wire::client::Link;
use std::collections::HashMap;
use std::time::Duration;

/// Up, down, or not known until a call tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthState {
    Up,
    Down,
    Unknown,
}

impl HealthState {
    pub fn name(self) -> &'static str {
        match self {
            HealthState::Up => "up",
            HealthState::Down => "down",
            HealthState::Unknown => "unknown",
        }
    }
}

/// A backend's state, and a line saying why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    pub state: HealthState,
    pub detail: String,
}

impl Health {
    fn new(state: HealthState, detail: impl Into<String>) -> Self {
        Self { state, detail: detail.into() }
    }
}

/// The backends' state at one moment, read once for a whole page of tools.
pub struct HealthSnapshot<'a> {
    backends: &'a Backends,
    mcp: HashMap<String, McpStatus>,
}

impl Backends {
    /// What this gateway knows of its backends now.
    pub fn health(&self) -> HealthSnapshot<'_> {
        let mcp = self.mcp.list().into_iter().map(|s| (s.spec.name.clone(), s)).collect();
        HealthSnapshot { backends: self, mcp }
    }
}

impl HealthSnapshot<'_> {
    /// The MCP servers' statuses, by name.
    pub fn mcp_servers(&self) -> impl Iterator<Item = &McpStatus> {
        self.mcp.values()
    }

    /// The workers connected now.
    pub fn workers(&self) -> Vec<std::sync::Arc<super::worker::WorkerLink>> {
        self.backends.workers.connected()
    }

    /// The state of `tool`'s backend.
    pub fn of(&self, tool: &CompiledTool) -> Health {
        match &tool.spec.backend {
            Some(Backend::Grpc { target }) => grpc(self.backends.grpc.link(target)),
            Some(Backend::Http(_)) => Health::new(
                HealthState::Unknown,
                "HTTP connections are pooled and opened by calls; the recent calls tell how it answers",
            ),
            Some(Backend::Mcp { server, .. }) => mcp(self.mcp.get(server), server),
            Some(Backend::Worker {}) => {
                let n = self.backends.workers.workers_of(&tool.spec.tenant, &tool.spec.name);
                match n {
                    0 => Health::new(HealthState::Down, "no worker serving this tool is connected"),
                    1 => Health::new(HealthState::Up, "1 worker connected"),
                    n => Health::new(HealthState::Up, format!("{n} workers connected")),
                }
            }
            None => Health::new(HealthState::Unknown, "no backend"),
        }
    }
}

fn grpc(link: Option<Link>) -> Health {
    match link {
        None | Some(Link::Never) => Health::new(HealthState::Unknown, "not connected yet: the first call connects"),
        Some(Link::Open) => Health::new(HealthState::Up, "connected"),
        Some(Link::Closed) => Health::new(HealthState::Unknown, "the connection closed; the next call reconnects"),
        Some(Link::Failed { ago, reason }) => {
            Health::new(HealthState::Down, format!("the last connect failed {} ago: {reason}", ago_text(ago)))
        }
    }
}

/// A tool on an MCP server is up while the server's session is open. (One the server stops listing is removed from
/// the registry at the next refresh, so it is not here to ask about.)
fn mcp(status: Option<&McpStatus>, server: &str) -> Health {
    let Some(status) = status else {
        return Health::new(HealthState::Down, format!("no MCP server {server:?} on this gateway"));
    };
    if !status.connected {
        let why = if status.last_error.is_empty() { "not connected yet" } else { status.last_error.as_str() };
        return Health::new(HealthState::Down, format!("MCP server {server:?} is disconnected: {why}"));
    }
    let connects = status.connects;
    Health::new(HealthState::Up, format!("MCP server {server:?} connected ({connects} connects since the start)"))
}

fn ago_text(ago: Duration) -> String {
    match ago.as_secs() {
        s @ 0..120 => format!("{s} s"),
        s => format!("{} min", s / 60),
    }
}
