//! Checking a `ToolSpec` once into the `CompiledTool` every call uses, whose validators compile at its first call.

use super::bounds::{self, MAX_NAME_LEN};
use super::inject::{self, Injected};
use super::schema::{LazyValidator, SchemaDocuments, SchemaError, compacted, compile_schema};
use super::spec::{Backend, SpecError, ToolSpec};
use crate::policy::rules::{self, Rule};
use crate::policy::{RateRule, parse_rate};
use jsonschema::Validator;
use serde_json::Value;
use std::sync::Arc;

/// A registered tool with its schema compiled. Immutable: a replace builds a new one.
#[derive(Debug)]
pub struct CompiledTool {
    pub spec: ToolSpec,
    /// The whole input schema: what the tool receives, injected parameters included. Checked here, compiled at
    /// the tool's first call.
    pub validator: LazyValidator,
    /// The name as provider formats show it: `^[A-Za-z0-9_-]{1,64}$`.
    pub safe_name: String,
    /// `spec.name`, shared: telemetry labels every call's metrics and spans with it without copying it.
    pub label: Arc<str>,
    /// The parameters the gateway fills from the call context, in registration order.
    pub injections: Vec<Injected>,
    /// The schema without the injected parameters, when there are any: what the model sees and writes.
    model: Option<(Value, LazyValidator)>,
    /// `limits.rate` and `limits.burst`, parsed; `None` is unlimited.
    pub rate: Option<RateRule>,
    /// `policy`, compiled, in order.
    pub rules: Vec<Arc<Rule>>,
    /// Whether the input schema has a `pattern` that needs backtracking: its calls are checked on the CPU pool.
    pub backtracks: bool,
}

impl CompiledTool {
    /// Checks every field a registration may get wrong, the schemas by compiling them; the validators calls run
    /// are compiled again at the tool's first call, so a registered tool that is never called costs only its spec.
    pub fn compile(mut spec: ToolSpec, documents: &SchemaDocuments) -> Result<Self, SpecError> {
        check_name(&spec.name)?;
        bounds::check_metadata(&spec)?;
        spec.input_schema = compacted(std::mem::take(&mut spec.input_schema));
        spec.output_schema = spec.output_schema.map(compacted);
        check_object_schema(&spec.input_schema).map_err(SpecError::InputSchema)?;
        let validator = LazyValidator::checked(&spec.input_schema, documents)
            .map_err(|e| SpecError::InputSchema(schema_reason(e)))?;
        if let Some(output) = &spec.output_schema {
            compile_schema(output, documents).map_err(|e| SpecError::OutputSchema(schema_reason(e)))?;
        }
        if let Some(backend) = &spec.backend {
            check_backend(backend)?;
        }
        let injections = inject::plan(&spec.inject, &spec.input_schema).map_err(SpecError::Inject)?;
        check_aliases(&spec, &injections)?;
        if spec.repair.split_parallel == Some(true) && spec.review.required {
            return Err(SpecError::Split(
                "cannot be true for a tool whose calls need review: each part would run unseen",
            ));
        }
        let rate = rate_rule(&spec)?;
        let rules = rules::compile_all(&spec.policy)?;
        let model = if injections.is_empty() {
            None
        } else {
            let schema = compacted(inject::model_schema(&spec.input_schema, &injections));
            let validator =
                LazyValidator::checked(&schema, documents).map_err(|e| SpecError::InputSchema(schema_reason(e)))?;
            Some((schema, validator))
        };
        let safe_name = super::names::provider_safe_name(&spec.name);
        let label = Arc::from(spec.name.as_str());
        let backtracks = super::pattern::backtracks(&spec.input_schema);
        Ok(Self { spec, validator, safe_name, label, injections, model, rate, rules, backtracks })
    }

    /// Whether this is the tool registered as `name` for `tenant`.
    pub fn is(&self, tenant: &str, name: &str) -> bool {
        self.spec.tenant == tenant && self.spec.name == name
    }

    /// The input schema the model sees and writes: injected parameters removed.
    pub fn model_schema(&self) -> &Value {
        self.model.as_ref().map_or(&self.spec.input_schema, |(schema, _)| schema)
    }

    /// Whether a packed parallel call of this tool may be split into the calls the model meant: as the spec says,
    /// else when the tool is safe to repeat; never when its calls need review.
    pub fn splits_parallel(&self) -> bool {
        !self.spec.review.required && self.spec.repair.split_parallel.unwrap_or(self.spec.limits.idempotent)
    }

    /// The validator of `model_schema`, for what the model wrote before anything is injected.
    pub fn model_validator(&self) -> Arc<Validator> {
        self.model.as_ref().map_or(&self.validator, |(_, validator)| validator).get()
    }
}

fn schema_reason(err: SchemaError) -> String {
    match err {
        SchemaError::RemoteRef(_) => format!("has a {err}"),
        SchemaError::Invalid(_) => format!("is invalid: {err}"),
        SchemaError::Shape(_) => format!("is refused: {err}"),
    }
}

pub fn check_name(name: &str) -> Result<(), SpecError> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    if (1..=MAX_NAME_LEN).contains(&name.len()) && name.chars().all(ok_char) {
        Ok(())
    } else {
        Err(SpecError::Name(bounds::quoted(name)))
    }
}

