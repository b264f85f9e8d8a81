//! Owns issue 21's validation regressions: a recursive schema refused deep inside, backtracking patterns on long
//! strings, and PERMISSION_DENIED never quoting an injected value. Each bounded case answers with a capped
//! description, within 1 s of CPU and under 50 MB of RSS growth (the gateway runs in this process).

use crate::support;
use crate::support::alone;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::meter::{Meter, bounded};
use crate::support::{kind_of, start_gateway, status_of, temp_config};
use serde_json::{Value, json};
use std::sync::Arc;
use toolgate::pb::v1::{self as pb, ErrorKind as K, ToolStatus};
use toolgate::pipeline::{self, CallError, ParseLimits, violations};
use toolgate::registry::{CompiledTool, MAX_BACKTRACKING_SUBJECT, SchemaDocuments, ToolSpec};

/// Sends one call with a call id of its own: a repeated id would be answered with the first call's outcome.
async fn call(gw: &mut support::Gateway, name: &str, arguments: &str, context: pb::CallContext) -> pb::ToolMessage {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let id = format!("hardening-{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let call = pb::ToolCall { id, name: name.into(), arguments: arguments.into() };
    let request = pb::ExecuteRequest { call: Some(call), context: Some(context), ..Default::default() };
    gw.gateway.execute(request).await.expect("Execute answers with a message").into_inner().message.expect("a message")
}

/// The probe's tool: a recursive tree of three node kinds, `div` and `span` with children, `text` with text.
fn tree_schema() -> Value {
    let parent = |kind: &str| {
        json!({"type": "object", "required": ["kind"], "additionalProperties": false, "properties": {
            "kind": {"const": kind}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}})
    };
    let text = json!({"type": "object", "required": ["kind", "text"], "additionalProperties": false,
        "properties": {"kind": {"const": "text"}, "text": {"type": "string"}}});
    json!({"$defs": {"node": {"anyOf": [parent("div"), parent("span"), text]}},
        "type": "object", "required": ["root"], "properties": {"root": {"$ref": "#/$defs/node"}}})
}

/// Arguments nested `depth` nodes deep whose leaf is a text node with a number for its text: invalid there only.
fn deep_tree(depth: usize) -> String {
    let mut node = json!({"kind": "text", "text": 5});
    for level in 0..depth {
        node = json!({"kind": if level % 2 == 0 { "div" } else { "span" }, "children": [node]});
    }
    json!({"root": node}).to_string()
}

fn compiled(name: &str, schema: Value) -> Arc<CompiledTool> {
    let spec: ToolSpec = serde_json::from_value(
        json!({"name": name, "input_schema": schema, "backend": {"grpc": {"target": "http://127.0.0.1:1"}}}),
    )
    .unwrap();
    Arc::new(CompiledTool::compile(spec, &SchemaDocuments::default()).unwrap())
}

#[tokio::test]
async fn a_recursive_schema_refused_deep_inside_answers_within_bounds() {
    if !alone::in_own_process() {
        return; // it ran, and passed, in a process of its own: it measures the process
    }
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    for (name, repair) in [("tree", json!({"enabled": true})), ("tree_strict", json!({"enabled": false}))] {
        let spec = json!({"name": name, "input_schema": tree_schema(), "repair": repair,
            "backend": {"grpc": {"target": target}}});
        gw.register(spec).await.unwrap();
    }
    let valid = deep_tree(16).replace(r#""text":5"#, r#""text":"hi""#);
    assert_eq!(status_of(&call(&mut gw, "tree", &valid, Default::default()).await), ToolStatus::Success);

    for (name, depth) in [("tree", 12), ("tree", 16), ("tree_strict", 16), ("tree", 30)] {
        let arguments = deep_tree(depth);
        let m = bounded(&format!("{name} at depth {depth}"), call(&mut gw, name, &arguments, Default::default())).await;
        assert_eq!(kind_of(&m), K::InvalidArguments, "{m:?}");
        let error = m.error.unwrap();
        assert!(error.violations.len() <= violations::MAX_VIOLATIONS + 1, "{:?}", error.violations);
        if depth <= 16 {
            let leaf = error.violations.iter().find(|v| v.instance_path.ends_with("/children/0/text"));
            let leaf = leaf.unwrap_or_else(|| panic!("the leaf's own fault is named: {:#?}", error.violations));
            assert_eq!(leaf.message, r#"5 is not of type "string""#);
        } else {
            // Past the depth of branch detail kept, the alternative is named where the walk stopped.
            let [stop] = &error.violations[..] else { panic!("{:#?}", error.violations) };
            assert!(stop.instance_path.matches("/children/0").count() >= 16, "{stop:?}");
            assert!(stop.message.ends_with("is not valid under any of the schemas listed in the 'anyOf' keyword"));
        }
        assert!(m.content.len() < 4_000, "a sane message: {}", m.content);
    }
}

#[tokio::test]
async fn a_lookaround_pattern_on_a_long_string_is_refused_with_a_reason() {
    if !alone::in_own_process() {
        return; // it ran, and passed, in a process of its own: it measures the process
    }
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    let schema = json!({"type": "object", "required": ["password"],
        "properties": {"password": {"type": "string", "pattern": "(?=.*[0-9])(?=.*[a-z]).{8,}"}}});
    gw.register(json!({"name": "login", "input_schema": schema, "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();
    let password = |password: String| json!({"password": password}).to_string();

    assert_eq!(
        status_of(&call(&mut gw, "login", &password("hunter22x".into()), Default::default()).await),
        ToolStatus::Success
    );
    let longest = format!("a1{}", "A".repeat(MAX_BACKTRACKING_SUBJECT - 2));
    let m = call(&mut gw, "login", &password(longest), Default::default()).await;
    assert_eq!(status_of(&m), ToolStatus::Success, "the bound is inclusive: {:?}", m.error);
    let short_miss = call(&mut gw, "login", &password("NO-DIGITS-HERE".into()), Default::default()).await;
    assert_eq!(kind_of(&short_miss), K::InvalidArguments, "{short_miss:?}");

    for (what, length) in [("80k characters", 80_000), ("1 MB", 1_000_000)] {
        // Matching, and not: neither is checked past the bound, and neither is let through unchecked.
        for text in ["A".repeat(length), format!("a1{}", "A".repeat(length - 2))] {
            let m = bounded(what, call(&mut gw, "login", &password(text), Default::default())).await;
            assert_eq!(kind_of(&m), K::InvalidArguments, "{what}: {:?}", m.error);
            let error = m.error.unwrap();
            assert_eq!(error.violations.len(), 1, "{:?}", error.violations);
            assert_eq!(error.violations[0].instance_path, "/password");
            let message = &error.violations[0].message;
            assert!(message.contains("longer than 1000 characters") && message.len() < 300, "{message}");
        }
    }
}

#[tokio::test]
async fn pattern_properties_that_need_backtracking_are_refused_at_registration() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let schema = json!({"type": "object", "patternProperties": {"^(?!x-).*$": {"type": "string"}}});
    let spec =
        json!({"name": "headers", "input_schema": schema, "backend": {"grpc": {"target": "http://127.0.0.1:1"}}});
    let err = gw.register(spec).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("input_schema"), "{}", err.message());
}

#[tokio::test]
async fn permission_denied_names_the_source_and_parameter_never_the_value() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    let schema = json!({"type": "object", "required": ["amount", "user_id"], "properties": {
        "amount": {"type": "integer"}, "user_id": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8}}});
    let spec = json!({"name": "pay", "input_schema": schema, "inject": [{"param": "user_id", "from": "user_id"}],
        "backend": {"grpc": {"target": target}}});
    gw.register(spec).await.unwrap();
    let ctx = |user: &str| pb::CallContext { user_id: user.into(), ..Default::default() };
    assert_eq!(status_of(&call(&mut gw, "pay", r#"{"amount": 1}"#, ctx("alice")).await), ToolStatus::Success);

    let secret = "Mallory-SECRET-42";
    let denied = call(&mut gw, "pay", r#"{"amount": 1}"#, ctx(secret)).await;
    assert_eq!(kind_of(&denied), K::PermissionDenied, "{denied:?}");
    let message = denied.error.unwrap().message;
    assert!(message.contains("/user_id") && message.contains("context.user_id"), "{message}");
    assert!(!message.contains(secret) && !message.contains("Mallory"), "the value is quoted: {message}");
    assert!(!denied.content.contains("Mallory"), "{}", denied.content);
}

#[test]
fn a_reviewers_edit_is_described_within_bounds() {
    if !alone::in_own_process() {
        return; // it ran, and passed, in a process of its own: it measures the process
    }
    let tool = compiled("tree", tree_schema());
    let meter = Meter::start();
    let edit = pipeline::check_edit(&tool, &deep_tree(16), ParseLimits::default());
    let (spent, grown) = meter.finish();
    assert!(spent < 1.0 && grown < 50.0, "{spent:.2} s of CPU, {grown:.1} MB");
    let Err(CallError::Invalid(found)) = edit else { panic!("{edit:?}") };
    assert!(found.iter().any(|v| v.instance_path.ends_with("/text")), "{found:#?}");
}

#[test]
fn many_violations_are_capped_and_the_cap_is_said() {
    let tool = compiled(
        "numbers",
        json!({"type": "object", "properties": {"n": {"type": "array", "items": {"type": "integer"}}}}),
    );
    let arguments = json!({"n": vec!["x"; 200_000]});
    let found = pipeline::validate_arguments(&tool, &arguments);
    assert_eq!(found.len(), violations::MAX_VIOLATIONS + 1, "{found:#?}");
    assert!(found[..violations::MAX_VIOLATIONS].iter().all(|v| v.message == r#""x" is not of type "integer""#));
    assert!(found.last().unwrap().message.contains("not described"), "{:?}", found.last());
}
