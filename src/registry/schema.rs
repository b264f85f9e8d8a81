//! Compiling a JSON Schema: the schema's `$schema` is honoured (2020-12 by default), a remote `$ref` is never
//! fetched (only pre-registered documents resolve), regexes are bounded (`pattern.rs`) and so is the schema's
//! shape (`shape.rs`).

use super::pattern::pattern_keyword;
use super::validators::{ValidatorCache, ValidatorSlot};
use jsonschema::{PatternOptions, Retrieve, Uri, Validator};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What compiling draws on: the schema documents an operator pre-registered by URI (a `$ref` may point at them
/// and nothing else remote), and the cache the compiled validators of a registry share.
#[derive(Debug, Clone, Default)]
pub struct SchemaDocuments {
    docs: Arc<HashMap<String, Value>>,
    validators: Arc<ValidatorCache>,
    /// `limits.max_schema_bytes`; `None` is `DEFAULT_MAX_SCHEMA_BYTES`.
    max_schema_bytes: Option<usize>,
}

impl SchemaDocuments {
    pub fn new(docs: HashMap<String, Value>) -> Self {
        Self { docs: Arc::new(docs), validators: Arc::default(), max_schema_bytes: None }
    }

    /// The same documents, with validators compiled into a cache of their own that keeps at most `capacity`.
    pub fn with_validator_capacity(self, capacity: usize) -> Self {
        Self { validators: Arc::new(ValidatorCache::new(capacity)), ..self }
    }

    /// The same documents, with registrations refused for a schema larger than `max` bytes of compact JSON.
    pub fn with_max_schema_bytes(self, max: usize) -> Self {
        Self { max_schema_bytes: Some(max), ..self }
    }

    pub fn max_schema_bytes(&self) -> usize {
        self.max_schema_bytes.unwrap_or(super::DEFAULT_MAX_SCHEMA_BYTES)
    }

    pub fn validators(&self) -> &ValidatorCache {
        &self.validators
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SchemaError {
    #[error("remote $ref {0} is not fetched: inline it or pre-register the document")]
    RemoteRef(String),
    #[error("schema does not compile: {0}")]
    Invalid(String),
    /// The schema compiles, but validating against it could take work or stack without bound (`shape.rs`).
    #[error("schema {0}")]
    Shape(String),
}

/// Compiles `schema` against the pre-registered documents, and bounds its shape (`shape.rs`). No I/O happens here.
pub fn compile_schema(schema: &Value, documents: &SchemaDocuments) -> Result<Validator, SchemaError> {
    let validator = compile_unshaped(schema, documents)?;
    let retriever = LocalRetriever { docs: Arc::clone(&documents.docs), refused: Arc::default() };
    super::shape::check_shape(schema, Arc::new(retriever)).map_err(SchemaError::Shape)?;
    Ok(validator)
}

/// Compiles a schema with no subschema that applies at its own place (no `$ref`, no alternative), whose shape
/// is bounded by its JSON nesting: a node's own keywords, as the description of a refusal checks them.
pub fn compile_own(schema: &Value) -> Result<Validator, SchemaError> {
    compile_unshaped(schema, &SchemaDocuments::default())
}

fn compile_unshaped(schema: &Value, documents: &SchemaDocuments) -> Result<Validator, SchemaError> {
    let retriever = LocalRetriever { docs: Arc::clone(&documents.docs), refused: Arc::default() };
    let refused = Arc::clone(&retriever.refused);
    let built = jsonschema::options()
        .with_retriever(retriever)
        // Linear-time regexes only, except `pattern` itself, which `BoundedPattern` bounds.
        .with_pattern_options(PatternOptions::regex())
        .with_keyword("pattern", pattern_keyword)
        .build(schema);
    built.map_err(|err| {
        let refused = refused.lock().unwrap_or_else(|p| p.into_inner()).take();
        match refused {
            Some(uri) => SchemaError::RemoteRef(uri),
            None => SchemaError::Invalid(err.to_string()),
        }
    })
}

/// `value` with every object and array allocated to its length. A parsed schema's maps keep the room they grew
/// into, about a fifth of a stored schema's memory.
pub fn compacted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut exact = serde_json::Map::with_capacity(map.len());
            exact.extend(map.into_iter().map(|(key, value)| (key, compacted(value))));
            Value::Object(exact)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(compacted).collect()),
        other => other,
    }
}

/// A checked schema whose validator is compiled at first use and kept while the registry's validator cache has
/// room for it. A compiled validator takes about ten times the memory of its schema's text, so 10,000 registered
/// tools cost their specs, and only the tools in use cost their validators.
pub struct LazyValidator {
    /// The schema as compact JSON, which is what is compiled: it was checked to compile with `documents`.
    schema: Box<str>,
    documents: SchemaDocuments,
    slot: Arc<ValidatorSlot>,
}

impl LazyValidator {
    /// Compiles `schema` to check it, and keeps its text for the first use.
    pub fn checked(schema: &Value, documents: &SchemaDocuments) -> Result<Self, SchemaError> {
        compile_schema(schema, documents)?;
        Ok(Self { schema: schema.to_string().into(), documents: documents.clone(), slot: Arc::default() })
    }

