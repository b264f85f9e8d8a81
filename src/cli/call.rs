//! `toolgate call NAME 'ARGS'`: one call through the gateway, the ToolMessage printed as JSON.

use super::{ServerArg, status_text};
use crate::pb::v1 as pb;
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
pub struct CallArgs {
    name: String,
    /// The arguments as JSON text.
    #[arg(default_value = "{}")]
    arguments: String,
    #[arg(long, default_value = "")]
    user: String,
    #[arg(long, default_value = "")]
    tenant: String,
    #[arg(long, default_value = "")]
    session: String,
    #[arg(long, default_value = "cli-call")]
    id: String,
    #[command(flatten)]
    server: ServerArg,
}

pub async fn run(args: CallArgs) -> Result<(), String> {
    let mut client = pb::tool_gateway_client::ToolGatewayClient::new(args.server.channel().await?);
    let request = pb::ExecuteRequest {
        call: Some(pb::ToolCall { id: args.id, name: args.name, arguments: args.arguments }),
        context: Some(pb::CallContext {
            tenant: args.tenant,
            user_id: args.user,
            session_id: args.session,
            values: Default::default(),
        }),
        review_mode: pb::ReviewMode::Unspecified.into(),
    };
    let response = client.execute(request).await.map_err(status_text)?.into_inner();
    let message = response.message.ok_or("the gateway answered without a message")?;
    println!("{}", serde_json::to_string_pretty(&message_json(&message)).expect("JSON values serialize"));
    Ok(())
}

/// The ToolMessage as JSON, enum values by name and JSON-text fields as JSON where they parse.
pub fn message_json(m: &pb::ToolMessage) -> Value {
    let status =
        pb::ToolStatus::try_from(m.status).unwrap_or_default().as_str_name().trim_start_matches("TOOL_STATUS_");
    let mut out = json!({
        "tool_call_id": m.tool_call_id, "name": m.name, "status": status, "content": m.content,
        "repairs": m.repairs.iter().map(|r| json!({"rule": r.rule, "path": r.path, "before": r.before, "after": r.after})).collect::<Vec<_>>(),
        "effective_arguments": json_or_text(&m.effective_arguments),
        "attempts": m.attempts, "duration_us": m.duration_us,
    });
    if !m.structured.is_empty() {
        out["structured"] = json_or_text(&m.structured);
    }
    if let Some(e) = &m.error {
        let kind = pb::ErrorKind::try_from(e.kind).unwrap_or_default().as_str_name().trim_start_matches("ERROR_KIND_");
        out["error"] = json!({
            "kind": kind, "message": e.message, "model_fixable": e.model_fixable, "retryable": e.retryable,
            "retry_after_ms": e.retry_after_ms, "suggestions": e.suggestions, "original_arguments": e.original_arguments,
            "violations": e.violations.iter().map(|v| json!({"instance_path": v.instance_path, "schema_path": v.schema_path, "message": v.message})).collect::<Vec<_>>(),
        });
    }
    out
}

fn json_or_text(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}
