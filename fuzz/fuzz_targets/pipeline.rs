//! Fuzzes parse + repair + validate + inject (`pipeline::check` then `complete`) of arbitrary argument text and
//! tool names against the corpus schemas, and asserts the pipeline's promises, not only that it does not panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use toolgate::pipeline::{
    CallContext, CallError, Check, Checked, ParseLimits, PipelineSettings, RepairSettings, SplitMode, ToolCall, check,
    check_call, complete, read_json,
};
use toolgate::registry::{Catalog, CompiledTool, SchemaDocuments, compile_schema, same_name};
use toolgate_fuzz::{CTX_VALUE, Case, cases, documents, layout};

struct World {
    cases: Vec<Case>,
    documents: SchemaDocuments,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let cases = cases();
        assert!(cases.len() > 500, "the corpus under tests/data was not found: {} schemas", cases.len());
        World { cases, documents: documents() }
    })
}

/// One registered tool, with validators compiled apart from the tool's own, to check its answers against.
struct Tool {
    catalog: Catalog,
    tool: Arc<CompiledTool>,
    model: jsonschema::Validator,
    full: jsonschema::Validator,
}

thread_local! {
    static TOOLS: RefCell<HashMap<(usize, bool), Option<Arc<Tool>>>> = RefCell::new(HashMap::new());
}

fn tool(index: usize, inject: bool) -> Option<Arc<Tool>> {
    let w = world();
    let build = || {
        let tool = Arc::new(CompiledTool::compile(w.cases[index].spec(inject), &w.documents).ok()?);
        let model = compile_schema(tool.model_schema(), &w.documents).expect("the model schema compiles");
        let full = compile_schema(&tool.spec.input_schema, &w.documents).expect("the input schema compiles");
        Some(Arc::new(Tool { catalog: Catalog::new(vec![Arc::clone(&tool)]), tool, model, full }))
    };
    TOOLS.with(|t| t.borrow_mut().entry((index, inject)).or_insert_with(build).clone())
}

struct Input<'a> {
    index: usize,
    flags: u8,
    name: Option<String>,
    arguments: &'a [u8],
}

fn read(data: &[u8]) -> Option<Input<'_>> {
    let (&[a, b, flags], rest) = data.split_first_chunk::<3>()?;
    let index = usize::from(u16::from_le_bytes([a, b])) % world().cases.len();
    if flags & layout::NAME == 0 {
        return Some(Input { index, flags, name: None, arguments: rest });
    }
    let (&len, rest) = rest.split_first()?;
    let (name, arguments) = rest.split_at_checked(usize::from(len))?;
    Some(Input { index, flags, name: Some(String::from_utf8_lossy(name).into_owned()), arguments })
}

// `init` builds the corpus and its schema documents before libFuzzer times any input. Built lazily, inside the first
// input, it took more than the 10 s `-timeout` in an unoptimised build on a loaded machine.
fuzz_target!(init: { world(); }, |data: &[u8]| {
    let Some(input) = read(data) else { return };
    let inject = input.flags & layout::INJECT != 0;
    let Some(t) = tool(input.index, inject).or_else(|| tool(input.index, false)) else { return };
    let repair = if input.flags & layout::NO_REPAIR != 0 { RepairSettings::off() } else { RepairSettings::default() };
    let options = PipelineSettings { limits: ParseLimits::default(), repair, split: SplitMode::Never };
    let own_name = input.name.is_none();
    let name = input.name.unwrap_or_else(|| t.tool.spec.name.clone());
    let call = ToolCall { id: "fuzz".into(), name, arguments: String::from_utf8_lossy(input.arguments).into_owned() };
    let checked = check(&t.catalog, &call, "", &options);
    let resolved = match &checked {
        Ok(_) => true,
        Err(rejected) => rejected.tool.is_some(),
    };
    if resolved {
        assert_resolvable(&call.name, &t.tool);
    } else {
        assert!(!own_name, "the tool's own name did not resolve");
    }
    if own_name {
        assert_valid_passes_through(&t, &call, &checked, &options);
    }
    match checked {
        Ok(checked) => assert_checked(&t, &call, checked, &options),
        Err(rejected) => {
            if let CallError::Invalid(violations) = &rejected.error {
                assert!(!violations.is_empty(), "INVALID_ARGUMENTS with no violation");
                assert_split_parts_are_valid(&t, &call, &options);
            }
        }
    }
});

/// A call refused as invalid that the split rule splits becomes two or more calls, each valid against the
/// model-facing schema, and recorded as one `parallel_split` whose `after` holds one object per part.
fn assert_split_parts_are_valid(t: &Tool, call: &ToolCall, options: &PipelineSettings) {
    let always = PipelineSettings { split: SplitMode::Always, ..*options };
    let Ok(Check::Split(split)) = check_call(&t.catalog, call, "", &always) else { return };
    assert!(split.parts.len() >= 2, "a split into {} part", split.parts.len());
    for part in &split.parts {
        assert!(t.model.is_valid(&part.arguments), "an invalid part: {}", part.text);
        assert_eq!(read_json(&part.text).ok().as_ref(), Some(&part.arguments));
    }
    let record = split.repairs.last().expect("the split's record");
    assert_eq!(record.rule, "parallel_split");
    let after: Vec<Value> = serde_json::from_str(&record.after).expect("after is an array");
    assert_eq!(after.len(), split.parts.len());
}

