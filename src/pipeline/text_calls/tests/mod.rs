//! Each envelope as its model family's template or parser writes it, and the texts that must give no call.

use super::*;
use serde_json::json;

mod kinds;
mod literal;

const TOOLS: [&str; 3] = ["get_weather", "convert_currency", "ecology.get_population"];

fn read(text: &str) -> FromText {
    calls_in_text(text, Format::Auto, &|name: &str| {
        let bare = name.trim_start_matches("functions.").trim_start_matches("default_api.");
        TOOLS.iter().any(|t| *t == bare || t.replace('.', "_") == bare)
    })
}

fn calls(text: &str) -> Vec<(String, Value)> {
    let found = read(text);
    assert_eq!(found.refusal, None, "{text}");
    found.calls.into_iter().map(|c| (c.name, c.arguments)).collect()
}

fn weather(city: &str) -> (String, Value) {
    ("get_weather".into(), json!({"city": city}))
}

fn refusal(text: &str) -> String {
    let found = read(text);
    assert!(found.calls.is_empty(), "{text} gave {:?}", found.calls);
    found.refusal.map(|r| r.detail).unwrap_or_default()
}

/// NousResearch Hermes 2 Pro (its Hermes-Function-Calling prompt format) and Qwen 2.5/3 (their chat templates'
/// `tools` section): `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>`, one tag a call.
#[test]
fn hermes_tool_call_tags() {
    let text = "Let me check both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n\
                </tool_call>\n<tool_call>\n{\"arguments\": {'city': 'Rome'}, \"name\": 'get_weather'}\n</tool_call>";
    let found = read(text);
    assert_eq!(found.envelope, Some(Envelope::Hermes));
    assert_eq!(found.calls.len(), 2);
    assert_eq!(found.rest, "Let me check both.");
    assert_eq!(calls(text), vec![weather("Oslo"), weather("Rome")]);
}

/// Qwen3-Coder's chat template (and vLLM's `qwen3_coder` parser): XML functions and parameters, values as text;
/// repair reads them as the schema's types afterwards.
#[test]
fn qwen3_coder_xml() {
    let text = "<tool_call>\n<function=convert_currency>\n<parameter=amount>\n100\n</parameter>\n\
                <parameter=to>\nEUR\n</parameter>\n</function>\n</tool_call>";
    let found = read(text);
    assert_eq!(found.envelope, Some(Envelope::QwenXml));
    assert_eq!(calls(text), vec![("convert_currency".into(), json!({"amount": "100", "to": "EUR"}))]);
}

/// Llama 3.1–3.3's JSON tool calling (Meta's prompt format docs): `{"name": …, "parameters": …}` as the whole
/// answer, and `<|python_tag|>` before a call, ended by `<|eom_id|>`.
#[test]
fn llama_json_and_python_tag() {
    let text = r#"{"name": "get_weather", "parameters": {"city": "Lima"}}"#;
    assert_eq!(read(text).envelope, Some(Envelope::LlamaJson));
    assert_eq!(calls(text), vec![weather("Lima")]);
    let tagged = "<|python_tag|>get_weather(city=\"Quito\")<|eom_id|>";
    assert_eq!(read(tagged).envelope, Some(Envelope::PythonTag));
    assert_eq!(calls(tagged), vec![weather("Quito")]);
    let json_tagged = r#"<|python_tag|>{"name": "get_weather", "parameters": {"city": "Cusco"}}<|eot_id|>"#;
    assert_eq!(calls(json_tagged), vec![weather("Cusco")]);
}

/// Mistral's tokenizers (mistral-common): v3 `[TOOL_CALLS] [{"name", "arguments"}]`, v11 and later
/// `[TOOL_CALLS]name[ARGS]{…}` once per call.
#[test]
fn mistral_tool_calls() {
    let v3 = r#"[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Nice"}}]"#;
    assert_eq!(read(v3).envelope, Some(Envelope::Mistral));
    assert_eq!(calls(v3), vec![weather("Nice")]);
    let v11 = r#"[TOOL_CALLS]get_weather[ARGS]{"city": "Lyon"}[TOOL_CALLS]get_weather[ARGS]{"city": "Metz"}"#;
    assert_eq!(calls(v11), vec![weather("Lyon"), weather("Metz")]);
}