    /// The compiled validator, compiled now if it never was or the cache dropped it.
    pub fn get(&self) -> Arc<Validator> {
        if let Some(validator) = self.slot.get() {
            return validator;
        }
        let validator = Arc::new(self.compile());
        self.documents.validators.keep(&self.slot, Arc::clone(&validator));
        validator
    }

    /// Whether the validator is compiled and kept.
    pub fn is_compiled(&self) -> bool {
        self.slot.is_compiled()
    }

    /// Compiles what was checked. Compiling is deterministic, so this fails only on a bug: then the tool refuses
    /// every call, and says why in the log, rather than crash the gateway.
    fn compile(&self) -> Validator {
        let schema = serde_json::from_str(&self.schema).unwrap_or(Value::Bool(false));
        compile_schema(&schema, &self.documents).unwrap_or_else(|err| {
            tracing::error!(error = %err, "a checked schema failed to compile: the tool refuses every call");
            compile_schema(&Value::Bool(false), &SchemaDocuments::default()).expect("`false` is a schema")
        })
    }
}

impl std::fmt::Debug for LazyValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyValidator").field("schema", &self.schema).field("compiled", &self.is_compiled()).finish()
    }
}

/// Serves pre-registered documents and refuses, recording the URI, everything else.
struct LocalRetriever {
    docs: Arc<HashMap<String, Value>>,
    refused: Arc<Mutex<Option<String>>>,
}

impl Retrieve for LocalRetriever {
    fn retrieve(&self, uri: &Uri<String>) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let key = uri.as_str();
        let found = self.docs.get(key).or_else(|| self.docs.get(key.trim_end_matches('#')));
        if let Some(doc) = found {
            return Ok(doc.clone());
        }
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused.get_or_insert_with(|| key.to_owned());
        Err(format!("remote $ref {key} is not fetched").into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn remote_ref_is_refused_with_its_uri() {
        let schema = json!({"type": "object", "properties": {"a": {"$ref": "https://evil.example/x.json"}}});
        let err = compile_schema(&schema, &SchemaDocuments::default()).unwrap_err();
        assert_eq!(err, SchemaError::RemoteRef("https://evil.example/x.json".into()));
    }

    #[test]
    fn pre_registered_document_resolves() {
        let docs = HashMap::from([("http://localhost:1234/int.json".to_owned(), json!({"type": "integer"}))]);
        let schema = json!({"$ref": "http://localhost:1234/int.json"});
        let v = compile_schema(&schema, &SchemaDocuments::new(docs)).unwrap();
        assert!(v.is_valid(&json!(3)));
        assert!(!v.is_valid(&json!("3")));
    }

    #[test]
    fn compacting_keeps_the_value_and_its_order() {
        let schema = json!({"type": "object", "properties": {"b": {"enum": [1, "x", null]}, "a": {}}, "required": []});
        let compact = compacted(schema.clone());
        assert_eq!(compact, schema);
        assert_eq!(compact.to_string(), schema.to_string(), "key order kept");
    }

    #[test]
    fn a_lazy_validator_compiles_on_first_use() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        let lazy = LazyValidator::checked(&schema, &SchemaDocuments::default()).unwrap();
        assert!(!lazy.is_compiled());
        assert!(lazy.get().is_valid(&json!({"a": 1})) && !lazy.get().is_valid(&json!({"a": "1"})));
        assert!(lazy.is_compiled());
        let bad = json!({"type": "object", "properties": {"a": {"type": 5}}});
        assert!(matches!(LazyValidator::checked(&bad, &SchemaDocuments::default()), Err(SchemaError::Invalid(_))));
    }

    #[test]
    fn validators_past_the_cache_capacity_are_dropped_and_compile_again_when_used() {
        let documents = SchemaDocuments::default().with_validator_capacity(2);
        let schemas = ["integer", "string", "boolean"].map(|t| json!({"properties": {"a": {"type": t}}}));
        let lazies: Vec<LazyValidator> =
            schemas.iter().map(|schema| LazyValidator::checked(schema, &documents).unwrap()).collect();
        for lazy in &lazies {
            lazy.get();
        }
        let compiled = lazies.iter().filter(|l| l.is_compiled()).count();
        assert_eq!((compiled, documents.validators().listed()), (2, 2), "one of three was dropped");
        for (lazy, (good, bad)) in
            lazies.iter().zip([(json!(1), json!("1")), (json!("1"), json!(1)), (json!(true), json!(1))])
        {
            let validator = lazy.get();
            assert!(validator.is_valid(&json!({"a": good})) && !validator.is_valid(&json!({"a": bad})));
        }
        assert_eq!(documents.validators().listed(), 2);
    }

    #[test]
    fn draft7_is_honoured() {
        // In draft 7, `$ref` overrides its siblings; in 2020-12 it does not.
        let sibling = |draft: &str| {
            json!({"$schema": draft, "$defs": {}, "definitions": {"s": {"type": "string"}},
                   "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 1}}})
        };
        let d7 =
            compile_schema(&sibling("http://json-schema.org/draft-07/schema#"), &SchemaDocuments::default()).unwrap();
        let d2020 =
            compile_schema(&sibling("https://json-schema.org/draft/2020-12/schema"), &SchemaDocuments::default())
                .unwrap();
        assert!(d7.is_valid(&json!({"a": "long"})));
        assert!(!d2020.is_valid(&json!({"a": "long"})));
    }
}
