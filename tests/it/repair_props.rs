//! Property tests of parse and repair: valid calls pass untouched, model slips are undone exactly, garbage is
//! refused, and arbitrary text never panics, hangs or grows past its bound.

use proptest::collection::vec;
use proptest::option::of;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value, json};
use std::fmt::Debug;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use toolgate::pipeline::repair::read_lenient;
use toolgate::pipeline::{
    CallContext, ParseLimits, PipelineSettings, Prepared, Rejected, RepairSettings, ToolCall, parse_arguments, prepare,
};
use toolgate::registry::{Catalog, CompiledTool, SchemaDocuments, ToolSpec};

const NAMES: [&str; 3] = ["get_weather", "create_order", "search_docs"];

/// An object schema that takes no other keys.
fn closed(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn schemas() -> [Value; 3] {
    let text = json!({"type": "string"});
    let nullable = |t: Value| json!({"anyOf": [t, {"type": "null"}]});
    let window = closed(json!({"from": text, "to": text}), &[]);
    let addon = closed(json!({"code": text, "count": {"type": "integer"}}), &["code"]);
    let item = closed(
        json!({"sku": text, "quantity": {"type": "integer", "minimum": 1}, "unit_price": {"type": "number"},
               "addons": {"type": "array", "items": addon}}),
        &["sku", "quantity"],
    );
    let lang = closed(json!({"lang": {"type": "string", "enum": ["en", "de", "fr"]}}), &[]);
    [
        closed(
            json!({"city": text, "days": {"type": "integer", "minimum": 1, "maximum": 16},
                   "units": {"type": "string", "enum": ["celsius", "fahrenheit"]}, "alerts": {"type": "boolean"},
                   "tags": {"type": "array", "items": text}, "window": window}),
            &["city"],
        ),
        closed(
            json!({"customer_name": text, "items": {"type": "array", "items": item, "minItems": 1},
                   "gift_wrap": {"type": "boolean"}, "notes": text, "metadata": {"type": "object"}}),
            &["customer_name", "items"],
        ),
        closed(
            json!({"query": text, "max_results": nullable(json!({"type": "integer", "minimum": 1})),
                   "since_date": nullable(text.clone()), "exact": {"type": "boolean"}, "filters": nullable(lang)}),
            &["query"],
        ),
    ]
}

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let compile = |(name, schema)| {
            let spec = ToolSpec::offline(name, "", schema);
            Arc::new(CompiledTool::compile(spec, &SchemaDocuments::default()).unwrap())
        };
        Catalog::new(NAMES.into_iter().zip(schemas()).map(compile).collect())
    })
}

fn schema(tool: usize) -> &'static Value {
    &catalog().get("", NAMES[tool]).unwrap().spec.input_schema
}

fn run(tool: usize, text: &str, options: &PipelineSettings) -> Result<Prepared, Rejected> {
    let call = ToolCall { id: String::new(), name: NAMES[tool].to_owned(), arguments: text.to_owned() };
    prepare(catalog(), &call, &CallContext::default(), options)
}

// ---- valid values -------------------------------------------------------------------------------------------

/// Letters, digits and spaces: never JSON-looking, so a string property's value is never read as anything else.
fn word() -> BoxedStrategy<Value> {
    "[A-Za-z0-9 ]{0,10}".prop_map(Value::String).boxed()
}

/// An optional member.
fn opt<T: Into<Value> + Debug + 'static>(s: impl Strategy<Value = T> + 'static) -> BoxedStrategy<Option<Value>> {
    of(s.prop_map(Into::into)).boxed()
}

/// The object of the present members, in schema order.
fn object<const N: usize>(keys: [&str; N], values: [Option<Value>; N]) -> Value {
    Value::Object(keys.into_iter().zip(values).filter_map(|(k, v)| Some((k.to_owned(), v?))).collect())
}

