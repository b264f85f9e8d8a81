//! `CallsFromText` over real gRPC: calls a model wrote in its text found, repaired, run once on a real ToolRuntime,
//! and never found where the text only mentions, shows or conditions them, or names a tool the caller cannot see.

use crate::support::backends::{Runtime, start_runtime};
use crate::support::otlp::Collector;
use crate::support::{Gateway, start_gateway, status_of, temp_config};
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::Duration;
use toolgate::pb::v1::{self as pb, ToolStatus};

const HERMES: &str = "I'll look both up.\n<tool_call>\n{\"name\": \"forecast\", \"arguments\": {\"city\": \"Oslo\", \
                      \"days\": \"3\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"forecast\", \"arguments\": \
                      {\"city\": \"Rome\", \"days\": 1}}\n</tool_call>";

async fn gateway(runtime: &Runtime) -> (tempfile::TempDir, Gateway) {
    let (dir, config) = temp_config();
    serve(runtime, dir, config).await
}

async fn serve(runtime: &Runtime, dir: tempfile::TempDir, config: toolgate::Config) -> (tempfile::TempDir, Gateway) {
    let mut gw = start_gateway(config).await;
    let target = start_runtime(runtime.clone()).await;
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                        "required": ["city"], "additionalProperties": false});
    gw.register(json!({"name": "forecast", "input_schema": schema, "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();
    gw.register(json!({"name": "payroll", "tenant": "other", "input_schema": {"type": "object"},
                       "backend": {"grpc": {"target": target}}}))
        .await
        .unwrap();
    (dir, gw)
}

fn request(text: &str, run: bool, prefix: &str) -> pb::CallsFromTextRequest {
    pb::CallsFromTextRequest {
        text: text.into(),
        context: Some(pb::CallContext { tenant: "acme".into(), ..Default::default() }),
        run,
        call_id_prefix: prefix.into(),
        ..Default::default()
    }
}

async fn ask(gw: &mut Gateway, request: pb::CallsFromTextRequest) -> pb::CallsFromTextResponse {
    gw.gateway.calls_from_text(request).await.unwrap().into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_written_as_text_run_once_repaired_and_say_where_they_came_from() {
    let runtime = Runtime::default();
    let (_dir, mut gw) = gateway(&runtime).await;
    let answer = ask(&mut gw, request(HERMES, true, "msg-7")).await;
    assert_eq!((answer.envelope.as_str(), answer.refusal.as_str()), ("hermes", ""));
    assert_eq!(answer.rest, "I'll look both up.");
    let ids: Vec<_> = answer.calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["msg-7-0", "msg-7-1"]);
    assert_eq!(answer.messages.len(), 2);
    for (message, want) in
        answer.messages.iter().zip([json!({"city": "Oslo", "days": 3}), json!({"city": "Rome", "days": 1})])
    {
        assert_eq!(status_of(message), ToolStatus::Success, "{message:?}");
        assert_eq!(serde_json::from_str::<Value>(&message.content).unwrap(), want, "the tool ran with the call read");
        assert_eq!(message.repairs[0].rule, "calls_from_text", "{:?}", message.repairs);
        assert_eq!(message.repairs[0].before, "\"hermes\"");
    }
    let rules: Vec<_> = answer.messages[0].repairs.iter().map(|r| r.rule.as_str()).collect();
    assert_eq!(rules, ["calls_from_text", "string_to_integer"], "\"3\" read as the schema's integer");
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 2);

    let again = ask(&mut gw, request(HERMES, true, "msg-7")).await;
    assert_eq!(again.messages.len(), 2);
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 2, "the same message sent again runs nothing twice");

    let found_only = ask(&mut gw, request(HERMES, false, "")).await;
    assert_eq!((found_only.calls.len(), found_only.messages.len()), (2, 0), "without run, nothing runs");
    assert_eq!(found_only.calls[0].arguments, r#"{"city":"Oslo","days":"3"}"#, "the arguments as the model wrote them");
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn texts_that_only_show_a_call_run_nothing_and_each_says_why_in_one_word() {
    let runtime = Runtime::default();
    let (_dir, mut gw) = gateway(&runtime).await;
    let call = "<tool_call>\n{\"name\": \"forecast\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
    let cases = [
        (format!("Never do this:\n{call}"), "negated"),
        (format!("For example:\n```\n{call}\n```"), "quoted"),
        (format!("<think>Maybe:\n{call}\nbut no.</think>I won't look it up."), "reasoning"),
        (format!("The web page I fetched says: {call} - I ignored it."), "other_speaker"),
        (format!("I found two:\n1. {call}\n2. {call}\nWhich one did you mean?"), "options"),
        ("Earlier I ran:\n[forecast(city='Oslo')]".to_owned(), "past"),
        ("Por ejemplo:\n[forecast(city='Oslo')]".to_owned(), "example"),
        ("The request body looks like this:\n{\"name\": \"forecast\", \"city\": \"Oslo\"}".to_owned(), "example"),
    ];
    for (i, (text, reason)) in cases.iter().enumerate() {
        let answer = ask(&mut gw, request(text, true, &format!("shown-{i}"))).await;
        assert!(answer.calls.is_empty() && answer.messages.is_empty(), "{text:?}: {answer:?}");
        assert_eq!(answer.refusal_reason, *reason, "{text:?}: {}", answer.refusal);
        assert!(!answer.refusal.is_empty());
    }
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 0, "nothing ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_format_asked_for_or_the_models_is_the_only_one_read() {
    let runtime = Runtime::default();
    let (_dir, mut gw) = gateway(&runtime).await;
    let pythonic = "[forecast(city='Oslo')]";
    let with = |format: &str, model: &str| {
        let mut asked = request(pythonic, false, "");
        (asked.format, asked.model) = (format.to_owned(), model.to_owned());
        asked
    };
    let read = ask(&mut gw, with("pythonic", "")).await;
    assert_eq!((read.calls.len(), read.format.as_str()), (1, "pythonic"));
    let hermes = ask(&mut gw, with("hermes", "")).await;
    assert_eq!(
        (hermes.calls.len(), hermes.format.as_str(), hermes.refusal_reason.as_str()),
        (0, "hermes", "other_format")
    );
    let qwen = ask(&mut gw, with("", "Qwen/Qwen3-8B")).await;
    assert_eq!((qwen.calls.len(), qwen.format.as_str()), (0, "hermes"), "Qwen's family writes Hermes tags");
    let auto = ask(&mut gw, with("auto", "Qwen/Qwen3-8B")).await;
    assert_eq!((auto.calls.len(), auto.format.as_str()), (1, "auto"), "auto named outright wins over the model");
    let unknown = ask(&mut gw, with("", "a-model-of-no-known-family")).await;
    assert_eq!((unknown.calls.len(), unknown.format.as_str()), (1, "auto"));
    let refused = gw.gateway.calls_from_text(with("claude", "")).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(refused.message().contains("hermes") && refused.message().contains("auto"), "{}", refused.message());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reading_is_traced_and_counted_by_outcome_and_reason() {
    let collector = Collector::start().await;
    let (dir, mut config) = temp_config();
    config.telemetry = collector.settings();
    let runtime = Runtime::default();
    let (_dir, mut gw) = serve(&runtime, dir, config).await;
    ask(&mut gw, request(&format!("Never do this:\n{HERMES}"), false, "")).await;
    ask(&mut gw, request(HERMES, false, "")).await;
    let wait = Duration::from_secs(10);
    let spans = collector.wait_for_spans(|s| s.iter().filter(|s| s.name == "read_text_calls").count() >= 2, wait).await;
    let reads: Vec<_> = spans.iter().filter(|s| s.name == "read_text_calls").collect();
    let refused = reads.iter().find(|s| s.str_attr("toolgate.text_calls.outcome") == Some("refused")).expect("refused");
    assert_eq!(refused.str_attr("toolgate.text_calls.refusal"), Some("negated"));
    assert_eq!(refused.str_attr("toolgate.text_calls.format"), Some("auto"));
    let found = reads.iter().find(|s| s.str_attr("toolgate.text_calls.outcome") == Some("calls")).expect("calls");
    assert_eq!(
        (found.int_attr("toolgate.text_calls.calls"), found.str_attr("toolgate.text_calls.envelope")),
        (Some(2), Some("hermes"))
    );
    assert_eq!(found.str_attr("toolgate.text_calls.refusal"), None);
    let counted = |labels: [(&'static str, &'static str); 3]| {
        move |points: &[crate::support::otlp::Point]| {
            points.iter().any(|p| p.value == 1.0 && labels.iter().all(|(k, v)| p.has(k, v)))
        }
    };
    let metric = "toolgate.text_calls.reads";
    collector
        .wait_for_points(metric, counted([("outcome", "refused"), ("reason", "negated"), ("format", "auto")]), wait)
        .await;
    collector.wait_for_points(metric, counted([("outcome", "calls"), ("reason", ""), ("format", "auto")]), wait).await;
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mentions_examples_conditions_and_unseen_tools_give_no_call() {
    let runtime = Runtime::default();
    let (_dir, mut gw) = gateway(&runtime).await;
    let mention = ask(&mut gw, request("I could use forecast(city='Oslo'), but which Oslo?", true, "m1")).await;
    assert!(mention.calls.is_empty() && mention.refusal_reason == "mention", "{mention:?}");
    let example = ask(&mut gw, request("For example:\n[forecast(city='Oslo')]", true, "m2")).await;
    assert!(example.calls.is_empty() && example.refusal.contains("example"), "{example:?}");
    let conditional = ask(&mut gw, request("If you confirm, I will run:\n[forecast(city='Oslo')]", true, "m3")).await;
    assert!(conditional.calls.is_empty() && conditional.refusal.contains("conditional"), "{conditional:?}");
    // A tool of another tenant is refused in the same words as one that does not exist.
    let unseen =
        ask(&mut gw, request("<tool_call>{\"name\": \"payroll\", \"arguments\": {}}</tool_call>", true, "m4")).await;
    let missing =
        ask(&mut gw, request("<tool_call>{\"name\": \"payrolls\", \"arguments\": {}}</tool_call>", true, "m5")).await;
    assert_eq!(unseen.refusal, "payroll is not a tool offered");
    assert_eq!(missing.refusal.replace("payrolls", "payroll"), unseen.refusal);
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 0, "no call ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_tools_the_model_was_offered_count_and_run_needs_call_ids() {
    let runtime = Runtime::default();
    let (_dir, mut gw) = gateway(&runtime).await;
    let mut offered_other = request(HERMES, false, "");
    offered_other.tools = vec!["weather".into()];
    let answer = ask(&mut gw, offered_other).await;
    assert!(answer.calls.is_empty() && answer.refusal == "forecast is not a tool offered", "{answer:?}");
    let refused = gw.gateway.calls_from_text(request(HERMES, true, " ")).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(refused.message().contains("call_id_prefix"), "{}", refused.message());
    assert_eq!(runtime.calls.load(Ordering::SeqCst), 0);
}
