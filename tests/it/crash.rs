//! Durability: a gateway killed with SIGKILL in the middle of registrations restarts with a readable store,
//! and every tool at a version it acknowledged or a later one, never a torn write; a reviewed call killed while
//! its tool ran answers, after the restart, that its outcome is unknown.

use crate::support;
use crate::support::backends::{Runtime, start_runtime};
use serde_json::json;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use toolgate::pb::v1::{self as pb, tool_registry_client::ToolRegistryClient};
use toolgate::registry::ToolSpec;

/// Starts `toolgate serve` on a free port and returns the child and its address, read from its log.
async fn spawn_gateway(data_dir: &std::path::Path) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("toolgate serve starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = support::line_of(&mut lines, Duration::from_secs(30), |l| l.contains("addr=")).await;
    let addr = line.split("addr=").nth(1).and_then(|rest| rest.split_whitespace().next()).unwrap().to_owned();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, format!("http://{addr}"))
}

fn revision(n: u64, target: &str) -> pb::RegisterToolRequest {
    let spec: ToolSpec = serde_json::from_value(json!({
        "name": "t", "description": format!("rev {n}"), "input_schema": {"type": "object"},
        "backend": {"grpc": {"target": target}}, "labels": {"padding": "x".repeat(1000), "more_padding": "x".repeat(1000)}
    }))
    .unwrap();
    pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) }
}

#[tokio::test]
async fn a_registration_killed_midway_leaves_the_previous_version_intact() {
    let dir = tempfile::tempdir().unwrap();
    let target = start_runtime(Runtime::default()).await;
    let (mut child, addr) = spawn_gateway(dir.path()).await;
    let mut client = ToolRegistryClient::new(support::connect(addr.parse::<http_addr::Addr>().unwrap().0).await);

    // Register revisions back to back from a second task while this one kills the process, once a few
    // have been acknowledged (waiting on the count, not on the clock, so a slow machine still kills midway).
    let landed = Arc::new(AtomicU64::new(0));
    let writer = tokio::spawn({
        let landed = landed.clone();
        async move {
            let mut acknowledged = 0;
            for n in 1.. {
                match client.register_tool(revision(n, &target)).await {
                    Ok(r) => {
                        assert_eq!(r.into_inner().tool.unwrap().version, n);
                        acknowledged = n;
                        landed.store(n, Ordering::SeqCst);
                    }
                    Err(_) => break,
                }
            }
            acknowledged
        }
    });
    let five = async || landed.load(Ordering::SeqCst) >= 5;
    support::eventually(Duration::from_secs(30), "five registrations acknowledged", five).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let acknowledged = writer.await.unwrap();

    let (_child, addr) = spawn_gateway(dir.path()).await;
    let mut client = ToolRegistryClient::new(support::connect(addr.parse::<http_addr::Addr>().unwrap().0).await);
    let tool = client
        .get_tool(pb::GetToolRequest { name: "t".into(), tenant: String::new() })
        .await
        .unwrap()
        .into_inner()
        .tool
        .unwrap();
    assert!(tool.version >= acknowledged, "version {} lost an acknowledged write ({acknowledged})", tool.version);
    assert!(tool.version <= acknowledged + 1, "at most the one in flight landed");
    assert_eq!(tool.description, format!("rev {}", tool.version), "the record is whole");
    println!("killed after {acknowledged} acknowledged registrations; restarted at version {}", tool.version);
}

/// D23 (issue 47): a reviewed call whose tool was running when the gateway was SIGKILLed may have run. After the
/// restart it answers so (INTERNAL, not retryable, the outcome unknown), never that it "could not be run", and
/// its tool is not run again.
#[tokio::test]
async fn a_reviewed_call_killed_while_it_ran_answers_that_its_outcome_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    // `rendezvous` returns only when a second call arrives, which none does: the call runs until the kill.
    let runtime = Runtime::with_rendezvous(2);
    let target = start_runtime(runtime.clone()).await;
    let (mut child, addr) = spawn_gateway(dir.path()).await;
    let channel = support::connect(addr.parse::<http_addr::Addr>().unwrap().0).await;
    let spec: ToolSpec = serde_json::from_value(json!({"name": "rendezvous", "input_schema": {"type": "object"},
        "review": {"required": true}, "backend": {"grpc": {"target": target}}}))
    .unwrap();
    let mut registry = ToolRegistryClient::new(channel.clone());
    registry.register_tool(pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) }).await.unwrap();
    let deferred = |channel: tonic::transport::Channel| async move {
        let call = pb::ToolCall { id: "c-lost".into(), name: "rendezvous".into(), arguments: "{}".into() };
        let request =
            pb::ExecuteRequest { call: Some(call), review_mode: pb::ReviewMode::Defer.into(), ..Default::default() };
        let answer = pb::tool_gateway_client::ToolGatewayClient::new(channel).execute(request).await;
        answer.map(|a| a.into_inner().message.unwrap())
    };
    let pending = deferred(channel.clone()).await.unwrap();
    assert_eq!(pending.status, pb::ToolStatus::PendingReview as i32, "{pending:?}");
    let decide =
        pb::DecideRequest { call_id: "c-lost".into(), action: pb::ReviewAction::Approve.into(), ..Default::default() };
    pb::tool_review_client::ToolReviewClient::new(channel.clone()).decide(decide).await.unwrap();
    let running = tokio::spawn(deferred(channel));
    let started = async || runtime.calls.load(Ordering::SeqCst) == 1;
    support::eventually(Duration::from_secs(30), "the approved call reached its tool", started).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    assert!(running.await.unwrap().is_err(), "the caller lost its gateway");

    let (_child, addr) = spawn_gateway(dir.path()).await;
    let channel = support::connect(addr.parse::<http_addr::Addr>().unwrap().0).await;
    let answer = deferred(channel).await.unwrap();
    let error = answer.error.clone().expect("an error");
    assert_eq!(error.kind, pb::ErrorKind::Internal as i32, "{answer:?}");
    assert!(!error.retryable && !error.model_fixable, "{error:?}");
    assert!(answer.content.contains("whether it took effect is unknown"), "{}", answer.content);
    assert!(!answer.content.contains("could not be run"), "it may well have run: {}", answer.content);
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 1, "not run again");
}

/// Parses `http://host:port` into a socket address.
mod http_addr {
    pub struct Addr(pub std::net::SocketAddr);

    impl std::str::FromStr for Addr {
        type Err = std::net::AddrParseError;
        fn from_str(s: &str) -> Result<Self, Self::Err> {
            s.trim_start_matches("http://").parse().map(Addr)
        }
    }
}
