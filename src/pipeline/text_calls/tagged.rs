//! Calls inside the tags of a model's chat template: Hermes and Qwen `<tool_call>`, Qwen3-Coder's XML, Mistral's
//! `[TOOL_CALLS]`, Llama's `<|python_tag|>` and gpt-oss's harmony `to=functions.…`.
//!
//! Where a tag is made (outside quotes, fences, inline code and reasoning), only what the tags hold is read, and all
//! of it must read as calls. A tag that is quoted is not made. Each reader goes through the text once.

use super::format::{Envelope, Format};
use super::literal::Reader;
use super::objects;
use super::quoted::{Kind, Quoted};
use super::refusal::{Reason, TextRefusal};
use super::scan::{Ahead, ReadBudget};
use super::{Found, TextCall};
use memchr::memmem::Finder;
use serde_json::{Map, Value};
use std::ops::Range;
use std::sync::LazyLock;

const HERMES_OPEN: &str = "<tool_call>";
const HERMES_CLOSE: &str = "</tool_call>";
const QWEN_FUNCTION: &str = "<function=";
const MISTRAL: &str = "[TOOL_CALLS]";
const PYTHON_TAG: &str = "<|python_tag|>";
const HARMONY_TO: &str = "to=functions.";
/// The most bytes between a harmony recipient and its `<|message|>`.
const MAX_HARMONY_HEADER: usize = 512;

/// What the tags of a text gave.
pub enum Tagged {
    /// No tag is made in the text (`quoted`: why the ones written are not), so the plain reading applies.
    None {
        quoted: Option<TextRefusal>,
    },
    Found(Found),
}

/// The calls in a text's tags that `format` reads.
pub fn find(text: &str, format: Format, quoted: &Quoted, budget: &ReadBudget) -> Result<Tagged, TextRefusal> {
    let mut tags = Tags { text, quoted, skipped: None, calls: 0 };
    let readers: [(Envelope, Reading); 4] = [
        (Envelope::Hermes, hermes),
        (Envelope::Mistral, mistral),
        (Envelope::PythonTag, python_tag),
        (Envelope::Harmony, harmony),
    ];
    let mut parts = Vec::new();
    for (envelope, read) in readers {
        let reads = format.reads(envelope) || (envelope == Envelope::Hermes && format.reads(Envelope::QwenXml));
        if reads {
            parts.append(&mut read(&mut tags, budget)?);
        }
    }
    if parts.is_empty() && format.reads(Envelope::QwenXml) {
        parts = bare_qwen(&mut tags, budget)?;
    }
    parts.retain(|part| {
        let why = || format!("the calls are written in {}'s tags, not {}'s", part.envelope.name(), format.name());
        format.reads(part.envelope) || tags.skip(TextRefusal::new(Reason::OtherFormat, why()))
    });
    if parts.is_empty() {
        return Ok(Tagged::None { quoted: tags.skipped });
    }
    parts.sort_by_key(|p| p.span.start);
    let mut found = Found::default();
    for part in parts {
        if found.spans.last().is_some_and(|last| last.end > part.span.start) {
            return Err(TextRefusal::ambiguous("the tags of two templates are inside each other"));
        }
        found.envelope.get_or_insert(part.envelope);
        found.spans.push(part.span);
        found.calls.extend(part.calls);
    }
    Ok(Tagged::Found(found))
}

/// The calls one tag held, and where.
struct Part {
    calls: Vec<TextCall>,
    span: Range<usize>,
    envelope: Envelope,
}

type Reading = fn(&mut Tags, &ReadBudget) -> Result<Vec<Part>, TextRefusal>;

/// Finds the tags the model made, passing over those it quoted (and remembering why, for the refusal).
struct Tags<'a> {
    text: &'a str,
    quoted: &'a Quoted,
    skipped: Option<TextRefusal>,
    /// The calls read so far, by every reader: past `MAX_TEXT_CALLS` the text is refused as it is read.
    calls: usize,
}

