//! Fuzzes reading calls from a model's text: any text, in any format (the first byte picks it), against a few
//! offered tools, is read within its bounds and answers calls of offered tools with no refusal, or no call (with a
//! refusal or without): never a panic, a hang, a stack overflow or a runaway allocation.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use std::sync::{Arc, OnceLock};
use toolgate::pipeline::{Envelope, MAX_TEXT_CALLS, RepairSettings, TextFormat, calls_from_text, resolve_tool};
use toolgate::registry::{Catalog, CompiledTool, SchemaDocuments, ToolSpec};

/// Names as the corpus writes them: plain, dotted, and one a model would write with underscores.
const TOOLS: [&str; 4] = ["get_weather", "math.gcd", "convert_currency", "ecology.get_population"];

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let documents = SchemaDocuments::default();
        let tools = TOOLS.map(|name| {
            let schema =
                json!({"type": "object", "properties": {"city": {"type": "string"}, "a": {"type": "integer"}}});
            Arc::new(CompiledTool::compile(ToolSpec::offline(name, "", schema), &documents).expect("compiles"))
        });
        Catalog::new(tools.into())
    })
}

fuzz_target!(init: { catalog(); }, |data: &[u8]| {
    let Some((pick, data)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(data) else { return };
    let format = match usize::from(*pick) % (Envelope::ALL.len() + 1) {
        0 => TextFormat::Auto,
        n => TextFormat::Only(Envelope::ALL[n - 1]),
    };
    let found = calls_from_text(catalog(), "", text, format, RepairSettings::default(), &[]);
    assert!(found.calls.len() <= MAX_TEXT_CALLS);
    if !found.calls.is_empty() {
        assert_eq!(found.found.refusal, None, "calls and a refusal at once");
        let envelope = found.found.envelope.expect("calls without an envelope");
        assert!(format.reads(envelope), "{} read as {}", envelope.name(), format.name());
    }
    for (call, repair) in &found.calls {
        assert_eq!(repair.rule, "calls_from_text");
        assert!(serde_json::from_str::<serde_json::Value>(&call.arguments).is_ok_and(|v| v.is_object()));
        let resolved = resolve_tool(catalog(), "", &call.name, RepairSettings::default());
        assert!(resolved.is_ok(), "a call of a tool not offered: {}", call.name);
    }
});
