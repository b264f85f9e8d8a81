//! What the console shows of the calls: the most recent ones, each in full (bounded in number and in size), and
//! per tool and minute over the last hour the calls, the failures by kind and the repairs by rule. Kept only when
//! the console is on. Recording a call is one short lock and no allocation: the calls are a ring of records whose
//! strings are overwritten in place, so a call neither allocates its record nor frees the one it replaces.

use crate::pipeline::{ErrorKind, Repair, ToolMessage, ToolStatus};
use opentelemetry::trace::TraceId;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;

/// Bytes kept of each field of a call (arguments, answer); the rest is cut, marked with `…`.
const MAX_TEXT: usize = 4096;
/// Repairs kept of one call.
const MAX_REPAIRS: usize = 64;
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
    /// `TraceId::INVALID` when the call had no trace context.
    pub trace_id: TraceId,
}

impl CallRecord {
    fn empty() -> Self {
        Self {
            seq: 0,
            at_ms: 0,
            call_id: String::new(),
            tool: String::new(),
            tenant: String::new(),
            user_id: String::new(),
            status: ToolStatus::Success,
            kind: None,
            original: String::new(),
            repairs: Vec::new(),
            effective: String::new(),
            content: String::new(),
            duration_us: 0,
            trace_id: TraceId::INVALID,
        }
    }

    /// Overwrites this record with `call`, reusing its strings' room.
    fn fill(&mut self, seq: u64, at_ms: u64, call: &Answered<'_>) {
        let m = call.message;
        (self.seq, self.at_ms, self.status, self.duration_us) = (seq, at_ms, m.status, m.duration_us);
        self.kind = m.error.as_ref().map(|e| e.kind);
        self.trace_id = call.trace_id;
        copy_cut(&mut self.call_id, &call.call.id);
        copy_cut(&mut self.tool, call.tool());
        copy_cut(&mut self.tenant, call.tenant);
        copy_cut(&mut self.user_id, call.user_id);
        copy_cut(&mut self.original, &call.call.arguments);
        copy_cut(&mut self.effective, &m.effective_arguments);
        copy_cut(&mut self.content, &m.content);
        self.repairs.clear();
        self.repairs.extend(m.repairs.iter().take(MAX_REPAIRS).cloned());
    }
}

/// One answered call, as the telemetry hands it over.
pub struct Answered<'a> {
    pub call: &'a crate::pipeline::ToolCall,
    pub tenant: &'a str,
    pub user_id: &'a str,
    pub message: &'a ToolMessage,
    pub trace_id: TraceId,
}

impl Answered<'_> {
    fn tool(&self) -> &str {
        if self.message.name.is_empty() { &self.call.name } else { &self.message.name }
    }
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
    /// The last call's `seq`; calls are numbered from 1.
    seq: u64,
    /// Call `seq` is at `(seq - 1) % capacity`: the ring grows to `capacity`, then each call overwrites the oldest.
    ring: Vec<CallRecord>,
    minutes: HashMap<String, VecDeque<Minute>>,
}

impl Kept {
    /// The slot of call `seq`, if it is still kept.
    fn slot(&self, seq: u64, capacity: usize) -> Option<&CallRecord> {
        let oldest = self.seq.saturating_sub(self.ring.len() as u64) + 1;
        let at = usize::try_from((seq.checked_sub(1)?) % capacity as u64).ok()?;
        (oldest..=self.seq).contains(&seq).then(|| &self.ring[at])
    }
}

