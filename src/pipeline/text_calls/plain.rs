//! Calls outside any tag: pythonic calls and call objects, standing on lines of their own or filling a code fence.
//!
//! A call counts only where it stands alone: from the start of a line (after a list marker or a lead-in ending
//! in a colon) to its end. A call inside a sentence is a mention; a call inside other code is code; one in a
//! block quote, inline code inside a sentence or the model's reasoning is quoted. Whether the words around the
//! calls make them the answer's action is `intent`'s to say.

use super::block::{Attempt, Block, Look, sequence};
use super::format::Format;
use super::literal::Reader;
use super::quoted::{Kind, Quoted};
use super::refusal::{Reason, TextRefusal};
use super::scan::ReadBudget;
use super::{Found, MAX_TEXT_CALLS, TextCall};
use serde_json::Value;
use std::ops::Range;

/// What the plain reading gave: the calls, if any, and why calls written were passed over.
#[derive(Default)]
pub struct PlainRead {
    pub found: Option<Found>,
    /// The first reason a call written was not read: quoted, reasoning, or in another format than asked.
    pub skipped: Option<TextRefusal>,
    /// Whether a call read is in a loose shape, which counts only as the whole answer.
    pub loose: bool,
    /// The blocks of calls read so far, restatements included.
    blocks: usize,
}

/// The most places one text may write calls at, the same calls written again included: each is read and judged,
/// so a text of thousands of lines of calls is refused as it is read.
const MAX_CALL_BLOCKS: usize = 4 * MAX_TEXT_CALLS;
/// What a reading at one place costs the budget beyond the bytes it reads: a place where a call could start costs
/// setting up its reading, whatever it finds, so a text of ten thousand of them is refused rather than tried.
const ATTEMPT_COST: usize = 16;

fn too_many() -> TextRefusal {
    TextRefusal::new(
        Reason::TooManyCalls,
        format!("the text holds more than {MAX_TEXT_CALLS} calls, or writes calls more than {MAX_CALL_BLOCKS} times"),
    )
}

/// The calls in a text that holds no tag made, in the shapes `format` reads.
pub fn find(
    text: &str,
    format: Format,
    quoted: &Quoted,
    look: &Look,
    budget: &ReadBudget,
) -> Result<PlainRead, TextRefusal> {
    let mut plain = PlainRead::default();
    let mut found = Found::default();
    for (region, fence) in regions(text, quoted) {
        let fenced = fence.is_some();
        if fenced && super::tagged::holds_tags(&text[region.clone()]) {
            plain.skip(TextRefusal::new(Reason::Quoted, "a template's tag is inside a code fence: quoted, not made"));
            continue;
        }
        let (blocks, code) = blocks_in(text, region.clone(), quoted, look, budget, &mut plain)?;
        let blocks: Vec<Block> = blocks.into_iter().filter(|b| reads(format, b, &mut plain)).collect();
        if fenced && code && !blocks.is_empty() {
            let name = &blocks[0].calls[0].name;
            return Err(TextRefusal::ambiguous(format!("the call of {name} is inside other code, which is not run")));
        }
        if let Some(fence) = fence.filter(|_| !blocks.is_empty()) {
            found.spans.push(fence);
        }
        for block in blocks {
            if !fenced {
                found.spans.push(block.span.clone());
            }
            if block.calls.iter().all(|c| found.calls.contains(c)) {
                continue; // calls written again in a later block: a restatement, not more calls
            }
            plain.loose |= block.loose;
            found.envelope.get_or_insert(block.envelope);
            block.wrappers.iter().for_each(|w| found.wrap(w));
            if fenced {
                found.wrap("code_fence");
            }
            found.calls.extend(block.calls);
            TextRefusal::within_call_cap(found.calls.len())?;
        }
    }
    if !found.calls.is_empty() {
        unread_calls(text, &found, look, budget)?;
        plain.found = Some(found);
    }
    Ok(plain)
}

impl PlainRead {
    fn skip(&mut self, why: TextRefusal) {
        self.skipped.get_or_insert(why);
    }
}

/// Whether `format` reads the block's shape; a block it does not read is passed over, and remembered.
fn reads(format: Format, block: &Block, plain: &mut PlainRead) -> bool {
    let reads = format.reads(block.envelope);
    if !reads {
        let (written, asked) = (block.envelope.name(), format.name());
        plain.skip(TextRefusal::new(Reason::OtherFormat, format!("the calls are written as {written}, not {asked}")));
    }
    reads
}

