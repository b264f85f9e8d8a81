//! The Python MCP test server (`tests/mcp/server.py`, official Python MCP SDK) for the MCP integration tests:
//! the venv's python, the stdio command line, and a streamable-HTTP server process on a local port.
//!
//! The venv: `python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install -r tests/mcp/requirements.txt`
//! (`.ci/run` does this), or point `TOOLGATE_MCP_PYTHON` at a python that can `import mcp`.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};
use tonic::transport::Channel;
use toolgate::pb::v1::{self as pb, mcp_registry_client::McpRegistryClient};

/// How to get a python with the MCP SDK, from the repository root.
pub const INSTALL_COMMAND: &str =
    "python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install -r tests/mcp/requirements.txt";

/// How long `HttpServer::start*` waits for the server to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// How long a gateway gives a Python MCP server to connect where a test needs it connected, instead of the
/// default 5 s: starting Python, importing the SDK and the handshake take seconds on a loaded machine.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A fresh data directory and the default config, with `CONNECT_TIMEOUT`.
pub fn config() -> (tempfile::TempDir, toolgate::Config) {
    let (dir, mut config) = crate::support::temp_config();
    config.connect_timeout = CONNECT_TIMEOUT;
    (dir, config)
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The python that runs the test server: `TOOLGATE_MCP_PYTHON` if set, else `<repo>/target/mcp-venv/bin/python`.
/// Panics, saying what is missing and how to install it, when that python does not exist or cannot `import mcp`.
pub fn python() -> PathBuf {
    static CHECKED: OnceLock<PathBuf> = OnceLock::new();
    CHECKED
        .get_or_init(|| {
            let (python, from_env) = match std::env::var_os("TOOLGATE_MCP_PYTHON") {
                Some(p) if !p.is_empty() => (PathBuf::from(p), true),
                _ => (repo_root().join("target/mcp-venv/bin/python"), false),
            };
            let whose = if from_env { "TOOLGATE_MCP_PYTHON" } else { "the MCP test venv" };
            let how = format!(
                "install it from {}:\n    {INSTALL_COMMAND}\nor set TOOLGATE_MCP_PYTHON to a python that can `import mcp`",
                repo_root().display()
            );
            if !from_env && !python.exists() {
                panic!("{whose}'s python {} does not exist; {how}", python.display());
            }
            let out = std::process::Command::new(&python)
                .args(["-c", "import mcp"])
                .stdin(Stdio::null())
                .output()
                .unwrap_or_else(|e| panic!("cannot run {whose}'s python {}: {e}; {how}", python.display()));
            if !out.status.success() {
                panic!(
                    "{whose}'s python {} cannot `import mcp` (the Python MCP SDK is missing): {}; {how}",
                    python.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            python
        })
        .clone()
}

/// The absolute path of `tests/mcp/server.py`.
pub fn server_script() -> PathBuf {
    repo_root().join("tests/mcp/server.py")
}

/// Command and arguments that run the test server over stdio, for an MCP stdio server definition.
pub fn stdio_command() -> (String, Vec<String>) {
    (python().display().to_string(), vec![server_script().display().to_string(), "stdio".into()])
}

/// The test server over streamable HTTP at `url` (`http://127.0.0.1:<port>/mcp`). Killed when dropped.
pub struct HttpServer {
    pub url: String,
    pub port: u16,
    child: Child,
    /// The server's stderr, kept for failure messages.
    stderr: tempfile::NamedTempFile,
}

impl HttpServer {
    /// Starts the server on a free port and waits until it accepts connections.
    pub async fn start() -> HttpServer {
        HttpServer::start_on(crate::support::free_addr().port()).await
    }

    /// Starts the server on `port` (for example the port of a server killed before, to bring it back).
    pub async fn start_on(port: u16) -> HttpServer {
        let python = python();
        let stderr = tempfile::NamedTempFile::new().expect("a temp file for the server's stderr");
        let child = Command::new(&python)
            .arg(server_script())
            .args(["http", "--port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr.reopen().expect("reopen the stderr temp file"))
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {} {}: {e}", python.display(), server_script().display()));
        let mut server = HttpServer { url: format!("http://127.0.0.1:{port}/mcp"), port, child, stderr };
        server.wait_ready().await;
        server
    }

    /// Waits for the server's `listening on` line (printed once the port is bound, so a port someone else holds
    /// is not mistaken for this server), then for a TCP connection to succeed.
    async fn wait_ready(&mut self) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the MCP test server") {
                panic!(
                    "the MCP test server for port {} exited ({status}) before accepting connections; stderr:\n{}",
                    self.port,
                    self.stderr()
                );
            }
            if self.stderr().contains("toolgate-test-mcp: listening on")
                && tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.is_ok()
            {
                return;
            }
            if Instant::now() >= deadline {
                self.kill();
                panic!(
                    "the MCP test server did not accept connections on 127.0.0.1:{} within {START_TIMEOUT:?}; stderr:\n{}",
                    self.port,
                    self.stderr()
                );
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr.path()).unwrap_or_else(|e| format!("<cannot read the stderr file: {e}>"))
    }

    /// SIGKILLs the server and waits (up to 5 s) until it is gone, so its port is free again.
    pub fn kill(&mut self) {
        let _ = self.child.start_kill();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                #[expect(clippy::disallowed_methods, reason = "a sync teardown, 10 ms at a time for at most 5 s")]
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }
}

/// Sends SIGKILL to a process, such as the stdio server the gateway started (its `pid` tool tells the id).
pub fn kill_pid(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap_or_else(|e| panic!("cannot run `kill -9 {pid}`: {e}"));
    assert!(status.success(), "`kill -9 {pid}` failed: {status}");
}

/// Whether a process with this id exists (`kill -0`; a zombie still counts).
pub fn pid_alive(pid: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

// The gateway's side: MCP server definitions and the McpRegistry admin client.

pub fn stdio_server(name: &str) -> pb::McpServer {
    let (command, args) = stdio_command();
    let stdio = pb::McpStdio { command, args, ..Default::default() };
    pb::McpServer { name: name.into(), transport: Some(pb::mcp_server::Transport::Stdio(stdio)), ..Default::default() }
}

pub fn http_server(name: &str, url: &str) -> pb::McpServer {
    let http = pb::McpHttp { url: url.into(), ..Default::default() };
    pb::McpServer { name: name.into(), transport: Some(pb::mcp_server::Transport::Http(http)), ..Default::default() }
}

/// The server with `user_id` injected into its `whoami` tool, as an operator's overlay.
pub fn with_injection(mut server: pb::McpServer) -> pb::McpServer {
    let inject = vec![pb::Injection { param: "user_id".into(), from: "user_id".into() }];
    server.overlays.insert("whoami".into(), pb::ToolOverlay { inject, ..Default::default() });
    server
}

pub async fn admin(gw: &crate::support::Gateway) -> McpRegistryClient<Channel> {
    McpRegistryClient::new(crate::support::connect(gw.addr).await)
}

pub async fn add(admin: &mut McpRegistryClient<Channel>, server: pb::McpServer) -> pb::McpServerStatus {
    let request = pb::AddMcpServerRequest { server: Some(server) };
    admin.add_mcp_server(request).await.expect("AddMcpServer").into_inner().status.expect("a status")
}

pub async fn status(admin: &mut McpRegistryClient<Channel>, name: &str) -> pb::McpServerStatus {
    let servers = admin.list_mcp_servers(pb::ListMcpServersRequest {}).await.unwrap().into_inner().servers;
    servers.into_iter().find(|s| s.server.as_ref().is_some_and(|d| d.name == name)).expect("the server is listed")
}

/// Calls until `done` accepts the message, for up to 20 s; returns that message.
pub async fn call_until(
    gw: &mut crate::support::Gateway,
    name: &str,
    arguments: &str,
    done: impl Fn(&pb::ToolMessage) -> bool,
) -> pb::ToolMessage {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let message = gw.call(name, arguments).await;
        if done(&message) {
            return message;
        }
        assert!(tokio::time::Instant::now() < deadline, "{name} never got there; last answer: {message:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
