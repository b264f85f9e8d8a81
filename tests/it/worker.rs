//! Connected workers over real gRPC: workers are streaming clients that say hello, receive invocations and answer.

use crate::support;
use crate::support::{Gateway, kind_of, start_gateway, status_of, temp_config};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Status, Streaming};
use toolgate::pb::v1::{self as pb, ErrorKind as K, ToolStatus, gateway_message};
use toolgate::pb::v1::{tool_worker_client::ToolWorkerClient, worker_message::Kind as Sent};
use toolgate::registry::ToolSpec;

/// A tool a worker serves, in the snake_case spec form; its backend is left for the hello to set.
fn tool(name: &str) -> Value {
    json!({"name": name, "input_schema": {"type": "object", "properties": {"i": {"type": "integer"}}}})
}

fn hello(worker_name: &str, tools: &[Value]) -> pb::WorkerMessage {
    let spec =
        |t: &Value| pb::ToolSpec::from(&serde_json::from_value::<ToolSpec>(t.clone()).expect("a test spec parses"));
    let tools = tools.iter().map(spec).collect();
    pb::WorkerMessage { kind: Some(Sent::Hello(pb::WorkerHello { worker_name: worker_name.into(), tools })) }
}

/// One worker's open stream, as the worker sees it. Dropping `to_gateway` ends the worker's half cleanly;
/// dropping both cancels the stream, as a crashed worker does.
struct Stream {
    to_gateway: mpsc::Sender<pb::WorkerMessage>,
    from_gateway: Streaming<pb::GatewayMessage>,
}

/// Opens Connect with `first` as the first message, with the admin token when one is given.
async fn open(gw: &Gateway, first: pb::WorkerMessage, token: Option<&str>) -> Result<Stream, Status> {
    let (to_gateway, outbound) = mpsc::channel(16);
    to_gateway.send(first).await.unwrap();
    let mut request = tonic::Request::new(ReceiverStream::new(outbound));
    if let Some(token) = token {
        request.metadata_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    }
    let mut client = ToolWorkerClient::new(support::connect(gw.addr).await);
    let from_gateway = client.connect(request).await?.into_inner();
    Ok(Stream { to_gateway, from_gateway })
}

impl Stream {
    async fn next(&mut self) -> Result<Option<gateway_message::Kind>, Status> {
        Ok(self.from_gateway.message().await?.and_then(|m| m.kind))
    }

    async fn welcome(&mut self) -> pb::WorkerWelcome {
        match self.next().await {
            Ok(Some(gateway_message::Kind::Welcome(welcome))) => welcome,
            other => panic!("expected a welcome, got {other:?}"),
        }
    }

    async fn invocation(&mut self) -> pb::WorkerInvocation {
        match self.next().await {
            Ok(Some(gateway_message::Kind::Invocation(invocation))) => invocation,
            other => panic!("expected an invocation, got {other:?}"),
        }
    }

    /// Ends the worker's half and waits until the gateway ends its own, which it does once the worker is detached.
    async fn close(mut self) {
        drop(self.to_gateway);
        assert!(matches!(self.from_gateway.message().await, Ok(None)), "the gateway ends the stream cleanly");
    }
}

/// Connects a worker and serves in a task: each invocation is reported on the returned channel and answered
/// with content `label` and the arguments as the structured result; tool `broken` answers an error instead.
async fn serve(gw: &Gateway, label: &'static str, tools: &[Value]) -> (pb::WorkerWelcome, Served) {
    let mut stream = open(gw, hello(label, tools), None).await.expect("the hello is accepted");
    let welcome = stream.welcome().await;
    let (seen, invocations) = mpsc::unbounded_channel();
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        loop {
            let invocation = tokio::select! {
                _ = &mut stopped => return stream.close().await,
                next = stream.next() => match next {
                    Ok(Some(gateway_message::Kind::Invocation(invocation))) => invocation,
                    _ => return,
                },
            };
            let result = pb::WorkerResult {
                invocation_id: invocation.invocation_id.clone(),
                content: label.into(),
                structured: invocation.arguments.clone(),
                is_error: invocation.tool == "broken",
                error_message: if invocation.tool == "broken" { "the worker broke".into() } else { String::new() },
            };
            let _ = seen.send(invocation);
            let _ = stream.to_gateway.send(pb::WorkerMessage { kind: Some(Sent::Result(result)) }).await;
        }
    });
    (welcome, Served { invocations, stop, task })
}

