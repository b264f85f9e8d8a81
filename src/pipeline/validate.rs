//! Validate: the arguments against the tool's compiled JSON Schema, reporting every violation.

use super::message::Violation;
use crate::registry::CompiledTool;
use serde_json::Value;

/// Every violation of the tool's input schema; empty when the arguments are valid.
pub fn validate_arguments(tool: &CompiledTool, arguments: &Value) -> Vec<Violation> {
    if tool.validator.is_valid(arguments) {
        return Vec::new();
    }
    tool.validator
        .iter_errors(arguments)
        .map(|e| Violation {
            instance_path: e.instance_path().to_string(),
            schema_path: e.schema_path().to_string(),
            message: e.to_string(),
        })
        .collect()
}
