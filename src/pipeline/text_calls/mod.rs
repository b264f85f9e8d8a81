//! Calls a model wrote into its text instead of making them: found in the envelopes of today's models, read
//! exactly, and never taken from prose.
//!
//! Pure, like the rest of the pipeline. `calls_in_text` finds the calls and says which envelope held them;
//! their arguments then go through the normal repair and validation. A call only mentioned in a sentence, shown
//! as an example, made conditional, or naming a tool not offered is never extracted; where the text is
//! ambiguous nothing is, and `refusal` says why.

mod block;
mod literal;
mod objects;
mod plain;
mod prose;
mod tagged;

use serde_json::Value;
use std::ops::Range;

/// The longest text read for calls; a longer one is refused whole rather than read in part.
pub const MAX_TEXT_BYTES: usize = 256 * 1024;
/// The most calls one text may hold.
pub const MAX_TEXT_CALLS: usize = 64;

/// One call found in the text: the name as written, and its arguments as read.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCall {
    pub name: String,
    pub arguments: Value,
}

/// The format a model wrote its calls in, each as its model family's chat template or parser defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope {
    /// `<tool_call>{"name", "arguments"}</tool_call>`: Hermes 2 Pro, Qwen 2.5 and Qwen 3.
    Hermes,
    /// `<tool_call><function=name><parameter=p>v</parameter></function></tool_call>`: Qwen3-Coder.
    QwenXml,
    /// `{"name", "parameters"}` as the whole answer: Llama 3.1 to 3.3's JSON tool calling.
    LlamaJson,
    /// `<|python_tag|>` then a call or JSON: Llama 3.1's built-in and custom tool calls.
    PythonTag,
    /// `[TOOL_CALLS][{…}]` or `[TOOL_CALLS]name[ARGS]{…}`: Mistral's tokenizers v3 and v11.
    Mistral,
    /// `to=functions.name … <|message|>{…}<|call|>`: gpt-oss's harmony format.
    Harmony,
    /// `[f(a=1), g(b="x")]`: Llama 3.2's and BFCL's pythonic calls.
    Pythonic,
    /// `{"name", "arguments"}` objects in the text, alone or in a list: OpenAI's call shape written out.
    Json,
}

impl Envelope {
    pub fn name(self) -> &'static str {
        match self {
            Envelope::Hermes => "hermes",
            Envelope::QwenXml => "qwen3_coder_xml",
            Envelope::LlamaJson => "llama3_json",
            Envelope::PythonTag => "llama3_python_tag",
            Envelope::Mistral => "mistral",
            Envelope::Harmony => "harmony",
            Envelope::Pythonic => "pythonic",
            Envelope::Json => "json",
        }
    }
}

/// What a text gave: its calls in order (none when `refusal` says why), and the text that is not a call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FromText {
    pub calls: Vec<TextCall>,
    pub envelope: Option<Envelope>,
    /// What was around the calls: `code_fence`, `string_list`, `print`.
    pub wrappers: Vec<&'static str>,
    /// The text with the calls taken out, trimmed: what the model said besides them.
    pub rest: String,
    /// Why a text that looked like it held calls gave none.
    pub refusal: Option<String>,
}

/// Where calls were found: the calls, the byte ranges of the text they take, and how they were written.
#[derive(Debug, Default)]
struct Found {
    calls: Vec<TextCall>,
    spans: Vec<Range<usize>>,
    envelope: Option<Envelope>,
    wrappers: Vec<&'static str>,
}

impl Found {
    fn wrap(&mut self, wrapper: &'static str) {
        if !self.wrappers.contains(&wrapper) {
            self.wrappers.push(wrapper);
        }
    }
}

/// The calls written in `text`, for the tools `offered` says exist (it is asked names as written).
pub fn calls_in_text(text: &str, offered: &dyn Fn(&str) -> bool) -> FromText {
    let refused = |why: String| FromText { rest: text.trim().to_owned(), refusal: Some(why), ..FromText::default() };
    if text.len() > MAX_TEXT_BYTES {
        return refused(format!("the text is longer than {MAX_TEXT_BYTES} bytes; it is not read for calls"));
    }
    let answer = &text[..invented_turn(text)];
    let found = match tagged::find(answer).unwrap_or_else(|| plain::find(answer, offered)) {
        Ok(Some(found)) => found,
        Ok(None) => return FromText { rest: text.trim().to_owned(), ..FromText::default() },
        Err(why) => return refused(why),
    };
    if found.calls.len() > MAX_TEXT_CALLS {
        return refused(format!("the text holds more than {MAX_TEXT_CALLS} calls"));
    }
    if let Some(call) = found.calls.iter().find(|c| !offered(&c.name)) {
        return refused(format!("{} is not a tool offered", call.name));
    }
    if let Err(why) = prose::check(answer, &found.spans) {
        return refused(why);
    }
    FromText {
        rest: rest_of(text, &found.spans),
        calls: found.calls,
        envelope: found.envelope,
        wrappers: found.wrappers,
        refusal: None,
    }
}

/// Where a turn the model made up begins (a user's question it wrote itself, as models trained on chat logs
/// do): calls past it answer questions nobody asked. The text's end when there is none.
fn invented_turn(text: &str) -> usize {
    const TURNS: [&str; 6] = ["### Instruction", "### Response", "\nHuman:", "\nUser:", "<|im_start|>user", "[INST]"];
    TURNS.iter().filter_map(|t| text.find(t)).min().unwrap_or(text.len())
}

/// The text without the spans, its lines trimmed of what the spans left, and blank runs closed up.
fn rest_of(text: &str, spans: &[Range<usize>]) -> String {
    let mut rest = String::new();
    let mut at = 0;
    for span in spans {
        rest.push_str(&text[at..span.start]);
        at = span.end;
    }
    rest.push_str(&text[at..]);
    let mut lines: Vec<&str> = Vec::new();
    for line in rest.lines().map(str::trim_end) {
        if !(line.is_empty() && lines.last().is_none_or(|l| l.is_empty())) {
            lines.push(line);
        }
    }
    lines.join("\n").trim().to_owned()
}

#[cfg(test)]
mod tests;