impl Tags<'_> {
    /// Counts `part`'s calls, refusing the text once it holds more than one answer may make.
    fn push(&mut self, parts: &mut Vec<Part>, part: Part) -> Result<(), TextRefusal> {
        self.calls += part.calls.len();
        TextRefusal::within_call_cap(self.calls)?;
        parts.push(part);
        Ok(())
    }

    /// Every place of `tag` that is made, in order, each searched for once.
    fn made(&mut self, tag: &str) -> Vec<usize> {
        let mut made = Vec::new();
        for (at, _) in self.text.match_indices(tag) {
            match self.quoted.at(at).map(|r| r.kind) {
                Some(Kind::Reasoning) => {
                    self.skip(TextRefusal::new(Reason::Reasoning, format!("the {tag} is in the model's reasoning")));
                }
                Some(kind) => {
                    let how = match kind {
                        Kind::Fence { .. } => "a code fence",
                        Kind::BlockQuote => "a block quote",
                        _ => "inline code",
                    };
                    self.skip(TextRefusal::new(Reason::Quoted, format!("the {tag} is inside {how}: quoted, not made")));
                }
                None if self.text[..at].ends_with(['"', '\'', '\u{201c}', '\u{2018}', '\u{ab}']) => {
                    self.skip(TextRefusal::new(Reason::Quoted, format!("the {tag} is in quotation marks: quoted")));
                }
                None => made.push(at),
            }
        }
        made
    }

    /// Remembers the first reason a tag was passed over; answers false, for `retain`.
    fn skip(&mut self, why: TextRefusal) -> bool {
        if self.skipped.is_none() {
            self.skipped = Some(why);
        }
        false
    }
}

/// `<tool_call>…</tool_call>`, holding a call object or Qwen3-Coder's `<function=…>`. The last may be unclosed.
fn hermes(tags: &mut Tags, budget: &ReadBudget) -> Result<Vec<Part>, TextRefusal> {
    let text = tags.text;
    let made = tags.made(HERMES_OPEN);
    let tail = text.trim_end();
    if !made.is_empty() && (1..HERMES_OPEN.len()).any(|n| tail.ends_with(&HERMES_OPEN[..n])) {
        return Err(TextRefusal::ambiguous("the text ends inside a <tool_call> tag: it was cut off"));
    }
    let (mut closes, mut opens) = (Ahead::new(text, HERMES_CLOSE), Ahead::new(text, HERMES_OPEN));
    let mut parts: Vec<Part> = Vec::new();
    for open in made {
        if parts.last().is_some_and(|p| p.span.end > open) {
            continue; // inside the body of one read already: that body is refused below
        }
        let body_start = open + HERMES_OPEN.len();
        let (body_end, end) = match closes.next(body_start) {
            Some(i) => (i, i + HERMES_CLOSE.len()),
            None => (text.len(), text.len()),
        };
        if opens.next(body_start).is_some_and(|next| next < body_end) {
            return Err(TextRefusal::ambiguous("a <tool_call> opens inside another"));
        }
        budget.spend(body_end - body_start)?;
        let trimmed = unfenced(text[body_start..body_end].trim());
        let (calls, envelope) = if trimmed.starts_with(QWEN_FUNCTION) {
            (qwen_functions(trimmed)?, Envelope::QwenXml)
        } else {
            (whole_value(trimmed, "a <tool_call>", budget)?, Envelope::Hermes)
        };
        tags.push(&mut parts, Part { calls, span: open..end, envelope })?;
    }
    Ok(parts)
}

/// Qwen3-Coder's `<function=…>` blocks outside a `<tool_call>`.
fn bare_qwen(tags: &mut Tags, budget: &ReadBudget) -> Result<Vec<Part>, TextRefusal> {
    let Some(&start) = tags.made(QWEN_FUNCTION).first() else { return Ok(Vec::new()) };
    let text = tags.text;
    let end = text.rfind("</function>").map(|i| i + "</function>".len()).filter(|end| *end > start);
    let end = end.ok_or_else(|| TextRefusal::ambiguous("a <function=…> is not closed"))?;
    budget.spend(end - start)?;
    Ok(vec![Part { calls: qwen_functions(&text[start..end])?, span: start..end, envelope: Envelope::QwenXml }])
}

/// `<function=name><parameter=p>v</parameter>…</function>`, repeated. Every value is text, as the template writes
/// it; repair reads it as the schema's type, as Qwen's own parser does.
fn qwen_functions(body: &str) -> Result<Vec<TextCall>, TextRefusal> {
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
                return Err(format!("{name} is given {key} twice").into());
            }
            p = next.trim();
        }
        if !p.is_empty() {
            return Err(format!("the call of {name} holds text that is not a parameter").into());
        }
        calls.push(TextCall { name: name.trim().to_owned(), arguments: Value::Object(arguments) });
        TextRefusal::within_call_cap(calls.len())?;
        rest = tail.trim();
    }
    if !rest.is_empty() || calls.is_empty() {
        return Err("a <tool_call> holds text that is not a <function=…>".into());
    }
    Ok(calls)
}

