//! Policy rules in operation, over real gRPC: a rule that cannot be evaluated follows its `on_error`, a costly
//! one its budget; a thousand rules register and decide; the span and the calls metric name the rule; and the
//! config's, a spec's and an MCP overlay's rules apply together in the order written (with the Python MCP SDK).

use crate::support;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::policy::{call, defer_call, outcome, runs, scoped, started, started_with, transfer};
use crate::support::review::PROMPT;
use crate::support::{kind_of, start_gateway, status_of, temp_config};
use serde_json::{Value, json};
use std::sync::Arc;
use toolgate::pb::v1::{self as pb, ErrorKind, ToolStatus};
use toolgate::policy::rules::{GatewayRules, RuleAction};

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
    let collector = support::otlp::Collector::start().await;
    let (dir, mut config) = temp_config();
    config.telemetry = collector.settings();
    let rules = json!([
        {"name": "large-transfer", "when": "args.amount > 1000", "action": "review"},
        {"name": "no-offshore", "when": "args.to.endsWith('.offshore')", "action": "deny"},
    ]);
    let (_dir, gw, _runtime) = started_with(dir, config, rules).await;
    call(&gw, "plain", json!({"amount": 1, "to": "bo"}), "alice").await;
    call(&gw, "denied", json!({"amount": 1, "to": "x.offshore"}), "alice").await;
    call(&gw, "reviewed", json!({"amount": 5000, "to": "bo"}), "alice").await;
    let with_rule =
        |rule: &'static str| move |p: &support::otlp::Point| p.has("tool", "transfer") && p.has("policy.rule", rule);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn config_spec_and_overlay_rules_apply_together_in_the_written_order() {
    let (dir, mut config) = temp_config();
    config.rules = Arc::new(
        GatewayRules::compile(vec![
            scoped("cfg-review-sums", "args.a > 100", RuleAction::Review, &["py__add"], &[]),
            scoped("cfg-review-transfers", "args.amount > 100", RuleAction::Review, &["transfer"], &[]),
        ])
        .unwrap(),
    );
    config.connect_timeout = support::mcp::CONNECT_TIMEOUT;
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
    let mut server = support::mcp::stdio_server("py");
    server.overlays.insert("add".into(), pb::ToolOverlay { policy, ..Default::default() });
    let added = support::mcp::add(&mut support::mcp::admin(&gw).await, server).await;
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

#[tokio::test]
async fn the_deepest_rules_that_register_run_on_the_gateways_own_threads() {
    // The longest chain of additions and the deepest list that still register, and ninety parentheses: each is
    // evaluated on an async worker of the gateway (2 MiB of stack), in the unoptimised build that tests run.
    let chain = |n: usize| format!("{} > 1000000", vec!["args.amount"; n].join(" + "));
    let registers = |when: &str| {
        toolgate::policy::rules::Rule::compile(&toolgate::policy::rules::PolicyRule {
            name: "deep".into(),
            when: when.into(),
            action: RuleAction::Deny,
            message: String::new(),
            on_error: Default::default(),
            model_fixable: false,
        })
        .is_ok()
    };
    let longest = (1..64).take_while(|n| registers(&chain(*n))).last().unwrap();
    let lists = |n: usize| format!("{}{} == []", "[".repeat(n), "]".repeat(n));
    let deepest = (1..64).take_while(|n| registers(&lists(*n))).last().unwrap();
    assert!(longest >= 20 && deepest >= 20, "{longest} {deepest}");
    let parens = format!("{}args.amount{} > 0", "(".repeat(90), ")".repeat(90));
    let rules = json!([
        {"name": "chain", "when": chain(longest), "action": "deny", "message": "chain"},
        {"name": "lists", "when": lists(deepest), "action": "deny", "message": "lists"},
        {"name": "parens", "when": parens, "action": "deny", "message": "parens"},
    ]);
    let (_dir, gw, _runtime) = started(rules).await;
    let denied = call(&gw, "deep", json!({"amount": 1, "to": "bo"}), "alice").await;
    // The first two do not hold (each was evaluated), the third does.
    assert_eq!((kind_of(&denied), denied.content.as_str()), (ErrorKind::PolicyDenied, "parens"));
}
