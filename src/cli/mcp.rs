//! `toolgate mcp add|list|remove`: MCP servers whose tools the gateway imports.

use super::{Authed, ServerArg, status_text};
use crate::backend::mcp::McpServerSpec;
use crate::pb::v1::{self as pb, mcp_registry_client::McpRegistryClient};
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
    #[command(flatten)]
    server: ServerArg,
}

#[derive(Debug, clap::Subcommand)]
enum McpCommand {
    /// Add an MCP server, or replace its definition (keeping its overlays), and import its tools.
    Add(Box<AddArgs>),
    /// List the MCP servers with their state and imported tools, as JSON.
    List,
    /// Remove an MCP server: stop it and delete the tools imported from it.
    Remove { name: String },
}

#[derive(Debug, clap::Args)]
struct AddArgs {
    /// ^[A-Za-z0-9_-]{1,64}$; also the default prefix of its tools' names.
    name: String,
    /// Start this program and speak MCP over its stdin/stdout.
    #[arg(long, required_unless_present = "url", conflicts_with = "url")]
    command: Option<String>,
    /// An argument of --command; repeat for more. Values starting with '-' are accepted.
    #[arg(long = "arg", allow_hyphen_values = true)]
    args: Vec<String>,
    /// KEY=VALUE for the process's environment; repeat for more.
    #[arg(long = "env", value_parser = key_value)]
    env: Vec<(String, String)>,
    /// The process's working directory.
    #[arg(long)]
    cwd: Option<String>,
    /// A streamable-HTTP MCP endpoint.
    #[arg(long)]
    url: Option<String>,
    /// NAME=VALUE sent with every HTTP request; repeat for more.
    #[arg(long = "header", value_parser = key_value)]
    headers: Vec<(String, String)>,
    /// Prefix of the imported names; defaults to the server's name. "" imports the tools' own names.
    #[arg(long)]
    prefix: Option<String>,
    /// Between prefix and tool name; defaults to "__".
    #[arg(long, default_value = "")]
    separator: String,
    /// The tenant the imported tools belong to; empty means shared.
    #[arg(long, default_value = "")]
    tenant: String,
    /// Pass results that violate their tool's outputSchema through, instead of answering TOOL_ERROR.
    #[arg(long)]
    pass_invalid_output: bool,
}

fn key_value(text: &str) -> Result<(String, String), String> {
    let (key, value) = text.split_once('=').ok_or_else(|| format!("{text:?} is not KEY=VALUE"))?;
    Ok((key.to_owned(), value.to_owned()))
}

pub async fn run(args: McpArgs) -> Result<(), String> {
    let mut client = McpRegistryClient::new(args.server.channel().await?);
    match args.command {
        McpCommand::Add(add) => {
            let status = add_server(&mut client, *add).await?;
            out!("{}", pretty(&status_json(status)));
        }
        McpCommand::List => {
            let servers = client.list_mcp_servers(pb::ListMcpServersRequest {}).await.map_err(status_text)?;
            let list: Vec<Value> = servers.into_inner().servers.into_iter().map(status_json).collect();
            out!("{}", pretty(&Value::Array(list)));
        }
        McpCommand::Remove { name } => {
            client.remove_mcp_server(pb::RemoveMcpServerRequest { name: name.clone() }).await.map_err(status_text)?;
            out!("removed {name}");
        }
    }
    Ok(())
}

/// Adds the server, or replaces it keeping its overlays, which the command line cannot write.
async fn add_server(client: &mut McpRegistryClient<Authed>, add: AddArgs) -> Result<pb::McpServerStatus, String> {
    let spec = McpServerSpec {
        name: add.name,
        command: add.command,
        args: add.args,
        env: add.env.into_iter().collect(),
        cwd: add.cwd,
        url: add.url,
        headers: add.headers.into_iter().collect(),
        prefix: add.prefix,
        separator: add.separator,
        tenant: add.tenant,
        pass_invalid_output: add.pass_invalid_output,
        ..McpServerSpec::default()
    };
    let mut server = pb::McpServer::from(spec);
    // The command line cannot write overlays: replacing a server keeps the ones it has.
    let listed = client.list_mcp_servers(pb::ListMcpServersRequest {}).await.map_err(status_text)?;
    let existing = listed.into_inner().servers.into_iter().filter_map(|s| s.server);
    if let Some(previous) = existing.into_iter().find(|s| s.name == server.name) {
        server.overlays = previous.overlays;
        eprintln!("replacing {}; its {} overlay(s) kept", server.name, server.overlays.len());
    }
    let request = pb::AddMcpServerRequest { server: Some(server) };
    let response = client.add_mcp_server(request).await.map_err(status_text)?.into_inner();
    Ok(response.status.unwrap_or_default())
}

fn status_json(status: pb::McpServerStatus) -> Value {
    let server = McpServerSpec::try_from(status.server.unwrap_or_default()).unwrap_or_default();
    json!({
        "server": server,
        "connected": status.connected,
        "tools": status.tools,
        "problems": status.problems,
        "last_error": status.last_error,
        "connects": status.connects,
        "output_violations": status.output_violations,
    })
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).expect("JSON values serialize")
}