struct Served {
    invocations: mpsc::UnboundedReceiver<pb::WorkerInvocation>,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Served {
    /// Disconnects cleanly and returns once the gateway has detached the worker.
    async fn disconnect(self) {
        self.stop.send(()).unwrap();
        self.task.await.unwrap();
    }
}

fn retryable(m: &pb::ToolMessage) -> bool {
    m.error.as_ref().is_some_and(|e| e.retryable)
}

#[tokio::test]
async fn two_workers_share_a_tool_and_each_result_reaches_its_caller() {
    let (_dir, config) = temp_config();
    let gw = start_gateway(config).await;
    let (_, mut a) = serve(&gw, "a", &[tool("search")]).await;
    let (_, mut b) = serve(&gw, "b", &[tool("search")]).await;
    let calls = (0..20).map(|i| {
        let mut client = gw.gateway.clone();
        async move {
            let call =
                pb::ToolCall { id: format!("c{i}"), name: "search".into(), arguments: format!(r#"{{"i":{i}}}"#) };
            let request = pb::ExecuteRequest { call: Some(call), ..Default::default() };
            (i, client.execute(request).await.unwrap().into_inner().message.unwrap())
        }
    });
    let mut served_by = std::collections::BTreeMap::new();
    for (i, m) in futures::future::join_all(calls).await {
        assert_eq!(status_of(&m), ToolStatus::Success, "{m:?}");
        assert_eq!(serde_json::from_str::<Value>(&m.structured).unwrap(), json!({"i": i}), "another caller's result");
        *served_by.entry(m.content).or_insert(0) += 1;
    }
    assert_eq!(served_by, [("a".to_owned(), 10), ("b".to_owned(), 10)].into(), "calls are taken in turn");
    let (mut got_a, mut got_b) = (0, 0);
    while a.invocations.try_recv().is_ok() {
        got_a += 1;
    }
    while b.invocations.try_recv().is_ok() {
        got_b += 1;
    }
    assert_eq!((got_a, got_b), (10, 10));
}

#[tokio::test]
async fn the_worker_receives_the_arguments_after_repair_and_injection() {
    let (_dir, config) = temp_config();
    let gw = start_gateway(config).await;
    let spec = json!({"name": "count_things", "input_schema": {"type": "object", "required": ["count", "user_id"],
        "properties": {"count": {"type": "integer"}, "user_id": {"type": "string"}}},
        "inject": [{"param": "user_id", "from": "user_id"}]});
    let (welcome, mut worker) = serve(&gw, "w", &[spec]).await;
    assert_eq!(welcome.tools[0].backend.as_ref().unwrap().kind, Some(pb::backend::Kind::Worker(pb::WorkerBackend {})));

    let mut gw = gw;
    let context = pb::CallContext { user_id: "u1".into(), ..Default::default() };
    let m = gw.call_as("count_things", r#"{"count": "3"}"#, context).await;
    assert_eq!(status_of(&m), ToolStatus::Success, "{m:?}");
    let repairs: Vec<_> = m.repairs.iter().map(|r| (r.rule.as_str(), r.path.as_str(), r.before.as_str())).collect();
    assert_eq!(repairs, [("string_to_integer", "/count", "\"3\"")]);
    assert_eq!(m.effective_arguments, r#"{"count":3}"#, "no injected value shown to the model");

    let invocation = worker.invocations.recv().await.unwrap();
    assert_eq!(serde_json::from_str::<Value>(&invocation.arguments).unwrap(), json!({"count": 3, "user_id": "u1"}));
    assert_eq!((invocation.call_id.as_str(), invocation.tool.as_str()), (m.tool_call_id.as_str(), "count_things"));
    assert_eq!(invocation.context.unwrap().user_id, "u1");
    assert!(
        (1..=30_000).contains(&invocation.deadline_ms),
        "the default timeout bounds it: {}",
        invocation.deadline_ms
    );
}

#[tokio::test]
async fn a_tool_whose_worker_left_is_unavailable_and_retryable_not_missing() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let (_, worker) = serve(&gw, "w", &[tool("search")]).await;
    assert_eq!(status_of(&gw.call("search", "{}").await), ToolStatus::Success);
    worker.disconnect().await;

    let started = Instant::now();
    let m = gw.call("search", "{}").await;
    assert_eq!((kind_of(&m), retryable(&m)), (K::Unavailable, true), "{m:?}");
    assert!(m.error.as_ref().unwrap().message.contains("no worker is connected for tool search"), "{m:?}");
    // The default timeout is 30 s: 5 s tells "at once" from "at the timeout" on any loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered at once, not at the timeout: {:?}",
        started.elapsed()
    );
    let get = pb::GetToolRequest { name: "search".into(), tenant: String::new() };
    assert_eq!(gw.registry.get_tool(get).await.unwrap().into_inner().tool.unwrap().version, 1, "still registered");
}

#[tokio::test]
async fn a_worker_dying_mid_call_fails_the_call_at_once() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let mut slow = tool("search");
    slow["limits"] = json!({"timeout_ms": 10_000});
    let mut stream = open(&gw, hello("dying", &[slow]), None).await.unwrap();
    stream.welcome().await;
    let mut caller = gw.gateway.clone();
    let started = Instant::now();
    let call = tokio::spawn(async move {
        let call = pb::ToolCall { id: "c1".into(), name: "search".into(), arguments: "{}".into() };
        caller.execute(pb::ExecuteRequest { call: Some(call), ..Default::default() }).await.unwrap().into_inner()
    });
    stream.invocation().await;
    drop(stream);

    let m = call.await.unwrap().message.unwrap();
    // Its timeout is 10 s: 5 s tells "at once" from "at the timeout" on any loaded machine.
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert_eq!((kind_of(&m), retryable(&m), m.attempts), (K::Unavailable, true, 1), "{m:?}");
    let message = &m.error.as_ref().unwrap().message;
    assert!(message.contains("the worker serving search disconnected during the call"), "{message}");
    assert_eq!(kind_of(&gw.call("search", "{}").await), K::Unavailable);
}

#[tokio::test]
async fn a_reconnected_worker_serves_the_tool_again_at_the_same_version() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let (welcome, first) = serve(&gw, "first", &[tool("search")]).await;
    assert!(welcome.worker_id.starts_with("worker-"), "{}", welcome.worker_id);
    assert_eq!((welcome.tools[0].name.as_str(), welcome.tools[0].version), ("search", 1));
    first.disconnect().await;
    assert_eq!(kind_of(&gw.call("search", "{}").await), K::Unavailable);

    let (again, second) = serve(&gw, "second", &[tool("search")]).await;
    assert_eq!(again.tools[0].version, 1, "an unchanged hello keeps the version");
    assert_ne!(again.worker_id, welcome.worker_id);
    let m = gw.call("search", r#"{"i": 1}"#).await;
    assert_eq!((status_of(&m), m.content.as_str()), (ToolStatus::Success, "second"), "{m:?}");

    let mut changed = tool("search");
    changed["description"] = json!("now with a description");
    let refused = open(&gw, hello("third", std::slice::from_ref(&changed)), None).await.err().expect("refused");
    assert_eq!(refused.code(), Code::FailedPrecondition, "another definition under a connected worker: {refused:?}");
    second.disconnect().await;
    let (third, _) = serve(&gw, "third", &[changed]).await;
    assert_eq!(third.tools[0].version, 2, "once no worker serves it, a changed definition is a new version");
}

#[tokio::test]
async fn a_worker_error_is_a_tool_error_with_its_message() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let _worker = serve(&gw, "w", &[tool("broken")]).await;
    let m = gw.call("broken", "{}").await;
    assert_eq!((kind_of(&m), retryable(&m)), (K::ToolError, false), "{m:?}");
    assert_eq!(m.error.as_ref().unwrap().message, "tool error: the worker broke");
    assert_eq!(m.content, "Error: broken failed: the worker broke");
}

#[tokio::test]
async fn a_hello_is_checked_whole_before_anything_is_registered() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    gw.register(json!({"name": "taken", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": "http://127.0.0.1:1"}}}))
        .await
        .unwrap();
    let mut grpc = tool("remote");
    grpc["backend"] = json!({"grpc": {"target": "http://127.0.0.1:1"}});
    let mut bad_schema = tool("bad_schema");
    bad_schema["input_schema"] = json!({"type": "object", "properties": {"a": {"type": 5}}});
    let result = pb::WorkerMessage { kind: Some(Sent::Result(pb::WorkerResult::default())) };
    let cases = [
        (result, Code::InvalidArgument, "the first message on a worker stream must be a WorkerHello"),
        (hello("w", &[tool("fresh"), grpc]), Code::InvalidArgument, "tool \"remote\": a worker serves its own tools"),
        (
            hello("w", &[tool("fresh"), bad_schema]),
            Code::InvalidArgument,
            "tool \"bad_schema\": invalid tool spec: input_schema",
        ),
        (
            hello("w", &[tool("fresh"), tool("taken")]),
            Code::FailedPrecondition,
            "tool \"taken\" is already registered with the grpc backend",
        ),
        (hello("w", &[tool("fresh"), tool("fresh")]), Code::InvalidArgument, "tool \"fresh\": is listed twice"),
        (hello("w", &[]), Code::InvalidArgument, "must list at least one tool"),
    ];
    for (first, code, reason) in cases {
        let err = open(&gw, first, None).await.err().expect("refused");
        assert_eq!(err.code(), code, "{err:?}");
        assert!(err.message().contains(reason), "{:?} does not contain {reason:?}", err.message());
    }
    let get = |name: &str| pb::GetToolRequest { name: name.into(), tenant: String::new() };
    assert_eq!(gw.registry.get_tool(get("fresh")).await.unwrap_err().code(), Code::NotFound, "nothing registered");
    let taken = gw.registry.get_tool(get("taken")).await.unwrap().into_inner().tool.unwrap();
    assert!(matches!(taken.backend.unwrap().kind, Some(pb::backend::Kind::Grpc(_))), "the grpc tool is untouched");
    assert_eq!(taken.version, 1);
}

#[tokio::test]
async fn a_second_hello_ends_the_stream() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let mut stream = open(&gw, hello("w", &[tool("search")]), None).await.unwrap();
    stream.welcome().await;
    stream.to_gateway.send(hello("w", &[tool("search")])).await.unwrap();
    let err = stream.next().await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("takes one WorkerHello"), "{}", err.message());
    assert_eq!(kind_of(&gw.call("search", "{}").await), K::Unavailable, "the worker was detached");
}

#[tokio::test]
async fn connect_needs_the_admin_token() {
    let (_dir, mut config) = temp_config();
    config.tokens.admin = Some("admin-secret".into());
    let gw = start_gateway(config).await;
    for token in [None, Some("data-secret")] {
        let err = open(&gw, hello("w", &[tool("search")]), token).await.err().expect("refused");
        assert_eq!(err.code(), Code::Unauthenticated, "{token:?}");
    }
    let mut stream = open(&gw, hello("w", &[tool("search")]), Some("admin-secret")).await.unwrap();
    assert_eq!(stream.welcome().await.tools.len(), 1);

    let mut health = tonic_health::pb::health_client::HealthClient::new(support::connect(gw.addr).await);
    let req = tonic_health::pb::HealthCheckRequest { service: "toolgate.v1.ToolWorker".into() };
    let status = health.check(req).await.unwrap().into_inner().status;
    assert_eq!(status, tonic_health::pb::health_check_response::ServingStatus::Serving as i32);
}

#[tokio::test]
async fn shutdown_ends_the_workers_streams() {
    let (_dir, config) = temp_config();
    let gw = start_gateway(config).await;
    let mut stream = open(&gw, hello("w", &[tool("search")]), None).await.unwrap();
    stream.welcome().await;
    tokio::time::timeout(Duration::from_secs(5), gw.stop()).await.expect("a connected worker does not hold it open");
    assert!(matches!(stream.next().await, Ok(None)), "the stream ends cleanly");
}
