//! Policy rules on the pass path: one call's resolve, parse, validate and inject, then its rules judged on the
//! arguments that would run, with no rule against three typical ones (a threshold, a suffix, a search of a list),
//! none of which holds, so that every rule is evaluated and the call passes. Also a thousand rules, to tell the
//! cost of each rule that applies when a tool has many.
//!
//! Run: `cargo bench --bench rules -- --warm-up-time 1 --measurement-time 3`. Under `cargo test --benches` each
//! runs once, and the verdicts are checked.

/// The shipped binary's allocator (see `src/main.rs`), so the rules here cost what they cost there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use std::time::SystemTime;
use toolgate::pipeline::{CallContext, PipelineSettings, Prepared, ToolCall, prepare};
use toolgate::policy::rules::{Bindings, Input, PolicyRule, Rule, RuleAction, Verdict, compile_all, judge};
use toolgate::registry::{Catalog, CompiledTool, Injection, SchemaDocuments, ToolSpec};

/// About 200 bytes, valid, and held by none of the rules.
const CALL: &str = r#"{"amount": 250.0, "currency": "EUR", "to": "FR76 3000 6000 0112 3456 7890 189", "memo": "rent for November", "tags": ["rent", "monthly", "home"], "when": "2026-11-30"}"#;

fn rule(name: &str, when: &str, action: RuleAction) -> PolicyRule {
    PolicyRule {
        name: name.into(),
        when: when.into(),
        action,
        message: String::new(),
        on_error: Default::default(),
        model_fixable: false,
    }
}

/// Three rules of the kinds operators write first.
fn typical() -> Vec<PolicyRule> {
    vec![
        rule("large-transfer", "args.amount > 1000.0", RuleAction::Review),
        rule("no-offshore", "args.to.endsWith('.offshore') || args.currency == 'XBT'", RuleAction::Deny),
        rule("no-gambling", "args.tags.exists(t, t == 'casino')", RuleAction::Deny),
    ]
}

fn catalog(policy: Vec<PolicyRule>) -> Catalog {
    let schema = json!({
        "type": "object", "required": ["amount", "to", "user_id"],
        "properties": {
            "amount": {"type": "number"}, "currency": {"type": "string"}, "to": {"type": "string"},
            "memo": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
            "when": {"type": "string"}, "user_id": {"type": "string"}
        }
    });
    let mut spec = ToolSpec::offline("transfer", "Sends money.", schema);
    spec.inject = vec![Injection { param: "user_id".into(), from: "user_id".into() }];
    spec.policy = policy;
    Catalog::new(vec![Arc::new(CompiledTool::compile(spec, &SchemaDocuments::default()).unwrap())])
}

/// The pass path: prepare the call, then judge it by its tool's rules (none, for a tool without).
fn pass(catalog: &Catalog, call: &ToolCall, ctx: &CallContext) -> (Prepared, Verdict) {
    let prepared = prepare(catalog, call, ctx, &PipelineSettings::default()).unwrap();
    let rules = &prepared.tool.rules;
    if rules.is_empty() {
        return (prepared, Verdict::Pass);
    }
    // As the executor does: the rules' bound at the call's size decides whether they are judged off the workers.
    let n = u64::try_from(prepared.arguments_text.len()).unwrap();
    let work = rules.iter().fold(0u64, |acc, rule| acc.saturating_add(rule.work_bound(n, n)));
    assert!(work < 1 << 20, "a small call's rules are judged inline");
    let verdict = judge(rules, &Bindings::new(&input(&prepared, ctx)));
    (prepared, verdict)
}

fn input<'a>(prepared: &'a Prepared, ctx: &'a CallContext) -> Input<'a> {
    Input {
        args: &prepared.arguments,
        args_bytes: prepared.arguments_text.len(),
        user_id: &ctx.user_id,
        tenant: &ctx.tenant,
        session_id: &ctx.session_id,
        values: &ctx.values,
        tool: &prepared.tool.spec.name,
        labels: &prepared.tool.spec.labels,
        now: SystemTime::now(),
    }
}

fn benches(c: &mut Criterion) {
    let ctx = CallContext {
        tenant: "acme".into(),
        user_id: "u-42".into(),
        session_id: "s-7f3a".into(),
        ..Default::default()
    };
    let call = ToolCall { id: "call_1".into(), name: "transfer".into(), arguments: CALL.into() };
    let (none, three) = (catalog(Vec::new()), catalog(typical()));
    // Smoke checks: the call passes both, and each rule holds where it should.
    assert!(matches!(pass(&none, &call, &ctx).1, Verdict::Pass));
    assert!(matches!(pass(&three, &call, &ctx).1, Verdict::Pass));
    let offshore = ToolCall { arguments: CALL.replace("189\"", "189.offshore\""), ..call.clone() };
    assert!(matches!(pass(&three, &offshore, &ctx).1, Verdict::Deny { rule, .. } if &*rule.name == "no-offshore"));

    let mut group = c.benchmark_group("pass_path");
    group.bench_function("no_rules", |b| b.iter(|| black_box(pass(&none, black_box(&call), &ctx))));
    group.bench_function("three_rules", |b| b.iter(|| black_box(pass(&three, black_box(&call), &ctx))));
    group.finish();

    // A thousand rules none of which holds: what each rule that applies costs once the call is bound.
    let many: Vec<PolicyRule> =
        (0..1000).map(|i| rule(&format!("r{i}"), &format!("args.amount == {i}.5"), RuleAction::Deny)).collect();
    let many: Vec<Arc<Rule>> = compile_all(&many).unwrap();
    let (prepared, _) = pass(&none, &call, &ctx);
    assert!(matches!(judge(&many, &Bindings::new(&input(&prepared, &ctx))), Verdict::Pass));
    let mut group = c.benchmark_group("judge");
    let one = compile_all(&[rule("one", "args.amount == 1.5", RuleAction::Deny)]).unwrap();
    group.bench_function("one_rule", |b| b.iter(|| black_box(judge(&one, &Bindings::new(&input(&prepared, &ctx))))));
    group.bench_function("thousand_rules", |b| {
        b.iter(|| black_box(judge(&many, &Bindings::new(&input(&prepared, &ctx)))));
    });
    group.finish();
}

criterion_group!(group, benches);
criterion_main!(group);