/// Tool arguments are always a JSON object, so the schema must say so at its top level.
fn check_object_schema(schema: &Value) -> Result<(), String> {
    let Some(obj) = schema.as_object() else {
        return Err(format!("must be a JSON object schema, got {}", kind_of(schema)));
    };
    match obj.get("type") {
        Some(Value::String(t)) if t == "object" => Ok(()),
        Some(other) => Err(format!("must have \"type\": \"object\", got \"type\": {other}")),
        None => Err("must have \"type\": \"object\" at its top level".to_owned()),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn check_backend(backend: &Backend) -> Result<(), SpecError> {
    let bad = |msg: String| Err(SpecError::Backend(msg));
    match backend {
        Backend::Grpc { target } => match url::Url::parse(target) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
            _ if target.strip_prefix("unix:").is_some_and(|p| p.trim_start_matches("//").starts_with('/')) => Ok(()),
            _ => bad(format!(
                "grpc.target {target:?} must be an http:// or https:// address with a host, or unix:/path/to.sock"
            )),
        },
        Backend::Http(http) => {
            match url::Url::parse(&http.url) {
                _ if http.unix_socket().is_some() => {}
                Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
                _ => {
                    let expected = "an http:// or https:// URL, or unix:/path/to.sock[:/request/path]";
                    return bad(format!("http.url {:?} must be {expected}", http.url));
                }
            }
            let method = http.method.to_ascii_uppercase();
            if !matches!(method.as_str(), "" | "POST" | "PUT" | "PATCH") {
                return bad(format!(
                    "http.method {:?} must be POST, PUT or PATCH: the arguments are the body",
                    http.method
                ));
            }
            bounds::check_headers(&http.headers)
        }
        Backend::Mcp { server, tool } if server.is_empty() || tool.is_empty() => {
            bad("mcp needs both server and tool".to_owned())
        }
        Backend::Mcp { .. } | Backend::Worker {} => Ok(()),
    }
}

/// Each alias names a key models write for one of the schema's top-level properties, and is not one itself.
/// An injected parameter is neither: the model never writes it under any name.
fn check_aliases(spec: &ToolSpec, injections: &[Injected]) -> Result<(), SpecError> {
    let props = spec.input_schema.get("properties").and_then(Value::as_object);
    let is_property = |name: &str| props.is_some_and(|p| p.contains_key(name));
    for (alias, target) in &spec.repair.aliases {
        if let Some(i) = injections.iter().find(|i| i.path.len() == 1 && [alias, target].contains(&&i.path[0])) {
            return Err(SpecError::Alias(format!("{alias:?} → {target:?}: {:?} is injected", i.param)));
        }
        if !is_property(target) {
            return Err(SpecError::Alias(format!("{alias:?} → {target:?}: {target:?} is not a top-level property")));
        }
        if is_property(alias) {
            return Err(SpecError::Alias(format!("{alias:?} → {target:?}: {alias:?} is itself a property")));
        }
    }
    Ok(())
}

/// `limits.rate` like `10/s` or `600/m`, with `limits.burst` calls at once (0: as many as the rate's count).
fn rate_rule(spec: &ToolSpec) -> Result<Option<RateRule>, SpecError> {
    let limits = &spec.limits;
    if limits.rate.trim().is_empty() {
        return match limits.burst {
            0 => Ok(None),
            _ => Err(SpecError::Limits("burst needs a rate: set limits.rate too".into())),
        };
    }
    let rate = parse_rate(&limits.rate).map_err(|e| SpecError::Limits(format!("rate: {e}")))?;
    Ok(Some(RateRule { rate, burst: limits.burst }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compile(spec: serde_json::Value) -> Result<CompiledTool, SpecError> {
        CompiledTool::compile(serde_json::from_value(spec).unwrap(), &SchemaDocuments::default())
    }

    #[test]
    fn precise_reasons() {
        let cases = [
            (json!({"name": "bad name", "input_schema": {"type": "object"}}), "name \"bad name\" is invalid"),
            (json!({"name": "t", "input_schema": {"type": "string"}}), "must have \"type\": \"object\""),
            (json!({"name": "t", "input_schema": true}), "got a boolean"),
            (json!({"name": "t", "input_schema": {"type": "object", "properties": {"a": {"type": 5}}}}), "is invalid"),
            (
                json!({"name": "t", "input_schema": {"type": "object", "$ref": "http://x.test/s.json"}}),
                "remote $ref http://x.test/s.json",
            ),
            (
                json!({"name": "t", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": "nope"}}}),
                "grpc.target",
            ),
            (
                json!({"name": "t", "input_schema": {"type": "object"}, "backend": {"mcp": {"server": "", "tool": "t"}}}),
                "backend mcp needs both server and tool",
            ),
            (
                json!({"name": "t", "input_schema": {"type": "object"}, "inject": [{"param": "u", "from": "user_id"}]}),
                "inject[0] (\"u\" from \"user_id\"): \"u\" is not declared",
            ),
            (
                json!({"name": "t", "input_schema": {"type": "object", "properties": {"u": {}, "a": {}}},
                    "inject": [{"param": "u", "from": "user_id"}], "repair": {"aliases": {"user": "u"}}}),
                "repair.aliases \"user\" → \"u\": \"u\" is injected",
            ),
            (
                json!({"name": "t", "input_schema": {"type": "object", "properties": {"a": {}}},
                    "repair": {"aliases": {"b": "c"}}}),
                "repair.aliases \"b\" → \"c\": \"c\" is not a top-level property",
            ),
            (
                json!({"name": "t", "input_schema": {"type": "object", "properties": {"a": {}, "b": {}}},
                    "repair": {"aliases": {"b": "a"}}}),
                "\"b\" is itself a property",
            ),
        ];
        for (spec, want) in cases {
            let err = compile(spec.clone()).unwrap_err().to_string();
            assert!(err.contains(want), "{spec}: {err:?} lacks {want:?}");
        }
    }

    #[test]
    fn accepts_a_good_spec() {
        let tool = compile(json!({"name": "weather.get", "input_schema": "{\"type\": \"object\"}",
            "backend": {"http": {"url": "http://127.0.0.1:1/w"}}}))
        .unwrap();
        assert_eq!(tool.safe_name, "weather_get");
    }
}
