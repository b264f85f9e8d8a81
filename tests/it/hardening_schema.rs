//! Owns issue 47's schema and pattern regressions: `$ref` chains refused when a schema is compiled (D10, D11),
//! the deepest schema allowed checked on a worker's stack, one budget of backtracking per call (D12), and a
//! pattern check that cannot finish refusing the call inside `not` too (D13).

use crate::support;
use crate::support::alone;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::meter::{Meter, bounded};
use crate::support::{kind_of, start_gateway, status_of, temp_config};
use serde_json::{Value, json};
use std::sync::Arc;
use toolgate::pb::v1::{ErrorKind as K, ToolStatus};
use toolgate::pipeline::{self, CallError, ParseLimits};
use toolgate::registry::{CompiledTool, MAX_CHAIN, SchemaDocuments, ToolSpec};

/// The probe's schema: `x` is the start of a chain of `hops` `$ref`s ending at a boolean.
fn ref_chain(hops: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..hops {
        defs.insert(format!("r{i}"), json!({"$ref": format!("#/$defs/r{}", i + 1)}));
    }
    defs.insert(format!("r{hops}"), json!({"type": "boolean"}));
    json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/r0"}}, "$defs": defs})
}

fn spec(name: &str, input: Value, output: Option<Value>, target: &str) -> Value {
    let mut spec = json!({"name": name, "input_schema": input, "backend": {"grpc": {"target": target}}});
    if let Some(output) = output {
        spec["output_schema"] = output;
    }
    spec
}

