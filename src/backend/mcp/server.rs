//! One MCP server as the gateway holds it: its definition, its live session's peer, what its last import did,
//! and the signals its supervisor waits on.

use super::spec::McpServerSpec;
use jsonschema::Validator;
use rmcp::service::{Peer, RoleClient};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::{Notify, watch};

/// What an admin sees of a server.
#[derive(Debug, Clone, PartialEq)]
pub struct McpStatus {
    /// Redacted: env and header values hidden.
    pub spec: McpServerSpec,
    pub connected: bool,
    pub tools: Vec<String>,
    pub problems: Vec<String>,
    pub last_error: String,
    pub connects: u32,
    pub output_violations: u64,
}

#[derive(Default)]
struct Health {
    connected: bool,
    tools: Vec<String>,
    problems: Vec<String>,
    last_error: String,
    connects: u32,
}

/// A tool's compiled outputSchema, and the schema itself, from which a refused result's violation is described
/// within a fixed budget (`pipeline::violations`; jsonschema's own error collection is unbounded).
pub struct OutputSchema {
    pub validator: Validator,
    pub schema: serde_json::Value,
}

pub struct Server {
    pub spec: McpServerSpec,
    /// The live session's peer, with the session's number.
    peer: RwLock<Option<(u64, Peer<RoleClient>)>>,
    sessions: AtomicU64,
    /// The number of the session a call last found broken.
    broken_session: AtomicU64,
    health: Mutex<Health>,
    /// Compiled outputSchemas, by the tool's own name on the server.
    outputs: RwLock<HashMap<String, Arc<OutputSchema>>>,
    output_violations: AtomicU64,
    /// `notifications/tools/list_changed` arrived.
    pub changed: Arc<Notify>,
    /// A call found a session broken; `broken_session` says which.
    pub broken: Notify,
    stop: watch::Sender<bool>,
    /// Bumped after each connection attempt, so `add` can wait for the first one.
    attempts: watch::Sender<u32>,
    supervisor: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Server {
    pub fn new(spec: McpServerSpec) -> Self {
        Self {
            spec,
            peer: RwLock::new(None),
            sessions: AtomicU64::new(0),
            broken_session: AtomicU64::new(0),
            health: Mutex::new(Health::default()),
            outputs: RwLock::new(HashMap::new()),
            output_violations: AtomicU64::new(0),
            changed: Arc::new(Notify::new()),
            broken: Notify::new(),
            stop: watch::Sender::new(false),
            attempts: watch::Sender::new(0),
            supervisor: Mutex::new(None),
        }
    }

    /// The live session's number and peer.
    pub fn peer(&self) -> Option<(u64, Peer<RoleClient>)> {
        self.peer.read().expect("peer lock").clone()
    }

    /// A call found session `session` broken: its supervisor opens a new one.
    pub fn report_broken(&self, session: u64) {
        self.broken_session.fetch_max(session, Ordering::Relaxed);
        self.broken.notify_one();
    }

    /// Whether session `session` was reported broken. A report about an earlier session is stale; a later one
    /// cannot exist while `session` is live.
    pub fn is_broken(&self, session: u64) -> bool {
        self.broken_session.load(Ordering::Relaxed) >= session
    }

    /// A refresh of the live session failed: shown as the last error, the session kept.
    pub fn refresh_failed(&self, reason: &str) {
        reason.clone_into(&mut self.health.lock().expect("health lock").last_error);
    }

    pub fn output(&self, tool: &str) -> Option<Arc<OutputSchema>> {
        self.outputs.read().expect("outputs lock").get(tool).cloned()
    }

    pub fn count_output_violation(&self) {
        self.output_violations.fetch_add(1, Ordering::Relaxed);
    }

    /// A new session is up; returns its number.
    pub fn connected(&self, peer: Peer<RoleClient>) -> u64 {
        let session = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        *self.peer.write().expect("peer lock") = Some((session, peer));
        let mut health = self.health.lock().expect("health lock");
        health.connected = true;
        health.connects += 1;
        health.last_error.clear();
        session
    }

    /// The session is gone: calls answer UNAVAILABLE until the next one.
    pub fn disconnected(&self, reason: &str) {
        *self.peer.write().expect("peer lock") = None;
        let mut health = self.health.lock().expect("health lock");
        health.connected = false;
        reason.clone_into(&mut health.last_error);
    }

    /// The output schemas results are checked against from now on.
    pub fn check_outputs(&self, outputs: HashMap<String, Arc<OutputSchema>>) {
        *self.outputs.write().expect("outputs lock") = outputs;
    }

    pub fn imported(&self, tools: Vec<String>, problems: Vec<String>) {
        let mut health = self.health.lock().expect("health lock");
        (health.tools, health.problems) = (tools, problems);
    }

    pub fn attempted(&self) {
        self.attempts.send_modify(|n| *n += 1);
    }

    /// Waits until at least one connection attempt has finished.
    pub async fn first_attempt(&self) {
        let mut attempts = self.attempts.subscribe();
        let _ = attempts.wait_for(|n| *n > 0).await;
    }

    pub fn stop_signal(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    pub fn set_supervisor(&self, handle: tokio::task::JoinHandle<()>) {
        *self.supervisor.lock().expect("supervisor lock") = Some(handle);
    }

    /// Stops the supervisor and waits until its session, and so its process, is closed.
    pub async fn stop(&self) {
        self.stop.send_replace(true);
        let handle = self.supervisor.lock().expect("supervisor lock").take();
        if let Some(handle) = handle {
            let _ = handle.await;
        }
    }

    pub fn status(&self) -> McpStatus {
        let health = self.health.lock().expect("health lock");
        McpStatus {
            spec: self.spec.redacted(),
            connected: health.connected,
            tools: health.tools.clone(),
            problems: health.problems.clone(),
            last_error: health.last_error.clone(),
            connects: health.connects,
            output_violations: self.output_violations.load(Ordering::Relaxed),
        }
    }
}
