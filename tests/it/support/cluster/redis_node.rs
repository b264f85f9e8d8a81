//! One `redis-server` process of the test's own, on loopback, with a temp dir: the part of a Redis Cluster or a
//! Sentinel set that a test kills and starts again, and the few commands the fault helpers send it.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// A `redis-server` (a data node, or a sentinel with `--sentinel`) on `127.0.0.1:port`. Killed on drop.
pub struct RedisNode {
    pub port: u16,
    args: Vec<String>,
    _dir: TempDir,
    child: Option<Child>,
}

impl RedisNode {
    /// Starts `redis-server <before> --port <port> --bind 127.0.0.1 --dir <temp> <args>` and waits until it answers
    /// PING. `before` is a config file's name (in the temp dir) for a sentinel, else empty.
    pub async fn start(port: u16, before: Option<(&str, &str)>, args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut all = Vec::new();
        if let Some((file, text)) = before {
            let path = dir.path().join(file);
            std::fs::write(&path, text).unwrap();
            all.push(path.display().to_string());
        }
        let port_text = port.to_string();
        let dir_text = dir.path().display().to_string();
        all.extend(["--port", &port_text, "--bind", "127.0.0.1", "--dir", &dir_text].map(String::from));
        all.extend(args.iter().map(|a| (*a).to_owned()));
        let mut node = Self { port, args: all, _dir: dir, child: None };
        node.restart().await;
        node
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Starts it (again) with the same arguments, and so the same files, and waits until it answers PING.
    pub async fn restart(&mut self) {
        assert!(self.child.is_none(), "redis-server on {} already runs", self.port);
        let child = Command::new("redis-server").args(&self.args).stdout(Stdio::null()).spawn();
        let child = child.unwrap_or_else(|e| {
            panic!("the fleet tests need the redis-server binary on PATH (apt-get install redis-server): {e}")
        });
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(10);
        while self.query(&["PING"]).is_err() {
            assert!(Instant::now() < until, "redis-server on port {} did not answer within 10 s", self.port);
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// SIGKILL: no shutdown, no goodbye to the cluster or the sentinels.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// One command, on a fresh connection with a 2 s timeout.
    pub fn query(&self, args: &[&str]) -> redis::RedisResult<redis::Value> {
        let client = redis::Client::open(self.url())?;
        let mut conn = client.get_connection_with_timeout(Duration::from_secs(2))?;
        conn.set_read_timeout(Some(Duration::from_secs(2)))?;
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query(&mut conn)
    }

    /// A command whose answer is text (INFO, CLUSTER INFO, CLUSTER NODES), or "" when it fails.
    pub fn text(&self, args: &[&str]) -> String {
        match self.query(args) {
            Ok(value) => redis::from_redis_value(value).unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    /// `CLIENT PAUSE <ms> ALL`: the node answers no client (the cluster bus goes on) for `ms`.
    pub fn pause(&self, ms: u64) {
        self.query(&["CLIENT", "PAUSE", &ms.to_string(), "ALL"]).expect("CLIENT PAUSE");
    }
}

impl Drop for RedisNode {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A loopback port for a Redis Cluster node: free, and its cluster bus port (port + 10000) free too.
pub fn cluster_port() -> u16 {
    for _ in 0..200 {
        let port = crate::support::free_addr().port();
        if port < 55_000 && std::net::TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
    panic!("no port whose cluster bus port (port + 10000) is free too")
}

/// Fails the test, naming what is missing, unless `redis-server` and `redis-cli` are on PATH.
pub fn require_binaries(names: &[&str]) {
    for name in names {
        let found = Command::new("sh").args(["-c", &format!("command -v {name}")]).output();
        assert!(
            found.is_ok_and(|o| o.status.success()),
            "the fleet tests need {name} on PATH (apt-get install -y {}); .ci/run installs it",
            if name.starts_with("redis") { "redis-server" } else { name }
        );
    }
}
