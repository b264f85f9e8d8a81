//! `toolgate repair`: offline, no server. Runs JSON-lines calls through the pure pipeline and reports each.

use crate::pipeline::{self, CallContext, CallError, Check, PipelineSettings, Rejected, SplitMode, ToolCall};
use crate::registry::{Catalog, CompiledTool, SchemaDocuments, ToolSpec};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::sync::Arc;

#[derive(Debug, clap::Args)]
pub struct RepairArgs {}

#[derive(Deserialize)]
struct Record {
    id: Value,
    tools: Vec<RecordTool>,
    call: RecordCall,
}

#[derive(Deserialize)]
pub(super) struct RecordTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub input_schema: Value,
}

#[derive(Deserialize)]
struct RecordCall {
    name: String,
    #[serde(default)]
    arguments: String,
}

pub fn run(_args: RepairArgs) -> Result<(), String> {
    json_lines(repair_record, |e| json!({"id": null, "status": "invalid", "errors": [e]}))
}

/// Answers each JSON line of stdin with one line on stdout: `answer` for a record, `unreadable` (given why) for a
/// line that is not one. Blank lines are skipped.
pub(super) fn json_lines<R: DeserializeOwned>(
    answer: impl Fn(&R) -> Value,
    unreadable: impl Fn(String) -> Value,
) -> Result<(), String> {
    let stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (n, line) in stdin.lines().enumerate() {
        let line = line.map_err(|e| format!("reading stdin: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<R>(&line) {
            Ok(record) => answer(&record),
            Err(e) => unreadable(format!("line {}: {e}", n + 1)),
        };
        writeln!(out, "{answer}").map_err(super::output_error)?;
    }
    out.flush().map_err(super::output_error)
}

/// What the pipeline says of one record, in the format of `score_repair.py`.
fn repair_record(record: &Record) -> Value {
    let catalog = match catalog_of(&record.tools) {
        Ok(c) => c,
        Err(e) => return json!({"id": record.id, "status": "invalid", "tool": null, "errors": [e]}),
    };
    let call = ToolCall { id: String::new(), name: record.call.name.clone(), arguments: record.call.arguments.clone() };
    // Offline, a call is split wherever the rule could apply, as if every tool allowed it.
    let options = PipelineSettings { split: SplitMode::Always, ..PipelineSettings::default() };
    let ctx = CallContext::default();
    let checked = pipeline::check_call(&catalog, &call, &ctx.tenant, &options);
    match checked.and_then(|check| completed(check, &ctx)) {
        Ok(Completed::One(p)) => json!({
            "id": record.id,
            "status": if p.repairs.is_empty() { "valid" } else { "repaired" },
            "tool": p.tool.spec.name,
            "arguments": p.arguments,
            "repairs": p.repairs,
            "errors": [],
            "suggestions": [],
        }),
        Ok(Completed::Split { tool, repairs, parts }) => json!({
            "id": record.id,
            "status": "repaired",
            "tool": tool,
            "calls": parts.iter().map(|p| json!({"arguments": p.arguments, "repairs": p.repairs})).collect::<Vec<_>>(),
            "repairs": repairs,
            "errors": [],
            "suggestions": [],
        }),
        Err(rejected) => refused(record, &call, rejected),
    }
}

/// A checked call with its context added: one call, or the calls a packed call was split into.
enum Completed {
    One(pipeline::Prepared),
    Split { tool: String, repairs: Vec<pipeline::Repair>, parts: Vec<pipeline::Prepared> },
}

fn completed(check: Check, ctx: &CallContext) -> Result<Completed, Rejected> {
    match check {
        Check::One(checked) => pipeline::complete(checked, ctx).map(Completed::One),
        Check::Split(split) => {
            let parts = split.parts.into_iter().map(|part| pipeline::complete(part, ctx)).collect::<Result<_, _>>()?;
            Ok(Completed::Split { tool: split.tool.spec.name.clone(), repairs: split.repairs, parts })
        }
    }
}

/// What a refused call gives: unknown_tool with the names offered, or invalid with the reasons.
fn refused(record: &Record, call: &ToolCall, rejected: Rejected) -> Value {
    let tool = rejected.tool.as_ref().map(|t| t.spec.name.clone());
    let (status, errors, suggestions) = match rejected.error {
        CallError::NotFound { suggestions } => {
            ("unknown_tool", vec![format!("tool {:?} not found", call.name)], suggestions)
        }
        CallError::Invalid(violations) => {
            ("invalid", violations.into_iter().map(|v| format!("{}: {}", v.instance_path, v.message)).collect(), vec![])
        }
        other => ("invalid", vec![other.to_string()], vec![]),
    };
    json!({"id": record.id, "status": status, "tool": tool, "repairs": rejected.repairs, "errors": errors, "suggestions": suggestions})
}

pub(super) fn catalog_of(tools: &[RecordTool]) -> Result<Catalog, String> {
    let documents = SchemaDocuments::default();
    let compiled = tools.iter().map(|t| {
        let spec = ToolSpec::offline(&t.name, &t.description, t.input_schema.clone());
        CompiledTool::compile(spec, &documents).map(Arc::new).map_err(|e| format!("tool {:?}: {e}", t.name))
    });
    Ok(Catalog::new(compiled.collect::<Result<_, _>>()?))
}
