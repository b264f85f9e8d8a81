//! Issue 21, items 5, 6 and 7d, over real gRPC with a real backend that echoes what it received: no spelling of
//! an injected parameter reaches the tool, repair's cost is bounded, and JSON nested too deep in a string is
//! refused.

use crate::support::alone;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::meter::{cpu_seconds, status_mb};
use crate::support::{Gateway, kind_of, start_gateway, status_of, temp_config};
use serde_json::{Value, json};
use toolgate::pb::v1::{self as pb, ErrorKind as K, ToolStatus};

async fn gateway() -> (tempfile::TempDir, Gateway, String) {
    let (dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    gw.gateway = gw.gateway.max_decoding_message_size(usize::MAX);
    (dir, gw, start_runtime(Runtime::default()).await)
}

/// Calls `name` under a call id of its own: the gateway answers a repeated id with the first call's outcome.
async fn call_as(gw: &mut Gateway, name: &str, arguments: &str, context: pb::CallContext) -> pb::ToolMessage {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let id = format!("hardening-{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let call = pb::ToolCall { id, name: name.into(), arguments: arguments.into() };
    let request = pb::ExecuteRequest { call: Some(call), context: Some(context), ..Default::default() };
    gw.gateway.execute(request).await.expect("Execute answers with a message").into_inner().message.expect("a message")
}

fn alice() -> pb::CallContext {
    pb::CallContext { user_id: "alice".into(), ..Default::default() }
}

/// What the echo backend received, as text (so duplicate spellings stay visible) and as a value.
fn received(m: &pb::ToolMessage) -> Value {
    assert_eq!(status_of(m), ToolStatus::Success, "{m:?}");
    serde_json::from_str(&m.structured).unwrap()
}

fn overrides(m: &pb::ToolMessage) -> Vec<(&str, &str)> {
    let removed = m.repairs.iter().filter(|r| r.rule == "injected_override_removed");
    removed.map(|r| (r.path.as_str(), r.before.as_str())).collect()
}

/// An account whose owner the gateway sets; both objects take extra keys.
fn account_tool(target: &str) -> Value {
    json!({
        "name": "account_note",
        "input_schema": {"type": "object", "properties": {
            "account": {"type": "object", "properties": {"owner": {"type": "string"}, "note": {"type": "string"}}}}},
        "inject": [{"param": "/account/owner", "from": "user_id"}],
        "backend": {"grpc": {"target": target}},
    })
}

fn user_tool(target: &str, required: &[&str]) -> Value {
    json!({
        "name": "user_note",
        "input_schema": {"type": "object", "required": required,
            "properties": {"user_id": {"type": "string"}, "q": {"type": "string"}}},
        "inject": [{"param": "user_id", "from": "user_id"}],
        "backend": {"grpc": {"target": target}},
    })
}

#[tokio::test]
async fn a_nested_injected_parameter_spelled_otherwise_never_reaches_the_backend() {
    let (_dir, mut gw, target) = gateway().await;
    gw.register(account_tool(&target)).await.unwrap();

    let m = call_as(&mut gw, "account_note", r#"{"account": {"Owner": "mallory"}}"#, alice()).await;
    assert_eq!(received(&m), json!({"account": {"owner": "alice"}}), "{}", m.structured);
    assert_eq!(overrides(&m), [("/account/Owner", "\"mallory\"")]);

    // On objects that take extra keys, a parent spelled otherwise is looked into as well.
    let m = call_as(
        &mut gw,
        "account_note",
        r#"{"Account": {"OWNER": "m1", "note": "hi"}, "account": {"owner": "m2"}}"#,
        alice(),
    );
    let m = m.await;
    assert_eq!(received(&m), json!({"Account": {"note": "hi"}, "account": {"owner": "alice"}}), "{}", m.structured);
    assert_eq!(overrides(&m), [("/account/owner", "\"m2\""), ("/Account/OWNER", "\"m1\"")]);
}

#[tokio::test]
async fn double_encoded_and_wrapped_overrides_are_stripped_after_repair() {
    let (_dir, mut gw, target) = gateway().await;
    gw.register(user_tool(&target, &[])).await.unwrap();

    let m = call_as(&mut gw, "user_note", r#""{\"UserId\": \"mallory\"}""#, alice()).await;
    assert_eq!(received(&m), json!({"user_id": "alice"}), "{}", m.structured);
    let rules: Vec<_> = m.repairs.iter().map(|r| (r.rule.as_str(), r.path.as_str())).collect();
    assert_eq!(rules, [("double_encoded", ""), ("injected_override_removed", "/UserId")]);

    // A wrapper around the arguments, valid as sent because the schema takes extra keys.
    let m = call_as(&mut gw, "user_note", r#"{"arguments": {"user-id": "mallory", "q": "x"}}"#, alice()).await;
    assert_eq!(received(&m), json!({"arguments": {"q": "x"}, "user_id": "alice"}), "{}", m.structured);
    assert_eq!(overrides(&m), [("/arguments/user-id", "\"mallory\"")]);

    // Unwrapped by repair (the schema requires `q`), then stripped.
    gw.register(user_tool(&target, &["q"])).await.unwrap();
    let m =
        call_as(&mut gw, "user_note", r#"{"arguments": "{\"user id\": \"mallory\", \"q\": \"x\"}"}"#, alice()).await;
    assert_eq!(received(&m), json!({"q": "x", "user_id": "alice"}), "{}", m.structured);
    assert_eq!(overrides(&m), [("/user id", "\"mallory\"")]);

    // Pass-through: a valid call with nothing to strip is sent as the model wrote it.
    let honest = call_as(&mut gw, "user_note", r#"{ "q" :"x" }"#, alice()).await;
    assert!(honest.repairs.is_empty(), "{:?}", honest.repairs);
    assert_eq!(honest.effective_arguments, r#"{ "q" :"x" }"#);
}

#[tokio::test]
async fn a_string_of_json_nested_past_the_limit_is_refused_not_wrapped() {
    let (_dir, mut gw, target) = gateway().await;
    let schema = json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}});
    gw.register(json!({"name": "tag", "input_schema": schema, "backend": {"grpc": {"target": target}}})).await.unwrap();

    let shallow = json!({"tags": "[\"a\", \"b\"]"}).to_string();
    assert_eq!(received(&call_as(&mut gw, "tag", &shallow, alice()).await), json!({"tags": ["a", "b"]}));

    let deep = json!({"tags": format!("{}\"a\"{}", "[".repeat(70), "]".repeat(70))}).to_string();
    let m = call_as(&mut gw, "tag", &deep, alice()).await;
    assert_eq!(kind_of(&m), K::MalformedArguments, "{m:?}");
    assert!(m.content.contains("/tags is a string holding JSON nested past the limit of 64 levels"), "{}", m.content);
}

/// The CPU bound of a bounded case: 1 s, and 5 s in an unoptimised build, which runs ~10× slower.
const CPU_BOUND_S: f64 = if cfg!(debug_assertions) { 5.0 } else { 1.0 };

async fn bounded(gw: &mut Gateway, name: &str, arguments: &str) -> pb::ToolMessage {
    let (cpu, rss) = (cpu_seconds(), status_mb("VmRSS:"));
    let m = call_as(gw, name, arguments, pb::CallContext::default()).await;
    let (cpu, rss) = (cpu_seconds() - cpu, status_mb("VmRSS:") - rss);
    eprintln!("{name}: {cpu:.2} s of CPU, RSS {rss:+.1} MB");
    assert!(cpu < CPU_BOUND_S, "{name} took {cpu:.2} s of CPU, over {CPU_BOUND_S} s");
    assert!(rss < 50.0, "{name} grew RSS by {rss:.1} MB");
    m
}

#[tokio::test]
async fn repair_cost_is_bounded_by_tables_and_a_budget() {
    if !alone::in_own_process() {
        return; // it ran, and passed, in a process of its own: it measures the process
    }
    let (_dir, mut gw, target) = gateway().await;
    let tool = |name: &str, schema: Value| json!({"name": name, "input_schema": schema, "backend": {"grpc": {"target": target}}});

    // 40k near-miss items against a 2,000-value enum: each one matched through a table, not a scan.
    let members: Vec<String> = (0..2000).map(|i| format!("v{i}")).collect();
    let schema = json!({"type": "object", "properties": {"items": {"type": "array", "items": {"enum": members}}}});
    gw.register(tool("pick", schema)).await.unwrap();
    let items: Vec<String> = (0..40_000).map(|i| format!("V{}", i % 2000)).collect();
    let m = bounded(&mut gw, "pick", &json!({"items": items}).to_string()).await;
    assert_eq!(m.repairs.len(), 40_000);
    assert_eq!(received(&m)["items"][1999], "v1999");

    // 30k misspelled keys against 1,000 properties: each looked up, and refused as unknown.
    let props: serde_json::Map<String, Value> =
        (0..1000).map(|i| (format!("prop_{i:04}"), json!({"type": "string"}))).collect();
    let schema = json!({"type": "object", "properties": props, "additionalProperties": false});
    gw.register(tool("wide", schema)).await.unwrap();
    let keys: serde_json::Map<String, Value> = (0..30_000).map(|i| (format!("misspelt_{i:05}"), json!("x"))).collect();
    let m = bounded(&mut gw, "wide", &Value::Object(keys).to_string()).await;
    assert_eq!(kind_of(&m), K::InvalidArguments, "{}", m.content);

    // One long string wanted as an array 60 deep: each level would record the whole string again.
    let mut nested = json!({"type": "string"});
    for _ in 0..60 {
        nested = json!({"type": "array", "items": nested});
    }
    gw.register(tool("deep", json!({"type": "object", "properties": {"v": nested}}))).await.unwrap();
    let m = bounded(&mut gw, "deep", &json!({"v": "x".repeat(600_000)}).to_string()).await;
    assert_eq!(kind_of(&m), K::MalformedArguments, "{}", &m.content[..m.content.len().min(300)]);
    assert!(m.content.contains("too large to repair"), "{}", m.content);
}
