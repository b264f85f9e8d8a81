//! Tool definitions as models see them (OpenAI, Anthropic, MCP, plain JSON Schema), and provider-safe names.

use crate::registry::CompiledTool;
use serde_json::{Value, json};

/// The formats `ListToolDefinitions` renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefinitionFormat {
    OpenAi,
    Anthropic,
    Mcp,
    JsonSchema,
}

impl DefinitionFormat {
    /// Provider formats need names matching `^[A-Za-z0-9_-]{1,64}$`.
    fn needs_safe_name(self) -> bool {
        matches!(self, DefinitionFormat::OpenAi | DefinitionFormat::Anthropic)
    }
}

/// One rendered definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// The name the model sees.
    pub name: String,
    /// The registry name it resolves back to.
    pub tool: String,
    pub definition: Value,
}

/// Renders one tool in `format`.
pub fn render(tool: &CompiledTool, format: DefinitionFormat) -> Definition {
    let spec = &tool.spec;
    let name = if format.needs_safe_name() { tool.safe_name.clone() } else { spec.name.clone() };
    let schema = tool.model_schema().clone();
    let definition = match format {
        DefinitionFormat::OpenAi => json!({
            "type": "function",
            "function": {"name": name, "description": spec.description, "parameters": schema},
        }),
        DefinitionFormat::Anthropic => json!({"name": name, "description": spec.description, "input_schema": schema}),
        DefinitionFormat::Mcp => {
            let mut def = json!({"name": name, "description": spec.description, "inputSchema": schema});
            if let Some(output) = &spec.output_schema {
                def["outputSchema"] = output.clone();
            }
            def
        }
        DefinitionFormat::JsonSchema => {
            let mut def = json!({"name": name, "description": spec.description, "input_schema": schema});
            if let Some(output) = &spec.output_schema {
                def["output_schema"] = output.clone();
            }
            def
        }
    };
    Definition { name, tool: spec.name.clone(), definition }
}
