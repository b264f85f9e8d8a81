//! The MCP admin plane: definitions checked, an unreachable server reported, the admin token, name collisions,
//! removal, and servers from the config file and the API surviving a restart. The tests that need the Python MCP
//! SDK are ignored by plain `cargo test`; `.ci/run` runs them.

use crate::support;
use crate::support::mcp::{add, admin, call_until, pid_alive, status, stdio_server};
use crate::support::{kind_of, start_gateway, status_of, temp_config};
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use toolgate::backend::mcp::McpServerSpec;
use toolgate::pb::v1 as pb;

fn stdio(command: &str) -> pb::McpServer {
    let stdio = pb::McpStdio { command: command.into(), ..Default::default() };
    pb::McpServer { name: "s".into(), transport: Some(pb::mcp_server::Transport::Stdio(stdio)), ..Default::default() }
}

#[tokio::test]
async fn a_bad_definition_is_refused_naming_the_field() {
    let (_dir, config) = temp_config();
    let gw = start_gateway(config).await;
    let mut admin = admin(&gw).await;
    let http = |url: &str| pb::mcp_server::Transport::Http(pb::McpHttp { url: url.into(), ..Default::default() });
    let headers = [("Host".to_owned(), "evil.example".to_owned())].into();
    let with_host = pb::mcp_server::Transport::Http(pb::McpHttp { url: "http://127.0.0.1:1/mcp".into(), headers });
    let cases = [
        (pb::McpServer { name: "a b".into(), ..stdio("x") }, "name \"a b\" is invalid"),
        (pb::McpServer { transport: None, ..stdio("x") }, "needs a transport"),
        (pb::McpServer { transport: Some(http("file:///etc/passwd")), ..stdio("x") }, "must be an http:// or https://"),
        (stdio(""), "command is empty"),
        (pb::McpServer { transport: Some(with_host), ..stdio("x") }, "\"Host\" may not be set: it frames the request"),
    ];
    for (server, reason) in cases {
        let err = admin.add_mcp_server(pb::AddMcpServerRequest { server: Some(server) }).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(err.message().contains(reason), "{:?} lacks {reason:?}", err.message());
    }
    let err = admin.remove_mcp_server(pb::RemoveMcpServerRequest { name: "nope".into() }).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound);
    assert!(admin.list_mcp_servers(pb::ListMcpServersRequest {}).await.unwrap().into_inner().servers.is_empty());
    gw.stop().await;
}

#[tokio::test]
async fn an_unreachable_server_is_kept_and_reported_and_its_tools_answer_unavailable() {
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let mut admin = admin(&gw).await;
    let added = add(&mut admin, stdio("/nonexistent/mcp-server")).await;
    assert!(!added.connected && added.last_error.contains("cannot start"), "{added:?}");
    assert_eq!(status(&mut admin, "s").await.connects, 0, "it stays defined, retried with backoff");
    // A tool registered by hand against a server that is not connected, and one against no server at all.
    for (name, server) in [("by_hand", "s"), ("orphan", "ghost")] {
        let spec = json!({"name": name, "input_schema": {"type": "object"}, "backend": {"mcp": {"server": server, "tool": "t"}}});
        gw.register(spec).await.unwrap();
        let message = gw.call(name, "{}").await;
        assert_eq!(kind_of(&message), pb::ErrorKind::Unavailable, "{message:?}");
        assert!(message.error.as_ref().unwrap().retryable);
    }
    gw.stop().await;
}

