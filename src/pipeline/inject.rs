//! Inject: taking out whatever the model wrote for an injected parameter, and filling each injected parameter
//! from the call context. A model never sets one, under any spelling.

use super::CallError;
use super::message::{CallContext, Repair, Violation};
use crate::registry::{CompiledTool, Injected, Source, json_pointer};
use serde_json::{Map, Value};

/// The rule name of a removed override. It is not a repair rule: it cannot be turned off.
pub const OVERRIDE_REMOVED: &str = "injected_override_removed";

/// Removes every value the model sent for an injected parameter, one `Repair` each: at the parameter's own path,
/// and at any path that spells it otherwise at any depth (`Account/Owner` for `/account/owner`, `userId` for
/// `user_id`: case, spaces and punctuation ignored, as repair's renames ignore them), unless the key is a
/// parameter the model may write. A wrapper around the arguments (`{"arguments": {..}}`) is stripped inside too,
/// since a backend may read it as the arguments.
pub fn strip_overrides(tool: &CompiledTool, arguments: &mut Value) -> Vec<Repair> {
    let mut removed = Vec::new();
    if tool.injections.is_empty() {
        return removed;
    }
    let model = tool.model_schema();
    strip_object(tool, model, arguments, &[], &mut removed);
    if let Some((key, inner)) = wrapped(model, arguments) {
        strip_object(tool, model, inner, &[key], &mut removed);
    }
    removed
}

/// The one member of `arguments` when it is a key the model schema does not declare, around an object.
fn wrapped<'v>(model: &Value, arguments: &'v mut Value) -> Option<(String, &'v mut Value)> {
    let map = arguments.as_object_mut().filter(|m| m.len() == 1)?;
    let (key, inner) = map.iter_mut().next()?;
    let declared = super::repair::view::View::new(model).declares(model, key);
    (!declared && inner.is_object()).then(|| (key.clone(), inner))
}

/// Strips `value` as the arguments, whose own location is `prefix`: exact paths first, then other spellings.
fn strip_object(tool: &CompiledTool, model: &Value, value: &mut Value, prefix: &[String], out: &mut Vec<Repair>) {
    for injected in &tool.injections {
        if let Some((parent, last)) = parent_of(value, &injected.path)
            && let Some(removed) = parent.shift_remove(last)
        {
            let path: Vec<&str> = prefix.iter().chain(&injected.path).map(String::as_str).collect();
            out.push(override_repair(&json_pointer(&path), &removed));
        }
    }
    for injected in &tool.injections {
        strip_spelled(value, &injected.path, Some(model), &mut prefix.to_vec(), out);
    }
}

/// Removes each key that spells `path`'s leaf, under every object on the way whose key spells that step.
/// `model` is the model-facing schema of `node`, where known: a key it declares is the model's own parameter.
fn strip_spelled(
    node: &mut Value,
    path: &[String],
    model: Option<&Value>,
    at: &mut Vec<String>,
    out: &mut Vec<Repair>,
) {
    let (Some(map), Some((step, rest))) = (node.as_object_mut(), path.split_first()) else { return };
    let props = model.and_then(|m| m.get("properties")).and_then(Value::as_object);
    let own = |key: &str| key != step && props.is_some_and(|p| p.contains_key(key));
    let as_paths: Vec<String> = map.keys().filter(|k| spells_path(k, path) && !own(k)).cloned().collect();
    for key in as_paths {
        let value = map.shift_remove(&key).expect("the key was just listed");
        at.push(key);
        out.push(override_repair(&json_pointer(at), &value));
        at.pop();
    }
    if !map.keys().any(|k| same_spelling(k, step) && !own(k)) {
        return;
    }
    let keys: Vec<String> = map.keys().filter(|k| same_spelling(k, step) && !own(k)).cloned().collect();
    let child_model = props.and_then(|p| p.get(step));
    for key in keys {
        at.push(key);
        let key = at.last().expect("just pushed");
        if rest.is_empty() {
            let value = map.shift_remove(key).expect("the key was just listed");
            out.push(override_repair(&json_pointer(at), &value));
        } else if let Some(child) = map.get_mut(key) {
            strip_spelled(child, rest, child_model, at, out);
        }
        at.pop();
    }
}

