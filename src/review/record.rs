//! What the review queue keeps of one call: its key, the context to run it later, and its state.

use crate::pipeline::{Repair, ToolMessage};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A call id is unique within its tenant.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReviewKey {
    pub tenant: String,
    pub call_id: String,
}

/// What a reviewer decided. Edited arguments are validated by the caller before the decision is recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Decision {
    Approve,
    Edit { arguments: String },
    Reject { feedback: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[expect(clippy::large_enum_variant, reason = "one per reviewed call, rarely moved: a box would buy nothing")]
pub enum ReviewState {
    Pending,
    Decided(Decision),
    /// Claimed by one executor, which is running it now (persisted BEFORE the tool runs).
    Running(Decision),
    /// Found `Running` when the store was loaded: the gateway stopped while the tool ran, so whether it
    /// completed is unknown. Never run again.
    Lost,
    Done(ToolMessage),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewRecord {
    pub key: ReviewKey,
    pub session_id: String,
    pub user_id: String,
    /// The rest of the call context, kept so injected values can be filled after a restart.
    pub values: BTreeMap<String, String>,
    /// The tool's registry name and the tool's own tenant ("" for a shared tool).
    pub tool: String,
    pub tool_tenant: String,
    /// The model-controlled arguments after repair, as JSON text (no injected values).
    pub arguments: String,
    /// The arguments exactly as the model wrote them, before any repair (an injected value it set included).
    #[serde(default)]
    pub original_arguments: String,
    pub repairs: Vec<Repair>,
    /// Unix time in ms (wall clock, `SystemTime`).
    pub created_ms: u64,
    pub decided_ms: Option<u64>,
    /// Who decided: the reviewer's name as the console took it; `None` for a decision over the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// The policy rule that sent the call to review; `None` when the tool's `review.required` did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<ReviewRule>,
    /// Unix time in ms when the caller stops waiting for the decision and is told the call is pending; `None`
    /// when it never waited (it asks again with the same call id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits_until_ms: Option<u64>,
    pub state: ReviewState,
}

/// A policy rule, as a review record names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewRule {
    pub name: String,
    /// What the rule says to the reviewer.
    pub message: String,
}

impl ReviewRecord {
    /// Whether `other` is this same call sent again (a retry), rather than another call reusing the id.
    pub fn same_call(&self, other: &ReviewRecord) -> bool {
        self.session_id == other.session_id
            && self.tool == other.tool
            && self.tool_tenant == other.tool_tenant
            && self.arguments == other.arguments
    }

    /// Whether the call is over (`Done` or `Lost`), so another call may take its id.
    pub fn is_settled(&self) -> bool {
        matches!(self.state, ReviewState::Done(_) | ReviewState::Lost)
    }

    /// Whether the call is over and was decided (or, failing that, created) more than `keep` before `now_ms`.
    pub(crate) fn expired(&self, now_ms: u64, keep: Duration) -> bool {
        let keep_ms = u64::try_from(keep.as_millis()).unwrap_or(u64::MAX);
        self.is_settled() && now_ms.saturating_sub(self.decided_ms.unwrap_or(self.created_ms)) > keep_ms
    }
}

/// A reviewer's name as a record keeps it: one line of at most 64 characters, without control characters (the
/// shared queue's messages are lines). `None` when nothing is left.
pub fn reviewer_name(name: &str) -> Option<String> {
    let kept: String = name.chars().filter(|c| !c.is_control()).take(64).collect();
    let kept = kept.trim();
    (!kept.is_empty()).then(|| kept.to_owned())
}

/// The wall clock as Unix time in milliseconds, the unit of `created_ms` and `decided_ms`.
pub fn unix_ms() -> u64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX)
}
