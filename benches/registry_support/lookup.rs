//! Lookup cost against catalogs of growing size: `resolve_tool` for an exact name and for a normalized variant.

use super::tools::{tool_name, tool_spec, variant_name};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;
use toolgate::pipeline::{RepairSettings, resolve_tool};
use toolgate::registry::{Catalog, CompiledTool, SchemaDocuments};

/// This many distinct names, spread over the catalog, are looked up in turn, so one hot entry is not all that is
/// measured; the same number at every size, so the sizes differ only in the catalog.
const PROBES: usize = 100;
/// Timed rounds per case; the median is reported.
const ROUNDS: usize = 5;

/// What the in-process part measured.
pub struct Lookups {
    pub costs: Vec<LookupCost>,
    /// Microseconds a tool's first call spends compiling its validator (registration only checked the schema).
    pub first_call_compile_us: f64,
}

/// Nanoseconds per `resolve_tool` with `tools` registered.
pub struct LookupCost {
    pub tools: usize,
    pub exact_ns: f64,
    pub variant_ns: f64,
}

/// Compiles the largest catalog once and measures each size over a prefix of it.
pub fn measure(sizes: &[usize], lookups: usize) -> Result<Lookups, String> {
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let documents = SchemaDocuments::default();
    let compiled: Vec<Arc<CompiledTool>> = (0..largest)
        .map(|i| CompiledTool::compile(tool_spec(i), &documents).map(Arc::new).map_err(|e| format!("tool {i}: {e}")))
        .collect::<Result<_, _>>()?;
    let mut costs = Vec::new();
    for &tools in sizes {
        let catalog = Catalog::new(compiled[..tools].to_vec());
        let probes: Vec<usize> = (0..PROBES).map(|k| k * tools / PROBES).collect();
        let exact: Vec<(usize, String)> = probes.iter().map(|&i| (i, tool_name(i))).collect();
        let variant: Vec<(usize, String)> = probes.iter().map(|&i| (i, variant_name(i))).collect();
        check(&catalog, &exact)?;
        check(&catalog, &variant)?;
        let exact_ns = median_ns(&catalog, &exact, lookups);
        let variant_ns = median_ns(&catalog, &variant, lookups);
        costs.push(LookupCost { tools, exact_ns, variant_ns });
    }
    let start = Instant::now();
    for tool in &compiled {
        black_box(tool.model_validator());
    }
    let first_call_compile_us = start.elapsed().as_secs_f64() * 1e6 / compiled.len().max(1) as f64;
    Ok(Lookups { costs, first_call_compile_us })
}

/// Every probe resolves to its own tool, so the timing measures a hit, not a miss.
fn check(catalog: &Catalog, names: &[(usize, String)]) -> Result<(), String> {
    for (i, name) in names {
        let resolved =
            resolve_tool(catalog, "", name, RepairSettings::default()).map_err(|e| format!("{name}: {e:?}"))?;
        if resolved.tool.spec.name != tool_name(*i) {
            return Err(format!("{name} resolved to {}", resolved.tool.spec.name));
        }
    }
    Ok(())
}

fn median_ns(catalog: &Catalog, names: &[(usize, String)], lookups: usize) -> f64 {
    time_ns(catalog, names, lookups / 10);
    let mut rounds: Vec<f64> = (0..ROUNDS).map(|_| time_ns(catalog, names, lookups)).collect();
    rounds.sort_by(f64::total_cmp);
    rounds[ROUNDS / 2]
}

fn time_ns(catalog: &Catalog, names: &[(usize, String)], lookups: usize) -> f64 {
    let settings = RepairSettings::default();
    let start = Instant::now();
    for k in 0..lookups {
        let name = names[k % names.len()].1.as_str();
        let _ = black_box(resolve_tool(black_box(catalog), "", black_box(name), settings));
    }
    start.elapsed().as_nanos() as f64 / lookups.max(1) as f64
}
