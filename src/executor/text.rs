//! Calls a model wrote in its text: found by the pipeline, then, when the caller asks, run as one batch.

use super::{Executor, ReviewMode};
use crate::pipeline::{self, CallContext, MAX_TEXT_CALLS, TextExtraction, ToolCall, ToolMessage};
use std::sync::Arc;
use tokio::time::Instant;

impl Executor {
    /// The calls `text` holds to the tools the caller sees (of `tools`, when it names any).
    pub fn calls_in_text(&self, ctx: &CallContext, text: &str, tools: &[String]) -> TextExtraction {
        let catalog = self.registry.catalog();
        pipeline::calls_from_text(&catalog, &ctx.tenant, text, self.settings.prepare.repair, tools)
    }

    /// Runs the calls found as `execute_batch` does, call `i` with the id `{id_prefix}-{i}` (set on the call),
    /// so the same request sent again is answered from the call-id record. Each message starts its repairs with
    /// `calls_from_text`.
    pub async fn run_text_calls(
        self: &Arc<Self>,
        found: &mut TextExtraction,
        id_prefix: &str,
        ctx: &CallContext,
        deadline: Option<Instant>,
        mode: ReviewMode,
    ) -> Vec<ToolMessage> {
        debug_assert!(found.calls.len() <= MAX_TEXT_CALLS);
        for (i, (call, _)) in found.calls.iter_mut().enumerate() {
            call.id = format!("{id_prefix}-{i}");
        }
        let calls: Vec<ToolCall> = found.calls.iter().map(|(call, _)| call.clone()).collect();
        let mut messages = self.execute_batch(&calls, ctx, deadline, mode).await;
        for (message, (_, repair)) in messages.iter_mut().zip(&found.calls) {
            message.repairs.insert(0, repair.clone());
        }
        messages
    }
}
