//! Human review over real gRPC in WAIT mode: a waiting Execute is approved, edited or rejected by a reviewer and
//! runs exactly once; a deadline answers PENDING_REVIEW; decisions are final and tenant-scoped; WatchPending.
//! DEFER mode, restarts and cancelled callers are in `review_defer.rs`.

use crate::support::review::*;
use crate::support::{kind_of, status_of};
use serde_json::json;
use std::time::{Duration, Instant};
use tonic::Code;
use toolgate::pb::v1::{ErrorKind as K, ReviewAction, ReviewMode, ToolStatus, review_event::Kind};

#[tokio::test]
async fn wait_mode_approve_answers_the_waiting_call_and_runs_it_once() {
    let t = Reviewed::start().await;
    let task = spawn_wait(t.client(), "c-approve", ARGS);
    let mut reviewer = t.reviewer();
    let shown = until_pending(&mut reviewer, "c-approve").await;
    assert_eq!(
        (&*shown.call_id, &*shown.tenant, &*shown.session_id, &*shown.user_id, &*shown.tool),
        ("c-approve", TENANT, "s1", "alice", TOOL)
    );
    assert_eq!(json_of(&shown.arguments), json!({"service": "api", "replicas": 2}), "no injected value is shown");
    assert!(shown.created_ms > 1_600_000_000_000, "created_ms is Unix time in ms: {}", shown.created_ms);
    assert!(!task.is_finished(), "the Execute waits for the decision");
    assert_eq!(t.runs(), 0, "nothing runs before a decision");

    let decided = approve(&mut reviewer, "c-approve").await;
    assert_eq!(decided.call_id, "c-approve");
    let m = answer(task).await;
    assert_eq!(status_of(&m), ToolStatus::Success, "{m:?}");
    assert_eq!(m.tool_call_id, "c-approve");
    assert_eq!(json_of(&m.structured), json!({"service": "api", "replicas": 2, "user_id": "alice"}));
    assert_eq!(json_of(&m.effective_arguments), json!({"service": "api", "replicas": 2}));
    assert_eq!(t.runs(), 1);
    assert!(pending_ids(&mut reviewer).await.is_empty(), "a decided call no longer waits");
    t.gw.stop().await;
}

