//! Calls a model wrote into its text instead of making them: found in the envelopes of today's models, read
//! exactly, and taken only when they are the answer's action.
//!
//! Pure, like the rest of the pipeline. `calls_in_text` finds the calls and says which envelope held them;
//! their arguments then go through the normal repair and validation. The default is no call: a call quoted
//! (`quoted`), in the model's reasoning, shown, offered, refused, supposed or remembered (`intent`), naming a
//! tool not offered, or in a text that cannot be read with one meaning gives none, and `refusal` says why.
//! Reading is bounded by the text's length alone (`scan`), whatever the catalog.

mod block;
mod cues;
mod format;
mod intent;
mod lead;
mod literal;
mod objects;
mod plain;
mod quoted;
mod refusal;
mod scan;
mod tagged;

pub use format::{Envelope, Format};
pub use refusal::{Reason, TextRefusal};

use block::Look;
use memchr::memmem::Finder;
use quoted::Quoted;
use scan::{Offered, ReadBudget};
use serde_json::Value;
use std::ops::Range;
use std::sync::LazyLock;
use tagged::Tagged;

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

/// What a text gave: its calls in order (none when `refusal` says why), and the text that is not a call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FromText {
    pub calls: Vec<TextCall>,
    pub envelope: Option<Envelope>,
    /// What was around the calls: `code_fence`, `string_list`, `print`.
    pub wrappers: Vec<&'static str>,
    /// The text with the calls taken out, trimmed: what the model said besides them.
    pub rest: String,
    /// Why a text that showed a call gave none.
    pub refusal: Option<TextRefusal>,
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

/// The calls written in `text` in `format`, for the tools `offered` says exist (it is asked names as written).
pub fn calls_in_text(text: &str, format: Format, offered: &dyn Fn(&str) -> bool) -> FromText {
    if text.len() > MAX_TEXT_BYTES {
        let why = format!("the text is longer than {MAX_TEXT_BYTES} bytes; it is not read for calls");
        return refused(text, TextRefusal::new(Reason::TooLong, why));
    }
    let budget = ReadBudget::for_text(text);
    let offered = Offered::new(offered, &budget);
    read(text, format, &offered, true)
}

fn refused(text: &str, why: TextRefusal) -> FromText {
    FromText { rest: text.trim().to_owned(), refusal: Some(why), ..FromText::default() }
}

/// One answer read: `outer` for the whole text, not for a string of a list inside it (read once, not again).
fn read(text: &str, format: Format, offered: &Offered, outer: bool) -> FromText {
    let answer = &text[..invented_turn(text)];
    let quoted = Quoted::of(answer);
    let found = calls_of(answer, &quoted, format, offered, outer);
    let found = match found {
        Ok(None) if answer.len() < text.len() => invented_calls(&text[answer.len()..], offered).map_or(Ok(None), Err),
        other => other,
    };
    match found {
        Ok(Some((found, tagged, loose))) => match accept(answer, &quoted, &found, (tagged, loose), offered) {
            Ok(()) => FromText {
                rest: rest_of(text, &found.spans),
                calls: found.calls,
                envelope: found.envelope,
                wrappers: found.wrappers,
                refusal: None,
            },
            Err(why) => refused(text, why),
        },
        Ok(None) => FromText { rest: text.trim().to_owned(), ..FromText::default() },
        Err(why) => refused(text, why),
    }
}

