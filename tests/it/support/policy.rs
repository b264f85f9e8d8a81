//! Policy rules under test: a gateway with the `transfer` tool (its `user_id` injected, its rules given) on a real
//! ToolRuntime, calls as a caller, and what decided each: `ran`, `review <rule>` or `deny <rule>`.

use crate::support::backends::{Runtime, start_runtime};
use crate::support::{Gateway, start_gateway, status_of, temp_config};
use serde_json::{Value, json};
use std::time::Duration;
use toolgate::pb::v1::{self as pb, ReviewMode, ToolStatus};
use toolgate::policy::rules::{RawScopedRule, RuleAction};

/// The transfer tool: `user_id` injected from the caller, and `rules` as its policy.
pub fn transfer(target: &str, rules: Value) -> Value {
    json!({
        "name": "transfer",
        "input_schema": {"type": "object", "required": ["amount", "to"], "properties": {
            "amount": {"type": "number"}, "to": {"type": "string"}, "user_id": {"type": "string"}}},
        "inject": [{"param": "user_id", "from": "user_id"}],
        "labels": {"risk": "money"},
        "policy": rules,
        "backend": {"grpc": {"target": target}},
    })
}

pub fn request(id: &str, arguments: Value, user: &str, mode: ReviewMode) -> tonic::Request<pb::ExecuteRequest> {
    let call = pb::ToolCall { id: id.into(), name: "transfer".into(), arguments: arguments.to_string() };
    let context = pb::CallContext { user_id: user.into(), session_id: "s1".into(), ..Default::default() };
    let mut request =
        tonic::Request::new(pb::ExecuteRequest { call: Some(call), context: Some(context), review_mode: mode.into() });
    request.set_timeout(Duration::from_secs(30));
    request
}

pub async fn call(gw: &Gateway, id: &str, arguments: Value, user: &str) -> pb::ToolMessage {
    crate::support::review::execute(gw.gateway.clone(), request(id, arguments, user, ReviewMode::Defer)).await
}

pub async fn started(rules: Value) -> (tempfile::TempDir, Gateway, Runtime) {
    let (dir, config) = temp_config();
    started_with(dir, config, rules).await
}

pub async fn started_with(
    dir: tempfile::TempDir,
    config: toolgate::Config,
    rules: Value,
) -> (tempfile::TempDir, Gateway, Runtime) {
    let mut gw = start_gateway(config).await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    gw.register(transfer(&target, rules)).await.expect("the transfer tool registers");
    (dir, gw, runtime)
}

pub fn runs(runtime: &Runtime) -> usize {
    runtime.calls.load(std::sync::atomic::Ordering::SeqCst)
}

pub fn scoped(name: &str, when: &str, action: RuleAction, tools: &[&str], labels: &[(&str, &str)]) -> RawScopedRule {
    RawScopedRule {
        name: name.into(),
        when: when.into(),
        action,
        message: format!("{name} applies."),
        on_error: Default::default(),
        model_fixable: false,
        tools: tools.iter().map(|t| (*t).to_owned()).collect(),
        labels: labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
    }
}

/// A DEFER Execute of `tool` as Alice, which answers at once.
pub async fn defer_call(gw: &Gateway, tool: &str, id: &str, arguments: Value) -> pb::ToolMessage {
    let call = pb::ToolCall { id: id.into(), name: tool.into(), arguments: arguments.to_string() };
    let context = pb::CallContext { user_id: "alice".into(), session_id: "s1".into(), ..Default::default() };
    let request =
        pb::ExecuteRequest { call: Some(call), context: Some(context), review_mode: ReviewMode::Defer.into() };
    crate::support::review::execute(gw.gateway.clone(), tonic::Request::new(request)).await
}

/// What decided a call: `ran`, `review <rule>` or `deny <rule>`.
pub async fn outcome(gw: &Gateway, answer: &pb::ToolMessage) -> String {
    match status_of(answer) {
        ToolStatus::Success => "ran".to_owned(),
        ToolStatus::PendingReview => {
            let list = gw.review.clone().list_pending(pb::ListPendingRequest::default()).await.unwrap().into_inner();
            let pending = list.pending.into_iter().find(|p| p.call_id == answer.tool_call_id).expect("listed");
            format!("review {}", pending.rule)
        }
        _ => format!("deny {}", answer.error.as_ref().unwrap().message.trim_start_matches("denied by policy rule ")),
    }
}
