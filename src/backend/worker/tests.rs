//! The pool without a network: routing in turn, failing a departed worker's calls at once, and no entry left
//! behind by a caller that gave up.

use super::*;
use std::time::Duration;

fn tools(names: &[&str]) -> Vec<(String, String)> {
    names.iter().map(|n| ("acme".to_owned(), (*n).to_owned())).collect()
}

async fn invoke(pool: &WorkerPool, tool: &str, arguments: &str) -> Result<Output, BackendError> {
    let context = CallContext { tenant: "acme".into(), user_id: "u1".into(), ..CallContext::default() };
    let trace = [("traceparent", "00-abc-def-01".to_owned())];
    let call = Invocation {
        call_id: "c1",
        tool,
        tenant: "acme",
        arguments,
        context: &context,
        trace: &trace,
        budget: Duration::from_millis(1500),
        progress: None,
        host: None,
    };
    pool.invoke(call).await
}

/// Answers every job on `jobs` with `{label}:{arguments}` until the queue closes.
fn answer_all(
    link: Arc<WorkerLink>,
    mut jobs: mpsc::Receiver<Job>,
    label: &'static str,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(job) = jobs.recv().await {
            let answer = Answer { content: format!("{label}:{}", job.arguments), ..Answer::default() };
            link.complete(&job.invocation_id, answer.into_result(1024));
        }
    })
}

#[tokio::test]
async fn a_tool_with_no_worker_is_unavailable() {
    let pool = WorkerPool::new();
    let err = invoke(&pool, "search", "{}").await.unwrap_err();
    assert_eq!(err, BackendError::Unavailable("no worker is connected for tool search".into()));
}

#[tokio::test]
async fn calls_take_the_workers_in_turn_and_each_result_reaches_its_caller() {
    let pool = WorkerPool::new();
    let (a, a_jobs) = pool.attach("a".into(), tools(&["search"]));
    let (b, b_jobs) = pool.attach("b".into(), tools(&["search", "other"]));
    answer_all(a, a_jobs, "a");
    answer_all(b, b_jobs, "b");
    let args: Vec<String> = (0..6).map(|i| format!("{{\"i\":{i}}}")).collect();
    let results = futures::future::join_all(args.iter().map(|a| invoke(&pool, "search", a))).await;
    let mut by_worker = [0, 0];
    for (args, result) in args.iter().zip(results) {
        let content = result.unwrap().content;
        let (worker, echoed) = content.split_once(':').unwrap();
        assert_eq!(echoed, args, "a result reached another caller");
        by_worker[usize::from(worker == "b")] += 1;
    }
    assert_eq!(by_worker, [3, 3]);
    assert_eq!((pool.workers_of("acme", "search"), pool.workers_of("acme", "other")), (2, 1));
    assert_eq!(pool.workers_of("", "search"), 0, "a tool of another tenant is another tool");
}

#[tokio::test]
async fn a_job_carries_the_call() {
    let pool = WorkerPool::new();
    let (_link, mut jobs) = pool.attach("a".into(), tools(&["search"]));
    let call = tokio::spawn(async move { invoke(&pool, "search", r#"{"q":1}"#).await });
    let job = jobs.recv().await.unwrap();
    assert_eq!((job.invocation_id.as_str(), job.call_id.as_str(), job.tool.as_str()), ("1", "c1", "search"));
    assert_eq!((job.arguments.as_str(), job.context.user_id.as_str(), job.deadline_ms), (r#"{"q":1}"#, "u1", 1500));
    assert_eq!(job.trace, [("traceparent".to_owned(), "00-abc-def-01".to_owned())]);
    call.abort();
}

#[tokio::test(start_paused = true)]
async fn a_caller_that_gives_up_leaves_nothing_behind_and_a_late_result_is_ignored() {
    let pool = WorkerPool::new();
    let (link, mut jobs) = pool.attach("slow".into(), tools(&["search"]));
    let gave_up = tokio::time::timeout(Duration::from_millis(50), invoke(&pool, "search", "{}")).await;
    assert!(gave_up.is_err());
    assert_eq!(link.pending_count(), 0);
    let job = jobs.recv().await.unwrap();
    assert!(!link.complete(&job.invocation_id, Ok(Output::text("late".into(), None))));
    assert!(!link.complete("no-such-id", Ok(Output::text("?".into(), None))));
}

#[tokio::test]
async fn a_worker_that_goes_away_fails_its_waiting_calls_at_once() {
    let pool = Arc::new(WorkerPool::new());
    let (link, mut jobs) = pool.attach("dying".into(), tools(&["search", "fetch"]));
    let caller = Arc::clone(&pool);
    let call = tokio::spawn(async move { invoke(&caller, "fetch", "{}").await });
    jobs.recv().await.unwrap();
    assert_eq!(link.pending_count(), 1);
    pool.detach(&link, "stream ended");
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err, BackendError::Unavailable("the worker serving fetch disconnected during the call".into()));
    assert_eq!((link.pending_count(), link.is_closed()), (0, true));
    pool.detach(&link, "again");
    let err = invoke(&pool, "search", "{}").await.unwrap_err();
    assert_eq!(err, BackendError::Unavailable("no worker is connected for tool search".into()));
}

#[tokio::test]
async fn a_worker_whose_queue_is_full_still_fails_its_callers_when_it_goes_away() {
    let pool = Arc::new(WorkerPool::new());
    let (link, _jobs) = pool.attach("stuck".into(), tools(&["search"]));
    let calls: Vec<_> = (0..JOB_QUEUE + 2)
        .map(|_| {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move { invoke(&pool, "search", "{}").await })
        })
        .collect();
    while link.pending_count() < JOB_QUEUE + 2 {
        tokio::task::yield_now().await;
    }
    pool.detach(&link, "stream ended");
    for call in calls {
        assert!(matches!(call.await.unwrap(), Err(BackendError::Unavailable(_))));
    }
}

#[tokio::test]
async fn close_ends_every_link_and_any_attached_after() {
    let pool = WorkerPool::new();
    let (a, _) = pool.attach("a".into(), tools(&["search"]));
    pool.close();
    a.closed().await;
    let (b, _) = pool.attach("b".into(), tools(&["search"]));
    assert!(b.is_closed());
    assert_eq!(pool.workers_of("acme", "search"), 0);
}

#[test]
fn an_answer_maps_as_a_tool_runtime_response_does() {
    let ok = Answer { content: "done".into(), structured: r#"{"n":1}"#.into(), ..Answer::default() };
    assert_eq!(ok.into_result(100), Ok(Output::text("done".into(), Some(r#"{"n":1}"#.into()))));
    let failed = Answer { content: "text".into(), is_error: true, error_message: "broke".into(), ..Answer::default() };
    let tool_error = |m: &str| BackendError::fatal(m);
    assert_eq!(failed.clone().into_result(100), Err(tool_error("broke")));
    let bare = Answer { error_message: String::new(), ..failed };
    assert_eq!(bare.into_result(100), Err(tool_error("text")));
    let big = Answer { content: "x".repeat(101), ..Answer::default() };
    assert_eq!(big.into_result(100), Err(tool_error("the result is over the limit of 100 bytes")));
}
