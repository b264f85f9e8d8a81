//! `toolgate definitions --format F`: the definitions a model should be bound to, as a JSON array.

use super::{ServerArg, status_text};
use crate::pb::v1 as pb;
use clap::ValueEnum;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Openai,
    Anthropic,
    Mcp,
    JsonSchema,
}

#[derive(Debug, clap::Args)]
pub struct DefinitionsArgs {
    #[arg(long, value_enum, default_value = "openai")]
    format: Format,
    #[arg(long, default_value = "")]
    tenant: String,
    #[command(flatten)]
    server: ServerArg,
}

pub async fn run(args: DefinitionsArgs) -> Result<(), String> {
    let format = match args.format {
        Format::Openai => pb::DefinitionFormat::Openai,
        Format::Anthropic => pb::DefinitionFormat::Anthropic,
        Format::Mcp => pb::DefinitionFormat::Mcp,
        Format::JsonSchema => pb::DefinitionFormat::JsonSchema,
    };
    let mut client = pb::tool_gateway_client::ToolGatewayClient::new(args.server.channel().await?);
    let context = pb::CallContext { tenant: args.tenant, ..Default::default() };
    let request = pb::ListToolDefinitionsRequest { context: Some(context), format: format.into() };
    let response = client.list_tool_definitions(request).await.map_err(status_text)?.into_inner();
    let defs: Vec<serde_json::Value> = response
        .definitions
        .iter()
        .map(|d| {
            serde_json::from_str(&d.definition)
                .map_err(|e| format!("the gateway sent a definition that is not JSON: {e}"))
        })
        .collect::<Result<_, _>>()?;
    out!("{}", serde_json::to_string_pretty(&defs).expect("JSON values serialize"));
    Ok(())
}
