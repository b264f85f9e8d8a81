//! Micro-benchmarks of one call's work inside the gateway, network aside: the pass path (resolve, parse,
//! validate, inject, and the policy checks that do not trigger), the repair path, and encoding the answer.
//!
//! Run: `cargo bench --bench hot_path -- --warm-up-time 1 --measurement-time 3`.

/// The shipped binary's allocator (see `src/main.rs`), so the gateway here costs what it costs there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use futures::executor::block_on;
use prost::Message;
use std::hint::black_box;
use std::sync::Arc;
use toolgate::pipeline::{CallContext, PipelineSettings, ToolCall, prepare, success_message};
use toolgate::policy::{BudgetLimits, Clock, Policy, PolicySettings, RateRule, SessionKey, ToolKey, parse_rate};
use toolgate::registry::{Catalog, CompiledTool, SchemaDocuments, ToolSpec};

/// About 200 bytes, valid against `schema`.
const VALID: &str = r#"{"city": "Lyon", "days": 3, "units": "metric", "hourly": false, "tags": ["rain", "wind", "uv"], "location": {"lat": 45.764, "lon": 4.8357}, "lang": "fr"}"#;
/// The same call as models get it wrong: a number as a string, a key in the wrong case, a Python literal.
const BROKEN: &str = r#"{"City": "Lyon", "days": "3", "units": "metric", "hourly": False, "tags": ["rain", "wind", "uv"], "location": {"lat": 45.764, "lon": 4.8357}, "lang": "fr"}"#;

fn catalog() -> Catalog {
    let schema = serde_json::json!({
        "type": "object", "additionalProperties": false, "required": ["city", "days", "user_id"],
        "properties": {
            "city": {"type": "string", "minLength": 1},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "units": {"type": "string", "enum": ["metric", "imperial"]},
            "hourly": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
            "location": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}},
            "lang": {"type": "string"},
            "user_id": {"type": "string"}
        }
    });
    let mut spec = ToolSpec::offline("get_forecast", "The weather forecast for a city.", schema);
    spec.inject = vec![toolgate::registry::Injection { param: "user_id".into(), from: "user_id".into() }];
    Catalog::new(vec![Arc::new(CompiledTool::compile(spec, &SchemaDocuments::default()).unwrap())])
}

/// What the executor does with a call before dispatch, policy included.
/// The tool's settings, as its `CompiledTool` and the executor hold them, parsed once.
struct Settings {
    limits: BudgetLimits,
    rule: RateRule,
    options: PipelineSettings,
}

fn one_call(catalog: &Catalog, policy: &Policy, call: &ToolCall, ctx: &CallContext, settings: &Settings) {
    let Settings { limits, rule, options } = settings;
    let session = SessionKey::new(&ctx.tenant, &ctx.session_id);
    policy.budgets.admit(&session, "get_forecast", limits).unwrap();
    let prepared = prepare(catalog, call, ctx, options).unwrap();
    let tool = ToolKey::new(&prepared.tool.spec.tenant, &prepared.tool.spec.name);
    policy.rates.check(&tool, rule, &ctx.user_id).unwrap();
    let permit = block_on(policy.concurrency.acquire(&tool, 64, None)).unwrap();
    drop(black_box((&prepared, permit)));
    policy.budgets.record(&session, "get_forecast", false);
}

fn benches(c: &mut Criterion) {
    let catalog = catalog();
    let policy = Policy::local(Clock::real(), PolicySettings::default());
    let ctx = CallContext {
        tenant: "acme".into(),
        user_id: "u-42".into(),
        session_id: "s-7f3a".into(),
        ..Default::default()
    };
    let limits =
        BudgetLimits { max_calls: Some(u32::MAX), max_tool_calls: Some(u32::MAX), max_consecutive_failures: Some(3) };
    // The fastest rate governor can time: far above what one core can call, so no check is refused.
    let rule = RateRule { rate: parse_rate("1000000000/s").unwrap(), burst: 0 };
    let settings = Settings { limits, rule, options: PipelineSettings::default() };
    let call =
        |arguments: &str| ToolCall { id: "call_1".into(), name: "get_forecast".into(), arguments: arguments.into() };
    let (valid, broken) = (call(VALID), call(BROKEN));
    let options = PipelineSettings::default();
    assert!(prepare(&catalog, &valid, &ctx, &options).unwrap().repairs.is_empty(), "the valid call passes through");
    assert_eq!(prepare(&catalog, &broken, &ctx, &options).unwrap().repairs.len(), 3, "syntax, a key and a number");

    c.bench_function("hot_path/pass", |b| b.iter(|| one_call(&catalog, &policy, black_box(&valid), &ctx, &settings)));
    c.bench_function("hot_path/repair", |b| {
        b.iter(|| one_call(&catalog, &policy, black_box(&broken), &ctx, &settings))
    });

    let prepared = prepare(&catalog, &broken, &ctx, &options).unwrap();
    let mut message = success_message(&broken, "get_forecast", VALID.into(), Some(VALID.into()));
    (message.repairs, message.effective_arguments) = (prepared.repairs, prepared.effective_arguments);
    c.bench_function("hot_path/encode_tool_message", |b| {
        b.iter(|| toolgate::pb::v1::ToolMessage::from(black_box(message.clone())).encode_to_vec())
    });
}

criterion_group!(group, benches);
criterion_main!(group);
