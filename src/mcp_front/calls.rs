//! A `tools/call`'s start and its answer, the same whichever path served it: the SDK's (`handler`) or the direct
//! one (`direct`). Between them the path runs the call through the executor, with what its host can be told.

use super::answer;
use super::reviewed::{self, Reviewed};
use super::state::StateKey;
use crate::config::Principal;
use crate::handles::Core;
use crate::pipeline::{CallContext, ToolCall, ToolMessage, ToolStatus};
use crate::telemetry::propagation;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, InputRequiredResult};
use tokio::sync::OwnedSemaphorePermit;

/// The method a shed `tools/call` is counted under in `toolgate.calls.shed`.
const SHED_METHOD: &str = "mcp tools/call";

/// A call cleared to run.
pub struct Cleared {
    /// Held until the call has run: its place among the calls in flight.
    pub permit: OwnedSemaphorePermit,
    pub call: ToolCall,
    pub ctx: CallContext,
    pub reviewed: Option<Reviewed>,
}

/// How a call starts: cleared to run, or answered at once.
pub enum CallStart {
    Run(Cleared),
    Answered(Result<CallToolResponse, McpError>),
}

/// What a host sent in one `tools/call`, with who sent it.
pub struct HostCall<'a> {
    pub principal: Principal,
    /// The MCP session it came on; none from a 2026-07-28 host.
    pub session: String,
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
    /// The sealed state of a retried reviewed call (2026-07-28).
    pub request_state: Option<&'a str>,
}

/// Sheds the call past the gateway-wide cap on calls in flight, as on gRPC, and refuses a retry whose
/// `requestState` is not ours, is expired, or binds another caller, tool, arguments or policy.
pub fn start(core: &Core, state_key: &StateKey, asked: HostCall<'_>) -> CallStart {
    let Some(permit) = core.shedding.try_enter(SHED_METHOD) else {
        return CallStart::Answered(Ok(CallToolResponse::Complete(answer::shed(&asked.name, core.shedding.max()))));
    };
    let reviewed = reviewed::of(core, &asked.principal, &asked.name, &asked.arguments);
    if let Some(state) = asked.request_state
        && let Err(refusal) = state_key.open(state, reviewed.as_ref().map(|r| &r.claims))
    {
        tracing::info!(tool = %asked.name, ?refusal, "a call's requestState was refused");
        return CallStart::Answered(Err(McpError::invalid_params("Invalid or expired requestState", None)));
    }
    let (call, ctx) = call_of(asked, reviewed.as_ref());
    CallStart::Run(Cleared { permit, call, ctx, reviewed })
}

/// The call's answer. A 2026-07-28 host (`modern`) is told of a call that waits for review by a result it retries
/// with the sealed state; an older one by the call's message.
pub fn answer(
    state_key: &StateKey,
    reviewed: Option<Reviewed>,
    modern: bool,
    message: ToolMessage,
) -> CallToolResponse {
    match reviewed {
        Some(reviewed) if modern && message.status == ToolStatus::PendingReview => {
            let state = state_key.seal(&reviewed.claims);
            CallToolResponse::InputRequired(InputRequiredResult::from_request_state(state))
        }
        _ => CallToolResponse::Complete(answer::result(message)),
    }
}

/// The call as the executor runs it. A reviewed call is the same call in any MCP session, so it is not of one: its
/// session is the one the token names, else its user's, so its budgets and a per-session rate limit still hold
/// across retries.
fn call_of(asked: HostCall<'_>, reviewed: Option<&Reviewed>) -> (ToolCall, CallContext) {
    let HostCall { principal, session, name, arguments, .. } = asked;
    let (id, own) = match reviewed {
        None => (String::new(), session),
        Some(reviewed) if principal.user_id.is_empty() => (reviewed.claims.call.clone(), String::new()),
        Some(reviewed) => (reviewed.claims.call.clone(), format!("mcp-user:{}", principal.user_id)),
    };
    let session_id = principal.values.get("session_id").cloned().unwrap_or(own);
    let call = ToolCall { id, name, arguments };
    (call, CallContext { tenant: principal.tenant, user_id: principal.user_id, session_id, values: principal.values })
}

/// The trace a call continues: `traceparent` in the request's `_meta` (SEP-414), else in its HTTP headers.
pub fn parent(traceparent: Option<&str>, headers: &http::HeaderMap) -> opentelemetry::Context {
    let mut trace = http::HeaderMap::new();
    match traceparent.and_then(|t| http::HeaderValue::from_str(t).ok()) {
        Some(traceparent) => {
            trace.insert("traceparent", traceparent);
        }
        None => {
            for name in ["traceparent", "tracestate"] {
                if let Some(value) = headers.get(name) {
                    trace.insert(name, value.clone());
                }
            }
        }
    }
    propagation::extract(&tonic::metadata::MetadataMap::from_headers(trace))
}
