//! Policy rules over real gRPC against a real gateway and tool server: a rule sends a call to review by what it
//! says (a transfer of 3 runs, one of 5,000 waits), denies with its message, reads injected values the model
//! cannot set, runs after the config's rules in a written order, is refused where it is defined with its
//! position, and never reaches a model's definitions. `policy_rules_ops.rs` has the rest.

use crate::support;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::policy::{call, outcome, request, runs, scoped, started, started_with, transfer};
use crate::support::review::PROMPT;
use crate::support::{kind_of, start_gateway, status_of, temp_config};
use serde_json::{Value, json};
use std::sync::Arc;
use toolgate::pb::v1::{self as pb, ErrorKind, ReviewAction, ReviewMode, ToolStatus};
use toolgate::policy::rules::{GatewayRules, RuleAction};

#[tokio::test]
async fn a_transfer_of_3_runs_at_once_and_one_of_5000_waits_for_review() {
    let rules = json!([{"name": "large-transfer", "when": "args.amount > 1000", "action": "review",
        "message": "Transfers over 1,000 need a person's approval."}]);
    let (_dir, gw, runtime) = started(rules).await;
    let small = support::review::execute(
        gw.gateway.clone(),
        request("t-3", json!({"amount": 3, "to": "bo"}), "alice", ReviewMode::Wait),
    )
    .await;
    assert_eq!(status_of(&small), ToolStatus::Success, "{small:?}");
    assert_eq!(runs(&runtime), 1, "below the threshold the tool ran at once");

    let waiting = tokio::spawn(support::review::execute(
        gw.gateway.clone(),
        request("t-5000", json!({"amount": 5000, "to": "bo"}), "alice", ReviewMode::Wait),
    ));
    let mut reviewer = gw.review.clone();
    let pending = loop {
        let list = reviewer.list_pending(pb::ListPendingRequest { all_tenants: true, ..Default::default() }).await;
        if let Some(found) = list.unwrap().into_inner().pending.into_iter().find(|p| p.call_id == "t-5000") {
            break found;
        }
        tokio::task::yield_now().await;
    };
    assert_eq!((pending.rule.as_str(), pending.tool.as_str()), ("large-transfer", "transfer"));
    assert_eq!(pending.rule_message, "Transfers over 1,000 need a person's approval.");
    assert_eq!(runs(&runtime), 1, "above it, nothing ran while the call waits");
    let approve = pb::DecideRequest {
        call_id: "t-5000".into(),
        action: ReviewAction::Approve.into(),
        reviewer: "ana".into(),
        ..Default::default()
    };
    reviewer.decide(approve).await.expect("the approval");
    let answer = tokio::time::timeout(PROMPT, waiting).await.unwrap().unwrap();
    assert_eq!(status_of(&answer), ToolStatus::Success, "{answer:?}");
    let ran: Value = serde_json::from_str(&answer.content).unwrap();
    assert_eq!(ran, json!({"amount": 5000, "to": "bo", "user_id": "alice"}));

    let deferred = call(&gw, "t-6000", json!({"amount": 6000, "to": "bo"}), "alice").await;
    assert_eq!(status_of(&deferred), ToolStatus::PendingReview);
    assert!(deferred.content.contains("Transfers over 1,000 need a person's approval."), "{}", deferred.content);
    // The same call sent again is the same review, not a second one.
    let again = call(&gw, "t-6000", json!({"amount": 6000, "to": "bo"}), "alice").await;
    assert_eq!(status_of(&again), ToolStatus::PendingReview);
    assert_eq!(runs(&runtime), 2);
}

