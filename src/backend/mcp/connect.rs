//! Opening an MCP session: a supervised child process over stdio, or a streamable-HTTP endpoint, initialized
//! with the gateway's client handler (`listener`).

pub use super::listener::McpSession;
use super::listener::{ChangeListener, Relays};
use super::ordered::InOrder;
use super::origin::OriginClient;
use super::spec::{INHERITED_ENV, McpServerSpec, Transport, redacted_url};
use crate::tls::ClientTls;
use rmcp::ServiceExt;
use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Notify;

/// Starts (or reaches) the server and runs the MCP handshake, all within the connect timeout.
pub async fn connect(
    spec: &McpServerSpec,
    changed: Arc<Notify>,
    relays: Relays,
    timeout: Duration,
    tls: &ClientTls,
) -> Result<McpSession, String> {
    let listener =
        ChangeListener { changed, relays: relays.clone(), server: spec.name.clone(), tenant: spec.tenant.clone() };
    let handshake = async {
        match spec.transport() {
            Transport::Stdio { command, args, env, cwd } => {
                let child = spawn(&spec.name, command, args, env, cwd)?;
                listener
                    .serve(InOrder::new(child, relays.clone(), spec.name.clone()))
                    .await
                    .map_err(|e| format!("MCP handshake failed: {e}"))
            }
            Transport::Http { url, headers } => {
                let transport =
                    InOrder::new(http_transport(url, headers, timeout, tls)?, relays.clone(), spec.name.clone());
                let shown = redacted_url(url);
                listener.serve(transport).await.map_err(|e| match tls_failure(&e) {
                    Some(tls) => format!("MCP server {shown}: TLS: {tls}"),
                    None => format!("MCP handshake with {shown} failed: {e}"),
                })
            }
        }
    };
    tokio::time::timeout(timeout, handshake)
        .await
        .unwrap_or_else(|_| Err(format!("no MCP handshake within {} ms", timeout.as_millis())))
}

/// The server's process, in a process group of its own, with only the inherited variables and its own, and its
/// stderr read into the log. The transport ends the group when the session ends.
fn spawn(
    server: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&str>,
) -> Result<TokioChildProcess, String> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args).env_clear();
    for name in INHERITED_ENV {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    cmd.envs(env);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    // Its own process group, so stopping it also stops what it started (npx starts node, say).
    let mut cmd = process_wrap::tokio::CommandWrap::from(cmd);
    cmd.wrap(process_wrap::tokio::ProcessGroup::leader());
    let (child, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {command:?}: {e}"))?;
    tracing::info!(server, pid = child.id(), command, "MCP server process started");
    if let Some(stderr) = stderr {
        let server = server.to_owned();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(target: "toolgate::mcp::stderr", server = %server, "{}", truncated(&line));
            }
        });
    }
    Ok(child)
}

/// A stderr line as logged: at most 2 KiB, so a runaway server cannot flood one log record.
fn truncated(line: &str) -> &str {
    &line[..line.floor_char_boundary(2048)]
}

fn http_transport(
    url: &str,
    headers: &BTreeMap<String, String>,
    connect_timeout: Duration,
    tls: &ClientTls,
) -> Result<StreamableHttpClientTransport<OriginClient>, String> {
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let name = http::HeaderName::try_from(name.as_str()).map_err(|e| format!("header {name:?}: {e}"))?;
        let value = http::HeaderValue::try_from(value.as_str()).map_err(|e| format!("header {name}: {e}"))?;
        custom.insert(name, value);
    }
    let client = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .tls_backend_preconfigured((*tls.http()).clone())
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let config =
        StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom).reinit_on_expired_session(true);
    Ok(StreamableHttpClientTransport::with_client(OriginClient(client), config))
}

/// The TLS failure under a handshake that failed to send: the SDK's errors keep the HTTP client's error as a field,
/// not as a source, so the chain is walked by hand down to it.
fn tls_failure(error: &ClientInitializeError) -> Option<String> {
    let ClientInitializeError::TransportError { error, .. } = error else { return None };
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(err) = cause {
        if let Some(StreamableHttpError::Client(http)) = err.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return crate::tls::find_tls_failure(http);
        }
        cause = err.source();
    }
    None
}
