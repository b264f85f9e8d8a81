//! Resources and prompts through the front door: the imported MCP servers' own, as the caller's tenant may see
//! them (a server of another tenant is not there), prompts named as the server's tools are, read and got from
//! the server that has them; and a tool's progress reaching the host that asked for it, before the result.

use super::{ALICE, BOB, client, front_with};
use crate::support::mcp::{CONNECT_TIMEOUT, stdio_command};
use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams, ResourceContents};
use serde_json::json;
use toolgate::backend::mcp::McpServerSpec;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn a_host_reads_its_tenants_resources_and_gets_its_prompts_and_no_other_tenants() {
    let (command, args) = stdio_command();
    let server: McpServerSpec =
        serde_json::from_value(json!({"name": "memo", "command": command, "args": args, "tenant": "acme"})).unwrap();
    let (_dir, _gw, url) = front_with(|config| {
        config.connect_timeout = CONNECT_TIMEOUT;
        config.mcp_servers = vec![server];
    })
    .await;
    let alice = client(&url, ALICE).await;
    let mut resources = alice.list_all_resources().await.unwrap();
    for _ in 0..300 {
        if !resources.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await; // the server is still connecting
        resources = alice.list_all_resources().await.unwrap();
    }
    assert_eq!(resources.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(), ["memo://greeting"]);
    let read = alice.read_resource(ReadResourceRequestParams::new("memo://greeting")).await.unwrap();
    assert!(
        matches!(&read.contents[..], [ResourceContents::TextResourceContents { text, .. }] if text == "hello from the memo server"),
        "{read:?}"
    );
    let templates = alice.list_all_resource_templates().await.unwrap();
    assert_eq!(templates.iter().map(|t| t.uri_template.as_str()).collect::<Vec<_>>(), ["memo://notes/{note_id}"]);
    let note = alice.read_resource(ReadResourceRequestParams::new("memo://notes/7")).await.unwrap();
    assert!(matches!(&note.contents[..], [ResourceContents::TextResourceContents { text, .. }] if text == "note 7"));

    let prompts = alice.list_all_prompts().await.unwrap();
    assert_eq!(prompts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["memo__summarize"], "named as tools");
    let mut ask = GetPromptRequestParams::new("memo__summarize");
    ask.arguments = Some(serde_json::from_value(json!({"topic": "tides"})).unwrap());
    let prompt = alice.get_prompt(ask).await.unwrap();
    let said = prompt.messages[0].content.as_text().map(|t| t.text.as_str());
    assert_eq!(said, Some("Summarize tides in one sentence."), "{prompt:?}");

    // Bob's tenant has no memo server: nothing listed, and reading or getting is as for what does not exist.
    let bob = client(&url, BOB).await;
    assert!(bob.list_all_resources().await.unwrap().is_empty());
    assert!(bob.list_all_prompts().await.unwrap().is_empty());
    assert!(bob.read_resource(ReadResourceRequestParams::new("memo://greeting")).await.is_err());
    assert!(bob.get_prompt(GetPromptRequestParams::new("memo__summarize")).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn a_tools_progress_reaches_the_host_that_asked_for_it_before_the_result() {
    let (command, args) = stdio_command();
    let server: McpServerSpec =
        serde_json::from_value(json!({"name": "memo", "command": command, "args": args, "tenant": "acme"})).unwrap();
    let (_dir, mut gw, url) = front_with(|config| {
        config.connect_timeout = CONNECT_TIMEOUT;
        config.mcp_servers = vec![server];
    })
    .await;
    let acme = toolgate::pb::v1::CallContext { tenant: "acme".into(), ..Default::default() };
    crate::support::eventually(CONNECT_TIMEOUT, "the memo server's tools imported", async || {
        gw.call_as("memo__steps", r#"{"n": 1}"#, acme.clone()).await.content == "done"
    })
    .await;

    // By hand, to read the wire: the call's answer is an event stream, and its order is what the host sees.
    let post = |session: Option<&str>, body: serde_json::Value| {
        let mut request = reqwest::Client::new()
            .post(&url)
            .bearer_auth(ALICE)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let hello = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let opened = post(None, hello).await.unwrap();
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(post(Some(&session), initialized).await.unwrap().status().is_success());
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "memo__steps", "arguments": {"n": 20}, "_meta": {"progressToken": "mine"}}});
    let stream = post(Some(&session), call).await.unwrap().text().await.unwrap();
    let events: Vec<serde_json::Value> = stream
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect();
    let (last, reports) = events.split_last().expect("the call's answer");
    assert_eq!(last["id"], 2, "the result comes last: {events:?}");
    assert_eq!(last["result"]["content"][0]["text"], "done");
    let told: Vec<f64> = reports
        .iter()
        .filter(|e| e["method"] == "notifications/progress")
        .inspect(|e| assert_eq!(e["params"]["progressToken"], "mine", "under the host's own token"))
        .map(|e| e["params"]["progress"].as_f64().unwrap())
        .collect();
    // The server sends its reports back to back, the last just before its answer: every one arrives, in order.
    let sent: Vec<f64> = (1..=20).map(f64::from).collect();
    assert_eq!(told, sent, "every report, in order, before the result");
}
