//! Calls outside any tag: pythonic calls and call objects, standing on lines of their own or filling a code fence.
//!
//! A call counts only where it stands alone: from the start of a line (after a list marker or a lead-in ending
//! in a colon) to its end. A call inside a sentence is a mention; a call inside other code is code.

use super::block::{Attempt, Block, sequence};
use super::literal::Reader;
use super::{Found, MAX_TEXT_CALLS, TextCall};
use serde_json::Value;
use std::ops::Range;

/// How many bytes reading a text for calls may go over, per byte of it (and a floor for short texts): a line
/// that starts a list may be read to the text's end, and every line may start one, so without a bound a text of
/// such lines costs the square of its length.
const READS_PER_BYTE: usize = 8;
const MIN_READ_BUDGET: usize = 16 * 1024;

/// What reading a text for calls may still cost.
struct Budget {
    left: usize,
}

impl Budget {
    fn for_text(text: &str) -> Self {
        Self { left: text.len().saturating_mul(READS_PER_BYTE).max(MIN_READ_BUDGET) }
    }

    fn spend(&mut self, bytes: usize) -> Result<(), String> {
        self.left = self.left.checked_sub(bytes).ok_or_else(|| {
            format!("reading the text for calls would go over {READS_PER_BYTE} readings of it; it is not read")
        })?;
        Ok(())
    }
}

/// The calls in a text that holds no tag: `Ok(None)` when there are none.
pub fn find(text: &str, offered: &dyn Fn(&str) -> bool) -> Result<Option<Found>, String> {
    let mut found = Found::default();
    let mut budget = Budget::for_text(text);
    for (region, fenced) in regions(text) {
        let (blocks, code) = blocks_in(text, region.clone(), offered, &mut budget)?;
        if fenced && code && !blocks.is_empty() {
            let name = &blocks[0].calls[0].name;
            return Err(format!("the call of {name} is inside other code, which is not run"));
        }
        if fenced && !blocks.is_empty() {
            found.spans.push(fence_span(text, &region));
        }
        for block in blocks {
            if !fenced {
                found.spans.push(block.span.clone());
            }
            if block.calls.iter().all(|c| found.calls.contains(c)) {
                continue; // calls written again in a later block: a restatement, not more calls
            }
            found.envelope.get_or_insert(block.envelope);
            block.wrappers.iter().for_each(|w| found.wrap(w));
            if fenced {
                found.wrap("code_fence");
            }
            found.calls.extend(block.calls);
            if found.calls.len() > MAX_TEXT_CALLS {
                return Err(format!("the text holds more than {MAX_TEXT_CALLS} calls"));
            }
        }
    }
    if found.calls.is_empty() {
        return Ok(None);
    }
    unread_calls(text, &found, offered, &mut budget)?;
    Ok(Some(found))
}

/// Refuses a text that writes, outside the blocks read, a call of a tool offered that is not one of those read:
/// in code, in a sentence or in a form not read, it may be one more call, so what was read may not be all.
fn unread_calls(text: &str, found: &Found, offered: &dyn Fn(&str) -> bool, budget: &mut Budget) -> Result<(), String> {
    let mut reader = Reader::new(text);
    for (at, _) in text.match_indices('(') {
        // The spans are in order and apart: the one that may hold `at` is the last to start at or before it.
        let before = found.spans.partition_point(|s| s.start <= at);
        if before > 0 && found.spans[before - 1].contains(&at) {
            continue;
        }
        let start = text[..at].trim_end_matches(|c: char| c.is_alphanumeric() || c == '_' || c == '.').len();
        let name = &text[start..at];
        if name.is_empty() || !offered(name) || text[..start].trim_end().ends_with("def") {
            continue; // a definition is not a call
        }
        reader.start_at(start);
        let same = reader.call().ok().map(|c| TextCall { name: c.name, arguments: Value::Object(c.arguments) });
        budget.spend(reader.scanned_from(start))?;
        if !same.is_some_and(|call| found.calls.contains(&call)) {
            return Err(format!("the text writes a call of {name} that could not be read with the others"));
        }
    }
    Ok(())
}

/// The text's regions: each fence's body (`true`), and the stretches between fences (`false`).
fn regions(text: &str) -> Vec<(Range<usize>, bool)> {
    let mut regions = Vec::new();
    let (mut at, mut open) = (0, None);
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if open.is_none() && trimmed.len() > 6 && trimmed.starts_with("```") && trimmed.ends_with("```") {
            let inner = offset + line.find("```").expect("it starts with one") + 3;
            regions.push((at..offset, false));
            regions.push((inner..offset + line.rfind("```").expect("it ends with one"), true));
            at = offset + line.len();
        } else if trimmed.starts_with("```") {
            match open.take() {
                None => {
                    regions.push((at..offset, false));
                    open = Some(offset + line.len());
                }
                Some(body) => {
                    regions.push((body..offset, true));
                    at = offset + line.len();
                }
            }
        }
        offset += line.len();
    }
    match open {
        Some(body) => regions.push((body..text.len(), true)),
        None => regions.push((at..text.len(), false)),
    }
    regions.retain(|(r, _)| !r.is_empty());
    regions
}

/// A fence from its opening line to its closing one, given its body.
fn fence_span(text: &str, body: &Range<usize>) -> Range<usize> {
    let start = text[..body.start].trim_end_matches('\n').rfind('\n').map_or(0, |i| i + 1);
    let end = text[body.end..].find('\n').map_or(text.len(), |i| body.end + i + 1);
    start..end
}

/// The blocks of calls in a region, and whether it also holds lines that are neither calls nor prose-free
/// comments (in a fence, that makes it code).
fn blocks_in(
    text: &str,
    region: Range<usize>,
    offered: &dyn Fn(&str) -> bool,
    budget: &mut Budget,
) -> Result<(Vec<Block>, bool), String> {
    let mut blocks = Vec::new();
    let mut code = false;
    let mut reader = Reader::new(&text[..region.end]);
    let mut line_start = region.start;
    while line_start < region.end {
        let line_end = text[line_start..region.end].find('\n').map_or(region.end, |i| line_start + i);
        let line = &text[line_start..line_end];
        let mut next = line_end + 1;
        let mut hit = false;
        for start in starts(line).into_iter().filter(|_| !line.trim().is_empty()) {
            reader.start_at(line_start + start);
            let attempt = sequence(&mut reader, offered);
            budget.spend(reader.scanned_from(line_start + start))?;
            match attempt {
                Attempt::Calls(block) if alone_after(&text[block.span.end..region.end]) => {
                    next = text[block.span.end..region.end].find('\n').map_or(region.end, |i| block.span.end + i) + 1;
                    blocks.push(block);
                    hit = true;
                    break;
                }
                Attempt::Calls(block) => {
                    let name = &block.calls[0].name;
                    return Err(format!(
                        "the call of {name} is followed by more on its line, so it is not a call alone"
                    ));
                }
                Attempt::Broken(name, why) if name.is_empty() || offered(&name) => return Err(why),
                _ => {}
            }
        }
        let trimmed = line.trim();
        code |= !hit && !trimmed.is_empty() && !trimmed.starts_with('#') && !trimmed.starts_with("//");
        line_start = next;
    }
    Ok((blocks, code))
}

/// Where in a line a block may start: after indentation, a list marker or backtick, and after a colon.
fn starts(line: &str) -> Vec<usize> {
    let lead = line.len() - line.trim_start_matches([' ', '\t', '>', '`', '-', '*']).len();
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
    for (i, _) in line.match_indices(": ") {
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