/// `[TOOL_CALLS][{…}]` (tokenizer v3), or `[TOOL_CALLS]name[ARGS]{…}` (v11 and later), repeated.
fn mistral(tags: &mut Tags, budget: &ReadBudget) -> Result<Vec<Part>, TextRefusal> {
    let text = tags.text;
    let mut args = Ahead::new(text, "[ARGS]");
    let mut parts: Vec<Part> = Vec::new();
    let made = tags.made(MISTRAL);
    for (i, &open) in made.iter().enumerate() {
        if parts.last().is_some_and(|p| p.span.end > open) {
            return Err(TextRefusal::ambiguous("a [TOOL_CALLS] is inside another's arguments"));
        }
        let next_tag = made.get(i + 1).copied().unwrap_or(text.len());
        let mut r = Reader::new(text);
        r.start_at(open + MISTRAL.len());
        r.space();
        let read = mistral_calls(&mut r, &mut args, next_tag);
        budget.spend(r.cost_from(open))?;
        tags.push(&mut parts, Part { calls: read?, span: open..r.pos, envelope: Envelope::Mistral })?;
    }
    Ok(parts)
}

fn mistral_calls(r: &mut Reader, args: &mut Ahead, next_tag: usize) -> Result<Vec<TextCall>, TextRefusal> {
    if matches!(r.peek(), Some('[' | '{')) {
        let value = r.value().map_err(|e| format!("[TOOL_CALLS] is followed by no call: {e}"))?;
        let calls = objects::calls_of(&value, &|_| false).map_err(|(_, why)| why)?;
        return Ok(calls.ok_or("[TOOL_CALLS] holds no call object")?.0);
    }
    let name = r.dotted().ok_or("[TOOL_CALLS] is followed by no name")?.into_owned();
    if r.eat("[CALL_ID]") {
        let at = args.next(r.pos).filter(|at| *at < next_tag);
        r.pos = at.ok_or_else(|| format!("[TOOL_CALLS]{name} has no [ARGS]"))?;
    }
    if !r.eat("[ARGS]") {
        return Err(format!("[TOOL_CALLS]{name} has no [ARGS]").into());
    }
    r.space();
    match r.value() {
        Ok(arguments @ Value::Object(_)) => Ok(vec![TextCall { name, arguments }]),
        _ => Err(format!("the [ARGS] of {name} are not an object").into()),
    }
}

/// `<|python_tag|>` then call objects (`;` between them) or pythonic calls, up to `<|eom_id|>` or `<|eot_id|>`.
fn python_tag(tags: &mut Tags, budget: &ReadBudget) -> Result<Vec<Part>, TextRefusal> {
    let Some(&open) = tags.made(PYTHON_TAG).first() else { return Ok(Vec::new()) };
    let text = tags.text;
    let body_start = open + PYTHON_TAG.len();
    let body_end = ["<|eom_id|>", "<|eot_id|>"]
        .iter()
        .filter_map(|end| text[body_start..].find(end))
        .min()
        .map_or(text.len(), |i| body_start + i);
    budget.spend(body_end - body_start)?;
    let mut calls = Vec::new();
    for piece in text[body_start..body_end].split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let mut r = Reader::new(piece);
        match r.call() {
            Ok(call) if r.at_end() => {
                calls.push(TextCall { name: call.name, arguments: Value::Object(call.arguments) })
            }
            _ => calls.append(&mut whole_value(piece, "<|python_tag|>", budget)?),
        }
        TextRefusal::within_call_cap(calls.len())?;
        budget.spend(r.cost_from(0))?;
    }
    let end = text[body_end..].find("|>").filter(|_| body_end < text.len()).map_or(body_end, |i| body_end + i + 2);
    Ok(vec![Part { calls, span: open..end, envelope: Envelope::PythonTag }])
}

