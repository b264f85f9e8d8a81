//! Human review over real gRPC in DEFER mode, across a restart, and with a caller that goes away: however often
//! the same call id is executed, the tool runs exactly once and every answer after the decision is the same.

use crate::support::review::*;
use crate::support::{kind_of, start_gateway, status_of};
use serde_json::json;
use std::time::Duration;
use toolgate::pb::v1::{self as pb, ErrorKind as K, ReviewAction, ReviewMode, ToolStatus};

#[tokio::test]
async fn defer_mode_approve_runs_once_however_often_the_call_is_sent() {
    let t = Reviewed::start().await;
    let first = defer(t.client(), "c-defer", ARGS).await;
    assert_eq!(status_of(&first), ToolStatus::PendingReview, "{first:?}");
    assert_eq!((first.tool_call_id.as_str(), &first.error), ("c-defer", &None));
    assert_eq!(json_of(&first.effective_arguments), json!({"service": "api", "replicas": 2}));
    let again = defer(t.client(), "c-defer", ARGS).await;
    assert_eq!(status_of(&again), ToolStatus::PendingReview, "{again:?}");
    let mut reviewer = t.reviewer();
    assert_eq!(pending_ids(&mut reviewer).await, ["c-defer"], "a retry is the same call, queued once");
    assert_eq!(t.runs(), 0);

    approve(&mut reviewer, "c-defer").await;
    let done = defer(t.client(), "c-defer", ARGS).await;
    assert_eq!(status_of(&done), ToolStatus::Success, "{done:?}");
    assert_eq!(json_of(&done.structured), json!({"service": "api", "replicas": 2, "user_id": "alice"}));
    assert_eq!(t.runs(), 1);
    let repeated = defer(t.client(), "c-defer", ARGS).await;
    assert_eq!(outcome(&repeated), outcome(&done), "the stored outcome, answered again");
    let waited = execute(t.client(), request("c-defer", ARGS, ReviewMode::Wait, PROMPT)).await;
    assert_eq!(outcome(&waited), outcome(&done), "WAIT mode gets the same outcome");
    assert_eq!(t.runs(), 1, "the tool ran exactly once");
    assert!(pending_ids(&mut reviewer).await.is_empty());
    t.gw.stop().await;
}

#[tokio::test]
async fn defer_mode_reject_answers_the_feedback_every_time_and_never_runs() {
    let t = Reviewed::start().await;
    assert_eq!(status_of(&defer(t.client(), "c-no", ARGS).await), ToolStatus::PendingReview);
    let mut reviewer = t.reviewer();
    let feedback = "The api service is frozen this week.";
    decide(&mut reviewer, TENANT, "c-no", ReviewAction::Reject, feedback).await.expect("the rejection");
    let rejected = defer(t.client(), "c-no", ARGS).await;
    assert_eq!((status_of(&rejected), kind_of(&rejected)), (ToolStatus::Error, K::Rejected), "{rejected:?}");
    assert_eq!((rejected.content.as_str(), rejected.tool_call_id.as_str()), (feedback, "c-no"));
    for _ in 0..2 {
        let again = defer(t.client(), "c-no", ARGS).await;
        assert_eq!(outcome(&again), outcome(&rejected));
    }
    assert_eq!(t.runs(), 0, "a rejected call never runs");
    t.gw.stop().await;
}

#[tokio::test]
async fn defer_mode_edit_runs_the_edited_arguments_once() {
    let t = Reviewed::start().await;
    defer(t.client(), "c-fix", ARGS).await;
    let mut reviewer = t.reviewer();
    let edited = r#"{"service":"api","replicas":1}"#;
    decide(&mut reviewer, TENANT, "c-fix", ReviewAction::Edit, edited).await.expect("a valid edit");
    let done = defer(t.client(), "c-fix", ARGS).await;
    assert_eq!(status_of(&done), ToolStatus::Success, "{done:?}");
    assert_eq!(json_of(&done.structured), json!({"service": "api", "replicas": 1, "user_id": "alice"}));
    assert_eq!(done.effective_arguments, edited);
    assert_eq!(outcome(&defer(t.client(), "c-fix", ARGS).await), outcome(&done));
    assert_eq!(t.runs(), 1);
    t.gw.stop().await;
}

#[tokio::test]
async fn a_deferred_call_survives_a_restart_and_still_runs_once() {
    let t = Reviewed::start().await;
    defer(t.client(), "c-durable", ARGS).await;
    let Reviewed { dir, config, gw, runtime, target: _ } = t;
    gw.stop().await;

    let gw = start_gateway(config.clone()).await;
    let mut reviewer = gw.review.clone();
    let shown = until_pending(&mut reviewer, "c-durable").await;
    assert_eq!((&*shown.tenant, &*shown.session_id, &*shown.user_id, &*shown.tool), (TENANT, "s1", "alice", TOOL));
    assert_eq!(json_of(&shown.arguments), json!({"service": "api", "replicas": 2}));
    approve(&mut reviewer, "c-durable").await;
    let done = defer(gw.gateway.clone(), "c-durable", ARGS).await;
    assert_eq!(status_of(&done), ToolStatus::Success, "{done:?}");
    assert_eq!(json_of(&done.structured), json!({"service": "api", "replicas": 2, "user_id": "alice"}));
    assert_eq!(runtime.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    drop(reviewer);
    gw.stop().await;

    // The outcome is durable too: after another restart the call is answered, not run again.
    let mut gw = start_gateway(config).await;
    let again = defer(gw.gateway.clone(), "c-durable", ARGS).await;
    assert_eq!(outcome(&again), outcome(&done));
    assert_eq!(runtime.calls.load(std::sync::atomic::Ordering::SeqCst), 1, "the tool ran exactly once");
    assert!(list(&mut gw.review, TENANT, false).await.is_empty());
    gw.stop().await;
    drop(dir);
}

#[tokio::test]
async fn a_caller_that_goes_away_does_not_strand_its_call() {
    let t = Reviewed::start().await;
    let task = spawn_wait(t.client(), "c-gone", ARGS);
    let mut reviewer = t.reviewer();
    until_pending(&mut reviewer, "c-gone").await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled(), "the caller went away before the decision");

    approve(&mut reviewer, "c-gone").await;
    let m = execute(t.client(), request("c-gone", ARGS, ReviewMode::Wait, PROMPT)).await;
    assert_eq!(status_of(&m), ToolStatus::Success, "{m:?}");
    assert_eq!(json_of(&m.structured), json!({"service": "api", "replicas": 2, "user_id": "alice"}));
    let deferred = defer(t.client(), "c-gone", ARGS).await;
    assert_eq!(outcome(&deferred), outcome(&m));
    assert_eq!(t.runs(), 1, "the tool ran exactly once");
    t.gw.stop().await;
}

