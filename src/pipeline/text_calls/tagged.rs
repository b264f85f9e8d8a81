//! Calls inside the tags of a model's chat template: Hermes and Qwen `<tool_call>`, Qwen3-Coder's XML, Mistral's
//! `[TOOL_CALLS]`, Llama's `<|python_tag|>` and gpt-oss's harmony `to=functions.…`.
//!
//! Where a tag is there, only what the tags hold is read, and all of it must read as calls.

use super::literal::Reader;
use super::objects;
use super::{Envelope, Found, TextCall};
use serde_json::{Map, Value};

const HERMES_OPEN: &str = "<tool_call>";
const HERMES_CLOSE: &str = "</tool_call>";
const QWEN_FUNCTION: &str = "<function=";
const MISTRAL: &str = "[TOOL_CALLS]";
const PYTHON_TAG: &str = "<|python_tag|>";
const HARMONY_TO: &str = "to=functions.";
/// The most bytes between a harmony recipient and its `<|message|>`.
const MAX_HARMONY_HEADER: usize = 512;

/// The calls in a text's tags; `None` when it holds no tag, so the plain reading applies.
pub fn find(text: &str) -> Option<Result<Option<Found>, String>> {
    if !holds_tags(text) {
        return None;
    }
    let mut found = Found::default();
    let readers: [(&str, Reading); 4] =
        [(HERMES_OPEN, hermes), (MISTRAL, mistral), (PYTHON_TAG, python_tag), (HARMONY_TO, harmony)];
    let mut parts = Vec::new();
    for (tag, read) in readers {
        if text.contains(tag) {
            match read(text) {
                Ok(mut these) => parts.append(&mut these),
                Err(why) => return Some(Err(why)),
            }
        }
    }
    if parts.is_empty() && text.contains(QWEN_FUNCTION) {
        match bare_qwen(text) {
            Ok(mut these) => parts.append(&mut these),
            Err(why) => return Some(Err(why)),
        }
    }
    parts.sort_by_key(|p| p.span.start);
    for part in parts {
        if found.spans.last().is_some_and(|last| last.end > part.span.start) {
            return Some(Err("the tags of two templates are inside each other".into()));
        }
        found.envelope.get_or_insert(part.envelope);
        found.spans.push(part.span);
        found.calls.extend(part.calls);
    }
    Some(Ok((!found.calls.is_empty()).then_some(found)))
}

/// Whether the text holds a tag of a template that writes calls.
pub fn holds_tags(text: &str) -> bool {
    [HERMES_OPEN, QWEN_FUNCTION, MISTRAL, PYTHON_TAG].iter().any(|t| text.contains(t))
        || (text.contains(HARMONY_TO) && text.contains("<|message|>"))
}

/// The calls one tag held, and where.
struct Part {
    calls: Vec<TextCall>,
    span: std::ops::Range<usize>,
    envelope: Envelope,
}

type Reading = fn(&str) -> Result<Vec<Part>, String>;

/// `<tool_call>…</tool_call>`, holding a call object or Qwen3-Coder's `<function=…>`. The last may be unclosed.
fn hermes(text: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut at = 0;
    while let Some(open) = text[at..].find(HERMES_OPEN).map(|i| at + i) {
        let body_start = open + HERMES_OPEN.len();
        let (body_end, end) = match text[body_start..].find(HERMES_CLOSE) {
            Some(i) => (body_start + i, body_start + i + HERMES_CLOSE.len()),
            None => (text.len(), text.len()),
        };
        let body = &text[body_start..body_end];
        if body.contains(HERMES_OPEN) {
            return Err("a <tool_call> opens inside another".into());
        }
        let trimmed = unfenced(body.trim());
        let (calls, envelope) = if trimmed.starts_with(QWEN_FUNCTION) {
            (qwen_functions(trimmed)?, Envelope::QwenXml)
        } else {
            (whole_value(trimmed, "a <tool_call>")?, Envelope::Hermes)
        };
        parts.push(Part { calls, span: open..end, envelope });
        at = end;
    }
    let tail = text.trim_end();
    if (1..HERMES_OPEN.len()).any(|n| tail.ends_with(&HERMES_OPEN[..n])) {
        return Err("the text ends inside a <tool_call> tag: it was cut off".into());
    }
    Ok(parts)
}

/// Qwen3-Coder's `<function=…>` blocks outside a `<tool_call>`.
fn bare_qwen(text: &str) -> Result<Vec<Part>, String> {
    let start = text.find(QWEN_FUNCTION).expect("the caller saw the tag");
    let end = text.rfind("</function>").map(|i| i + "</function>".len()).ok_or("a <function=…> is not closed")?;
    Ok(vec![Part { calls: qwen_functions(&text[start..end])?, span: start..end, envelope: Envelope::QwenXml }])
}

/// `<function=name><parameter=p>v</parameter>…</function>`, repeated. Every value is text, as the template writes
/// it; repair reads it as the schema's type, as Qwen's own parser does.
fn qwen_functions(body: &str) -> Result<Vec<TextCall>, String> {
    let mut calls = Vec::new();
    let mut rest = body.trim();
    while let Some(after) = rest.strip_prefix(QWEN_FUNCTION) {
        let (name, inner) = after.split_once('>').ok_or("a <function= tag is not closed")?;
        let (params, tail) = inner.split_once("</function>").ok_or("a <function=…> is not closed")?;
        let mut arguments = Map::new();
        let mut p = params.trim();
        while let Some(after) = p.strip_prefix("<parameter=") {
            let (key, value_rest) = after.split_once('>').ok_or("a <parameter= tag is not closed")?;
            let (value, next) = value_rest.split_once("</parameter>").ok_or("a <parameter=…> is not closed")?;
            let value = value.strip_prefix('\n').unwrap_or(value);
            let value = value.strip_suffix('\n').unwrap_or(value);
            if arguments.insert(key.trim().to_owned(), Value::String(value.to_owned())).is_some() {
                return Err(format!("{name} is given {key} twice"));
            }
            p = next.trim();
        }
        if !p.is_empty() {
            return Err(format!("the call of {name} holds text that is not a parameter"));
        }
        calls.push(TextCall { name: name.trim().to_owned(), arguments: Value::Object(arguments) });
        rest = tail.trim();
    }
    if !rest.is_empty() || calls.is_empty() {
        return Err("a <tool_call> holds text that is not a <function=…>".into());
    }
    Ok(calls)
}

