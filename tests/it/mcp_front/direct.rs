//! The front door's direct path over real HTTP: a plain 2026-07-28 `tools/call` of a tool on a gRPC runtime is
//! answered byte for byte as the SDK answers the same call (which it serves when `Accept` carries a weight), and
//! it is held to the same rules: Host checked, tools of other tenants missing, injected values never the model's.
//! Which requests the path takes is `src/mcp_front/direct/shape.rs`'s unit tests.

use super::{ALICE, BOB, front, transfer};
use crate::support::backends::{Runtime, start_runtime};
use serde_json::{Value, json};
use std::sync::atomic::Ordering;

/// A 2026-07-28 `tools/call` of `name` with `arguments`, with a progress token when `progress`, as rmcp's hosts
/// send one on every request.
pub(super) fn call(name: &str, arguments: Value, progress: bool) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "direct-test", "version": "1"},
    });
    if progress {
        meta["progressToken"] = json!("p");
    }
    let params = json!({"name": name, "arguments": arguments, "_meta": meta});
    json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": params})
}

/// The `Accept` of a plain call, and one with weights, which the direct path leaves to the SDK.
pub(super) const PLAIN: &str = "application/json, text/event-stream";
pub(super) const WEIGHED: &str = "application/json;q=0.9, text/event-stream";

/// Posts `body` as `token` with the standard headers and `accept`, `host` overriding the `Host` one: the status,
/// the content type, and the body as text.
pub(super) async fn post_as(
    url: &str,
    token: &str,
    body: &Value,
    accept: &str,
    host: Option<&str>,
) -> (u16, String, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", accept)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", body["params"]["name"].as_str().unwrap())
        .json(body);
    if let Some(host) = host {
        request = request.header("host", host);
    }
    let response = request.send().await.expect("the front door answers");
    let status = response.status().as_u16();
    let kind = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    (status, kind, response.text().await.unwrap())
}

async fn post(url: &str, token: &str, body: &Value, host: Option<&str>) -> (u16, String, String) {
    post_as(url, token, body, PLAIN, host).await
}

fn result(answer: &(u16, String, String)) -> Value {
    assert_eq!((answer.0, answer.1.as_str()), (200, "application/json"), "{}", answer.2);
    let message: Value = serde_json::from_str(&answer.2).unwrap();
    assert_eq!(message["id"], 41, "{message}");
    message["result"].clone()
}

#[tokio::test]
async fn a_plain_call_is_answered_byte_for_byte_as_the_sdk_answers_it() {
    let (_dir, mut gw, url) = front().await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    gw.register(transfer(&target, "acme", json!({}))).await.unwrap();

    let cases = [
        ("runs", json!({"amount": 3})),
        ("repaired", json!({"amount": "3"})),
        ("invalid", json!({"amount": "three"})),
        ("sets an injected value", json!({"amount": 3, "user_id": "mallory"})),
    ];
    for (case, arguments) in cases {
        for progress in [false, true] {
            let body = call("transfer", arguments.clone(), progress);
            let direct = post_as(&url, ALICE, &body, PLAIN, None).await;
            let sdk = post_as(&url, ALICE, &body, WEIGHED, None).await;
            assert_eq!(direct, sdk, "{case}, progress {progress}: the same answer by both paths");
        }
    }
    let ran = result(&post(&url, ALICE, &call("transfer", json!({"amount": 3}), false), None).await);
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(ran["structuredContent"], json!({"amount": 3, "user_id": "alice"}), "user_id is the caller's");
    let invalid = result(&post(&url, ALICE, &call("transfer", json!({"amount": "three"}), false), None).await);
    assert_eq!(invalid["isError"], true, "{invalid}");
    let meta = &invalid["_meta"]["dev.toolgate/call"];
    assert_eq!(meta["error"]["kind"], "INVALID_ARGUMENTS", "{meta}");
    let mallory = call("transfer", json!({"amount": 3, "user_id": "mallory"}), false);
    let overridden = result(&post(&url, ALICE, &mallory, None).await);
    assert_eq!(overridden["structuredContent"], json!({"amount": 3, "user_id": "alice"}), "never the model's");
    // Three cases ran twice by each path, and twice more here; the invalid call never ran.
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 3 * 4 + 2);
}

#[tokio::test]
async fn a_plain_call_is_held_to_the_hosts_and_the_tenants_of_the_door() {
    let (_dir, mut gw, url) = front().await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(transfer(&target, "acme", json!({}))).await.unwrap();

    let rebound = post(&url, ALICE, &call("transfer", json!({"amount": 1}), false), Some("evil.example")).await;
    assert_eq!(rebound.0, 403, "a Host not on the list: {}", rebound.2);

    let theirs = result(&post(&url, BOB, &call("transfer", json!({"amount": 1}), false), None).await);
    let missing = result(&post(&url, BOB, &call("nothing", json!({"amount": 1}), false), None).await);
    assert_eq!(theirs["isError"], true, "{theirs}");
    let (theirs, missing) =
        (&theirs["_meta"]["dev.toolgate/call"]["error"], &missing["_meta"]["dev.toolgate/call"]["error"]);
    assert_eq!((&theirs["kind"], &theirs["suggestions"]), (&missing["kind"], &missing["suggestions"]), "{theirs}");

    let anonymous = reqwest::Client::new().post(&url).json(&call("transfer", json!({}), false)).send().await.unwrap();
    assert_eq!(anonymous.status(), 401, "no token, no call");
}