/// A call of an offered tool written inside a sentence (`I could use get_weather(city='Oslo')`, or a call object
/// quoted in prose), for the refusal of a text that gave none: the name of the first.
pub fn mentioned(text: &str, look: &Look, budget: &ReadBudget) -> Result<Option<String>, TextRefusal> {
    for (at, _) in text.match_indices('(') {
        let name = called_before(text, at);
        budget.spend(name.len() + 1)?;
        if !name.is_empty() && (look.offered)(name) {
            return Ok(Some(name.to_owned()));
        }
    }
    for (at, key) in text.match_indices("\"name\"").chain(text.match_indices("'name'")) {
        let value = text[at + key.len()..].trim_start().strip_prefix(':').map(str::trim_start);
        let Some(value) = value.filter(|v| v.starts_with(['"', '\''])) else { continue };
        let name = value[1..].split(['"', '\'']).next().unwrap_or_default();
        budget.spend(key.len() + name.len())?;
        if (look.offered)(name) {
            return Ok(Some(name.to_owned()));
        }
    }
    Ok(None)
}

/// The dotted name right before `at`.
fn called_before(text: &str, at: usize) -> &str {
    let start = text[..at].trim_end_matches(|c: char| c.is_alphanumeric() || c == '_' || c == '.').len();
    &text[start..at]
}

/// Refuses a text that writes, outside the blocks read, a call of a tool offered that is not one of those read:
/// in code, in a sentence or in a form not read, it may be one more call, so what was read may not be all.
fn unread_calls(text: &str, found: &Found, look: &Look, budget: &ReadBudget) -> Result<(), TextRefusal> {
    let mut reader = Reader::new(text);
    for (at, _) in text.match_indices('(') {
        // The spans are in order and apart: the one that may hold `at` is the last to start at or before it.
        let before = found.spans.partition_point(|s| s.start <= at);
        if before > 0 && found.spans[before - 1].contains(&at) {
            continue;
        }
        let name = called_before(text, at);
        let start = at - name.len();
        budget.spend(name.len() + 1)?;
        if name.is_empty() || !(look.offered)(name) || text[..start].trim_end().ends_with("def") {
            continue; // a definition is not a call
        }
        reader.start_at(start);
        let same = reader.call().ok().map(|c| TextCall { name: c.name, arguments: Value::Object(c.arguments) });
        budget.spend(reader.cost_from(start))?;
        if !same.is_some_and(|call| found.calls.contains(&call)) {
            return Err(TextRefusal::ambiguous(format!(
                "the text writes a call of {name} that could not be read with the others"
            )));
        }
    }
    Ok(())
}

/// The text's regions: each fence's body with the whole fence, and the stretches between fences.
fn regions(text: &str, quoted: &Quoted) -> Vec<(Range<usize>, Option<Range<usize>>)> {
    let mut regions = Vec::new();
    let mut at = 0;
    for fence in quoted.regions() {
        if let Kind::Fence { from, to } = fence.kind {
            regions.push((at..from.max(at), None));
            regions.push((fence.range.clone(), Some(from..to)));
            at = to;
        }
    }
    regions.push((at.min(text.len())..text.len(), None));
    regions.retain(|(r, _)| !r.is_empty());
    regions
}

/// The blocks of calls in a region, and whether it also holds lines that are neither calls nor prose-free
/// comments (in a fence, that makes it code).
fn blocks_in(
    text: &str,
    region: Range<usize>,
    quoted: &Quoted,
    look: &Look,
    budget: &ReadBudget,
    plain: &mut PlainRead,
) -> Result<(Vec<Block>, bool), TextRefusal> {
    let mut lines = Lines { text, end: region.end, reader: Reader::new(&text[..region.end]), reached: 0 };
    let (mut blocks, mut code) = (Vec::new(), false);
    let mut line_start = region.start;
    while line_start < region.end {
        let line_end = text[line_start..region.end].find('\n').map_or(region.end, |i| line_start + i);
        let line = &text[line_start..line_end];
        let mut next = line_end + 1;
        let mut hit = false;
        // Inside a value whose reading failed nothing starts a call, and a blank line holds none.
        let skipped = line_end < lines.reached || line.trim().is_empty();
        for (i, start) in starts(line).into_iter().enumerate().filter(|_| !skipped) {
            let at = line_start + start;
            if (i == 0 || plausible(&line[start..]))
                && let Some(why) = quoted_at(quoted, at)
            {
                if line_called(line, look) {
                    plain.skip(why);
                }
                break;
            }
            if at < lines.reached || !plausible(&line[start..]) {
                continue;
            }
            if let Some(block) = lines.read(at, look, budget)? {
                next = text[block.span.end..region.end].find('\n').map_or(region.end, |i| block.span.end + i) + 1;
                blocks.push(block);
                plain.blocks += 1;
                if plain.blocks > MAX_CALL_BLOCKS {
                    return Err(too_many());
                }
                hit = true;
                break;
            }
        }
        let trimmed = line.trim();
        code |= !hit && !trimmed.is_empty() && !trimmed.starts_with('#') && !trimmed.starts_with("//");
        line_start = next;
    }
    Ok((blocks, code))
}