/// Harmony: `<|channel|>commentary to=functions.name <|constrain|>json<|message|>{…}<|call|>`, each a call. A
/// recipient in the analysis channel is the model's reasoning, which `Quoted` passes over.
fn harmony(tags: &mut Tags, budget: &ReadBudget) -> Result<Vec<Part>, TextRefusal> {
    let text = tags.text;
    let made = tags.made(HARMONY_TO);
    let mut messages = Ahead::new(text, "<|message|>");
    let (mut calls_end, mut ends) = (Ahead::new(text, "<|call|>"), Ahead::new(text, "<|end|>"));
    let mut marks = Marks::new(text, ["<|start|>", "<|channel|>", "<|end|>", "<|call|>"]);
    let mut parts: Vec<Part> = Vec::new();
    for to in made {
        if parts.last().is_some_and(|p| p.span.end > to) {
            return Err(TextRefusal::ambiguous("a harmony recipient is inside another's message"));
        }
        let name_start = to + HARMONY_TO.len();
        let name_len = text[name_start..].find(|c: char| c.is_whitespace() || c == '<').unwrap_or(0);
        let name = &text[name_start..name_start + name_len];
        let header_end = messages.next(name_start).filter(|at| at - name_start <= MAX_HARMONY_HEADER);
        let header_end = header_end.ok_or_else(|| format!("the call of {name} has no message"))?;
        if tags.quoted.at(header_end).is_some_and(|r| r.kind == Kind::Reasoning) {
            let why = format!("the message to {name} is in the analysis channel: the model's reasoning");
            tags.skip(TextRefusal::new(Reason::Reasoning, why));
            continue;
        }
        let body_start = header_end + "<|message|>".len();
        let (body_end, end) = [(calls_end.next(body_start), "<|call|>"), (ends.next(body_start), "<|end|>")]
            .into_iter()
            .filter_map(|(at, tag)| at.map(|at| (at, at + tag.len())))
            .min()
            .unwrap_or((text.len(), text.len()));
        budget.spend(body_end - body_start)?;
        let mut r = Reader::new(text[body_start..body_end].trim());
        let arguments = match r.value() {
            Ok(arguments @ Value::Object(_)) if r.rest().trim().is_empty() => arguments,
            _ => return Err(format!("the message to {name} is not an object of arguments").into()),
        };
        // The message starts at its `<|start|>`, or its `<|channel|>`, unless another message ends between.
        let [opened, channel, closed, called] = marks.last_before(to);
        let ended = closed.max(called);
        let start = match (opened, channel) {
            (Some(at), _) if Some(at) > ended => at,
            (_, Some(at)) if Some(at) > ended => at,
            _ => to,
        };
        let calls = vec![TextCall { name: name.to_owned(), arguments }];
        tags.push(&mut parts, Part { calls, span: start..end, envelope: Envelope::Harmony })?;
    }
    Ok(parts)
}

/// The last place of each of some marks before a position, for positions asked in increasing order.
struct Marks<'a, const N: usize> {
    ahead: [(Ahead<'a>, usize); N],
    last: [Option<usize>; N],
}

impl<'a, const N: usize> Marks<'a, N> {
    fn new(text: &'a str, marks: [&'a str; N]) -> Self {
        Self { ahead: marks.map(|m| (Ahead::new(text, m), m.len())), last: [None; N] }
    }

    fn last_before(&mut self, pos: usize) -> [Option<usize>; N] {
        for (i, (ahead, len)) in self.ahead.iter_mut().enumerate() {
            let mut from = self.last[i].map_or(0, |at| at + *len);
            while let Some(at) = ahead.next(from).filter(|at| at + *len <= pos) {
                self.last[i] = Some(at);
                from = at + *len;
            }
        }
        self.last
    }
}

/// A body that is one literal and nothing else, holding call objects.
fn whole_value(body: &str, what: &str, budget: &ReadBudget) -> Result<Vec<TextCall>, TextRefusal> {
    let mut r = Reader::new(body);
    let value = r.value();
    budget.spend(r.cost_from(0))?;
    let value = value.map_err(|e| format!("{what} holds no call: {e}"))?;
    if !r.rest().trim().is_empty() {
        return Err(format!("{what} holds more than one call object").into());
    }
    let calls = objects::calls_of(&value, &|_| false).map_err(|(_, why)| why)?;
    Ok(calls.ok_or_else(|| format!("{what} holds no call object"))?.0)
}

/// A body without the code fence around it.
fn unfenced(body: &str) -> &str {
    let Some(rest) = body.strip_prefix("```") else { return body };
    let rest = rest.split_once('\n').map_or("", |(_, r)| r);
    rest.trim_end().strip_suffix("```").unwrap_or(rest).trim()
}

/// Whether the text holds a tag of a template that writes calls, made or quoted.
pub fn holds_tags(text: &str) -> bool {
    // Searchers built once: `str::contains` would set one up per tag on every fence of a text.
    static TAGS: LazyLock<[Finder<'static>; 4]> =
        LazyLock::new(|| [HERMES_OPEN, QWEN_FUNCTION, MISTRAL, PYTHON_TAG].map(Finder::new));
    static HARMONY: LazyLock<[Finder<'static>; 2]> = LazyLock::new(|| [HARMONY_TO, "<|message|>"].map(Finder::new));
    let bytes = text.as_bytes();
    TAGS.iter().any(|tag| tag.find(bytes).is_some()) || HARMONY.iter().all(|tag| tag.find(bytes).is_some())
}
