//! What the fuzz targets and the seed writer share: the tool schemas drawn from `tests/data` (the JSON Schema Test
//! Suite and the BFCL tools), each as a registrable tool with example arguments, and the targets' input layouts.

use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use toolgate::registry::{CompiledTool, Injection, SchemaDocuments, ToolSpec};

/// `tests/data` of the main crate, found from this crate's manifest so a target runs from any directory.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data")
}

const SUITE: &str = "json-schema-test-suite";
/// The base URI the suite's `remotes/` are served under (from memory; nothing is fetched).
const REMOTES_BASE: &str = "http://localhost:1234/";
const DRAFT7: &str = "http://json-schema.org/draft-07/schema#";
/// The top-level property added to a schema that has no plain string property to inject into.
pub const ADDED_PARAM: &str = "tg_injected";
/// What the call context holds for the injected parameter: the only value it may ever take.
pub const CTX_VALUE: &str = "CTX-VALUE-7f3a";

/// One tool schema from the corpus, with argument texts known to be interesting for it.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub schema: Value,
    pub examples: Vec<String>,
}

/// Every file under the suite's `remotes/`, registered as the suite's README asks runners to serve them.
pub fn documents() -> SchemaDocuments {
    let root = data_dir().join(SUITE).join("remotes");
    let docs: HashMap<String, Value> = json_files(&root)
        .into_iter()
        .filter_map(|path| {
            let rel = path.strip_prefix(&root).ok()?.to_string_lossy().replace('\\', "/");
            Some((format!("{REMOTES_BASE}{rel}"), read_json(&path)?))
        })
        .collect();
    SchemaDocuments::new(docs)
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else { return out };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(json_files(&path));
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&fs::read_to_string(path).ok()?).ok()
}

/// The corpus in a fixed order (suite draft 2020-12, suite draft 7, then BFCL in file order, each schema once),
/// keeping only the schemas that register: an index names the same schema on every run.
pub fn cases() -> Vec<Case> {
    let docs = documents();
    let mut all = regression_cases();
    all.extend(suite_cases("draft2020-12", None));
    all.extend(suite_cases("draft7", Some(DRAFT7)));
    all.extend(bfcl_cases());
    // Last, so the committed seeds keep the indexes they were found at.
    all.extend(hostile_cases());
    all.into_iter().filter(|c| CompiledTool::compile(c.spec(false), &docs).is_ok()).collect()
}

