//! The cost of finding the calls in a model's answer (`pipeline::calls_from_text`): a 2 KB answer with two calls,
//! in a Hermes `<tool_call>` envelope and as a pythonic list in a code fence, among prose; and a 2 KB answer with
//! no call at all, the common case for a middleware that reads every answer.
//!
//! Run: `cargo bench --bench text_calls -- --warm-up-time 1 --measurement-time 3`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use toolgate::pipeline::{RepairSettings, calls_from_text};
use toolgate::registry::{Catalog, CompiledTool, SchemaDocuments, ToolSpec};

fn catalog() -> Catalog {
    let documents = SchemaDocuments::default();
    let tools = ["get_weather", "convert_currency", "book_table", "send_email"].map(|name| {
        let schema = json!({"type": "object", "properties": {"city": {"type": "string"}, "amount": {"type": "number"}},
                            "additionalProperties": false});
        Arc::new(CompiledTool::compile(ToolSpec::offline(name, "a tool", schema), &documents).expect("compiles"))
    });
    Catalog::new(tools.into())
}

/// Prose of about `bytes` bytes, as a model writes around its calls.
fn prose(bytes: usize) -> String {
    let sentence = "The forecast depends on the region, and the exchange rate changes during the day. ";
    sentence.repeat(bytes / sentence.len() + 1)[..bytes].to_owned()
}

fn answers() -> [(&'static str, String); 3] {
    let hermes = format!(
        "{}\n<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"Oslo\"}}}}\n</tool_call>\n\
         <tool_call>\n{{\"name\": \"convert_currency\", \"arguments\": {{\"amount\": 100}}}}\n</tool_call>\n{}",
        prose(900),
        prose(900)
    );
    let pythonic = format!(
        "{}\n\nHere are the calls:\n\n```python\n[get_weather(city='Oslo'), convert_currency(amount=100)]\n```\n\n{}",
        prose(900),
        prose(900)
    );
    [("hermes_2kb_two_calls", hermes), ("pythonic_2kb_two_calls", pythonic), ("prose_2kb_no_call", prose(2048))]
}

fn bench(c: &mut Criterion) {
    let catalog = catalog();
    let mut group = c.benchmark_group("calls_from_text");
    for (name, text) in answers() {
        let found = calls_from_text(&catalog, "", &text, RepairSettings::default(), &[]);
        let want = if name.contains("two_calls") { 2 } else { 0 };
        assert_eq!(found.calls.len(), want, "{name}: {:?}", found.found.refusal);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| calls_from_text(&catalog, "", black_box(&text), RepairSettings::default(), &[]))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
