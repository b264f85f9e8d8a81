//! The split rule (`parallel_split`), table-driven: a packed parallel call becomes the calls the model meant only
//! when nothing is guessed and the tool allows it; every other case is refused as today.

use serde_json::{Value, json};
use std::sync::Arc;
use toolgate::pipeline::{
    CallError, Check, PipelineSettings, RepairSettings, SplitMode, ToolCall, check_call, error_message,
};
use toolgate::registry::{Catalog, CompiledTool, SchemaDocuments, ToolSpec};

fn schema() -> Value {
    json!({"type": "object", "properties": {
        "city": {"type": "string"},
        "state": {"type": "string"},
        "purchase_amount": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "units": {"type": "string", "enum": ["celsius", "fahrenheit"]}
    }, "required": ["city"], "additionalProperties": false})
}

fn tool(name: &str, edit: impl FnOnce(&mut ToolSpec)) -> Arc<CompiledTool> {
    let mut spec = ToolSpec::offline(name, "", schema());
    edit(&mut spec);
    Arc::new(CompiledTool::compile(spec, &SchemaDocuments::default()).expect("the test schemas compile"))
}

fn catalog() -> Catalog {
    Catalog::new(vec![
        tool("tax", |s| s.limits.idempotent = true),
        tool("buy", |_| {}),
        tool("buy_split", |s| s.repair.split_parallel = Some(true)),
        tool("tax_nosplit", |s| {
            s.limits.idempotent = true;
            s.repair.split_parallel = Some(false);
        }),
        tool("tax_reviewed", |s| {
            s.limits.idempotent = true;
            s.review.required = true;
        }),
        tool("tax_strict", |s| {
            s.limits.idempotent = true;
            s.repair.enabled = Some(false);
        }),
    ])
}