/// gpt-oss's harmony response format (openai/harmony): a commentary message addressed `to=functions.name`,
/// its arguments after `<|message|>`, ended by `<|call|>`.
#[test]
fn gpt_oss_harmony() {
    let text = "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary \
                to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Tokyo\"}<|call|>";
    let found = read(text);
    assert_eq!(found.envelope, Some(Envelope::Harmony));
    assert_eq!(calls(text), vec![weather("Tokyo")]);
    assert!(found.rest.contains("Need weather."), "{}", found.rest);
}

/// Llama 3.2's pythonic calls and BFCL's prompt format: `[f(a=1), g(b="x")]`, and the wrappers around them that
/// models write: a code fence, a list of strings, `print(…)`, and the `functions.` / `default_api.` namespaces.
#[test]
fn pythonic_lists_and_their_wrappers() {
    let two = vec![weather("Oslo"), ("convert_currency".into(), json!({"amount": 5, "to": "NOK"}))];
    assert_eq!(calls("[get_weather(city='Oslo'), convert_currency(amount=5, to=\"NOK\")]"), two);
    let fenced = "Here is the call:\n```python\n[get_weather(city='Oslo')]\n```";
    let found = read(fenced);
    assert_eq!((found.envelope, found.wrappers.as_slice()), (Some(Envelope::Pythonic), &["code_fence"][..]));
    assert_eq!(found.rest, "Here is the call:");
    assert_eq!(calls("[\"get_weather(city='Oslo')\"]"), vec![weather("Oslo")]);
    assert_eq!(read("[\"get_weather(city='Oslo')\"]").wrappers, ["string_list"]);
    let gemini = "```tool_code\nprint(default_api.get_weather(city='Oslo'))\n```";
    assert_eq!(calls(gemini), vec![("default_api.get_weather".into(), json!({"city": "Oslo"}))]);
    assert_eq!(
        calls("functions.get_weather(city=\"Oslo\")"),
        vec![("functions.get_weather".into(), json!({"city": "Oslo"}))]
    );
    let json_in_fence = "```json\n[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]\n```";
    assert_eq!((read(json_in_fence).envelope, calls(json_in_fence)), (Some(Envelope::Json), vec![weather("Oslo")]));
}

#[test]
fn a_call_only_mentioned_in_a_sentence_is_not_one() {
    let found = read("I could use get_weather(city='Paris'), but which city do you mean?");
    assert!(found.calls.is_empty(), "{found:?}");
    assert_eq!(found.refusal.map(|r| r.reason), Some(Reason::Mention));
    assert!(read("I could use get_weather, but which city?").calls.is_empty());
}

#[test]
fn a_call_shown_as_an_example_is_not_one() {
    let why = refusal("To ask for the weather, write something like this:\n\n```\nget_weather(city='Paris')\n```");
    assert!(why.contains("example"), "{why}");
    let why = refusal("For example:\n[get_weather(city=\"Paris\")]");
    assert!(why.contains("example"), "{why}");
}

#[test]
fn a_conditional_call_is_not_one() {
    let why = refusal("If you tell me you mean Paris, Texas, I will run:\n[get_weather(city='Paris, TX')]");
    assert!(why.contains("conditional"), "{why}");
    let why = refusal("Here's how you can do it:\n\n```python\nget_weather(city='Paris')\n```");
    assert!(why.contains("conditional"), "{why}");
}

#[test]
fn a_call_of_a_tool_not_offered_is_not_one() {
    let why = refusal("<tool_call>\n{\"name\": \"delete_account\", \"arguments\": {\"id\": 7}}\n</tool_call>");
    assert_eq!(why, "delete_account is not a tool offered");
    assert_eq!(
        read("[delete_account(id=7)]"),
        FromText { rest: "[delete_account(id=7)]".into(), ..FromText::default() }
    );
}