impl Recent {
    /// Keeps the last `capacity` calls (at least one).
    pub fn new(capacity: usize) -> Self {
        Self { capacity: capacity.max(1), kept: Mutex::new(Kept::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records one answered call.
    pub fn record(&self, call: &Answered<'_>) {
        let at_ms = unix_ms();
        let mut kept = self.lock();
        count(&mut kept.minutes, call.tool(), at_ms / 60_000, call.message);
        kept.seq += 1;
        let seq = kept.seq;
        let at = usize::try_from((seq - 1) % self.capacity as u64).unwrap_or(0);
        if at == kept.ring.len() {
            kept.ring.push(CallRecord::empty());
        }
        kept.ring[at].fill(seq, at_ms, call);
    }

    /// The recorded calls, newest first.
    pub fn calls(&self) -> Vec<CallRecord> {
        let kept = self.lock();
        let oldest = kept.seq.saturating_sub(kept.ring.len() as u64) + 1;
        (oldest..=kept.seq).rev().filter_map(|seq| kept.slot(seq, self.capacity)).cloned().collect()
    }

    /// One call by its `seq`, while it is still kept.
    pub fn call(&self, seq: u64) -> Option<CallRecord> {
        self.lock().slot(seq, self.capacity).cloned()
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

/// `to` becomes at most `MAX_TEXT` bytes of `text` (cut at a character boundary, marked with `…`), in the room
/// `to` already has.
fn copy_cut(to: &mut String, text: &str) {
    let kept = super::truncate(text, MAX_TEXT);
    to.clear();
    to.push_str(kept);
    if kept.len() < text.len() {
        to.push('…');
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
            parts: Vec::new(),
            blocks: Vec::new(),
        }
    }

    fn answered<'a>(call: &'a ToolCall, m: &'a ToolMessage) -> Answered<'a> {
        Answered { call, tenant: "", user_id: "u", message: m, trace_id: TraceId::INVALID }
    }

    #[test]
    fn keeps_the_newest_calls_and_counts_the_hour_per_tool() {
        let recent = Recent::new(2);
        let call = ToolCall { id: "c".into(), name: "t".into(), arguments: "x".repeat(MAX_TEXT + 10) };
        recent.record(&answered(&call, &message("t", None, &["json_syntax"])));
        recent.record(&answered(&call, &message("t", Some(ErrorKind::InvalidArguments), &[])));
        recent.record(&answered(&call, &message("s", None, &[])));
        let calls = recent.calls();
        assert_eq!(calls.iter().map(|c| c.seq).collect::<Vec<_>>(), [3, 2]);
        assert!(calls[0].original.ends_with('…') && calls[0].original.len() == MAX_TEXT + '…'.len_utf8());
        assert!(recent.call(1).is_none() && recent.call(2).is_some() && recent.call(4).is_none());
        let hour = recent.last_hour(unix_ms());
        assert_eq!(hour["t"][0].calls, 2);
        assert_eq!(hour["t"][0].failures["INVALID_ARGUMENTS"], 1);
        assert_eq!(hour["t"][0].repairs["json_syntax"], 1);
        assert!(recent.last_hour(unix_ms() + 61 * 60_000).is_empty(), "an hour later, nothing is left");
    }

    #[test]
    fn a_slot_written_again_keeps_nothing_of_the_call_before() {
        let recent = Recent::new(3);
        let long = ToolCall { id: "long-id".into(), name: "t".into(), arguments: "{\"a\": 123456789}".into() };
        let short = ToolCall { id: "s".into(), name: "u".into(), arguments: "{}".into() };
        recent.record(&answered(&long, &message("t", Some(ErrorKind::Timeout), &["json_syntax", "alias"])));
        for _ in 0..9 {
            recent.record(&answered(&short, &message("", None, &[])));
        }
        let calls = recent.calls();
        assert_eq!(calls.iter().map(|c| c.seq).collect::<Vec<_>>(), [10, 9, 8], "newest first, 3 kept");
        let first_slot_again = recent.call(10).unwrap();
        assert_eq!(first_slot_again.call_id, "s");
        assert_eq!(first_slot_again.tool, "u", "the name as called, the message naming no tool");
        assert_eq!((first_slot_again.original.as_str(), first_slot_again.kind), ("{}", None));
        assert!(first_slot_again.repairs.is_empty());
        assert!(recent.call(7).is_none() && recent.call(0).is_none());
    }
}