fn weather() -> impl Strategy<Value = Value> {
    let window = (opt(word()), opt(word())).prop_map(|(f, t)| object(["from", "to"], [f, t]));
    let (units, tags) = (opt(select(vec!["celsius", "fahrenheit"])), opt(vec(word(), 0..4)));
    (word(), opt(1..=16i64), units, opt(any::<bool>()), tags, opt(window)).prop_map(|(c, d, u, a, t, w)| {
        object(["city", "days", "units", "alerts", "tags", "window"], [Some(c), d, u, a, t, w])
    })
}

fn order() -> impl Strategy<Value = Value> {
    let addon = (word(), opt(0..9i64)).prop_map(|(c, n)| object(["code", "count"], [Some(c), n]));
    // Cents over 100: exact in decimal text both ways, like the prices models write.
    let price = opt((0..100_000u32).prop_map(|c| f64::from(c) / 100.0));
    let item = ("[A-Z]{3}-[0-9]{3}", 1..100i64, price, opt(vec(addon, 0..3))).prop_map(|(s, q, p, a)| {
        object(["sku", "quantity", "unit_price", "addons"], [Some(s.into()), Some(q.into()), p, a])
    });
    let metadata = opt(prop::collection::btree_map("[a-z_]{1,6}", word(), 0..3).prop_map(Map::from_iter));
    (word(), vec(item, 1..4), opt(any::<bool>()), opt(word()), metadata).prop_map(|(c, i, g, n, m)| {
        object(["customer_name", "items", "gift_wrap", "notes", "metadata"], [Some(c), Some(i.into()), g, n, m])
    })
}

fn search() -> impl Strategy<Value = Value> {
    let null_or = |s: BoxedStrategy<Value>| opt(prop_oneof![Just(Value::Null), s]);
    let lang = opt(select(vec!["en", "de", "fr"])).prop_map(|l| object(["lang"], [l])).boxed();
    let (max, since) = (null_or((1..50i64).prop_map(Value::from).boxed()), null_or(word()));
    (word(), max, since, opt(any::<bool>()), null_or(lang)).prop_map(|(q, m, s, e, f)| {
        object(["query", "max_results", "since_date", "exact", "filters"], [Some(q), m, s, e, f])
    })
}

/// A tool, and arguments valid for it.
fn valid_call() -> impl Strategy<Value = (usize, Value)> {
    prop_oneof![weather().prop_map(|v| (0, v)), order().prop_map(|v| (1, v)), search().prop_map(|v| (2, v))]
}

// ---- renderings ---------------------------------------------------------------------------------------------

/// The value as Python-ish text: single quotes, `True`/`None`, a trailing comma everywhere, bare keys if asked.
fn python(v: &Value, bare_keys: bool) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
    let bare = |k: &str| {
        k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !matches!(k, "true" | "True" | "false" | "False" | "null" | "None")
    };
    match v {
        Value::Null => "None".into(),
        Value::Bool(b) => (if *b { "True" } else { "False" }).into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quote(s),
        Value::Array(a) => format!("[{}]", a.iter().map(|x| python(x, bare_keys) + ", ").collect::<String>()),
        Value::Object(m) => {
            let key = |k: &String| if bare_keys && bare(k) { k.clone() } else { quote(k) };
            let members: String = m.iter().map(|(k, x)| format!("{}: {}, ", key(k), python(x, bare_keys))).collect();
            format!("{{{members}}}")
        }
    }
}

/// Text a model might send for `v`: 0 and 1 are strict JSON, the rest need syntax repair.
fn render(v: &Value, style: usize) -> String {
    match style {
        0 => v.to_string(),
        1 => format!("\n  {}  \n", serde_json::to_string_pretty(v).unwrap()),
        2 => python(v, true),
        3 => format!("```json\n{}\n```", python(v, false)),
        _ => format!("<|channel|>commentary to={}<|message|>{v}<|call|>", "functions.x"),
    }
}

// ---- mutations ----------------------------------------------------------------------------------------------

