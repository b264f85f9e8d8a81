//! The MCP front door in cluster mode, on 2026-07-28: a reviewed call's sealed `requestState`, answered by one
//! gateway, opens on another (the key is shared through Redis), so a plain load balancer may send each leg anywhere.

use crate::mcp_front::{leg_of, state_of};
use crate::support;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::cluster::{Prefix, fleet::Node, redis_url};
use serde_json::json;
use std::sync::atomic::Ordering;
use std::time::Duration;
use toolgate::pb::v1 as pb;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379 and the Python MCP SDK 2.x in target/mcp-front-venv; .ci/run runs it"]
async fn a_reviewed_calls_state_from_one_gateway_opens_on_another() {
    let prefix = Prefix::new(&redis_url());
    let front = |addr| format!("[mcp_front]\nlisten = \"{addr}\"\n");
    let (front_a, front_b) = (support::free_addr(), support::free_addr());
    let mut a = Node::start(&redis_url(), &prefix.prefix, &front(front_a)).await;
    let mut b = Node::start(&redis_url(), &prefix.prefix, &front(front_b)).await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    let spec = json!({"name": "deploy", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}},
        "review": {"required": true}});
    a.register(spec).await.unwrap();
    support::eventually(Duration::from_secs(5), "registered on b", async || b.version("deploy").await.is_some()).await;

    let (url_a, url_b) = (format!("http://{front_a}/mcp"), format!("http://{front_b}/mcp"));
    let state = state_of(&leg_of(&url_a, "deploy", json!({"replicas": 3}), None).await);
    let pending = b.review.list_pending(pb::ListPendingRequest::default()).await.unwrap().into_inner().pending;
    assert_eq!(pending.len(), 1, "the review is the fleet's");
    let decide = pb::DecideRequest {
        call_id: pending[0].call_id.clone(),
        action: pb::ReviewAction::Approve.into(),
        reviewer: "cluster-test".into(),
        ..Default::default()
    };
    b.review.decide(decide).await.unwrap();
    let ran = leg_of(&url_b, "deploy", json!({"replicas": 3}), Some(&state)).await;
    assert_eq!((ran["kind"].as_str(), ran["status"].as_str()), (Some("complete"), Some("SUCCESS")), "{ran}");
    let again = leg_of(&url_a, "deploy", json!({"replicas": 3}), Some(&state)).await;
    assert_eq!(again["status"], "SUCCESS", "{again}");
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 1, "ran once, whichever gateway the legs reached");
}
