//! No tool runs twice for one call id: a call sent again with the same id gets the first call's outcome, during
//! the call and after it, through `Execute` and `ExecuteBatch`, even when the first caller went away; the same id with other arguments is refused; the
//! record forgets an id after its window, and stays bounded. Through the real server and a real tool server that
//! counts the calls reaching it and holds the slow ones.

use crate::support::idempotency::{Counting, request, specs, start};
use crate::support::{Gateway, kind_of, start_gateway, status_of, temp_config};
use std::time::Duration;
use tempfile::TempDir;
use toolgate::idempotency::IdempotencySettings;
use toolgate::pb::v1::{self as pb, ErrorKind as K, ToolStatus};

const ARGS: &str = r#"{"n": 1}"#;

async fn gateway(window: Duration, max_entries: usize) -> (TempDir, Gateway, Counting) {
    let (dir, mut config) = temp_config();
    config.idempotency = IdempotencySettings { window, max_entries, ..IdempotencySettings::default() };
    let mut gw = start_gateway(config).await;
    let tool = Counting::default();
    let target = start(tool.clone()).await;
    for spec in specs(&target) {
        gw.register(spec).await.unwrap();
    }
    (dir, gw, tool)
}

async fn execute(gw: &mut Gateway, id: &str, name: &str, arguments: &str) -> pb::ToolMessage {
    let response = gw.gateway.execute(request(id, name, arguments, None)).await.expect("a message, not a status");
    response.into_inner().message.expect("a message")
}