/// Declares the `Slip` enum and `SLIPS`, its variants in order, from one list.
macro_rules! slips {
    ($($slip:ident),*) => {
        #[derive(Debug, Clone, Copy, PartialEq)]
        enum Slip { $($slip),* }
        const SLIPS: &[Slip] = &[$(Slip::$slip),*];
    };
}

// Slips models make. The first ten keep the meaning; the last four are garbage.
slips! {
    NumberToString, BoolToString, StringToArray, ArrayToString, RenameKey, Wrap, Stringify, NullOptional,
    FloatForInteger, EnumCase, WordForNumber, FractionForInteger, UnknownKey, RemoveRequired
}
const MEANING_KEPT: usize = 10;

/// The schema that speaks for a value: the non-null branch of an optional `anyOf`.
fn branch(schema: &Value) -> &Value {
    let branches = schema.get("anyOf").and_then(Value::as_array);
    branches.and_then(|b| b.iter().find(|s| s["type"] != "null")).unwrap_or(schema)
}

/// Every value the schema describes, by JSON pointer, beside its schema branch.
fn nodes<'a>(v: &'a Value, schema: &'a Value, ptr: String, out: &mut Vec<(String, &'a Value, &'a Value)>) {
    let s = branch(schema);
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if let Some(p) = s["properties"].get(k) {
                    nodes(x, p, format!("{ptr}/{k}"), out);
                }
            }
        }
        Value::Array(a) if s.get("items").is_some() => {
            a.iter().enumerate().for_each(|(i, x)| nodes(x, &s["items"], format!("{ptr}/{i}"), out));
        }
        _ => {}
    }
    out.push((ptr, v, s));
}

/// Where `slip` applies: a pointer, and a key of the object there for slips on keys.
fn targets(slip: Slip, value: &Value, root: &Value) -> Vec<(String, Option<String>)> {
    let mut all = Vec::new();
    nodes(value, root, String::new(), &mut all);
    let mut out = Vec::new();
    for (ptr, v, s) in all {
        let (ty, props) = (s["type"].as_str().unwrap_or(""), s["properties"].as_object());
        let required = |k: &str| s["required"].as_array().is_some_and(|r| r.iter().any(|x| x == k));
        let keys = |f: &dyn Fn(&str, &Value) -> bool| -> Vec<String> {
            props.into_iter().flatten().filter(|(k, p)| f(k, p)).map(|(k, _)| k.clone()).collect()
        };
        let here = match slip {
            Slip::NumberToString | Slip::WordForNumber => v.is_number(),
            Slip::BoolToString => v.is_boolean(),
            Slip::StringToArray => v.is_string(),
            Slip::ArrayToString => v.as_array().is_some_and(|a| a.len() == 1 && a[0].is_string()),
            Slip::Wrap => ptr.is_empty(),
            Slip::Stringify => !ptr.is_empty() && (v.is_array() || v.is_object()),
            Slip::FloatForInteger | Slip::FractionForInteger => ty == "integer" && v.is_i64(),
            Slip::EnumCase => v.is_string() && s.get("enum").is_some(),
            Slip::UnknownKey => v.is_object() && props.is_some(),
            Slip::RenameKey | Slip::NullOptional | Slip::RemoveRequired => false,
        };
        if here {
            out.push((ptr.clone(), None));
        }
        let Some(m) = v.as_object().filter(|_| props.is_some()) else { continue };
        let on_keys = match slip {
            Slip::RenameKey => keys(&|k, _| m.contains_key(k)),
            Slip::NullOptional => keys(&|k, p| !required(k) && p.get("anyOf").is_none()),
            Slip::RemoveRequired => keys(&|k, _| m.contains_key(k) && required(k)),
            _ => Vec::new(),
        };
        out.extend(on_keys.into_iter().map(|k| (ptr.clone(), Some(k))));
    }
    out
}

