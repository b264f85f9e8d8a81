//! The supervisor of one server: connect, import, keep the tools in step (list_changed, periodic refresh), and
//! on a lost session start over with exponential backoff, until stopped.

use super::connect::{self, Session};
use super::import;
use super::server::Server;
use crate::registry::{Registry, SchemaDocuments, compile_schema};
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
}

pub async fn supervise(server: Arc<Server>, ctx: Arc<Context>) {
    let mut stop = server.stop_signal();
    let mut backoff = MIN_BACKOFF;
    let name = &server.spec.name;
    while !*stop.borrow() {
        let started = Instant::now();
        match connect::connect(&server.spec, Arc::clone(&server.changed), ctx.connect_timeout).await {
            Ok(session) => {
                let number = server.connected(session.peer().clone());
                tracing::info!(server = %name, "MCP server connected");
                let Some(reason) = run(&server, &ctx, (number, session), &mut stop).await else { break };
                tracing::warn!(server = %name, %reason, "MCP session lost; reconnecting");
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

/// Imports the tools, then keeps them in step until the session is lost (its reason) or the server is stopped
/// (`None`). Either way calls stop using the session at once, and it is closed before this returns, which ends a
/// stdio server's process.
async fn run(
    server: &Server,
    ctx: &Context,
    (number, session): (u64, Session),
    stop: &mut watch::Receiver<bool>,
) -> Option<String> {
    let peer = session.peer().clone();
    let cancel = session.cancellation_token();
    let mut done = std::pin::pin!(session.waiting());
    let imported = refresh(server, ctx, &peer).await;
    server.attempted();
    if let Err(reason) = imported {
        server.disconnected(&reason);
        cancel.cancel();
        let _ = done.await;
        return Some(reason);
    }
    let every = server.spec.refresh_every();
    let mut ticks = tokio::time::interval_at(Instant::now() + every, every);
    let lost = loop {
        let refreshed = tokio::select! {
            _ = &mut done => {
                let reason = "the server closed the session";
                server.disconnected(reason);
                return Some(reason.into());
            }
            _ = stop.changed() => None,
            () = server.broken.notified() => match server.is_broken(number) {
                true => Some(Err("a call found the connection lost".to_owned())),
                false => Some(Ok(())),
            },
            () = server.changed.notified() => Some(refresh(server, ctx, &peer).await),
            _ = ticks.tick() => Some(refresh(server, ctx, &peer).await),
        };
        match refreshed {
            None => break None,
            Some(Ok(())) => {}
            Some(Err(reason)) => break Some(reason),
        }
    };
    server.disconnected(lost.as_deref().unwrap_or("stopped"));
    cancel.cancel();
    let _ = done.await;
    lost
}

/// Reads the server's whole tool list and brings the registry in step with it.
async fn refresh(server: &Server, ctx: &Context, peer: &Peer<RoleClient>) -> Result<(), String> {
    let listed = tokio::time::timeout(ctx.connect_timeout, peer.list_all_tools()).await;
    let tools = listed
        .map_err(|_| format!("tools/list did not answer within {} ms", ctx.connect_timeout.as_millis()))?
        .map_err(|e| format!("tools/list failed: {e}"))?;
    let (specs, mut problems) = import::specs(&server.spec, &tools);
    let mut outputs = HashMap::new();
    for (own_name, spec) in &specs {
        if let Some(schema) = &spec.output_schema
            && let Ok(validator) = compile_schema(schema, &ctx.documents)
        {
            outputs.insert(own_name.clone(), Arc::new(validator));
        }
    }
    let imported = import::sync(&ctx.registry, &server.spec, specs).await;
    problems.extend(imported.problems);
    for problem in &problems {
        tracing::warn!(server = %server.spec.name, %problem, "MCP tool not imported");
    }
    let names: Vec<String> = imported.tools.into_iter().map(|(name, _)| name).collect();
    tracing::info!(server = %server.spec.name, tools = names.len(), "MCP tools imported");
    server.imported(names, problems, outputs);
    Ok(())
}
