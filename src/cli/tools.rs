//! `toolgate tools register|list|get|delete`. Register reads a ToolSpec, an OpenAI function or an MCP tool.

use super::{ServerArg, status_text};
use crate::pb::v1::{self as pb, tool_registry_client::ToolRegistryClient};
use crate::registry::{Backend, HttpBackend, ToolSpec};
use serde_json::Value;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct ToolsArgs {
    #[command(subcommand)]
    command: ToolsCommand,
    #[command(flatten)]
    server: ServerArg,
}

#[derive(Debug, clap::Subcommand)]
enum ToolsCommand {
    /// Register tools from files: a ToolSpec (JSON or TOML), an OpenAI function or an MCP tool definition.
    Register {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Backend for definitions that have none: a ToolRuntime gRPC target.
        #[arg(long, conflicts_with = "http")]
        grpc: Option<String>,
        /// Backend for definitions that have none: an HTTP URL.
        #[arg(long)]
        http: Option<String>,
        /// Tenant for definitions that name none.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// List tools, as JSON.
    List {
        #[arg(long, default_value = "")]
        tenant: String,
        #[arg(long)]
        all_tenants: bool,
    },
    /// Show one tool, as JSON.
    Get {
        name: String,
        #[arg(long, default_value = "")]
        tenant: String,
    },
    /// Delete one tool.
    Delete {
        name: String,
        #[arg(long, default_value = "")]
        tenant: String,
    },
}

pub async fn run(args: ToolsArgs) -> Result<(), String> {
    let mut client = ToolRegistryClient::new(args.server.channel().await?);
    match args.command {
        ToolsCommand::Register { files, grpc, http, tenant } => {
            let backend =
                grpc.map(|target| Backend::Grpc { target }).or(http
                    .map(|url| Backend::Http(HttpBackend { url, method: String::new(), headers: Default::default() })));
            for file in files {
                for mut spec in read_specs(&file)? {
                    spec.backend = spec.backend.or(backend.clone());
                    if let (Some(t), true) = (&tenant, spec.tenant.is_empty()) {
                        spec.tenant = t.clone();
                    }
                    let request = pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) };
                    let response = client
                        .register_tool(request)
                        .await
                        .map_err(|s| format!("{}: {}", file.display(), status_text(s)))?
                        .into_inner();
                    let tool = response.tool.unwrap_or_default();
                    let verb = if response.created { "registered" } else { "replaced" };
                    out!("{verb} {} (version {})", tool.name, tool.version);
                }
            }
        }
        ToolsCommand::List { tenant, all_tenants } => {
            let tools = client
                .list_tools(pb::ListToolsRequest { tenant, all_tenants })
                .await
                .map_err(status_text)?
                .into_inner()
                .tools;
            let specs = tools.into_iter().map(spec_json).collect::<Result<Vec<_>, _>>()?;
            out!("{}", serde_json::to_string_pretty(&specs).expect("JSON values serialize"));
        }
        ToolsCommand::Get { name, tenant } => {
            let tool = client
                .get_tool(pb::GetToolRequest { name, tenant })
                .await
                .map_err(status_text)?
                .into_inner()
                .tool
                .unwrap_or_default();
            out!("{}", serde_json::to_string_pretty(&spec_json(tool)?).expect("JSON values serialize"));
        }
        ToolsCommand::Delete { name, tenant } => {
            client.delete_tool(pb::DeleteToolRequest { name: name.clone(), tenant }).await.map_err(status_text)?;
            out!("deleted {name}");
        }
    }
    Ok(())
}

fn spec_json(tool: pb::ToolSpec) -> Result<Value, String> {
    Ok(serde_json::to_value(ToolSpec::try_from(tool)?).expect("a ToolSpec serializes"))
}

