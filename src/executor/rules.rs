//! Policy rules in the executor: the rules that apply to a call's tool (the config's that match it, then its
//! own), judged on the arguments that would run. A call whose rules could cost more than a few milliseconds is
//! judged on the CPU pool, off the async workers, as large arguments are checked.

use super::CallRequest;
use super::offload::{self, CpuPool};
use crate::pipeline::{CallContext, CallError, Prepared};
use crate::policy::rules::{self, Bindings, GatewayRules, Input, Rule, Verdict};
use crate::registry::CompiledTool;
use std::sync::Arc;
use std::time::SystemTime;

/// Rules whose bound, summed, is past this many units of work are judged on the CPU pool.
const HEAVY_WORK: u64 = 1 << 20;

/// The rules for `tool`, in order: the config's that match it, then its own; no allocation for a tool without
/// any when the config has none.
pub(super) fn for_tool(gateway: &GatewayRules, tool: &CompiledTool) -> Vec<Arc<Rule>> {
    if gateway.is_empty() {
        return tool.rules.clone();
    }
    gateway.for_tool(&tool.spec.name, &tool.spec.labels, &tool.rules)
}

/// What `rules` say of the prepared call. Refused as UNAVAILABLE (retryable) when it had to wait for the CPU pool
/// and the pool is full, or as TIMEOUT when the caller's deadline passed before it was judged.
pub(super) async fn judge(
    cpu: &CpuPool,
    rules: &[Arc<Rule>],
    prepared: &Prepared,
    req: CallRequest<'_>,
) -> Result<Verdict, CallError> {
    let now = SystemTime::now();
    let bytes = prepared.arguments_text.len();
    let n = u64::try_from(bytes).unwrap_or(u64::MAX);
    // The elements of a call's lists never outnumber its bytes: a bound for both, without reading the call.
    let work = rules.iter().fold(0u64, |acc, rule| acc.saturating_add(rule.work_bound(n, n)));
    if bytes < offload::HEAVY_ARGUMENT_BYTES && work < HEAVY_WORK {
        return Ok(judge_now(rules, &prepared.arguments, bytes, req.ctx, &prepared.tool, now));
    }
    let started = tokio::time::Instant::now();
    let (rules, args, ctx, tool) =
        (rules.to_vec(), prepared.arguments.clone(), req.ctx.clone(), Arc::clone(&prepared.tool));
    let judged = cpu.run(req.deadline, move || judge_now(&rules, &args, bytes, &ctx, &tool, now)).await;
    judged.map_err(|refused| {
        refused.into_error(started, |queued| {
            format!("the gateway is judging {queued} other calls' policy rules; try again shortly")
        })
    })
}

fn judge_now(
    rules: &[Arc<Rule>],
    args: &serde_json::Value,
    args_bytes: usize,
    ctx: &CallContext,
    tool: &CompiledTool,
    now: SystemTime,
) -> Verdict {
    let input = Input {
        args,
        args_bytes,
        user_id: &ctx.user_id,
        tenant: &ctx.tenant,
        session_id: &ctx.session_id,
        values: &ctx.values,
        tool: &tool.spec.name,
        labels: &tool.spec.labels,
        now,
    };
    rules::judge(rules, &Bindings::new(&input))
}
