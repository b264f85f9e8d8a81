//! Validate: the arguments against the tool's compiled JSON Schema, reporting its violations within a budget.

use super::message::Violation;
use super::violations;
use crate::registry::{CompiledTool, Source};
use serde_json::Value;

/// The violations of what the model wrote against the model-facing schema (injected parameters are not the
/// model's to write, so never named), at most `violations::MAX_VIOLATIONS` and found within a fixed budget;
/// empty when valid. The call path checks `is_valid` first, so this runs only to describe a refusal.
pub fn validate_arguments(tool: &CompiledTool, arguments: &Value) -> Vec<Violation> {
    if tool.model_validator().is_valid(arguments) {
        return Vec::new();
    }
    violations::describe(tool.model_schema(), arguments)
}

/// Why the arguments with the context's values injected fail the whole input schema, for the operator: each
/// violation's parameter, and the context source injected there, never a value (the context's values are not
/// the model's to see, and the model's own were checked already).
pub fn describe_injected(tool: &CompiledTool, full: &Value) -> String {
    let lines: Vec<String> = violations::describe_masked(&tool.spec.input_schema, full)
        .into_iter()
        .map(|v| {
            let path = if v.instance_path.is_empty() { "the arguments" } else { v.instance_path.as_str() };
            let source = tool.injections.iter().find(|i| {
                let pointer = i.pointer();
                is_within(&v.instance_path, &pointer) || is_within(&pointer, &v.instance_path)
            });
            match source {
                Some(i) => format!("{path} (injected from {}): {}", source_name(&i.source), v.message),
                None => format!("{path}: {}", v.message),
            }
        })
        .collect();
    format!("the values injected into tool {:?} do not satisfy its input_schema: {}", tool.spec.name, lines.join("; "))
}

/// Whether the JSON pointer `path` is `ancestor` or lies under it.
fn is_within(path: &str, ancestor: &str) -> bool {
    path.strip_prefix(ancestor).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// A context source by name; a literal is named as one, not quoted.
fn source_name(source: &Source) -> String {
    match source {
        Source::Literal(_) => "a literal in the spec".to_owned(),
        other => other.describe(),
    }
}
