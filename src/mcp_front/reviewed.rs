//! A call to a tool that needs review, at the front door. MCP has no call id: such a call gets one from who calls
//! (with the session their token names, if it names one), which tool, which arguments and the tool's definition,
//! so that calling again with the same arguments picks up the reviewer's decision (and the tool runs once) while
//! the review is kept (`review.keep_decided`). Not the MCP session: hosts such as LangChain's open one per call,
//! and 2026-07-28 has none. A changed definition is a changed policy: the call is reviewed again. Other calls get
//! no id, so the same call made twice runs twice.

use super::state::Claims;
use crate::config::Principal;
use crate::handles::Core;
use crate::pipeline;
use sha2::{Digest, Sha256};

/// A reviewed call: what its sealed state binds (its id among them), and whether its user may confirm it.
pub struct Reviewed {
    pub claims: Claims,
    pub confirmable: bool,
}

/// The call's review, if its tool needs one.
pub fn of(core: &Core, principal: &Principal, name: &str, arguments: &str) -> Option<Reviewed> {
    let tenant = principal.tenant.as_str();
    let tool = pipeline::exact_tool(&core.registry.catalog(), tenant, name)?;
    if !tool.spec.review.required {
        return None;
    }
    let policy = hex(&Sha256::digest(serde_json::to_vec(&tool.spec).expect("a tool's spec is JSON")));
    let session = principal.values.get("session_id").map_or("", String::as_str);
    let mut id = Sha256::new();
    for part in [tenant, principal.user_id.as_str(), session, tool.spec.name.as_str(), arguments, policy.as_str()] {
        id.update(part.len().to_le_bytes());
        id.update(part.as_bytes());
    }
    let claims = Claims {
        call: format!("mcp-{}", hex(&id.finalize()[..16])),
        tenant: tenant.to_owned(),
        user: principal.user_id.clone(),
        tool: tool.spec.name.clone(),
        arguments: hex(&Sha256::digest(arguments)),
        policy,
        expires_ms: 0,
    };
    Some(Reviewed { claims, confirmable: tool.spec.review.caller_may_confirm })
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
