//! A block of calls at one place of a line: `print(…)` around one, a pythonic call or list, call objects, a list
//! of strings each a call or an answer of its own, or several of these with `,` or `;` between them.

use super::literal::{PyCall, Reader};
use super::objects;
use super::{Envelope, FromText, MAX_TEXT_CALLS, TextCall};
use memchr::memmem::Finder;
use serde_json::Value;
use std::ops::Range;
use std::sync::LazyLock;

/// Calls standing alone somewhere in a text: one block per line or fence, in order.
pub(super) struct Block {
    pub calls: Vec<TextCall>,
    pub span: Range<usize>,
    pub envelope: Envelope,
    pub wrappers: Vec<&'static str>,
    /// Read from a loose shape (`{"tool": {…}}`, `{"name": "tool", "a": 1}`, parameters that are a schema), which
    /// counts only as the whole answer.
    pub loose: bool,
}

/// What reading a block asks of its reader: whether a name is a tool offered, and the calls a string in a list
/// holds, read as an answer of its own.
pub(super) struct Look<'a> {
    pub offered: &'a dyn Fn(&str) -> bool,
    pub nested: &'a dyn Fn(&str) -> FromText,
}

/// What reading at one place gave.
pub(super) enum Attempt {
    NoCall,
    Calls(Block),
    /// Something a tool's name heads that is not a call as written: `(name, why)`.
    Broken(String, String),
    /// More calls than one answer may make, seen while reading them.
    TooMany,
}

/// Whether `n` calls are more than one answer may make.
fn too_many(n: usize) -> bool {
    n > MAX_TEXT_CALLS
}

impl Attempt {
    /// This attempt, or `other`'s when this found nothing.
    fn or_else(self, other: impl FnOnce() -> Attempt) -> Attempt {
        match self {
            Attempt::NoCall => other(),
            found => found,
        }
    }
}

/// Blocks one after another, `,` or `;` between them (`f(a=1), g(b=2)`, `[f(a=1)], [g(b=2)]`): one block.
pub(super) fn sequence(r: &mut Reader, look: &Look) -> Attempt {
    let mut block = match attempt(r, look) {
        Attempt::Calls(block) => block,
        other => return other,
    };
    loop {
        let before = r.pos;
        let gap = r.rest().len() - r.rest().trim_start_matches([' ', '\t']).len();
        r.pos += gap;
        if !(r.eat(",") || r.eat(";")) {
            r.pos = before;
            return Attempt::Calls(block);
        }
        r.space();
        match attempt(r, look) {
            Attempt::Calls(more) => {
                block.calls.extend(more.calls);
                if too_many(block.calls.len()) {
                    return Attempt::TooMany;
                }
                for wrapper in more.wrappers {
                    if !block.wrappers.contains(&wrapper) {
                        block.wrappers.push(wrapper);
                    }
                }
                block.span.end = more.span.end;
            }
            _ => {
                r.pos = before;
                return Attempt::Calls(block);
            }
        }
    }
}

/// Reads the block at the reader's place: `print(…)` around one, a list, an object, or a call.
fn attempt(r: &mut Reader, look: &Look) -> Attempt {
    let start = r.pos;
    if r.eat("print(") {
        r.space();
        let inner = unwrapped(r, look); // one `print(` is a wrapper; one inside it is code
        r.space();
        return match inner {
            Attempt::Calls(mut block) if r.eat(")") => {
                block.wrappers.push("print");
                block.span = start..r.pos;
                Attempt::Calls(block)
            }
            Attempt::Broken(name, why) => Attempt::Broken(name, why),
            Attempt::TooMany => Attempt::TooMany,
            _ => Attempt::NoCall,
        };
    }
    unwrapped(r, look)
}