/// The key as a model might misspell it; never the key itself, and never one another property loosely names.
fn respell(key: &str, variant: usize) -> String {
    let mut parts = key.split('_');
    let cap = |p: &str| p[..1].to_uppercase() + &p[1..];
    let spelled = match variant % 4 {
        0 => key.to_uppercase(),
        1 => cap(key),
        2 => parts.next().unwrap().to_owned() + &parts.map(cap).collect::<String>(),
        _ => format!("_{key}"),
    };
    if spelled == key { format!("_{key}") } else { spelled }
}

/// Applies one slip; returns false when it has nowhere to go. `expected` follows what the slip means.
fn apply(value: &mut Value, expected: &mut Value, root: &Value, (slip, pick, variant): (Slip, usize, usize)) -> bool {
    let all = targets(slip, value, root);
    let Some((ptr, key)) = all.get(pick % all.len().max(1)).cloned() else { return false };
    let at = value.pointer_mut(&ptr).unwrap();
    let old = at.take();
    *at = match (slip, key) {
        (Slip::NumberToString, _) => Value::String(old.to_string()),
        (Slip::BoolToString, _) => Value::String(match variant % 3 {
            0 => old.to_string(),
            v => respell(&old.to_string(), v - 1),
        }),
        (Slip::StringToArray, _) => json!([old]),
        (Slip::ArrayToString, _) => old[0].clone(),
        (Slip::Wrap, _) => json!({["arguments", "parameters", "input", "args"][variant % 4]: old}),
        (Slip::Stringify, _) => Value::String(if variant % 2 == 0 { old.to_string() } else { python(&old, false) }),
        (Slip::FloatForInteger, _) => {
            // JSON Schema counts 3.0 as an integer: the call is valid as sent, so it passes untouched.
            *expected.pointer_mut(&ptr).unwrap() = json!(old.as_f64().unwrap());
            json!(old.as_f64().unwrap())
        }
        (Slip::EnumCase, _) => Value::String(respell(old.as_str().unwrap(), variant % 2)),
        (Slip::WordForNumber, _) => json!("two"),
        (Slip::FractionForInteger, _) => json!("2.5"),
        (Slip::UnknownKey, _) => with(old, |m| m.insert("zz_unknown".into(), json!(1)).map(drop)),
        (Slip::RenameKey, Some(k)) => {
            with(old, |m| m.shift_remove(&k).map(|x| drop(m.insert(respell(&k, variant), x))))
        }
        (Slip::NullOptional, Some(k)) => {
            // Null means "left out": repair drops it, so the value meant is the one without the key.
            expected.pointer_mut(&ptr).and_then(Value::as_object_mut).map(|m| m.shift_remove(&k));
            with(old, |m| m.insert(k, Value::Null).map(drop))
        }
        (Slip::RemoveRequired, Some(k)) => with(old, |m| m.shift_remove(&k).map(drop)),
        _ => unreachable!("key slips always have a key"),
    };
    true
}

fn with(mut object: Value, f: impl FnOnce(&mut Map<String, Value>) -> Option<()>) -> Value {
    f(object.as_object_mut().unwrap());
    object
}

/// Some slips of any kind: which, where (modulo the places it fits) and how.
fn slips(count: std::ops::Range<usize>) -> impl Strategy<Value = Vec<(usize, usize, usize)>> {
    vec((0..SLIPS.len(), any::<usize>(), 0..8usize), count)
}

