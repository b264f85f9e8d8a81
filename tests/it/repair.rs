//! The repair stage, table-driven: one line per rule, and one per refusal the rules must never cross.

use serde_json::{Value, json};
use std::sync::Arc;
use toolgate::pipeline::{
    CallContext, CallError, PipelineSettings, RepairSettings, ToolCall, prepare, repair::read_lenient,
};
use toolgate::registry::{Catalog, CompiledTool, SchemaDocuments, ToolSpec};

fn weather_schema() -> Value {
    json!({"type": "object", "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "ratio": {"type": "number"},
        "alerts": {"type": "boolean"},
        "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "window": {"type": "object", "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
                   "required": ["from"], "additionalProperties": false},
        "zip": {"type": "string"},
        "max_price": {"type": "number"},
        "_class": {"type": "string"},
        "note": {"type": "string"},
        "level": {"anyOf": [{"$ref": "#/$defs/level"}, {"type": "null"}]}
    }, "required": ["city"], "additionalProperties": false,
    "$defs": {"level": {"type": "integer"}}})
}

fn tool(name: &str, schema: Value, edit: impl FnOnce(&mut ToolSpec)) -> Arc<CompiledTool> {
    let mut spec = ToolSpec::offline(name, "", schema);
    edit(&mut spec);
    Arc::new(CompiledTool::compile(spec, &SchemaDocuments::default()).expect("the test schemas compile"))
}

fn catalog() -> Catalog {
    let click = json!({"type": "object", "properties": {"selector": {"type": "string"}}, "required": ["selector"]});
    let report = json!({"type": "object", "properties": {"title": {"type": "string"},
        "format": {"type": "string", "enum": ["pdf", "html"], "default": "pdf"}}, "required": ["title", "format"]});
    let pick = json!({"type": "object", "properties": {"mode": {"enum": ["a-b", "a_b", "c"]},
        "zip": {"type": "integer"}}});
    Catalog::new(vec![
        tool("weather", weather_schema(), |_| {}),
        tool("weather_lax", weather_schema(), |s| s.repair.drop_unknown = true),
        tool("weather_strict", weather_schema(), |s| s.repair.enabled = Some(false)),
        tool("click", click, |s| {
            s.repair.aliases.insert("element".into(), "selector".into());
        }),
        tool("report", report, |_| {}),
        tool("pick", pick, |_| {}),
    ])
}

