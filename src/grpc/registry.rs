//! `toolgate.v1.ToolRegistry`: the admin plane over the `Registry`.

use super::status::ServiceError;
use crate::pb::v1::{self as pb, tool_registry_server::ToolRegistry};
use crate::registry::{Registry, ToolSpec};
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct RegistryService {
    registry: Arc<Registry>,
}

impl RegistryService {
    pub fn new(registry: Arc<Registry>) -> Self {
        Self { registry }
    }
}

#[tonic::async_trait]
impl ToolRegistry for RegistryService {
    async fn register_tool(
        &self,
        request: Request<pb::RegisterToolRequest>,
    ) -> Result<Response<pb::RegisterToolResponse>, Status> {
        let spec = request.into_inner().spec.ok_or_else(|| ServiceError::BadRequest("spec is required".into()))?;
        let spec = ToolSpec::try_from(spec).map_err(|e| ServiceError::BadRequest(format!("invalid tool spec: {e}")))?;
        let (tool, created) = self.registry.register(spec).await.map_err(ServiceError::from)?;
        tracing::info!(tool = %tool.spec.name, tenant = %tool.spec.tenant, version = tool.spec.version, created, "tool registered");
        Ok(Response::new(pb::RegisterToolResponse { tool: Some((&tool.spec).into()), created }))
    }

    async fn get_tool(&self, request: Request<pb::GetToolRequest>) -> Result<Response<pb::GetToolResponse>, Status> {
        let req = request.into_inner();
        let tool = self.registry.get(&req.tenant, &req.name).map_err(ServiceError::from)?;
        Ok(Response::new(pb::GetToolResponse { tool: Some((&tool.spec).into()) }))
    }

    async fn list_tools(
        &self,
        request: Request<pb::ListToolsRequest>,
    ) -> Result<Response<pb::ListToolsResponse>, Status> {
        let req = request.into_inner();
        let catalog = self.registry.catalog();
        let tools = catalog
            .all()
            .iter()
            .filter(|t| req.all_tenants || t.spec.tenant == req.tenant)
            .map(|t| pb::ToolSpec::from(&t.spec))
            .collect();
        Ok(Response::new(pb::ListToolsResponse { tools }))
    }

    async fn delete_tool(
        &self,
        request: Request<pb::DeleteToolRequest>,
    ) -> Result<Response<pb::DeleteToolResponse>, Status> {
        let req = request.into_inner();
        self.registry.delete(&req.tenant, &req.name).await.map_err(ServiceError::from)?;
        tracing::info!(tool = %req.name, tenant = %req.tenant, "tool deleted");
        Ok(Response::new(pb::DeleteToolResponse {}))
    }
}