fn mutate(tool: usize, value: &Value, slips: &[(usize, usize, usize)]) -> (Value, Value, Vec<Slip>) {
    let (mut mutated, mut expected, mut applied) = (value.clone(), value.clone(), Vec::new());
    for &(slip, pick, variant) in slips {
        if apply(&mut mutated, &mut expected, schema(tool), (SLIPS[slip], pick, variant)) {
            applied.push(SLIPS[slip]);
        }
    }
    (mutated, expected, applied)
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

// ---- properties ---------------------------------------------------------------------------------------------

proptest! {
    // No failure persistence: a failing case is printed, never written next to the test.
    // A case whose premise does not hold (a call refused, a slip with nowhere to go) is rejected with
    // `prop_assume!`, so proptest counts only cases that tested something; the reject budget allows for refusals.
    #![proptest_config(ProptestConfig {
        cases: 2048,
        max_global_rejects: 1 << 16,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Valid arguments, compact or pretty, pass through untouched: same value, the model's own text, no repairs.
    #[test]
    fn valid_input_is_never_changed((tool, value) in valid_call(), style in 0..2usize) {
        let text = render(&value, style);
        let p = run(tool, &text, &PipelineSettings::default()).map_err(|r| TestCaseError::fail(r.error.to_string()))?;
        prop_assert!(p.repairs.is_empty(), "{:?}", p.repairs);
        prop_assert_eq!(&p.arguments, &value);
        prop_assert_eq!(p.arguments_text, text.trim());
    }

    /// Whatever the slips, what comes out validates and is what its text says; a changed call records why.
    #[test]
    fn repaired_output_validates((tool, value) in valid_call(), slips in slips(1..5), style in 0..5usize) {
        let (mutated, _, _) = mutate(tool, &value, &slips);
        let text = render(&mutated, style);
        let prepared = run(tool, &text, &PipelineSettings::default());
        prop_assume!(prepared.is_ok(), "refused: what a refusal must be is checked by the other properties");
        let p = prepared.unwrap();
        prop_assert!(p.tool.validator.get().is_valid(&p.arguments), "{text} -> {}", p.arguments);
        prop_assert_eq!(&serde_json::from_str::<Value>(&p.arguments_text).unwrap(), &p.arguments);
        if !p.tool.validator.get().is_valid(&mutated) || style > 1 {
            prop_assert!(!p.repairs.is_empty(), "{text} changed without a record");
        }
    }

    /// One slip that keeps the meaning is undone exactly, in any rendering: the value the model meant comes back.
    #[test]
    fn one_meaning_kept_slip_is_undone_exactly((tool, value) in valid_call(), slip in 0..MEANING_KEPT,
                                               pick in any::<usize>(), variant in 0..8usize, style in 0..5usize) {
        let (mutated, expected, applied) = mutate(tool, &value, &[(slip, pick, variant)]);
        // Nowhere to slip in this value (no number for NumberToString, say): not a case.
        prop_assume!(!applied.is_empty());
        let text = render(&mutated, style);
        let p = run(tool, &text, &PipelineSettings::default())
            .map_err(|r| TestCaseError::fail(format!("{:?} refused: {text}: {:?}", applied, r.error)))?;
        let valid = p.tool.validator.get().is_valid(&mutated);
        prop_assert_eq!(valid, applied == [Slip::FloatForInteger], "{}", text);
        prop_assert_eq!(p.repairs.is_empty(), valid && style < 2, "{}: {:?}", text, p.repairs);
        prop_assert_eq!(&p.arguments, &expected, "{:?} on {}", applied, text);
    }

    /// One garbage slip (a word for a number, a fraction for an integer, an unknown key, a missing required
    /// key) is refused: repair never invents or guesses.
    #[test]
    fn one_garbage_slip_is_refused((tool, value) in valid_call(), slip in MEANING_KEPT..SLIPS.len(),
                                   pick in any::<usize>(), style in 0..5usize) {
        let (mutated, _, applied) = mutate(tool, &value, &[(slip, pick, 0)]);
        prop_assume!(!applied.is_empty());
        let text = render(&mutated, style);
        if let Ok(p) = run(tool, &text, &PipelineSettings::default()) {
            prop_assert!(false, "{:?} accepted: {text} -> {} via {:?}", applied, p.arguments, p.repairs);
        }
    }

    /// Arbitrary and JSON-ish text: no panic, no hang, output within `bound` and `ParseLimits::max_depth`.
    #[test]
    fn parse_and_repair_stay_bounded(text in fuzz_text()) {
        let options = PipelineSettings { limits: ParseLimits { max_bytes: 4096, max_depth: 16 }, ..Default::default() };
        let start = Instant::now();
        let parsed = parse_arguments(&text, options.limits, RepairSettings::default()).map(|(v, _)| v);
        let prepared = (0..NAMES.len()).filter_map(|t| run(t, &text, &options).ok());
        for value in parsed.into_iter().chain(prepared.map(|p| {
            assert!(p.tool.validator.get().is_valid(&p.arguments));
            assert_eq!(serde_json::from_str::<Value>(&p.arguments_text).unwrap(), p.arguments);
            p.arguments
        })) {
            prop_assert!(value.to_string().len() <= bound(&text), "{text:?} -> {value}");
            prop_assert!(depth(&value) <= 16, "{text:?} -> {value}");
        }
        prop_assert!(start.elapsed() < Duration::from_secs(5), "{text:?} took {:?}", start.elapsed());
    }
}

/// The most bytes the compact output of `text` may take. Whitespace and comments are dropped, and every
/// string, number and literal is one the model wrote. What grows: a bare key gains two quotes (`a` → `"a"`,
/// 3x), a `"` or a raw newline in a single-quoted string gains a backslash (2x), and a number takes its
/// shortest round-trip form, at most 4x its text plus 2 (`1e15` → `1000000000000000.0`); the 2 is paid for by
/// the comma or bracket next to any second number. Schema repair adds at most `{"query":` and `}` around a bare
/// value, two quotes for an integer turned string, or `[`, `]`: under 16 bytes with these schemas' names.
fn bound(text: &str) -> usize {
    4 * text.len() + 16
}

/// Fragments of what models write, apart by spaces; then the ones that hold whitespace.
const TOKENS: &str = r#"{ } [ ] , : "a" 'b' True None null 1 -0.5e3 1e15 /*c*/ ``` <|call|> <|message|> "city" query "3"
    "x\"y" ' " \ "{\"a\":[1]}" "[1,2]" "true" 3.0 <|> <| |>"#;
const SPACED: [&str; 5] = ["//c\n", "#c\n", "```json\n", " ", "\n"];
const LEAVES: &str = r#""Oslo" 'b' True False None null 1 3.0 -0.5e3 1e15 "3" "true" "celsius" 'CELSIUS' "[1,2]" [] {}
    "{\"from\":\"a\"}" "x\"y" 'it\'s'"#;
const KEYS: &str = r#"city 'days' "units" Alerts tags window from customer_name "items" sku quantity metadata query
    max_results arguments "a" _city"#;

fn tokens() -> BoxedStrategy<&'static str> {
    select(TOKENS.split_whitespace().chain(SPACED).collect::<Vec<_>>()).boxed()
}

