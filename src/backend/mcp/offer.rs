//! What the MCP servers offer besides tools, for the front door to serve: their resources, resource templates and
//! prompts, with the tenancy of their tools (a tenant sees its servers' and the shared ones) and prompts named
//! as their tools are. A server's own error passes through as it gave it.

use super::McpHub;
use super::server::Server;
use rmcp::ErrorData;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Prompt, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceTemplate, ResultType, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RoleClient, ServiceError};
use std::sync::Arc;

/// Items one server's list may give: past it the rest are left out, so one server cannot fill the gateway.
const MAX_LISTED: usize = 10_000;

impl McpHub {
    /// The resources of every connected server `tenant` may see, in the order of the servers' names.
    pub async fn resources(&self, tenant: &str) -> Vec<Resource> {
        self.gather(tenant, |peer| async move { peer.list_all_resources().await }).await
    }

    /// The resource templates of every connected server `tenant` may see.
    pub async fn resource_templates(&self, tenant: &str) -> Vec<ResourceTemplate> {
        self.gather(tenant, |peer| async move { peer.list_all_resource_templates().await }).await
    }

    /// The prompts of every connected server `tenant` may see, each named as the server's tools are.
    pub async fn prompts(&self, tenant: &str) -> Vec<Prompt> {
        let mut prompts = Vec::new();
        for server in self.visible(tenant) {
            let Some((_, peer)) = server.peer() else { continue };
            match peer.list_all_prompts().await {
                Ok(listed) => prompts.extend(listed.into_iter().take(MAX_LISTED).map(|mut prompt| {
                    prompt.name = server.spec.tool_name(&prompt.name);
                    prompt
                })),
                Err(err) => tracing::warn!(server = %server.spec.name, error = %err, "listing its prompts failed"),
            }
        }
        prompts
    }

    /// Reads `uri` from the first server `tenant` may see that has it.
    pub async fn read_resource(&self, tenant: &str, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let mut last = None;
        for server in self.visible(tenant) {
            let Some((_, peer)) = server.peer() else { continue };
            match peer.read_resource_once(ReadResourceRequestParams::new(uri)).await {
                Ok(ReadResourceResponse::Complete(result)) => return Ok(complete_read(result)),
                Ok(_) => last = Some(ErrorData::internal_error("the MCP server asked for input", None)),
                Err(err) => last = Some(relayed(err)),
            }
        }
        Err(last.unwrap_or_else(|| ErrorData::resource_not_found(format!("no resource {uri}"), None)))
    }

    /// Gets the prompt named `name` (as `prompts` names it) from the server that has it.
    pub async fn get_prompt(
        &self,
        tenant: &str,
        name: &str,
        arguments: Option<rmcp::model::JsonObject>,
    ) -> Result<GetPromptResult, ErrorData> {
        let mut last = None;
        for server in self.visible(tenant) {
            let Some(own) = own_name(&server, name) else { continue };
            let Some((_, peer)) = server.peer() else { continue };
            let mut params = GetPromptRequestParams::new(own);
            params.arguments = arguments.clone();
            match peer.get_prompt_once(params).await {
                Ok(GetPromptResponse::Complete(mut result)) => {
                    result.result_type = Some(ResultType::COMPLETE);
                    return Ok(result);
                }
                Ok(_) => last = Some(ErrorData::internal_error("the MCP server asked for input", None)),
                Err(err) => last = Some(relayed(err)),
            }
        }
        Err(last.unwrap_or_else(|| ErrorData::invalid_params(format!("no prompt {name}"), None)))
    }

    /// Resource updates and list changes from now on, of every server: the front door tells its hosts of those
    /// they may see and subscribed to.
    pub fn offer_changes(&self) -> tokio::sync::broadcast::Receiver<super::OfferChange> {
        self.ctx.relays.offers.subscribe()
    }

    /// Subscribes to `uri` at the first server `tenant` may see that takes the subscription (or unsubscribes).
    #[expect(deprecated, reason = "the gateway speaks 2025-11-25 to its servers, where subscriptions are these")]
    pub async fn subscribe(&self, tenant: &str, uri: &str, subscribe: bool) -> Result<(), ErrorData> {
        let mut last = None;
        for server in self.visible(tenant) {
            let Some((_, peer)) = server.peer() else { continue };
            let asked = match subscribe {
                true => peer.subscribe(SubscribeRequestParams::new(uri)).await,
                false => peer.unsubscribe(UnsubscribeRequestParams::new(uri)).await,
            };
            match asked {
                Ok(()) => return Ok(()),
                Err(err) => last = Some(relayed(err)),
            }
        }
        Err(last.unwrap_or_else(|| ErrorData::resource_not_found(format!("no resource {uri}"), None)))
    }

    /// The servers `tenant` may see, by name: a server of another tenant does not exist for it.
    fn visible(&self, tenant: &str) -> Vec<Arc<Server>> {
        let servers = self.servers.lock().expect("servers lock");
        let mut visible: Vec<_> =
            servers.values().filter(|s| s.spec.tenant.is_empty() || s.spec.tenant == tenant).cloned().collect();
        visible.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        visible
    }

    async fn gather<T, F, Fut>(&self, tenant: &str, list: F) -> Vec<T>
    where
        F: Fn(Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<Vec<T>, ServiceError>>,
    {
        let mut items = Vec::new();
        for server in self.visible(tenant) {
            let Some((_, peer)) = server.peer() else { continue };
            match list(peer).await {
                Ok(listed) => items.extend(listed.into_iter().take(MAX_LISTED)),
                Err(err) => tracing::warn!(server = %server.spec.name, error = %err, "listing what it offers failed"),
            }
        }
        items
    }
}

/// A result as a complete one: the server spoke 2025-11-25, whose results carry no `resultType`, and a host on a
/// later version needs it (the SDK leaves it out again for a host on an earlier one).
fn complete_read(mut result: ReadResourceResult) -> ReadResourceResult {
    result.result_type = Some(ResultType::COMPLETE);
    result
}

/// The server's own name for the prompt the gateway calls `name`, if the server's prefix matches.
fn own_name(server: &Server, name: &str) -> Option<String> {
    let prefixed = server.spec.tool_name("");
    name.strip_prefix(&prefixed).filter(|own| !own.is_empty()).map(str::to_owned)
}

/// A server's JSON-RPC error as it gave it; a broken session or a timeout as an internal error.
fn relayed(err: ServiceError) -> ErrorData {
    match err {
        ServiceError::McpError(data) => data,
        other => ErrorData::internal_error(format!("the MCP server did not answer: {other}"), None),
    }
}
