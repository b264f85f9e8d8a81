//! Injection, tenancy and tokens over real gRPC: what a model can never set, see or reach.

use crate::support;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::{kind_of, start_gateway, status_of, temp_config};
use serde_json::{Value, json};
use toolgate::pb::v1::{self as pb, ErrorKind as K, ToolStatus};

/// A transfer tool: the model writes `amount` (and may write a note); the gateway fills `user_id` from the
/// context and the account owner from `context.values["acct"]`.
fn transfer(target: &str) -> Value {
    json!({
        "name": "transfer",
        "input_schema": {"type": "object", "additionalProperties": false, "required": ["amount", "user_id", "account"],
            "properties": {
                "amount": {"type": "integer"},
                "user_id": {"type": "string", "description": "who pays"},
                "account": {"type": "object", "required": ["owner"],
                    "properties": {"owner": {"type": "string"}, "note": {"type": "string"}}}}},
        "inject": [{"param": "user_id", "from": "user_id"}, {"param": "/account/owner", "from": "values.acct"}],
        "backend": {"grpc": {"target": target}},
    })
}

fn alice() -> pb::CallContext {
    pb::CallContext {
        user_id: "alice".into(),
        values: [("acct".to_owned(), "ACC-1".to_owned())].into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_model_cannot_act_as_another_user() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    gw.register(transfer(&start_runtime(Runtime::default()).await)).await.unwrap();

    let attack = r#"{"amount": 5, "user_id": "attacker", "UserId": "attacker2", "account": {"owner": "mallory"}}"#;
    let m = gw.call_as("transfer", attack, alice()).await;
    assert_eq!(status_of(&m), ToolStatus::Success, "{m:?}");
    let received: Value = serde_json::from_str(&m.structured).unwrap();
    assert_eq!(received, json!({"amount": 5, "account": {"owner": "ACC-1"}, "user_id": "alice"}));
    let removed: Vec<_> = m.repairs.iter().map(|r| (r.rule.as_str(), r.path.as_str(), r.before.as_str())).collect();
    assert_eq!(
        removed,
        [
            ("injected_override_removed", "/user_id", "\"attacker\""),
            ("injected_override_removed", "/account/owner", "\"mallory\""),
            ("injected_override_removed", "/UserId", "\"attacker2\""),
        ]
    );
    assert_eq!(m.effective_arguments, r#"{"amount":5,"account":{}}"#, "no injected value shown");

    let honest = gw.call_as("transfer", r#"{"amount": 7}"#, alice()).await;
    assert_eq!(status_of(&honest), ToolStatus::Success, "{honest:?}");
    assert!(honest.repairs.is_empty());
    assert_eq!(honest.effective_arguments, r#"{"amount": 7}"#, "the model's own text when nothing was removed");
    let received: Value = serde_json::from_str(&honest.structured).unwrap();
    assert_eq!(received, json!({"amount": 7, "user_id": "alice", "account": {"owner": "ACC-1"}}));
}

#[tokio::test]
async fn errors_never_mention_injected_parameters() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    gw.register(transfer(&start_runtime(Runtime::default()).await)).await.unwrap();

    let invalid = gw.call_as("transfer", r#"{"amount": "lots", "user_id": 3}"#, alice()).await;
    assert_eq!(kind_of(&invalid), K::InvalidArguments, "{invalid:?}");
    let error = invalid.error.clone().unwrap();
    assert_eq!(error.violations.len(), 1, "{:?}", error.violations);
    assert_eq!(error.violations[0].instance_path, "/amount");
    for text in [&invalid.content, &error.message, &format!("{:?}", error.violations)] {
        assert!(!text.contains("user_id") && !text.contains("owner") && !text.contains("ACC-1"), "{text}");
    }

    let no_user = pb::CallContext { user_id: String::new(), ..alice() };
    let denied = gw.call_as("transfer", r#"{"amount": 1}"#, no_user).await;
    assert_eq!(kind_of(&denied), K::PermissionDenied, "{denied:?}");
    assert_eq!(denied.content, "Error: transfer cannot be run for this caller.");
    let error = denied.error.unwrap();
    assert!(!error.model_fixable && !error.retryable);
    assert!(error.message.contains("context.user_id"), "the operator is told what is missing: {}", error.message);
}

#[tokio::test]
async fn definitions_never_show_injected_parameters() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    gw.register(transfer(&start_runtime(Runtime::default()).await)).await.unwrap();
    let formats = [pb::DefinitionFormat::Openai, pb::DefinitionFormat::Anthropic, pb::DefinitionFormat::Mcp];
    for format in formats.into_iter().chain([pb::DefinitionFormat::JsonSchema]) {
        let request = pb::ListToolDefinitionsRequest { context: Some(alice()), format: format.into() };
        let defs = gw.gateway.list_tool_definitions(request).await.unwrap().into_inner().definitions;
        let text = &defs[0].definition;
        assert!(text.contains("amount") && text.contains("note"), "{format:?}: {text}");
        assert!(!text.contains("user_id") && !text.contains("owner"), "{format:?} shows an injected param: {text}");
        let def: Value = serde_json::from_str(text).unwrap();
        let schema = [&def["function"]["parameters"], &def["input_schema"], &def["inputSchema"]]
            .into_iter()
            .find(|s| s.is_object())
            .unwrap();
        assert_eq!(schema["required"], json!(["amount"]), "{format:?}");
    }
    let mut bad = transfer("http://127.0.0.1:1");
    bad["inject"] = json!([{"param": "owner_id", "from": "user_id"}]);
    let err = gw.register(bad).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(err.message().contains("inject[0]") && err.message().contains("\"owner_id\""), "{}", err.message());
}

/// Each tenant has a private tool the other never reaches, sees suggested or finds listed.
#[tokio::test]
async fn tenants_are_isolated_both_ways() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    let schema = json!({"type": "object"});
    for (tenant, name) in [("acme", "acme_billing"), ("globex", "globex_billing"), ("", "billing_help")] {
        let spec =
            json!({"name": name, "tenant": tenant, "input_schema": schema, "backend": {"grpc": {"target": target}}});
        gw.register(spec).await.unwrap();
    }
    let ctx = |tenant: &str| pb::CallContext { tenant: tenant.into(), ..Default::default() };
    for (me, mine, theirs) in [("acme", "acme_billing", "globex_billing"), ("globex", "globex_billing", "acme_billing")]
    {
        assert_eq!(status_of(&gw.call_as(mine, "{}", ctx(me)).await), ToolStatus::Success);
        let other = gw.call_as(theirs, "{}", ctx(me)).await;
        assert_eq!(kind_of(&other), K::ToolNotFound, "{me} reached {theirs}");
        let typo = gw.call_as(&theirs.replace("billing", "bil"), "{}", ctx(me)).await;
        assert_eq!(typo.error.unwrap().suggestions, Vec::<String>::new(), "{me} was offered {theirs}");
        let near_mine = gw.call_as(&mine.replace("billing", "biling"), "{}", ctx(me)).await;
        assert_eq!(near_mine.error.unwrap().suggestions, [mine], "its own tool is suggested");
        let request =
            pb::ListToolDefinitionsRequest { context: Some(ctx(me)), format: pb::DefinitionFormat::Mcp.into() };
        let defs = gw.gateway.list_tool_definitions(request).await.unwrap().into_inner().definitions;
        let listed: Vec<_> = defs.iter().map(|d| d.tool.as_str()).collect();
        assert_eq!(listed, ["billing_help", mine]);
        assert!(defs.iter().all(|d| !d.definition.contains(theirs)));
    }
    let get = pb::GetToolRequest { name: "acme_billing".into(), tenant: "globex".into() };
    assert_eq!(gw.registry.get_tool(get).await.unwrap_err().code(), tonic::Code::NotFound);
}

fn with_token<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    request
}

#[tokio::test]
async fn tokens_close_the_admin_and_data_planes() {
    let (_dir, mut config) = temp_config();
    config.tokens.admin = Some("admin-secret".into());
    config.tokens.data = Some("data-secret".into());
    let mut gw = start_gateway(config).await;
    let list = pb::ListToolsRequest { all_tenants: true, ..Default::default() };
    let defs = pb::ListToolDefinitionsRequest { context: None, format: pb::DefinitionFormat::Mcp.into() };

    let open = gw.registry.list_tools(list.clone()).await.unwrap_err();
    assert_eq!(open.code(), tonic::Code::Unauthenticated);
    assert!(open.message().contains("admin plane's bearer token is missing"), "{}", open.message());
    for token in ["data-secret", "admin-secre", "admin-secret-"] {
        let err = gw.registry.list_tools(with_token(list.clone(), token)).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unauthenticated, "{token}");
    }
    gw.registry.list_tools(with_token(list, "admin-secret")).await.expect("the admin token opens the admin plane");

    assert_eq!(gw.gateway.list_tool_definitions(defs.clone()).await.unwrap_err().code(), tonic::Code::Unauthenticated);
    let wrong = gw.gateway.list_tool_definitions(with_token(defs.clone(), "admin-secret")).await.unwrap_err();
    assert_eq!(wrong.code(), tonic::Code::Unauthenticated, "each plane has its own token");
    gw.gateway
        .list_tool_definitions(with_token(defs, "data-secret"))
        .await
        .expect("the data token opens the data plane");
    // Execute is answered on a path of its own, before the tonic services: the same token closes it.
    let call = pb::ToolCall { id: "c".into(), name: "nothing".into(), arguments: "{}".into() };
    let execute = pb::ExecuteRequest { call: Some(call), ..Default::default() };
    let missing = gw.gateway.execute(execute.clone()).await.unwrap_err();
    assert_eq!(missing.code(), tonic::Code::Unauthenticated);
    assert!(missing.message().contains("data plane's bearer token is missing"), "{}", missing.message());
    let wrong = gw.gateway.execute(with_token(execute.clone(), "admin-secret")).await.unwrap_err();
    assert_eq!(wrong.code(), tonic::Code::Unauthenticated, "the admin token does not open Execute");
    let answered = gw.gateway.execute(with_token(execute, "data-secret")).await.expect("the data token opens Execute");
    let message = answered.into_inner().message.unwrap();
    assert_eq!(message.error.unwrap().kind, pb::ErrorKind::ToolNotFound as i32);

    let mut health = tonic_health::pb::health_client::HealthClient::new(support::connect(gw.addr).await);
    let req = tonic_health::pb::HealthCheckRequest { service: String::new() };
    health.check(req).await.expect("health stays open for probes");
}

#[tokio::test]
async fn a_review_token_opens_tool_review_alone() {
    let (_dir, mut config) = temp_config();
    config.tokens.admin = Some("admin-secret".into());
    config.tokens.review = Some("review-secret".into());
    let mut gw = start_gateway(config).await;
    let pending = pb::ListPendingRequest { all_tenants: true, ..Default::default() };
    for token in ["review-secret", "admin-secret"] {
        gw.review.list_pending(with_token(pending.clone(), token)).await.expect("review is open to both tokens");
    }
    let err = gw.review.list_pending(with_token(pending, "review-secre")).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
    assert!(err.message().contains("review plane's bearer token does not match"), "{}", err.message());
    let list = pb::ListToolsRequest { all_tenants: true, ..Default::default() };
    let err = gw.registry.list_tools(with_token(list, "review-secret")).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated, "the review token opens nothing else");
}
