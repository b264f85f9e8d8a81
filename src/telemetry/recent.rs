//! What the console shows of the calls: the most recent ones, each in full (bounded in number and in size), and
//! per tool and minute over the last hour the calls, the failures by kind and the repairs by rule. Kept only when
//! the console is on; recording a call is one short lock on each.

use crate::pipeline::{ErrorKind, Repair, ToolMessage, ToolStatus};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;

/// Bytes kept of each field of a call (arguments, answer); the rest is cut, marked with `…`.
const MAX_TEXT: usize = 4096;
/// Minutes of counts kept per tool.
pub const MINUTES: usize = 60;
/// Tools counted apart; the calls of any more are counted under `(other tools)`.
const MAX_TOOLS: usize = 1_000;
const OTHER: &str = "(other tools)";

/// One call as the console shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// Numbers calls in the order they were recorded, so a page can name one.
    pub seq: u64,
    pub at_ms: u64,
    pub call_id: String,
    /// The resolved tool, or the name as called when it did not resolve.
    pub tool: String,
    pub tenant: String,
    pub user_id: String,
    pub status: ToolStatus,
    pub kind: Option<ErrorKind>,
    /// The arguments exactly as received.
    pub original: String,
    pub repairs: Vec<Repair>,
    /// What the tool received of the model's arguments (injected values left out).
    pub effective: String,
    /// The answer's text: for a failure, the error as the model saw it.
    pub content: String,
    pub duration_us: u64,
    pub trace_id: String,
}

/// One tool's counts in one minute.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Minute {
    /// Unix minute.
    pub minute: u64,
    pub calls: u64,
    pub failures: BTreeMap<&'static str, u64>,
    pub repairs: BTreeMap<String, u64>,
}

/// The console's memory of calls.
pub struct Recent {
    capacity: usize,
    /// One lock, taken once per call: the call's record and its minute are kept together.
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    seq: u64,
    calls: VecDeque<CallRecord>,
    minutes: HashMap<String, VecDeque<Minute>>,
}

