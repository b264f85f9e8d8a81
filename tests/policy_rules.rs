//! Policy rules over real gRPC against a real gateway and tool server: a rule sends a call to review by what it
//! says (a transfer of 3 runs, one of 5,000 waits), denies with its message, reads injected values the model
//! cannot set, runs after the config's rules in a written order, is refused at registration with its position,
//! never reaches a model's definitions, and is bounded on calls large enough to make it costly.

mod common;
mod mcp_support;
mod otlp_support;
mod review_support;

use common::backends::{Runtime, start_runtime};
use common::{Gateway, kind_of, start_gateway, status_of, temp_config};
use review_support::PROMPT;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use toolgate::pb::v1::{self as pb, ErrorKind, ReviewAction, ReviewMode, ToolStatus};
use toolgate::policy::rules::{GatewayRules, RawScopedRule, RuleAction};
use toolgate::telemetry::{RawTelemetry, TelemetrySettings};

/// The transfer tool: `user_id` injected from the caller, and `rules` as its policy.
fn transfer(target: &str, rules: Value) -> Value {
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

fn request(id: &str, arguments: Value, user: &str, mode: ReviewMode) -> tonic::Request<pb::ExecuteRequest> {
    let call = pb::ToolCall { id: id.into(), name: "transfer".into(), arguments: arguments.to_string() };
    let context = pb::CallContext { user_id: user.into(), session_id: "s1".into(), ..Default::default() };
    let mut request =
        tonic::Request::new(pb::ExecuteRequest { call: Some(call), context: Some(context), review_mode: mode.into() });
    request.set_timeout(Duration::from_secs(30));
    request
}

async fn call(gw: &Gateway, id: &str, arguments: Value, user: &str) -> pb::ToolMessage {
    review_support::execute(gw.gateway.clone(), request(id, arguments, user, ReviewMode::Defer)).await
}

async fn started(rules: Value) -> (tempfile::TempDir, Gateway, Runtime) {
    let (dir, config) = temp_config();
    started_with(dir, config, rules).await
}

async fn started_with(
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

fn runs(runtime: &Runtime) -> usize {
    runtime.calls.load(std::sync::atomic::Ordering::SeqCst)
}

#[tokio::test]
async fn a_transfer_of_3_runs_at_once_and_one_of_5000_waits_for_review() {
    let rules = json!([{"name": "large-transfer", "when": "args.amount > 1000", "action": "review",
        "message": "Transfers over 1,000 need a person's approval."}]);
    let (_dir, gw, runtime) = started(rules).await;
    let small = review_support::execute(
        gw.gateway.clone(),
        request("t-3", json!({"amount": 3, "to": "bo"}), "alice", ReviewMode::Wait),
    )
    .await;
    assert_eq!(status_of(&small), ToolStatus::Success, "{small:?}");
    assert_eq!(runs(&runtime), 1, "below the threshold the tool ran at once");

    let waiting = tokio::spawn(review_support::execute(
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

fn scoped(name: &str, when: &str, action: RuleAction, tools: &[&str], labels: &[(&str, &str)]) -> RawScopedRule {
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

#[tokio::test]
async fn config_rules_run_before_a_tools_own_in_the_order_written() {
    let (dir, mut config) = temp_config();
    config.policy = Arc::new(
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
    // An MCP server whose overlay holds a bad rule is refused before anything is started.
    let mut server = mcp_support::stdio_server("s");
    let rule = pb::PolicyRule {
        name: "r".into(),
        when: "args.x ==".into(),
        action: pb::PolicyAction::Deny.into(),
        ..Default::default()
    };
    server.overlays.insert("echo".into(), pb::ToolOverlay { policy: vec![rule], ..Default::default() });
    let mut admin = mcp_support::admin(&gw).await;
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

#[tokio::test]
async fn a_rule_that_cannot_be_evaluated_follows_its_on_error_and_a_costly_one_its_budget() {
    let rules = json!([
        {"name": "memo-lenient", "when": "args.memo.startsWith('x')", "action": "deny", "on_error": "allow"},
        {"name": "memo-strict", "when": "args.memo.size() > 100", "action": "deny", "message": "No long memos."},
        {"name": "pairs", "when": "args.to.split(',').size() > 0 || [1].map(x, args.to + args.to).exists(s, s.size() < 0)", "action": "review"},
    ]);
    // `split` is no function a rule may call: refused at registration.
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    let err = gw.register(transfer(&target, rules)).await.unwrap_err();
    assert!(err.message().contains("unknown function `split`"), "{}", err.message());

    let rules = json!([
        {"name": "memo-lenient", "when": "args.memo.startsWith('x')", "action": "deny", "on_error": "allow"},
        {"name": "memo-strict", "when": "args.memo.size() > 100", "action": "deny", "message": "No long memos."},
        {"name": "fan-out", "when": "has(args.tags) && args.tags.map(t, args.to + t).exists(s, s == 'z')", "action": "deny",
         "message": "Too costly to check."},
    ]);
    gw.register(transfer(&target, rules)).await.unwrap();
    // No memo: the lenient rule is skipped, the strict one denies (by default) and says it could not tell.
    let no_memo = call(&gw, "m0", json!({"amount": 1, "to": "bo"}), "alice").await;
    assert_eq!((kind_of(&no_memo), no_memo.content.as_str()), (ErrorKind::PolicyDenied, "No long memos."));
    let error = no_memo.error.unwrap().message;
    assert!(error.contains("memo-strict") && error.contains("could not be evaluated"), "{error}");
    assert_eq!(
        status_of(&call(&gw, "m1", json!({"amount": 1, "to": "bo", "memo": "hi"}), "alice").await),
        ToolStatus::Success
    );
    // A list built from a long text for each of many tags: past the budget for a call this size, so not run.
    let tags: Vec<String> = (0..2000).map(|i| format!("t{i}")).collect();
    let big = json!({"amount": 1, "to": "b".repeat(20_000), "memo": "hi", "tags": tags});
    let costly = call(&gw, "big", big, "alice").await;
    let error = costly.error.expect("denied").message;
    assert!(error.contains("fan-out") && error.contains("over its budget"), "{error}");
}

#[tokio::test]
async fn a_thousand_rules_register_and_each_still_decides() {
    let mut rules: Vec<Value> = (0..999)
        .map(|i| json!({"name": format!("r{i}"), "when": format!("args.amount == {}", i + 10_000), "action": "deny"}))
        .collect();
    rules.push(json!({"name": "last", "when": "args.to == 'z'", "action": "deny", "message": "The last rule."}));
    let (_dir, gw, runtime) = started(Value::Array(rules)).await;
    assert_eq!(status_of(&call(&gw, "pass", json!({"amount": 1, "to": "bo"}), "alice").await), ToolStatus::Success);
    let last = call(&gw, "last", json!({"amount": 1, "to": "z"}), "alice").await;
    assert_eq!(last.content, "The last rule.");
    let middle = call(&gw, "middle", json!({"amount": 10_500, "to": "bo"}), "alice").await;
    assert!(middle.error.unwrap().message.ends_with("r500"));
    assert_eq!(runs(&runtime), 1);
}

#[tokio::test]
async fn the_span_and_the_calls_metric_name_the_rule_that_decided() {
    let collector = otlp_support::Collector::start().await;
    let (dir, mut config) = temp_config();
    let raw = RawTelemetry {
        otlp_endpoint: Some(collector.endpoint.clone()),
        export_interval_ms: Some(100),
        ..RawTelemetry::default()
    };
    config.telemetry = TelemetrySettings::from_raw(raw, None).unwrap();
    let rules = json!([
        {"name": "large-transfer", "when": "args.amount > 1000", "action": "review"},
        {"name": "no-offshore", "when": "args.to.endsWith('.offshore')", "action": "deny"},
    ]);
    let (_dir, gw, _runtime) = started_with(dir, config, rules).await;
    call(&gw, "plain", json!({"amount": 1, "to": "bo"}), "alice").await;
    call(&gw, "denied", json!({"amount": 1, "to": "x.offshore"}), "alice").await;
    call(&gw, "reviewed", json!({"amount": 5000, "to": "bo"}), "alice").await;
    let with_rule =
        |rule: &'static str| move |p: &otlp_support::Point| p.has("tool", "transfer") && p.has("policy.rule", rule);
    let points = collector
        .wait_for_points(
            "toolgate.tool.calls",
            |p| p.iter().any(with_rule("no-offshore")) && p.iter().any(with_rule("large-transfer")),
            PROMPT,
        )
        .await;
    let denied = points.iter().find(|p| with_rule("no-offshore")(p)).unwrap();
    assert!(denied.has("error.type", "POLICY_DENIED") && denied.value == 1.0, "{denied:?}");
    assert!(points.iter().find(|p| with_rule("large-transfer")(p)).unwrap().has("status", "PENDING_REVIEW"));
    assert!(
        points.iter().any(|p| p.has("status", "SUCCESS") && !p.attributes.contains_key("policy.rule")),
        "{points:?}"
    );
    let spans =
        collector.wait_for_spans(|s| s.iter().filter(|s| s.name == "execute_tool transfer").count() == 3, PROMPT).await;
    let rules: Vec<Option<&str>> = spans.iter().map(|s| s.str_attr("toolgate.policy.rule")).collect();
    for rule in [Some("no-offshore"), Some("large-transfer"), None] {
        assert!(rules.contains(&rule), "{rules:?}");
    }
}

/// A DEFER Execute of `tool` as Alice, which answers at once.
async fn defer_call(gw: &Gateway, tool: &str, id: &str, arguments: Value) -> pb::ToolMessage {
    let call = pb::ToolCall { id: id.into(), name: tool.into(), arguments: arguments.to_string() };
    let context = pb::CallContext { user_id: "alice".into(), session_id: "s1".into(), ..Default::default() };
    let request =
        pb::ExecuteRequest { call: Some(call), context: Some(context), review_mode: ReviewMode::Defer.into() };
    review_support::execute(gw.gateway.clone(), tonic::Request::new(request)).await
}

/// What decided a call: `ran`, `review <rule>` or `deny <rule>`.
async fn outcome(gw: &Gateway, answer: &pb::ToolMessage) -> String {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/mcp_support)"]
async fn config_spec_and_overlay_rules_apply_together_in_the_written_order() {
    let (dir, mut config) = temp_config();
    config.policy = Arc::new(
        GatewayRules::compile(vec![
            scoped("cfg-review-sums", "args.a > 100", RuleAction::Review, &["py__add"], &[]),
            scoped("cfg-review-transfers", "args.amount > 100", RuleAction::Review, &["transfer"], &[]),
        ])
        .unwrap(),
    );
    let spec = json!([{"name": "spec-deny", "when": "args.amount > 1000000", "action": "deny"}]);
    let (_dir, gw, _runtime) = started_with(dir, config, spec).await;
    let rule = |name: &str, when: &str, action: pb::PolicyAction| pb::PolicyRule {
        name: name.into(),
        when: when.into(),
        action: action.into(),
        ..Default::default()
    };
    let policy = vec![
        rule("overlay-deny", "args.a > 1000", pb::PolicyAction::Deny),
        rule("overlay-review", "args.b > 5", pb::PolicyAction::Review),
    ];
    let mut server = mcp_support::stdio_server("py");
    server.overlays.insert("add".into(), pb::ToolOverlay { policy, ..Default::default() });
    let added = mcp_support::add(&mut mcp_support::admin(&gw).await, server).await;
    assert!(added.connected && added.tools.contains(&"py__add".to_owned()), "{added:?}");
    // (tool, arguments, what decides): the config's rules first, then the tool's own (an imported tool's come
    // from its overlay), a denial before any review.
    let cases: &[(&str, Value, &str)] = &[
        ("py__add", json!({"a": 1, "b": 1}), "ran"),
        ("py__add", json!({"a": 1, "b": 10}), "review overlay-review"),
        ("py__add", json!({"a": 200, "b": 10}), "review cfg-review-sums"),
        ("py__add", json!({"a": 5000, "b": 10}), "deny overlay-deny"),
        ("transfer", json!({"amount": 5, "to": "bo"}), "ran"),
        ("transfer", json!({"amount": 500, "to": "bo"}), "review cfg-review-transfers"),
        ("transfer", json!({"amount": 5_000_000, "to": "bo"}), "deny spec-deny"),
    ];
    for (i, (tool, arguments, expected)) in cases.iter().enumerate() {
        let answer = defer_call(&gw, tool, &format!("c{i}"), arguments.clone()).await;
        assert_eq!(outcome(&gw, &answer).await, *expected, "{tool} {arguments}: {answer:?}");
    }
}
