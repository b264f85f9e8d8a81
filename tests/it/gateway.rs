//! The data plane over real gRPC: calls on each backend, name resolution, argument errors, backend failures.

use crate::support::backends::{Runtime, closed_port, start_garbage, start_http, start_runtime, start_silent};
use crate::support::{city_schema, kind_of, start_gateway, status_of, temp_config};
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::Duration;
use toolgate::pb::v1::{self as pb, ErrorKind as K, ToolStatus};

#[tokio::test]
async fn success_on_the_grpc_and_http_backends() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    let http = start_http().await;
    gw.register(json!({"name": "echo", "input_schema": city_schema(), "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();
    gw.register(json!({"name": "weather.http", "input_schema": city_schema(), "backend": {"http": {"url": format!("{http}/echo")}}}))
        .await
        .unwrap();
    gw.register(json!({"name": "text", "input_schema": {"type": "object"}, "backend": {"http": {"url": format!("{http}/text")}}}))
        .await
        .unwrap();

    let m = gw.call("echo", r#"{"city": "Oslo"}"#).await;
    assert_eq!((status_of(&m), m.content.as_str()), (ToolStatus::Success, r#"{"city": "Oslo"}"#), "{m:?}");
    assert!(m.tool_call_id.starts_with("call-echo-"), "the call's own id: {}", m.tool_call_id);
    assert_eq!((m.name.as_str(), m.attempts), ("echo", 1));
    assert_eq!(m.effective_arguments, r#"{"city": "Oslo"}"#);
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 1);

    let m = gw.call("weather.http", r#"{"city": "Bergen"}"#).await;
    assert_eq!(status_of(&m), ToolStatus::Success, "{m:?}");
    assert_eq!(serde_json::from_str::<Value>(&m.structured).unwrap(), json!({"city": "Bergen"}));

    let m = gw.call("text", "").await;
    assert_eq!(
        (status_of(&m), m.content.as_str(), m.structured.as_str()),
        (ToolStatus::Success, "plain text answer", "")
    );
    assert_eq!(m.effective_arguments, "{}", "empty arguments mean {{}}");
}

#[tokio::test]
async fn names_resolve_or_are_refused_with_suggestions() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    for name in ["get_weather", "weather.forecast", "get_time"] {
        gw.register(json!({"name": name, "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}}}))
            .await
            .unwrap();
    }

    let m = gw.call("get_weathr", "{}").await;
    assert_eq!(kind_of(&m), K::ToolNotFound);
    assert_eq!(m.content, "Error: get_weathr is not a valid tool. Did you mean get_weather?");
    let e = m.error.as_ref().unwrap();
    assert_eq!((e.suggestions.clone(), e.model_fixable, e.retryable), (vec!["get_weather".to_string()], true, false));
    assert_eq!(m.name, "get_weathr");

    let m = gw.call("Get-Weather", "{}").await;
    assert_eq!((status_of(&m), m.name.as_str()), (ToolStatus::Success, "get_weather"));
    assert_eq!(m.repairs.len(), 1);
    assert_eq!((m.repairs[0].rule.as_str(), m.repairs[0].after.as_str()), ("tool_name_normalized", "\"get_weather\""));

    // The provider-safe name handed out in definitions resolves without a repair.
    let m = gw.call("weather_forecast", "{}").await;
    assert_eq!((status_of(&m), m.name.as_str(), m.repairs.len()), (ToolStatus::Success, "weather.forecast", 0));

    let m = gw.call("launch_rockets", "{}").await;
    assert_eq!((kind_of(&m), m.content.as_str()), (K::ToolNotFound, "Error: launch_rockets is not a valid tool."));
}

#[tokio::test]
async fn malformed_and_invalid_arguments_name_every_problem() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    let schema = json!({"type": "object", "additionalProperties": false, "required": ["city", "days"],
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}, "unit": {"enum": ["c", "f"]}}});
    gw.register(json!({"name": "forecast", "input_schema": schema, "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();

    let m = gw.call("forecast", "{'city': 'Oslo', 'days': ").await;
    assert_eq!(kind_of(&m), K::MalformedArguments, "{m:?}");
    assert!(
        m.content.starts_with("Error: the arguments for forecast could not be read: the arguments end before"),
        "{}",
        m.content
    );
    assert!(m.content.ends_with(" Please fix your mistakes."));
    assert_eq!(m.error.as_ref().unwrap().original_arguments, "{'city': 'Oslo', 'days': ");

    let m = gw.call("forecast", "{'city': 'Oslo', 'days': 3} extra words").await;
    assert_eq!(kind_of(&m), K::MalformedArguments, "words beside the value are not dropped: {m:?}");
    assert!(m.content.contains("the arguments are not valid JSON"), "{}", m.content);

    let raw = r#"{"city": 5, "days": "three", "unit": "kelvin", "extra": true}"#;
    let m = gw.call("forecast", raw).await;
    assert_eq!(kind_of(&m), K::InvalidArguments);
    let e = m.error.as_ref().unwrap();
    let mut paths: Vec<_> = e.violations.iter().map(|v| v.instance_path.as_str()).collect();
    paths.sort();
    assert_eq!(paths, ["", "/city", "/days", "/unit"], "{:#?}", e.violations);
    assert!(e.violations.iter().all(|v| !v.schema_path.is_empty() && !v.message.is_empty()));
    assert_eq!(e.original_arguments, raw);
    for expected in [
        "\n- city: 5 is not of type \"string\"",
        "\n- days: \"three\" is not of type \"integer\"",
        "\n- unit: \"kelvin\"",
        "extra",
    ] {
        assert!(m.content.contains(expected), "{:?} lacks {expected:?}", m.content);
    }
    assert!(
        m.content.starts_with("Error: invalid arguments for forecast:")
            && m.content.ends_with("\nPlease fix your mistakes.")
    );

    let m = gw.call("forecast", "{}").await;
    assert!(m.content.contains("- arguments: \"city\" is a required property"), "{}", m.content);
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 0, "no invalid call reached the tool");
}

#[tokio::test]
async fn backend_failures_are_typed_messages() {
    let (_dir, mut config) = temp_config();
    // Every slow way to fail takes a minute (a connection retried until the connect timeout, a call left to the
    // default timeout, a backend waited for past the tool's own): far past the bound each answer is held to below,
    // which is itself far past any scheduling delay.
    config.connect_timeout = Duration::from_secs(60);
    config.default_timeout = Duration::from_secs(60);
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    let http = start_http().await;
    let grpc = |t: &str| json!({"grpc": {"target": t}});
    let url = |path: &str| json!({"http": {"url": format!("{http}{path}")}});
    let cases: Vec<(&str, Value, u64, K, bool, bool)> = vec![
        // name, backend, timeout_ms, kind, model_fixable, retryable
        ("fail", grpc(&target), 0, K::ToolError, false, false),
        ("sleep", grpc(&target), 100, K::Timeout, false, true),
        ("unreachable_grpc", grpc(&format!("http://{}", closed_port())), 0, K::Unavailable, false, true),
        ("garbage_grpc", grpc(&format!("http://{}", start_garbage().await)), 60_000, K::Unavailable, false, true),
        ("silent_grpc", grpc(&format!("http://{}", start_silent().await)), 150, K::Timeout, false, true),
        ("http_400", url("/status/400"), 0, K::ToolError, true, false),
        ("http_422", url("/status/422"), 0, K::ToolError, true, false),
        // A misrouted backend is the operator's to fix, not the model's.
        ("http_404", url("/status/404"), 0, K::ToolError, false, false),
        ("http_401", url("/status/401"), 0, K::ToolError, false, false),
        // A redirect is not followed: a 302 would reach `/echo` as a GET without the arguments, a 307 as the POST.
        ("http_302", url("/moved/302"), 0, K::ToolError, false, false),
        ("http_307", url("/moved/307"), 0, K::ToolError, false, false),
        ("http_503", url("/status/503"), 0, K::ToolError, false, true),
        ("http_slow", url("/sleep/60000"), 100, K::Timeout, false, true),
        (
            "unreachable_http",
            json!({"http": {"url": format!("http://{}/x", closed_port())}}),
            0,
            K::Unavailable,
            false,
            true,
        ),
        (
            "garbage_http",
            json!({"http": {"url": format!("http://{}/x", start_garbage().await)}}),
            60_000,
            K::Unavailable,
            false,
            true,
        ),
        (
            "silent_http",
            json!({"http": {"url": format!("http://{}/x", start_silent().await)}}),
            150,
            K::Timeout,
            false,
            true,
        ),
    ];
    for (name, backend, timeout_ms, ..) in &cases {
        let spec = json!({"name": name, "input_schema": {"type": "object"}, "backend": backend, "limits": {"timeout_ms": timeout_ms}});
        gw.register(spec).await.unwrap();
    }
    for (name, _, _, kind, fixable, retryable) in cases {
        let args = if name == "sleep" { r#"{"ms": 60000}"# } else { "{}" };
        let m = gw.call(name, args).await;
        let e = m.error.clone().unwrap_or_default();
        assert_eq!((kind_of(&m), e.model_fixable, e.retryable), (kind, fixable, retryable), "{name}: {m:#?}");
        assert_eq!((status_of(&m), m.attempts), (ToolStatus::Error, 1), "{name}");
        assert!(m.content.starts_with(&format!("Error: {name} ")), "{name}: {}", m.content);
        // At once (or at its timeout of 100 or 150 ms), not after a minute: by the gateway's own measure.
        let took = Duration::from_micros(m.duration_us);
        assert!(took < Duration::from_secs(15), "{name} answered within its timeout, not after {took:?}");
    }
    let m = gw.call("http_400", "{}").await;
    assert!(m.content.contains("HTTP 400 Bad Request: failed with 400"), "{}", m.content);
    let m = gw.call("http_404", "{}").await;
    assert!(m.content.contains("HTTP 404 Not Found") && !m.content.contains("fix"), "not the model's: {}", m.content);
    for moved in ["http_302", "http_307"] {
        let m = gw.call(moved, r#"{"a": 1}"#).await;
        assert!(m.content.contains("redirects are not followed"), "{moved}: {}", m.content);
    }
    let m = gw.call("fail", "{}").await;
    assert_eq!(m.content, "Error: fail failed: the tool broke");
}

#[tokio::test]
async fn idempotent_tools_retry_transient_errors() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    let spec = |name: &str, idempotent: bool| {
        json!({"name": name, "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}},
               "limits": {"retries": 2, "idempotent": idempotent}})
    };
    gw.register(spec("flaky", false)).await.unwrap();
    let m = gw.call("flaky", "{}").await;
    assert_eq!((kind_of(&m), m.attempts), (K::Unavailable, 1), "a tool not marked idempotent runs at most once");

    gw.register(spec("flaky", true)).await.unwrap();
    let m = gw.call("flaky", "{}").await;
    assert_eq!((status_of(&m), m.attempts), (ToolStatus::Success, 2), "{m:?}");
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn the_callers_deadline_is_honoured() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(json!({"name": "sleep", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();
    let call = pb::ToolCall { id: "d".into(), name: "sleep".into(), arguments: r#"{"ms": 10000}"#.into() };
    let mut request = tonic::Request::new(pb::ExecuteRequest { call: Some(call), context: None, ..Default::default() });
    request.set_timeout(std::time::Duration::from_millis(1500));
    let started = std::time::Instant::now();
    let m = gw.gateway.execute(request).await.expect("answered before the deadline").into_inner().message.unwrap();
    assert_eq!(kind_of(&m), K::Timeout, "{m:?}");
    // Within the deadline by the gateway's own measure, which scheduling between the processes cannot stretch;
    // and by the wall clock nowhere near the 30 s default.
    assert!(m.duration_us < 1_500_000, "answered within the caller's deadline: {} µs", m.duration_us);
    assert!(started.elapsed().as_secs() < 15, "answered by the caller's deadline, not the 30 s default");
}

#[tokio::test]
async fn limits_refuse_oversized_and_deep_arguments() {
    let (_dir, mut config) = temp_config();
    config.parse_limits.max_bytes = 1000;
    config.max_request_bytes = 4000;
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(json!({"name": "echo", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();

    let m = gw.call("echo", &format!(r#"{{"a": "{}"}}"#, "x".repeat(1200))).await;
    assert_eq!(kind_of(&m), K::MalformedArguments);
    assert!(m.content.contains("over the limit of 1000 bytes"), "{}", m.content);

    let deep = format!("{{\"a\": {}1{}}}", "[".repeat(70), "]".repeat(70));
    let m = gw.call("echo", &deep).await;
    assert_eq!(kind_of(&m), K::MalformedArguments);
    assert!(m.content.contains("deeper than the limit of 64 levels"), "{}", m.content);

    let call = pb::ToolCall { id: "big".into(), name: "echo".into(), arguments: "x".repeat(5000) };
    let err = gw
        .gateway
        .execute(pb::ExecuteRequest { call: Some(call), context: None, ..Default::default() })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::OutOfRange, "{err:?}");
}

#[tokio::test]
async fn a_catastrophic_pattern_does_not_hang_the_gateway() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    // Backreferences force the backtracking engine; the nested quantifier makes it exponential.
    let schema = json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|a)*(b)\\2$"}}});
    gw.register(json!({"name": "evil", "input_schema": schema, "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let m = gw.call("evil", &format!(r#"{{"s": "{}c"}}"#, "a".repeat(40))).await;
    assert_eq!(kind_of(&m), K::InvalidArguments, "{m:?}");
    // Unbounded, this match would backtrack 2^40 times, for hours.
    assert!(started.elapsed().as_secs() < 30, "the backtracking limit stopped the match");
}

#[tokio::test]
async fn repaired_calls_run_with_what_the_model_meant() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    let schema = json!({"type": "object", "additionalProperties": false, "required": ["city"],
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "tags": {"type": "array"}}});
    for (name, repair) in [("forecast", json!({"aliases": {"town": "city"}})), ("strict", json!({"enabled": false}))] {
        let spec =
            json!({"name": name, "input_schema": schema, "repair": repair, "backend": {"grpc": {"target": target}}});
        gw.register(spec).await.unwrap();
    }

    let m = gw.call("functions.forecast", "```json\n{'town': 'Oslo', 'days': '3', 'tags': 'rain',}\n```").await;
    assert_eq!(status_of(&m), ToolStatus::Success, "{m:?}");
    let rules: Vec<_> = m.repairs.iter().map(|r| (r.rule.as_str(), r.path.as_str())).collect();
    let expected = [
        ("tool_name_prefix", ""),
        ("code_fence", ""),
        ("json_syntax", ""),
        ("alias", "/city"),
        ("string_to_integer", "/days"),
        ("scalar_to_array", "/tags"),
    ];
    assert_eq!(rules, expected);
    assert_eq!(m.effective_arguments, r#"{"city":"Oslo","days":3,"tags":["rain"]}"#);
    assert_eq!(m.content, m.effective_arguments, "the tool received the repaired arguments");
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 1);

    let m = gw.call("strict", r#"{"city": "Oslo", "days": "3"}"#).await;
    assert_eq!(kind_of(&m), K::InvalidArguments, "repair is off for this tool: {m:?}");
    assert!(m.repairs.is_empty());
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 1, "the refused call never ran");
}
