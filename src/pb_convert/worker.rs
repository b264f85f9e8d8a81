//! Workers: a job sent over `ToolWorker.Connect`, and the result a worker sends back.

use crate::backend::worker::{Answer, Job};
use crate::pb::v1 as pb;

impl From<Job> for pb::WorkerInvocation {
    fn from(job: Job) -> Self {
        pb::WorkerInvocation {
            invocation_id: job.invocation_id,
            call_id: job.call_id,
            tool: job.tool,
            arguments: job.arguments,
            context: Some((&job.context).into()),
            deadline_ms: job.deadline_ms,
            trace: job.trace.into_iter().collect(),
        }
    }
}

/// A worker's result: the invocation it answers, and the answer.
impl From<pb::WorkerResult> for (String, Answer) {
    fn from(result: pb::WorkerResult) -> Self {
        let answer = Answer {
            content: result.content,
            structured: result.structured,
            is_error: result.is_error,
            error_message: result.error_message,
        };
        (result.invocation_id, answer)
    }
}
