//! `toolgate calls-from-text`: offline, no server. Finds the calls in JSON-lines answers, checks each as the
//! gateway would, and prints what it would run.

use super::repair::{RecordTool, catalog_of, json_lines};
use crate::pipeline::{self, CallContext, Check, PipelineSettings, RepairSettings, SplitMode, TextFormat};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
pub struct TextCallsArgs {
    /// The format the model writes calls in: auto, hermes, qwen3_coder_xml, llama3_json, llama3_python_tag,
    /// mistral, harmony, pythonic or json. A line's own "format" field wins.
    #[arg(long, default_value = "auto", value_parser = parse_format)]
    format: TextFormat,
}

fn parse_format(name: &str) -> Result<TextFormat, String> {
    TextFormat::parse(name)
}

#[derive(Deserialize)]
struct Record {
    id: Value,
    tools: Vec<RecordTool>,
    text: String,
    #[serde(default)]
    format: Option<String>,
}

pub fn run(args: TextCallsArgs) -> Result<(), String> {
    json_lines(|record| read_record(record, args.format), |e| json!({"id": null, "calls": [], "refusal": e}))
}

/// One answer's calls, in the format `score_text_calls.py` reads, with what the gateway would say of each.
/// `calls` are the ones the gateway would run: found, repaired where needed, and valid. A call found but refused
/// (invalid arguments) is in `refused` with its reasons, as the model would be told; `found` counts both.
fn read_record(record: &Record, format: TextFormat) -> Value {
    let format = match record.format.as_deref().map(TextFormat::parse).transpose() {
        Ok(own) => own.unwrap_or(format),
        Err(e) => return json!({"id": record.id, "calls": [], "refusal": e}),
    };
    let catalog = match catalog_of(&record.tools) {
        Ok(c) => c,
        Err(e) => return json!({"id": record.id, "calls": [], "refusal": e}),
    };
    let extraction = pipeline::calls_from_text(&catalog, "", &record.text, format, RepairSettings::default(), &[]);
    // Offline, a packed call is split wherever the rule could apply, as `toolgate repair` does.
    let options = PipelineSettings { split: SplitMode::Always, ..PipelineSettings::default() };
    let (mut calls, mut refused) = (Vec::new(), Vec::new());
    for (call, from) in &extraction.calls {
        let checked = pipeline::check_call(&catalog, call, "", &options).and_then(|check| match check {
            Check::One(checked) => pipeline::complete(checked, &CallContext::default()).map(|p| vec![p]),
            Check::Split(split) => {
                split.parts.into_iter().map(|p| pipeline::complete(p, &CallContext::default())).collect()
            }
        });
        match checked {
            Ok(parts) => calls.extend(parts.into_iter().map(|p| {
                let repairs: Vec<_> = std::iter::once(from).chain(&p.repairs).collect();
                json!({"name": p.tool.spec.name, "arguments": p.arguments, "repairs": repairs})
            })),
            Err(rejected) => refused.push(json!({"name": call.name, "arguments": call.arguments,
                "error": rejected.error.to_string(), "repairs": rejected.repairs})),
        }
    }
    let found = &extraction.found;
    json!({
        "id": record.id,
        "calls": calls,
        "refused": refused,
        "found": found.calls.len(),
        "envelope": found.envelope.map(|e| e.name()),
        "wrappers": found.wrappers,
        "refusal": found.refusal.as_ref().map(|r| &r.detail),
        "refusal_reason": found.refusal.as_ref().map(|r| r.reason.name()),
        "rest": found.rest,
    })
}
