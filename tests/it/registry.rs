//! The admin plane and the registry over real gRPC: register, replace, list, delete, reject, persist.

use crate::support;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::{city_schema, kind_of, start_gateway, status_of, temp_config};
use serde_json::{Value, json};
use toolgate::pb::v1::{self as pb, ErrorKind as K, ToolStatus};

fn spec(name: &str, target: &str) -> Value {
    json!({"name": name, "description": format!("the {name} tool"), "input_schema": city_schema(), "backend": {"grpc": {"target": target}}})
}

#[tokio::test]
async fn register_replace_get_list_delete() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    let created = gw.register(spec("get_weather", &target)).await.unwrap();
    assert_eq!(created.version, 1);
    let mut changed = spec("get_weather", &target);
    changed["description"] = json!("changed");
    let replaced = gw.register(changed).await.unwrap();
    assert_eq!((replaced.version, replaced.description.as_str()), (2, "changed"));

    let got =
        gw.registry.get_tool(pb::GetToolRequest { name: "get_weather".into(), tenant: String::new() }).await.unwrap();
    let got = got.into_inner().tool.unwrap();
    assert_eq!((got.version, serde_json::from_str::<Value>(&got.input_schema).unwrap()), (2, city_schema()));

    gw.register(spec("get_time", &target)).await.unwrap();
    let list = gw.registry.list_tools(pb::ListToolsRequest::default()).await.unwrap().into_inner().tools;
    assert_eq!(list.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["get_time", "get_weather"]);

    gw.registry.delete_tool(pb::DeleteToolRequest { name: "get_time".into(), tenant: String::new() }).await.unwrap();
    let err = gw
        .registry
        .delete_tool(pb::DeleteToolRequest { name: "get_time".into(), tenant: String::new() })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound);
    let err =
        gw.registry.get_tool(pb::GetToolRequest { name: "get_time".into(), tenant: String::new() }).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound);
    assert_eq!(kind_of(&gw.call("get_time", "{}").await), K::ToolNotFound);
}

#[tokio::test]
async fn invalid_specs_are_rejected_with_a_precise_reason() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let with = |patch: Value| {
        let mut s = spec("t", "http://127.0.0.1:1");
        s.as_object_mut().unwrap().extend(patch.as_object().unwrap().clone());
        s
    };
    let cases = [
        (with(json!({"name": "no spaces"})), "name \"no spaces\" is invalid"),
        (with(json!({"name": "x".repeat(129)})), "is invalid: it must match"),
        (
            with(json!({"input_schema": {"type": "array"}})),
            "input_schema must have \"type\": \"object\", got \"type\": \"array\"",
        ),
        (
            with(json!({"input_schema": {"type": "object", "properties": {"a": {"minimum": "five"}}}})),
            "input_schema is invalid",
        ),
        (
            with(
                json!({"input_schema": {"type": "object", "properties": {"a": {"$ref": "https://schemas.example/a.json"}}}}),
            ),
            "input_schema has a remote $ref https://schemas.example/a.json is not fetched",
        ),
        (with(json!({"backend": {"grpc": {"target": "not a url"}}})), "backend grpc.target"),
        (with(json!({"backend": {"mcp": {"server": "files", "tool": ""}}})), "backend mcp needs both server and tool"),
        (with(json!({"backend": null})), "backend is required"),
    ];
    for (spec, reason) in cases {
        let err = gw.register(spec.clone()).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument, "{spec}");
        assert!(err.message().contains(reason), "{spec}\n{:?} lacks {reason:?}", err.message());
    }
    // A schema that is not JSON text at all, sent over the raw API.
    let raw = pb::ToolSpec { name: "t".into(), input_schema: "{not json".into(), ..Default::default() };
    let err = gw.registry.register_tool(pb::RegisterToolRequest { spec: Some(raw) }).await.unwrap_err();
    assert!(err.message().contains("input_schema is not valid JSON"), "{}", err.message());
    let list = gw.registry.list_tools(pb::ListToolsRequest::default()).await.unwrap().into_inner().tools;
    assert!(list.is_empty(), "nothing rejected was registered");
}