#[tokio::test]
async fn wait_mode_edit_runs_the_edited_arguments_and_refuses_bad_edits() {
    let t = Reviewed::start().await;
    let task = spawn_wait(t.client(), "c-edit", ARGS);
    let mut reviewer = t.reviewer();
    until_pending(&mut reviewer, "c-edit").await;
    let refused = [
        (r#"{"service": 5}"#, "/service"),
        (r#"{"service": "api", "replicas": 0}"#, "/replicas"),
        (r#"{"service": "api", "colour": "red"}"#, "schema"),
        (r#"{"service": "api", "user_id": "mallory"}"#, "user_id"),
        (r#"{"service": "api""#, "cannot be used"),
    ];
    for (arguments, reason) in refused {
        let err = decide(&mut reviewer, TENANT, "c-edit", ReviewAction::Edit, arguments).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{arguments}: {err:?}");
        assert!(err.message().contains(reason), "{arguments}: {:?} lacks {reason:?}", err.message());
        assert_eq!(pending_ids(&mut reviewer).await, ["c-edit"], "a refused edit leaves the call pending");
    }
    assert!(!task.is_finished(), "a refused edit does not answer the caller");

    let edited = r#"{"service":"web","replicas":3}"#;
    decide(&mut reviewer, TENANT, "c-edit", ReviewAction::Edit, edited).await.expect("a valid edit");
    let m = answer(task).await;
    assert_eq!(status_of(&m), ToolStatus::Success, "{m:?}");
    assert_eq!(json_of(&m.structured), json!({"service": "web", "replicas": 3, "user_id": "alice"}));
    assert_eq!(m.effective_arguments, edited, "the message shows the arguments the tool received");
    assert_eq!(t.runs(), 1);
    t.gw.stop().await;
}

#[tokio::test]
async fn wait_mode_reject_answers_the_feedback_and_never_runs() {
    let t = Reviewed::start().await;
    let task = spawn_wait(t.client(), "c-reject", ARGS);
    let mut reviewer = t.reviewer();
    until_pending(&mut reviewer, "c-reject").await;
    let feedback = "Do not deploy on a Friday; ask the user to schedule it for Monday.";
    decide(&mut reviewer, TENANT, "c-reject", ReviewAction::Reject, feedback).await.expect("the rejection");
    let m = answer(task).await;
    assert_eq!((status_of(&m), kind_of(&m)), (ToolStatus::Error, K::Rejected), "{m:?}");
    assert_eq!(m.content, feedback);
    assert_eq!(json_of(&m.effective_arguments), json!({"service": "api", "replicas": 2}));
    assert_eq!(t.runs(), 0, "a rejected call never runs");
    assert!(pending_ids(&mut reviewer).await.is_empty());
    t.gw.stop().await;
}

#[tokio::test]
async fn wait_mode_answers_pending_review_before_the_callers_deadline() {
    let t = Reviewed::start().await;
    let deadline = Duration::from_millis(800);
    let started = Instant::now();
    let m = execute(t.client(), request("c-deadline", ARGS, ReviewMode::Wait, deadline)).await;
    let took = started.elapsed();
    assert_eq!(status_of(&m), ToolStatus::PendingReview, "{m:?}");
    // Before the deadline by the gateway's own measure (from the request's arrival to its answer), which a loaded
    // machine's scheduling between the two processes cannot push past it; and nowhere near the default wait.
    let in_gateway = Duration::from_micros(m.duration_us);
    assert!(in_gateway < deadline, "answered after the caller's deadline: {in_gateway:?}");
    assert!(took < deadline * 10, "answered by the caller's deadline, not the gateway's default wait: {took:?}");
    assert!(took >= deadline / 2, "it waited for a decision before giving up: {took:?}");
    assert_eq!((m.tool_call_id.as_str(), m.error), ("c-deadline", None));
    let mut reviewer = t.reviewer();
    assert_eq!(pending_ids(&mut reviewer).await, ["c-deadline"], "the call still waits for a reviewer");
    assert_eq!(t.runs(), 0);

    approve(&mut reviewer, "c-deadline").await;
    let m = execute(t.client(), request("c-deadline", ARGS, ReviewMode::Wait, PROMPT)).await;
    assert_eq!(status_of(&m), ToolStatus::Success, "the same call id, sent again, gets the outcome: {m:?}");
    assert_eq!(t.runs(), 1);
    t.gw.stop().await;
}

#[tokio::test]
async fn decisions_are_final_and_scoped_to_their_tenant() {
    let t = Reviewed::start().await;
    assert_eq!(status_of(&defer(t.client(), "c-final", ARGS).await), ToolStatus::PendingReview);
    let mut reviewer = t.reviewer();

    assert!(list(&mut reviewer, "globex", false).await.is_empty(), "another tenant does not see the call");
    assert!(list(&mut reviewer, "", false).await.is_empty(), "the empty tenant is a tenant, not a wildcard");
    let all = list(&mut reviewer, "", true).await;
    assert_eq!(all.iter().map(|p| (&*p.tenant, &*p.call_id)).collect::<Vec<_>>(), [(TENANT, "c-final")]);
    for action in [ReviewAction::Approve, ReviewAction::Reject] {
        let err = decide(&mut reviewer, "globex", "c-final", action, "").await.unwrap_err();
        assert_eq!(err.code(), Code::NotFound, "another tenant cannot decide the call: {err:?}");
    }
    let err = decide(&mut reviewer, TENANT, "c-unknown", ReviewAction::Approve, "").await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    let err = decide(&mut reviewer, TENANT, "c-final", ReviewAction::Unspecified, "").await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert_eq!(pending_ids(&mut reviewer).await, ["c-final"], "no refused decision touched the call");

    approve(&mut reviewer, "c-final").await;
    for action in [ReviewAction::Approve, ReviewAction::Reject] {
        let err = decide(&mut reviewer, TENANT, "c-final", action, "too late").await.unwrap_err();
        assert_eq!(err.code(), Code::FailedPrecondition, "a call is decided once: {err:?}");
    }
    let err = decide(&mut reviewer, TENANT, "c-final", ReviewAction::Edit, r#"{"service": "x"}"#).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    let m = defer(t.client(), "c-final", ARGS).await;
    assert_eq!(status_of(&m), ToolStatus::Success, "the first decision stands: {m:?}");
    assert_eq!(t.runs(), 1);
    t.gw.stop().await;
}

#[tokio::test]
async fn watch_pending_sends_the_queue_then_each_change_of_its_tenant() {
    let mut t = Reviewed::start().await;
    defer(t.client(), "c-before", ARGS).await;
    let mut reviewer = t.reviewer();
    let watch = toolgate::pb::v1::WatchPendingRequest { tenant: TENANT.into(), all_tenants: false };
    let mut events = reviewer.watch_pending(watch).await.expect("WatchPending opens").into_inner();
    let mut next = async || {
        let event = tokio::time::timeout(PROMPT, events.message()).await.expect("an event in time");
        let event = event.expect("the stream stays healthy").expect("the stream stays open");
        let review = event.review.expect("every event carries its call");
        (Kind::try_from(event.kind).unwrap(), review.call_id, review.tenant)
    };
    assert_eq!(next().await, (Kind::Pending, "c-before".into(), TENANT.into()), "the queue as it is first");

    // Another tenant's call (a tool of its own) is never sent to this watcher.
    let mut globex = spec(&t.target);
    globex["tenant"] = json!("globex");
    t.gw.register(globex).await.unwrap();
    let other = request_as("c-other", ARGS, ReviewMode::Defer, PROMPT, "globex");
    assert_eq!(status_of(&execute(t.client(), other).await), ToolStatus::PendingReview);
    defer(t.client(), "c-after", ARGS).await;
    assert_eq!(next().await, (Kind::Pending, "c-after".into(), TENANT.into()));
    approve(&mut reviewer, "c-after").await;
    assert_eq!(next().await, (Kind::Decided, "c-after".into(), TENANT.into()));
    decide(&mut reviewer, TENANT, "c-before", ReviewAction::Reject, "no").await.unwrap();
    assert_eq!(next().await, (Kind::Decided, "c-before".into(), TENANT.into()));
    assert_eq!(list(&mut reviewer, "globex", false).await.len(), 1, "the other tenant's call still waits");
    drop(events);
    t.gw.stop().await;
}
