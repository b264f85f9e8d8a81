//! Inject: taking out whatever the model wrote for an injected parameter, and filling each injected parameter
//! from the call context. A model never sets one, under any spelling.

use super::CallError;
use super::message::{CallContext, Repair, Violation};
use crate::registry::{CompiledTool, Injected, Source, json_pointer, same_name};
use serde_json::{Map, Value};

/// The rule name of a removed override. It is not a repair rule: it cannot be turned off.
pub const OVERRIDE_REMOVED: &str = "injected_override_removed";

/// Removes every value the model sent for an injected parameter, one `Repair` each. A top-level key that names
/// an injected parameter in another case or separator style (`userId` for `user_id`) is removed as well, unless
/// it is a parameter the model may write.
pub fn strip_overrides(tool: &CompiledTool, arguments: &mut Value) -> Vec<Repair> {
    let mut removed = Vec::new();
    if tool.injections.is_empty() {
        return removed;
    }
    for injected in &tool.injections {
        if let Some((parent, last)) = parent_of(arguments, &injected.path)
            && let Some(value) = parent.shift_remove(last)
        {
            removed.push(override_repair(&injected.pointer(), &value));
        }
    }
    let Some(map) = arguments.as_object_mut() else { return removed };
    let model_props = tool.model_schema().get("properties").and_then(Value::as_object);
    let injected_as = |key: &str| tool.injections.iter().any(|i| i.path.len() == 1 && same_name(&i.path[0], key));
    let spelled_otherwise = |key: &String| injected_as(key) && !model_props.is_some_and(|p| p.contains_key(key));
    let keys: Vec<String> = map.keys().filter(|k| spelled_otherwise(k)).cloned().collect();
    for key in keys {
        let value = map.shift_remove(&key).expect("the key was just listed");
        removed.push(override_repair(&json_pointer(&[&key]), &value));
    }
    removed
}

fn override_repair(pointer: &str, value: &Value) -> Repair {
    Repair { rule: OVERRIDE_REMOVED.into(), path: pointer.into(), before: value.to_string(), after: String::new() }
}

/// The object holding the last segment of `path`, if every object on the way exists.
fn parent_of<'v>(arguments: &'v mut Value, path: &'v [String]) -> Option<(&'v mut Map<String, Value>, &'v String)> {
    let (last, parents) = path.split_last()?;
    let mut node = arguments;
    for name in parents {
        node = node.get_mut(name)?;
    }
    Some((node.as_object_mut()?, last))
}

/// The arguments the tool receives: the model's, plus each injected parameter from `ctx`. A context that lacks
/// a value is refused for the operator to fix: the model can do nothing about it.
pub fn inject(tool: &CompiledTool, mut arguments: Value, ctx: &CallContext) -> Result<Value, CallError> {
    for injected in &tool.injections {
        let value = context_value(&injected.source, ctx).ok_or_else(|| {
            CallError::PermissionDenied(format!(
                "tool {:?} injects {} into {:?}, and the call context has none",
                tool.spec.name,
                injected.source.describe(),
                injected.param
            ))
        })?;
        set_path(&mut arguments, injected, value)?;
    }
    Ok(arguments)
}

fn context_value(source: &Source, ctx: &CallContext) -> Option<Value> {
    let text = match source {
        Source::Literal(value) => return Some(value.clone()),
        Source::UserId => &ctx.user_id,
        Source::Tenant => &ctx.tenant,
        Source::SessionId => &ctx.session_id,
        Source::Value(key) => ctx.values.get(key)?,
    };
    (!text.is_empty()).then(|| Value::String(text.clone()))
}

/// Puts `value` at the injected path, creating the objects on the way. A model value in the way that is not an
/// object is the model's mistake, reported as a violation at its own path.
fn set_path(arguments: &mut Value, injected: &Injected, value: Value) -> Result<(), CallError> {
    let (last, parents) = injected.path.split_last().expect("an injected path is never empty");
    let mut node = arguments;
    for (depth, name) in parents.iter().enumerate() {
        let map = node.as_object_mut().expect("checked to be an object on the way down");
        node = map.entry(name.clone()).or_insert_with(|| Value::Object(Map::new()));
        if !node.is_object() {
            return Err(CallError::Invalid(vec![Violation {
                instance_path: json_pointer(&injected.path[..=depth]),
                schema_path: String::new(),
                message: format!("{node} is not an object"),
            }]));
        }
    }
    node.as_object_mut().expect("checked to be an object").insert(last.clone(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Injection, SchemaDocuments, ToolSpec};
    use serde_json::json;

    fn tool() -> CompiledTool {
        let schema = json!({"type": "object", "properties": {"q": {"type": "string"}, "user_id": {"type": "string"},
            "account": {"type": "object", "properties": {"owner": {"type": "string"}, "note": {}}}}});
        let mut spec = ToolSpec::offline("t", "", schema);
        spec.inject = vec![
            Injection { param: "user_id".into(), from: "user_id".into() },
            Injection { param: "/account/owner".into(), from: "values.acct".into() },
        ];
        CompiledTool::compile(spec, &SchemaDocuments::default()).unwrap()
    }

    #[test]
    fn overrides_are_removed_under_any_spelling() {
        let mut args = json!({"q": "x", "user_id": "attacker", "UserID": "a2", "account": {"owner": "a3", "note": 1}});
        let removed = strip_overrides(&tool(), &mut args);
        assert_eq!(args, json!({"q": "x", "account": {"note": 1}}));
        let paths: Vec<_> = removed.iter().map(|r| (r.path.as_str(), r.before.as_str())).collect();
        assert_eq!(paths, [("/user_id", "\"attacker\""), ("/account/owner", "\"a3\""), ("/UserID", "\"a2\"")]);
    }

    #[test]
    fn context_values_fill_the_parameters() {
        let ctx = CallContext {
            user_id: "u1".into(),
            values: [("acct".to_owned(), "A-7".to_owned())].into(),
            ..CallContext::default()
        };
        let got = inject(&tool(), json!({"q": "x"}), &ctx).unwrap();
        assert_eq!(got, json!({"q": "x", "user_id": "u1", "account": {"owner": "A-7"}}));
        let missing = inject(&tool(), json!({}), &CallContext { user_id: "u1".into(), ..Default::default() });
        let Err(CallError::PermissionDenied(reason)) = missing else { panic!("{missing:?}") };
        assert!(reason.contains("context.values[\"acct\"]"), "{reason}");
        let blocked = inject(&tool(), json!({"account": 5}), &ctx);
        assert!(matches!(blocked, Err(CallError::Invalid(v)) if v[0].instance_path == "/account"));
    }
}
