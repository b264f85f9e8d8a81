//! A Sentinel set on loopback: one primary, two replicas (`--replicaof`) and three sentinels monitoring them as
//! `tg` (quorum 2, down after 1 s, failover timeout 3 s), and its faults: `SENTINEL FAILOVER tg`, a killed primary.

use super::redis_node::{RedisNode, require_binaries};
use std::time::{Duration, Instant};

pub const MASTER: &str = "tg";

/// The data nodes (index 0 the first primary) and the sentinels. Killed on drop.
pub struct SentinelSet {
    pub data: Vec<RedisNode>,
    pub sentinels: Vec<RedisNode>,
}

impl SentinelSet {
    pub async fn start() -> Self {
        require_binaries(&["redis-server", "redis-cli"]);
        // As docs/cluster.md asks of a Sentinel set: a primary left without a replica (a demoted one, before the
        // sentinels reconfigure it) refuses writes, rather than acknowledge writes the failover then drops.
        let plain = [
            "--save",
            "",
            "--appendonly",
            "no",
            "--min-replicas-to-write",
            "1",
            "--min-replicas-max-lag",
            "5",
            "--repl-diskless-sync-delay",
            "0",
        ];
        let primary = RedisNode::start(crate::support::free_addr().port(), None, &plain).await;
        let of = primary.port.to_string();
        let mut data = vec![primary];
        for _ in 0..2 {
            let args = [&plain[..], &["--replicaof", "127.0.0.1", &of]].concat();
            data.push(RedisNode::start(crate::support::free_addr().port(), None, &args).await);
        }
        let mut sentinels = Vec::new();
        for _ in 0..3 {
            let conf = format!(
                "sentinel monitor {MASTER} 127.0.0.1 {of} 2\nsentinel down-after-milliseconds {MASTER} 1000\nsentinel failover-timeout {MASTER} 3000\n"
            );
            let port = crate::support::free_addr().port();
            sentinels.push(RedisNode::start(port, Some(("sentinel.conf", &conf)), &["--sentinel"]).await);
        }
        let set = Self { data, sentinels };
        set.wait_settled(Duration::from_secs(30)).await;
        set
    }

    /// `redis+sentinel://s1,s2,s3/tg`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.sentinels.iter().map(|s| format!("127.0.0.1:{}", s.port)).collect();
        format!("redis+sentinel://{}/{MASTER}", hosts.join(","))
    }

    /// The port of the primary, as the first sentinel that answers says.
    pub fn primary_port(&self) -> u16 {
        let ports: Vec<u16> = self.sentinels.iter().map(|s| s.port).collect();
        ask_primary(&ports).expect("a sentinel answers")
    }

    /// The sentinels' ports, for `ask_primary` off the test's thread.
    pub fn sentinel_ports(&self) -> Vec<u16> {
        self.sentinels.iter().map(|s| s.port).collect()
    }

    pub fn primary(&mut self) -> &mut RedisNode {
        let port = self.primary_port();
        self.data.iter_mut().find(|n| n.port == port).expect("a node of ours")
    }

    /// Waits until every sentinel knows the two others and two replicas of the primary, the primary says it is
    /// one, and each running replica is linked to it; returns how long that took.
    pub async fn wait_settled(&self, within: Duration) -> Duration {
        let start = Instant::now();
        loop {
            let port = self.primary_port();
            let sentinels_agree = self.sentinels.iter().all(|s| {
                let info = s.text(&["INFO", "sentinel"]);
                info.contains(&format!("address=127.0.0.1:{port},slaves=2,sentinels=3"))
            });
            let primary_ok =
                self.data.iter().any(|n| n.port == port && n.text(&["INFO", "replication"]).contains("role:master"));
            let replicas_ok = self.data.iter().filter(|n| n.port != port && n.is_running()).all(|n| {
                let info = n.text(&["INFO", "replication"]);
                info.contains(&format!("master_port:{port}")) && info.contains("master_link_status:up")
            });
            if sentinels_agree && primary_ok && replicas_ok {
                return start.elapsed();
            }
            assert!(start.elapsed() < within, "the Sentinel set did not settle within {within:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `SENTINEL FAILOVER tg` on a sentinel; returns the old primary's port.
    pub fn failover(&self) -> u16 {
        let old = self.primary_port();
        self.sentinels[0].query(&["SENTINEL", "FAILOVER", MASTER]).expect("SENTINEL FAILOVER");
        old
    }

    /// Waits until the sentinels name a primary other than `old`; returns how long that took.
    pub async fn wait_new_primary(&self, old: u16, within: Duration) -> Duration {
        let start = Instant::now();
        while self.primary_port() == old {
            assert!(start.elapsed() < within, "no new primary within {within:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        start.elapsed()
    }
}

/// The primary's port, as the first of the sentinels at `ports` that answers says (blocking).
pub fn ask_primary(ports: &[u16]) -> Option<u16> {
    for port in ports {
        let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}")) else { continue };
        let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_secs(1)) else { continue };
        let asked = redis::cmd("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg(MASTER).query::<Vec<String>>(&mut conn);
        if let Some(port) = asked.ok().and_then(|addr| addr.get(1)?.parse().ok()) {
            return Some(port);
        }
    }
    None
}
