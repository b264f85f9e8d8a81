//! Micro-benchmarks of the pure call pipeline (resolve, parse, repair, validate) and of tool compilation, on the
//! BFCL dev corpus.
//!
//! Run: `cargo bench --bench pipeline -- --warm-up-time 1 --measurement-time 3`.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;
use std::hint::black_box;
use std::sync::Arc;
use toolgate::pipeline::{
    CallContext, CallError, Check, PipelineSettings, RepairSettings, SplitMode, ToolCall, check_call, prepare,
    resolve_tool,
};
use toolgate::registry::{Catalog, CompiledTool, SchemaDocuments, ToolSpec};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/bfcl/dev.jsonl");
/// A valid call whose tool has a nested object property (`budget: {min, max}`).
const VALID_ID: &str = "claude-3-5-sonnet-20240620-FC/multiple_function_8/0";
/// A call whose array items miss an enum (`"disabled access facilities"`): refused after a repair attempt.
const INVALID_ID: &str = "Nexusflow-Raven-v2/multiple_function_48/0";
/// A typical small call that repair fixes: `"include_description": "true"` for a boolean.
const REPAIRED_ID: &str = "claude-3-5-sonnet-20240620/parallel_function_109/0";
/// A packed parallel call (three values for each of three parameters that take one): split into three calls.
const PACKED_ID: &str = "Nexusflow-Raven-v2/parallel_function_6/0";
/// How many distinct tools the resolve benchmark's catalog holds.
const RESOLVE_TOOLS: usize = 100;

#[derive(Deserialize)]
struct Line {
    id: String,
    kind: String,
    tools: Vec<CorpusTool>,
    call: CorpusCall,
}

#[derive(Deserialize, Clone)]
struct CorpusTool {
    name: String,
    #[serde(default)]
    description: String,
    input_schema: Value,
}

#[derive(Deserialize)]
struct CorpusCall {
    name: String,
    arguments: String,
}

/// One corpus line made ready for `prepare`: its own catalog and its call.
struct Case {
    catalog: Catalog,
    call: ToolCall,
}

fn load_corpus() -> Vec<Line> {
    let text = std::fs::read_to_string(CORPUS).unwrap_or_else(|e| panic!("reading {CORPUS}: {e}"));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("a corpus line does not parse: {e}")))
        .collect()
}

fn spec_of(tool: &CorpusTool) -> ToolSpec {
    ToolSpec::offline(&tool.name, &tool.description, tool.input_schema.clone())
}

fn compile(tool: &CorpusTool) -> Option<Arc<CompiledTool>> {
    CompiledTool::compile(spec_of(tool), &SchemaDocuments::default()).ok().map(Arc::new)
}

/// Tools that do not compile are left out, as the registry would refuse them.
fn case_of(line: &Line) -> Case {
    let catalog = Catalog::new(line.tools.iter().filter_map(compile).collect());
    let call = ToolCall { id: line.id.clone(), name: line.call.name.clone(), arguments: line.call.arguments.clone() };
    Case { catalog, call }
}

fn line<'a>(corpus: &'a [Line], id: &str, kind: &str) -> &'a Line {
    let found = corpus.iter().find(|l| l.id == id).unwrap_or_else(|| panic!("corpus line {id:?} is missing"));
    assert_eq!(found.kind, kind, "corpus line {id:?} changed kind");
    found
}

fn bench_prepare(c: &mut Criterion, corpus: &[Line]) {
    let (ctx, opts) = (CallContext::default(), PipelineSettings::default());
    let valid = case_of(line(corpus, VALID_ID, "valid"));
    let invalid = case_of(line(corpus, INVALID_ID, "invalid"));
    let repaired = case_of(line(corpus, REPAIRED_ID, "invalid"));
    let prepared = prepare(&valid.catalog, &valid.call, &ctx, &opts).expect("the valid call must prepare");
    assert!(prepared.repairs.is_empty(), "the valid call passes through");
    let rejected = prepare(&invalid.catalog, &invalid.call, &ctx, &opts).expect_err("the invalid call must fail");
    assert!(matches!(rejected.error, CallError::Invalid(_)), "the invalid call must fail validation");
    let fixed = prepare(&repaired.catalog, &repaired.call, &ctx, &opts).expect("the repairable call is repaired");
    assert_eq!(fixed.repairs.len(), 1, "one repair: {:?}", fixed.repairs);
    // As a tool that allows the split (idempotent) checks it.
    let packed = case_of(line(corpus, PACKED_ID, "invalid"));
    let split = PipelineSettings { split: SplitMode::Always, ..opts };
    let parts = match check_call(&packed.catalog, &packed.call, "", &split) {
        Ok(Check::Split(s)) => s.parts.len(),
        other => panic!("the packed call must split: {other:?}"),
    };
    assert_eq!(parts, 3, "three calls");

    let cases: Vec<Case> = corpus.iter().map(case_of).collect();
    let accepted = cases.iter().filter(|k| prepare(&k.catalog, &k.call, &ctx, &opts).is_ok()).count();
    eprintln!("corpus: {} calls, {accepted} prepared, {} rejected", cases.len(), cases.len() - accepted);

    let mut group = c.benchmark_group("prepare");
    // The baseline a gateway without repair pays: parse the text, validate the value.
    let validate_only = |case: &Case| {
        let tool = Arc::clone(case.catalog.all().iter().find(|t| t.spec.name == case.call.name).unwrap());
        move |text: &str| tool.validator.get().is_valid(&serde_json::from_str::<Value>(text).unwrap())
    };
    let (valid_check, repaired_check) = (validate_only(&valid), validate_only(&repaired));
    let packed_check = validate_only(&packed);
    group.bench_function("validate_only/valid_call", |b| b.iter(|| valid_check(black_box(&valid.call.arguments))));
    group.bench_function("pass_through/valid_call", |b| {
        b.iter(|| prepare(black_box(&valid.catalog), black_box(&valid.call), &ctx, &opts))
    });
    group.bench_function("validate_only/repairable_call", |b| {
        b.iter(|| repaired_check(black_box(&repaired.call.arguments)))
    });
    group.bench_function("repair_validate/repairable_call", |b| {
        b.iter(|| prepare(black_box(&repaired.catalog), black_box(&repaired.call), &ctx, &opts))
    });
    group.bench_function("validate_only/packed_call", |b| b.iter(|| packed_check(black_box(&packed.call.arguments))));
    group.bench_function("split_validate/packed_call", |b| {
        b.iter(|| check_call(black_box(&packed.catalog), black_box(&packed.call), "", &split))
    });
    group.bench_function("refused/invalid_call", |b| {
        b.iter(|| prepare(black_box(&invalid.catalog), black_box(&invalid.call), &ctx, &opts))
    });
    // One iteration is the whole corpus: keep the sample count low so a short measurement time suffices.
    group.sample_size(10);
    group.throughput(Throughput::Elements(cases.len() as u64));
    group.bench_function(format!("corpus_{}", cases.len()), |b| {
        b.iter(|| {
            let ok = cases.iter().filter(|k| prepare(&k.catalog, black_box(&k.call), &ctx, &opts).is_ok()).count();
            black_box(ok)
        })
    });
    group.finish();
}

