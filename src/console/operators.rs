//! The operators' pages: the recent calls (filterable, each in full) and the last hour per tool, drawn as small
//! server-rendered SVG charts. Both read the telemetry's memory of calls, kept while the console is on.

use super::Console;
use super::session::Session;
use super::views::{User, pretty};
use crate::pipeline::{ErrorKind, Repair};
use crate::review::unix_ms;
use crate::telemetry::recent::{CallRecord, MINUTES, Minute};
use crate::telemetry::{kind_name, status_name};
use askama::Template;
use axum::extract::{Extension, Query, State};
use axum::response::Response;
use http::StatusCode;
use opentelemetry::trace::TraceId;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Template)]
#[template(path = "console/calls.html")]
pub struct CallsPage {
    pub user: Option<User>,
    pub filter: Filter,
    pub tools: Vec<String>,
    pub calls: Vec<CallRow>,
}

#[derive(Template)]
#[template(path = "console/call.html")]
pub struct CallPage {
    pub user: Option<User>,
    pub call: CallRow,
    pub original: String,
    pub repairs: Vec<Repair>,
    pub effective: String,
    /// What `effective` was to the tool, and a note on whether the tool ran.
    pub effective_heading: &'static str,
    pub effective_note: &'static str,
    pub content: String,
    pub trace_id: String,
}

/// How the call page names the arguments the gateway prepared, by how the call ended: a call stopped before its
/// backend never reached the tool.
fn effective_heading(kind: Option<ErrorKind>) -> (&'static str, &'static str) {
    match kind {
        None | Some(ErrorKind::ToolError | ErrorKind::Timeout) => ("What the tool received", ""),
        Some(ErrorKind::Rejected) => ("What the reviewer rejected", "The tool never ran."),
        Some(ErrorKind::Unavailable | ErrorKind::Internal) => {
            ("What the gateway sent to the tool", "It may not have reached the tool.")
        }
        Some(_) => ("What the tool would have received", "The gateway stopped the call before the tool: it never ran."),
    }
}

#[derive(Template)]
#[template(path = "console/overview.html")]
pub struct OverviewPage {
    pub user: Option<User>,
    pub tools: Vec<ToolHour>,
}

/// The calls page's filters; empty is any.
#[derive(Debug, Default, Deserialize)]
pub struct Filter {
    #[serde(default)]
    pub tool: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub kind: String,
}

impl Filter {
    fn keeps(&self, call: &CallRow) -> bool {
        (self.tool.is_empty() || call.tool == self.tool)
            && (self.status.is_empty() || call.status == self.status)
            && (self.kind.is_empty() || call.kind == self.kind)
    }
}

pub struct CallRow {
    pub seq: u64,
    pub when: String,
    pub call_id: String,
    pub tool: String,
    pub tenant: String,
    pub user_id: String,
    pub status: &'static str,
    pub kind: &'static str,
    pub repairs: usize,
    pub duration: String,
}

impl From<&CallRecord> for CallRow {
    fn from(c: &CallRecord) -> Self {
        Self {
            seq: c.seq,
            when: super::views::utc(c.at_ms),
            call_id: c.call_id.clone(),
            tool: c.tool.clone(),
            tenant: c.tenant.clone(),
            user_id: c.user_id.clone(),
            status: status_name(c.status),
            kind: c.kind.map(kind_name).unwrap_or_default(),
            repairs: c.repairs.len(),
            duration: format!("{:.1} ms", c.duration_us as f64 / 1000.0),
        }
    }
}

/// One tool's hour: totals, a bar per minute (calls, the failed part drawn over it), and a bar per failure kind
/// and per repair rule.
pub struct ToolHour {
    pub tool: String,
    pub calls: u64,
    pub failures: Vec<Count>,
    pub repairs: Vec<Count>,
    pub bars: Vec<Bar>,
    /// The calls chart's vertical scale: the busiest minute's calls, at the top.
    pub peak: u64,
    /// The time axis: a label every quarter hour, in UTC.
    pub ticks: Vec<Tick>,
    /// The count charts' scales: the longest bar's count.
    pub failures_peak: u64,
    pub repairs_peak: u64,
}

/// A label on the time axis, at `x` in the bars' coordinates.
pub struct Tick {
    pub x: u64,
    pub label: String,
}

/// One row of a horizontal bar chart: a name, its count, and its bar's place and length (the chart is 600 wide,
/// `COUNT_ROW_H` a row).
pub struct Count {
    pub name: String,
    pub n: u64,
    pub y: u64,
    pub width: u64,
}

/// A count chart's row height, and the longest bar (after the names' column).
const COUNT_ROW_H: u64 = 20;
const COUNT_BAR_MAX: u64 = 360;

impl ToolHour {
    /// The heights of the failures' and the repairs' charts, their scale's row below the bars included.
    pub fn failures_height(&self) -> u64 {
        (self.failures.len() as u64 + 1) * COUNT_ROW_H
    }

