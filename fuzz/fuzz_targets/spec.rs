//! Fuzzes spec registration: arbitrary bytes read as a ToolSpec the three ways one arrives (JSON as spec files
//! and the store hold it, TOML as spec files may be written, and the protobuf `ToolSpec` of `RegisterTool`), then
//! `CompiledTool::compile`, which `Registry::register` and `toolgate tools register` go through. A spec that
//! compiles must survive the trips it takes later: `GetTool` and re-registration, the store, and definitions.

#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message;
use serde_json::Value;
use std::sync::OnceLock;
use toolgate::definitions::{DefinitionFormat, render};
use toolgate::pb::v1 as pb;
use toolgate::registry::{CompiledTool, SchemaDocuments, ToolSpec};

fn documents() -> &'static SchemaDocuments {
    static DOCS: OnceLock<SchemaDocuments> = OnceLock::new();
    DOCS.get_or_init(toolgate_fuzz::documents)
}

/// The first byte picks the form: 0 JSON, 1 TOML, 2 protobuf.
fn spec_of(data: &[u8]) -> Option<ToolSpec> {
    let (&form, rest) = data.split_first()?;
    match form % 3 {
        0 => serde_json::from_slice(rest).ok(),
        1 => {
            let value: Value = toml::from_str(std::str::from_utf8(rest).ok()?).ok()?;
            serde_json::from_value(value).ok()
        }
        _ => toolgate::registry::ToolSpec::try_from(pb::ToolSpec::decode(rest).ok()?).ok(),
    }
}

// `init` builds the schema documents before libFuzzer times any input. Built lazily, inside the first
// input, it took more than the 10 s `-timeout` in an unoptimised build on a loaded machine.
fuzz_target!(init: { documents(); }, |data: &[u8]| {
    let Some(spec) = spec_of(data) else { return };
    let Ok(tool) = CompiledTool::compile(spec, documents()) else { return };
    let via_proto = toolgate::registry::ToolSpec::try_from(pb::ToolSpec::from(&tool.spec)).expect("GetTool's spec reads back");
    assert_eq!(via_proto, tool.spec, "a registered spec changed through its protobuf form");
    let again = CompiledTool::compile(via_proto, documents());
    assert!(again.is_ok(), "a registered spec, read back, no longer registers: {:?}", again.err());
    let stored = serde_json::to_vec(&tool.spec).expect("a spec serializes");
    let loaded: ToolSpec = serde_json::from_slice(&stored).expect("a stored spec reads back");
    assert_eq!(loaded, tool.spec, "a registered spec changed through the store's JSON");
    for format in
        [DefinitionFormat::OpenAi, DefinitionFormat::Anthropic, DefinitionFormat::Mcp, DefinitionFormat::JsonSchema]
    {
        let definition = render(&tool, format);
        if matches!(format, DefinitionFormat::OpenAi | DefinitionFormat::Anthropic) {
            let safe = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            assert!(
                (1..=64).contains(&definition.name.len()) && definition.name.chars().all(safe),
                "{:?}",
                definition.name
            );
        }
    }
    let props = tool.model_schema().get("properties").and_then(Value::as_object);
    for injected in tool.injections.iter().filter(|i| i.path.len() == 1) {
        assert!(!props.is_some_and(|p| p.contains_key(&injected.path[0])), "{} shows to the model", injected.param);
    }
    let _ = tool.model_validator().is_valid(&Value::Object(Default::default()));
});