/// The first `RESOLVE_TOOLS` distinct, compilable tools of the corpus.
fn distinct_tools(corpus: &[Line]) -> Vec<Arc<CompiledTool>> {
    let mut seen = HashSet::new();
    let fresh = corpus.iter().flat_map(|l| &l.tools).filter(|t| seen.insert(t.name.clone()));
    fresh.filter_map(compile).take(RESOLVE_TOOLS).collect()
}

/// A name the model might write: upper case, with `-` for `_`.
fn variant_of(name: &str) -> String {
    name.to_uppercase().replace('_', "-")
}

fn bench_resolve(c: &mut Criterion, corpus: &[Line]) {
    let tools = distinct_tools(corpus);
    assert_eq!(tools.len(), RESOLVE_TOOLS, "the corpus holds fewer distinct tools than expected");
    let target = tools.iter().map(|t| &t.spec.name).find(|n| n.contains('_')).expect("a tool name with '_'");
    let name = variant_of(target);
    let catalog = Catalog::new(tools.clone());
    let settings = RepairSettings::default();
    let resolved = resolve_tool(&catalog, "", &name, settings).expect("the variant resolves");
    assert_eq!(&resolved.tool.spec.name, target);
    assert!(!resolved.repairs.is_empty(), "the variant must take the normalized path");
    eprintln!("resolve: {name:?} -> {target:?} among {} tools", catalog.all().len());

    c.bench_function("resolve/normalized_name", |b| {
        b.iter(|| resolve_tool(black_box(&catalog), "", black_box(&name), settings))
    });
}

fn bench_compile(c: &mut Criterion, corpus: &[Line]) {
    let valid = line(corpus, VALID_ID, "valid");
    let tool = valid.tools.iter().find(|t| t.name == valid.call.name).expect("the called tool");
    let documents = SchemaDocuments::default();
    assert!(CompiledTool::compile(spec_of(tool), &documents).is_ok(), "the tool must compile");
    c.bench_function("compile/schema", |b| {
        b.iter_batched(
            || spec_of(tool),
            |spec| CompiledTool::compile(spec, black_box(&documents)),
            BatchSize::SmallInput,
        )
    });
}

/// The same small call to a tool without and with an injected `user_id`: the cost of strip + inject + the
/// second validation, on the pass path.
fn bench_inject(c: &mut Criterion) {
    let schema = serde_json::json!({"type": "object", "required": ["query", "user_id"], "additionalProperties": false,
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}, "user_id": {"type": "string"}}});
    let plain = ToolSpec::offline("search", "", schema.clone());
    let mut injected = ToolSpec::offline("search_as_user", "", schema);
    injected.inject = vec![toolgate::registry::Injection { param: "user_id".into(), from: "user_id".into() }];
    let documents = SchemaDocuments::default();
    let catalog = Catalog::new(
        [plain, injected].into_iter().map(|s| Arc::new(CompiledTool::compile(s, &documents).unwrap())).collect(),
    );
    let ctx = CallContext { user_id: "u-42".into(), ..CallContext::default() };
    let options = PipelineSettings::default();
    let call =
        |name: &str, arguments: &str| ToolCall { id: "c".into(), name: name.into(), arguments: arguments.into() };
    let without = call("search", r#"{"query": "weather in Oslo", "limit": 5, "user_id": "u-42"}"#);
    let with = call("search_as_user", r#"{"query": "weather in Oslo", "limit": 5}"#);
    assert!(prepare(&catalog, &with, &ctx, &options).is_ok(), "the injected call must prepare");
    c.bench_function("prepare/no_injection", |b| b.iter(|| prepare(&catalog, black_box(&without), &ctx, &options)));
    c.bench_function("prepare/injected_user_id", |b| b.iter(|| prepare(&catalog, black_box(&with), &ctx, &options)));
}

fn benches(c: &mut Criterion) {
    let corpus = load_corpus();
    bench_inject(c);
    bench_prepare(c, &corpus);
    bench_resolve(c, &corpus);
    bench_compile(c, &corpus);
}

criterion_group!(pipeline, benches);
criterion_main!(pipeline);
