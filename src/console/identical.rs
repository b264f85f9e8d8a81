//! Identical pending calls: one call (tenant, user, tool, arguments as JSON values) pending under several call
//! ids, as an agent framework's retries leave it. The list shows them as one row, the call's page names the others;
//! each is still decided on its own.

use crate::review::ReviewRecord;
use serde_json::Value;
use std::collections::HashMap;

/// What makes two pending calls the same call: who asked, which tool, and what it would run with.
#[derive(PartialEq, Eq, Hash)]
struct Identity<'r> {
    tenant: &'r str,
    user_id: &'r str,
    tool_tenant: &'r str,
    tool: &'r str,
    /// The arguments as JSON with every object's keys sorted; the text itself when it is not JSON.
    arguments: String,
}

impl<'r> Identity<'r> {
    fn of(record: &'r ReviewRecord) -> Self {
        Self {
            tenant: &record.key.tenant,
            user_id: &record.user_id,
            tool_tenant: &record.tool_tenant,
            tool: &record.tool,
            arguments: canonical_text(&record.arguments),
        }
    }
}

/// `pending` (oldest first) in groups of identical calls, each oldest first, the groups in the order of their
/// oldest call.
pub fn groups(pending: &[ReviewRecord]) -> Vec<Vec<&ReviewRecord>> {
    let mut at: HashMap<Identity<'_>, usize> = HashMap::with_capacity(pending.len());
    let mut groups: Vec<Vec<&ReviewRecord>> = Vec::new();
    for record in pending {
        let next = groups.len();
        let index = *at.entry(Identity::of(record)).or_insert(next);
        if index == next {
            groups.push(Vec::new());
        }
        groups[index].push(record);
    }
    groups
}

/// The call ids of the calls in `pending` identical to `record`, `record` itself left out, in `pending`'s order.
pub fn others(pending: &[ReviewRecord], record: &ReviewRecord) -> Vec<String> {
    let identity = Identity::of(record);
    pending
        .iter()
        .filter(|other| other.key != record.key && Identity::of(other) == identity)
        .map(|other| other.key.call_id.clone())
        .collect()
}

/// JSON text with the same value written one way: no whitespace, every object's keys sorted (the crate keeps
/// objects in the order written). Text that is not JSON stays as it is.
fn canonical_text(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(value) => canonical(value).to_string(),
        Err(_) => text.to_owned(),
    }
}

fn canonical(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().map(|(k, v)| (k, canonical(v))).collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_and_whitespace_do_not_make_a_call_different() {
        let a = canonical_text(r#"{"b": {"y": 1, "x": [{"q": 2, "p": 1}]}, "a": "s"}"#);
        let b = canonical_text(r#"{"a":"s","b":{"x":[{"p":1,"q":2}],"y":1}}"#);
        assert_eq!(a, b);
        assert_ne!(canonical_text(r#"{"x": [1, 2]}"#), canonical_text(r#"{"x": [2, 1]}"#), "an array's order counts");
        assert_ne!(canonical_text(r#"{"a": 1}"#), canonical_text(r#"{"a": "1"}"#), "and a value's type");
        assert_eq!(canonical_text("{'broken"), "{'broken", "text that is not JSON is compared as it is");
    }
}
