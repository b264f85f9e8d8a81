//! Durability: a gateway killed with SIGKILL in the middle of registrations restarts with a readable store,
//! and every tool at a version it acknowledged or a later one, never a torn write.

mod common;

use common::backends::{Runtime, start_runtime};
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
    let line = common::line_of(&mut lines, Duration::from_secs(30), |l| l.contains("addr=")).await;
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
    let mut client = ToolRegistryClient::new(common::connect(addr.parse::<http_addr::Addr>().unwrap().0).await);

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
    common::eventually(Duration::from_secs(30), "five registrations acknowledged", five).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let acknowledged = writer.await.unwrap();

    let (_child, addr) = spawn_gateway(dir.path()).await;
    let mut client = ToolRegistryClient::new(common::connect(addr.parse::<http_addr::Addr>().unwrap().0).await);
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
