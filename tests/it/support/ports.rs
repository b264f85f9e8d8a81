//! Free loopback ports for servers named by their port, shared by the suites and the benches (which include this
//! file by path).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};

/// A loopback address for a server that a test or bench names by its port (a side door, a `toolgate serve`, a
/// Redis, an MCP server, chromedriver), free when picked. A port taken from `127.0.0.1:0` and released can go to any
/// other socket before that server binds it, and then the server's start fails.
/// These ports lie below the kernel's ephemeral range (32768 and up), which neither a bind on port 0 nor an
/// outgoing connection ever uses, and each process counts through a stretch of its own, so no two tests of one
/// binary get the same port.
pub fn free_addr() -> SocketAddr {
    const SPAN: u32 = 200;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let base = 10_000 + (std::process::id() % 110) * SPAN;
    for _ in 0..SPAN {
        let port = u16::try_from(base + NEXT.fetch_add(1, Ordering::Relaxed) % SPAN).expect("below 32000");
        if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            return listener.local_addr().expect("a local address");
        }
    }
    panic!("no free port in 127.0.0.1:{base}..{}", base + SPAN);
}
