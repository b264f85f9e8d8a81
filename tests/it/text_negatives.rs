//! The negative corpus (`tests/data/text-negatives/`): real texts that name offered tools but make no call,
//! labelled by hand. Read in every format, none may give a call; each reading that shows a call says why.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use toolgate::pipeline::{Envelope, RepairSettings, TextFormat, calls_from_text};
use toolgate::registry::{Catalog, CompiledTool, SchemaDocuments, ToolSpec};

/// Every labelled text of the corpus: `(file, record)`. The `labels*.jsonl` files are the readers' notes, not texts.
fn corpus() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/text-negatives");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("labels")))
        .collect();
    files.sort();
    let mut records = Vec::new();
    for file in files {
        let name = file.file_name().expect("a file name").to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            records.push((name.clone(), serde_json::from_str(line).unwrap_or_else(|e| panic!("{name}: {e}"))));
        }
    }
    records
}

fn catalog(record: &Value) -> Catalog {
    let documents = SchemaDocuments::default();
    let tools = record["tools"].as_array().expect("tools").iter().map(|tool| {
        let name = tool["name"].as_str().expect("a tool's name");
        let spec = ToolSpec::offline(name, tool["description"].as_str().unwrap_or(""), tool["input_schema"].clone());
        Arc::new(CompiledTool::compile(spec, &documents).unwrap_or_else(|e| panic!("{name}: {e:?}")))
    });
    Catalog::new(tools.collect())
}

#[test]
fn no_text_of_the_negative_corpus_gives_a_call_in_any_format() {
    let records = corpus();
    assert!(records.len() >= 300, "the corpus holds {} texts; it must hold at least 300", records.len());
    let formats = std::iter::once(TextFormat::Auto).chain(Envelope::ALL.map(TextFormat::Only));
    let formats: Vec<_> = formats.collect();
    let (mut taken, mut reasons, mut files) = (Vec::new(), BTreeMap::new(), BTreeMap::new());
    for (file, record) in &records {
        *files.entry(file.as_str()).or_insert(0) += 1;
        let catalog = catalog(record);
        let text = record["text"].as_str().expect("a text");
        for format in &formats {
            let read = calls_from_text(&catalog, "", text, *format, RepairSettings::default(), &[]);
            if !read.calls.is_empty() {
                taken.push(format!("{} as {}: {:?}", record["id"], format.name(), read.found.calls));
            }
            if *format == TextFormat::Auto {
                let reason = read.found.refusal.map_or("none shown", |r| r.reason.name());
                *reasons.entry(reason).or_insert(0) += 1;
            }
        }
    }
    eprintln!("negative corpus: {} texts {files:?}; refusals in auto: {reasons:?}", records.len());
    assert!(taken.is_empty(), "{} readings gave calls:\n{}", taken.len(), taken.join("\n"));
}
