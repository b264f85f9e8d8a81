//! Connected workers: processes that serve their own tools over a `ToolWorker.Connect` stream.

use super::{BackendError, Invocation, Output};

/// The workers connected now, by the tools they serve.
#[derive(Default)]
pub struct WorkerPool {}

impl WorkerPool {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends the call to one of the tool's workers and waits for its result.
    pub async fn invoke(&self, call: Invocation<'_>) -> Result<Output, BackendError> {
        Err(BackendError::Unavailable(format!("no worker is connected for {}", call.tool)))
    }
}