/// Schemas made to cost (issue 47): `$ref` chains at and past the most allowed, alternatives that double, and
/// many strings on patterns that backtrack, inside `not` too. Those past the bounds are refused when compiled:
/// the spec target gets them all, the pipeline target those that compile.
pub fn hostile_cases() -> Vec<Case> {
    let chain = |hops: usize| {
        let mut defs = Map::new();
        for i in 0..hops {
            defs.insert(format!("r{i}"), json!({"$ref": format!("#/$defs/r{}", i + 1)}));
        }
        defs.insert(format!("r{hops}"), json!({"type": "boolean"}));
        json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/r0"}, "n": {"type": "string"}}, "$defs": defs})
    };
    let doubling = |levels: usize| {
        let mut defs = Map::new();
        for i in 0..levels {
            let next = format!("#/$defs/a{}", i + 1);
            defs.insert(format!("a{i}"), json!({"anyOf": [{"$ref": next}, {"$ref": next}]}));
        }
        defs.insert(format!("a{levels}"), json!({"type": "string"}));
        json!({"type": "object", "properties": {"s": {"$ref": "#/$defs/a0"}}, "$defs": defs})
    };
    let many = json!({"type": "object", "properties": {"s": {"type": "array", "items":
        {"anyOf": [{"type": "string", "pattern": "^(a|a)+\\1$"}, {"type": "string"}]}}}});
    let deny = json!({"type": "object", "properties": {"html": {"type": "string",
        "not": {"pattern": "(?i)<(\\w+)[^>]*>.*</\\1>"}}, "n": {"type": "string"}}});
    let strings = json!({"s": vec![format!("{}b", "a".repeat(24)); 40]}).to_string();
    let tags = json!({"html": format!("{}<b>x</b>", "<a ".repeat(300))}).to_string();
    let case = |name: &str, schema: Value, examples: Vec<String>| Case { name: name.into(), schema, examples };
    vec![
        case("hostile_chain_31", chain(31), vec![r#"{"x": 1}"#.into(), r#"{"x": true}"#.into()]),
        case("hostile_chain_5000", chain(5_000), vec![r#"{"x": 1}"#.into()]),
        case("hostile_doubling_12", doubling(12), vec![r#"{"s": 1}"#.into(), r#"{"s": "a"}"#.into()]),
        case("hostile_doubling_20", doubling(20), vec![r#"{"s": 1}"#.into()]),
        case("hostile_many_patterns", many, vec![strings, r#"{"s": ["aab", "aa"]}"#.into()]),
        case("hostile_deny_list", deny, vec![tags, r#"{"html": "<i>x</i>"}"#.into(), r#"{"html": "a<b"}"#.into()]),
    ]
}

/// Schemas behind crashes found, first so a committed crash seed keeps its index as tests/data changes.
fn regression_cases() -> Vec<Case> {
    // Draft 7 ignores a root `$ref`'s siblings, `"type": "object"` included: `0` validates, and an injection
    // into it panicked (set_path, src/pipeline/inject.rs).
    let root_ref = json!({"$schema": DRAFT7, "type": "object", "$ref": "#/definitions/n",
        "definitions": {"n": {"type": "integer"}}});
    vec![Case { name: "regress_root_ref".into(), schema: root_ref, examples: vec!["0".into()] }]
}

fn suite_cases(folder: &str, assumed: Option<&str>) -> Vec<Case> {
    let mut out = Vec::new();
    for path in json_files(&data_dir().join(SUITE).join("tests").join(folder)) {
        let Some(Value::Array(groups)) = read_json(&path) else { continue };
        for group in groups {
            let (schema, wrapped) = object_schema(&group["schema"], assumed);
            let examples = group["tests"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| if wrapped { json!({"value": t["data"]}) } else { t["data"].clone() })
                .map(|v| v.to_string())
                .collect();
            out.push(Case { name: format!("suite_{}", out.len()), schema, examples });
        }
    }
    out
}

/// The suite's schema as a tool's input schema, which must be `"type": "object"`: an object schema without a
/// type gets one; any other is wrapped as the required property `value` (true when wrapped).
fn object_schema(schema: &Value, assumed: Option<&str>) -> (Value, bool) {
    let (mut schema, wrapped) = match schema {
        Value::Object(map) if map.get("type").is_none_or(|t| t == "object") => {
            let mut map = map.clone();
            map.insert("type".into(), "object".into());
            (Value::Object(map), false)
        }
        other => (json!({"type": "object", "properties": {"value": other}, "required": ["value"]}), true),
    };
    if let (Some(uri), Value::Object(map)) = (assumed, &mut schema) {
        map.entry("$schema").or_insert_with(|| Value::String(uri.to_owned()));
    }
    (schema, wrapped)
}

fn bfcl_cases() -> Vec<Case> {
    let text = fs::read_to_string(data_dir().join("bfcl/dev.jsonl")).unwrap_or_default();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<Case> = Vec::new();
    for line in text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()) {
        let call = &line["call"];
        for tool in line["tools"].as_array().into_iter().flatten() {
            let schema = tool["input_schema"].clone();
            let key = format!("{}\n{schema}", tool["name"]);
            let index = *seen.entry(key).or_insert_with(|| {
                let name = tool["name"].as_str().unwrap_or("tool").to_owned();
                out.push(Case { name, schema, examples: Vec::new() });
                out.len() - 1
            });
            if call["name"] == tool["name"]
                && let Some(arguments) = call["arguments"].as_str()
            {
                out[index].examples.push(arguments.to_owned());
            }
        }
    }
    out
}

impl Case {
    /// The tool as registered; with `inject`, one top-level string parameter is filled from `user_id`: the
    /// first plain string property, or `ADDED_PARAM` added for it.
    pub fn spec(&self, inject: bool) -> ToolSpec {
        let mut spec = ToolSpec::offline(&self.name, "fuzzed", self.schema.clone());
        if inject {
            let param = injectable(&self.schema).unwrap_or_else(|| {
                add_property(&mut spec.input_schema);
                ADDED_PARAM.to_owned()
            });
            spec.inject.push(Injection { param, from: "user_id".into() });
        }
        spec
    }
}

/// A top-level property whose schema is exactly `{"type": "string"}` plus annotations.
fn injectable(schema: &Value) -> Option<String> {
    let annotations: HashSet<&str> = ["type", "description", "title"].into();
    let props = schema.get("properties")?.as_object()?;
    props
        .iter()
        .find(|(_, s)| {
            s.get("type") == Some(&json!("string"))
                && s.as_object().is_some_and(|o| o.keys().all(|k| annotations.contains(k.as_str())))
        })
        .map(|(k, _)| k.clone())
}

fn add_property(schema: &mut Value) {
    if let Value::Object(map) = schema {
        let props = map.entry("properties").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(props) = props {
            props.insert(ADDED_PARAM.into(), json!({"type": "string"}));
        }
    }
}

/// Layout of a `pipeline` input: schema index (2 bytes, little-endian), flags, then the name when `NAME` is set
/// (a length byte and that many bytes), then the arguments text.
pub mod layout {
    /// Register the tool with an injected parameter.
    pub const INJECT: u8 = 1;
    /// Call it by the fuzzed name that follows, not its own.
    pub const NAME: u8 = 2;
    /// Run with repair turned off.
    pub const NO_REPAIR: u8 = 4;

    /// One input, as the seed writer builds it.
    pub fn encode(index: usize, flags: u8, name: Option<&[u8]>, arguments: &[u8]) -> Vec<u8> {
        let mut out = (index as u16).to_le_bytes().to_vec();
        out.push(if name.is_some() { flags | NAME } else { flags & !NAME });
        if let Some(name) = name {
            let name = &name[..name.len().min(255)];
            out.push(name.len() as u8);
            out.extend_from_slice(name);
        }
        out.extend_from_slice(arguments);
        out
    }
}
