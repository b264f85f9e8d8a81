//! Injections as registered: parsing a spec's `inject` entries, checking them against the input schema, and the
//! model-facing schema with the injected parameters taken out.

use super::spec::Injection;
use serde_json::Value;

/// Where an injected value comes from. Context values are strings; `literal:` may hold any JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    UserId,
    Tenant,
    SessionId,
    Value(String),
    Literal(Value),
}

impl Source {
    /// Reads `user_id`, `tenant`, `session_id`, `values.<key>` or `literal:<json>`.
    pub fn parse(from: &str) -> Result<Self, String> {
        match from {
            "user_id" => return Ok(Source::UserId),
            "tenant" => return Ok(Source::Tenant),
            "session_id" => return Ok(Source::SessionId),
            _ => {}
        }
        if let Some(key) = from.strip_prefix("values.") {
            return if key.is_empty() {
                Err("values. needs a key: values.<key>".into())
            } else {
                Ok(Self::Value(key.into()))
            };
        }
        if let Some(json) = from.strip_prefix("literal:") {
            return serde_json::from_str(json).map(Source::Literal).map_err(|e| format!("literal is not JSON: {e}"));
        }
        Err(format!("{from:?} is not one of user_id, tenant, session_id, values.<key>, literal:<json>"))
    }

    /// The context field the value is read from, as operators know it (`context.values["k"]`).
    pub fn describe(&self) -> String {
        match self {
            Source::UserId => "context.user_id".into(),
            Source::Tenant => "context.tenant".into(),
            Source::SessionId => "context.session_id".into(),
            Source::Value(key) => format!("context.values[{key:?}]"),
            Source::Literal(value) => format!("literal {value}"),
        }
    }
}

/// One injected parameter: its location in the arguments, and its source.
#[derive(Debug, Clone, PartialEq)]
pub struct Injected {
    /// The parameter as registered: a top-level name, or a JSON pointer.
    pub param: String,
    /// The property names from the root of the arguments down to the parameter.
    pub path: Vec<String>,
    pub source: Source,
}

impl Injected {
    /// The parameter as a JSON pointer, as repairs and violations name locations.
    pub fn pointer(&self) -> String {
        json_pointer(&self.path)
    }
}

/// The JSON pointer of a path of property names or indices, escaping `~` and `/` (RFC 6901).
pub fn json_pointer<S: AsRef<str>>(path: &[S]) -> String {
    path.iter().map(|s| format!("/{}", s.as_ref().replace('~', "~0").replace('/', "~1"))).collect()
}

/// Checks every injection against `schema` and returns them parsed. Each names a property reachable through
/// `properties` alone, no two overlap, and a context source (always a string) goes into a parameter that takes one.
pub fn plan(injections: &[Injection], schema: &Value) -> Result<Vec<Injected>, String> {
    let mut plan: Vec<Injected> = Vec::with_capacity(injections.len());
    for (i, injection) in injections.iter().enumerate() {
        let at = |reason: String| format!("[{i}] ({:?} from {:?}): {reason}", injection.param, injection.from);
        let source = Source::parse(&injection.from).map_err(at)?;
        let path = param_path(&injection.param).map_err(at)?;
        let leaf = property_at(schema, &path).map_err(at)?;
        if !matches!(source, Source::Literal(_)) && !takes_string(leaf) {
            return Err(at(format!(
                "{} is a string but the parameter's type is {}; use literal:<json> or let it take a string",
                source.describe(),
                leaf.get("type").map_or_else(String::new, Value::to_string)
            )));
        }
        if let Some(other) = plan.iter().find(|o| o.path.starts_with(&path) || path.starts_with(&o.path)) {
            return Err(at(format!("overlaps the injection of {:?}", other.param)));
        }
        plan.push(Injected { param: injection.param.clone(), path, source });
    }
    Ok(plan)
}

/// `user_id` is a top-level name; `/account/owner_id` a JSON pointer (with `~0` and `~1` escapes).
fn param_path(param: &str) -> Result<Vec<String>, String> {
    let path: Vec<String> = match param.strip_prefix('/') {
        Some(pointer) => pointer.split('/').map(|s| s.replace("~1", "/").replace("~0", "~")).collect(),
        None => vec![param.to_owned()],
    };
    if path.iter().any(String::is_empty) {
        return Err("param must be a property name or a JSON pointer like /account/owner_id".into());
    }
    Ok(path)
}

/// The schema of the property at `path`, found through nested `properties`.
fn property_at<'a>(schema: &'a Value, path: &[String]) -> Result<&'a Value, String> {
    let mut node = schema;
    for (depth, name) in path.iter().enumerate() {
        if depth > 0 && node.get("type").is_some_and(|t| t != "object") {
            return Err(format!("{:?} is not an object", path[depth - 1]));
        }
        node = node.get("properties").and_then(|p| p.get(name)).ok_or_else(|| {
            format!("{name:?} is not declared under \"properties\" in input_schema (a $ref is not followed here)")
        })?;
    }
    Ok(node)
}

