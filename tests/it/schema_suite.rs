//! Owns the JSON Schema Test Suite conformance run (draft 2020-12 and draft 7, required tests only) through
//! the registry's schema compile path, with every known failure listed and explained.
//!
//! How the suite is fed to `compile_schema`, and what that was checked to change:
//! - Remotes: every file under `remotes/` is pre-registered, verbatim, as `http://localhost:1234/<path>`, which
//!   is how the suite's README asks runners to serve them. Nothing is fetched. Remotes without `$schema` (e.g.
//!   `remotes/draft7/*.json`) are read in the dialect of the schema that refers to them, as the suite expects.
//! - Dialect: the suite expects each draft folder to be run with the implementation configured for that
//!   draft. The draft 2020-12 files carry `$schema` (three cases do not and exercise our 2020-12 default). The
//!   draft 7 files carry none, and `compile_schema` has no default-draft option, so the draft 7 run inserts
//!   `"$schema": draft-07` at the root of each object schema (boolean schemas mean the same in both drafts).
//!   Without it, 74 draft 7 tests fail (array-form `items`, `$id: "#foo"` anchors, `$ref` overriding siblings,
//!   the draft-07 metaschema `$ref`).
//! - Does the insertion change semantics? It adds one key at the root and none in subschemas, so the sibling
//!   tests (`ref overrides any sibling keywords`, `$ref prevents a sibling $id from changing the base uri`)
//!   keep their meaning. Seven draft 7 cases have a root `{"$ref": ...}`; draft 7 says siblings of `$ref` are
//!   ignored, but `$schema` selects the dialect before any keyword is read (jsonschema honours it there, and
//!   e.g. `Location-independent identifier in remote ref` only passes because it does).
//!   `$schema` never changes the base URI, so the root `$id` cases are unaffected.
//! - Metaschema `$ref`s (`http://json-schema.org/draft-07/schema#`, `https://json-schema.org/draft/2020-12/schema`)
//!   resolve from jsonschema's bundled copies; our retriever is never asked for them.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use toolgate::registry::{SchemaDocuments, compile_schema};

/// Where the vendored suite lives, relative to the crate root (see its README.md for source and licence).
const SUITE_DIR: &str = "tests/data/json-schema-test-suite";
/// The base URI the suite addresses its `remotes/` folder by; served from memory, never fetched.
const REMOTES_BASE: &str = "http://localhost:1234/";
const DRAFT7_SCHEMA: &str = "http://json-schema.org/draft-07/schema#";
/// The draft folders run, as failure-id prefixes.
const DRAFTS: [&str; 2] = ["draft2020-12/", "draft7/"];

/// Failures of the required tests, by `draft/file: case / test`, with why each one fails. Empty: with jsonschema
/// 0.60 every required test of both drafts passes. A new failure must be fixed or listed here with its reason.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

/// One draft's run: its folder under `tests/`, the `$schema` its schemas assume, and the measured test count.
struct Draft {
    folder: &'static str,
    assumed_schema: Option<&'static str>,
    expected_tests: usize,
}

struct Outcome {
    total: usize,
    failures: BTreeMap<String, String>,
}

fn suite_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(SUITE_DIR).join(rel)
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// Every `.json` file under `dir`, recursively, sorted by path.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("list {}: {e}", dir.display())) {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "json") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every file under `remotes/`, registered as `http://localhost:1234/<path under remotes/>`.
fn remote_documents() -> SchemaDocuments {
    let root = suite_path("remotes");
    let docs: HashMap<String, Value> = json_files(&root)
        .into_iter()
        .map(|path| {
            let rel = path.strip_prefix(&root).expect("under remotes").to_string_lossy().replace('\\', "/");
            (format!("{REMOTES_BASE}{rel}"), read_json(&path))
        })
        .collect();
    assert!(docs.len() > 50, "remotes not found under {}", root.display());
    SchemaDocuments::new(docs)
}

