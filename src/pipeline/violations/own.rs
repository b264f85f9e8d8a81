//! A schema node's own keywords: what the walker checks with jsonschema at each node it visits.

use serde_json::{Map, Value};

/// Longest subtree searched for a `$ref` or an alternative before a keyword is left to jsonschema.
const MAX_SCANNED: usize = 512;

/// A node's own keywords, with every subschema the walker follows replaced by `true`, and the keywords it does
/// not follow kept only where jsonschema can check them within bounds (no `$ref`, no alternative, small). `None`
/// when there is nothing of its own to check.
pub(super) fn own_keywords(node: &Value, dialect: Option<&Value>) -> Option<Value> {
    let map = node.as_object()?;
    let mut own = Map::new();
    let trues = |v: &Value| match v {
        Value::Object(m) => Value::Object(m.keys().map(|k| (k.clone(), Value::Bool(true))).collect()),
        Value::Array(a) => Value::Array(vec![Value::Bool(true); a.len()]),
        other => other.clone(),
    };
    for (keyword, value) in map {
        let kept = match keyword.as_str() {
            "properties" | "patternProperties" | "prefixItems" => trues(value),
            "items" | "additionalProperties" | "additionalItems" if value.is_object() => Value::Bool(true),
            "items" if value.is_array() => trues(value),
            "allOf"
            | "anyOf"
            | "oneOf"
            | "$ref"
            | "$dynamicRef"
            | "$recursiveRef"
            | "$defs"
            | "definitions"
            | "$id"
            | "id"
            | "$anchor"
            | "$dynamicAnchor"
            | "$recursiveAnchor"
            | "$vocabulary"
            | "$schema"
            | "$comment"
            | "unevaluatedProperties"
            | "unevaluatedItems" => continue,
            _ if value.is_object() || value.is_array() => match self_contained(value) {
                true => value.clone(),
                false => continue,
            },
            _ => value.clone(),
        };
        own.insert(keyword.clone(), kept);
    }
    if own.is_empty() {
        return None;
    }
    if let Some(dialect) = dialect {
        own.insert("$schema".into(), dialect.clone());
    }
    Some(Value::Object(own))
}

/// Whether a subtree is small and holds no reference or alternative, so jsonschema describes it in bounds.
fn self_contained(value: &Value) -> bool {
    let mut pending = vec![value];
    let mut seen = 0;
    while let Some(node) = pending.pop() {
        seen += 1;
        if seen > MAX_SCANNED {
            return false;
        }
        match node {
            Value::Object(map) => {
                let refers =
                    ["$ref", "$dynamicRef", "$recursiveRef", "anyOf", "oneOf"].iter().any(|k| map.contains_key(*k));
                if refers {
                    return false;
                }
                pending.extend(map.values());
            }
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    true
}
