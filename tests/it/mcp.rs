//! MCP servers as backends, against the real Python MCP SDK test server (`tests/mcp/server.py`) over stdio and
//! streamable HTTP: import, calls, `isError`, outputSchema checks, repair and injection before the call, a killed
//! server restarted, and `list_changed`. Admin-side behaviour is in `mcp_admin.rs`.

use crate::support;
use crate::support::mcp::{
    HttpServer, add, admin, call_until, http_server, kill_pid, status, stdio_server, with_injection,
};
use crate::support::{Gateway, kind_of, start_gateway, status_of};
use serde_json::{Value, json};
use toolgate::pb::v1 as pb;

fn ok(m: &pb::ToolMessage) -> bool {
    status_of(m) == pb::ToolStatus::Success
}

fn structured(m: &pb::ToolMessage) -> Value {
    serde_json::from_str(&m.structured).unwrap_or(Value::Null)
}

/// Everything a server's tools must do through the gateway, whatever the transport. `p` is the name prefix.
async fn exercise(gw: &mut Gateway, p: &str, imported: &pb::McpServerStatus) {
    assert!(imported.connected, "{imported:?}");
    assert!(imported.tools.contains(&format!("{p}__echo")) && imported.problems.is_empty(), "{imported:?}");
    let add_spec = gw.registry.get_tool(pb::GetToolRequest { name: format!("{p}__add"), tenant: String::new() });
    let add_spec = add_spec.await.unwrap().into_inner().tool.unwrap();
    let backend = add_spec.backend.and_then(|b| b.kind);
    assert_eq!(backend, Some(pb::backend::Kind::Mcp(pb::McpBackend { server: p.into(), tool: "add".into() })));
    let output_schema: Value = serde_json::from_str(&add_spec.output_schema).expect("the outputSchema is kept");
    assert_eq!(output_schema["properties"]["sum"]["type"], "integer");

    let echo = gw.call(&format!("{p}__echo"), r#"{"text": "hi"}"#).await;
    assert!(ok(&echo) && echo.content == "hi", "{echo:?}");

    let failed = gw.call(&format!("{p}__fail"), r#"{"reason": "disk full"}"#).await;
    assert_eq!(kind_of(&failed), pb::ErrorKind::ToolError, "{failed:?}");
    assert!(failed.content.contains("disk full"), "the server's text reaches the model: {failed:?}");

    // Repaired before the call ("2" → 2), then checked against the outputSchema.
    let sum = gw.call(&format!("{p}__add"), r#"{"a": "2", "b": 3}"#).await;
    assert!(ok(&sum), "{sum:?}");
    assert_eq!(structured(&sum), json!({"sum": 5}));
    assert_eq!(sum.repairs.iter().map(|r| r.rule.as_str()).collect::<Vec<_>>(), ["string_to_integer"]);
    let count = gw.call(&format!("{p}__count"), r#"{"n": "5"}"#).await;
    assert_eq!(count.content, "int:5", "the server received the repaired integer: {count:?}");

    // A result of more than text keeps its blocks; the model that reads only text gets a note, not base64.
    let chart = gw.call(&format!("{p}__chart"), "{}").await;
    assert!(ok(&chart), "{chart:?}");
    assert_eq!(chart.content, "the chart\n[image: image/png, 68 bytes]\na,b\n1,2");
    let kinds: Vec<_> = chart.blocks.iter().map(|b| b.block.clone().unwrap()).collect();
    use pb::result_block::Block;
    assert!(matches!(&kinds[0], Block::Text(t) if t.text == "the chart"), "{kinds:?}");
    assert!(matches!(&kinds[1], Block::Image(i) if i.mime_type == "image/png" && i.data.starts_with("iVBORw0KGgo")));
    assert!(matches!(&kinds[2], Block::Resource(r) if r.uri == "file:///data.csv"), "{kinds:?}");

    let bad = gw.call(&format!("{p}__bad_output"), "{}").await;
    assert_eq!(kind_of(&bad), pb::ErrorKind::ToolError, "{bad:?}");
    assert!(bad.error.as_ref().unwrap().message.contains("outputSchema"), "{bad:?}");

    // The operator's overlay injects user_id; what the model sends for it never reaches the server.
    let context = pb::CallContext { user_id: "u1".into(), ..Default::default() };
    let me = gw.call_as(&format!("{p}__whoami"), r#"{"note": "n", "user_id": "mallory"}"#, context.clone()).await;
    assert!(ok(&me) && me.content == "u1:n", "{me:?}");
    assert!(me.repairs.iter().any(|r| r.rule == "injected_override_removed"), "{me:?}");

    // list_changed: a tool the server adds is imported without a restart, and the overlay survives the re-import.
    let added = gw.call(&format!("{p}__add_tool"), r#"{"name": "late"}"#).await;
    assert!(ok(&added), "{added:?}");
    let late = call_until(gw, &format!("{p}__late"), "{}", ok).await;
    assert_eq!(late.content, "late");
    let me = gw.call_as(&format!("{p}__whoami"), r#"{"note": "again"}"#, context).await;
    assert_eq!(me.content, "u1:again", "the overlay is laid over the re-imported tool too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn a_stdio_servers_tools_run_through_the_gateway() {
    let (_dir, config) = support::mcp::config();
    let mut gw = start_gateway(config).await;
    let mut admin = admin(&gw).await;
    let imported = add(&mut admin, with_injection(stdio_server("files"))).await;
    exercise(&mut gw, "files", &imported).await;
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn a_streamable_http_servers_tools_run_through_the_gateway() {
    let server = HttpServer::start().await;
    let (_dir, config) = support::mcp::config();
    let mut gw = start_gateway(config).await;
    let mut admin = admin(&gw).await;
    let imported = add(&mut admin, with_injection(http_server("web", &server.url))).await;
    exercise(&mut gw, "web", &imported).await;
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn a_killed_stdio_server_answers_unavailable_and_is_restarted() {
    let (_dir, config) = support::mcp::config();
    let mut gw = start_gateway(config).await;
    let mut admin = admin(&gw).await;
    assert!(add(&mut admin, stdio_server("s")).await.connected);
    let first = gw.call("s__pid", "{}").await;
    let pid: u32 = first.content.parse().expect("the pid tool answers a number");
    kill_pid(pid);
    let down = gw.call("s__echo", r#"{"text": "x"}"#).await;
    assert_eq!(kind_of(&down), pb::ErrorKind::Unavailable, "{down:?}");
    assert!(down.error.as_ref().unwrap().retryable, "a dead server is worth retrying: {down:?}");
    let back = call_until(&mut gw, "s__pid", "{}", |m| ok(m) && m.content != first.content).await;
    assert_ne!(back.content, first.content, "a new process serves the tools");
    let echo = gw.call("s__echo", r#"{"text": "again"}"#).await;
    assert_eq!(echo.content, "again");
    let status = status(&mut admin, "s").await;
    assert!(status.connected && status.connects == 2, "{status:?}");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn a_killed_http_server_answers_unavailable_and_is_reconnected_once_back() {
    let mut server = HttpServer::start().await;
    let (_dir, config) = support::mcp::config();
    let mut gw = start_gateway(config).await;
    let mut admin = admin(&gw).await;
    assert!(add(&mut admin, http_server("web", &server.url)).await.connected);
    assert!(ok(&gw.call("web__echo", r#"{"text": "x"}"#).await));
    server.kill();
    let down = gw.call("web__echo", r#"{"text": "x"}"#).await;
    assert_eq!(kind_of(&down), pb::ErrorKind::Unavailable, "{down:?}");
    assert!(down.error.as_ref().unwrap().retryable);
    let _restarted = HttpServer::start_on(server.port).await;
    let back = call_until(&mut gw, "web__echo", r#"{"text": "back"}"#, ok).await;
    assert_eq!(back.content, "back");
    assert!(status(&mut admin, "web").await.connects >= 2);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn an_output_that_violates_its_schema_passes_when_configured_and_is_counted() {
    let (_dir, config) = support::mcp::config();
    let mut gw = start_gateway(config).await;
    let mut admin = admin(&gw).await;
    let server = pb::McpServer { pass_invalid_output: true, ..stdio_server("lax") };
    add(&mut admin, server).await;
    let bad = gw.call("lax__bad_output", "{}").await;
    assert!(ok(&bad), "{bad:?}");
    assert_eq!(structured(&bad), json!({"sum": "not a number"}));
    assert_eq!(status(&mut admin, "lax").await.output_violations, 1);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn a_paginated_tool_list_is_imported_whole_and_refreshed_without_a_notification() {
    let (_dir, config) = support::mcp::config();
    let mut gw = start_gateway(config).await;
    let mut admin = admin(&gw).await;
    let mut server = stdio_server("paged");
    if let Some(pb::mcp_server::Transport::Stdio(stdio)) = &mut server.transport {
        stdio.args.extend(["--page-size".into(), "3".into()]);
    }
    server.refresh_interval_ms = 300;
    let imported = add(&mut admin, server).await;
    assert_eq!(imported.tools.len(), 13, "five pages of tools/list, all imported: {imported:?}");
    let added = gw.call("paged__add_tool", r#"{"name": "quiet", "notify": false}"#).await;
    assert_eq!(added.content, "added");
    let quiet = call_until(&mut gw, "paged__quiet", "{}", ok).await;
    assert_eq!(quiet.content, "quiet", "the periodic refresh found the tool");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn a_stdio_server_gets_its_own_env_and_none_of_the_gateways() {
    // Cargo sets this in the environment of every test process, so the gateway (in this process) has it.
    let ours = std::env::var("CARGO_PKG_NAME").expect("run the tests with cargo, which sets CARGO_PKG_NAME");
    assert_eq!(ours, "toolgate");
    let (_dir, config) = support::mcp::config();
    let mut gw = start_gateway(config).await;
    let mut admin = admin(&gw).await;
    let mut server = stdio_server("s");
    if let Some(pb::mcp_server::Transport::Stdio(stdio)) = &mut server.transport {
        stdio.env.insert("GREETING".into(), "hi".into());
    }
    add(&mut admin, server).await;
    let var = |name: &str| format!(r#"{{"name": "{name}"}}"#);
    assert_eq!(gw.call("s__env_var", &var("GREETING")).await.content, "hi");
    assert_eq!(gw.call("s__env_var", &var("CARGO_PKG_NAME")).await.content, "<unset>", "not inherited");
    assert_ne!(gw.call("s__env_var", &var("PATH")).await.content, "<unset>", "PATH is inherited");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn a_streamable_http_server_gets_its_headers_on_every_call() {
    let server = HttpServer::start().await;
    let (_dir, config) = support::mcp::config();
    let mut gw = start_gateway(config).await;
    let mut admin = admin(&gw).await;
    let mut definition = http_server("web", &server.url);
    if let Some(pb::mcp_server::Transport::Http(http)) = &mut definition.transport {
        http.headers.insert("x-probe".into(), "p1".into());
    }
    add(&mut admin, definition).await;
    let probe = gw.call("web__header", r#"{"name": "x-probe"}"#).await;
    assert_eq!(probe.content, "p1", "{probe:?}");
    gw.stop().await;
}