/// Gives an object schema without `$schema` the draft its folder assumes; boolean schemas stay as they are.
fn with_assumed_draft(schema: &Value, assumed: Option<&str>) -> Value {
    let mut schema = schema.clone();
    if let (Some(uri), Value::Object(map)) = (assumed, &mut schema) {
        map.entry("$schema").or_insert_with(|| Value::String(uri.to_owned()));
    }
    schema
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_else(|| panic!("missing {key:?} in {value}"))
}

/// Runs one test case (one schema, several instances), recording each failing test under `prefix / test`.
fn run_case(case: &Value, prefix: &str, draft: &Draft, docs: &SchemaDocuments, outcome: &mut Outcome) {
    let schema = with_assumed_draft(&case["schema"], draft.assumed_schema);
    let compiled = compile_schema(&schema, docs);
    for test in case["tests"].as_array().expect("tests array") {
        outcome.total += 1;
        let id = format!("{prefix} / {}", text(test, "description"));
        let expected = test["valid"].as_bool().expect("valid flag");
        let reason = match &compiled {
            Err(err) => format!("compile failed: {err}"),
            Ok(validator) if validator.is_valid(&test["data"]) != expected => format!("expected valid={expected}"),
            Ok(_) => continue,
        };
        outcome.failures.insert(id, reason);
    }
}

fn run_draft(draft: &Draft) -> Outcome {
    let docs = remote_documents();
    let root = suite_path(&format!("tests/{}", draft.folder));
    let mut outcome = Outcome { total: 0, failures: BTreeMap::new() };
    for path in fs::read_dir(&root).unwrap_or_else(|e| panic!("list {}: {e}", root.display())) {
        let path = path.expect("dir entry").path();
        if path.is_dir() {
            continue; // `optional/` is not vendored, and would not be run.
        }
        let file = path.file_name().expect("file name").to_string_lossy().into_owned();
        for case in read_json(&path).as_array().expect("array of cases") {
            let prefix = format!("{}/{file}: {}", draft.folder, text(case, "description"));
            run_case(case, &prefix, draft, &docs, &mut outcome);
        }
    }
    outcome
}

/// Runs a draft and checks it against the known failures, the measured test count and a 95% floor.
fn check_draft(draft: &Draft) {
    let stray: Vec<_> = KNOWN_FAILURES.iter().filter(|(id, _)| !DRAFTS.iter().any(|d| id.starts_with(d))).collect();
    assert!(stray.is_empty(), "KNOWN_FAILURES ids must start with one of {DRAFTS:?}: {stray:#?}");
    let outcome = run_draft(draft);
    let passed = outcome.total - outcome.failures.len();
    println!("{}: {passed}/{} passed", draft.folder, outcome.total);
    let prefix = format!("{}/", draft.folder);
    let known: BTreeMap<&str, &str> =
        KNOWN_FAILURES.iter().copied().filter(|(id, _)| id.starts_with(&prefix)).collect();
    for (id, reason) in &outcome.failures {
        println!("  FAIL {id}: {reason} (known: {})", known.get(id.as_str()).unwrap_or(&"NO"));
    }
    let known: BTreeSet<&str> = known.into_keys().collect();
    let actual: BTreeSet<&str> = outcome.failures.keys().map(String::as_str).collect();
    let new: Vec<_> = actual.difference(&known).collect();
    let fixed: Vec<_> = known.difference(&actual).collect();
    assert!(new.is_empty(), "new failures, fix them or explain them in KNOWN_FAILURES: {new:#?}");
    assert!(fixed.is_empty(), "these now pass, remove them from KNOWN_FAILURES: {fixed:#?}");
    // The exact count, so the run cannot pass by silently running fewer (or no) tests.
    assert_eq!(outcome.total, draft.expected_tests, "{}: number of tests run changed", draft.folder);
    assert!(passed * 100 >= outcome.total * 95, "{}: under 95% pass", draft.folder);
}

#[test]
fn draft2020_12() {
    check_draft(&Draft { folder: "draft2020-12", assumed_schema: None, expected_tests: 1299 });
}

#[test]
fn draft7() {
    check_draft(&Draft { folder: "draft7", assumed_schema: Some(DRAFT7_SCHEMA), expected_tests: 927 });
}