/// Reading a region line by line: where the last failed reading reached (a place inside it is inside the same
/// broken value, an unclosed list say, which reading from there would only read again).
struct Lines<'a> {
    text: &'a str,
    end: usize,
    reader: Reader<'a>,
    reached: usize,
}

impl Lines<'_> {
    /// The block of calls that starts at `at` and fills the rest of its line, if one does.
    fn read(&mut self, at: usize, look: &Look, budget: &ReadBudget) -> Result<Option<Block>, TextRefusal> {
        let (text, end) = (self.text, self.end);
        self.reader.start_at(at);
        let attempt = sequence(&mut self.reader, look);
        budget.spend(ATTEMPT_COST + self.reader.cost_from(at))?;
        if self.reader.too_deep {
            return Err(TextRefusal::ambiguous("values in the text nest deeper than 64 levels: no call is that deep"));
        }
        match attempt {
            Attempt::Calls(mut block) if alone_after(&text[block.span.end..end]) => {
                let line_end = text[block.span.end..end].find('\n').map_or(end, |i| block.span.end + i);
                if text[block.span.end..line_end].trim_start().starts_with('#') {
                    block.span.end = line_end; // the call's comment is the call's: `f(a=1)  # in metres`
                }
                Ok(Some(block))
            }
            Attempt::Calls(block) => {
                let name = &block.calls[0].name;
                Err(TextRefusal::ambiguous(format!(
                    "the call of {name} is followed by more on its line, so it is not a call alone"
                )))
            }
            Attempt::Broken(name, why) if name.is_empty() || (look.offered)(&name) => Err(why.into()),
            Attempt::TooMany => Err(too_many()),
            _ => {
                self.reached = self.reached.max(at + self.reader.scanned_from(at));
                Ok(None)
            }
        }
    }
}

/// Whether a block could start here: a list, a dict, or a name called (`print(` among them). Anything else is
/// passed over without a reading.
fn plausible(rest: &str) -> bool {
    match rest.as_bytes().first() {
        Some(b'[' | b'{') => true,
        Some(c) if c.is_ascii_alphabetic() || *c == b'_' || !c.is_ascii() => {
            let after = rest.trim_start_matches(|c: char| c.is_alphanumeric() || matches!(c, '_' | '.' | '\\'));
            after.starts_with('(') || after.starts_with(" (")
        }
        _ => false,
    }
}

/// Why a block starting at `at` is quoted, when it is: in a block quote, the model's reasoning, or inline code
/// that does not hold its whole line.
fn quoted_at(quoted: &Quoted, at: usize) -> Option<TextRefusal> {
    match quoted.at(at)?.kind {
        Kind::BlockQuote => Some(TextRefusal::new(Reason::Quoted, "the call is in a block quote: quoted, not made")),
        Kind::Reasoning => {
            Some(TextRefusal::new(Reason::Reasoning, "the call is in the model's reasoning, not its answer"))
        }
        Kind::Inline { whole_line: false } => {
            Some(TextRefusal::new(Reason::Quoted, "the call is in inline code inside a sentence: quoted, not made"))
        }
        Kind::Inline { whole_line: true } | Kind::Fence { .. } => None,
    }
}

/// Whether a line writes `name(` for a tool offered: what makes a quoted line worth a refusal's words.
fn line_called(line: &str, look: &Look) -> bool {
    line.match_indices('(').take(8).any(|(at, _)| {
        let name = called_before(line, at);
        !name.is_empty() && (look.offered)(name)
    }) || line.contains("\"name\"")
}

/// Where in a line a block may start: after indentation, a list marker or backtick, and after a colon.
fn starts(line: &str) -> Vec<usize> {
    let lead = line.len() - line.trim_start_matches([' ', '\t', '`', '-', '*']).len();
    let mut starts = vec![lead];
    let marker =
        line[lead..].find(|c: char| !c.is_ascii_digit()).filter(|&n| n > 0 && line[lead + n..].starts_with(". "));
    if let Some(n) = marker {
        starts.push(lead + n + 2);
    }
    let name = line[lead..].find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(0);
    if let Some(value) = line[lead + name..].strip_prefix(" = ").filter(|_| name > 0) {
        starts.push(line.len() - value.len()); // `result = f(a=1)`: the call, its value named
    }
    for i in memchr::memchr_iter(b':', line.as_bytes()).filter(|&i| line.as_bytes().get(i + 1) == Some(&b' ')) {
        let after = i + 2 + (line.len() - i - 2 - line[i + 2..].trim_start_matches([' ', '`']).len());
        starts.push(after);
    }
    starts
}

/// Whether nothing but whitespace, a backtick or a full stop follows on the line.
fn alone_after(rest: &str) -> bool {
    let line = rest.split('\n').next().unwrap_or_default();
    let line = line.split_once("  #").or_else(|| line.split_once(" # ")).map_or(line, |(code, _)| code);
    line.trim().trim_matches(['`', '.', ';']).is_empty()
}