/// `[TOOL_CALLS][{…}]` (tokenizer v3), or `[TOOL_CALLS]name[ARGS]{…}` (v11 and later), repeated.
fn mistral(text: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut at = 0;
    while let Some(open) = text[at..].find(MISTRAL).map(|i| at + i) {
        let mut r = Reader::new(text);
        r.pos = open + MISTRAL.len();
        r.space();
        let calls = if matches!(r.peek(), Some('[' | '{')) {
            let value = r.value().map_err(|e| format!("[TOOL_CALLS] is followed by no call: {e}"))?;
            objects::calls_of(&value, &|_| false).map_err(|(_, why)| why)?.ok_or("[TOOL_CALLS] holds no call object")?
        } else {
            let name = r.dotted().ok_or("[TOOL_CALLS] is followed by no name")?.to_owned();
            if r.eat("[CALL_ID]") {
                r.pos += r.rest().find("[ARGS]").unwrap_or(0);
            }
            if !r.eat("[ARGS]") {
                return Err(format!("[TOOL_CALLS]{name} has no [ARGS]"));
            }
            r.space();
            match r.value() {
                Ok(arguments @ Value::Object(_)) => vec![TextCall { name, arguments }],
                _ => return Err(format!("the [ARGS] of {name} are not an object")),
            }
        };
        parts.push(Part { calls, span: open..r.pos, envelope: Envelope::Mistral });
        at = r.pos;
    }
    Ok(parts)
}

/// `<|python_tag|>` then call objects (`;` between them) or pythonic calls, up to `<|eom_id|>` or `<|eot_id|>`.
fn python_tag(text: &str) -> Result<Vec<Part>, String> {
    let open = text.find(PYTHON_TAG).expect("the caller saw the tag");
    let body_start = open + PYTHON_TAG.len();
    let body_end = ["<|eom_id|>", "<|eot_id|>"]
        .iter()
        .filter_map(|end| text[body_start..].find(end))
        .min()
        .map_or(text.len(), |i| body_start + i);
    let mut calls = Vec::new();
    for piece in text[body_start..body_end].split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let mut r = Reader::new(piece);
        match r.call() {
            Ok(call) if r.at_end() => {
                calls.push(TextCall { name: call.name, arguments: Value::Object(call.arguments) })
            }
            _ => calls.append(&mut whole_value(piece, "<|python_tag|>")?),
        }
    }
    let end = text[body_end..].find("|>").map_or(body_end, |i| body_end + i + 2);
    Ok(vec![Part { calls, span: open..end, envelope: Envelope::PythonTag }])
}

/// Harmony: `<|channel|>commentary to=functions.name <|constrain|>json<|message|>{…}<|call|>`, each a call.
fn harmony(text: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut at = 0;
    while let Some(to) = text[at..].find(HARMONY_TO).map(|i| at + i) {
        let name_start = to + HARMONY_TO.len();
        let name_len = text[name_start..].find(|c: char| c.is_whitespace() || c == '<').unwrap_or(0);
        let name = &text[name_start..name_start + name_len];
        // The header is one line of a few words: a message further on is another's.
        let header = &text[name_start..text.len().min(name_start + MAX_HARMONY_HEADER)];
        let header_end = header.find("<|message|>").ok_or(format!("the call of {name} has no message"))?;
        let body_start = name_start + header_end + "<|message|>".len();
        let (body_end, end) = ["<|call|>", "<|end|>"]
            .iter()
            .filter_map(|t| text[body_start..].find(t).map(|i| (body_start + i, body_start + i + t.len())))
            .min()
            .unwrap_or((text.len(), text.len()));
        let mut r = Reader::new(text[body_start..body_end].trim());
        let arguments = match r.value() {
            Ok(arguments @ Value::Object(_)) if r.rest().trim().is_empty() => arguments,
            _ => return Err(format!("the message to {name} is not an object of arguments")),
        };
        let start = text[..to].rfind("<|start|>").or_else(|| text[..to].rfind("<|channel|>")).unwrap_or(to);
        let start = if text[start..to].contains("<|end|>") { to } else { start };
        parts.push(Part {
            calls: vec![TextCall { name: name.to_owned(), arguments }],
            span: start..end,
            envelope: Envelope::Harmony,
        });
        at = end;
    }
    Ok(parts)
}

/// A body that is one literal and nothing else, holding call objects.
fn whole_value(body: &str, what: &str) -> Result<Vec<TextCall>, String> {
    let mut r = Reader::new(body);
    let value = r.value().map_err(|e| format!("{what} holds no call: {e}"))?;
    if !r.rest().trim().is_empty() {
        return Err(format!("{what} holds more than one call object"));
    }
    objects::calls_of(&value, &|_| false).map_err(|(_, why)| why)?.ok_or_else(|| format!("{what} holds no call object"))
}

/// A body without the code fence around it.
fn unfenced(body: &str) -> &str {
    let Some(rest) = body.strip_prefix("```") else { return body };
    let rest = rest.split_once('\n').map_or("", |(_, r)| r);
    rest.trim_end().strip_suffix("```").unwrap_or(rest).trim()
}
