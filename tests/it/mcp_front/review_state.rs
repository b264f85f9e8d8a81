//! Review on MCP 2026-07-28, with the official Python MCP SDK's client (2.x, `tests/mcp/front/review_state.py`):
//! a reviewed call answers `InputRequiredResult` with a sealed `requestState`, and the four cases of
//! envoyproxy/ai-gateway#2073 hold: an approved call runs exactly once; changed arguments, a changed policy, or an
//! expired state never run.

use super::{ALICE, decide, front, front_with, pending_of, transfer};
use crate::mcp_front_python::front_python;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::mcp::repo_root;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::Duration;
use toolgate::pb::v1::ReviewAction;

/// One leg: the Python host calls `transfer` as Alice with `arguments`, carrying `state` back if given.
async fn leg(url: &str, arguments: Value, state: Option<&str>) -> Value {
    leg_of(url, "transfer", arguments, state).await
}

/// One leg: the Python host calls `tool` with `arguments`, carrying `state` back if given.
pub(crate) async fn leg_of(url: &str, tool: &str, arguments: Value, state: Option<&str>) -> Value {
    let mut run = tokio::process::Command::new(front_python());
    run.arg(repo_root().join("tests/mcp/front/review_state.py")).args([url, ALICE, tool]);
    run.arg(arguments.to_string()).args(state).kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), run.output())
        .await
        .expect("the Python host finishes within a minute")
        .expect("the Python host runs");
    assert!(out.status.success(), "the Python host failed: {}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("the host's report is JSON");
    assert_eq!(report["version"], "2026-07-28", "{report}");
    report
}

pub(crate) fn state_of(report: &Value) -> String {
    assert_eq!(report["kind"], "input_required", "the call waits for its reviewer: {report}");
    report["state"].as_str().expect("a requestState").to_owned()
}

fn refused(report: &Value) {
    assert_eq!(report["kind"], "error", "{report}");
    assert_eq!(report["error"]["code"], -32602, "{report}");
    assert_eq!(report["error"]["message"], "Invalid or expired requestState", "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK 2.x in target/mcp-front-venv, which .ci/run makes (see tests/it/mcp_front_python.rs)"]
async fn an_approved_call_runs_once_and_changed_arguments_or_policy_never_run() {
    let (_dir, mut gw, url) = front().await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    gw.register(transfer(&target, "acme", json!({"review": {"required": true}}))).await.unwrap();
    let runs = || runtime.calls.load(Ordering::SeqCst);

    let state = state_of(&leg(&url, json!({"amount": 9}), None).await);
    state_of(&leg(&url, json!({"amount": 9}), Some(&state)).await);
    let pending = pending_of(&mut gw).await;
    assert_eq!((pending.len(), runs()), (1, 0), "one review, and nothing ran while it waits");
    decide(&mut gw, &pending[0].call_id, ReviewAction::Approve, "").await;

    // Changed arguments under the approved call's state.
    refused(&leg(&url, json!({"amount": 9000}), Some(&state)).await);
    let mut forged = state.clone();
    forged.insert(forged.len() / 2, 'x');
    refused(&leg(&url, json!({"amount": 9}), Some(&forged)).await);
    assert_eq!(runs(), 0, "neither ran");

    // The approved call, exactly once however often its state comes back.
    let ran = leg(&url, json!({"amount": 9}), Some(&state)).await;
    assert_eq!((ran["kind"].as_str(), ran["status"].as_str()), (Some("complete"), Some("SUCCESS")), "{ran}");
    assert_eq!(ran["structured"], json!({"amount": 9, "user_id": "alice"}));
    let again = leg(&url, json!({"amount": 9}), Some(&state)).await;
    assert_eq!(again["structured"], ran["structured"], "the outcome, kept: {again}");
    assert_eq!(runs(), 1, "the approved call ran once");

    // A changed policy: the tool's definition changes after the approval.
    let second = state_of(&leg(&url, json!({"amount": 10}), None).await);
    let pending = pending_of(&mut gw).await;
    assert_eq!(pending.len(), 1);
    decide(&mut gw, &pending[0].call_id, ReviewAction::Approve, "").await;
    let changed = json!({"review": {"required": true}, "description": "Moves money; now with a daily cap."});
    gw.register(transfer(&target, "acme", changed)).await.unwrap();
    refused(&leg(&url, json!({"amount": 10}), Some(&second)).await);
    state_of(&leg(&url, json!({"amount": 10}), None).await);
    assert_eq!(pending_of(&mut gw).await.len(), 1, "under the new policy the call is reviewed again");
    assert_eq!(runs(), 1, "approved under the old policy, not run under the new");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK 2.x in target/mcp-front-venv, which .ci/run makes (see tests/it/mcp_front_python.rs)"]
async fn an_expired_state_never_runs() {
    let (_dir, mut gw, url) = front_with(|config| config.mcp_front.request_state_ttl = Duration::from_secs(1)).await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    gw.register(transfer(&target, "acme", json!({"review": {"required": true}}))).await.unwrap();

    let state = state_of(&leg(&url, json!({"amount": 9}), None).await);
    let pending = pending_of(&mut gw).await;
    decide(&mut gw, &pending[0].call_id, ReviewAction::Approve, "").await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    refused(&leg(&url, json!({"amount": 9}), Some(&state)).await);
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 0, "an approved call whose state expired did not run");
}
