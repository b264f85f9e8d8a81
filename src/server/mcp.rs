//! `toolgate.v1.McpRegistry`: the admin plane over the `McpHub`, and the conversions of its messages.

use super::convert::{
    budget_from_proto, budget_to_proto, injections_from_proto, injections_to_proto, limits_from_proto, limits_to_proto,
    repair_policy_from_proto, repair_policy_to_proto,
};
use super::status::ServiceError;
use crate::backend::mcp::{McpHub, McpServerSpec, McpStatus, ToolOverlay};
use crate::pb::v1::{self as pb, mcp_registry_server::McpRegistry};
use crate::registry::Review;
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct McpService {
    hub: Arc<McpHub>,
}

impl McpService {
    pub fn new(hub: Arc<McpHub>) -> Self {
        Self { hub }
    }
}

#[tonic::async_trait]
impl McpRegistry for McpService {
    async fn add_mcp_server(
        &self,
        request: Request<pb::AddMcpServerRequest>,
    ) -> Result<Response<pb::AddMcpServerResponse>, Status> {
        let server =
            request.into_inner().server.ok_or_else(|| ServiceError::BadRequest("server is required".into()))?;
        // In a task of its own: a caller that goes away mid-change must not leave a server stopped and not restarted.
        let hub = Arc::clone(&self.hub);
        let added = tokio::spawn(async move { hub.add(server_from_proto(server)).await });
        let (status, created) = added.await.expect("adding an MCP server panicked").map_err(ServiceError::from)?;
        tracing::info!(server = %status.spec.name, created, connected = status.connected, tools = status.tools.len(), "MCP server added");
        Ok(Response::new(pb::AddMcpServerResponse { status: Some(status_to_proto(status)), created }))
    }

    async fn remove_mcp_server(
        &self,
        request: Request<pb::RemoveMcpServerRequest>,
    ) -> Result<Response<pb::RemoveMcpServerResponse>, Status> {
        let name = request.into_inner().name;
        let hub = Arc::clone(&self.hub);
        let removing = name.clone();
        let removed = tokio::spawn(async move { hub.remove(&removing).await });
        removed.await.expect("removing an MCP server panicked").map_err(ServiceError::from)?;
        tracing::info!(server = %name, "MCP server removed");
        Ok(Response::new(pb::RemoveMcpServerResponse {}))
    }

    async fn list_mcp_servers(
        &self,
        _request: Request<pb::ListMcpServersRequest>,
    ) -> Result<Response<pb::ListMcpServersResponse>, Status> {
        let servers = self.hub.list().into_iter().map(status_to_proto).collect();
        Ok(Response::new(pb::ListMcpServersResponse { servers }))
    }
}

pub fn server_from_proto(server: pb::McpServer) -> McpServerSpec {
    let mut spec = McpServerSpec {
        name: server.name,
        prefix: server.prefix,
        separator: server.separator,
        tenant: server.tenant,
        refresh_interval_ms: server.refresh_interval_ms,
        pass_invalid_output: server.pass_invalid_output,
        overlays: server.overlays.into_iter().map(|(name, o)| (name, overlay_from_proto(o))).collect(),
        ..McpServerSpec::default()
    };
    match server.transport {
        Some(pb::mcp_server::Transport::Stdio(stdio)) => {
            spec.command = Some(stdio.command);
            spec.args = stdio.args;
            spec.env = stdio.env.into_iter().collect();
            spec.cwd = (!stdio.cwd.is_empty()).then_some(stdio.cwd);
        }
        Some(pb::mcp_server::Transport::Http(http)) => {
            spec.url = Some(http.url);
            spec.headers = http.headers.into_iter().collect();
        }
        None => {}
    }
    spec
}

pub fn server_to_proto(spec: McpServerSpec) -> pb::McpServer {
    let transport = match (spec.command, spec.url) {
        (Some(command), _) => Some(pb::mcp_server::Transport::Stdio(pb::McpStdio {
            command,
            args: spec.args,
            env: spec.env.into_iter().collect(),
            cwd: spec.cwd.unwrap_or_default(),
        })),
        (None, Some(url)) => {
            Some(pb::mcp_server::Transport::Http(pb::McpHttp { url, headers: spec.headers.into_iter().collect() }))
        }
        (None, None) => None,
    };
    pb::McpServer {
        name: spec.name,
        transport,
        prefix: spec.prefix,
        separator: spec.separator,
        tenant: spec.tenant,
        refresh_interval_ms: spec.refresh_interval_ms,
        overlays: spec.overlays.into_iter().map(|(name, o)| (name, overlay_to_proto(o))).collect(),
        pass_invalid_output: spec.pass_invalid_output,
    }
}

fn overlay_from_proto(o: pb::ToolOverlay) -> ToolOverlay {
    ToolOverlay {
        inject: injections_from_proto(o.inject),
        repair: repair_policy_from_proto(o.repair),
        limits: limits_from_proto(o.limits),
        review: Review { required: o.review.is_some_and(|r| r.required) },
        budget: budget_from_proto(o.budget),
        labels: o.labels.into_iter().collect(),
    }
}

fn overlay_to_proto(o: ToolOverlay) -> pb::ToolOverlay {
    pb::ToolOverlay {
        inject: injections_to_proto(&o.inject),
        repair: Some(repair_policy_to_proto(&o.repair)),
        limits: Some(limits_to_proto(&o.limits)),
        review: Some(pb::Review { required: o.review.required }),
        budget: Some(budget_to_proto(o.budget)),
        labels: o.labels.into_iter().collect(),
    }
}

fn status_to_proto(status: McpStatus) -> pb::McpServerStatus {
    pb::McpServerStatus {
        server: Some(server_to_proto(status.spec)),
        connected: status.connected,
        tools: status.tools,
        problems: status.problems,
        last_error: status.last_error,
        connects: status.connects,
        output_violations: status.output_violations,
    }
}