impl Recent {
    pub fn new(capacity: usize) -> Self {
        Self { capacity, kept: Mutex::new(Kept::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records one answered call. The record is built before the lock is taken, and the one it replaces is
    /// dropped after it is released.
    pub fn record(&self, call: &crate::pipeline::ToolCall, tenant: &str, user: &str, m: &ToolMessage, trace: String) {
        let at_ms = unix_ms();
        let tool = if m.name.is_empty() { &call.name } else { &m.name };
        let mut record = CallRecord {
            seq: 0,
            at_ms,
            call_id: cut(&call.id),
            tool: tool.clone(),
            tenant: cut(tenant),
            user_id: cut(user),
            status: m.status,
            kind: m.error.as_ref().map(|e| e.kind),
            original: cut(&call.arguments),
            repairs: m.repairs.iter().take(64).cloned().collect(),
            effective: cut(&m.effective_arguments),
            content: cut(&m.content),
            duration_us: m.duration_us,
            trace_id: trace,
        };
        let evicted = {
            let mut kept = self.lock();
            count(&mut kept.minutes, tool, at_ms / 60_000, m);
            kept.seq += 1;
            record.seq = kept.seq;
            let evicted = if kept.calls.len() == self.capacity { kept.calls.pop_front() } else { None };
            kept.calls.push_back(record);
            evicted
        };
        drop(evicted);
    }

    /// The recorded calls, newest first.
    pub fn calls(&self) -> Vec<CallRecord> {
        self.lock().calls.iter().rev().cloned().collect()
    }

    /// One call by its `seq`, while it is still kept.
    pub fn call(&self, seq: u64) -> Option<CallRecord> {
        self.lock().calls.iter().find(|c| c.seq == seq).cloned()
    }

    /// Each tool's minutes within the hour before `now_ms`, oldest first, tools by name.
    pub fn last_hour(&self, now_ms: u64) -> BTreeMap<String, Vec<Minute>> {
        let now = now_ms / 60_000;
        self.lock()
            .minutes
            .iter()
            .map(|(tool, series)| {
                let kept = series.iter().filter(|m| m.minute + (MINUTES as u64) > now).cloned().collect::<Vec<_>>();
                (tool.clone(), kept)
            })
            .filter(|(_, kept)| !kept.is_empty())
            .collect()
    }
}

/// The wall clock as Unix milliseconds.
pub fn unix_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// Counts a call in its tool's minute; a tool already counted costs no allocation.
fn count(minutes: &mut HashMap<String, VecDeque<Minute>>, tool: &str, minute: u64, m: &ToolMessage) {
    if !minutes.contains_key(tool) {
        let key = if minutes.len() < MAX_TOOLS { tool } else { OTHER };
        minutes.entry(key.to_owned()).or_default();
    }
    let series = match minutes.get_mut(tool) {
        Some(series) => series,
        None => minutes.get_mut(OTHER).expect("inserted above"),
    };
    if series.back().is_none_or(|last| last.minute != minute) {
        series.push_back(Minute { minute, ..Minute::default() });
    }
    while series.front().is_some_and(|first| first.minute + (MINUTES as u64) <= minute) {
        series.pop_front();
    }
    let now = series.back_mut().expect("pushed above");
    now.calls += 1;
    if let Some(error) = &m.error {
        *now.failures.entry(crate::telemetry::kind_name(error.kind)).or_default() += 1;
    }
    for repair in &m.repairs {
        match now.repairs.get_mut(&repair.rule) {
            Some(n) => *n += 1,
            None => {
                now.repairs.insert(repair.rule.clone(), 1);
            }
        }
    }
}

/// At most `MAX_TEXT` bytes of `text` (cut at a character boundary, marked with `…`).
fn cut(text: &str) -> String {
    match super::span::truncate(text, MAX_TEXT) {
        kept if kept.len() == text.len() => text.to_owned(),
        kept => format!("{kept}…"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{ToolCall, ToolError};

    fn message(tool: &str, error: Option<ErrorKind>, rules: &[&str]) -> ToolMessage {
        let error = error.map(|kind| ToolError {
            kind,
            message: String::new(),
            model_fixable: true,
            retryable: false,
            retry_after_ms: 0,
            violations: Vec::new(),
            suggestions: Vec::new(),
            original_arguments: String::new(),
        });
        let repair = |rule: &&str| Repair {
            rule: (*rule).into(),
            path: String::new(),
            before: String::new(),
            after: String::new(),
        };
        ToolMessage {
            tool_call_id: "c".into(),
            name: tool.into(),
            status: if error.is_some() { ToolStatus::Error } else { ToolStatus::Success },
            content: String::new(),
            structured: None,
            error,
            repairs: rules.iter().map(repair).collect(),
            effective_arguments: String::new(),
            attempts: 1,
            duration_us: 5,
        }
    }

    #[test]
    fn keeps_the_newest_calls_and_counts_the_hour_per_tool() {
        let recent = Recent::new(2);
        let call = ToolCall { id: "c".into(), name: "t".into(), arguments: "x".repeat(MAX_TEXT + 10) };
        recent.record(&call, "", "u", &message("t", None, &["json_syntax"]), String::new());
        recent.record(&call, "", "u", &message("t", Some(ErrorKind::InvalidArguments), &[]), String::new());
        recent.record(&call, "", "u", &message("s", None, &[]), String::new());
        let calls = recent.calls();
        assert_eq!(calls.iter().map(|c| c.seq).collect::<Vec<_>>(), [3, 2]);
        assert!(calls[0].original.ends_with('…') && calls[0].original.len() == MAX_TEXT + '…'.len_utf8());
        assert!(recent.call(1).is_none() && recent.call(2).is_some());
        let hour = recent.last_hour(unix_ms());
        assert_eq!(hour["t"][0].calls, 2);
        assert_eq!(hour["t"][0].failures["INVALID_ARGUMENTS"], 1);
        assert_eq!(hour["t"][0].repairs["json_syntax"], 1);
        assert!(recent.last_hour(unix_ms() + 61 * 60_000).is_empty(), "an hour later, nothing is left");
    }
}