/// Whether two keys are one name once case, spaces and punctuation are ignored (repair's `loose` spelling),
/// compared without allocating when both are ASCII: this runs on every call of a tool with injected parameters.
/// Other keys are compared as they read (`folded`), so a look-alike of a parameter is that parameter.
fn same_spelling(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return ascii_letters(a).eq(ascii_letters(b));
    }
    folded(a) == folded(b)
}

/// A key as it reads: compatibility forms folded (NFKC: fullwidth `ｏ` is `o`, `ſ` is `s`), lowercased, each
/// character to its look-alike prototype (the Unicode confusables skeleton: Cyrillic `і` and dotless `ı` are
/// `i`), then its letters and digits only.
fn folded(key: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let lower: String = key.nfkc().flat_map(char::to_lowercase).collect();
    letters(&unicode_security::skeleton(&lower).collect::<String>()).collect()
}

/// Whether `key` is a path (`/account/owner`, `account.owner`) whose steps spell `path`: a backend may read it
/// as that path.
fn spells_path(key: &str, path: &[String]) -> bool {
    if path.len() < 2 || !key.contains(['/', '.']) {
        return false;
    }
    let steps = key.split(['/', '.']).filter(|s| !s.is_empty());
    steps.clone().count() == path.len() && steps.zip(path).all(|(step, name)| same_spelling(step, name))
}

/// `letters` of an ASCII key, by bytes: the same letters and digits, lowercased the same way.
fn ascii_letters(s: &str) -> impl Iterator<Item = u8> + '_ {
    s.bytes().filter(u8::is_ascii_alphanumeric).map(|b| b.to_ascii_lowercase())
}

fn letters(s: &str) -> impl Iterator<Item = char> + '_ {
    s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase)
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

