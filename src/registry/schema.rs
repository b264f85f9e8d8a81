//! Compiling a JSON Schema once: the schema's `$schema` is honoured (2020-12 by default), a remote `$ref`
//! is never fetched (only pre-registered documents resolve), and regexes are bounded.

use jsonschema::{PatternOptions, Retrieve, Uri, Validator};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Backtracking budget per regex match, so a catastrophic `pattern` cannot hang the gateway.
const REGEX_BACKTRACK_LIMIT: usize = 100_000;

/// Schema documents an operator pre-registered by URI; a `$ref` may point at them and nothing else remote.
#[derive(Debug, Clone, Default)]
pub struct SchemaDocuments {
    docs: Arc<HashMap<String, Value>>,
}

impl SchemaDocuments {
    pub fn new(docs: HashMap<String, Value>) -> Self {
        Self { docs: Arc::new(docs) }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SchemaError {
    #[error("remote $ref {0} is not fetched: inline it or pre-register the document")]
    RemoteRef(String),
    #[error("schema does not compile: {0}")]
    Invalid(String),
}

/// Compiles `schema` against the pre-registered documents. No I/O happens here.
pub fn compile_schema(schema: &Value, documents: &SchemaDocuments) -> Result<Validator, SchemaError> {
    let retriever = LocalRetriever { docs: Arc::clone(&documents.docs), refused: Arc::default() };
    let refused = Arc::clone(&retriever.refused);
    let built = jsonschema::options()
        .with_retriever(retriever)
        .with_pattern_options(PatternOptions::fancy_regex().backtrack_limit(REGEX_BACKTRACK_LIMIT))
        .build(schema);
    built.map_err(|err| {
        let refused = refused.lock().unwrap_or_else(|p| p.into_inner()).take();
        match refused {
            Some(uri) => SchemaError::RemoteRef(uri),
            None => SchemaError::Invalid(err.to_string()),
        }
    })
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