#[tokio::test]
async fn a_caller_that_goes_away_while_its_tool_runs_does_not_strand_the_call() {
    let mut t = Reviewed::start().await;
    let mut slow = spec(&t.target);
    slow["name"] = json!("sleep");
    slow["input_schema"] =
        json!({"type": "object", "properties": {"ms": {"type": "integer"}, "user_id": {"type": "string"}}});
    t.gw.register(slow).await.unwrap();
    let call = pb::ToolCall { id: "c-slow".into(), name: "sleep".into(), arguments: r#"{"ms": 400}"#.into() };
    let message = pb::ExecuteRequest { call: Some(call), context: Some(context(TENANT)), review_mode: 0 };
    let waiting = |message: pb::ExecuteRequest| {
        let mut request = tonic::Request::new(message);
        request.set_timeout(PROMPT);
        tokio::spawn(execute(t.client(), request))
    };
    let task = waiting(message.clone());
    let mut reviewer = t.reviewer();
    until_pending(&mut reviewer, "c-slow").await;
    approve(&mut reviewer, "c-slow").await;
    for _ in 0..500 {
        if t.runs() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(t.runs(), 1, "the approved call started");
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled(), "the caller went away while its tool ran");

    let m = answer(waiting(message)).await;
    assert_eq!(status_of(&m), ToolStatus::Success, "the run went on and its outcome was kept: {m:?}");
    assert_eq!(m.content, "slept 400 ms");
    assert_eq!(t.runs(), 1, "the tool ran exactly once");
    t.gw.stop().await;
}

/// A shutdown must not wait for a reviewer: a waiting caller is answered PENDING_REVIEW (its call stays queued,
/// durably), and the gateway stops promptly.
#[tokio::test]
async fn a_shutdown_answers_waiting_callers_and_keeps_their_calls() {
    let t = Reviewed::start().await;
    let task = spawn_wait(t.client(), "c-shutdown", ARGS);
    until_pending(&mut t.reviewer(), "c-shutdown").await;
    let Reviewed { dir, config, gw, runtime, target: _ } = t;
    let stopped = tokio::time::timeout(PROMPT / 2, gw.stop()).await;
    assert!(stopped.is_ok(), "the gateway did not stop within 5 s: it waits for the reviewer");
    let m = answer(task).await;
    assert_eq!(status_of(&m), ToolStatus::PendingReview, "{m:?}");

    let mut gw = start_gateway(config).await;
    approve(&mut gw.review, "c-shutdown").await;
    let m = defer(gw.gateway.clone(), "c-shutdown", ARGS).await;
    assert_eq!(status_of(&m), ToolStatus::Success, "{m:?}");
    assert_eq!(runtime.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    gw.stop().await;
    drop(dir);
}

/// A shutdown ends WatchPending streams rather than waiting for the reviewer to hang up.
#[tokio::test]
async fn a_shutdown_ends_watch_streams() {
    let t = Reviewed::start().await;
    defer(t.client(), "c-watched", ARGS).await;
    let watch = pb::WatchPendingRequest { tenant: TENANT.into(), all_tenants: false };
    let mut events = t.reviewer().watch_pending(watch).await.expect("WatchPending opens").into_inner();
    let first = events.message().await.expect("a healthy stream").expect("the pending call");
    assert_eq!(first.review.unwrap().call_id, "c-watched");
    let stopped = tokio::time::timeout(PROMPT / 2, t.gw.stop()).await;
    assert!(stopped.is_ok(), "the gateway did not stop within 5 s: it waits for the watcher to hang up");
    let end = tokio::time::timeout(PROMPT, events.message()).await.expect("the stream ends with the gateway");
    assert!(!matches!(end, Ok(Some(_))), "no event after the shutdown: {end:?}");
}

/// A caller that went away leaves no task holding the store: the gateway, stopped, can be started again on the
/// same data directory, and the call still waits there.
#[tokio::test]
async fn a_restart_after_a_caller_went_away_reopens_the_store() {
    let t = Reviewed::start().await;
    let task = spawn_wait(t.client(), "c-left", ARGS);
    until_pending(&mut t.reviewer(), "c-left").await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let Reviewed { dir, config, gw, .. } = t;
    tokio::time::timeout(PROMPT, gw.stop()).await.expect("no request is in flight");

    let reopened = toolgate::registry::RedbStore::open(&config.data_dir);
    assert!(reopened.is_ok(), "the stopped gateway still holds its store: {:?}", reopened.err());
    drop(reopened);
    let mut gw = start_gateway(config).await;
    let shown = until_pending(&mut gw.review, "c-left").await;
    assert_eq!((&*shown.tenant, &*shown.user_id), (TENANT, "alice"));
    gw.stop().await;
    drop(dir);
}