#[tokio::test]
async fn tools_and_versions_survive_a_restart() {
    let (dir, config) = temp_config();
    let mut gw = start_gateway(config.clone()).await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(spec("a", &target)).await.unwrap();
    gw.register(spec("a", &target)).await.unwrap();
    gw.register(spec("b", &target)).await.unwrap();
    gw.register(spec("c", &target)).await.unwrap();
    gw.registry.delete_tool(pb::DeleteToolRequest { name: "c".into(), tenant: String::new() }).await.unwrap();
    gw.stop().await;

    let mut gw = start_gateway(config).await;
    let list = gw.registry.list_tools(pb::ListToolsRequest::default()).await.unwrap().into_inner().tools;
    let names: Vec<_> = list.iter().map(|t| (t.name.as_str(), t.version)).collect();
    assert_eq!(names, [("a", 2), ("b", 1)]);
    let m = gw.call("a", r#"{"city": "Oslo"}"#).await;
    assert_eq!(status_of(&m), ToolStatus::Success, "{m:?}");
    drop(dir);
}

#[tokio::test]
async fn static_tools_from_the_config_file_are_loaded_at_start() {
    let (dir, _) = temp_config();
    let target = start_runtime(Runtime::default()).await;
    let toml = format!(
        r#"
        data_dir = "{data}"
        [messages]
        fix_suffix = " Try again."
        [[tools]]
        name = "static_echo"
        description = "declared in the config"
        input_schema = '{{"type": "object", "properties": {{"city": {{"type": "string"}}}}, "required": ["city"]}}'
        backend = {{ grpc = {{ target = "{target}" }} }}
        "#,
        data = dir.path().join("data").display()
    );
    let path = dir.path().join("toolgate.toml");
    std::fs::write(&path, toml).unwrap();
    let config = toolgate::Config::load(Some(&path), Default::default()).unwrap();
    let mut gw = start_gateway(config.clone()).await;
    let m = gw.call("static_echo", r#"{"city": "Oslo"}"#).await;
    assert_eq!(status_of(&m), ToolStatus::Success, "{m:?}");
    let m = gw.call("static_echo", "{}").await;
    assert!(m.content.ends_with("\nTry again."), "the configured template is used: {}", m.content);
    gw.stop().await;

    // Starting again with the same config keeps the version: nothing changed.
    let mut gw = start_gateway(config).await;
    let got =
        gw.registry.get_tool(pb::GetToolRequest { name: "static_echo".into(), tenant: String::new() }).await.unwrap();
    assert_eq!(got.into_inner().tool.unwrap().version, 1);
}

#[tokio::test]
async fn definitions_in_every_format_with_provider_safe_names() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(spec("weather.get", &target)).await.unwrap();
    let list = |format: pb::DefinitionFormat| {
        let mut client = gw.gateway.clone();
        async move {
            let req = pb::ListToolDefinitionsRequest { context: None, format: format.into() };
            let defs = client.list_tool_definitions(req).await.unwrap().into_inner().definitions;
            assert_eq!(defs.len(), 1);
            assert_eq!(defs[0].tool, "weather.get");
            serde_json::from_str::<Value>(&defs[0].definition).unwrap()
        }
    };
    let d = "the weather.get tool";
    assert_eq!(
        list(pb::DefinitionFormat::Openai).await,
        json!({"type": "function", "function": {"name": "weather_get", "description": d, "parameters": city_schema()}})
    );
    assert_eq!(
        list(pb::DefinitionFormat::Anthropic).await,
        json!({"name": "weather_get", "description": d, "input_schema": city_schema()})
    );
    assert_eq!(
        list(pb::DefinitionFormat::Mcp).await,
        json!({"name": "weather.get", "description": d, "inputSchema": city_schema()})
    );
    assert_eq!(
        list(pb::DefinitionFormat::JsonSchema).await,
        json!({"name": "weather.get", "description": d, "input_schema": city_schema()})
    );
    let err = gw
        .gateway
        .list_tool_definitions(pb::ListToolDefinitionsRequest { context: None, format: 0 })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
}

#[tokio::test]
async fn a_batch_runs_concurrently_and_answers_in_order() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    // Four `rendezvous` calls return only when all four are in flight at once: a sequential batch would time out.
    let target = start_runtime(Runtime::with_rendezvous(4)).await;
    for name in ["rendezvous", "sleep", "fail", "echo"] {
        let s = json!({"name": name, "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}}, "limits": {"timeout_ms": 5000}});
        gw.register(s).await.unwrap();
    }
    let calls: Vec<(&str, &str)> = vec![
        ("rendezvous", "{}"),
        ("sleep", r#"{"ms": 300}"#),
        ("nope", "{}"),
        ("rendezvous", "{}"),
        ("echo", "{broken"),
        ("sleep", r#"{"ms": 300}"#),
        ("rendezvous", "{}"),
        ("fail", "{}"),
        ("echo", r#"{"n": 9}"#),
        ("rendezvous", "{}"),
    ];
    let expected = [
        K::Unspecified,
        K::Unspecified,
        K::ToolNotFound,
        K::Unspecified,
        K::MalformedArguments,
        K::Unspecified,
        K::Unspecified,
        K::ToolError,
        K::Unspecified,
        K::Unspecified,
    ];
    let request = pb::ExecuteBatchRequest {
        calls: calls
            .iter()
            .enumerate()
            .map(|(i, (n, a))| pb::ToolCall { id: format!("c{i}"), name: (*n).into(), arguments: (*a).into() })
            .collect(),
        context: None,
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let messages = gw.gateway.execute_batch(request).await.unwrap().into_inner().messages;
    let elapsed = started.elapsed();
    let ids: Vec<_> = messages.iter().map(|m| m.tool_call_id.as_str()).collect();
    assert_eq!(ids, ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"]);
    assert_eq!(messages.iter().map(kind_of).collect::<Vec<_>>(), expected, "{messages:#?}");
    assert_eq!(messages[8].content, r#"{"n": 9}"#);
    println!("batch of 10 with two 300 ms calls took {elapsed:?}");
}

#[tokio::test]
async fn health_and_reflection_are_served_on_the_same_port() {
    let (_dir, config) = temp_config();
    let gw = start_gateway(config).await;
    let channel = support::connect(gw.addr).await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    // "" is the whole server: what Kubernetes' native gRPC probes ask (deploy/k8s).
    for service in ["toolgate.v1.ToolGateway", ""] {
        let req = tonic_health::pb::HealthCheckRequest { service: service.into() };
        let status = health.check(req).await.unwrap().into_inner().status;
        assert_eq!(status, tonic_health::pb::health_check_response::ServingStatus::Serving as i32, "{service:?}");
    }

    use tonic_reflection::pb::v1::{
        server_reflection_client::ServerReflectionClient, server_reflection_request::MessageRequest,
    };
    let mut reflection = ServerReflectionClient::new(channel);
    let req = tonic_reflection::pb::v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut stream = reflection.server_reflection_info(tokio_stream::iter(vec![req])).await.unwrap().into_inner();
    let response = stream.message().await.unwrap().unwrap();
    let text = format!("{response:?}");
    for service in ["toolgate.v1.ToolGateway", "toolgate.v1.ToolRegistry", "grpc.health.v1.Health"] {
        assert!(text.contains(service), "{service} is not listed: {text}");
    }
}

#[tokio::test]
async fn a_tool_of_another_tenant_is_indistinguishable_from_a_missing_one() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    let mut private = spec("acme_billing", &target);
    private["tenant"] = json!("acme");
    gw.register(private).await.unwrap();
    gw.register(spec("get_weather", &target)).await.unwrap();
    let ctx = |tenant: &str| pb::CallContext { tenant: tenant.into(), ..Default::default() };

    let own = gw.call_as("acme_billing", r#"{"city": "Oslo"}"#, ctx("acme")).await;
    assert_eq!(status_of(&own), ToolStatus::Success, "{own:?}");
    let shared = gw.call_as("get_weather", r#"{"city": "Oslo"}"#, ctx("acme")).await;
    assert_eq!(status_of(&shared), ToolStatus::Success, "shared tools serve every tenant");

    let other = gw.call_as("acme_billing", r#"{"city": "Oslo"}"#, ctx("globex")).await;
    let missing = gw.call_as("acme_billinx", r#"{"city": "Oslo"}"#, ctx("globex")).await;
    assert_eq!(kind_of(&other), K::ToolNotFound);
    assert_eq!(other.content, "Error: acme_billing is not a valid tool.", "never suggested");
    assert_eq!(missing.content, "Error: acme_billinx is not a valid tool.");
    let variant = gw.call_as("ACME-BILLING", "{}", ctx("globex")).await;
    assert_eq!(kind_of(&variant), K::ToolNotFound, "not reachable through a name variant either");

    let request = |tenant: &str| pb::ListToolDefinitionsRequest {
        context: Some(ctx(tenant)),
        format: pb::DefinitionFormat::Mcp.into(),
    };
    let names = |defs: Vec<pb::ToolDefinition>| defs.into_iter().map(|d| d.tool).collect::<Vec<_>>();
    let globex = gw.gateway.list_tool_definitions(request("globex")).await.unwrap().into_inner().definitions;
    assert_eq!(names(globex), ["get_weather"]);
    let acme = gw.gateway.list_tool_definitions(request("acme")).await.unwrap().into_inner().definitions;
    assert_eq!(names(acme), ["get_weather", "acme_billing"], "shared tools first, then the tenant's own");
}
