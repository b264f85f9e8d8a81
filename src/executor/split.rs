//! A packed parallel call, split by the pipeline into the calls the model meant: each part runs as a call of its
//! own (policy rules, the call-id record, budgets, the rate limit, the concurrency cap, dispatch), one after
//! another under a span of its own, and the parts' answers become one `ToolMessage` for the call id the model sent.

use super::{CallRequest, Executor, rules};
use crate::pipeline::{Checked, Repair, RepairRule, Split, ToolCall, ToolMessage, ToolPart, ToolStatus, json_text};
use crate::policy::rules::Rule as PolicyRule;
use crate::telemetry::{CallSpan, in_context, kind_name};
use std::fmt::Write;
use std::sync::Arc;

impl Executor {
    /// Runs the parts of `split` and answers for the whole call. A tool whose calls a policy rule may send to
    /// review is never split: the call is refused as sent, with the line telling the model to make one call per
    /// value.
    pub(super) async fn run_split(
        self: &Arc<Self>,
        req: CallRequest<'_>,
        split: Split,
        span: &CallSpan<'_>,
    ) -> ToolMessage {
        span.resolved(&split.tool);
        let rules = rules::for_tool(&self.settings.rules, &split.tool);
        if split.tool.spec.review.required || rules.iter().any(|rule| rule.may_review()) {
            let error = split.refusal();
            let Split { tool, mut repairs, .. } = split;
            repairs.retain(|r| r.rule != RepairRule::ParallelSplit.name());
            return self.refuse(req, &tool, error, repairs).await;
        }
        let Split { tool, parts, repairs, .. } = split;
        let n = parts.len();
        let calls: Vec<ToolCall> = parts
            .iter()
            .enumerate()
            .map(|(i, part)| ToolCall {
                id: part_id(&req.call.id, i),
                name: tool.spec.name.clone(),
                arguments: part.text.clone(),
            })
            .collect();
        // One after another, in the order the model wrote them: the rate limit and the budgets count the parts in
        // that order, so the part refused is always the last one past the limit.
        let mut answers = Vec::with_capacity(n);
        for (i, (part, call)) in parts.into_iter().zip(&calls).enumerate() {
            answers.push(self.run_part(CallRequest { call, ..req }, part, &rules, (i, n), span).await);
        }
        combined(req.call, &tool.spec.name, &calls, answers, repairs)
    }

    /// The `i`-th of `n` parts, as a call of its own under a span of its own.
    async fn run_part(
        self: &Arc<Self>,
        req: CallRequest<'_>,
        part: Checked,
        rules: &[Arc<PolicyRule>],
        (i, n): (usize, usize),
        span: &CallSpan<'_>,
    ) -> ToolMessage {
        let cx = self.telemetry.part(&req.call.name, i, n);
        let message = in_context(&cx, std::pin::pin!(self.run_checked(req, part, rules, false, span))).await.message;
        self.telemetry.end(&cx, message.error.as_ref().map(|e| kind_name(e.kind)));
        message
    }
}

/// The id of the `i`-th part: the call's own for the first, `<id>_2`, `<id>_3`, … for the others, as the clients
/// name the calls they write into the transcript. No id stays no id.
fn part_id(id: &str, i: usize) -> String {
    match (id, i) {
        ("", _) | (_, 0) => id.to_owned(),
        _ => format!("{id}_{}", i + 1),
    }
}

/// One message for the whole call: every part's result in order, each under a header saying which call it
/// answers; ERROR naming the parts that failed, if any did, with the first failure's error.
fn combined(
    call: &ToolCall,
    name: &str,
    calls: &[ToolCall],
    mut answers: Vec<ToolMessage>,
    repairs: Vec<Repair>,
) -> ToolMessage {
    let n = answers.len();
    // A part refused before it ran reports no arguments of its own: it was to run with its share of the call.
    for (answer, part) in answers.iter_mut().zip(calls) {
        if answer.effective_arguments.is_empty() {
            answer.effective_arguments.clone_from(&part.arguments);
        }
    }
    let failed: Vec<usize> = (0..n).filter(|i| answers[*i].status == ToolStatus::Error).map(|i| i + 1).collect();
    let mut content =
        format!("{name} was called {n} times, once for each of the values given; the answers follow in order.");
    if !failed.is_empty() {
        let which: Vec<String> = failed.iter().map(usize::to_string).collect();
        let _ = write!(content, " Call {} of {n} failed.", which.join(", "));
    }
    for (i, answer) in answers.iter().enumerate() {
        let outcome = if answer.status == ToolStatus::Error { "failed" } else { "answered" };
        let _ = write!(
            content,
            "\n\n--- call {} of {n} ({}) {outcome}:\n{}",
            i + 1,
            answer.effective_arguments,
            answer.content
        );
    }
    let error = failed.first().and_then(|first| {
        let mut error = answers[first - 1].error.clone()?;
        error.message = format!("call {first} of {n}: {}", error.message);
        error.original_arguments = crate::pipeline::echoed_arguments(&call.arguments);
        Some(error)
    });
    let effective: Vec<serde_json::Value> =
        answers.iter().map(|a| serde_json::from_str(&a.effective_arguments).unwrap_or_default()).collect();
    ToolMessage {
        tool_call_id: call.id.clone(),
        name: name.to_owned(),
        status: if failed.is_empty() { ToolStatus::Success } else { ToolStatus::Error },
        content,
        structured: None,
        error,
        repairs,
        effective_arguments: json_text(&serde_json::Value::Array(effective)),
        attempts: answers.iter().map(|a| a.attempts).sum(),
        duration_us: 0,
        parts: answers.into_iter().map(part_of).collect(),
        blocks: Vec::new(),
    }
}

fn part_of(answer: ToolMessage) -> ToolPart {
    ToolPart {
        status: answer.status,
        content: answer.content,
        structured: answer.structured,
        error: answer.error,
        effective_arguments: answer.effective_arguments,
        repairs: answer.repairs,
        attempts: answer.attempts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_part_keeps_the_id_and_the_others_derive_theirs() {
        let ids: Vec<String> = (0..3).map(|i| part_id("call_7", i)).collect();
        assert_eq!(ids, ["call_7", "call_7_2", "call_7_3"]);
        assert_eq!(part_id("", 2), "");
    }
}