/// Text shaped like a value, so parse and repair get past the first token: single quotes, Python literals and
/// trailing commas as models write them, with a few stray fragments spliced in.
fn jsonish() -> impl Strategy<Value = String> {
    let leaf = select(LEAVES.split_whitespace().collect::<Vec<_>>()).prop_map(String::from);
    let value = leaf.prop_recursive(8, 64, 5, |inner| {
        let member = (select(KEYS.split_whitespace().collect::<Vec<_>>()), inner.clone());
        prop_oneof![
            vec(inner, 0..5).prop_map(|items| format!("[{}]", items.join(", "))),
            vec(member, 0..5)
                .prop_map(|m| format!("{{{}}}", m.iter().map(|(k, v)| format!("{k}: {v}, ")).collect::<String>())),
        ]
    });
    spliced(value)
}

/// Text from `text` with a few stray fragments put in, where they land on a character boundary.
fn spliced(text: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    (text, vec((any::<usize>(), tokens()), 0..3)).prop_map(|(mut text, splices)| {
        for (at, token) in splices {
            let at = at % (text.len() + 1);
            if text.is_char_boundary(at) {
                text.insert_str(at, token);
            }
        }
        text
    })
}

/// Slipped calls, in any rendering, with stray fragments: text that gets deep into schema repair.
fn broken_call() -> impl Strategy<Value = String> {
    spliced(
        (valid_call(), slips(0..3), 0..5usize)
            .prop_map(|((t, v), slips, style)| render(&mutate(t, &v, &slips).0, style)),
    )
}