/// A resolved name is the tool's name, its provider-safe name, or one of them after the documented repairs
/// (template residue cut, a `functions.` / `default_api.` prefix, case and separators): never a mere typo.
fn assert_resolvable(name: &str, tool: &CompiledTool) {
    let cut = name.find("<|").map_or(name, |at| name[..at].trim());
    let bare = ["functions.", "default_api."].iter().find_map(|p| cut.strip_prefix(p));
    let ok = [Some(cut), bare]
        .into_iter()
        .flatten()
        .any(|n| n == tool.spec.name || n == tool.safe_name || same_name(n, &tool.spec.name));
    assert!(ok, "{name:?} resolved to {:?}", tool.spec.name);
}

/// Arguments that are strict JSON (a key at most once in each object), within the limits, with nothing for an
/// injected parameter, and valid against the model-facing schema as sent are passed through byte for byte with no
/// repair. A pattern check that could not finish refuses them: such calls are left out.
fn assert_valid_passes_through(
    t: &Tool,
    call: &ToolCall,
    checked: &Result<Checked, toolgate::pipeline::Rejected>,
    options: &PipelineSettings,
) {
    let text = call.arguments.as_str();
    let Ok(value) = read_json(text) else { return };
    if text.len() > options.limits.max_bytes || depth(&value) >= options.limits.max_depth {
        return;
    }
    let (valid, unfinished) = toolgate::registry::within_budget(|| t.model.is_valid(&value));
    if overrides_injected(t, &value) || !valid || unfinished.is_some() {
        return;
    }
    let checked = checked.as_ref().unwrap_or_else(|r| panic!("a valid call was refused: {:?}", r.error));
    assert!(checked.repairs.is_empty(), "a valid call was repaired: {:?}", checked.repairs);
    assert_eq!(checked.text, text.trim(), "a valid call's text was rewritten");
    assert_eq!(checked.arguments, value);
}

/// Whether any key, at any depth, spells an injected parameter's name with case, spaces and punctuation
/// ignored: the gateway strips such a key wherever it stands (`$user)id` for `user_id` too), so the call is not
/// passed through untouched. A key that is not ASCII (it may fold to the name) or holds a path separator (it may
/// spell the parameter's path) counts as one too.
fn overrides_injected(t: &Tool, value: &Value) -> bool {
    let loose = |s: &str| s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect::<String>();
    let names: Vec<String> = t.tool.injections.iter().flat_map(|i| i.path.iter().map(|p| loose(p))).collect();
    fn any_key(value: &Value, hit: &dyn Fn(&str) -> bool) -> bool {
        match value {
            Value::Object(map) => map.iter().any(|(k, v)| hit(k) || any_key(v, hit)),
            Value::Array(items) => items.iter().any(|v| any_key(v, hit)),
            _ => false,
        }
    }
    any_key(value, &|key| !key.is_ascii() || key.contains(['/', '.']) || names.contains(&loose(key)))
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// What `check` lets through validates, reads back as its own text, carries nothing injected, passes through
/// unchanged when sent again, and after `complete` holds the context's value, never the model's.
fn assert_checked(t: &Tool, call: &ToolCall, checked: Checked, options: &PipelineSettings) {
    assert!(t.model.is_valid(&checked.arguments), "checked arguments do not validate: {}", checked.text);
    let reread: Value = read_json(&checked.text).expect("the checked text is JSON");
    assert_eq!(reread, checked.arguments, "the checked text is not the checked value");
    let changed = checked.text != call.arguments.trim() && !(call.arguments.trim().is_empty() && checked.text == "{}");
    assert!(!changed || !checked.repairs.is_empty(), "the text changed with no repair reported");
    for injected in &t.tool.injections {
        assert!(checked.arguments.pointer(&injected.pointer()).is_none(), "the model's {} survived", injected.param);
    }
    let again = ToolCall { name: t.tool.spec.name.clone(), arguments: checked.text.clone(), ..call.clone() };
    let second = check(&t.catalog, &again, "", options)
        .unwrap_or_else(|r| panic!("a checked call was refused when sent again: {:?}", r.error));
    assert!(second.repairs.is_empty(), "a checked call was repaired again: {:?}", second.repairs);
    assert_eq!(second.text, checked.text);
    let ctx = CallContext { user_id: CTX_VALUE.into(), session_id: "s".into(), ..CallContext::default() };
    let effective = checked.text.clone();
    let Ok(prepared) = complete(checked, &ctx) else { return };
    assert!(t.full.is_valid(&prepared.arguments), "prepared arguments do not validate: {}", prepared.arguments_text);
    assert_eq!(prepared.effective_arguments, effective);
    let reread: Value = read_json(&prepared.arguments_text).expect("the prepared text is JSON");
    assert_eq!(reread, prepared.arguments);
    for injected in &t.tool.injections {
        assert_eq!(prepared.arguments.pointer(&injected.pointer()), Some(&Value::from(CTX_VALUE)));
    }
}
