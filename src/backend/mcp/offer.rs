//! What the MCP servers offer besides tools, for the front door to serve: their resources, resource templates and
//! prompts, with the tenancy of their tools (a tenant sees its servers' and the shared ones) and prompts named
//! as their tools are. A server's own error passes through as it gave it; each request to a server is bounded by
//! the connect timeout, and each server's list by `MAX_LISTED`.

use super::McpHub;
use super::server::Server;
use rmcp::ErrorData;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, PaginatedRequestParams, Prompt,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceTemplate, ResultType,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RoleClient, ServiceError};
use std::sync::Arc;

/// Items one server's list may give: past it the rest are left out, so one server cannot fill the gateway.
const MAX_LISTED: usize = 10_000;

impl McpHub {
    /// The resources of every connected server `tenant` may see, in the order of the servers' names.
    pub async fn resources(&self, tenant: &str) -> Vec<Resource> {
        self.gather(tenant, async |peer, cursor| {
            let page = peer.list_resources(Some(PaginatedRequestParams::default().with_cursor(cursor))).await?;
            Ok((page.resources, page.next_cursor))
        })
        .await
        .into_iter()
        .flat_map(|(_, items)| items)
        .collect()
    }

    /// The resource templates of every connected server `tenant` may see.
    pub async fn resource_templates(&self, tenant: &str) -> Vec<ResourceTemplate> {
        self.gather(tenant, async |peer, cursor| {
            let params = PaginatedRequestParams::default().with_cursor(cursor);
            let page = peer.list_resource_templates(Some(params)).await?;
            Ok((page.resource_templates, page.next_cursor))
        })
        .await
        .into_iter()
        .flat_map(|(_, items)| items)
        .collect()
    }

    /// The prompts of every connected server `tenant` may see, each named as the server's tools are.
    pub async fn prompts(&self, tenant: &str) -> Vec<Prompt> {
        let listed = self
            .gather(tenant, async |peer, cursor| {
                let page = peer.list_prompts(Some(PaginatedRequestParams::default().with_cursor(cursor))).await?;
                Ok((page.prompts, page.next_cursor))
            })
            .await;
        let named = listed.into_iter().flat_map(|(server, prompts)| {
            prompts.into_iter().map(move |mut prompt| {
                prompt.name = server.spec.tool_name(&prompt.name);
                prompt
            })
        });
        named.collect()
    }

