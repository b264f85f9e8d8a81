//! Writes the generated seed corpora, `$TOOLGATE_FUZZ_SEEDS/<target>/`, from tests/data: the corpus's tools and
//! argument texts (BFCL calls, the suite's test data, json_repair's malformed inputs) in each target's input
//! layout. Built by `cargo fuzz build` like the targets, so it reuses their instrumented build instead of a second
//! one of the whole crate; it writes and exits before libFuzzer starts (fuzz/seeds.sh runs it).

#![no_main]

use libfuzzer_sys::fuzz_target;

use prost::Message;
use serde_json::Value;
use std::fs;
use std::path::Path;
use toolgate::pb::v1 as pb;
use toolgate_fuzz::{Case, cases, data_dir, hostile_cases, layout};

/// At most this many argument texts per schema: the fuzzer mutates them, it does not need them all.
const PER_CASE: usize = 3;

fuzz_target!(init: write_seeds_and_exit(), |_data: &[u8]| {});

fn write_seeds_and_exit() {
    let out = std::env::var("TOOLGATE_FUZZ_SEEDS").expect("set TOOLGATE_FUZZ_SEEDS to the corpus dir");
    let cases = cases();
    let repair_inputs = json_repair_inputs();
    let pipeline = pipeline_seeds(&cases, &repair_inputs);
    let spec = spec_seeds(&cases);
    let execute = execute_seeds(&cases);
    let texts = text_seeds();
    for (target, seeds) in [("pipeline", pipeline), ("spec", spec), ("execute_decode", execute), ("text_calls", texts)]
    {
        let dir = Path::new(&out).join(target);
        fs::create_dir_all(&dir).expect("the corpus dir is writable");
        for (i, seed) in seeds.iter().enumerate() {
            fs::write(dir.join(format!("seed-{i:05}")), seed).expect("a seed is written");
        }
        println!("{target}: {} seeds from {} schemas", seeds.len(), cases.len());
    }
    std::process::exit(0)
}

/// The answers models wrote as text (tests/data/bfcl/text-dev.jsonl), every fourth: each envelope and wrapper.
fn text_seeds() -> Vec<Vec<u8>> {
    let text = fs::read_to_string(data_dir().join("bfcl/text-dev.jsonl")).unwrap_or_default();
    let lines = text.lines().step_by(4).filter_map(|l| serde_json::from_str::<Value>(l).ok());
    lines.filter_map(|l| l["text"].as_str().map(|t| t.as_bytes().to_vec())).collect()
}

fn json_repair_inputs() -> Vec<String> {
    let text = fs::read_to_string(data_dir().join("json_repair/cases.jsonl")).unwrap_or_default();
    let lines = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok());
    lines.filter_map(|l| l["input"].as_str().map(str::to_owned)).collect()
}

fn pipeline_seeds(cases: &[Case], repair_inputs: &[String]) -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        for (j, example) in case.examples.iter().take(PER_CASE).enumerate() {
            let flags = if j == 1 { layout::INJECT } else { 0 };
            seeds.push(layout::encode(i, flags, None, example.as_bytes()));
        }
    }
    // The lenient reader's cases against a BFCL tool, and names the resolver repairs or refuses.
    let bfcl = cases.iter().position(|c| !c.name.starts_with("suite_")).unwrap_or(0);
    for (k, input) in repair_inputs.iter().enumerate() {
        seeds.push(layout::encode(bfcl + k % 8, 0, None, input.as_bytes()));
    }
    let name = &cases[bfcl].name;
    for called in [format!("functions.{name}"), format!("{name}<|call|>"), name.to_uppercase(), format!("{name}x")] {
        seeds.push(layout::encode(bfcl, 0, Some(called.as_bytes()), b"{}"));
    }
    seeds
}

fn spec_seeds(cases: &[Case]) -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    let example = fs::read(data_dir().join("../../examples/tools/get_weather.json")).unwrap_or_default();
    seeds.push([&[0u8][..], &example].concat());
    // The hostile schemas every one, those refused when compiled too.
    let hostile = hostile_cases();
    let every_third = cases.iter().enumerate().step_by(3);
    for (i, case) in every_third.chain(hostile.iter().enumerate()) {
        let mut spec = case.spec(i % 2 == 1);
        spec.backend = Some(toolgate::registry::Backend::Grpc { target: "http://127.0.0.1:50051".into() });
        let value = serde_json::to_value(&spec).expect("a spec serializes");
        seeds.push([&[0u8][..], value.to_string().as_bytes()].concat());
        if let Ok(text) = toml::to_string(&value) {
            seeds.push([&[1u8][..], text.as_bytes()].concat());
        }
        seeds.push([&[2u8][..], &pb::ToolSpec::from(&spec).encode_to_vec()].concat());
    }
    seeds
}

fn execute_seeds(cases: &[Case]) -> Vec<Vec<u8>> {
    let bfcl = cases.iter().filter(|c| !c.name.starts_with("suite_")).take(24);
    let mut seeds = Vec::new();
    for (i, case) in bfcl.enumerate() {
        for arguments in case.examples.iter().take(2) {
            let call = pb::ToolCall { id: format!("call_{i}"), name: case.name.clone(), arguments: arguments.clone() };
            let context = pb::CallContext { user_id: "u".into(), session_id: "s".into(), ..Default::default() };
            let request = pb::ExecuteRequest { call: Some(call), context: Some(context), review_mode: 0 };
            let body = toolgate::wire::frame::encode(&request);
            // Default limit, `grpc-timeout: 5S`, one cut in the middle of the body.
            seeds.push([&[3u8, 2, b'5', b'S', 1, 128][..], &body].concat());
        }
    }
    seeds
}
