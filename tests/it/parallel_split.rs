//! A packed parallel call over real gRPC: split into three calls of a real HTTP tool, answered as one
//! `ToolMessage` with three parts, traced as one span with a child per part, and counted by the rate limit as three.

use crate::support::backends::start_http;
use crate::support::otlp::{Collector, count};
use crate::support::{Gateway, start_gateway_with_clock, status_of, temp_config};
use serde_json::{Value, json};
use std::time::Duration;
use toolgate::pb::v1::{self as pb, ErrorKind as K, ToolStatus};
use toolgate::policy::Clock;

const PACKED: &str =
    r#"{"city": ["Chicago", "Sacramento", "Portland"], "state": ["IL", "CA", "OR"], "purchase_amount": 30.45}"#;

fn sales_tax(name: &str, http: &str, limits: Value) -> Value {
    json!({"name": name, "input_schema": {"type": "object", "properties": {
            "city": {"type": "string"}, "state": {"type": "string"}, "purchase_amount": {"type": "number"}},
            "required": ["city", "state"]},
        "backend": {"http": {"url": format!("{http}/echo")}}, "limits": limits})
}

async fn gateway(collector: &Collector, clock: Clock) -> (tempfile::TempDir, Gateway) {
    let (dir, mut config) = temp_config();
    config.telemetry = collector.settings();
    let mut gw = start_gateway_with_clock(config, clock).await;
    let http = start_http().await;
    gw.register(sales_tax("sales_tax", &http, json!({"idempotent": true}))).await.unwrap();
    gw.register(sales_tax("limited_tax", &http, json!({"idempotent": true, "rate": "2/s"}))).await.unwrap();
    gw.register(sales_tax("buy", &http, json!({}))).await.unwrap();
    (dir, gw)
}

async fn execute(gw: &mut Gateway, id: &str, name: &str) -> pb::ToolMessage {
    let call = pb::ToolCall { id: id.into(), name: name.into(), arguments: PACKED.into() };
    let request = pb::ExecuteRequest { call: Some(call), ..Default::default() };
    gw.gateway.execute(request).await.unwrap().into_inner().message.unwrap()
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packed_call_runs_as_three_calls_answered_in_one_message() {
    let collector = Collector::start().await;
    let (_dir, mut gw) = gateway(&collector, Clock::real()).await;
    let message = execute(&mut gw, "call-1", "sales_tax").await;
    assert_eq!(status_of(&message), ToolStatus::Success, "{message:?}");
    assert_eq!(message.tool_call_id, "call-1");
    let expected = [("Chicago", "IL"), ("Sacramento", "CA"), ("Portland", "OR")]
        .map(|(city, state)| json!({"city": city, "state": state, "purchase_amount": 30.45}));
    assert_eq!(message.parts.len(), 3, "{message:?}");
    for (part, want) in message.parts.iter().zip(&expected) {
        assert_eq!(part.status, ToolStatus::Success as i32);
        assert_eq!(json_of(&part.content), *want, "the echo tool ran with this part's arguments");
        assert_eq!(json_of(&part.effective_arguments), *want);
    }
    assert_eq!(json_of(&message.effective_arguments), Value::Array(expected.to_vec()));
    let split: Vec<_> = message.repairs.iter().filter(|r| r.rule == "parallel_split").collect();
    assert_eq!(split.len(), 1, "one repair record: {:?}", message.repairs);
    assert_eq!(
        (json_of(&split[0].before), json_of(&split[0].after)),
        (json_of(PACKED), Value::Array(expected.to_vec()))
    );
    assert!(message.content.starts_with("sales_tax was called 3 times"), "{}", message.content);
    for (i, city) in ["Chicago", "Sacramento", "Portland"].iter().enumerate() {
        let header = format!("--- call {} of 3 (", i + 1);
        let at = message.content.find(&header).unwrap_or_else(|| panic!("{header} in {}", message.content));
        assert!(message.content[at..].contains(city), "{}", message.content);
    }

    let spans = collector
        .wait_for_spans(
            // The call's span ends after its parts' and may come in a later export: wait for it too.
            |s| count(s, "backend sales_tax") >= 3 && count(s, "execute_tool sales_tax") == 1,
            Duration::from_secs(10),
        )
        .await;
    let call = spans.iter().find(|s| s.name == "execute_tool sales_tax").expect("the call's span");
    let parts: Vec<_> = spans.iter().filter(|s| s.parent_span_id == call.span_id).collect();
    assert_eq!(parts.len(), 3, "one child per part: {:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());
    let mut indexes: Vec<_> = parts.iter().map(|p| p.int_attr("toolgate.part.index").unwrap()).collect();
    indexes.sort();
    assert_eq!(indexes, [0, 1, 2]);
    for part in parts {
        assert_eq!(part.name, "execute_tool_part sales_tax");
        let backends = spans.iter().filter(|s| s.parent_span_id == part.span_id && s.name == "backend sales_tax");
        assert_eq!(backends.count(), 1, "each part's backend attempt is under its own part");
    }
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_limit_counts_each_part_and_refuses_the_third() {
    let collector = Collector::start().await;
    let clock = Clock::fake();
    let (_dir, mut gw) = gateway(&collector, clock.clone()).await;
    let message = execute(&mut gw, "call-2", "limited_tax").await;
    assert_eq!(status_of(&message), ToolStatus::Error, "{message:?}");
    let statuses: Vec<i32> = message.parts.iter().map(|p| p.status).collect();
    let (ok, failed) = (ToolStatus::Success as i32, ToolStatus::Error as i32);
    assert_eq!(statuses, [ok, ok, failed], "2/s admits two parts at once");
    let third = message.parts[2].error.as_ref().unwrap();
    assert_eq!((third.kind, third.retry_after_ms), (K::RateLimited as i32, 500));
    let error = message.error.unwrap();
    assert_eq!((error.kind, error.retry_after_ms, error.retryable), (K::RateLimited as i32, 500, true));
    assert!(error.message.starts_with("call 3 of 3: "), "{}", error.message);
    assert!(message.content.contains("Call 3 of 3 failed."), "{}", message.content);
    assert!(message.content.contains("--- call 3 of 3 ({\"city\":\"Portland\""), "{}", message.content);
    assert!(message.content.contains("rate limited"), "{}", message.content);

    // The same call sent again gets the two parts that ran from the call-id record, and the third runs once its
    // slot is free.
    clock.advance(Duration::from_millis(500));
    let again = execute(&mut gw, "call-2", "limited_tax").await;
    assert_eq!(status_of(&again), ToolStatus::Success, "{again:?}");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_not_safe_to_repeat_is_told_to_get_one_call_per_city() {
    let collector = Collector::start().await;
    let (_dir, mut gw) = gateway(&collector, Clock::real()).await;
    let message = execute(&mut gw, "call-3", "buy").await;
    let error = message.error.clone().unwrap();
    assert_eq!(error.kind, K::InvalidArguments as i32);
    assert!(message.parts.is_empty() && message.repairs.is_empty(), "{message:?}");
    assert!(
        message.content.contains("make 3 separate calls to buy, one per city"),
        "the model reads what to do: {}",
        message.content
    );
    gw.stop().await;
}