fn takes_string(node: &Value) -> bool {
    match node.get("type") {
        None => true,
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
        Some(_) => false,
    }
}

/// The schema the model sees: each injected parameter removed from its parent's `properties` and `required`,
/// and a nested object left with nothing for the model to write removed as well.
pub fn model_schema(schema: &Value, plan: &[Injected]) -> Value {
    let mut model = schema.clone();
    for injected in plan {
        remove_property(&mut model, &injected.path);
    }
    model
}

/// What is left of a nested object once an injected parameter is taken out of it.
#[derive(PartialEq)]
enum Left {
    /// Nothing for the model to write: remove the object itself.
    Nothing,
    /// Nothing the model must write: the gateway creates the object, so it is no longer required.
    Optional,
    Required,
}

/// Removes `path[0]` (recursing first into it when deeper) from `node`'s properties and `required`, and says
/// what is left of `node` for the model.
fn remove_property(node: &mut Value, path: &[String]) -> Left {
    let Some(obj) = node.as_object_mut() else { return Left::Required };
    let Some((name, rest)) = path.split_first() else { return Left::Required };
    let left = match obj.get_mut("properties").and_then(|p| p.get_mut(name)) {
        Some(_) if rest.is_empty() => Left::Nothing,
        Some(child) => remove_property(child, rest),
        None => Left::Required,
    };
    if left == Left::Nothing
        && let Some(Value::Object(props)) = obj.get_mut("properties")
    {
        props.remove(name);
    }
    if left != Left::Required
        && let Some(Value::Array(required)) = obj.get_mut("required")
    {
        required.retain(|r| r != name);
        if required.is_empty() {
            obj.remove("required");
        }
    }
    let props_left = obj.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty());
    // Declared to take more than its properties: the model may still write into it.
    let takes_more = !matches!(obj.get("additionalProperties"), Some(Value::Bool(false)) | None)
        || obj.contains_key("patternProperties");
    match (obj.contains_key("required"), props_left || takes_more) {
        (true, _) => Left::Required,
        (false, true) => Left::Optional,
        (false, false) => Left::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn inj(param: &str, from: &str) -> Injection {
        Injection { param: param.into(), from: from.into() }
    }

    #[test]
    fn plans_and_hides() {
        let schema = json!({"type": "object", "required": ["q", "user_id", "account"],
            "properties": {"q": {"type": "string"}, "user_id": {"type": "string"},
                "account": {"type": "object", "additionalProperties": false, "required": ["owner"],
                    "properties": {"owner": {"type": "string"}}}}});
        let plan = plan(&[inj("user_id", "user_id"), inj("/account/owner", "values.acct")], &schema).unwrap();
        assert_eq!(plan[1].path, vec!["account", "owner"]);
        assert_eq!(plan[1].source, Source::Value("acct".into()));
        let model = model_schema(&schema, &plan);
        assert_eq!(model, json!({"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}}));
    }

    #[test]
    fn an_object_with_more_for_the_model_stays_but_is_no_longer_required() {
        let schema = json!({"type": "object", "required": ["account"], "properties": {"account": {"type": "object",
            "required": ["owner"], "properties": {"owner": {"type": "string"}, "note": {"type": "string"}}}}});
        let plan = plan(&[inj("/account/owner", "tenant")], &schema).unwrap();
        let want = json!({"type": "object", "properties": {"account": {"type": "object",
            "properties": {"note": {"type": "string"}}}}});
        assert_eq!(model_schema(&schema, &plan), want);
    }

    #[test]
    fn refusals_name_the_reason() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"},
            "o": {"type": "string"}}});
        let cases = [
            (inj("missing", "user_id"), "not declared under \"properties\""),
            (inj("n", "user_id"), "context.user_id is a string but the parameter's type is \"integer\""),
            (inj("s", "nobody"), "is not one of user_id"),
            (inj("s", "values."), "needs a key"),
            (inj("s", "literal:{"), "literal is not JSON"),
            (inj("/o/x", "tenant"), "\"o\" is not an object"),
            (inj("/", "tenant"), "JSON pointer"),
        ];
        for (injection, want) in cases {
            let err = plan(std::slice::from_ref(&injection), &schema).unwrap_err();
            assert!(err.contains(want), "{injection:?}: {err}");
        }
        assert!(plan(&[inj("n", "literal:5")], &schema).is_ok());
        let err = plan(&[inj("s", "user_id"), inj("s", "tenant")], &schema).unwrap_err();
        assert!(err.contains("overlaps"), "{err}");
    }
}
