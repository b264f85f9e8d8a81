//! One MCP session's share of what the imported servers offer besides tools: its resource subscriptions (held at
//! the server once for every host, counted by the hub) and the changes it is told of, only of servers its tenant
//! may see.

use super::SESSION_CHECK;
use crate::backend::mcp::{OfferChange, OfferKind};
use crate::handles::Core;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::Peer;
use rmcp::{ErrorData as McpError, RoleServer};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::broadcast::{Receiver, error::RecvError};

/// Resources one session may be subscribed to at once.
const MAX_SUBSCRIPTIONS: usize = 1_000;

/// A session's subscriptions, by server and URI, and its tenant once a request has named it.
#[derive(Default)]
pub struct SessionOffers {
    subscribed: Mutex<HashSet<(String, String)>>,
    tenant: OnceLock<String>,
}

impl SessionOffers {
    /// The session's tenant, from its principal: it never changes, as a session is its opener's alone.
    pub fn seen(&self, tenant: &str) {
        let _ = self.tenant.set(tenant.to_owned());
    }

    pub async fn subscribe(&self, core: &Core, tenant: &str, uri: &str) -> Result<(), McpError> {
        {
            let held = self.subscribed.lock().expect("subscriptions lock");
            if held.iter().any(|(_, held)| held == uri) {
                return Ok(());
            }
            if held.len() >= MAX_SUBSCRIPTIONS {
                let message = format!("this session holds {MAX_SUBSCRIPTIONS} subscriptions: end one first");
                return Err(McpError::invalid_request(message, None));
            }
        }
        let server = core.mcp.subscribe(tenant, uri).await?;
        let fresh = self.subscribed.lock().expect("subscriptions lock").insert((server.clone(), uri.to_owned()));
        if !fresh {
            // Two subscriptions to one URI raced in this session: the hub counted both, the session holds one.
            core.mcp.unsubscribe(&server, uri).await;
        }
        Ok(())
    }

    pub async fn unsubscribe(&self, core: &Core, uri: &str) {
        let ended: Vec<_> = {
            let mut held = self.subscribed.lock().expect("subscriptions lock");
            let ended: Vec<_> = held.iter().filter(|(_, held)| held == uri).cloned().collect();
            held.retain(|(_, held)| held != uri);
            ended
        };
        for (server, uri) in ended {
            core.mcp.unsubscribe(&server, &uri).await;
        }
    }

    /// Ends every subscription the session holds.
    pub async fn end(&self, core: &Core) {
        let held: Vec<_> = self.subscribed.lock().expect("subscriptions lock").drain().collect();
        for (server, uri) in held {
            core.mcp.unsubscribe(&server, &uri).await;
        }
    }

    /// Whether the session hears of `change`: an update of a resource it subscribed to at that server, or a list
    /// change of a server its tenant may see (none before a request has named the tenant).
    pub fn hears(&self, change: &OfferChange) -> bool {
        match &change.kind {
            OfferKind::ResourceUpdated(uri) => {
                self.subscribed.lock().expect("subscriptions lock").contains(&(change.server.clone(), uri.clone()))
            }
            OfferKind::Resources | OfferKind::Prompts => {
                self.tenant.get().is_some_and(|tenant| change.tenant.is_empty() || change.tenant == *tenant)
            }
        }
    }
}

/// Tells one session of the changes it hears of, until the session ends; then ends its subscriptions.
pub async fn tell_offers(
    core: Arc<Core>,
    offers: Arc<SessionOffers>,
    mut changes: Receiver<OfferChange>,
    peer: Peer<RoleServer>,
) {
    loop {
        let change = tokio::select! {
            change = changes.recv() => change,
            () = tokio::time::sleep(SESSION_CHECK) => {
                if peer.is_transport_closed() {
                    break;
                }
                continue;
            }
        };
        let change = match change {
            Ok(change) if offers.hears(&change) => change,
            Ok(_) | Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => break,
        };
        let told = match change.kind {
            OfferKind::ResourceUpdated(uri) => {
                peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri)).await
            }
            OfferKind::Resources => peer.notify_resource_list_changed().await,
            OfferKind::Prompts => peer.notify_prompt_list_changed().await,
        };
        if told.is_err() {
            break;
        }
    }
    offers.end(&core).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(server: &str, tenant: &str, kind: OfferKind) -> OfferChange {
        OfferChange { server: server.into(), tenant: tenant.into(), kind }
    }

    #[test]
    fn a_session_hears_only_of_servers_its_tenant_may_see_and_of_resources_it_subscribed_to() {
        let offers = SessionOffers::default();
        assert!(!offers.hears(&change("memo", "", OfferKind::Prompts)), "no tenant named yet: nothing");
        offers.seen("acme");
        assert!(offers.hears(&change("memo", "", OfferKind::Prompts)), "a shared server");
        assert!(offers.hears(&change("books", "acme", OfferKind::Resources)), "its tenant's server");
        assert!(!offers.hears(&change("payroll", "globex", OfferKind::Resources)), "another tenant's server");
        let update = |server: &str| change(server, "", OfferKind::ResourceUpdated("memo://greeting".into()));
        assert!(!offers.hears(&update("memo")), "not subscribed");
        offers.subscribed.lock().unwrap().insert(("memo".into(), "memo://greeting".into()));
        assert!(offers.hears(&update("memo")));
        assert!(!offers.hears(&update("other")), "the same URI at another server");
    }
}