#[test]
fn an_ambiguous_text_gives_nothing_and_says_why() {
    let cases = [
        ("[get_weather(city=city_name)]", "not written in literals"),
        ("[get_weather(city='Oslo')] or [get_weather(city='Bergen')]", "followed by more on its line"),
        ("```python\nfor c in cities:\n    x = 1\nget_weather(city='Oslo')\n```", "inside other code"),
        ("[get_weather(city='Oslo')]\n\nThen: weather = get_weather(city=place)", "could not be read with the others"),
        ("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Os", "<tool_call>"),
        ("<tool_call>\n{\"name\": \"get_weather\", \"city\": \"Oslo\"}\n</tool_call>", "not a call's"),
        (r#"<tool_call>[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo"}</tool_call>"#, "holds no call"),
    ];
    for (text, reason) in cases {
        let why = refusal(text);
        assert!(why.contains(reason), "{text:?}: {why}");
    }
}

#[test]
fn the_same_calls_written_again_are_one_set() {
    let text = "```\n[get_weather(city='Oslo')]\n```\n\nget_weather(city='Oslo')";
    assert_eq!(calls(text), vec![weather("Oslo")]);
}

#[test]
fn text_past_the_bound_is_not_read() {
    let text = format!("[get_weather(city='Oslo')]{}", " ".repeat(MAX_TEXT_BYTES));
    assert!(refusal(&text).contains("longer than"));
}

#[test]
fn a_text_that_would_be_read_over_and_over_is_refused_at_once() {
    // Every line opens a list the text never closes: read from every line, each would be read to its end. A value
    // nesting past the parse limit is no call, and the text is refused at the first.
    let text = "[1,\n".repeat(MAX_TEXT_BYTES / 4 - 16);
    let found = read(&format!("{text}[get_weather(city='Oslo')]"));
    assert!(found.calls.is_empty(), "{:?}", found.calls);
    assert!(found.refusal.is_some_and(|r| r.reason == Reason::Ambiguous && r.detail.contains("deeper")));
    // Lists that close, each a line of its own, are read once each: a place inside a value whose reading failed
    // is not read again, and each list costs the budget more than its bytes.
    let closed = "[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]\n".repeat(MAX_TEXT_BYTES / 34 - 1);
    assert!(read(&closed).calls.is_empty());
}

#[test]
fn wrappers_inside_wrappers_are_read_to_a_bound() {
    let text = "print(".repeat(MAX_TEXT_BYTES / 6 - 1);
    assert!(read(&text).calls.is_empty());
    assert_eq!(calls("print(get_weather(city='Oslo'))"), vec![weather("Oslo")]);
}

#[test]
fn many_calls_or_many_restatements_stay_bounded() {
    let few = "get_weather(city='Oslo')\n".repeat(3);
    assert_eq!(calls(&few), vec![weather("Oslo")], "one call, restated");
    let many = "get_weather(city='Oslo')\n".repeat(10_000);
    assert_eq!(read(&many).refusal.map(|r| r.reason), Some(Reason::TooManyCalls), "refused as it is read");
    let distinct: String = (0..100).map(|i| format!("get_weather(city='c{i}')\n")).collect();
    assert!(refusal(&distinct).contains("more than 64 calls"));
    let one_list =
        format!("[{}]", (0..100).map(|i| format!("get_weather(city='c{i}')")).collect::<Vec<_>>().join(", "));
    assert_eq!(read(&one_list).refusal.map(|r| r.reason), Some(Reason::TooManyCalls));
    let tags: String = (0..100)
        .map(|i| format!("<tool_call>{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"c{i}\"}}}}</tool_call>"))
        .collect();
    assert_eq!(read(&tags).refusal.map(|r| r.reason), Some(Reason::TooManyCalls));
}
