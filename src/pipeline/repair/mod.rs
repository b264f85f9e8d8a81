//! Repair: re-reads what the model wrote, guided by the tool's schema. Runs only on calls that fail it.
//!
//! Every change is one recorded `Repair`; a change is kept only when the whole result validates. Nothing is
//! invented: values change type, name or nesting, never meaning. See `rules` for the list.

mod coerce;
mod lookup;
mod rules;
mod shape;
mod syntax;
pub(crate) mod view;
mod walk;

pub use rules::{RepairRule, RepairSettings};
pub use syntax::{Reading, SyntaxError, nesting_within, read_lenient};

use super::CallError;
use super::message::Repair;
use crate::registry::CompiledTool;
use serde_json::Value;

/// Arguments that now validate, and how they got there.
#[derive(Debug, PartialEq)]
pub struct Repaired {
    pub value: Value,
    pub repairs: Vec<Repair>,
}

/// Repairs arguments that fail the tool's model-facing schema. None when repair is off or the result would not
/// validate; an error (MALFORMED) when they cannot be repaired at all: too large for the work a call may take, or
/// a string the schema wants read as JSON that nests past the depth limit.
pub fn repair_arguments(
    tool: &CompiledTool,
    arguments: &Value,
    settings: RepairSettings,
    max_depth: usize,
) -> Result<Option<Repaired>, CallError> {
    if !settings.enabled {
        return Ok(None);
    }
    let (schema, validator) = (tool.model_schema(), tool.model_validator());
    let mut walker = walk::Walker::new(schema, settings, &tool.spec.repair, max_depth);
    let value = walker.arguments(arguments.clone(), schema, &validator);
    if let Some(reason) = walker.refusal {
        return Err(CallError::Malformed(reason));
    }
    Ok((!walker.repairs.is_empty() && validator.is_valid(&value))
        .then_some(Repaired { value, repairs: walker.repairs }))
}
