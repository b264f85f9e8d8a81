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

const MAX_SAFE_LEN: usize = 64;
const HASH_HEX: usize = 8;

/// Maps a registry name to `^[A-Za-z0-9_-]{1,64}$`: other characters become `_`, and an over-long name keeps
/// its head plus a stable hash of the whole name, so distinct long names stay distinct.
pub fn provider_safe_name(name: &str) -> String {
    let mapped: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    if mapped.len() <= MAX_SAFE_LEN {
        return mapped;
    }
    let head = &mapped[..MAX_SAFE_LEN - HASH_HEX - 1];
    format!("{head}_{:08x}", fnv1a32(name.as_bytes()))
}

/// FNV-1a: tiny, stable across versions and platforms, good enough to keep long names apart.
fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x0100_0193))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_names() {
        assert_eq!(provider_safe_name("weather.get"), "weather_get");
        assert_eq!(provider_safe_name("a-b_c"), "a-b_c");
        let long_a = format!("{}.a", "x".repeat(80));
        let long_b = format!("{}.b", "x".repeat(80));
        let (a, b) = (provider_safe_name(&long_a), provider_safe_name(&long_b));
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert_eq!(a, provider_safe_name(&long_a), "stable");
    }
}
