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
    /// The call's id [default: a fresh one]. The gateway answers a repeated id from its call-id record without
    /// running the tool again, and refuses it with other arguments.
    #[arg(long)]
    id: Option<String>,
    #[command(flatten)]
    server: ServerArg,
}

/// Makes the call and prints its ToolMessage; answers whether it is a success.
pub async fn run(args: CallArgs) -> Result<bool, String> {
    let mut client = pb::tool_gateway_client::ToolGatewayClient::new(args.server.channel().await?);
    let id = args.id.unwrap_or_else(fresh_id);
    let request = pb::ExecuteRequest {
        call: Some(pb::ToolCall { id, name: args.name, arguments: args.arguments }),
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
    out!("{}", serde_json::to_string_pretty(&message_json(&message)).expect("JSON values serialize"));
    Ok(message.status == pb::ToolStatus::Success as i32)
}

/// A call id no other call has: `cli-` and 16 random bytes in hex.
fn fresh_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source is available");
    format!("cli-{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// The ToolMessage as JSON, enum values by name and JSON-text fields as JSON where they parse.
pub fn message_json(m: &pb::ToolMessage) -> Value {
    let status =
        pb::ToolStatus::try_from(m.status).unwrap_or_default().as_str_name().trim_start_matches("TOOL_STATUS_");
    let mut out = json!({
        "tool_call_id": m.tool_call_id, "name": m.name, "status": status, "content": m.content,
        "repairs": m.repairs.iter().map(|r| json!({"rule": r.rule, "path": r.path, "before": r.before, "after": r.after})).collect::<Vec<_>>(),
        "attempts": m.attempts, "duration_us": m.duration_us,
    });
    // What ran, when something did: an object, else absent (never an empty string).
    if !m.effective_arguments.is_empty() {
        out["effective_arguments"] = json_or_text(&m.effective_arguments);
    }
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