/// Reads the block at the reader's place, with no `print(…)` around it: a list, an object, or a call.
fn unwrapped(r: &mut Reader, look: &Look) -> Attempt {
    let start = r.pos;
    let attempt = match r.peek() {
        Some(open @ ('[' | '{')) => match r.value() {
            Ok(value) => of_value(&value, look),
            Err(why) if open == '[' => {
                let reach = start + r.scanned_from(start);
                r.pos = start;
                match pythonic_list(r).or_else(|| {
                    r.pos = start;
                    quoted_calls(r)
                }) {
                    Attempt::NoCall => named_in(r.text, start..reach, look).map_or(Attempt::NoCall, |name| {
                        Attempt::Broken(name, format!("a call object is unreadable: {why}"))
                    }),
                    other => other,
                }
            }
            Err(why) => {
                let reach = start + r.scanned_from(start);
                named_in(r.text, start..reach, look)
                    .map_or(Attempt::NoCall, |name| Attempt::Broken(name, why.to_owned()))
            }
        },
        Some(_) => match r.call() {
            Ok(call) => Attempt::Calls(pythonic(vec![call])),
            Err(_) => Attempt::NoCall,
        },
        None => Attempt::NoCall,
    };
    if let Attempt::NoCall = attempt {
        r.pos = start;
        if let Some(name) = called_name(r).filter(|name| (look.offered)(name)) {
            r.pos = start;
            return Attempt::Broken(name.clone(), format!("the call of {name} is not written in literals alone"));
        }
    }
    match attempt {
        Attempt::Calls(mut block) if block.calls.iter().any(|c| (look.offered)(&c.name)) => {
            block.span = start..r.pos;
            Attempt::Calls(block)
        }
        Attempt::Calls(_) => Attempt::NoCall,
        other => other,
    }
}

/// The tool a call object names (`"name": "tool"`), when one is offered: looked for from `span.start` to where
/// reading it failed, on its first line, so that each failed object is looked at once.
fn named_in(text: &str, span: Range<usize>, look: &Look) -> Option<String> {
    let mut end = (span.end + 1).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    static NAME: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new("name"));
    let line = text[span.start..end].split('\n').next().unwrap_or_default();
    let mut rest = line;
    while let Some(at) = NAME.find(rest.as_bytes()) {
        rest = &rest[at + 4..];
        let value = rest.trim_start_matches(['\'', '"']).trim_start().strip_prefix(':')?.trim_start();
        let quote = value.chars().next().filter(|q| matches!(q, '\'' | '"'))?;
        let name = value[1..].split(quote).next()?;
        if (look.offered)(name) {
            return Some(name.to_owned());
        }
    }
    None
}

/// The name a call at the reader's place starts with, behind `[` or `print(`: `name(` was written.
fn called_name(r: &mut Reader) -> Option<String> {
    r.eat("[");
    r.eat("print(");
    let name = r.dotted()?.into_owned();
    r.eat(" ");
    r.eat("(").then_some(name)
}

fn pythonic(calls: Vec<PyCall>) -> Block {
    let as_dict = calls.iter().any(|c| c.as_dict);
    let calls = calls.into_iter().map(|c| TextCall { name: c.name, arguments: Value::Object(c.arguments) }).collect();
    let wrappers = if as_dict { vec!["arguments_dict"] } else { Vec::new() };
    Block { calls, span: 0..0, envelope: Envelope::Pythonic, wrappers, loose: false }
}

/// `['f(a='x')', 'g(b=2)']`: calls each between quotes in a list, read as calls where the quotes inside them
/// clash with those around them (so the list is no Python); every call read whole up to its closing quote.
fn quoted_calls(r: &mut Reader) -> Attempt {
    r.eat("[");
    let mut calls = Vec::new();
    loop {
        r.space();
        if !calls.is_empty() && r.eat("]") {
            let mut block = pythonic(calls);
            block.wrappers.push("string_list");
            return Attempt::Calls(block);
        }
        let Some(quote) = r.peek().filter(|q| matches!(q, '\'' | '"')) else { return Attempt::NoCall };
        r.pos += 1;
        let Ok(call) = r.call() else { return Attempt::NoCall };
        if !r.eat(&quote.to_string()) {
            return Attempt::NoCall;
        }
        calls.push(call);
        if too_many(calls.len()) {
            return Attempt::TooMany;
        }
        r.space();
        if !r.eat(",") && !r.rest().starts_with(']') {
            return Attempt::NoCall;
        }
    }
}