#[tokio::test]
async fn a_denying_rule_answers_policy_denied_with_its_message() {
    let rules = json!([
        {"name": "no-offshore", "when": "args.to.endsWith('.offshore')", "action": "deny",
         "message": "Transfers to offshore accounts are not allowed. Tell the user."},
        {"name": "whole-euros", "when": "args.amount != double(int(args.amount))", "action": "deny",
         "message": "Amounts are whole euros: round the amount and call again.", "model_fixable": true},
    ]);
    let (_dir, gw, runtime) = started(rules).await;
    // (arguments, the rule's message, model-fixable)
    let cases = [
        (
            json!({"amount": 10, "to": "x.offshore"}),
            "Transfers to offshore accounts are not allowed. Tell the user.",
            false,
        ),
        (json!({"amount": 10.5, "to": "bo"}), "Amounts are whole euros: round the amount and call again.", true),
    ];
    for (i, (arguments, message, fixable)) in cases.into_iter().enumerate() {
        let denied = call(&gw, &format!("d{i}"), arguments, "alice").await;
        assert_eq!(kind_of(&denied), ErrorKind::PolicyDenied, "{denied:?}");
        assert_eq!(denied.content, message);
        let error = denied.error.unwrap();
        assert_eq!((error.model_fixable, error.retryable), (fixable, false));
        assert!(error.message.contains("denied by policy rule"), "{}", error.message);
    }
    assert_eq!(runs(&runtime), 0, "a denied call never reaches its tool");
    assert_eq!(status_of(&call(&gw, "ok", json!({"amount": 10, "to": "bo"}), "alice").await), ToolStatus::Success);
}

#[tokio::test]
async fn a_rule_on_an_injected_value_reads_the_callers_not_the_models() {
    let rules = json!([
        {"name": "only-alice", "when": "context.user_id != 'alice'", "action": "deny", "message": "Only Alice may transfer."},
        {"name": "never-root", "when": "args.user_id == 'root'", "action": "deny", "message": "Not as root."},
    ]);
    let (_dir, gw, runtime) = started(rules).await;
    // Bob writes Alice's name where the gateway injects his: the rule sees Bob.
    let bob = call(&gw, "b1", json!({"amount": 1, "to": "x", "user_id": "alice"}), "bob").await;
    assert_eq!((kind_of(&bob), bob.content.as_str()), (ErrorKind::PolicyDenied, "Only Alice may transfer."));
    // Alice writes root: the arguments that would run carry her injected name, so `never-root` does not hold.
    let alice = call(&gw, "a1", json!({"amount": 1, "to": "x", "user_id": "root"}), "alice").await;
    assert_eq!(status_of(&alice), ToolStatus::Success, "{alice:?}");
    let ran: Value = serde_json::from_str(&alice.content).unwrap();
    assert_eq!(ran["user_id"], "alice");
    assert_eq!(runs(&runtime), 1);
}

#[tokio::test]
async fn config_rules_run_before_a_tools_own_in_the_order_written() {
    let (dir, mut config) = temp_config();
    config.rules = Arc::new(
        GatewayRules::compile(vec![
            scoped("cfg-review-money", "args.amount > 100", RuleAction::Review, &[], &[("risk", "money")]),
            scoped("cfg-deny-other-tools", "true", RuleAction::Deny, &["deploy*"], &[]),
            scoped("cfg-deny-huge", "args.amount > 1000000", RuleAction::Deny, &["trans*"], &[]),
        ])
        .unwrap(),
    );
    let rules = json!([
        {"name": "spec-review", "when": "args.amount > 10", "action": "review"},
        {"name": "spec-deny", "when": "args.to == 'mallory'", "action": "deny", "message": "Not to Mallory."},
    ]);
    let (_dir, gw, _runtime) = started_with(dir, config, rules).await;
    // (amount, to, the outcome: the rule that decided)
    let cases: &[(i64, &str, &str)] = &[
        (5, "bo", "ran"),
        (50, "bo", "review spec-review"),
        (500, "bo", "review cfg-review-money"),
        (500, "mallory", "deny spec-deny"),
        (5_000_000, "bo", "deny cfg-deny-huge"),
    ];
    for (i, (amount, to, expected)) in cases.iter().enumerate() {
        let answer = call(&gw, &format!("o{i}"), json!({"amount": amount, "to": to}), "alice").await;
        assert_eq!(outcome(&gw, &answer).await, *expected, "amount {amount} to {to}");
    }
}