    /// Reads `uri` from the first server `tenant` may see that has it.
    pub async fn read_resource(&self, tenant: &str, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let mut last = None;
        for server in self.visible(tenant) {
            let Some((_, peer)) = server.peer() else { continue };
            let read = peer.read_resource_once(ReadResourceRequestParams::new(uri));
            match tokio::time::timeout(self.ctx.connect_timeout, read).await {
                Ok(Ok(ReadResourceResponse::Complete(mut result))) => {
                    // The server spoke 2025-11-25, whose results carry no `resultType`; a host on a later version
                    // needs it (the SDK leaves it out again for a host on an earlier one).
                    result.result_type = Some(ResultType::COMPLETE);
                    return Ok(result);
                }
                Ok(Ok(_)) => last = Some(ErrorData::internal_error("the MCP server asked for input", None)),
                Ok(Err(err)) => last = Some(relayed(err)),
                Err(_) => last = Some(late()),
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
            match tokio::time::timeout(self.ctx.connect_timeout, peer.get_prompt_once(params)).await {
                Ok(Ok(GetPromptResponse::Complete(mut result))) => {
                    // Complete, as a read's result is marked.
                    result.result_type = Some(ResultType::COMPLETE);
                    return Ok(result);
                }
                Ok(Ok(_)) => last = Some(ErrorData::internal_error("the MCP server asked for input", None)),
                Ok(Err(err)) => last = Some(relayed(err)),
                Err(_) => last = Some(late()),
            }
        }
        Err(last.unwrap_or_else(|| ErrorData::invalid_params(format!("no prompt {name}"), None)))
    }

    /// Resource updates and list changes from now on, of every server: the front door tells its hosts of those
    /// they may see and subscribed to.
    pub fn offer_changes(&self) -> tokio::sync::broadcast::Receiver<super::OfferChange> {
        self.ctx.relays.offers.subscribe()
    }

    /// Subscribes a host of `tenant` to `uri`: at a server it may see that holds the subscription already for
    /// another host, else at the first one that takes it. Answers the server, which `unsubscribe` is given.
    #[expect(deprecated, reason = "the gateway speaks 2025-11-25 to its servers, where subscriptions are these")]
    pub async fn subscribe(&self, tenant: &str, uri: &str) -> Result<String, ErrorData> {
        let mut held = self.subscriptions.lock().await;
        let visible = self.visible(tenant);
        for server in &visible {
            if let Some(hosts) = held.get_mut(&(server.spec.name.clone(), uri.to_owned())) {
                *hosts += 1;
                return Ok(server.spec.name.clone());
            }
        }
        let mut last = None;
        for server in visible {
            let Some((_, peer)) = server.peer() else { continue };
            let asked = peer.subscribe(SubscribeRequestParams::new(uri));
            match tokio::time::timeout(self.ctx.connect_timeout, asked).await {
                Ok(Ok(())) => {
                    held.insert((server.spec.name.clone(), uri.to_owned()), 1);
                    return Ok(server.spec.name.clone());
                }
                Ok(Err(err)) => last = Some(relayed(err)),
                Err(_) => last = Some(late()),
            }
        }
        Err(last.unwrap_or_else(|| ErrorData::resource_not_found(format!("no resource {uri}"), None)))
    }

    /// Ends one host's subscription to `uri` at `server`; the server's own ends with the last host's.
    #[expect(deprecated, reason = "the gateway speaks 2025-11-25 to its servers, where subscriptions are these")]
    pub async fn unsubscribe(&self, server: &str, uri: &str) {
        let mut held = self.subscriptions.lock().await;
        let key = (server.to_owned(), uri.to_owned());
        match held.get_mut(&key) {
            Some(hosts) if *hosts > 1 => *hosts -= 1,
            Some(_) => {
                held.remove(&key);
                let found = self.servers.lock().expect("servers lock").get(server).cloned();
                if let Some((_, peer)) = found.and_then(|s| s.peer()) {
                    let ended = peer.unsubscribe(UnsubscribeRequestParams::new(uri));
                    if !matches!(tokio::time::timeout(self.ctx.connect_timeout, ended).await, Ok(Ok(()))) {
                        tracing::debug!(server, uri, "ending a resource subscription at the server failed");
                    }
                }
            }
            None => {}
        }
    }

    /// The servers `tenant` may see, by name: a server of another tenant does not exist for it.
    fn visible(&self, tenant: &str) -> Vec<Arc<Server>> {
        let servers = self.servers.lock().expect("servers lock");
        let mut visible: Vec<_> =
            servers.values().filter(|s| s.spec.tenant.is_empty() || s.spec.tenant == tenant).cloned().collect();
        visible.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        visible
    }

    /// One list of every connected server `tenant` may see, page by page, each page within the connect timeout
    /// and at most `MAX_LISTED` items a server: a server that does not answer, or pages on, is cut short.
    async fn gather<T>(
        &self,
        tenant: &str,
        page: impl AsyncFn(Peer<RoleClient>, Option<String>) -> Result<(Vec<T>, Option<String>), ServiceError>,
    ) -> Vec<(Arc<Server>, Vec<T>)> {
        let mut lists = Vec::new();
        for server in self.visible(tenant) {
            let Some((_, peer)) = server.peer() else { continue };
            let (mut items, mut cursor) = (Vec::new(), None);
            loop {
                match tokio::time::timeout(self.ctx.connect_timeout, page(peer.clone(), cursor.take())).await {
                    Ok(Ok((got, next))) => {
                        items.extend(got);
                        items.truncate(MAX_LISTED);
                        match next {
                            Some(next) if items.len() < MAX_LISTED => cursor = Some(next),
                            _ => break,
                        }
                    }
                    Ok(Err(err)) => {
                        tracing::warn!(server = %server.spec.name, error = %err, "listing what it offers failed");
                        break;
                    }
                    Err(_) => {
                        tracing::warn!(server = %server.spec.name, "listing what it offers took too long");
                        break;
                    }
                }
            }
            lists.push((server, items));
        }
        lists
    }
}

/// The server's own name for the prompt the gateway calls `name`, if the server's prefix matches.
fn own_name(server: &Server, name: &str) -> Option<String> {
    let prefixed = server.spec.tool_name("");
    name.strip_prefix(&prefixed).filter(|own| !own.is_empty()).map(str::to_owned)
}

/// A server that did not answer within the connect timeout.
fn late() -> ErrorData {
    ErrorData::internal_error("the MCP server did not answer in time", None)
}

/// A server's JSON-RPC error as it gave it; a broken session or a timeout as an internal error.
fn relayed(err: ServiceError) -> ErrorData {
    match err {
        ServiceError::McpError(data) => data,
        other => ErrorData::internal_error(format!("the MCP server did not answer: {other}"), None),
    }
}
