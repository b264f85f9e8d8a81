//! The MCP front door against the official Python MCP SDK's client (the newest, 2.x: `tests/mcp/front/`), with one
//! tool on a gRPC ToolRuntime and the tools of an MCP server imported as a backend (`tests/mcp/server.py`, 1.x)
//! served back out through the front door. Needs both venvs; `.ci/run` makes them:
//! `python3 -m venv target/mcp-front-venv && target/mcp-front-venv/bin/pip install -r tests/mcp/front/requirements.txt`
//! (or point `TOOLGATE_MCP_FRONT_PYTHON` at a python with the 2.x SDK).

use crate::support;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::mcp::{add, admin, repo_root, stdio_server, with_injection};
use crate::support::{start_gateway, temp_config};
use serde_json::{Value, json};
use std::path::PathBuf;
use toolgate::config::{McpFrontSettings, Principal};

const TOKEN: &str = "alice-token";

pub(crate) fn front_python() -> PathBuf {
    let python = std::env::var_os("TOOLGATE_MCP_FRONT_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/mcp-front-venv/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: python3 -m venv target/mcp-front-venv && target/mcp-front-venv/bin/pip install -r \
         tests/mcp/front/requirements.txt (or set TOOLGATE_MCP_FRONT_PYTHON)",
        python.display()
    );
    python
}

/// Runs the Python host's scenario and returns its report.
async fn host(url: &str, calls: Value) -> Value {
    let script = repo_root().join("tests/mcp/front/client.py");
    let mut run = tokio::process::Command::new(front_python());
    run.arg(script).arg(url).arg(TOKEN).arg(calls.to_string()).kill_on_drop(true);
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), run.output())
        .await
        .expect("the Python host finishes within a minute")
        .expect("the Python host runs");
    assert!(out.status.success(), "the Python host failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("the host's report is JSON")
}

#[tokio::test]
#[ignore = "needs the Python MCP SDK venvs (target/mcp-venv, target/mcp-front-venv); .ci/run makes and runs them"]
async fn the_python_sdk_lists_calls_and_gets_repairs_and_errors_through_the_front_door() {
    let (_dir, mut config) = temp_config();
    let addr = support::free_addr();
    let alice = Principal { tenant: "acme".into(), user_id: "alice".into(), ..Principal::default() };
    config.mcp_front = McpFrontSettings {
        listen: Some(addr),
        allowed_hosts: vec!["127.0.0.1".into()],
        allowed_origins: Vec::new(),
        tokens: vec![(TOKEN.into(), alice)],
        jwt: None,
        ..McpFrontSettings::default()
    };
    config.connect_timeout = support::mcp::CONNECT_TIMEOUT;
    let mut gw = start_gateway(config).await;
    let target = start_runtime(Runtime::default()).await;
    gw.register(json!({
        "name": "transfer", "tenant": "acme",
        "input_schema": {"type": "object", "additionalProperties": false, "required": ["amount", "user_id"],
            "properties": {"amount": {"type": "integer"}, "user_id": {"type": "string"}}},
        "inject": [{"param": "user_id", "from": "user_id"}],
        "backend": {"grpc": {"target": target}},
    }))
    .await
    .unwrap();
    let mut server = with_injection(stdio_server("py"));
    server.tenant = "acme".into();
    let imported = add(&mut admin(&gw).await, server).await;
    assert!(imported.connected && imported.tools.contains(&"py__add".to_owned()), "{imported:?}");

    let calls = json!([
        {"name": "transfer", "arguments": {"amount": "5", "user_id": "mallory"}},
        {"name": "transfer", "arguments": {"amount": "lots"}},
        {"name": "py__add", "arguments": {"a": "2", "b": 3}},
        {"name": "py__whoami", "arguments": {"note": "n", "user_id": "mallory"}},
    ]);
    let report = host(&format!("http://{addr}/mcp"), calls).await;

    let tools = report["tools"].as_array().unwrap();
    let transfer = tools.iter().find(|t| t["name"] == "transfer").expect("transfer is listed");
    assert_eq!(transfer["inputSchema"]["properties"], json!({"amount": {"type": "integer"}}), "no user_id");
    assert!(tools.iter().any(|t| t["name"] == "py__add"), "the imported MCP tool is served back out: {tools:?}");

    let [repaired, invalid, sum, me] = &report["results"].as_array().unwrap()[..] else { panic!("four results") };
    assert_eq!(repaired["is_error"], false, "{repaired}");
    assert_eq!(repaired["structured"], json!({"amount": 5, "user_id": "alice"}), "the token's user, repaired");
    let rules: Vec<_> = repaired["meta"]["dev.toolgate/call"]["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule"].clone())
        .collect();
    assert_eq!(rules, [json!("injected_override_removed"), json!("string_to_integer")]);
    assert_eq!(invalid["is_error"], true);
    assert!(invalid["text"].as_str().unwrap().contains("amount"), "{invalid}");
    assert_eq!(invalid["meta"]["dev.toolgate/call"]["error"]["kind"], "INVALID_ARGUMENTS");
    assert_eq!(sum["structured"], json!({"sum": 5}), "repaired, then run on the MCP backend: {sum}");
    assert_eq!(me["text"], "alice:n", "the principal's user reaches the MCP backend: {me}");
}