/// `[f(a=1), g(b=2)]`.
fn pythonic_list(r: &mut Reader) -> Attempt {
    r.eat("[");
    let mut calls = Vec::new();
    loop {
        r.space();
        if r.eat("]") && !calls.is_empty() {
            return Attempt::Calls(pythonic(calls));
        }
        let Ok(call) = r.call() else { return Attempt::NoCall };
        calls.push(call);
        if too_many(calls.len()) {
            return Attempt::TooMany;
        }
        r.space();
        if !r.eat(",") && !r.rest().starts_with(']') {
            return Attempt::NoCall;
        }
    }
}

/// A literal that is calls: call objects, or a list of strings each holding one pythonic call.
fn of_value(value: &Value, look: &Look) -> Attempt {
    if value.as_array().is_some_and(|items| too_many(items.len())) {
        return Attempt::TooMany;
    }
    if let Some(calls) = parts(value, look) {
        return calls;
    }
    match objects::calls_of(value, look.offered) {
        Ok(Some((calls, loose))) => {
            let llama = value_has(value, "parameters");
            let envelope = if llama { Envelope::LlamaJson } else { Envelope::Json };
            Attempt::Calls(Block { calls, span: 0..0, envelope, wrappers: Vec::new(), loose })
        }
        Err((name, why)) => Attempt::Broken(name, why),
        Ok(None) => string_list(value, look),
    }
}

/// A response's parts as some APIs list them: text parts (strings) and call objects, at least one of each.
fn parts(value: &Value, look: &Look) -> Option<Attempt> {
    let Value::Array(items) = value else { return None };
    let (texts, calls): (Vec<&Value>, Vec<&Value>) = items.iter().partition(|i| i.is_string());
    if texts.is_empty() || calls.is_empty() {
        return None;
    }
    let calls = Value::Array(calls.into_iter().cloned().collect());
    match objects::calls_of(&calls, look.offered) {
        Ok(Some((calls, loose))) => {
            let wrappers = vec!["text_parts"];
            Some(Attempt::Calls(Block { calls, span: 0..0, envelope: Envelope::Json, wrappers, loose }))
        }
        _ => None,
    }
}

fn value_has(value: &Value, key: &str) -> bool {
    match value {
        Value::Array(items) => items.iter().any(|i| value_has(i, key)),
        Value::Object(map) => map.contains_key(key),
        _ => false,
    }
}

/// `["f(a=1)", "g(b=2)"]`: every string one call and nothing else; or strings that are answers of their own,
/// each read as a text (some APIs hand back a model's parts as a list of strings).
fn string_list(value: &Value, look: &Look) -> Attempt {
    let Value::Array(items) = value else { return Attempt::NoCall };
    let texts: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
    if texts.is_empty() || texts.len() < items.len() {
        return Attempt::NoCall;
    }
    let mut calls = Vec::new();
    for text in &texts {
        let mut r = Reader::new(text.trim());
        match r.call() {
            Ok(call) if r.at_end() => calls.push(call),
            _ => return texts_in_list(&texts, look),
        }
    }
    let mut block = pythonic(calls);
    block.wrappers.push("string_list");
    Attempt::Calls(block)
}

/// Strings each read as a whole answer, for calls in any envelope.
fn texts_in_list(texts: &[&str], look: &Look) -> Attempt {
    let mut block =
        Block { calls: Vec::new(), span: 0..0, envelope: Envelope::Pythonic, wrappers: vec![], loose: false };
    for text in texts {
        let found = (look.nested)(text);
        if let Some(why) = found.refusal {
            return Attempt::Broken(found.calls.first().map(|c| c.name.clone()).unwrap_or_default(), why.detail);
        }
        if let Some(envelope) = found.envelope.filter(|_| block.calls.is_empty()) {
            block.envelope = envelope;
        }
        block.wrappers.extend(found.wrappers);
        block.calls.extend(found.calls);
    }
    if block.calls.is_empty() {
        return Attempt::NoCall;
    }
    block.wrappers.push("string_list");
    Attempt::Calls(block)
}