#[tokio::test]
async fn the_mcp_admin_plane_needs_the_admin_token() {
    let (_dir, mut config) = temp_config();
    config.tokens.admin = Some("sesame".into());
    let gw = start_gateway(config).await;
    let mut admin = admin(&gw).await;
    let err = admin.list_mcp_servers(pb::ListMcpServersRequest {}).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn a_name_collision_is_reported_and_the_registered_tool_kept() {
    let (_dir, config) = support::mcp::config();
    let mut gw = start_gateway(config).await;
    let grpc = json!({"name": "s__echo", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": "http://127.0.0.1:1"}}});
    gw.register(grpc).await.unwrap();
    let mut admin = admin(&gw).await;
    let imported = add(&mut admin, stdio_server("s")).await;
    assert!(imported.connected && !imported.tools.contains(&"s__echo".to_owned()), "{imported:?}");
    assert!(imported.problems.iter().any(|p| p.contains("\"s__echo\" is taken")), "{:?}", imported.problems);
    let kept = gw.registry.get_tool(pb::GetToolRequest { name: "s__echo".into(), tenant: String::new() }).await;
    let kind = kept.unwrap().into_inner().tool.unwrap().backend.and_then(|b| b.kind);
    assert!(matches!(kind, Some(pb::backend::Kind::Grpc(_))), "not overwritten: {kind:?}");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn removing_a_server_ends_its_process_and_deletes_its_tools() {
    let (_dir, config) = support::mcp::config();
    let mut gw = start_gateway(config).await;
    let mut admin = admin(&gw).await;
    let imported = add(&mut admin, pb::McpServer { prefix: Some(String::new()), ..stdio_server("bare") }).await;
    assert!(imported.tools.contains(&"echo".to_owned()), "no prefix: the tools' own names {imported:?}");
    let pid: u32 = gw.call("pid", "{}").await.content.parse().unwrap();
    admin.remove_mcp_server(pb::RemoveMcpServerRequest { name: "bare".into() }).await.unwrap();
    let gone = gw.call("echo", r#"{"text": "x"}"#).await;
    assert_eq!(kind_of(&gone), pb::ErrorKind::ToolNotFound, "{gone:?}");
    let tools = gw.registry.list_tools(pb::ListToolsRequest::default()).await.unwrap().into_inner().tools;
    assert!(tools.is_empty(), "{tools:?}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while pid_alive(pid) {
        assert!(tokio::time::Instant::now() < deadline, "the server process {pid} outlived its removal");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn servers_from_the_config_and_the_api_survive_a_restart() {
    let (dir, mut config) = support::mcp::config();
    let (command, args) = support::mcp::stdio_command();
    let from_file = McpServerSpec { name: "conf".into(), command: Some(command), args, ..Default::default() };
    config.mcp_servers = vec![from_file];
    let mut gw = start_gateway(config.clone()).await;
    let mut admin = admin(&gw).await;
    add(&mut admin, stdio_server("api")).await;
    let ready = |m: &pb::ToolMessage| status_of(m) == pb::ToolStatus::Success;
    for name in ["conf__echo", "api__echo"] {
        let message = call_until(&mut gw, name, r#"{"text": "up"}"#, ready).await;
        assert_eq!(message.content, "up");
    }
    let version = |tools: &[pb::ToolSpec]| tools.iter().find(|t| t.name == "api__echo").map(|t| t.version);
    let before = gw.registry.list_tools(pb::ListToolsRequest::default()).await.unwrap().into_inner().tools;
    gw.stop().await;

    let mut gw = start_gateway(config).await;
    for name in ["conf__echo", "api__echo"] {
        call_until(&mut gw, name, r#"{"text": "up"}"#, ready).await;
    }
    let after = gw.registry.list_tools(pb::ListToolsRequest::default()).await.unwrap().into_inner().tools;
    assert_eq!(version(&after), version(&before), "re-importing the same tools keeps their versions");
    assert_eq!(admin_names(&gw).await, ["api", "conf"]);
    gw.stop().await;
    drop(dir);
}

async fn admin_names(gw: &support::Gateway) -> Vec<String> {
    let mut admin = admin(gw).await;
    let servers = admin.list_mcp_servers(pb::ListMcpServersRequest {}).await.unwrap().into_inner().servers;
    servers.into_iter().map(|s| s.server.unwrap().name).collect()
}

/// `toolgate mcp add|list|remove` against a real gateway; a server that cannot start is still added, and shown.
#[tokio::test]
async fn add_list_and_remove_from_the_command_line() {
    let (_dir, config) = temp_config();
    let gw = start_gateway(config).await;
    let server = format!("http://{}", gw.addr);
    let run = |args: Vec<&str>| {
        let server = server.clone();
        let args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        async move {
            let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
                .args(&args)
                .args(["--server", &server])
                .output()
                .await
                .expect("the toolgate binary runs");
            assert!(out.status.success(), "toolgate {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        }
    };
    let added =
        run(vec!["mcp", "add", "files", "--command", "/nonexistent/mcp", "--arg", "-v", "--env", "TOKEN=s3cret"]);
    let added: serde_json::Value = serde_json::from_str(&added.await).unwrap();
    assert_eq!(added["server"]["args"], json!(["-v"]));
    assert_eq!(added["server"]["env"], json!({"TOKEN": "<redacted>"}), "secrets are not echoed back");
    assert_eq!(added["connected"], json!(false));
    assert!(added["last_error"].as_str().unwrap().contains("cannot start"), "{added}");
    let listed: serde_json::Value = serde_json::from_str(&run(vec!["mcp", "list"]).await).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(run(vec!["mcp", "remove", "files"]).await, "removed files\n");
    let listed: serde_json::Value = serde_json::from_str(&run(vec!["mcp", "list"]).await).unwrap();
    assert_eq!(listed, json!([]));
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn an_http_server_in_the_config_connects_at_start() {
    let server = support::mcp::HttpServer::start().await;
    let (_dir, mut config) = support::mcp::config();
    let url = Some(server.url.clone());
    config.mcp_servers = vec![McpServerSpec { name: "web".into(), url, ..Default::default() }];
    let mut gw = start_gateway(config).await;
    let ready = |m: &pb::ToolMessage| status_of(m) == pb::ToolStatus::Success;
    let echo = call_until(&mut gw, "web__echo", r#"{"text": "up"}"#, ready).await;
    assert_eq!(echo.content, "up");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn a_server_moved_to_another_tenant_takes_its_tools_along() {
    let (_dir, config) = support::mcp::config();
    let mut gw = start_gateway(config).await;
    let mut admin = admin(&gw).await;
    assert!(add(&mut admin, stdio_server("s")).await.tools.contains(&"s__echo".to_owned()));
    add(&mut admin, pb::McpServer { tenant: "acme".into(), ..stdio_server("s") }).await;
    let shared = gw.call("s__echo", r#"{"text": "x"}"#).await;
    assert_eq!(kind_of(&shared), pb::ErrorKind::ToolNotFound, "no shared copy is left behind: {shared:?}");
    let acme = pb::CallContext { tenant: "acme".into(), ..Default::default() };
    let echo = gw.call_as("s__echo", r#"{"text": "x"}"#, acme).await;
    assert_eq!(echo.content, "x", "{echo:?}");
    // A tool of another tenant registered by hand against the server cannot reach it.
    let spec = json!({"name": "sneaky", "tenant": "globex", "input_schema": {"type": "object"},
                      "backend": {"mcp": {"server": "s", "tool": "pid"}}});
    gw.register(spec).await.unwrap();
    let globex = pb::CallContext { tenant: "globex".into(), ..Default::default() };
    let sneaky = gw.call_as("sneaky", "{}", globex).await;
    assert_eq!(kind_of(&sneaky), pb::ErrorKind::Unavailable, "{sneaky:?}");
    assert!(sneaky.error.unwrap().message.contains("is not defined"));
    gw.stop().await;
}

/// `toolgate serve` with a stdio server in its config file: the server's stderr lines are in the gateway's log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn a_stdio_servers_stderr_goes_to_the_gateways_log() {
    let dir = tempfile::tempdir().unwrap();
    let addr = support::free_addr();
    let (command, args) = support::mcp::stdio_command();
    let connect_timeout_ms = support::mcp::CONNECT_TIMEOUT.as_millis();
    let config = format!(
        "[limits]\nconnect_timeout_ms = {connect_timeout_ms}\n\n[[mcp_servers]]\nname = \"s\"\ncommand = {command:?}\nargs = {args:?}\n"
    );
    let config_path = dir.path().join("toolgate.toml");
    std::fs::write(&config_path, config).unwrap();
    let data = dir.path().join("data");
    let (listen, data, config) = (addr.to_string(), data.to_str().unwrap(), config_path.to_str().unwrap());
    let server = support::serve_process(&["--listen", &listen, "--data-dir", data, "--config", config]);
    let mut gw = toolgate::pb::v1::tool_gateway_client::ToolGatewayClient::new(support::connect(addr).await);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let call = pb::ToolCall { id: "c".into(), name: "s__pid".into(), arguments: "{}".into() };
        let request = pb::ExecuteRequest { call: Some(call), ..Default::default() };
        let message = gw.execute(request).await.unwrap().into_inner().message.unwrap();
        if status_of(&message) == pb::ToolStatus::Success {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "s__pid never answered: {message:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The gateway copies the server's stderr from a task of its own, so the line may come after the answer:
    // read the log until it does, rather than kill the gateway and look.
    let mut server = server;
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let started = |l: &str| l.contains("toolgate-test-mcp: started");
    let line = support::line_of(&mut lines, Duration::from_secs(20), started).await;
    assert!(line.contains("server=s") && line.contains("INFO"), "{line}");
    server.start_kill().unwrap();
}
