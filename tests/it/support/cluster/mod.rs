//! Redis for the cluster tests: the machine's server (`TOOLGATE_TEST_REDIS_URL`, default 127.0.0.1:6379), a key
//! prefix of each test's own that is deleted when the test ends, and a private `redis-server` a test may stop.
//! `fleet` starts the gateway processes that share it; the fault tests' parts are a Redis Cluster
//! (`redis_cluster`), a Sentinel set (`sentinel`), both of `redis_node`s, HAProxy (`haproxy`), a proxy that cuts one
//! gateway from Redis (`cut`), the recording tool (`ledger`), and `rig`, the fleet behind HAProxy.

pub mod cut;
pub mod fleet;
pub mod haproxy;
pub mod ledger;
pub mod redis_cluster;
pub mod redis_node;
pub mod rig;
pub mod sentinel;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use toolgate::cluster::{ClusterSettings, Redis};

pub fn redis_url() -> String {
    std::env::var("TOOLGATE_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A key prefix no other test, or run, uses; its keys are deleted on drop.
pub struct Prefix {
    pub prefix: String,
    url: String,
}

impl Prefix {
    /// Fails the test, saying what is missing, when no Redis answers at `url`.
    pub fn new(url: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let mut conn = connect(url);
        let pong: String = redis::cmd("PING").query(&mut conn).expect("PING");
        assert_eq!(pong, "PONG");
        let prefix = format!("tgtest-{}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed), nanos());
        Self { prefix, url: url.to_owned() }
    }

    /// The settings of a gateway on this prefix.
    pub fn settings(&self) -> ClusterSettings {
        ClusterSettings {
            redis_url: self.url.clone(),
            topology: toolgate::cluster::Topology::parse(&self.url).unwrap(),
            key_prefix: self.prefix.clone(),
            sync_interval: Duration::from_millis(200),
            // Far above a Redis round trip on a loaded machine: a stall must not turn into a refusal or fail-open.
            op_timeout: Duration::from_secs(5),
            rate_precheck: true,
        }
    }

    pub fn redis(&self) -> Redis {
        Redis::new(self.settings()).expect("a Redis handle")
    }

    /// Every key under the prefix.
    pub fn keys(&self) -> Vec<String> {
        let mut conn = connect(&self.url);
        redis::cmd("KEYS").arg(format!("{}:*", self.prefix)).query(&mut conn).unwrap_or_default()
    }
}

impl Drop for Prefix {
    fn drop(&mut self) {
        let Ok(client) = redis::Client::open(self.url.as_str()) else { return };
        let Ok(mut conn) = client.get_connection() else { return };
        let keys: Vec<String> =
            redis::cmd("KEYS").arg(format!("{}:*", self.prefix)).query(&mut conn).unwrap_or_default();
        if !keys.is_empty() {
            let _: Result<(), _> = redis::cmd("DEL").arg(keys).query(&mut conn);
        }
    }
}

pub fn connect(url: &str) -> redis::Connection {
    let client = redis::Client::open(url).unwrap_or_else(|e| panic!("bad Redis URL {url}: {e}"));
    client.get_connection_with_timeout(Duration::from_secs(2)).unwrap_or_else(|e| {
        panic!("these tests need a Redis server at {url} (set TOOLGATE_TEST_REDIS_URL, or start redis-server): {e}")
    })
}

fn nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos()
}

/// A `redis-server` of the test's own on a free port, so the test may stop and restart it. It keeps nothing
/// on disk. Killed on drop.
pub struct PrivateRedis {
    pub port: u16,
    child: Option<Child>,
}

impl PrivateRedis {
    pub fn start() -> Self {
        let port = crate::support::free_addr().port();
        let mut redis = Self { port, child: None };
        redis.restart();
        redis
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Starts the server (again) on the same port and waits until it answers.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("these tests need the redis-server binary on PATH (apt install redis-server): {e}")
            });
        self.child = Some(child);
        for _ in 0..200 {
            if let Ok(client) = redis::Client::open(self.url())
                && let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_millis(100))
                && redis::cmd("PING").query::<String>(&mut conn).is_ok()
            {
                return;
            }
            #[expect(clippy::disallowed_methods, reason = "a sync start-up wait for redis-server, before any runtime")]
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("redis-server on port {} did not answer within 5 s", self.port);
    }

    /// Kills the server; its data is gone with it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.stop();
    }
}
