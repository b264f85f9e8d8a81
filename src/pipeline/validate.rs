//! Validate: the arguments against the tool's compiled JSON Schema, reporting every violation.

use super::message::Violation;
use crate::registry::CompiledTool;
use serde_json::Value;

/// Every violation of what the model wrote against the model-facing schema (injected parameters are not the
/// model's to write, so never named); empty when valid. The call path checks `is_valid` first, so this runs
/// only to describe a refusal.
pub fn validate_arguments(tool: &CompiledTool, arguments: &Value) -> Vec<Violation> {
    tool.model_validator()
        .iter_errors(arguments)
        .map(|e| Violation {
            instance_path: e.instance_path().to_string(),
            schema_path: e.schema_path().to_string(),
            message: e.to_string(),
        })
        .collect()
}
