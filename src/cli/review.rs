//! `toolgate review list|approve|edit|reject`: the reviewers' plane from the command line. `list` prints one JSON
//! object per pending call; a decision prints the decided call.

use super::{ServerArg, status_text};
use crate::pb::v1::{self as pb, ReviewAction, tool_review_client::ToolReviewClient};
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
pub struct ReviewArgs {
    #[command(subcommand)]
    command: ReviewCommand,
    #[command(flatten)]
    server: ServerArg,
    /// Your name, recorded with a decision (one line, at most 64 characters).
    #[arg(long, global = true, env = "TOOLGATE_REVIEWER", default_value = "")]
    reviewer: String,
}

#[derive(Debug, clap::Subcommand)]
enum ReviewCommand {
    /// List the calls waiting for a decision, oldest first, one JSON object per line: every tenant's, unless
    /// --tenant names one (then stderr says how many wait in the others).
    List {
        /// Only this tenant's calls ("" is the default tenant).
        #[arg(long, conflicts_with = "all_tenants")]
        tenant: Option<String>,
        /// Every tenant's calls (the default).
        #[arg(long)]
        all_tenants: bool,
    },
    /// Run the call as the model wrote it.
    Approve {
        call_id: String,
        #[arg(long, default_value = "")]
        tenant: String,
    },
    /// Run the call with other arguments, given as JSON text and checked against the tool's schema.
    Edit {
        call_id: String,
        arguments: String,
        #[arg(long, default_value = "")]
        tenant: String,
    },
    /// Do not run the call; the model gets FEEDBACK as the answer.
    Reject {
        call_id: String,
        feedback: String,
        #[arg(long, default_value = "")]
        tenant: String,
    },
}

pub async fn run(args: ReviewArgs) -> Result<(), String> {
    let mut client = ToolReviewClient::new(args.server.channel().await?);
    let request = match args.command {
        ReviewCommand::List { tenant, .. } => return list(&mut client, tenant).await,
        ReviewCommand::Approve { call_id, tenant } => decision(call_id, tenant, ReviewAction::Approve),
        ReviewCommand::Edit { call_id, arguments, tenant } => {
            pb::DecideRequest { arguments, ..decision(call_id, tenant, ReviewAction::Edit) }
        }
        ReviewCommand::Reject { call_id, feedback, tenant } => {
            pb::DecideRequest { feedback, ..decision(call_id, tenant, ReviewAction::Reject) }
        }
    };
    let request = pb::DecideRequest { reviewer: args.reviewer, ..request };
    let (call_id, tenant) = (request.call_id.clone(), request.tenant.clone());
    let response = client.decide(request.clone()).await.map_err(|s| {
        let whose = if tenant.is_empty() { String::new() } else { format!(" of tenant {tenant:?}") };
        format!("cannot decide call {call_id:?}{whose}: {}", status_text(s))
    })?;
    let decided = response.into_inner().decided.ok_or("the gateway answered without the decided call")?;
    out!("{}", decided_json(&decided, &request));
    Ok(())
}

fn decision(call_id: String, tenant: String, action: ReviewAction) -> pb::DecideRequest {
    pb::DecideRequest { call_id, tenant, action: action.into(), ..Default::default() }
}

/// Prints the pending calls of `tenant`, or of every tenant; for one tenant, says on stderr how many wait in
/// the others, so that an empty list is not mistaken for nothing waiting.
async fn list(client: &mut ToolReviewClient<super::Authed>, tenant: Option<String>) -> Result<(), String> {
    let all = pb::ListPendingRequest { tenant: String::new(), all_tenants: true };
    let every = client.list_pending(all).await.map_err(status_text)?.into_inner().pending;
    let shown: Vec<_> = every.iter().filter(|r| tenant.as_ref().is_none_or(|t| r.tenant == *t)).collect();
    for review in &shown {
        out!("{}", review_json(review));
    }
    let elsewhere = every.len() - shown.len();
    if elsewhere > 0 {
        eprintln!("{elsewhere} more call(s) wait in other tenants (toolgate review list shows every tenant's)");
    }
    Ok(())
}

/// One pending call as JSON, with the policy rule that sent it to review if one did; `arguments` as JSON where it
/// parses (it always should), else as text.
fn review_json(r: &pb::PendingReview) -> Value {
    let mut out = json!({
        "call_id": r.call_id, "tenant": r.tenant, "session_id": r.session_id, "user_id": r.user_id,
        "tool": r.tool, "arguments": json_or_text(&r.arguments), "created_ms": r.created_ms,
    });
    if !r.rule.is_empty() {
        out["rule"] = json!(r.rule);
        out["rule_message"] = json!(r.rule_message);
    }
    out
}

/// The decided call, with the decision: `decision`, and `edited_arguments` or `feedback` where they apply.
fn decided_json(r: &pb::PendingReview, request: &pb::DecideRequest) -> Value {
    let mut out = review_json(r);
    if !r.decided_by.is_empty() {
        out["decided_by"] = json!(r.decided_by);
    }
    let action = ReviewAction::try_from(request.action).unwrap_or_default();
    out["decision"] = json!(action.as_str_name().trim_start_matches("REVIEW_ACTION_"));
    match action {
        ReviewAction::Edit => out["edited_arguments"] = json_or_text(&request.arguments),
        ReviewAction::Reject => out["feedback"] = json!(request.feedback),
        ReviewAction::Approve | ReviewAction::Unspecified => {}
    }
    out
}

fn json_or_text(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_prints_what_was_decided() {
        let review = pb::PendingReview {
            call_id: "c1".into(),
            tool: "deploy".into(),
            arguments: r#"{"service": "api"}"#.into(),
            ..Default::default()
        };
        let edit = pb::DecideRequest {
            arguments: r#"{"service":"web"}"#.into(),
            ..decision("c1".into(), String::new(), ReviewAction::Edit)
        };
        let out = decided_json(&review, &edit);
        assert_eq!((&out["decision"], &out["arguments"]), (&json!("EDIT"), &json!({"service": "api"})));
        assert_eq!(out["edited_arguments"], json!({"service": "web"}));
        let reject =
            pb::DecideRequest { feedback: "no".into(), ..decision("c1".into(), String::new(), ReviewAction::Reject) };
        let out = decided_json(&review, &reject);
        assert_eq!((&out["decision"], &out["feedback"]), (&json!("REJECT"), &json!("no")));
        assert!(out.get("edited_arguments").is_none());
    }
}
