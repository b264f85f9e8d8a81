//! The console's tools page over real HTTP against a real gateway: only the admin token opens it; each tool shows
//! its model-facing schema beside the full one, its injected parameters, its settings with the gateway's defaults,
//! and its backend's health as this gateway knows it (a gRPC tool server's connection, an MCP server's session,
//! the connected workers), with no secret of a backend's definition on the page.

use crate::support;
use crate::support::backends::closed_port;
use crate::support::console::{ADMIN_TOKEN, Console};
use crate::support::review::context;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use toolgate::pb::v1::{self as pb, ToolStatus, gateway_message, tool_worker_client::ToolWorkerClient};

/// The row of `tool` in the tools page's list.
fn row<'a>(page: &'a str, tool: &str) -> &'a str {
    let start = page.find(&format!("data-tool=\"{tool}\"")).unwrap_or_else(|| panic!("{tool} is listed: {page}"));
    page[start..].split("</tr>").next().unwrap()
}

/// A `<pre>`'s text by its id.
fn pre<'a>(page: &'a str, id: &str) -> &'a str {
    page.split(&format!("id=\"{id}\">")).nth(1).unwrap().split("</pre>").next().unwrap()
}

#[tokio::test]
async fn only_the_admin_token_opens_the_tools_page() {
    let c = Console::start_with_admin().await;
    let reviewer = c.login("ana").await;
    let reviews = c.get_with(&reviewer.cookie, "/reviews").await;
    assert!(!reviews.contains("href=\"/tools\""), "a reviewer's menu has no tools page");
    for path in ["/tools", "/tool?tenant=acme&name=deploy"] {
        let refused = c.http.get(c.url(path)).header("cookie", &reviewer.cookie).send().await.unwrap();
        assert_eq!(refused.status(), 403, "{path}");
        assert!(refused.text().await.unwrap().contains("admin token"), "the page says what opens it");
        let anonymous = c.http.get(c.url(path)).send().await.unwrap();
        assert_eq!(anonymous.status(), 303, "{path} without a session goes to the login");
    }
    let admin = c.login_with("olga", ADMIN_TOKEN).await;
    let tools = c.get_with(&admin.cookie, "/tools").await;
    assert!(tools.contains("href=\"/tools\""), "an admin's menu has it");
    assert!(row(&tools, "deploy").contains("acme"), "{tools}");
}

#[tokio::test]
async fn a_tool_shows_both_schemas_its_injections_and_its_settings_with_the_gateways_defaults() {
    let c = Console::start_with_admin().await;
    let admin = c.login_with("olga", ADMIN_TOKEN).await;
    let page = c.get_with(&admin.cookie, "/tool?tenant=acme&name=deploy").await;
    let (model, full) = (pre(&page, "model-schema"), pre(&page, "full-schema"));
    assert!(model.contains("replicas") && !model.contains("user_id"), "the model never sees user_id: {model}");
    assert!(full.contains("replicas") && full.contains("user_id"), "{full}");
    assert!(page.contains("<code>user_id</code> <span class=\"note\">from context.user_id"), "{page}");
    for setting in [
        "<dt>Review required</dt><dd>yes</dd>",
        "<dt>Calls per session</dt><dd>40 (the gateway&#39;s default)</dd>",
        "<dt>Calls of all tools per session</dt><dd>200</dd>",
        "<dt>Timeout per attempt</dt><dd>30000 ms (the gateway&#39;s default)</dd>",
        "<dt>Rate limit</dt><dd>none</dd>",
    ] {
        assert!(page.contains(setting), "{setting}: {page}");
    }
    let missing = c.http.get(c.url("/tool?tenant=other&name=deploy")).header("cookie", &admin.cookie).send().await;
    assert_eq!(missing.unwrap().status(), 404);
}

