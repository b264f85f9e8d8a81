//! The gateway's shared core as the doors see it: `Core`, one handle to what `app` builds once at start (the
//! executor, the registry, the review queue, the backends, telemetry, and the cap on calls in flight), given to
//! every door as an `Arc<Core>`. A door reaches shared state through this handle and nothing else.

mod shedding;

pub use shedding::{RETRY_AFTER_MS, Shedding};

use crate::backend::Backends;
use crate::backend::mcp::McpHub;
use crate::backend::worker::WorkerPool;
use crate::executor::Executor;
use crate::registry::Registry;
use crate::review::ReviewQueue;
use crate::telemetry::Telemetry;
use std::sync::Arc;

/// What the doors share, built once by `app`. Every field is a handle (an `Arc`, or a clone sharing its state):
/// two doors holding the registry hold the same registry.
///
/// Each clone of the executor keeps the gateway's store open: `app` waits for all of them to be dropped at
/// shutdown, so a door drops its `Core` when it stops.
pub struct Core {
    /// Runs a call end to end: the one call path every door goes through.
    pub executor: Arc<Executor>,
    /// The tools, for listing them and following their changes.
    pub registry: Arc<Registry>,
    /// The review queue, for reviewers' verdicts and a caller's own confirmation.
    pub reviews: Arc<ReviewQueue>,
    /// The backends' connections, the same ones the executor calls through, for their health.
    pub backends: Backends,
    /// The MCP servers this gateway holds, for the admin plane.
    pub mcp: Arc<McpHub>,
    /// The connected workers, for the worker stream.
    pub workers: Arc<WorkerPool>,
    /// Spans, metrics and the recent calls the console shows.
    pub telemetry: Arc<Telemetry>,
    /// The one cap on calls in flight, shared by every door that runs calls.
    pub shedding: Shedding,
}