/// What a call comes to: the parts' arguments with each part's own repair rules, one call, or a refusal whose
/// model-facing text holds the given words.
#[derive(Debug, PartialEq)]
enum Outcome {
    Split(Vec<(Value, Vec<&'static str>)>),
    One(Value),
    Refused(&'static str),
}
use Outcome::{One, Refused, Split};

fn outcome(tool: &str, arguments: Value, options: &PipelineSettings) -> Outcome {
    let call = ToolCall { id: "c1".into(), name: tool.into(), arguments: arguments.to_string() };
    match check_call(&catalog(), &call, "", options) {
        Ok(Check::Split(split)) => {
            let record = split.repairs.last().expect("a split records itself");
            assert_eq!((record.rule.as_str(), record.path.as_str()), ("parallel_split", ""));
            assert_eq!(serde_json::from_str::<Value>(&record.before).unwrap(), arguments, "before: the call as sent");
            let after: Vec<Value> = serde_json::from_str(&record.after).unwrap();
            assert_eq!(after.len(), split.parts.len(), "after: one argument object per part");
            let parts = split.parts.into_iter().map(|p| {
                let rules = p.repairs.iter().map(|r| &*r.rule.clone().leak()).collect();
                (p.arguments, rules)
            });
            Split(parts.collect())
        }
        Ok(Check::One(checked)) => One(checked.arguments),
        Err(rejected) => {
            assert!(matches!(rejected.error, CallError::Invalid(_)), "{:?}", rejected.error);
            let message = error_message(&call, tool, rejected.error, rejected.repairs, &Default::default());
            Refused(message.content.leak())
        }
    }
}

#[test]
fn packed_calls_split_only_when_nothing_is_guessed_and_the_tool_allows_it() {
    let three =
        json!({"city": ["Chicago", "Sacramento", "Portland"], "state": ["IL", "CA", "OR"], "purchase_amount": 30.45});
    let parts = |amounts: [Value; 3], rules: Vec<&'static str>| {
        let cities = [("Chicago", "IL"), ("Sacramento", "CA"), ("Portland", "OR")];
        Split(
            cities
                .iter()
                .zip(amounts)
                .map(|((city, state), amount)| {
                    (json!({"city": city, "state": state, "purchase_amount": amount}), rules.clone())
                })
                .collect(),
        )
    };
    let flat = [json!(30.45), json!(30.45), json!(30.45)];
    let one_per_city = "make 3 separate calls to";
    let cases: Vec<(&str, &str, Value, Outcome)> = vec![
        ("two arrays and a scalar", "tax", three.clone(), parts(flat.clone(), vec![])),
        (
            "every parameter packed",
            "tax",
            json!({"city": ["Chicago", "Sacramento", "Portland"], "state": ["IL", "CA", "OR"], "purchase_amount": [30.45, 52.33, 11.23]}),
            parts([json!(30.45), json!(52.33), json!(11.23)], vec![]),
        ),
        (
            "a packed element repaired as a one-value call's would be",
            "tax",
            json!({"city": ["Chicago", "Sacramento", "Portland"], "state": ["IL", "CA", "OR"], "purchase_amount": ["30.45", "52.33", "11.23"]}),
            parts([json!(30.45), json!(52.33), json!(11.23)], vec!["string_to_number"]),
        ),
        (
            "arrays of different lengths",
            "tax",
            json!({"city": ["Chicago", "Sacramento", "Portland"], "state": ["IL", "CA"]}),
            Refused(
                "Error: invalid arguments for tax:\n- city: [\"Chicago\",\"Sacramento\",\"Portland\"] is not of type \"string\"\n- state: [\"IL\",\"CA\"] is not of type \"string\"\nPlease fix your mistakes.",
            ),
        ),
        ("one array of length 1", "tax", json!({"city": ["Chicago"]}), One(json!({"city": "Chicago"}))),
        (
            "more values than one call may be split into",
            "tax",
            json!({"city": (0..=toolgate::pipeline::MAX_PARTS).map(|i| format!("c{i}")).collect::<Vec<_>>()}),
            Refused("- city: ["),
        ),
        (
            "a schema that takes an array",
            "tax",
            json!({"city": "Oslo", "tags": ["a", "b"]}),
            One(json!({"city": "Oslo", "tags": ["a", "b"]})),
        ),
        (
            "a part that fails validation",
            "tax",
            json!({"city": ["Chicago", "Sacramento"], "purchase_amount": [30.45, "lots"]}),
            Refused(
                "- city: [\"Chicago\",\"Sacramento\"] is not of type \"string\"\n- purchase_amount: [30.45,\"lots\"] is not of type \"number\"\nPlease",
            ),
        ),
        (
            "a value copied into every part is never changed",
            "tax",
            json!({"city": ["Chicago", "Sacramento"], "units": "Celsius"}),
            Refused("- units: \"Celsius\" is not one of"),
        ),
        ("a tool not safe to repeat", "buy", three.clone(), Refused(one_per_city)),
        ("a tool that needs review", "tax_reviewed", three.clone(), Refused(one_per_city)),
        ("the override on", "buy_split", three.clone(), parts(flat.clone(), vec![])),
        ("the override off", "tax_nosplit", three.clone(), Refused(one_per_city)),
        ("repair off for the tool", "tax_strict", three.clone(), Refused("- city:")),
    ];
    let options = PipelineSettings::default();
    for (what, tool, arguments, expected) in cases {
        let got = outcome(tool, arguments, &options);
        match (&got, &expected) {
            (Refused(text), Refused(words)) => assert!(text.contains(words), "{what}: {text}"),
            _ => assert_eq!(got, expected, "{what}"),
        }
    }
}

#[test]
fn the_refusal_tells_the_model_to_make_one_call_per_value() {
    let three = json!({"city": ["Chicago", "Sacramento", "Portland"], "state": ["IL", "CA", "OR"]});
    let Refused(text) = outcome("buy", three, &PipelineSettings::default()) else { panic!("buy is not split") };
    assert!(
        text.contains("- arguments: city and state each hold 3 values, but buy takes one per call: make 3 separate calls to buy, one per city"),
        "{text}"
    );
}

#[test]
fn the_rule_turns_off_by_name_and_offline_splits_wherever_it_could_apply() {
    let three = json!({"city": ["Chicago", "Sacramento", "Portland"]});
    let off = RepairSettings::with_disabled(true, ["parallel_split"]).unwrap();
    let options = PipelineSettings { repair: off, ..Default::default() };
    assert!(matches!(outcome("tax", three.clone(), &options), Refused(text) if !text.contains("separate calls")));
    let never = PipelineSettings { split: SplitMode::Never, ..Default::default() };
    assert!(matches!(outcome("tax", three.clone(), &never), Refused(_)));
    let always = PipelineSettings { split: SplitMode::Always, ..Default::default() };
    assert!(matches!(outcome("buy", three.clone(), &always), Split(parts) if parts.len() == 3));
    assert!(matches!(outcome("tax_reviewed", three, &always), Split(parts) if parts.len() == 3));
}

#[test]
fn split_parallel_true_under_review_is_refused_at_registration() {
    let mut spec = ToolSpec::offline("t", "", schema());
    spec.repair.split_parallel = Some(true);
    spec.review.required = true;
    let err = CompiledTool::compile(spec, &SchemaDocuments::default()).unwrap_err().to_string();
    assert!(err.starts_with("repair.split_parallel cannot be true for a tool whose calls need review"), "{err}");
}