#[tokio::test]
async fn a_grpc_tool_servers_health_follows_its_connection_and_secrets_stay_hidden() {
    let mut c = Console::start_with_admin().await;
    let object = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let dead = format!("http://{}", closed_port());
    c.register(
        json!({"name": "echo", "tenant": "acme", "input_schema": object, "backend": {"grpc": {"target": c.target}}}),
    )
    .await
    .unwrap();
    c.register(
        json!({"name": "gone", "tenant": "acme", "input_schema": object, "backend": {"grpc": {"target": dead}}}),
    )
    .await
    .unwrap();
    let http = json!({"url": "http://user:hunter2@127.0.0.1:9/hook?key=s3cret", "headers": {"authorization": "Bearer s3cret"}});
    c.register(json!({"name": "hook", "input_schema": object, "backend": {"http": http}})).await.unwrap();
    let admin = c.login_with("olga", ADMIN_TOKEN).await;
    let before = c.get_with(&admin.cookie, "/tools").await;
    assert!(row(&before, "echo").contains("data-health=\"unknown\""), "no call yet: {}", row(&before, "echo"));

    for tool in ["echo", "gone"] {
        let call = pb::ToolCall { id: format!("{tool}-1"), name: tool.into(), arguments: r#"{"n": 1}"#.into() };
        let request = pb::ExecuteRequest { call: Some(call), context: Some(context("acme")), review_mode: 0 };
        let answer = c.gw.gateway.clone().execute(request).await.unwrap().into_inner().message.unwrap();
        assert_eq!(answer.status() == ToolStatus::Success, tool == "echo", "{answer:?}");
    }
    let after = c.get_with(&admin.cookie, "/tools").await;
    assert!(row(&after, "echo").contains("data-health=\"up\""), "{}", row(&after, "echo"));
    let gone = row(&after, "gone");
    assert!(gone.contains("data-health=\"down\"") && gone.contains("the last connect failed"), "{gone}");
    let hook = c.get_with(&admin.cookie, "/tool?tenant=&name=hook").await;
    assert!(!hook.contains("hunter2") && !hook.contains("s3cret"), "no secret on the page: {hook}");
    assert!(hook.contains("headers: authorization"), "the header's name is shown: {hook}");
}

#[tokio::test]
async fn mcp_servers_and_workers_show_their_health() {
    let mut c = Console::start_with_admin().await;
    // An MCP server that cannot start, and a tool on it.
    let stdio = pb::McpStdio { command: "/nonexistent/mcp-server".into(), ..Default::default() };
    let server = pb::McpServer {
        name: "broken".into(),
        transport: Some(pb::mcp_server::Transport::Stdio(stdio)),
        ..Default::default()
    };
    let mut mcp = pb::mcp_registry_client::McpRegistryClient::new(support::connect(c.gw.addr).await);
    mcp.add_mcp_server(c.authed(pb::AddMcpServerRequest { server: Some(server) })).await.unwrap();
    let on_mcp = json!({"name": "lookup", "input_schema": {"type": "object"}, "backend": {"mcp": {"server": "broken", "tool": "t"}}});
    c.register(on_mcp).await.unwrap();
    // A worker serving `crunch`, connected while the page is read.
    let (to_gateway, outbound) = mpsc::channel(4);
    let crunch =
        pb::ToolSpec { name: "crunch".into(), input_schema: r#"{"type": "object"}"#.into(), ..Default::default() };
    let hello = pb::WorkerHello { worker_name: "cruncher".into(), tools: vec![crunch] };
    let kind = pb::worker_message::Kind::Hello(hello);
    to_gateway.send(pb::WorkerMessage { kind: Some(kind) }).await.unwrap();
    let mut worker = ToolWorkerClient::new(support::connect(c.gw.addr).await);
    let mut from_gateway = worker.connect(c.authed(ReceiverStream::new(outbound))).await.unwrap().into_inner();
    let welcome = from_gateway.message().await.unwrap().and_then(|m| m.kind);
    assert!(matches!(welcome, Some(gateway_message::Kind::Welcome(_))), "{welcome:?}");

    let admin = c.login_with("olga", ADMIN_TOKEN).await;
    let page = c.get_with(&admin.cookie, "/tools").await;
    let lookup = row(&page, "lookup");
    assert!(lookup.contains("data-health=\"down\"") && lookup.contains("disconnected"), "{lookup}");
    assert!(row(&page, "crunch").contains("data-health=\"up\"") && row(&page, "crunch").contains("1 worker connected"));
    let server = page.split("data-server=\"broken\"").nth(1).expect("the MCP server is listed").split("</tr>").next();
    assert!(server.unwrap().contains("cannot start"), "its last error: {server:?}");
    assert!(page.contains("cruncher"), "the worker is listed by name");

    drop(to_gateway);
    while from_gateway.message().await.is_ok_and(|m| m.is_some()) {}
    let page = c.get_with(&admin.cookie, "/tools").await;
    let crunch = row(&page, "crunch");
    assert!(crunch.contains("data-health=\"down\"") && crunch.contains("no worker"), "{crunch}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK in target/mcp-venv, which .ci/run installs (see tests/it/support/mcp.rs)"]
async fn an_imported_mcp_tool_is_up_while_its_server_is_connected() {
    let c = Console::start_with_admin_and(|config| config.connect_timeout = support::mcp::CONNECT_TIMEOUT).await;
    let mut mcp = pb::mcp_registry_client::McpRegistryClient::new(support::connect(c.gw.addr).await);
    let request = c.authed(pb::AddMcpServerRequest { server: Some(support::mcp::stdio_server("py")) });
    let added = mcp.add_mcp_server(request).await.unwrap().into_inner().status.unwrap();
    assert!(added.connected && added.tools.contains(&"py__echo".to_owned()), "{added:?}");
    let admin = c.login_with("olga", ADMIN_TOKEN).await;
    let page = c.get_with(&admin.cookie, "/tools").await;
    let echo = row(&page, "py__echo");
    assert!(echo.contains("data-health=\"up\"") && echo.contains("MCP server &#34;py&#34; connected"), "{echo}");
    let server = page.split("data-server=\"py\"").nth(1).expect("the server is listed").split("</tr>").next().unwrap();
    assert!(server.contains("data-health=\"up\"") && server.contains("stdio"), "{server}");
    let page = c.get_with(&admin.cookie, "/tool?tenant=&name=py__echo").await;
    assert!(page.contains("MCP server &#34;py&#34;, tool &#34;echo&#34;"), "{page}");
}

#[tokio::test]
async fn a_tools_page_lists_the_policy_rules_its_calls_are_judged_by() {
    let mut c = Console::start_with_admin().await;
    let object = json!({"type": "object", "properties": {"amount": {"type": "number"}}});
    let rules = json!([{"name": "large", "when": "args.amount > 1000 && tool.name != '<b>x</b>'", "action": "review",
        "message": "Over 1,000 waits."}]);
    c.register(
        json!({"name": "pay", "input_schema": object, "policy": rules, "backend": {"grpc": {"target": c.target}}}),
    )
    .await
    .unwrap();
    let admin = c.login_with("olga", ADMIN_TOKEN).await;
    let page = c.get_with(&admin.cookie, "/tool?tenant=&name=pay").await;
    let row = page.split("data-rule=\"large\"").nth(1).expect("the rule is listed").split("</tr>").next().unwrap();
    assert!(row.contains("review") && row.contains("Over 1,000 waits."), "{row}");
    assert!(!row.contains("<b>x</b>") && row.contains("&#60;b&#62;x&#60;/b&#62;"), "shown as text: {row}");
    let deploy = c.get_with(&admin.cookie, "/tool?tenant=acme&name=deploy").await;
    assert!(deploy.contains("None: no rule judges its calls."), "{deploy}");
}