#[tokio::test]
async fn a_bad_rule_is_refused_where_it_is_defined_with_its_position() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    let cases = [
        (json!([{"name": "r", "when": "args.amount >", "action": "deny"}]), "line 1, column 14"),
        (
            json!([{"name": "r", "when": "args.amount > 1 &&\n user.admin", "action": "deny"}]),
            "line 2, column 2: unknown variable `user`",
        ),
        (json!([{"name": "r", "when": "context.role == 'x'", "action": "review"}]), "`context` has no field `role`"),
        (json!([{"name": "bad name", "when": "true", "action": "deny"}]), "the name must be"),
    ];
    for (rules, says) in cases {
        let err = gw.register(transfer(&target, rules)).await.expect_err("refused");
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(err.message().contains(says), "{} lacks {says:?}", err.message());
    }
    // An MCP server whose overlay holds a bad rule is refused before anything is started: its command (which does
    // not exist) is never run, so this needs no MCP server installed.
    let stdio = pb::McpStdio { command: "/nonexistent/mcp-server".into(), ..Default::default() };
    let transport = Some(pb::mcp_server::Transport::Stdio(stdio));
    let mut server = pb::McpServer { name: "s".into(), transport, ..Default::default() };
    let rule = pb::PolicyRule {
        name: "r".into(),
        when: "args.x ==".into(),
        action: pb::PolicyAction::Deny.into(),
        ..Default::default()
    };
    server.overlays.insert("echo".into(), pb::ToolOverlay { policy: vec![rule], ..Default::default() });
    let mut admin = support::mcp::admin(&gw).await;
    let err = admin.add_mcp_server(pb::AddMcpServerRequest { server: Some(server) }).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(err.message().contains("overlays.echo.policy") && err.message().contains("line 1"), "{}", err.message());
    // And the config: a bad [[policy]] rule stops the start.
    let raw: toolgate::config::RawConfig =
        toml::from_str("[[policy]]\nname = \"x\"\nwhen = \"args.a ==\"\naction = \"deny\"\n").unwrap();
    let err = toolgate::Config::from_raw(raw, Default::default(), std::path::Path::new(".")).unwrap_err();
    assert!(err.to_string().contains("[[policy]]") && err.to_string().contains("line 1"), "{err}");
}

#[tokio::test]
async fn rules_are_kept_for_admins_and_never_shown_to_models() {
    let rules =
        json!([{"name": "large-transfer", "when": "args.amount > 1000", "action": "review", "on_error": "allow"}]);
    let (_dir, mut gw, _runtime) = started(rules).await;
    let got = gw.registry.get_tool(pb::GetToolRequest { name: "transfer".into(), tenant: String::new() }).await;
    let policy = got.unwrap().into_inner().tool.unwrap().policy;
    assert_eq!(policy.len(), 1);
    assert_eq!((policy[0].when.as_str(), policy[0].on_error()), ("args.amount > 1000", pb::PolicyAction::Allow));
    for format in [
        pb::DefinitionFormat::Openai,
        pb::DefinitionFormat::Anthropic,
        pb::DefinitionFormat::Mcp,
        pb::DefinitionFormat::JsonSchema,
    ] {
        let request = pb::ListToolDefinitionsRequest { context: None, format: format.into() };
        let defs = gw.gateway.list_tool_definitions(request).await.unwrap().into_inner().definitions;
        let text: String = defs.iter().map(|d| d.definition.as_str()).collect();
        assert!(text.contains("transfer"), "{format:?}: {text}");
        assert!(!text.contains("large-transfer") && !text.contains("args.amount"), "{format:?}: {text}");
    }
}