/// What a call should come to: the arguments the tool gets and the rules that got them there, or an error.
#[derive(Debug, PartialEq)]
enum Outcome {
    Runs(Value, Vec<String>),
    Refused(&'static str),
}
use Outcome::{Refused, Runs};

fn runs(args: Value, rules: &[&str]) -> Outcome {
    Runs(args, rules.iter().map(|r| r.to_string()).collect())
}

fn run(catalog: &Catalog, options: &PipelineSettings, name: &str, arguments: &str) -> Outcome {
    let call = ToolCall { id: "1".into(), name: name.into(), arguments: arguments.into() };
    match prepare(catalog, &call, &CallContext::default(), options) {
        Ok(p) => {
            assert_eq!(serde_json::from_str::<Value>(&p.arguments_text).unwrap(), p.arguments, "text and value agree");
            assert!(p.tool.validator.get().is_valid(&p.arguments), "what runs validates");
            Runs(p.arguments, p.repairs.into_iter().map(|r| r.rule).collect())
        }
        Err(rejected) => Refused(match rejected.error {
            CallError::NotFound { .. } => "not_found",
            CallError::Malformed(_) => "malformed",
            CallError::Invalid(_) => "invalid",
            other => panic!("{other:?}"),
        }),
    }
}

#[test]
fn one_line_per_rule() {
    let (cat, opts) = (catalog(), PipelineSettings::default());
    let table: Vec<(&str, &str, Outcome)> = vec![
        (
            "weather",
            r#"{"city": "Oslo", "days": "5"}"#,
            runs(json!({"city": "Oslo", "days": 5}), &["string_to_integer"]),
        ),
        (
            "weather",
            r#"{"city": "Oslo", "days": "5.0"}"#,
            runs(json!({"city": "Oslo", "days": 5}), &["string_to_integer"]),
        ),
        (
            "weather",
            r#"{"city": "Oslo", "ratio": "2.5"}"#,
            runs(json!({"city": "Oslo", "ratio": 2.5}), &["string_to_number"]),
        ),
        (
            "weather",
            r#"{"city": "Oslo", "alerts": "TRUE"}"#,
            runs(json!({"city": "Oslo", "alerts": true}), &["string_to_boolean"]),
        ),
        (
            "weather",
            r#"{"city": "Oslo", "tags": "['Apple', 'Microsoft']"}"#,
            runs(json!({"city": "Oslo", "tags": ["Apple", "Microsoft"]}), &["string_to_json"]),
        ),
        (
            "weather",
            r#"{"city": "Oslo", "ids": "[101, 202]"}"#,
            runs(json!({"city": "Oslo", "ids": [101, 202]}), &["string_to_json"]),
        ),
        (
            "weather",
            r#"{"city": "Oslo", "window": "{\"from\": \"mon\"}"}"#,
            runs(json!({"city": "Oslo", "window": {"from": "mon"}}), &["string_to_json"]),
        ),
        (
            "weather",
            r#"{"city": "Oslo", "ids": "['1', '2']"}"#,
            runs(json!({"city": "Oslo", "ids": [1, 2]}), &["string_to_json", "string_to_integer", "string_to_integer"]),
        ),
        (
            "weather",
            r#"{"city": "Oslo", "tags": "rain"}"#,
            runs(json!({"city": "Oslo", "tags": ["rain"]}), &["scalar_to_array"]),
        ),
        ("weather", r#"{"city": ["Oslo"]}"#, runs(json!({"city": "Oslo"}), &["array_to_scalar"])),
        (
            "weather",
            r#"{"city": "Oslo", "days": 5.0, "alerts": "true"}"#,
            runs(json!({"city": "Oslo", "days": 5, "alerts": true}), &["float_to_integer", "string_to_boolean"]),
        ),
        (
            "weather",
            r#"{"city": "Oslo", "note": 42}"#,
            runs(json!({"city": "Oslo", "note": "42"}), &["integer_to_string"]),
        ),
        ("weather", r#"{"city": "Oslo", "note": null}"#, runs(json!({"city": "Oslo"}), &["null_dropped"])),
        (
            "weather",
            r#"{"city": "Oslo", "level": "3"}"#,
            runs(json!({"city": "Oslo", "level": 3}), &["string_to_integer"]),
        ),
        (
            "weather",
            r#"{"city": "Oslo", "units": "Celsius"}"#,
            runs(json!({"city": "Oslo", "units": "celsius"}), &["enum_matched"]),
        ),
        ("weather", r#"{"Location": "x", "City": "Oslo"}"#, Refused("invalid")),
        ("weather", r#"{"City": "Oslo"}"#, runs(json!({"city": "Oslo"}), &["key_renamed"])),
        (
            "weather",
            r#"{"city": "Oslo", "maxPrice": 3}"#,
            runs(json!({"city": "Oslo", "max_price": 3}), &["key_renamed"]),
        ),
        (
            "weather",
            r#"{"city": "Oslo", "class": "x"}"#,
            runs(json!({"city": "Oslo", "_class": "x"}), &["key_renamed"]),
        ),
        ("click", r#"{"element": ".b"}"#, runs(json!({"selector": ".b"}), &["alias"])),
        ("weather_lax", r#"{"city": "Oslo", "extra": 1}"#, runs(json!({"city": "Oslo"}), &["unknown_dropped"])),
        ("report", r#"{"title": "Q3"}"#, runs(json!({"title": "Q3", "format": "pdf"}), &["required_default"])),
        ("weather", r#"{"arguments": {"city": "Oslo"}}"#, runs(json!({"city": "Oslo"}), &["wrapper_unwrapped"])),
        (
            "weather",
            r#"{"params": {"city": "Oslo", "days": "2"}}"#,
            runs(json!({"city": "Oslo", "days": 2}), &["wrapper_unwrapped", "string_to_integer"]),
        ),
        (
            "weather",
            r#"{"arguments": "{\"city\": \"Oslo\"}"}"#,
            runs(json!({"city": "Oslo"}), &["wrapper_unwrapped", "double_encoded"]),
        ),
        ("click", r#""myCoolButton""#, runs(json!({"selector": "myCoolButton"}), &["bare_value_wrapped"])),
        ("weather", r#""{\"city\": \"Oslo\"}""#, runs(json!({"city": "Oslo"}), &["double_encoded"])),
        ("weather", "```json\n{\"city\": \"Oslo\"}\n```", runs(json!({"city": "Oslo"}), &["code_fence"])),
        ("weather", r#"{"city": "Oslo"}<|call|>"#, runs(json!({"city": "Oslo"}), &["template_residue"])),
        (
            "weather",
            "{'city': 'Oslo', 'alerts': True, 'note': None,}",
            runs(json!({"city": "Oslo", "alerts": true}), &["json_syntax", "null_dropped"]),
        ),
        ("weather", "{city: 'Oslo' /* home */}", runs(json!({"city": "Oslo"}), &["json_syntax"])),
        ("functions.weather", r#"{"city": "Oslo"}"#, runs(json!({"city": "Oslo"}), &["tool_name_prefix"])),
        (
            "default_api.Weather",
            r#"{"city": "Oslo"}"#,
            runs(json!({"city": "Oslo"}), &["tool_name_prefix", "tool_name_normalized"]),
        ),
        ("weather<|channel|>commentary", r#"{"city": "Oslo"}"#, runs(json!({"city": "Oslo"}), &["tool_name_residue"])),
        ("WEATHER", r#"{"city": "Oslo"}"#, runs(json!({"city": "Oslo"}), &["tool_name_normalized"])),
    ];
    check(&cat, &opts, table);
}

#[test]
fn one_line_per_refusal() {
    let (cat, opts) = (catalog(), PipelineSettings::default());
    let table: Vec<(&str, &str, Outcome)> = vec![
        ("weather", r#"{"city": "Oslo", "days": "two"}"#, Refused("invalid")),
        ("weather", r#"{"city": "Oslo", "days": "2.5"}"#, Refused("invalid")),
        ("weather", r#"{"city": "Oslo", "days": 2.5}"#, Refused("invalid")),
        ("weather", r#"{"city": "Oslo", "units": "C"}"#, Refused("invalid")),
        ("weather", r#"{"city": "Oslo", "days": "4k"}"#, Refused("invalid")),
        ("pick", r#"{"zip": "02134"}"#, Refused("invalid")),
        ("pick", r#"{"mode": "AB"}"#, Refused("invalid")),
        ("weather", r#"{"city": "Oslo", "note": "tr"#, Refused("malformed")),
        ("weather", r#"{"city": "Oslo", "tags": ["a", "b""#, Refused("malformed")),
        ("weather", r#"{"city": "Oslo", "days": }"#, Refused("malformed")),
        ("weather", r#"{"city": "Oslo"} and then some"#, Refused("malformed")),
        ("weather", r#"{"city": ["Oslo", "Bergen"]}"#, Refused("invalid")),
        ("weather", r#"{"city": null}"#, Refused("invalid")),
        ("weather", r#"{"city": "Oslo", "extra": 1}"#, Refused("invalid")),
        ("weather", r#"{"City": "Oslo", "CITY": "Bergen"}"#, Refused("invalid")),
        ("weather", r#"{"arguments": {"town": "Oslo"}}"#, Refused("invalid")),
        ("weather_strict", r#"{"city": "Oslo", "days": "5"}"#, Refused("invalid")),
        ("weather_strict", "{'city': 'Oslo'}", Refused("malformed")),
        // A tool that turned repair off has its name read as strictly as its arguments.
        ("WEATHER_STRICT", r#"{"city": "Oslo"}"#, Refused("not_found")),
        ("functions.weather_strict", r#"{"city": "Oslo"}"#, Refused("not_found")),
        ("weathr", r#"{"city": "Oslo"}"#, Refused("not_found")),
        ("tools.weather", r#"{"city": "Oslo"}"#, Refused("not_found")),
        // Values the model got right stay as they are, even beside a repair.
        (
            "weather",
            r#"{"city": "Oslo", "zip": "02134", "days": "3"}"#,
            runs(json!({"city": "Oslo", "zip": "02134", "days": 3}), &["string_to_integer"]),
        ),
        (
            "weather",
            r#"{"city": "Oslo", "note": "{\"a\": 1}", "days": "3"}"#,
            runs(json!({"city": "Oslo", "note": "{\"a\": 1}", "days": 3}), &["string_to_integer"]),
        ),
        (
            "weather",
            r#"{"city": "[1]", "note": "true", "days": "3"}"#,
            runs(json!({"city": "[1]", "note": "true", "days": 3}), &["string_to_integer"]),
        ),
        // Valid as received: never touched.
        ("weather", r#"{"city": "Oslo", "days": 5}"#, runs(json!({"city": "Oslo", "days": 5}), &[])),
    ];
    check(&cat, &opts, table);
}

fn check(cat: &Catalog, opts: &PipelineSettings, table: Vec<(&str, &str, Outcome)>) {
    let failures: Vec<String> = table
        .into_iter()
        .filter_map(|(name, args, want)| {
            let got = run(cat, opts, name, args);
            (got != want).then(|| format!("{name} {args}\n   want {want:?}\n    got {got:?}"))
        })
        .collect();
    assert!(failures.is_empty(), "{} line(s) failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn a_rule_turned_off_by_name_does_not_run() {
    let cat = catalog();
    let off = RepairSettings::with_disabled(true, ["string_to_integer", "tool_name_normalized"]).unwrap();
    let opts = PipelineSettings { repair: off, ..Default::default() };
    assert_eq!(run(&cat, &opts, "weather", r#"{"city": "Oslo", "days": "5"}"#), Refused("invalid"));
    assert_eq!(run(&cat, &opts, "WEATHER", r#"{"city": "Oslo"}"#), Refused("not_found"));
    let expected = runs(json!({"city": "Oslo", "alerts": true}), &["string_to_boolean"]);
    assert_eq!(run(&cat, &opts, "weather", r#"{"city": "Oslo", "alerts": "true"}"#), expected);
}

#[test]
fn a_refused_call_is_described_as_the_model_sent_it() {
    let call =
        ToolCall { id: "1".into(), name: "weather".into(), arguments: r#"{"City": "Oslo", "days": "two"}"#.into() };
    let rejected = prepare(&catalog(), &call, &CallContext::default(), &PipelineSettings::default()).unwrap_err();
    let CallError::Invalid(violations) = rejected.error else { panic!("{:?}", rejected.error) };
    let paths: Vec<_> = violations.iter().map(|v| v.instance_path.as_str()).collect();
    assert!(paths.contains(&"/days") && paths.contains(&""), "{violations:?}");
    assert!(violations.iter().any(|v| v.message.contains("'City'")), "the original key is named: {violations:?}");
    assert!(rejected.repairs.is_empty(), "no half-repair is reported: {:?}", rejected.repairs);
}

#[test]
fn each_repair_records_where_and_what() {
    let call =
        ToolCall { id: "1".into(), name: "weather".into(), arguments: r#"{"City": "Oslo", "ids": ["7"]}"#.into() };
    let prepared = prepare(&catalog(), &call, &CallContext::default(), &PipelineSettings::default()).unwrap();
    let records: Vec<_> = prepared
        .repairs
        .iter()
        .map(|r| (r.rule.as_str(), r.path.as_str(), r.before.as_str(), r.after.as_str()))
        .collect();
    assert_eq!(
        records,
        [("key_renamed", "/city", "\"City\"", "\"city\""), ("string_to_integer", "/ids/0", "\"7\"", "7")]
    );
    assert_eq!(prepared.arguments_text, r#"{"city":"Oslo","ids":[7]}"#, "effective arguments are the repaired ones");
    // integer_to_string: the record shows the model wrote a number, a JSON number before and a string after.
    let call =
        ToolCall { id: "1".into(), name: "weather".into(), arguments: r#"{"city": "Oslo", "zip": 2134}"#.into() };
    let prepared = prepare(&catalog(), &call, &CallContext::default(), &PipelineSettings::default()).unwrap();
    let record = &prepared.repairs[0];
    assert_eq!((record.rule.as_str(), record.path.as_str()), ("integer_to_string", "/zip"));
    assert_eq!(serde_json::from_str::<Value>(&record.before).unwrap(), json!(2134), "before: the number as written");
    assert_eq!(serde_json::from_str::<Value>(&record.after).unwrap(), json!("2134"));
}

#[test]
fn syntax_repair_never_completes_or_invents() {
    let read = |t: &str| read_lenient(t, 8, |_| true).map(|r| r.value).map_err(|e| e.to_string());
    assert_eq!(read("{'a': 'it\\'s', 'b': [1, 2,],}"), Ok(json!({"a": "it's", "b": [1, 2]})));
    assert_eq!(read("{'q': 'say \"hi\"'}"), Ok(json!({"q": "say \"hi\""})));
    for truncated in ["{\"a\": \"b", "{\"a\": [1, 2", "{'a': 1", "```json\n{\"a\":", "{\"a\": 1 /* x"] {
        assert!(read(truncated).unwrap_err().contains("cut off"), "{truncated:?}");
    }
    for guess in
        ["{\"a\": }", "{\"a\": 1, \"b\"}", "{\"a\": .5}", "{\"a\": 01}", "{\"a\": NaN}", "{'a': 'it's'}", "[1 2]"]
    {
        assert!(read(guess).is_err(), "{guess:?} has no single reading, yet read as {:?}", read(guess));
    }
    assert!(read(&"[".repeat(20)).unwrap_err().contains("deeper than the limit of 8"));
    assert!(read(&format!("{}1,{}", "[".repeat(9), "]".repeat(9))).unwrap_err().contains("deeper than the limit of 8"));
    assert_eq!(read(&format!("{}1,{}", "[".repeat(8), "]".repeat(8))), Ok(json!([[[[[[[[1]]]]]]]])));
}
