//! `subscriptions/listen` on MCP 2026-07-28, read off the wire: the acknowledgment first, then a registry change as
//! `notifications/tools/list_changed` tagged with the subscription, and nothing the host did not ask for.

use super::{ALICE, front, transfer};
use crate::support::backends::{Runtime, start_runtime};
use futures::StreamExt;
use serde_json::{Value, json};
use std::time::Duration;

/// Opens a listen for `notifications` and returns its stream of JSON-RPC messages.
async fn listen(url: &str, notifications: Value) -> impl futures::Stream<Item = Value> {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
                      "params": {"_meta": meta, "notifications": notifications}});
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(ALICE)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let mut pending = String::new();
    response.bytes_stream().flat_map(move |chunk| {
        pending.push_str(&String::from_utf8_lossy(&chunk.expect("the stream goes on")));
        let mut messages = Vec::new();
        while let Some(end) = pending.find('\n') {
            let line: String = pending.drain(..=end).collect();
            if let Some(data) = line.trim().strip_prefix("data:")
                && let Ok(message) = serde_json::from_str::<Value>(data.trim())
            {
                messages.push(message);
            }
        }
        futures::stream::iter(messages)
    })
}

async fn next(stream: &mut (impl futures::Stream<Item = Value> + Unpin), within: Duration) -> Option<Value> {
    tokio::time::timeout(within, stream.next()).await.ok().flatten()
}

const WAIT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_listen_hears_of_a_registration_and_only_of_what_it_asked_for() {
    let (_dir, mut gw, url) = front().await;
    let target = start_runtime(Runtime::default()).await;
    let mut tools = Box::pin(listen(&url, json!({"toolsListChanged": true})).await);
    let mut prompts = Box::pin(listen(&url, json!({"promptsListChanged": true})).await);
    for stream in [&mut tools, &mut prompts] {
        let ack = next(stream, WAIT).await.expect("an acknowledgment");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "first: {ack}");
    }

    gw.register(transfer(&target, "acme", json!({}))).await.unwrap();
    let told = next(&mut tools, WAIT).await.expect("a change heard");
    assert_eq!(told["method"], "notifications/tools/list_changed", "{told}");
    assert_eq!(told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7, "{told}");
    // Sent at the same moment as the one above, had it been sent: half a second is long enough to see it.
    let leaked = next(&mut prompts, Duration::from_millis(500)).await;
    assert!(leaked.is_none(), "a listen for prompts hears nothing of tools: {leaked:?}");
}