fn fuzz_text() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => any::<String>(),
        1 => vec(any::<u8>(), 0..512).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        1 => vec(tokens(), 0..200).prop_map(|t| t.concat()),
        2 => jsonish(),
        2 => broken_call(),
    ]
}

/// JSON a model hides in a string, or sends double-encoded, is held to the depth limit like the rest.
#[test]
fn json_in_a_string_obeys_the_depth_limit() {
    let options = PipelineSettings { limits: ParseLimits { max_bytes: 4096, max_depth: 16 }, ..Default::default() };
    // 16 levels in the string: 17 with the arguments around them.
    let deep = "{\"a\":".repeat(16) + "1" + &"}".repeat(16);
    let order = |metadata: &str| {
        format!(r#"{{"customer_name":"x","items":[{{"sku":"A","quantity":1}}],"metadata":{metadata}}}"#)
    };
    let texts = [order(&json!(deep).to_string()), json!(order(&deep)).to_string()];
    let too_deep: Vec<_> =
        texts.iter().filter_map(|t| run(1, t, &options).ok().filter(|p| depth(&p.arguments) > 16)).collect();
    let rules: Vec<Vec<_>> = too_deep.iter().map(|p| p.repairs.iter().map(|r| r.rule.clone()).collect()).collect();
    assert!(too_deep.is_empty(), "{} of 2 came out 17 levels deep, via {rules:?}", too_deep.len());
}

/// Chat-template look-alikes that are not tokens are left to the other rules, never a panic.
#[test]
fn template_residue_look_alikes_do_not_panic() {
    let texts = ["<|>", "<||>", "{'query': 'a <|> b'}", "<|call|", "|><|", "x <|> {\"query\": \"a\"}"];
    let panics: Vec<_> = texts
        .iter()
        .filter(|t| std::panic::catch_unwind(|| run(2, t, &PipelineSettings::default()).map(|p| p.arguments)).is_err())
        .collect();
    assert!(panics.is_empty(), "prepare panicked on {panics:?}");
}

/// Nesting far past the limit is refused before any recursion: no stack overflow, whatever hides the brackets.
#[test]
fn deep_nesting_is_refused_without_overflow() {
    let n = 100_000;
    let limits = ParseLimits { max_bytes: 10 * n, max_depth: 64 };
    let cases = [
        ("[".repeat(n), "deeper than the limit of 64"),
        ("[".repeat(n) + &"]".repeat(n), "deeper than the limit of 64"),
        ("{\"a\":".repeat(n), "deeper than the limit of 64"),
        (format!("'{}", "{\"a\":".repeat(n)), "deeper than the limit of 64"),
        // Inside an unterminated string the brackets are text: the string never ends, so the value is cut off.
        (format!("\"{}", "[".repeat(n)), "cut off"),
        // `"{"a":{"a":…`: each `{` is inside a string (`"{"`, `":{"`, …), so it is strings and bare words.
        (format!("\"{}", "{\"a\":".repeat(n)), "not valid JSON"),
    ];
    for (text, expected) in &cases {
        let err = parse_arguments(text, limits, RepairSettings::default()).unwrap_err().to_string();
        assert!(err.contains(expected), "{}…: {err}", &text[..12]);
        let options = PipelineSettings { limits, ..Default::default() };
        assert!(run(0, text, &options).is_err());
    }
    // The lenient reader with no depth limit: its rewrite (needed for the comment) does not recurse, and
    // serde_json stops at its own recursion limit.
    let deep = "[".repeat(n) + &"]".repeat(n) + " // a comment";
    let err = read_lenient(&deep, usize::MAX, |_| true).unwrap_err().to_string();
    assert!(err.contains("recursion limit"), "{err}");
}
