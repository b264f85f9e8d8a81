//! A reviewed call the caller's own user may confirm: when the tool's review says `caller_may_confirm` and the host
//! declared elicitation, the user is asked through `elicitation/create`; accepting approves the call (which then
//! runs once), declining or cancelling rejects it with that as the feedback. A host that cannot ask, or a request
//! that fails or is not answered within `mcp_front.confirm_timeout_s`, leaves the call pending for a reviewer.

use crate::executor::CallRequest;
use crate::handles::Core;
use crate::pipeline::{ToolMessage, ToolStatus};
use crate::review::{Decision, ReviewError, ReviewKey};
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::Peer;
use std::collections::BTreeMap;

/// What the user is told when a call they declined answers.
const DECLINED: &str = "the user declined the call";

/// Whether `peer` can be asked: it declared elicitation when it connected.
pub fn can_ask(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info().is_some_and(|info| info.capabilities.elicitation.is_some())
}

/// Asks the user about a call that `first` says is pending, records their answer as the decision, and runs the
/// call again under its id to get the outcome. Anything else is answered as it is. The user has `timeout` to
/// answer: the call's own answer must reach the host before it gives up on it.
pub async fn ask(
    core: &Core,
    peer: &Peer<RoleServer>,
    req: CallRequest<'_>,
    first: ToolMessage,
    timeout: std::time::Duration,
) -> ToolMessage {
    if first.status != ToolStatus::PendingReview {
        return first;
    }
    let question = format!(
        "Allow the tool {} to run with these arguments?\n{}",
        first.name,
        if first.effective_arguments.is_empty() { "{}" } else { first.effective_arguments.as_str() }
    );
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question,
        requested_schema: ElicitationSchema::new(BTreeMap::new()),
    };
    let decision = match peer.create_elicitation_with_timeout(params, Some(timeout)).await {
        Ok(ElicitResult { action: ElicitationAction::Accept, .. }) => Decision::Approve,
        Ok(_) => Decision::Reject { feedback: DECLINED.into() },
        Err(err) => {
            tracing::info!(tool = %first.name, error = %err, "asking the user failed: the call waits for a reviewer");
            return first;
        }
    };
    let key = ReviewKey { tenant: req.ctx.tenant.clone(), call_id: req.call.id.clone() };
    match core.reviews.decide(&key, decision, None).await {
        // A reviewer may have been quicker: their decision stands.
        Ok(_) | Err(ReviewError::AlreadyDecided) => core.executor.execute(req).await,
        Err(err) => {
            tracing::warn!(tool = %first.name, error = %err, "the user's answer was not recorded");
            first
        }
    }
}
