//! `toolgate.v1.McpRegistry`: the admin plane over the `McpHub`.

use super::status::ServiceError;
use crate::backend::mcp::{McpHub, McpServerSpec};
use crate::pb::v1::{self as pb, mcp_registry_server::McpRegistry};
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
        let server = McpServerSpec::try_from(server).map_err(ServiceError::BadRequest)?;
        let hub = Arc::clone(&self.hub);
        let added = tokio::spawn(async move { hub.add(server).await });
        let (status, created) = added.await.expect("adding an MCP server panicked").map_err(ServiceError::from)?;
        tracing::info!(server = %status.spec.name, created, connected = status.connected, tools = status.tools.len(), "MCP server added");
        Ok(Response::new(pb::AddMcpServerResponse { status: Some(status.into()), created }))
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
        let servers = self.hub.list().into_iter().map(pb::McpServerStatus::from).collect();
        Ok(Response::new(pb::ListMcpServersResponse { servers }))
    }
}
