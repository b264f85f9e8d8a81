//! The fleet of the fault tests: three `toolgate serve` processes on one Redis (a Redis Cluster, a Sentinel set,
//! or a proxy in front of one), each with its gRPC listener, console, MCP front door and Prometheus endpoint,
//! behind one HAProxy, with the tool backend that records every execution. A gateway is killed and started again
//! on the same addresses and directory, as a restarted pod would be.

use super::fleet::Node;
use super::haproxy::{Backends, Haproxy};
use super::ledger::Ledger;
use std::net::SocketAddr;
use tempfile::TempDir;

/// One gateway: its process while it runs, and what a restart needs.
pub struct Member {
    pub node: Option<Node>,
    pub listeners: Backends,
    pub metrics: SocketAddr,
    /// The process's directory while it is killed.
    parked: Option<TempDir>,
    /// The `toolgate.cluster.fail_open` counts (every check, the call-id record's) of the runs before a restart.
    pub fail_open_before: [u64; 2],
}

pub struct Rig {
    pub members: Vec<Member>,
    pub haproxy: Haproxy,
    pub ledger: Ledger,
    /// The URL of the ledger's `/run`, for tool specs.
    pub tool_url: String,
}

impl Rig {
    /// Three gateways, the i-th on `redis_urls[i]` (a URL per gateway: one may go through a `Cut`).
    pub async fn start(redis_urls: [&str; 3]) -> Self {
        let ledger = Ledger::default();
        let tool_url = ledger.serve().await;
        let mut members = Vec::new();
        for url in redis_urls {
            let free = crate::support::free_addr;
            let listeners = Backends { grpc: free(), console: free(), mcp: free() };
            let metrics = free();
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("toolgate.toml"), config(&listeners, metrics, url, &dir)).unwrap();
            let node = Node::launch(listeners.grpc, dir, &[]).await;
            members.push(Member { node: Some(node), listeners, metrics, parked: None, fail_open_before: [0, 0] });
        }
        let backends: Vec<Backends> = members.iter().map(|m| m.listeners).collect();
        let haproxy = Haproxy::start(&backends).await;
        Self { members, haproxy, ledger, tool_url }
    }

    /// SIGKILLs gateway `i`, after reading its fail-open count.
    pub async fn kill(&mut self, i: usize) {
        let member = &mut self.members[i];
        let now = fail_open(member.metrics).await;
        member.fail_open_before = [member.fail_open_before[0] + now[0], member.fail_open_before[1] + now[1]];
        let node = member.node.take().expect("a running gateway");
        let (_, dir) = node.kill_keeping().await;
        member.parked = Some(dir);
    }

    /// Starts gateway `i` again, on its addresses, config and data directory.
    pub async fn restart(&mut self, i: usize) {
        let member = &mut self.members[i];
        let dir = member.parked.take().expect("a killed gateway");
        member.node = Some(Node::launch(member.listeners.grpc, dir, &[]).await);
    }

    /// Calls that ran unchecked against Redis (`toolgate.cluster.fail_open`) on each gateway, in all its runs:
    /// for every check, and for the call-id record's (`check="idempotency"`: run unrecorded).
    pub async fn fail_open_counts(&self) -> Vec<[u64; 2]> {
        let mut counts = Vec::new();
        for member in &self.members {
            let now = fail_open(member.metrics).await;
            counts.push([member.fail_open_before[0] + now[0], member.fail_open_before[1] + now[1]]);
        }
        counts
    }

    pub fn http_url(&self) -> String {
        format!("http://{}", self.haproxy.http)
    }
}

fn config(listeners: &Backends, metrics: SocketAddr, redis_url: &str, dir: &TempDir) -> String {
    let Backends { grpc, console, mcp } = listeners;
    // The call-id record at its default window; op_timeout_ms at its default (250 ms).
    format!(
        "listen = \"{grpc}\"\ndata_dir = \"{}\"\n[console]\nlisten = \"{console}\"\n[mcp_front]\nlisten = \"{mcp}\"\n\
         [telemetry]\nprometheus_listen = \"{metrics}\"\n[cluster]\nredis_url = \"{redis_url}\"\nkey_prefix = \"fleet\"\nsync_interval_ms = 200\n",
        dir.path().join("data").display()
    )
}

/// The sums of `toolgate_cluster_fail_open…` samples at `/metrics`, all and the call-id record's; 0 when the
/// endpoint does not answer.
async fn fail_open(metrics: SocketAddr) -> [u64; 2] {
    let Ok(response) = reqwest::get(format!("http://{metrics}/metrics")).await else { return [0, 0] };
    let text = response.text().await.unwrap_or_default();
    let sum = |only: &str| -> u64 {
        let lines = text.lines().filter(|l| l.starts_with("toolgate_cluster_fail_open") && l.contains(only));
        lines.filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok()).map(|v| v as u64).sum()
    };
    [sum(""), sum("check=\"idempotency\"")]
}
