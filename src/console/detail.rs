//! The review page: one call under review, with an attempt to set an injected parameter, the line diff from what
//! the model wrote to what the tool will receive, the injected values, the decision, and how long the caller waits.

use super::views::{Row, User, pretty, utc, waited};
use crate::pipeline::{
    CallContext, ErrorKind, OVERRIDE_REMOVED, ParseLimits, RepairSettings, Violation, inject, parse_arguments,
};
use crate::registry::{CompiledTool, Source};
use crate::review::{Decision, ReviewRecord, ReviewState, unix_ms};
use askama::Template;
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

#[derive(Template)]
#[template(path = "console/review.html")]
pub struct ReviewPage {
    pub user: Option<User>,
    pub review: Detail,
    /// The edit form's text: the arguments, or what the reviewer wrote when it was refused.
    pub edit_text: String,
    /// Why the last verdict was refused, and the edit's violations.
    pub error: Option<String>,
    pub violations: Vec<Violation>,
}

/// An injected parameter as the page shows it: where its value comes from, and the value.
pub struct InjectedView {
    pub param: String,
    pub source: String,
    pub value: String,
}

/// The model set a parameter only the gateway sets: what it wrote there, and what the tool gets instead.
pub struct OverrideView {
    pub path: String,
    pub written: String,
    pub injected: String,
    pub source: String,
}

/// One line of the diff: `-` as the model wrote it, `+` what the tool will receive, ` ` both.
pub struct DiffLine {
    pub sign: &'static str,
    pub class: &'static str,
    pub text: String,
}

/// One call in full.
pub struct Detail {
    pub row: Row,
    /// The tool's description, as the model read it; empty when it has none or is gone.
    pub description: String,
    pub written: String,
    pub repairs: Vec<crate::pipeline::Repair>,
    /// What the tool will receive: the arguments with the injected values in place.
    pub will_run: String,
    pub injected: Vec<InjectedView>,
    pub overrides: Vec<OverrideView>,
    pub diff: Vec<DiffLine>,
    /// `None` while pending; else what was decided, by whom, and when.
    pub decided: Option<String>,
    /// The policy rule that sent the call to review, and what it says.
    pub rule: Option<(String, String)>,
    /// How long the caller still waits for the decision, in words.
    pub caller: String,
    /// The call ids of the other pending calls identical to this one, oldest first: deciding it decides none.
    pub identical: Vec<String>,
}

impl Detail {
    /// The record, with its tool (when it still exists) to show the injected values and the description, and the
    /// call ids of the other pending calls identical to it.
    pub fn new(
        record: &ReviewRecord,
        tool: Option<&CompiledTool>,
        limits: ParseLimits,
        identical: Vec<String>,
    ) -> Self {
        let injected: Vec<InjectedView> = tool
            .map(|tool| tool.injections.iter().map(|i| injected(record, &i.param, &i.source)).collect())
            .unwrap_or_default();
        let overrides = overrides(record, tool, &injected);
        let will_run = tool.and_then(|tool| received(record, tool)).unwrap_or_else(|| pretty(&record.arguments));
        let written = pretty(&record.original_arguments);
        // The model's own values, read as the gateway read them: the diff shows changes of value, not of syntax.
        let read = parse_arguments(&record.original_arguments, limits, RepairSettings::default());
        let before = read.ok().and_then(|(value, _)| serde_json::to_string_pretty(&value).ok());
        Self {
            row: Row::from(record),
            description: tool.map(|t| t.spec.description.clone()).unwrap_or_default(),
            diff: diff(before.as_deref().unwrap_or(&written), &will_run),
            written,
            repairs: record.repairs.clone(),
            will_run,
            injected,
            overrides,
            decided: decided(record),
            rule: record.rule.as_ref().map(|rule| (rule.name.clone(), rule.message.clone())),
            caller: caller(record, unix_ms()),
            identical,
        }
    }
}

/// The arguments with the injected values filled from the call's context, pretty; `None` if they cannot be.
fn received(record: &ReviewRecord, tool: &CompiledTool) -> Option<String> {
    let arguments: Value = serde_json::from_str(&record.arguments).ok()?;
    let ctx = CallContext {
        tenant: record.key.tenant.clone(),
        user_id: record.user_id.clone(),
        session_id: record.session_id.clone(),
        values: record.values.clone(),
    };
    let full = inject(tool, arguments, &ctx).ok()?;
    serde_json::to_string_pretty(&full).ok()
}

