//! Debian's HAProxy in front of the fleet, as an operator would put it: `mode http`, `balance roundrobin`, one
//! frontend for gRPC over HTTP/2 (cleartext, `proto h2` on both sides) and one for HTTP that sends `/mcp` to the
//! gateways' MCP front doors and everything else to their consoles. Health checks every 300 ms take a killed
//! gateway out, and a request whose connection failed is sent to another server.

use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The addresses of one gateway's three listeners.
#[derive(Clone, Copy)]
pub struct Backends {
    pub grpc: SocketAddr,
    pub console: SocketAddr,
    pub mcp: SocketAddr,
}

/// A running `haproxy`; killed on drop.
pub struct Haproxy {
    pub grpc: SocketAddr,
    pub http: SocketAddr,
    _child: tokio::process::Child,
    _dir: TempDir,
}

impl Haproxy {
    pub async fn start(gateways: &[Backends]) -> Self {
        super::redis_node::require_binaries(&["haproxy"]);
        let (grpc, http) = (crate::support::free_addr(), crate::support::free_addr());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("haproxy.cfg");
        std::fs::write(&path, config(grpc, http, gateways)).unwrap();
        let check = std::process::Command::new("haproxy").args(["-c", "-q", "-f"]).arg(&path).output().unwrap();
        assert!(check.status.success(), "haproxy -c: {}", String::from_utf8_lossy(&check.stderr));
        let child = tokio::process::Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("haproxy starts");
        let until = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(grpc).await.is_err() || tokio::net::TcpStream::connect(http).await.is_err()
        {
            assert!(Instant::now() < until, "haproxy did not listen within 10 s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Self { grpc, http, _child: child, _dir: dir }
    }
}

fn config(grpc: SocketAddr, http: SocketAddr, gateways: &[Backends]) -> String {
    let servers = |pick: fn(&Backends) -> SocketAddr, h2: &str| {
        let lines = gateways
            .iter()
            .enumerate()
            .map(|(i, g)| format!("  server g{i} {}{h2} check inter 300ms fall 1 rise 1\n", pick(g)));
        lines.collect::<String>()
    };
    format!(
        "global\n  maxconn 4096\n\
         defaults\n  mode http\n  timeout connect 1s\n  timeout client 60s\n  timeout server 60s\n  retries 2\n  option redispatch\n  retry-on conn-failure\n\
         frontend grpc\n  bind {grpc} proto h2\n  default_backend gateways_grpc\n\
         frontend http\n  bind {http}\n  acl mcp path_beg /mcp\n  use_backend gateways_mcp if mcp\n  default_backend gateways_console\n\
         backend gateways_grpc\n  balance roundrobin\n{}\
         backend gateways_console\n  balance roundrobin\n{}\
         backend gateways_mcp\n  balance roundrobin\n{}",
        servers(|g| g.grpc, " proto h2"),
        servers(|g| g.console, ""),
        servers(|g| g.mcp, ""),
    )
}