#[tokio::test]
async fn a_retry_during_the_call_waits_for_its_outcome_and_the_tool_runs_once() {
    let (_dir, mut gw, tool) = gateway(Duration::from_secs(600), 100).await;
    // The first caller gives up while the tool is held: either its deadline passes, or the gateway answers just
    // before it that the call still runs.
    let first = gw.gateway.execute(request("c1", "held", ARGS, Some(Duration::from_millis(300)))).await;
    if let Ok(answer) = first {
        let m = answer.into_inner().message.unwrap();
        assert_eq!(kind_of(&m), K::Timeout, "{m:?}");
    }
    tool.wait_for_calls(1).await;

    // A retry with a short deadline of its own, during the call: it waits, and does not run the tool.
    let m = gw.gateway.execute(request("c1", "held", ARGS, Some(Duration::from_millis(300)))).await.unwrap();
    let m = m.into_inner().message.unwrap();
    assert_eq!(kind_of(&m), K::Timeout, "{m:?}");
    assert!(m.content.contains("still running") && m.error.as_ref().unwrap().retryable, "{m:?}");
    assert_eq!(tool.calls(), 1, "the retry did not run the tool");

    // A retry that waits as long as it takes gets the first call's outcome once the tool answers.
    let mut client = gw.gateway.clone();
    let retry = tokio::spawn(async move { client.execute(request("c1", "held", ARGS, None)).await });
    tool.release_one();
    let m = retry.await.unwrap().expect("a message").into_inner().message.unwrap();
    assert_eq!((status_of(&m), m.content.as_str()), (ToolStatus::Success, r#"run 1 of held with {"n": 1}"#), "{m:?}");
    assert_eq!((m.tool_call_id.as_str(), m.attempts), ("c1", 1));
    assert_eq!(tool.calls(), 1, "the tool ran once");
}

#[tokio::test]
async fn a_caller_that_goes_away_leaves_its_call_running_and_its_outcome_kept() {
    let (_dir, mut gw, tool) = gateway(Duration::from_secs(600), 100).await;
    // No deadline: the caller itself goes away (its stream is reset) while the tool is held.
    let mut client = gw.gateway.clone();
    let first = tokio::spawn(async move { client.execute(request("g1", "held", ARGS, None)).await });
    tool.wait_for_calls(1).await;
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    tool.release_one();

    // The run went on without its caller, and its outcome answers the id.
    let m = execute(&mut gw, "g1", "held", ARGS).await;
    assert_eq!((status_of(&m), m.content.as_str()), (ToolStatus::Success, r#"run 1 of held with {"n": 1}"#), "{m:?}");
    assert_eq!(tool.calls(), 1, "the tool ran once");
}

#[tokio::test]
async fn a_retry_after_the_call_gets_its_outcome_through_execute_and_execute_batch() {
    let (_dir, mut gw, tool) = gateway(Duration::from_secs(600), 100).await;
    let first = execute(&mut gw, "c2", "quick", ARGS).await;
    assert_eq!((status_of(&first), first.content.as_str()), (ToolStatus::Success, r#"run 1 of quick with {"n": 1}"#));
    let again = execute(&mut gw, "c2", "quick", ARGS).await;
    assert_eq!((status_of(&again), again.content.as_str()), (ToolStatus::Success, first.content.as_str()));
    assert_eq!(again.effective_arguments, first.effective_arguments);

    let call = |id: &str| pb::ToolCall { id: id.into(), name: "quick".into(), arguments: ARGS.into() };
    let context = request("", "", "", None).into_inner().context;
    let batch = pb::ExecuteBatchRequest { calls: vec![call("c2"), call("c2b")], context, ..Default::default() };
    let messages = gw.gateway.execute_batch(batch).await.unwrap().into_inner().messages;
    assert_eq!(messages[0].content, first.content, "a batch's call is the same call");
    assert_eq!(messages[1].content, r#"run 2 of quick with {"n": 1}"#, "a new id runs");
    assert_eq!(tool.calls(), 2);

    // A call with no id cannot be told from another: each runs.
    execute(&mut gw, "", "quick", ARGS).await;
    execute(&mut gw, "", "quick", ARGS).await;
    assert_eq!(tool.calls(), 4);
}

#[tokio::test]
async fn a_retryable_failure_releases_its_id_and_a_final_failure_keeps_it() {
    let (_dir, mut gw, tool) = gateway(Duration::from_secs(600), 100).await;
    // The tool server's connection is open before a call with a short timeout is sent.
    execute(&mut gw, "", "quick", ARGS).await;
    // A timeout (the tool's own 500 ms) and a retryable tool error say "try again": the same id runs again.
    for (name, kind) in [("held_brief", K::Timeout), ("overloaded", K::ToolError)] {
        let before = tool.calls();
        for run in 1..=2 {
            let m = execute(&mut gw, &format!("r-{name}"), name, ARGS).await;
            assert_eq!(kind_of(&m), kind, "{m:?}");
            assert!(m.error.as_ref().unwrap().retryable, "{m:?}");
            tool.wait_for_calls(before + run).await;
        }
        assert_eq!(tool.calls(), before + 2, "{name}: each try reached the tool once");
    }
    // A failure that is final (the tool says the arguments are wrong) keeps its id: sent again, it is answered
    // from the record and the tool does not run.
    let first = execute(&mut gw, "r-refusing", "refusing", ARGS).await;
    assert_eq!(kind_of(&first), K::ToolError, "{first:?}");
    assert!(!first.error.as_ref().unwrap().retryable, "{first:?}");
    let before = tool.calls();
    let again = execute(&mut gw, "r-refusing", "refusing", ARGS).await;
    assert_eq!((kind_of(&again), again.content.as_str()), (K::ToolError, first.content.as_str()), "{again:?}");
    assert_eq!(tool.calls(), before, "the final failure was not run again");
}

#[tokio::test]
async fn the_same_id_with_other_arguments_is_refused_and_not_run() {
    let (_dir, mut gw, tool) = gateway(Duration::from_secs(600), 100).await;
    let first = execute(&mut gw, "c3", "quick", ARGS).await;
    assert_eq!(status_of(&first), ToolStatus::Success);
    for (name, arguments) in [("quick", r#"{"n": 2}"#), ("held", ARGS)] {
        let m = execute(&mut gw, "c3", name, arguments).await;
        assert_eq!(kind_of(&m), K::InvalidArguments, "{m:?}");
        let error = m.error.as_ref().unwrap();
        assert!(error.message.contains(r#"call id "c3" was already used for a different call"#), "{error:?}");
        assert!(!error.model_fixable && !error.retryable, "{error:?}");
        assert!(m.content.contains("new call id"), "{m:?}");
    }
    assert_eq!(tool.calls(), 1, "neither other call ran");
}

#[tokio::test]
async fn an_id_runs_again_once_its_window_has_passed() {
    let (first, second) = (r#"run 1 of quick with {"n": 1}"#, r#"run 2 of quick with {"n": 1}"#);
    // Sent again within the window, the id gets the recorded answer: a window of 10 s, which no scheduling delay
    // between the two calls reaches.
    let (_dir, mut gw, tool) = gateway(Duration::from_secs(10), 100).await;
    assert_eq!(execute(&mut gw, "c4", "quick", ARGS).await.content, first);
    assert_eq!(execute(&mut gw, "c4", "quick", ARGS).await.content, first);
    assert_eq!(tool.calls(), 1, "within the window");

    // Past its window the id runs again: a gateway with a 1 s window, asked until it does. Its window starts when
    // the first call finishes, after `sent`; so an answer received before `sent + window` was looked up within it
    // and must be the recorded one, however slowly the machine runs.
    let window = Duration::from_secs(1);
    let (_dir, mut gw, tool) = gateway(window, 100).await;
    let sent = tokio::time::Instant::now();
    assert_eq!(execute(&mut gw, "c4", "quick", ARGS).await.content, first);
    let until = sent + window + Duration::from_secs(30);
    let mut last = String::new();
    while tool.calls() < 2 {
        assert!(tokio::time::Instant::now() < until, "the id never ran again after its 1 s window");
        tokio::time::sleep(Duration::from_millis(50)).await;
        last = execute(&mut gw, "c4", "quick", ARGS).await.content;
        if tokio::time::Instant::now() < sent + window {
            assert_eq!(last, first, "asked again within the window, the id ran again");
        }
    }
    assert_eq!(last, second);
}

#[tokio::test]
async fn the_local_record_stays_bounded_forgetting_the_oldest_call() {
    let (_dir, mut gw, tool) = gateway(Duration::from_secs(600), 3).await;
    for i in 0..10 {
        execute(&mut gw, &format!("b{i}"), "quick", ARGS).await;
    }
    assert_eq!(tool.calls(), 10);
    assert_eq!(execute(&mut gw, "b9", "quick", ARGS).await.content, r#"run 10 of quick with {"n": 1}"#);
    assert_eq!(tool.calls(), 10, "the newest ids are kept");
    assert_eq!(execute(&mut gw, "b0", "quick", ARGS).await.content, r#"run 11 of quick with {"n": 1}"#);
    assert_eq!(tool.calls(), 11, "the oldest id was forgotten: the record holds 3");
}
