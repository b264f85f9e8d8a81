//! The gateway-wide cap on calls in flight: one semaphore shared by gRPC's `Execute` and `ExecuteBatch` and the MCP
//! front door's `tools/call`, and where a refused request is counted. Each door answers a refusal in its own
//! protocol (gRPC's layers in `grpc/shed.rs`, MCP's in `mcp_front`), with the same retry hint.

use crate::telemetry::Telemetry;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a shed caller is told to wait before it tries again: about the time a typical call takes to leave
/// room, short enough that a burst's retries are not all pushed far out.
pub const RETRY_AFTER_MS: u64 = 100;

/// The cap shared by every connection, door and method, and where shed requests are counted.
#[derive(Clone)]
pub struct Shedding {
    in_flight: Arc<Semaphore>,
    max: usize,
    telemetry: Arc<Telemetry>,
}

impl Shedding {
    pub fn new(max: usize, telemetry: Arc<Telemetry>) -> Self {
        Self { in_flight: Arc::new(Semaphore::new(max)), max, telemetry }
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max
    }

    /// The permits, for a layer that holds one per request (gRPC's data plane).
    pub fn semaphore(&self) -> &Arc<Semaphore> {
        &self.in_flight
    }

    /// Counts a request refused under `method`.
    pub fn shed(&self, method: &'static str) {
        self.telemetry.shed(method);
    }

    /// A permit for a call that comes through a door without a layer of its own (the MCP front door's
    /// `tools/call`), held until the call is answered; `None`, counted as shed under `method`, when every permit
    /// is taken.
    pub fn try_enter(&self, method: &'static str) -> Option<OwnedSemaphorePermit> {
        let permit = Arc::clone(&self.in_flight).try_acquire_owned().ok();
        if permit.is_none() {
            self.shed(method);
        }
        permit
    }
}
