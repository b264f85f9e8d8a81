//! The MCP front door in cluster mode, on 2025-11-25: a session opened on one gateway is served by another, as a
//! plain round-robin load balancer would send its requests: for its owner alone, until closed through either, and
//! while Redis is down answered 503 with `Retry-After` where it is not held, never 404.

use crate::support;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::cluster::{Prefix, PrivateRedis, connect, fleet::Node, redis_url};
use reqwest::{Method, Response};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;

const ALICE: &str = "alice-cluster-token";
const BOB: &str = "bob-cluster-token";

/// Alice and Bob are users of the shared tenant: the same tools, different principals.
const TOKENS: [(&str, &str); 2] = [("TG_TEST_MCP_ALICE", ALICE), ("TG_TEST_MCP_BOB", BOB)];

/// A gateway with its front door at `front`, on `redis_url` under `prefix`, with Alice's and Bob's tokens.
async fn gateway(redis_url: &str, prefix: &str, front: SocketAddr) -> Node {
    let config = format!(
        "[mcp_front]\nlisten = \"{front}\"\n\
         [[mcp_front.tokens]]\ntoken_env = \"TG_TEST_MCP_ALICE\"\nuser_id = \"alice\"\n\
         [[mcp_front.tokens]]\ntoken_env = \"TG_TEST_MCP_BOB\"\nuser_id = \"bob\"\n"
    );
    Node::start_with_env(redis_url, prefix, &config, &TOKENS).await
}

/// One request on the front door at `front` as `token`'s, on `session` when given; a POST carries `body`.
async fn send(front: SocketAddr, token: &str, method: Method, session: Option<&str>, body: Option<Value>) -> Response {
    toolgate::tls::install_provider(); // the process-wide rustls provider reqwest needs
    let mut request = reqwest::Client::new()
        .request(method, format!("http://{front}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25");
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.expect("the front door answers")
}

/// The JSON-RPC answer to request `id` in a streamed (SSE) or plain JSON answer.
async fn answer(response: Response, id: u64) -> Value {
    let status = response.status();
    let text = response.text().await.unwrap();
    assert_eq!(status, 200, "{text}");
    let messages = text.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim);
    let mut messages = messages.chain([text.trim()]).filter_map(|m| serde_json::from_str::<Value>(m).ok());
    messages.find(|m| m["id"] == id).unwrap_or_else(|| panic!("no answer to request {id} in {text}"))
}