/// Reads one file: TOML by extension, JSON otherwise; a single definition or an array of them.
pub fn read_specs(path: &Path) -> Result<Vec<ToolSpec>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let value: Value = if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml")) {
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?
    } else {
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?
    };
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut obj) if obj.contains_key("tools") && obj.len() == 1 => match obj.remove("tools") {
            Some(Value::Array(items)) => items,
            _ => return Err(format!("{}: \"tools\" must be an array", path.display())),
        },
        other => vec![other],
    };
    items.into_iter().map(|item| spec_of(item).map_err(|e| format!("{}: {e}", path.display()))).collect()
}

/// Recognises a ToolSpec (`input_schema`), an OpenAI function (`parameters`) or an MCP tool (`inputSchema`).
fn spec_of(mut item: Value) -> Result<ToolSpec, String> {
    if item.get("type").and_then(Value::as_str) == Some("function") {
        item = item.get("function").cloned().ok_or("an OpenAI tool needs a \"function\" object")?;
    }
    let foreign_schema = item.get("parameters").or_else(|| item.get("inputSchema")).cloned();
    if let (Some(schema), None) = (foreign_schema, item.get("input_schema")) {
        let name = item.get("name").and_then(Value::as_str).ok_or("the definition needs a \"name\"")?;
        let description = item.get("description").and_then(Value::as_str).unwrap_or_default();
        return Ok(ToolSpec::offline(name, description, schema));
    }
    serde_path_to_error::deserialize(item).map_err(|e| spec_error(&e))
}

/// Where a definition is wrong, and how: `policy[0].name: missing`. A definition wrong at its top is perhaps not a
/// ToolSpec at all, and says the three shapes it could have been.
fn spec_error(err: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let inner = err.inner().to_string();
    let mut at = err.path().to_string();
    if at == "." {
        at.clear();
    }
    let reason = match inner.strip_prefix("missing field `").and_then(|rest| rest.split_once('`')) {
        Some((field, _)) => {
            at = if at.is_empty() { field.to_owned() } else { format!("{at}.{field}") };
            "missing".to_owned()
        }
        None => inner,
    };
    if at.contains(['.', '[']) {
        format!("{at}: {reason}")
    } else if at.is_empty() {
        format!("not a ToolSpec, OpenAI function or MCP tool: {reason}")
    } else {
        format!("not a ToolSpec, OpenAI function or MCP tool: {at}: {reason}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn recognises_the_three_shapes() {
        let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
        let openai =
            json!({"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": schema}});
        let mcp = json!({"name": "get_weather", "description": "d", "inputSchema": schema});
        let spec = json!({"name": "get_weather", "description": "d", "input_schema": schema.to_string(),
            "backend": {"http": {"url": "http://127.0.0.1:1/w"}}});
        for item in [openai, mcp, spec] {
            let got = spec_of(item.clone()).unwrap();
            assert_eq!((got.name.as_str(), &got.input_schema), ("get_weather", &schema), "{item}");
        }
        assert!(spec_of(json!({"name": "x"})).unwrap_err().contains("not a ToolSpec"));
    }

    #[test]
    fn a_wrong_definition_says_where() {
        let spec = |policy: serde_json::Value| json!({"name": "t", "input_schema": {"type": "object"}, "backend": {"worker": {}}, "policy": policy});
        let nameless = spec_of(spec(json!([{"when": "true", "action": "deny"}]))).unwrap_err();
        assert_eq!(nameless, "policy[0].name: missing");
        let second = spec_of(spec(json!([{"name": "a", "when": "true", "action": "deny"}, {"name": 3}]))).unwrap_err();
        assert!(second.starts_with("policy[1].name: "), "{second}");
        let top = spec_of(json!({"input_schema": {"type": "object"}})).unwrap_err();
        assert_eq!(top, "not a ToolSpec, OpenAI function or MCP tool: name: missing");
    }

    #[test]
    fn the_example_spec_compiles() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tools/get_weather.json");
        let spec = read_specs(&path).unwrap().remove(0);
        let documents = crate::registry::SchemaDocuments::default();
        assert!(crate::registry::CompiledTool::compile(spec, &documents).is_ok());
    }
}
