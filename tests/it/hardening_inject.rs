//! Owns issue 47's regressions of what reaches a tool: a declared property is never unwrapped as a wrapper and
//! injected spellings are stripped from what repair produced, look-alike keys of an injected parameter are
//! stripped after Unicode folding (D25), `-0` stays an integer (D26), and a key written twice is refused (D17).

use crate::support::backends::{Runtime, start_runtime};
use crate::support::{Gateway, kind_of, start_gateway, status_of, temp_config};
use serde_json::{Value, json};
use toolgate::pb::v1::{self as pb, ErrorKind as K, ToolStatus};

async fn gateway(spec: Value) -> (tempfile::TempDir, Gateway) {
    let (dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    let mut spec = spec;
    spec["backend"] = json!({"grpc": {"target": target}});
    gw.register(spec).await.unwrap();
    (dir, gw)
}

fn alice() -> pb::CallContext {
    pb::CallContext { user_id: "alice".into(), ..Default::default() }
}

/// What the echo backend received, as JSON text exactly.
fn received(m: &pb::ToolMessage) -> String {
    assert_eq!(status_of(m), ToolStatus::Success, "{m:?}");
    m.structured.clone()
}

/// A profile whose owner the gateway sets; every object takes extra keys.
fn profile_tool() -> Value {
    json!({"name": "profile", "input_schema": {"type": "object", "properties": {
        "profile": {"type": "object", "properties": {"note": {"type": "string"}, "owner_id": {"type": "string"}}}}},
        "inject": [{"param": "/profile/owner_id", "from": "user_id"}]})
}

#[tokio::test]
async fn a_declared_property_is_never_unwrapped_and_what_repair_decoded_is_stripped() {
    let (_dir, mut gw) = gateway(profile_tool()).await;
    let m = gw.call_as("profile", r#""{\"profile\": {\"note\": \"hi\"}}""#, alice()).await;
    assert_eq!(received(&m), r#"{"profile":{"note":"hi","owner_id":"alice"}}"#, "decoded, never unwrapped");
    let m = gw.call_as("profile", r#""{\"profile\": {\"Owner_Id\": \"mallory\"}}""#, alice()).await;
    let got = received(&m);
    assert!(!got.contains("mallory"), "a model-written owner never reaches the tool: {got}");
    assert_eq!(got, r#"{"profile":{"owner_id":"alice"}}"#);
}

#[tokio::test]
async fn a_property_declared_in_an_alternative_is_never_unwrapped() {
    let spec = json!({"name": "either", "input_schema": {"type": "object", "anyOf": [
        {"properties": {"profile": {"type": "object"}}, "required": ["profile"]},
        {"properties": {"note": {"type": "string"}}, "required": ["note"]}]}});
    let (_dir, mut gw) = gateway(spec).await;
    let m = gw.call("either", r#""{\"profile\": {\"note\": \"hi\"}}""#).await;
    assert_eq!(received(&m), r#"{"profile":{"note":"hi"}}"#, "decoded, and profile kept: {:?}", m.repairs);
}

#[tokio::test]
async fn look_alike_spellings_of_an_injected_parameter_never_reach_the_tool() {
    let (_dir, mut gw) = gateway(profile_tool()).await;
    // Cyrillic і, fullwidth letters, dotless ı, a zero-width space, and the parameter's path as one key.
    let spellings = ["owner_\u{456}d", "ｏｗｎｅｒ_ｉｄ", "owner_\u{131}d", "owner_id\u{200b}", "Ｏwner_\u{406}D"];
    for key in spellings {
        let arguments = json!({"profile": {"note": "hi", key: "mallory"}}).to_string();
        let got = received(&gw.call_as("profile", &arguments, alice()).await);
        assert!(!got.contains("mallory"), "{key:?} reached the tool: {got}");
    }
    for key in ["/profile/owner_id", "profile.owner_id", "/Profile/Owner_\u{456}d"] {
        let arguments = json!({"profile": {"note": "hi"}, key: "mallory"}).to_string();
        let got = received(&gw.call_as("profile", &arguments, alice()).await);
        assert!(!got.contains("mallory"), "{key:?} reached the tool: {got}");
    }
    let long_s = json!({"profile": {"note": "hi", "owner_\u{17f}": "x"}, "acc\u{17f}": 1}).to_string();
    assert!(received(&gw.call_as("profile", &long_s, alice()).await).contains("\u{17f}"), "other keys stay");
}

#[tokio::test]
async fn minus_zero_reaches_a_tool_with_injection_as_an_integer() {
    let spec = json!({"name": "count", "input_schema": {"type": "object", "properties": {
        "n": {"type": "integer"}, "user": {"type": "string"}}}, "inject": [{"param": "user", "from": "user_id"}]});
    let (_dir, mut gw) = gateway(spec).await;
    let got = received(&gw.call_as("count", r#"{"n": -0}"#, alice()).await);
    assert_eq!(got, r#"{"n":0,"user":"alice"}"#);
}

#[tokio::test]
async fn a_key_written_twice_is_refused_so_no_reader_sees_another_value() {
    let spec = json!({"name": "pay", "input_schema": {"type": "object", "properties": {
        "amount": {"type": "integer", "maximum": 1000}}}});
    let (_dir, mut gw) = gateway(spec).await;
    for arguments in
        [r#"{"amount": 5000, "amount": 10}"#, r#"{"amount": 10, "amount": 10}"#, "{'amount': 5000, 'amount': 10}"]
    {
        let m = gw.call("pay", arguments).await;
        assert_eq!(kind_of(&m), K::MalformedArguments, "{arguments}: {m:?}");
        let message = &m.error.as_ref().unwrap().message;
        assert!(message.contains(r#"the key "amount" appears twice"#), "{message}");
    }
    assert_eq!(received(&gw.call("pay", r#"{"amount": 10}"#).await), r#"{"amount": 10}"#);
}
