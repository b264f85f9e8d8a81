//! `subscriptions/listen` (2026-07-28): a host without a session hears of changes on one long request: the
//! registry's (`tools/list_changed`), and those of the imported servers its tenant may see (resources and prompts
//! `list_changed`, and an update of a resource it listed, held at the server for it while it listens).

use super::offers::SessionOffers;
use crate::backend::mcp::OfferKind;
use crate::handles::Core;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    PromptListChangedNotification, ResourceListChangedNotification, ResourceUpdatedNotification,
    ResourceUpdatedNotificationParam, ServerNotification, ToolListChangedNotification,
};
use rmcp::service::SubscriptionContext;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// Runs one listen of a host of `tenant` until the host cancels it or the gateway stops.
pub async fn listen(core: Arc<Core>, subscription: SubscriptionContext, tenant: &str) -> Result<(), McpError> {
    let offers = SessionOffers::default();
    offers.seen(tenant);
    let mut told = Ok(());
    for uri in subscription.accepted().resource_subscriptions.iter().flatten() {
        told = offers.subscribe(&core, tenant, uri).await;
        if told.is_err() {
            break;
        }
    }
    if told.is_ok() {
        follow(&core, &subscription, &offers).await;
    }
    offers.end(&core).await;
    told
}

/// Passes each change the listen hears of on, until it ends.
async fn follow(core: &Core, subscription: &SubscriptionContext, offers: &SessionOffers) {
    let (mut tools, mut changes) = (core.registry.changes(), core.mcp.offer_changes());
    let sink = subscription.sink();
    loop {
        let note = tokio::select! {
            () = subscription.cancelled() => return,
            changed = tools.changed() => match changed {
                Ok(()) => ServerNotification::ToolListChangedNotification(ToolListChangedNotification::default()),
                Err(_) => return,
            },
            change = changes.recv() => match change {
                Ok(change) if offers.hears(&change) => match change.kind {
                    OfferKind::ResourceUpdated(uri) => ServerNotification::ResourceUpdatedNotification(
                        ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new(uri)),
                    ),
                    OfferKind::Resources => ServerNotification::ResourceListChangedNotification(
                        ResourceListChangedNotification::default(),
                    ),
                    OfferKind::Prompts => {
                        ServerNotification::PromptListChangedNotification(PromptListChangedNotification::default())
                    }
                },
                Ok(_) | Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            },
        };
        // A kind the host did not ask for is filtered out by the sink; a closed one ends the listen.
        if let Err(rmcp::service::SubscriptionSendError::SubscriptionClosed) = sink.send(note).await {
            return;
        }
    }
}