/// The calls `answer` writes, whether in tags, and whether in a loose shape; `Ok(None)` when it writes none, and
/// `Err` when it shows calls it does not make.
fn calls_of(
    answer: &str,
    quoted: &Quoted,
    format: Format,
    offered: &Offered,
    outer: bool,
) -> Result<Option<(Found, bool, bool)>, TextRefusal> {
    let budget = offered.budget();
    budget.spend(answer.len())?;
    let mut passed_over = None;
    if format.reads_tags() && (format != Format::Auto || tagged::holds_tags(answer)) {
        match tagged::find(answer, format, quoted, budget)? {
            Tagged::Found(found) => return Ok(Some((found, true, false))),
            Tagged::None { quoted } => passed_over = quoted,
        }
    }
    let nested = |text: &str| match outer {
        true => read(text, format, offered, false),
        false => FromText { rest: text.to_owned(), ..FromText::default() },
    };
    let look = Look { offered: &|name| offered.has(name), nested: &nested };
    if !format.reads_plain() {
        let other = tagged::holds_tags(answer) || plain::mentioned(answer, &look, budget)?.is_some();
        let why = TextRefusal::new(Reason::OtherFormat, format!("the text holds no call in {}'s tags", format.name()));
        return passed_over.or(other.then_some(why)).map_or(Ok(None), Err);
    }
    if format != Format::Auto
        && tagged::holds_tags(answer)
        && let Tagged::Found(found) = tagged::find(answer, Format::Auto, quoted, budget)?
    {
        let written = found.envelope.map_or("a template", |e| e.name());
        let why = format!("the calls are written in {written}'s tags, not as {}", format.name());
        return Err(TextRefusal::new(Reason::OtherFormat, why));
    }
    let plain = plain::find(answer, format, quoted, &look, budget)?;
    if let Some(found) = plain.found {
        return Ok(Some((found, false, plain.loose)));
    }
    if let Some(why) = passed_over.or(plain.skipped) {
        return Err(why);
    }
    match plain::mentioned(answer, &look, budget)? {
        Some(name) => Err(TextRefusal::new(Reason::Mention, format!("{name}(…) is named inside a sentence, not made"))),
        None => Ok(None),
    }
}

/// Refuses calls that are too many, name a tool not offered, were read from a text not read whole, take a loose
/// shape beside other words, or are not the answer's action.
fn accept(
    answer: &str,
    quoted: &Quoted,
    found: &Found,
    (tagged, loose): (bool, bool),
    offered: &Offered,
) -> Result<(), TextRefusal> {
    TextRefusal::within_call_cap(found.calls.len())?;
    if let Some(call) = found.calls.iter().find(|c| !offered.has(&c.name)) {
        return Err(TextRefusal::new(Reason::NotOffered, format!("{} is not a tool offered", call.name)));
    }
    if let Some(why) = offered.budget().exhausted() {
        return Err(why);
    }
    intent::judge(answer, &found.spans, tagged, quoted)?;
    if loose && !rest_of(answer, &found.spans).is_empty() {
        let why =
            "a call written as a loose object is taken only as the whole answer, and this one has words beside it";
        return Err(TextRefusal::new(Reason::NotWhole, why));
    }
    Ok(())
}

/// Why a text's calls past a turn the model made up are not taken, when that part holds one.
fn invented_calls(past: &str, offered: &Offered) -> Option<TextRefusal> {
    let nested = |text: &str| FromText { rest: text.to_owned(), ..FromText::default() };
    let look = Look { offered: &|name| offered.has(name), nested: &nested };
    let called = tagged::holds_tags(past) || plain::mentioned(past, &look, offered.budget()).ok()?.is_some();
    let turn = past.lines().find(|l| !l.trim().is_empty()).unwrap_or_default().trim();
    let why = format!("the calls follow a turn the model wrote for another speaker ({turn:?}): they answer nobody");
    called.then(|| TextRefusal::new(Reason::OtherSpeaker, why))
}

/// Where a turn the model made up begins (a user's question it wrote itself, as models trained on chat logs
/// do): calls past it answer questions nobody asked. The text's end when there is none.
fn invented_turn(text: &str) -> usize {
    static TURNS: LazyLock<[Finder<'static>; 8]> = LazyLock::new(|| {
        [
            "### Instruction",
            "### Response",
            "\nHuman:",
            "\nUser:",
            "[INST]",
            "<|im_start|>user",
            "<|start_header_id|>user",
            "<|start|>user",
        ]
        .map(Finder::new)
    });
    TURNS.iter().filter_map(|t| t.find(text.as_bytes())).min().unwrap_or(text.len())
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
