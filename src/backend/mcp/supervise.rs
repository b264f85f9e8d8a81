//! The supervisor of one server: connect, import, keep the tools in step (list_changed, periodic refresh), and
//! on a lost session start over with exponential backoff, until stopped.

use super::connect::{self, McpSession};
use super::import;
use super::server::{OutputSchema, Server};
use crate::registry::{Registry, SchemaDocuments, compile_schema};
use crate::tls::ClientTls;
use rmcp::service::{Peer, RoleClient};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

const MIN_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A session that lasted this long resets the backoff.
const STABLE: Duration = Duration::from_secs(30);

/// What every supervisor shares.
pub struct Context {
    pub registry: Arc<Registry>,
    pub documents: SchemaDocuments,
    pub connect_timeout: Duration,
    /// `[tls.client]`, read again at each connection so that a session opened after a rotation uses the new files.
    pub tls: Arc<ClientTls>,
    /// What every server's session passes on to the gateway's callers.
    pub relays: super::listener::Relays,
}

/// Runs the supervisor, and runs it again if it panics (a bug in it or in a library), so a server is never left
/// unsupervised; the panic is logged and shown as the server's last error.
pub async fn guarded(server: Arc<Server>, ctx: Arc<Context>) {
    loop {
        let run = tokio::spawn(supervise(Arc::clone(&server), Arc::clone(&ctx))).await;
        match run {
            Err(err) if err.is_panic() && !*server.stop_signal().borrow() => {
                tracing::error!(server = %server.spec.name, error = %err, "the MCP supervisor panicked; restarting it");
                server.disconnected("internal error: the supervisor panicked; restarting it");
                tokio::time::sleep(MAX_BACKOFF / 10).await;
            }
            _ => return,
        }
    }
}

async fn supervise(server: Arc<Server>, ctx: Arc<Context>) {
    let mut stop = server.stop_signal();
    let mut backoff = MIN_BACKOFF;
    let name = &server.spec.name;
    while !*stop.borrow() {
        let started = Instant::now();
        match connect::connect(
            &server.spec,
            Arc::clone(&server.changed),
            ctx.relays.clone(),
            ctx.connect_timeout,
            &ctx.tls,
        )
        .await
        {
            Ok(session) => {
                let Some(reason) = run(&server, &ctx, session, &mut stop).await else { break };
                tracing::warn!(server = %name, %reason, retry_in = ?backoff, "MCP session lost; reconnecting");
                if started.elapsed() >= STABLE {
                    backoff = MIN_BACKOFF;
                }
            }
            Err(reason) => {
                tracing::warn!(server = %name, %reason, retry_in = ?backoff, "MCP server unreachable");
                server.disconnected(&reason);
            }
        }
        server.attempted();
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            _ = stop.changed() => break,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
    server.disconnected("stopped");
    tracing::info!(server = %name, "MCP server stopped");
}

/// Reads the tools, lets calls use the session once their output schemas are in place (so a result is never checked
/// against stale ones) and before the tools are imported (so no call finds a tool whose session is not in use); then keeps the tools in step until the session is lost (its reason) or the server is stopped
/// (`None`). Either way calls stop using the session at once, and it is closed before this returns, which ends a
/// stdio server's process.
async fn run(server: &Server, ctx: &Context, session: McpSession, stop: &mut watch::Receiver<bool>) -> Option<String> {
    let peer = session.peer().clone();
    let cancel = session.cancellation_token();
    let mut done = std::pin::pin!(session.waiting());
    let mut number = 0;
    let lost = match refresh(server, ctx, &peer, || number = server.connected(peer.clone())).await {
        Err(reason) => Some(reason),
        Ok(()) => {
            tracing::info!(server = %server.spec.name, "MCP server connected");
            server.attempted();
            keep_in_step(server, ctx, (number, &peer), done.as_mut(), stop).await
        }
    };
    server.disconnected(lost.as_deref().unwrap_or("stopped"));
    cancel.cancel();
    let _ = done.await;
    lost
}

/// Re-imports on `list_changed` and on every tick until the session ends, a call reports it broken, or the server
/// is stopped. A refresh that fails on a live session is recorded and retried at the next tick: the session and the
/// tools imported last stay in use.
async fn keep_in_step(
    server: &Server,
    ctx: &Context,
    (number, peer): (u64, &Peer<RoleClient>),
    mut done: std::pin::Pin<&mut impl std::future::Future>,
    stop: &mut watch::Receiver<bool>,
) -> Option<String> {
    let every = server.spec.refresh_every();
    let mut ticks = tokio::time::interval_at(Instant::now() + every, every);
    loop {
        let refreshed = tokio::select! {
            _ = &mut done => return Some("the server closed the session".into()),
            _ = stop.changed() => return None,
            () = server.broken.notified() => match server.is_broken(number) {
                true => return Some("a call found the connection lost".into()),
                false => continue,
            },
            () = server.changed.notified() => refresh(server, ctx, peer, || ()).await,
            _ = ticks.tick() => refresh(server, ctx, peer, || ()).await,
        };
        if let Err(reason) = refreshed {
            if peer.is_transport_closed() {
                return Some(reason);
            }
            tracing::warn!(server = %server.spec.name, %reason, "MCP refresh failed; keeping the session and its tools");
            server.refresh_failed(&reason);
        }
    }
}

/// Reads the server's whole tool list and brings the registry in step with it. `listed` runs once the output
/// schemas are in place and before the registry changes.
async fn refresh(server: &Server, ctx: &Context, peer: &Peer<RoleClient>, listed: impl FnOnce()) -> Result<(), String> {
    let answer = tokio::time::timeout(ctx.connect_timeout, peer.list_all_tools()).await;
    let tools = answer
        .map_err(|_| format!("tools/list did not answer within {} ms", ctx.connect_timeout.as_millis()))?
        .map_err(|e| format!("tools/list failed: {e}"))?;
    let (specs, mut problems) = import::specs(&server.spec, &tools);
    let mut outputs = HashMap::new();
    for (own_name, spec) in &specs {
        if let Some(schema) = &spec.output_schema
            && let Ok(validator) = compile_schema(schema, &ctx.documents)
        {
            outputs.insert(own_name.clone(), Arc::new(OutputSchema { validator, schema: schema.clone() }));
        }
    }
    server.check_outputs(outputs);
    listed();
    let imported = import::sync(&ctx.registry, &server.spec, specs).await;
    problems.extend(imported.problems);
    for problem in &problems {
        tracing::warn!(server = %server.spec.name, %problem, "MCP tool not imported");
    }
    let names: Vec<String> = imported.tools.into_iter().map(|(name, _)| name).collect();
    tracing::info!(server = %server.spec.name, tools = names.len(), "MCP tools imported");
    server.imported(names, problems);
    Ok(())
}