/// The text the tool receives, written by adding the injected parameters to the model's own `text` rather than
/// writing the whole arguments again: `text` holds `added` top-level members fewer than `full`, and `full` ends
/// with them, as `inject` appends a parameter the model's arguments lack. None when that is not so (a nested
/// path, a model's key the parameter took the place of) or `text` has a `-0`, and the caller writes `full` whole.
pub fn appended(tool: &CompiledTool, text: &str, full: &Value, before: usize) -> Option<String> {
    let map = full.as_object()?;
    let added = tool.injections.len();
    // `-0` is read as the integer 0 (`strict`): a text with one is written again, so the tool gets an integer.
    let minus_zero = text.contains("-0");
    if minus_zero || map.len() != before + added || tool.injections.iter().any(|i| i.path.len() != 1) {
        return None;
    }
    let body = text.strip_suffix('}')?;
    let mut out = Vec::with_capacity(text.len() + 32 * added);
    out.extend_from_slice(body.as_bytes());
    for (i, (key, value)) in map.iter().skip(before).enumerate() {
        if key != &tool.injections[i].path[0] {
            return None;
        }
        if before > 0 || i > 0 {
            out.push(b',');
        }
        // Writing a string and a `Value` to a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut out, key);
        out.push(b':');
        let _ = serde_json::to_writer(&mut out, value);
    }
    out.push(b'}');
    String::from_utf8(out).ok()
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
    // The root too may be no object: a draft-7 schema with a root `$ref` ignores its sibling `"type": "object"`.
    let not_object = |depth: usize| {
        CallError::Invalid(vec![Violation {
            instance_path: json_pointer(&injected.path[..depth]),
            schema_path: String::new(),
            message: "is not an object, so the parameters the gateway sets cannot be added to it".into(),
        }])
    };
    let mut node = arguments;
    for (depth, name) in parents.iter().enumerate() {
        let map = node.as_object_mut().ok_or_else(|| not_object(depth))?;
        node = map.entry(name.clone()).or_insert_with(|| Value::Object(Map::new()));
    }
    node.as_object_mut().ok_or_else(|| not_object(parents.len()))?.insert(last.clone(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Injection, SchemaDocuments, ToolSpec};
    use proptest::prelude::*;
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

    /// A tool whose one parameter, `user_id`, is injected at the top level.
    fn user_tool() -> CompiledTool {
        let schema = json!({"type": "object", "properties": {"user_id": {"type": "string"}}});
        let mut spec = ToolSpec::offline("t", "", schema);
        spec.inject = vec![Injection { param: "user_id".into(), from: "user_id".into() }];
        CompiledTool::compile(spec, &SchemaDocuments::default()).unwrap()
    }

    #[test]
    fn injected_parameters_are_appended_to_the_models_text_when_they_are_new_top_level_members() {
        let user_tool = user_tool();
        let ctx = CallContext { user_id: "u \"1\"".into(), ..CallContext::default() };
        for text in [r#"{"q": "x", "n": [1, {"b": 2}] }"#, "{}", "{ }"] {
            let arguments: Value = serde_json::from_str(text).unwrap();
            let before = arguments.as_object().unwrap().len();
            let full = inject(&user_tool, arguments, &ctx).unwrap();
            let appended = appended(&user_tool, text, &full, before).unwrap();
            assert!(appended.starts_with(text.strip_suffix('}').unwrap()), "{appended}");
            assert_eq!(serde_json::from_str::<Value>(&appended).unwrap(), full, "{appended}");
        }
        // The model's key in the parameter's place (as when the strip is skipped): the whole text is written.
        let full = inject(&user_tool, json!({"user_id": "m", "q": 1}), &ctx).unwrap();
        assert_eq!(appended(&user_tool, r#"{"user_id": "m", "q": 1}"#, &full, 2), None);
        // `-0` anywhere, even in a string: written again, so a number of it is the integer 0.
        let full = inject(&user_tool, json!({"n": 0}), &ctx).unwrap();
        assert_eq!(appended(&user_tool, r#"{"n": -0}"#, &full, 1), None);
        // A nested parameter is not appended.
        let full = inject(&tool(), json!({"q": "x"}), &ctx_with_acct()).unwrap();
        assert_eq!(appended(&tool(), r#"{"q": "x"}"#, &full, 1), None);
    }

    /// JSON values a model may write, objects and arrays three deep, with keys and strings that need escaping.
    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
            "[a-z\"\\\\é\n ]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z_\"é]{0,5}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever the model's object and however it is written, the appended text reads as the injected value.
        #[test]
        fn the_appended_text_reads_as_the_injected_arguments(
            members in prop::collection::btree_map("[a-z_\"é]{0,5}", any_json(), 0..5),
            pretty in any::<bool>(),
            user in "[a-z\"\\\\]{1,4}",
        ) {
            let tool = user_tool();
            let mut arguments = Value::Object(members.into_iter().collect());
            strip_overrides(&tool, &mut arguments);
            let text = if pretty { serde_json::to_string_pretty(&arguments) } else { serde_json::to_string(&arguments) };
            let text = text.unwrap();
            let before = arguments.as_object().unwrap().len();
            let ctx = CallContext { user_id: user, ..CallContext::default() };
            let full = inject(&tool, arguments, &ctx).unwrap();
            match appended(&tool, &text, &full, before) {
                Some(appended) => prop_assert_eq!(crate::pipeline::strict::from_str(&appended).unwrap(), full),
                None => prop_assert!(text.contains("-0"), "only a -0 is written again: {}", text),
            }
        }
    }

    fn ctx_with_acct() -> CallContext {
        let values = [("acct".to_owned(), "a".to_owned())].into_iter().collect();
        CallContext { user_id: "u".into(), values, ..CallContext::default() }
    }

    #[test]
    fn an_ascii_spelling_is_compared_by_bytes_as_by_characters() {
        let keys = ["user_id", "UserID", "user-id", "user id", "USER_ID_2", "userid2", "user", "_", "", "u$s%e&r^i*d"];
        for a in keys {
            for b in keys {
                assert_eq!(same_spelling(a, b), letters(a).eq(letters(b)), "{a:?} and {b:?}");
            }
        }
        assert!(same_spelling("u$s%e&r^i*d", "USER_ID") && !same_spelling("user_id", "user_id_2"));
    }

    #[test]
    fn other_spellings_are_removed_at_every_depth_and_inside_a_wrapper() {
        let mut args = json!({"Account": {"Owner": "a1", "note": 1}, "account": {"OWNER": "a2"}});
        let removed = strip_overrides(&tool(), &mut args);
        assert_eq!(args, json!({"Account": {"note": 1}, "account": {}}));
        let paths: Vec<_> = removed.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(paths, ["/Account/Owner", "/account/OWNER"]);
        let mut wrapped = json!({"arguments": {"user id": "a3", "q": "x"}});
        let removed = strip_overrides(&tool(), &mut wrapped);
        assert_eq!((wrapped, removed[0].path.as_str()), (json!({"arguments": {"q": "x"}}), "/arguments/user id"));
        let mut declared = json!({"q": {"user_id": "kept: q is the model's"}});
        assert!(strip_overrides(&tool(), &mut declared).is_empty());
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
