//! The check stage: the pure pipeline (resolve, parse, strip, validate, repair) on a call, on the async worker
//! when it is cheap, on the CPU pool when its arguments are large or its tool has a backtracking `pattern`.

use super::CallRequest;
use super::offload::{self, CpuPool};
use crate::pipeline::{self, Check, PipelineSettings, Rejected};
use crate::registry::Registry;
use tokio::time::Instant;

/// Checks the call against the registry's current catalog. On the CPU pool, it stops before it starts if the
/// caller has gone or its deadline has passed, and a pool with a full queue refuses the call as UNAVAILABLE,
/// retryable.
pub(super) async fn check(
    registry: &Registry,
    cpu: &CpuPool,
    options: &PipelineSettings,
    req: CallRequest<'_>,
) -> Result<Check, Rejected> {
    let (call, catalog) = (req.call, registry.catalog());
    // A tool with a backtracking `pattern` may spend the call's whole budget of pattern work: off the workers.
    let heavy = call.arguments.len() >= offload::HEAVY_ARGUMENT_BYTES
        || pipeline::exact_tool(&catalog, &req.ctx.tenant, &call.name).is_some_and(|tool| tool.backtracks);
    if !heavy {
        return pipeline::check_call(&catalog, call, &req.ctx.tenant, options);
    }
    let started = Instant::now();
    let (owned, tenant, options) = (call.clone(), req.ctx.tenant.clone(), *options);
    let error = match cpu.run(req.deadline, move || pipeline::check_call(&catalog, &owned, &tenant, &options)).await {
        Ok(checked) => return checked,
        Err(refused) => refused.into_error(started, |queued| {
            format!("the gateway is checking {queued} other calls with large arguments or costly patterns; try again shortly")
        }),
    };
    Err(Rejected { tool: None, repairs: Vec::new(), error })
}
