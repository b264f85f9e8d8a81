//! Calls a model wrote in its text: found by the pipeline, then, when the caller asks, run as one batch.

use super::offload::CpuPool;
use super::{Executor, ReviewMode};
use crate::pipeline::{self, CallContext, CallError, MAX_TEXT_CALLS, RepairSettings, TextExtraction, TextFormat};
use crate::pipeline::{ToolCall, ToolMessage};
use crate::registry::Catalog;
use crate::telemetry::TextRead;
use std::sync::Arc;
use tokio::time::Instant;

impl Executor {
    /// The calls `text` holds, written in `format`, to the tools the caller sees (of `tools`, when it names any).
    /// Every text is read on the CPU pool, as a call's large arguments are checked there: reading is bounded by
    /// the text's length, but a few milliseconds of it must not hold up the async workers.
    pub async fn calls_in_text(
        &self,
        ctx: &CallContext,
        text: String,
        format: TextFormat,
        tools: Vec<String>,
        deadline: Option<Instant>,
    ) -> Result<TextExtraction, CallError> {
        let (catalog, repair) = (self.registry.catalog(), self.settings.prepare.repair);
        let (started, bytes) = (Instant::now(), text.len());
        let asked = Asked { tenant: ctx.tenant.clone(), text, format, tools };
        let found = find(catalog, &self.cpu, repair, asked, deadline).await?;
        let took = started.elapsed();
        self.telemetry.text_read(&TextRead { format: format.name(), bytes, found: &found.found, took });
        Ok(found)
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

/// What a caller asked to have read: its tenant, the text, its format, and the tools it names.
struct Asked {
    tenant: String,
    text: String,
    format: TextFormat,
    tools: Vec<String>,
}

/// `pipeline::calls_from_text`, on the CPU pool: refused as UNAVAILABLE, retryable, when the pool's queue is
/// full, and as TIMEOUT when the deadline passes before a thread takes it up.
async fn find(
    catalog: Arc<Catalog>,
    cpu: &CpuPool,
    repair: RepairSettings,
    asked: Asked,
    deadline: Option<Instant>,
) -> Result<TextExtraction, CallError> {
    let read =
        move || pipeline::calls_from_text(&catalog, &asked.tenant, &asked.text, asked.format, repair, &asked.tools);
    let started = Instant::now();
    cpu.run(deadline, read).await.map_err(|refused| {
        refused.into_error(started, |queued| {
            format!("the gateway is reading {queued} other long texts or large calls; try again shortly")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::offload;
    use crate::registry::{CompiledTool, SchemaDocuments, ToolSpec};
    use serde_json::json;

    fn catalog() -> Arc<Catalog> {
        let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
        let tool = CompiledTool::compile(ToolSpec::offline("get_weather", "", schema), &SchemaDocuments::default());
        Arc::new(Catalog::new(vec![Arc::new(tool.unwrap())]))
    }

    fn asked(text: &str) -> Asked {
        Asked { tenant: String::new(), text: text.to_owned(), format: TextFormat::Auto, tools: Vec::new() }
    }

    #[tokio::test]
    async fn every_text_short_or_long_is_read_on_the_cpu_pool() {
        let (pool, repair) = (CpuPool::new(1), RepairSettings::default());
        // The pool's one thread, held until `hold` sends.
        let (started, running) = std::sync::mpsc::channel::<()>();
        let (hold, held) = std::sync::mpsc::channel::<()>();
        let mut blocker = std::pin::pin!(pool.run(None, move || {
            started.send(()).unwrap();
            held.recv().ok()
        }));
        assert!(futures::poll!(blocker.as_mut()).is_pending());
        running.recv().unwrap();
        let short = "[get_weather(city='Oslo')]";
        let long = format!("{}{short}", " ".repeat(offload::HEAVY_ARGUMENT_BYTES));
        let mut short_waits = std::pin::pin!(find(catalog(), &pool, repair, asked(short), None));
        let mut long_waits = std::pin::pin!(find(catalog(), &pool, repair, asked(&long), None));
        assert!(futures::poll!(short_waits.as_mut()).is_pending(), "a short text waits for the pool's thread");
        assert!(futures::poll!(long_waits.as_mut()).is_pending(), "so does a long one");
        hold.send(()).unwrap();
        blocker.await.unwrap();
        for (text, waiting) in [(short, short_waits.await.unwrap()), (long.as_str(), long_waits.await.unwrap())] {
            let direct = pipeline::calls_from_text(&catalog(), "", text, TextFormat::Auto, repair, &[]);
            assert_eq!(waiting.calls, direct.calls);
            assert_eq!(waiting.calls.len(), 1);
        }
    }
}