fn injected(record: &ReviewRecord, param: &str, source: &Source) -> InjectedView {
    let value = match source {
        Source::UserId => record.user_id.clone(),
        Source::Tenant => record.key.tenant.clone(),
        Source::SessionId => record.session_id.clone(),
        Source::Value(key) => record.values.get(key).cloned().unwrap_or_default(),
        Source::Literal(value) => value.to_string(),
    };
    InjectedView { param: param.to_owned(), source: source.describe(), value }
}

/// Each injected parameter the model tried to set, from the repairs that removed them.
fn overrides(record: &ReviewRecord, tool: Option<&CompiledTool>, injected: &[InjectedView]) -> Vec<OverrideView> {
    let removed = record.repairs.iter().filter(|r| r.rule == OVERRIDE_REMOVED);
    removed
        .map(|r| {
            let at = tool.and_then(|t| t.injections.iter().position(|i| r.path.ends_with(&i.pointer())));
            let instead = at.and_then(|at| injected.get(at));
            OverrideView {
                path: r.path.clone(),
                written: r.before.clone(),
                injected: instead.map(|i| i.value.clone()).unwrap_or_default(),
                source: instead.map(|i| i.source.clone()).unwrap_or_default(),
            }
        })
        .collect()
}

/// The line diff from `before` to `after`.
fn diff(before: &str, after: &str) -> Vec<DiffLine> {
    let text = TextDiff::from_lines(before, after);
    text.iter_all_changes()
        .map(|change| {
            let (sign, class) = match change.tag() {
                ChangeTag::Delete => ("-", "removed"),
                ChangeTag::Insert => ("+", "added"),
                ChangeTag::Equal => (" ", "same"),
            };
            DiffLine { sign, class, text: change.value().trim_end_matches('\n').to_owned() }
        })
        .collect()
}

pub(super) fn decided(record: &ReviewRecord) -> Option<String> {
    let what = match &record.state {
        ReviewState::Pending => return None,
        ReviewState::Decided(d) | ReviewState::Running(d) => verdict(d),
        ReviewState::Done(message) => match &message.error {
            Some(error) if error.kind == ErrorKind::Rejected => "rejected".to_owned(),
            Some(_) => "approved, and it ran and failed".to_owned(),
            None => "approved, and it ran".to_owned(),
        },
        ReviewState::Lost => "lost: the gateway stopped while it ran".to_owned(),
    };
    let by = record.decided_by.as_deref().unwrap_or("the API");
    let when = record.decided_ms.map(utc).unwrap_or_default();
    Some(format!("{what}, by {by}, {when}"))
}

fn verdict(decision: &Decision) -> String {
    match decision {
        Decision::Approve => "approved".into(),
        Decision::Edit { arguments } => format!("approved with the arguments {arguments}"),
        Decision::Reject { feedback } if feedback.is_empty() => "rejected".into(),
        Decision::Reject { feedback } => format!("rejected, telling the model {feedback:?}"),
    }
}

/// How long the caller waits for the decision, at `now_ms`.
fn caller(record: &ReviewRecord, now_ms: u64) -> String {
    let again = "it gets the outcome when it sends the same call id again";
    match record.waits_until_ms {
        _ if record.state != ReviewState::Pending => "no longer waits: the call is decided".into(),
        Some(until) if until > now_ms => {
            format!(
                "waits {} more, until {}; then it is told the call is pending, and {again}",
                waited(until - now_ms),
                utc(until)
            )
        }
        Some(until) => format!("stopped waiting at {}: it was told the call is pending, and {again}", utc(until)),
        None => format!("does not wait: {again}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_marks_what_changed_line_by_line() {
        let lines = diff("{\n  \"a\": \"2\"\n}", "{\n  \"a\": 2,\n  \"user_id\": \"alice\"\n}");
        let shown: Vec<String> = lines.iter().map(|l| format!("{}{}", l.sign, l.text)).collect();
        assert_eq!(shown, [" {", "-  \"a\": \"2\"", "+  \"a\": 2,", "+  \"user_id\": \"alice\"", " }"]);
        let same = diff("{}\n", "{}\n");
        assert!(same.iter().all(|l| l.class == "same") && same.len() == 1);
    }
}