fn request(id: u64, method: &str, params: Value) -> Option<Value> {
    Some(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// Opens a 2025-11-25 session of Alice's on `front`: its id.
async fn open(front: SocketAddr) -> String {
    let initialize = request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}}, "clientInfo": {"name": "round-robin", "version": "1"}}),
    );
    let opened = send(front, ALICE, Method::POST, None, initialize).await;
    let session = opened.headers().get("mcp-session-id").expect("a session id").to_str().unwrap().to_owned();
    assert_eq!(answer(opened, 1).await["result"]["protocolVersion"], "2025-11-25");
    session
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_session_opened_on_one_gateway_is_served_by_another_for_its_owner_until_closed() {
    let prefix = Prefix::new(&redis_url());
    let (front_a, front_b) = (support::free_addr(), support::free_addr());
    let mut a = gateway(&redis_url(), &prefix.prefix, front_a).await;
    let mut b = gateway(&redis_url(), &prefix.prefix, front_b).await;
    let target = start_runtime(Runtime::default()).await;
    let spec = json!({"name": "transfer", "backend": {"grpc": {"target": target}},
        "input_schema": {"type": "object", "required": ["amount", "user_id"],
            "properties": {"amount": {"type": "integer"}, "user_id": {"type": "string"}}},
        "inject": [{"param": "user_id", "from": "user_id"}]});
    a.register(spec).await.unwrap();
    support::eventually(Duration::from_secs(5), "registered on b", async || b.version("transfer").await.is_some())
        .await;

    let session = open(front_a).await;
    let keys: Vec<_> = prefix.keys().into_iter().filter(|k| k.contains(":mcp_session:")).collect();
    assert_eq!(keys.len(), 1, "one record for the session: {keys:?}");
    let ttl: i64 = redis::cmd("PTTL").arg(&keys[0]).query(&mut connect(&redis_url())).unwrap();
    assert!(ttl > 0 && ttl <= 300_000, "the record lives as long as an idle session: {ttl} ms");

    // Bob's request on Alice's session is answered as if it did not exist: by B, which does not hold it (its
    // record is Alice's), and by A, which does.
    for (gateway, front) in [("B", front_b), ("A", front_a)] {
        let bobs = send(front, BOB, Method::POST, Some(&session), request(4, "tools/list", json!({}))).await;
        assert_eq!(bobs.status(), 404, "Bob's request on Alice's session, on {gateway}");
    }
    // The host's next requests each reach whichever gateway the balancer picks: a listening stream on B first.
    let stream = send(front_b, ALICE, Method::GET, Some(&session), None).await;
    assert_eq!(stream.status(), 200, "a GET stream on B, for a session opened on A");
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let initialized = Some(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(send(front_a, ALICE, Method::POST, Some(&session), initialized).await.status(), 202);
    let listed =
        answer(send(front_b, ALICE, Method::POST, Some(&session), request(2, "tools/list", json!({}))).await, 2).await;
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(tools.iter().map(|t| t["name"].as_str().unwrap()).collect::<Vec<_>>(), ["transfer"], "{listed}");
    let call = request(3, "tools/call", json!({"name": "transfer", "arguments": {"amount": "5"}}));
    let called = answer(send(front_b, ALICE, Method::POST, Some(&session), call).await, 3).await;
    assert_eq!(called["result"]["isError"], false, "{called}");
    let ran = &called["result"]["structuredContent"];
    assert_eq!(*ran, json!({"amount": 5, "user_id": "alice"}), "repaired, and run as the session's owner on B");

    drop(stream);
    assert_eq!(send(front_b, ALICE, Method::DELETE, Some(&session), None).await.status(), 204, "closed on B");
    let after = send(front_a, ALICE, Method::POST, Some(&session), request(5, "tools/list", json!({}))).await;
    assert_eq!(after.status(), 404, "closed through B, so gone on A, which opened it");
    let after = send(front_b, ALICE, Method::POST, Some(&session), request(6, "tools/list", json!({}))).await;
    assert_eq!(after.status(), 404, "and on B");
    assert!(!prefix.keys().iter().any(|k| k.contains(":mcp_session:")), "no record left: {:?}", prefix.keys());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the redis-server binary on PATH; .ci/run runs it"]
async fn while_redis_is_down_a_session_held_elsewhere_is_answered_503_never_404() {
    let mut redis = PrivateRedis::start();
    let prefix = "tgtest-mcp-sessions";
    let (front_a, front_b) = (support::free_addr(), support::free_addr());
    let _a = gateway(&redis.url(), prefix, front_a).await;
    let _b = gateway(&redis.url(), prefix, front_b).await;
    let session = open(front_a).await;
    redis.stop();

    let list = || request(2, "tools/list", json!({}));
    let refused = send(front_b, ALICE, Method::POST, Some(&session), list()).await;
    assert_eq!(refused.status(), 503, "B cannot know whether the session exists");
    assert_eq!(refused.headers()["retry-after"], "1", "a retry hint");
    let held = send(front_a, ALICE, Method::POST, Some(&session), list()).await;
    assert_eq!(answer(held, 2).await["result"]["tools"], json!([]), "A holds it, and serves it");
    let initialize = request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}),
    );
    let unopened = send(front_a, ALICE, Method::POST, None, initialize).await;
    assert_eq!(unopened.status(), 503, "a session no other gateway could resume is not opened");

    // Redis back, empty: the session is unknown to the fleet, and the host starts over.
    redis.restart();
    support::eventually(Duration::from_secs(10), "B answers 404 once Redis answers", async || {
        send(front_b, ALICE, Method::POST, Some(&session), list()).await.status() == 404
    })
    .await;
}