    pub fn repairs_height(&self) -> u64 {
        (self.repairs.len() as u64 + 1) * COUNT_ROW_H
    }
}

/// `map`'s names by count, most first, as chart rows.
fn counts(map: BTreeMap<String, u64>) -> Vec<Count> {
    let mut v: Vec<_> = map.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let peak = v.first().map_or(1, |(_, n)| (*n).max(1));
    v.into_iter()
        .enumerate()
        .map(|(i, (name, n))| Count { name, n, y: i as u64 * COUNT_ROW_H, width: (n * COUNT_BAR_MAX / peak).max(1) })
        .collect()
}

/// A minute's bar in the chart's coordinates (the chart is 600 × 80).
pub struct Bar {
    pub x: u64,
    pub calls_y: u64,
    pub calls_h: u64,
    pub failed_y: u64,
    pub failed_h: u64,
    pub title: String,
}

const CHART_H: u64 = 80;
const BAR_W: u64 = 10;

fn hour(tool: String, minutes: &[Minute], now_minute: u64) -> ToolHour {
    let (mut failures, mut repairs) = (BTreeMap::<String, u64>::new(), BTreeMap::<String, u64>::new());
    for m in minutes {
        m.failures.iter().for_each(|(k, n)| *failures.entry((*k).to_owned()).or_default() += n);
        m.repairs.iter().for_each(|(r, n)| *repairs.entry(r.clone()).or_default() += n);
    }
    let peak = minutes.iter().map(|m| m.calls).max().unwrap_or(1).max(1);
    let first = now_minute + 1 - MINUTES as u64;
    let ticks = (first..=now_minute + 1)
        .filter(|m| m % 15 == 0)
        .map(|m| Tick { x: (m - first) * BAR_W, label: super::views::utc(m * 60_000)[11..16].to_owned() })
        .collect();
    let bars = minutes
        .iter()
        .map(|m| {
            let failed: u64 = m.failures.values().sum();
            let (calls_h, failed_h) = (m.calls * CHART_H / peak, failed * CHART_H / peak);
            let ago = now_minute - m.minute;
            Bar {
                x: (m.minute - first) * BAR_W,
                calls_y: CHART_H - calls_h,
                calls_h,
                failed_y: CHART_H - failed_h,
                failed_h,
                title: format!("{ago} min ago: {} calls, {failed} failed", m.calls),
            }
        })
        .collect();
    let (failures, repairs) = (counts(failures), counts(repairs));
    ToolHour {
        tool,
        calls: minutes.iter().map(|m| m.calls).sum(),
        failures_peak: failures.first().map_or(0, |c| c.n),
        repairs_peak: repairs.first().map_or(0, |c| c.n),
        failures,
        repairs,
        bars,
        peak,
        ticks,
    }
}

type Shared = State<Arc<Console>>;

pub async fn calls(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Query(filter): Query<Filter>,
) -> Response {
    let recorded = console.core.telemetry.recent().map(|r| r.calls()).unwrap_or_default();
    let all: Vec<CallRow> = recorded.iter().map(CallRow::from).collect();
    let mut tools: Vec<String> = all.iter().map(|c| c.tool.clone()).collect();
    tools.sort();
    tools.dedup();
    let calls = all.into_iter().filter(|c| filter.keeps(c)).collect();
    super::pages::page(StatusCode::OK, &CallsPage { user: Some(User::from(&session)), filter, tools, calls })
}

#[derive(Deserialize)]
pub struct Seq {
    seq: u64,
}

pub async fn call(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Query(which): Query<Seq>,
) -> Response {
    let Some(c) = console.core.telemetry.recent().and_then(|r| r.call(which.seq)) else {
        let text = "That call is no longer among the recent calls kept.".to_owned();
        return super::pages::message(StatusCode::NOT_FOUND, &session, "Not found", text);
    };
    let (effective_heading, effective_note) = effective_heading(c.kind);
    let view = CallPage {
        user: Some(User::from(&session)),
        call: CallRow::from(&c),
        original: pretty(&c.original),
        repairs: c.repairs.clone(),
        effective: pretty(&c.effective),
        effective_heading,
        effective_note,
        content: c.content.clone(),
        trace_id: if c.trace_id == TraceId::INVALID { String::new() } else { c.trace_id.to_string() },
    };
    super::pages::page(StatusCode::OK, &view)
}

pub async fn overview(State(console): Shared, Extension(session): Extension<Session>) -> Response {
    let now = unix_ms();
    let hours = console.core.telemetry.recent().map(|r| r.last_hour(now)).unwrap_or_default();
    let tools = hours.into_iter().map(|(tool, minutes)| hour(tool, &minutes, now / 60_000)).collect();
    super::pages::page(StatusCode::OK, &OverviewPage { user: Some(User::from(&session)), tools })
}
