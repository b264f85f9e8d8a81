//! The `toolgate` binary: client commands against a real gateway, and the offline `repair` on the BFCL corpus.

use crate::support;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::{start_gateway, temp_config};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

const BIN: &str = env!("CARGO_BIN_EXE_toolgate");

/// Runs the binary; returns stdout, failing the test with stderr if it exits non-zero.
async fn toolgate(args: &[&str]) -> String {
    let out = tokio::process::Command::new(BIN).args(args).output().await.expect("the toolgate binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "toolgate {args:?} failed: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// Runs the binary; returns stdout, failing the test unless it exits with `code`.
async fn toolgate_exits(code: i32, args: &[&str]) -> String {
    let out = tokio::process::Command::new(BIN).args(args).output().await.expect("the toolgate binary runs");
    assert_eq!(out.status.code(), Some(code), "toolgate {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn register_call_list_and_delete_from_the_command_line() {
    let (dir, config) = temp_config();
    let gw = start_gateway(config).await;
    let server = format!("http://{}", gw.addr);
    let target = start_runtime(Runtime::default()).await;
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let spec = dir.path().join("weather.json");
    let spec_json = json!({"name": "get_weather", "description": "d", "input_schema": schema, "backend": {"grpc": {"target": target}}});
    std::fs::write(&spec, spec_json.to_string()).unwrap();
    let openai = dir.path().join("openai.json");
    let openai_json = json!({"type": "function", "function": {"name": "get_time", "description": "t", "parameters": {"type": "object"}}});
    std::fs::write(&openai, openai_json.to_string()).unwrap();
    let toml_spec = dir.path().join("mcp.toml");
    std::fs::write(&toml_spec, "name = \"search.docs\"\ndescription = \"s\"\ninputSchema = { type = \"object\" }\n")
        .unwrap();

    let out = toolgate(&["tools", "register", spec.to_str().unwrap(), "--server", &server]).await;
    assert_eq!(out, "registered get_weather (version 1)\n");
    let files = [openai.to_str().unwrap(), toml_spec.to_str().unwrap()];
    let out = toolgate(&["tools", "register", files[0], files[1], "--grpc", &target, "--server", &server]).await;
    assert_eq!(out, "registered get_time (version 1)\nregistered search.docs (version 1)\n");

    let out = toolgate(&["call", "get_weather", r#"{"city": "Oslo"}"#, "--user", "u1", "--server", &server]).await;
    let message: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((&message["status"], &message["content"]), (&json!("SUCCESS"), &json!(r#"{"city": "Oslo"}"#)));
    let out = toolgate(&["call", "get_weather", r#"{"city": "Bergen"}"#, "--server", &server]).await;
    let message: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(message["status"], "SUCCESS", "a second call with other arguments is a call of its own: {message}");
    assert_eq!(message["effective_arguments"], json!({"city": "Bergen"}));
    let failed = tokio::process::Command::new(BIN).args(["call", "get_weathr", "{}", "--server", &server]).output();
    let failed = failed.await.unwrap();
    assert_eq!(failed.status.code(), Some(3), "a ToolMessage that is an error exits 3");
    let message: Value = serde_json::from_slice(&failed.stdout).unwrap();
    assert_eq!(message["error"]["kind"], "TOOL_NOT_FOUND");
    assert_eq!(message["error"]["suggestions"], json!(["get_weather"]));
    assert!(message.get("effective_arguments").is_none(), "nothing ran, so nothing is said to have: {message}");

    let out = toolgate(&["definitions", "--format", "openai", "--server", &server]).await;
    let defs: Value = serde_json::from_str(&out).unwrap();
    let names: Vec<_> = defs.as_array().unwrap().iter().map(|d| d["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["get_time", "get_weather", "search_docs"]);

    let listed: Value = serde_json::from_str(&toolgate(&["tools", "list", "--server", &server]).await).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 3);
    let got: Value =
        serde_json::from_str(&toolgate(&["tools", "get", "get_weather", "--server", &server]).await).unwrap();
    assert_eq!((&got["input_schema"], &got["version"]), (&schema, &json!(1)));
    assert_eq!(toolgate(&["tools", "delete", "get_time", "--server", &server]).await, "deleted get_time\n");

    let out = tokio::process::Command::new(BIN)
        .args(["tools", "get", "get_time", "--server", &server])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("NotFound"), "{}", String::from_utf8_lossy(&out.stderr));

    // `toolgate tools list | head`: a reader gone before the output is written ends the program quietly.
    let mut closed = tokio::process::Command::new(BIN)
        .args(["tools", "list", "--server", &server])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(closed.stdout.take());
    let closed = closed.wait_with_output().await.unwrap();
    assert_eq!(closed.status.code(), Some(141), "as a process a closed pipe stops");
    assert_eq!(String::from_utf8_lossy(&closed.stderr), "", "and says nothing");

    let nobody = format!("http://{}", crate::support::backends::closed_port());
    let refused =
        tokio::process::Command::new(BIN).args(["tools", "list", "--server", &nobody]).output().await.unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!((refused.status.code(), said.matches("refused").count()), (Some(1), 1), "its cause, once: {said}");
}

/// `toolgate review`: a deferred call is listed by the binary, approved by it, and then runs.
#[tokio::test]
async fn review_list_and_approve_from_the_command_line() {
    use toolgate::pb::v1::{self as pb, ReviewMode, ToolStatus};
    let (_dir, config) = temp_config();
    let mut gw = start_gateway(config).await;
    let server = format!("http://{}", gw.addr);
    let runtime = Runtime::default();
    let target = start_runtime(runtime.clone()).await;
    let schema = json!({"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]});
    gw.register(json!({"name": "deploy", "tenant": "acme", "input_schema": schema, "review": {"required": true},
        "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();
    let execute = |mut client: pb::tool_gateway_client::ToolGatewayClient<_>| async move {
        let call =
            pb::ToolCall { id: "c-cli".into(), name: "deploy".into(), arguments: r#"{"service": "api"}"#.into() };
        let context = pb::CallContext { tenant: "acme".into(), user_id: "alice".into(), ..Default::default() };
        let request =
            pb::ExecuteRequest { call: Some(call), context: Some(context), review_mode: ReviewMode::Defer.into() };
        client.execute(request).await.unwrap().into_inner().message.unwrap()
    };
    assert_eq!(execute(gw.gateway.clone()).await.status, ToolStatus::PendingReview as i32);

    let args = ["review", "list", "--tenant=", "--server", &server];
    let default = tokio::process::Command::new(BIN).args(args).output().await.unwrap();
    assert_eq!(String::from_utf8_lossy(&default.stdout), "", "the default tenant has no calls");
    let told = String::from_utf8_lossy(&default.stderr);
    assert!(told.contains("1 more call(s) wait in other tenants"), "and says where they are: {told}");
    // Acme's, every tenant's, and by default every tenant's.
    for scope in [&["--tenant=acme"][..], &["--all-tenants"], &[]] {
        let out = toolgate(&[&["review", "list", "--server", &server][..], scope].concat()).await;
        let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 1, "{out}");
        let listed = &lines[0];
        assert_eq!(
            (&listed["call_id"], &listed["tenant"], &listed["user_id"], &listed["tool"], &listed["arguments"]),
            (&json!("c-cli"), &json!("acme"), &json!("alice"), &json!("deploy"), &json!({"service": "api"}))
        );
        assert!(listed["created_ms"].as_u64().unwrap() > 0);
    }
    let out =
        toolgate(&["review", "approve", "c-cli", "--tenant", "acme", "--reviewer", "ops-bot", "--server", &server])
            .await;
    let decided: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((&decided["call_id"], &decided["decision"]), (&json!("c-cli"), &json!("APPROVE")));
    assert_eq!(decided["decided_by"], json!("ops-bot"), "the record keeps who decided: {decided}");
    assert_eq!(toolgate(&["review", "list", "--all-tenants", "--server", &server]).await, "");

    let again = tokio::process::Command::new(BIN)
        .args(["review", "reject", "c-cli", "too late", "--tenant", "acme", "--server", &server])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("\"c-cli\"") && stderr.contains("FailedPrecondition"), "{stderr}");

    let message = execute(gw.gateway.clone()).await;
    assert_eq!(message.status, ToolStatus::Success as i32, "{message:?}");
    assert_eq!(serde_json::from_str::<Value>(&message.content).unwrap(), json!({"service": "api"}));
    assert_eq!(runtime.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// `toolgate repair` on the 3,200 real calls: every valid call passes through unchanged, and every name
/// variant that differs only by case or separators resolves (figures as in `score_repair.py`).
#[tokio::test]
async fn repair_passes_every_valid_corpus_call_through_unchanged() {
    let corpus = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/bfcl/dev.jsonl")).unwrap();
    let mut child =
        tokio::process::Command::new(BIN).arg("repair").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = corpus.clone();
    let writer = tokio::spawn(async move { stdin.write_all(input.as_bytes()).await });
    let out = child.wait_with_output().await.unwrap();
    writer.await.unwrap().unwrap();
    assert!(out.status.success());
    let answers: HashMap<String, Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["id"].as_str().unwrap().to_owned(), v))
        .collect();

    let mut counts: HashMap<(String, String), usize> = HashMap::new();
    let (mut valid, mut passed) = (0, 0);
    for line in corpus.lines() {
        let rec: Value = serde_json::from_str(line).unwrap();
        let answer = &answers[rec["id"].as_str().unwrap()];
        let kind = rec["kind"].as_str().unwrap().to_owned();
        *counts.entry((kind.clone(), answer["status"].as_str().unwrap().to_owned())).or_default() += 1;
        if kind == "valid" {
            valid += 1;
            let before: Value = serde_json::from_str(rec["call"]["arguments"].as_str().unwrap()).unwrap();
            let same =
                answer["status"] == "valid" && answer["tool"] == rec["expect"]["tool"] && answer["arguments"] == before;
            passed += usize::from(same);
        }
    }
    assert_eq!(answers.len(), 3200, "one answer per input line");
    assert_eq!((valid, passed), (2126, 2126), "pass_through must be 100%");
    let count = |kind: &str, status: &str| counts.get(&(kind.to_owned(), status.to_owned())).copied().unwrap_or(0);
    assert_eq!(count("unknown_name", "unknown_tool"), 69, "no unknown name is guessed");
    // Whether a repair is right is score_repair.py's to judge (.ci/run, with its floors); here, what the data says
    // of every answer. A call that breaks its schema is never passed as valid, and its exact name always resolves.
    let invalid = corpus.lines().filter(|l| l.contains(r#""kind": "invalid""#)).count();
    assert_eq!(count("invalid", "repaired") + count("invalid", "invalid"), invalid, "{counts:?}");
    // Every name variant resolves: none is answered as an unknown tool.
    assert_eq!(count("name_variant", "unknown_tool"), 0, "{counts:?}");
    // A split call answers with its calls instead of arguments: two or more objects, and the split's record.
    let splits: Vec<&Value> = answers.values().filter(|a| a.get("calls").is_some()).collect();
    assert!(!splits.is_empty(), "the corpus has packed parallel calls");
    for answer in splits {
        let calls = answer["calls"].as_array().unwrap();
        assert!(calls.len() >= 2 && calls.iter().all(|c| c["arguments"].is_object()), "{answer}");
        assert!(answer.get("arguments").is_none(), "{answer}");
        let rules: Vec<&str> =
            answer["repairs"].as_array().unwrap().iter().map(|r| r["rule"].as_str().unwrap()).collect();
        assert_eq!(rules.last(), Some(&"parallel_split"), "{answer}");
    }
}

#[tokio::test]
async fn serve_logs_one_info_line_per_failed_call_with_its_trace_id_and_none_for_a_success() {
    let dir = tempfile::tempdir().unwrap();
    let addr = support::free_addr();
    let server = support::serve_process(&["--listen", &addr.to_string(), "--data-dir", dir.path().to_str().unwrap()]);
    let channel = support::connect(addr).await;
    let mut registry = toolgate::pb::v1::tool_registry_client::ToolRegistryClient::new(channel.clone());
    let target = start_runtime(Runtime::default()).await;
    let spec = json!({"name": "echo", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}}});
    let spec = toolgate::pb::v1::ToolSpec::from(&serde_json::from_value::<toolgate::registry::ToolSpec>(spec).unwrap());
    registry.register_tool(toolgate::pb::v1::RegisterToolRequest { spec: Some(spec) }).await.unwrap();

    let mut gateway = toolgate::pb::v1::tool_gateway_client::ToolGatewayClient::new(channel);
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    for (id, name) in [("call-ok", "echo"), ("call-bad", "no_such_tool")] {
        let call = toolgate::pb::v1::ToolCall { id: id.into(), name: name.into(), arguments: "{}".into() };
        let mut request =
            tonic::Request::new(toolgate::pb::v1::ExecuteRequest { call: Some(call), ..Default::default() });
        request.metadata_mut().insert("traceparent", format!("00-{trace}-00f067aa0ba902b7-01").parse().unwrap());
        gateway.execute(request).await.unwrap();
    }
    let stderr = support::log_of(server).await;

    let failed: Vec<&str> = stderr.lines().filter(|l| l.contains("call failed")).collect();
    assert_eq!(failed.len(), 1, "{stderr}");
    assert!(failed[0].contains(" INFO ") && failed[0].contains("TOOL_NOT_FOUND"), "{}", failed[0]);
    assert!(failed[0].contains(&format!("trace_id={trace}")), "the agent's trace id: {}", failed[0]);
    assert!(!stderr.contains("call-ok"), "nothing above DEBUG for a success: {stderr}");
}

/// `toolgate tools register` takes a spec's policy rules (`examples/tools/transfer.json`), `tools get` shows them,
/// a call they deny answers POLICY_DENIED through `toolgate call`, and a bad rule is refused with its position.
#[tokio::test]
async fn policy_rules_in_a_spec_file_from_the_command_line() {
    let (dir, config) = temp_config();
    let gw = start_gateway(config).await;
    let server = format!("http://{}", gw.addr);
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tools/transfer.json");
    assert_eq!(
        toolgate(&["tools", "register", example, "--server", &server]).await,
        "registered transfer (version 1)\n"
    );
    let got: Value = serde_json::from_str(&toolgate(&["tools", "get", "transfer", "--server", &server]).await).unwrap();
    let names: Vec<&str> = got["policy"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["large-transfer", "sanctioned-country", "free-plan-limit"]);
    let call = r#"{"amount": 50, "currency": "EUR", "to": "KP01 2345"}"#;
    let out = toolgate_exits(3, &["call", "transfer", call, "--user", "u1", "--server", &server]).await;
    let message: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(message["error"]["kind"], "POLICY_DENIED", "{message}");
    assert!(message["content"].as_str().unwrap().starts_with("Transfers to this country are not allowed."));

    let bad = dir.path().join("bad.json");
    let spec = json!({"name": "t", "input_schema": {"type": "object"}, "backend": {"worker": {}},
        "policy": [{"name": "r", "when": "args.amount >> 3", "action": "deny"}]});
    std::fs::write(&bad, spec.to_string()).unwrap();
    let out = tokio::process::Command::new(BIN)
        .args(["tools", "register", bad.to_str().unwrap(), "--server", &server])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("rule \"r\"") && stderr.contains("line 1, column"), "{stderr}");
}

/// The example transfer tool runs as written against the example tool server (`deploy/example-tool/server.py`),
/// which listens on loopback unless told otherwise.
#[tokio::test]
async fn the_example_transfer_tool_runs_against_the_example_server() {
    let (dir, config) = temp_config();
    let gw = start_gateway(config).await;
    let server = format!("http://{}", gw.addr);
    let port = support::free_addr().port();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/example-tool/server.py");
    let mut tool = tokio::process::Command::new("python3")
        .arg(script)
        .env("PORT", port.to_string())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 runs the example tool server");
    let mut banner = String::new();
    let mut lines = tokio::io::BufReader::new(tool.stdout.take().unwrap());
    tokio::io::AsyncBufReadExt::read_line(&mut lines, &mut banner).await.unwrap();
    assert_eq!(banner.trim(), format!("example tool server on 127.0.0.1:{port}"), "loopback by default");

    let example =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tools/transfer.json")).unwrap();
    let moved = example.replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"));
    assert_ne!(moved, example, "the example points at the example server's default address");
    let spec = dir.path().join("transfer.json");
    std::fs::write(&spec, moved).unwrap();
    toolgate(&["tools", "register", spec.to_str().unwrap(), "--server", &server]).await;
    let call = r#"{"amount": 50, "currency": "EUR", "to": "NO93 8601 1117 947"}"#;
    let out = toolgate(&["call", "transfer", call, "--user", "u1", "--server", &server]).await;
    let message: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(message["status"], "SUCCESS", "{message}");
    assert_eq!(message["structured"]["status"], "sent");
    assert_eq!(message["structured"]["user_id"], "u1", "injected from the caller");
}
