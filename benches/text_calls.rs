//! The cost of finding the calls in a model's answer (`pipeline::calls_from_text`).
//!
//! - `calls_from_text`: a 2 KB answer with two calls, in a Hermes `<tool_call>` envelope and as a pythonic list in
//!   a code fence, among prose; and a 2 KB answer with no call at all, the common case for a middleware that reads
//!   every answer. Four tools offered.
//! - `worst_256k`: the worst texts of 256 KiB we could build for each reader (tags of every template, pythonic and
//!   JSON calls, quotes, reasoning, cue words, names by the thousand), against 10,000 offered tools. Each must be
//!   read, or refused, in at most 5 ms (docs/repair.md gives the figures, before and after).
//!
//! Run: `cargo bench --bench text_calls -- --warm-up-time 1 --measurement-time 3`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
// The gateway's allocator (src/main.rs), so that what is measured is what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;
use toolgate::pipeline::{MAX_TEXT_BYTES, RepairSettings, TextFormat, calls_from_text};
use toolgate::registry::{Catalog, CompiledTool, SchemaDocuments, ToolSpec};

fn catalog(names: impl IntoIterator<Item = String>) -> Catalog {
    let documents = SchemaDocuments::default();
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}, "amount": {"type": "number"}},
                        "additionalProperties": false});
    let tools = names.into_iter().map(|name| {
        Arc::new(
            CompiledTool::compile(ToolSpec::offline(&name, "a tool", schema.clone()), &documents).expect("compiles"),
        )
    });
    Catalog::new(tools.collect())
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

/// `unit` repeated to just under the longest text read.
fn fill(unit: &str) -> String {
    unit.repeat((MAX_TEXT_BYTES - 64) / unit.len())
}

/// `unit(i)` for i = 0, 1, … to just under the longest text read.
fn fill_with(unit: impl Fn(usize) -> String) -> String {
    let mut text = String::new();
    for i in 0.. {
        let next = unit(i);
        if text.len() + next.len() > MAX_TEXT_BYTES - 64 {
            break;
        }
        text.push_str(&next);
    }
    text
}

/// The worst texts for each reader: (name, text, calls it must give).
fn worst() -> Vec<(&'static str, String, usize)> {
    vec![
        ("prose", prose(MAX_TEXT_BYTES - 64), 0),
        ("colon_name_object", fill(": {name: \"q\", "), 0),
        ("colon_name_object_not_offered", fill(": {name: \"zz\", "), 0),
        ("colon_name_lines", fill(": {name: \"zz\", \n"), 0),
        ("colons", fill("x: {"), 0),
        ("braces_on_lines", fill("{\n"), 0),
        ("open_lists", fill("[1,\n"), 0),
        ("open_dicts", fill("{'a': {'b':\n"), 0),
        ("deep_lists_closed", fill("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n"), 0),
        ("deep_string_lists", fill("[['a'], [['b']], [[['c']]]]\n"), 0),
        ("one_big_list", format!("[{}]", fill("['a', 1], ")), 0),
        ("print_wrappers", fill("print("), 0),
        ("pythonic_list_unclosed", fill("[q(city='a'), "), 0),
        ("distinct_names_called", fill_with(|i| format!("tool_{i}(")), 0),
        ("distinct_calls_on_lines", fill_with(|i| format!("tool_{i}(city='a')\n")), 0),
        ("one_call_restated", fill("q(city='Oslo')\n"), 0),
        (
            "hermes_calls",
            fill_with(|i| format!("<tool_call>{{\"name\": \"tool_{i}\", \"arguments\": {{}}}}</tool_call>\n")),
            0,
        ),
        ("hermes_opens", fill("<tool_call>"), 0),
        ("qwen_functions_unclosed", fill("<function=q><parameter=city>a</parameter>"), 0),
        ("mistral_call_ids", fill("[TOOL_CALLS]q[CALL_ID]"), 0),
        ("mistral_calls", fill("[TOOL_CALLS]q[ARGS]{\"city\": \"a\"}"), 0),
        ("python_tag_calls", format!("<|python_tag|>{}", fill("q(city='a');")), 0),
        ("harmony_recipients", fill("<|start|>assistant<|channel|>commentary to=functions.q <|message|>"), 0),
        ("harmony_calls", fill("<|channel|>commentary to=functions.q<|message|>{}<|call|>"), 0),
        ("json_objects_unclosed", fill("{\"name\": \"q\", \"arguments\": {"), 0),
        ("inline_code", fill("`q(city='a')` "), 0),
        ("fences", fill("```\n"), 0),
        ("think_blocks", fill("<think>[q(city='a')]</think>\n"), 0),
        ("block_quotes", fill("> [q(city='a')]\n"), 0),
        ("examples_then_calls", fill("For example:\n[q(city='a')]\n\n"), 0),
        ("cue_words", fill("never would example option earlier says? "), 0),
        ("string_lists", fill("[\"[q(city='a')]\", "), 0),
    ]
}

fn bench_answers(c: &mut Criterion) {
    let catalog = catalog(["get_weather", "convert_currency", "book_table", "send_email"].map(String::from));
    let mut group = c.benchmark_group("calls_from_text");
    for (name, text) in answers() {
        let found = calls_from_text(&catalog, "", &text, TextFormat::Auto, RepairSettings::default(), &[]);
        let want = if name.contains("two_calls") { 2 } else { 0 };
        assert_eq!(found.calls.len(), want, "{name}: {:?}", found.found.refusal);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| calls_from_text(&catalog, "", black_box(&text), TextFormat::Auto, RepairSettings::default(), &[]))
        });
    }
    group.finish();
}

fn bench_worst(c: &mut Criterion) {
    let catalog = catalog((0..10_000).map(|i| format!("tool_{i}")).chain(["q".to_owned()]));
    let mut group = c.benchmark_group("worst_256k");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for (name, text, calls) in worst() {
        assert!(text.len() <= MAX_TEXT_BYTES && text.len() > MAX_TEXT_BYTES - 1024, "{name}: {} bytes", text.len());
        let found = calls_from_text(&catalog, "", &text, TextFormat::Auto, RepairSettings::default(), &[]);
        assert_eq!(found.calls.len(), calls, "{name}: {:?}", found.found.refusal);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| calls_from_text(&catalog, "", black_box(&text), TextFormat::Auto, RepairSettings::default(), &[]))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_answers, bench_worst);
criterion_main!(benches);
