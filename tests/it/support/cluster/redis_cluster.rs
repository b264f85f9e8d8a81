//! A Redis Cluster of 3 primaries and 3 replicas on loopback, made by `redis-cli --cluster create`, and its faults:
//! a primary killed (its replica takes over), `CLUSTER FAILOVER` on a replica, `CLIENT PAUSE` on a node.

use super::redis_node::{RedisNode, cluster_port, require_binaries};
use std::process::Command;
use std::time::{Duration, Instant};

/// Six `redis-server --cluster-enabled yes` nodes, each primary with one replica. Killed on drop.
pub struct RedisCluster {
    pub nodes: Vec<RedisNode>,
}

impl RedisCluster {
    pub async fn start() -> Self {
        require_binaries(&["redis-server", "redis-cli"]);
        let mut nodes = Vec::new();
        for _ in 0..6 {
            let args = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"];
            let more = ["--cluster-node-timeout", "1000", "--save", "", "--appendonly", "no"];
            nodes.push(RedisNode::start(cluster_port(), None, &[&args[..], &more[..]].concat()).await);
        }
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        create.args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)));
        create.args(["--cluster-replicas", "1", "--cluster-yes"]);
        let out = create.output().expect("redis-cli runs");
        assert!(out.status.success(), "redis-cli --cluster create failed: {}", String::from_utf8_lossy(&out.stdout));
        let cluster = Self { nodes };
        cluster.wait_ok(Duration::from_secs(30)).await;
        cluster
    }

    /// `redis+cluster://` with every node as a seed.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// Waits until every running node says `cluster_state:ok` and knows 3 primaries each with a running replica
    /// that is in sync; returns how long that took.
    pub async fn wait_ok(&self, within: Duration) -> Duration {
        let start = Instant::now();
        loop {
            let all_ok = self.nodes.iter().filter(|n| n.is_running()).all(|n| {
                n.text(&["CLUSTER", "INFO"]).contains("cluster_state:ok")
                    && self.shape_of(n).is_some_and(|(primaries, replicas)| primaries == 3 && replicas >= 3)
            });
            if all_ok {
                return start.elapsed();
            }
            assert!(start.elapsed() < within, "the Redis Cluster was not ok within {within:?}: {}", self.describe());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// (primaries holding slots, connected replicas) as `node` sees the cluster.
    fn shape_of(&self, node: &RedisNode) -> Option<(usize, usize)> {
        let nodes = node.text(&["CLUSTER", "NODES"]);
        let lines: Vec<&str> = nodes.lines().filter(|l| !l.contains("fail") && l.contains("connected")).collect();
        let primaries = lines.iter().filter(|l| l.contains("master") && l.split(' ').count() > 8).count();
        let replicas = lines.iter().filter(|l| l.contains("slave")).count();
        Some((primaries, replicas)).filter(|_| !nodes.is_empty())
    }

    fn describe(&self) -> String {
        let seen = self.nodes.iter().find(|n| n.is_running()).map(|n| n.text(&["CLUSTER", "NODES"]));
        seen.unwrap_or_default()
    }

    /// The index of the node that is now the primary of `key`'s slot.
    pub fn primary_of(&self, key: &str) -> usize {
        let node = self.nodes.iter().find(|n| n.is_running()).expect("a running node");
        let slot: i64 = redis::from_redis_value(node.query(&["CLUSTER", "KEYSLOT", key]).unwrap()).unwrap();
        let nodes = node.text(&["CLUSTER", "NODES"]);
        for line in nodes.lines().filter(|l| l.contains("master") && !l.contains("fail")) {
            let fields: Vec<&str> = line.split(' ').collect();
            let owns = fields[8..].iter().any(|range| {
                let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                lo.parse::<i64>().is_ok_and(|lo| lo <= slot) && hi.parse::<i64>().is_ok_and(|hi| slot <= hi)
            });
            if owns {
                let port: u16 = fields[1].split(['@', ':']).nth(1).unwrap().parse().unwrap();
                return self.nodes.iter().position(|n| n.port == port).expect("a node of ours");
            }
        }
        panic!("no primary owns slot {slot}: {nodes}")
    }

    /// The index of a running replica of the primary at `primary`.
    pub fn replica_of(&self, primary: usize) -> usize {
        let id = self.nodes[primary].text(&["CLUSTER", "MYID"]);
        let nodes = self.nodes[primary].text(&["CLUSTER", "NODES"]);
        let line = nodes.lines().find(|l| l.contains("slave") && l.contains(&id) && !l.contains("fail"));
        let line = line.unwrap_or_else(|| panic!("no replica of node {primary}: {nodes}"));
        let port: u16 = line.split(' ').nth(1).unwrap().split(['@', ':']).nth(1).unwrap().parse().unwrap();
        self.nodes.iter().position(|n| n.port == port).expect("a node of ours")
    }

    /// `CLUSTER FAILOVER` on a replica of `primary`: the two swap roles without losing a write.
    pub fn failover(&self, primary: usize) -> usize {
        let replica = self.replica_of(primary);
        self.nodes[replica].query(&["CLUSTER", "FAILOVER"]).expect("CLUSTER FAILOVER");
        replica
    }

    /// Waits until node `index` says it is a primary; returns how long that took.
    pub async fn wait_primary(&self, index: usize, within: Duration) -> Duration {
        let start = Instant::now();
        while !is_primary(&self.nodes[index]) {
            assert!(start.elapsed() < within, "node {index} did not become a primary within {within:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        start.elapsed()
    }
}

fn is_primary(node: &RedisNode) -> bool {
    node.text(&["INFO", "replication"]).contains("role:master")
}