#[tokio::test]
async fn a_ref_chain_is_refused_at_registration_as_input_or_output_schema() {
    if !alone::in_own_process() {
        return; // it ran, and passed, in a process of its own: it measures the process
    }
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    for hops in [5_000, 3_000, MAX_CHAIN + 1] {
        for (field, input, output) in [
            ("input_schema", ref_chain(hops), None),
            ("output_schema", json!({"type": "object"}), Some(ref_chain(hops))),
        ] {
            let refused = gw.register(spec("chain", input, output, &target)).await.unwrap_err();
            assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{hops} hops in {field}: {refused:?}");
            assert!(refused.message().contains(field), "{}", refused.message());
            assert!(refused.message().contains(&format!("chains more than {MAX_CHAIN}")), "{}", refused.message());
        }
    }
    let m = gw.call("chain", r#"{"x": 1}"#).await;
    assert_eq!(kind_of(&m), K::ToolNotFound, "nothing was registered: {m:?}");
    // The longest chain allowed registers, and its invalid calls are cheap.
    gw.register(spec("chain", ref_chain(MAX_CHAIN - 1), None, &target)).await.unwrap();
    for _ in 0..3 {
        let m = bounded("an invalid call on the longest chain", gw.call("chain", r#"{"x": 1}"#)).await;
        assert_eq!(kind_of(&m), K::InvalidArguments, "{m:?}");
    }
    assert_eq!(status_of(&gw.call("chain", r#"{"x": true}"#).await), ToolStatus::Success);
}

/// The deepest shape allowed at every level of the deepest value allowed: a recursive node whose member is
/// reached through links alternating `$ref`, `allOf` and `anyOf`, `MAX_CHAIN` schema nodes deep in all.
fn deepest_schema() -> Value {
    let mut defs = serde_json::Map::new();
    // The member's own `$ref` to the first link is one node of the chain.
    let (mut links, mut chained) = (0, 1);
    loop {
        let next = json!({"$ref": format!("#/$defs/l{}", links + 1)});
        // An `allOf` or `anyOf` link is two nodes: the applicator's branch, then its `$ref`.
        let (link, nodes) = match links % 3 {
            0 => (next, 1),
            1 => (json!({"allOf": [next]}), 2),
            _ => (json!({"anyOf": [{"type": "null"}, next]}), 2),
        };
        if chained + nodes > MAX_CHAIN {
            break;
        }
        defs.insert(format!("l{links}"), link);
        (links, chained) = (links + 1, chained + nodes);
    }
    defs.insert(format!("l{links}"), json!({"type": "object", "properties": {"c": {"$ref": "#/$defs/l0"}}}));
    json!({"type": "object", "$ref": "#/$defs/l0", "$defs": defs})
}

#[test]
fn the_deepest_schema_allowed_checks_the_deepest_value_on_a_workers_stack() {
    let limits = ParseLimits::default();
    let mut value = json!({"c": 5});
    for _ in 0..limits.max_depth - 2 {
        value = json!({"c": value});
    }
    let (invalid, valid) = (value.to_string(), value.to_string().replace("5", "{}"));
    // tokio's worker threads have 2 MiB of stack; the check must fit it with room to spare.
    let checked = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || {
            let spec: ToolSpec = serde_json::from_value(
                json!({"name": "deep", "input_schema": deepest_schema(), "backend": {"worker": {}}}),
            )
            .unwrap();
            let tool = Arc::new(CompiledTool::compile(spec, &SchemaDocuments::default()).unwrap());
            (pipeline::check_edit(&tool, &invalid, limits), pipeline::check_edit(&tool, &valid, limits).is_ok())
        })
        .unwrap()
        .join()
        .expect("the check returns: no stack overflow");
    let (Err(CallError::Invalid(found)), true) = checked else { panic!("{checked:?}") };
    // The description follows nested alternatives only so deep, then names the one where it stopped.
    assert!(found.iter().any(|v| v.instance_path.starts_with("/c/c")), "{found:#?}");
}

/// A gateway with one tool `p` of `schema`.
async fn gateway_with(schema: Value) -> (tempfile::TempDir, support::Gateway) {
    let (dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(spec("p", schema, None, &target)).await.unwrap();
    (dir, gw)
}

#[tokio::test]
async fn many_short_strings_on_a_catastrophic_pattern_spend_one_budget_and_are_refused() {
    if !alone::in_own_process() {
        return; // it ran, and passed, in a process of its own: it measures the process
    }
    let items = json!({"anyOf": [{"type": "string", "pattern": "^(a|a)+\\1$"}, {"type": "string"}]});
    let schema = json!({"type": "object", "properties": {"s": {"type": "array", "items": items}}});
    let strings = vec![format!("{}b", "a".repeat(24)); 500];
    let arguments = json!({"s": strings}).to_string();
    assert!(arguments.len() < 16 * 1024, "under the CPU pool's threshold, as the probe sent it");
    let (_dir, mut gw) = gateway_with(schema).await;
    let meter = Meter::start();
    let m = gw.call("p", &arguments).await;
    let (spent, _) = meter.finish();
    eprintln!("500 strings on a catastrophic pattern: {spent:.2} s of CPU");
    // About ten matches at the full limit: 0.7 s in a debug build, 20 ms in release. Without the budget the
    // same call made a thousand, a second in release and over a minute here.
    assert!(spent < 5.0, "{spent:.2} s of CPU for one call: the budget bounds it");
    assert_eq!(kind_of(&m), K::InvalidArguments, "{m:?}");
    let error = m.error.unwrap();
    let unfinished = "a string could not be checked against the pattern";
    assert!(error.violations.iter().any(|v| v.message.starts_with(unfinished)), "{:#?}", error.violations);
}

#[tokio::test]
async fn a_deny_list_pattern_that_cannot_finish_refuses_rather_than_passes() {
    let deny = json!({"type": "object", "properties": {"html": {"type": "string",
        "not": {"pattern": "(?i)<(\\w+)[^>]*>.*</\\1>"}}}});
    let attack = format!("{}<b>x</b>", "<a ".repeat(300));
    let (_dir, mut gw) = gateway_with(deny).await;
    let m = gw.call("p", &json!({"html": attack}).to_string()).await;
    assert_eq!(kind_of(&m), K::InvalidArguments, "a check that cannot finish never passes: {m:?}");
    let reasons: Vec<&str> = m.error.as_ref().unwrap().violations.iter().map(|v| v.message.as_str()).collect();
    assert!(reasons.iter().any(|r| r.contains("could not be checked")), "{reasons:#?}");
    // What the check can decide, it decides: plain text passes, a closed tag is refused as not allowed.
    let plain = gw.call("p", r#"{"html": "a < b and c > d"}"#).await;
    assert_eq!(status_of(&plain), ToolStatus::Success, "{plain:?}");
    let tagged = gw.call("p", r#"{"html": "<i>x</i>"}"#).await;
    assert_eq!(kind_of(&tagged), K::InvalidArguments, "{tagged:?}");
}
