//! The parts of a text that are not the model's own words now: code fences, inline code, block quotes, and its
//! reasoning (`<think>…</think>`, harmony's analysis channel). Found in one pass, looked up by position.
//!
//! A template's tag inside any of them is quoted, not made. Outside tags, a fence or inline code that holds a
//! whole line is how models wrap the calls they make, so the plain reading decides what those hold.

use super::scan::Ahead;
use std::ops::Range;

/// What kind of quoting a region is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A code fence's body, from the line after its opening to its closing line (or the text's end); the fence
    /// itself runs from its opening line's start to its closing line's end, `from..to`.
    Fence { from: usize, to: usize },
    /// Inline code; `whole_line` when nothing but space is beside it on its lines.
    Inline { whole_line: bool },
    /// A line of a block quote, from its `>` on.
    BlockQuote,
    /// The model's reasoning: a `<think>` block, or a harmony analysis message.
    Reasoning,
}

/// One quoted stretch of the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    pub range: Range<usize>,
    pub kind: Kind,
}

/// The quoted regions of a text, in order and apart.
#[derive(Debug, Default)]
pub struct Quoted {
    regions: Vec<Region>,
    /// The reasoning among them, in order: what a call's lead-in and what follows it stop at.
    reasoning: Vec<Range<usize>>,
}

const THINK: [(&str, &str); 3] =
    [("<think>", "</think>"), ("<thinking>", "</thinking>"), ("<reasoning>", "</reasoning>")];
const ANALYSIS: &str = "<|channel|>analysis";

impl Quoted {
    pub fn of(text: &str) -> Self {
        let mut regions = reasoning(text);
        regions.sort_by_key(|r| r.range.start);
        let thinking = regions.len();
        let (mut lines, mut inside) = (Lines::default(), 0);
        for (start, line, next) in line_starts(text) {
            while inside < thinking && regions[inside].range.end <= start {
                inside += 1;
            }
            if inside < thinking && regions[inside].range.start <= start {
                // Reasoning is read for nothing, so what it holds is not looked at; what follows its end on the
                // line is read as a line of its own.
                let end = regions[inside].range.end;
                if end < start + line.len() {
                    lines.line(end, &line[end - start..], next, &mut regions);
                }
                continue;
            }
            lines.line(start, line, next, &mut regions);
        }
        lines.finish(text.len(), &mut regions);
        regions.sort_by_key(|r| (r.range.start, std::cmp::Reverse(r.range.end)));
        // Keep the outermost of regions that overlap: a fence inside a think block is the think block's, and a
        // reasoning marker inside a fence is quoted with the rest of the fence.
        let mut kept: Vec<Region> = Vec::with_capacity(regions.len());
        for region in regions {
            match kept.last() {
                Some(last) if last.range.end > region.range.start => {}
                _ => kept.push(region),
            }
        }
        let reasoning = kept.iter().filter(|r| r.kind == Kind::Reasoning).map(|r| r.range.clone()).collect();
        Self { regions: kept, reasoning }
    }

    /// Where the last reasoning that ends inside `within` ends.
    pub fn reasoning_ends_in(&self, within: &Range<usize>) -> Option<usize> {
        let before = self.reasoning.partition_point(|r| r.end <= within.end);
        self.reasoning[..before].last().map(|r| r.end).filter(|end| *end > within.start)
    }

    /// Where the first reasoning that reaches past `from` starts (`from` itself when it is inside one).
    pub fn reasoning_from(&self, from: usize) -> Option<usize> {
        let first = self.reasoning.partition_point(|r| r.end <= from);
        self.reasoning.get(first).map(|r| r.start.max(from))
    }

    /// The region holding `pos`, if any.
    pub fn at(&self, pos: usize) -> Option<&Region> {
        let after = self.regions.partition_point(|r| r.range.start <= pos);
        self.regions[..after].last().filter(|r| r.range.contains(&pos))
    }

    pub fn regions(&self) -> &[Region] {
        &self.regions
    }
}

/// Every line: where it starts, its text without its line break, and where the next one starts.
fn line_starts(text: &str) -> impl Iterator<Item = (usize, &str, usize)> {
    let mut at = 0;
    text.split_inclusive('\n').map(move |line| {
        let start = at;
        at += line.len();
        (start, line.trim_end_matches(['\n', '\r']), at)
    })
}

/// `<think>` blocks (a closing tag with no opening one: everything before it, as templates that open the block
/// in the prompt write it; an opening one never closed: everything after it) and harmony analysis messages.
fn reasoning(text: &str) -> Vec<Region> {
    let mut regions = Vec::new();
    for (open, close) in THINK {
        let (mut opens, mut closes) = (Unquoted::new(text, open), Unquoted::new(text, close));
        let mut at = 0;
        let first_open = opens.next(0);
        if let Some(end) = closes.next(0).filter(|end| first_open.is_none_or(|open| open > *end)) {
            regions.push(Region { range: 0..end + close.len(), kind: Kind::Reasoning });
            at = end + close.len();
        }
        while let Some(start) = opens.next(at) {
            let end = closes.next(start).map_or(text.len(), |i| i + close.len());
            regions.push(Region { range: start..end, kind: Kind::Reasoning });
            at = end;
        }
    }
    let mut ends = ["<|end|>", "<|start|>", "<|channel|>"].map(|t| Ahead::new(text, t));
    let mut at = 0;
    while let Some(start) = text[at..].find(ANALYSIS).map(|i| at + i) {
        let body = start + ANALYSIS.len();
        let end = ends.iter_mut().filter_map(|t| t.next(body)).min().unwrap_or(text.len());
        regions.push(Region { range: start..end, kind: Kind::Reasoning });
        at = end.max(body);
    }
    regions
}

/// The places of a tag that is not inside inline code on its line (an odd number of backticks before it), for
/// places asked in increasing order: each byte of the text is counted once.
struct Unquoted<'a> {
    text: &'a str,
    tag: Ahead<'a>,
    /// How far the backticks are counted, and how many since that line's start.
    counted: usize,
    ticks: usize,
}

impl<'a> Unquoted<'a> {
    fn new(text: &'a str, tag: &'a str) -> Self {
        Self { text, tag: Ahead::new(text, tag), counted: 0, ticks: 0 }
    }

    /// The first place of the tag at or after `from` that is not in inline code.
    fn next(&mut self, from: usize) -> Option<usize> {
        let mut from = from;
        loop {
            let at = self.tag.next(from)?;
            for byte in &self.text.as_bytes()[self.counted.min(at)..at] {
                match byte {
                    b'\n' => self.ticks = 0,
                    b'`' => self.ticks += 1,
                    _ => {}
                }
            }
            self.counted = self.counted.max(at);
            if self.ticks.is_multiple_of(2) {
                return Some(at);
            }
            from = at + 1;
        }
    }
}

/// A line without the list marker before a fence on it (`- ```` opens a fence in a list item).
fn without_list_marker(line: &str) -> &str {
    let bullet = line.strip_prefix(['-', '*', '+']);
    let number = line
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .strip_prefix(['.', ')'])
        .filter(|_| line.starts_with(|c: char| c.is_ascii_digit()));
    match bullet.or(number).map(str::trim_start) {
        Some(rest) if rest.starts_with("```") || rest.starts_with("~~~") => rest,
        _ => line,
    }
}

/// The state of the line-by-line pass: an open fence, and an inline code span running over lines.
#[derive(Default)]
struct Lines {
    /// The fence open: its marker's character and length, where its opening line starts, and where its body
    /// starts.
    fence: Option<((u8, usize), usize, usize)>,
    /// Inline code open over a line's end: its backticks, where it starts, and whether only space was before it.
    inline: Option<(usize, usize, bool)>,
}

impl Lines {
    fn line(&mut self, start: usize, line: &str, next: usize, regions: &mut Vec<Region>) {
        let trimmed = without_list_marker(line.trim_start());
        let first = trimmed.as_bytes().first().copied().filter(|c| matches!(c, b'`' | b'~')).unwrap_or(b'`');
        let run = trimmed.bytes().take_while(|c| *c == first).count();
        let is_marker = run >= 3;
        if let Some(((open, open_run), from, body)) = self.fence {
            if is_marker && first == open && run >= open_run && trimmed[run..].trim().is_empty() {
                regions.push(Region { range: body..start, kind: Kind::Fence { from, to: next } });
                self.fence = None;
            }
            return;
        }
        // A fence interrupts a paragraph and any code span open in it, unless its backticks close that span.
        let closes_inline = self.inline.is_some_and(|(open_run, ..)| first == b'`' && open_run == run);
        if is_marker && !closes_inline {
            self.inline = None;
            let rest = &trimmed[run..];
            let marker = &trimmed[..run];
            let close = (first == b'`' && rest.contains('`')).then(|| rest.find(marker)).flatten();
            if let Some(close) = close {
                // ```a call``` on one line: a fence of one line.
                let body = start + (line.len() - trimmed.len()) + run;
                regions.push(Region { range: body..body + close, kind: Kind::Fence { from: start, to: next } });
            } else {
                self.fence = Some(((first, run), start, next));
            }
            return;
        }
        if trimmed.is_empty() {
            self.inline = None; // a code span ends with its paragraph
            return;
        }
        if trimmed.starts_with('>') {
            self.inline = None;
            let from = start + (line.len() - trimmed.len());
            regions.push(Region { range: from..start + line.len(), kind: Kind::BlockQuote });
            return;
        }
        self.inline_code(start, line, regions);
    }

    /// Code spans on a line: a run of backticks up to the next run of as many.
    fn inline_code(&mut self, start: usize, line: &str, regions: &mut Vec<Region>) {
        let mut at = 0;
        while at < line.len() {
            let Some(tick) = line[at..].find('`').map(|i| at + i) else { break };
            let run = line[tick..].len() - line[tick..].trim_start_matches('`').len();
            match self.inline.take() {
                Some((open_run, open_start, alone_before)) if open_run == run => {
                    let alone = alone_before && line[tick + run..].trim().is_empty();
                    let range = open_start..start + tick + run;
                    regions.push(Region { range, kind: Kind::Inline { whole_line: alone } });
                }
                Some(open) => self.inline = Some(open),
                None => self.inline = Some((run, start + tick, line[..tick].trim().is_empty())),
            }
            at = tick + run;
        }
    }

    fn finish(self, end: usize, regions: &mut Vec<Region>) {
        if let Some((_, from, body)) = self.fence {
            regions.push(Region { range: body.min(end)..end, kind: Kind::Fence { from, to: end } });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(String, Kind)> {
        Quoted::of(text).regions.iter().map(|r| (text[r.range.clone()].to_owned(), r.kind)).collect()
    }

    #[test]
    fn fences_inline_code_quotes_and_reasoning_are_found() {
        let text = "Intro `a(b=1)` here.\n```python\nf(x=1)\n```\n> quoted\n`g(y=2)`\n<think>h(z=3)</think>done";
        assert_eq!(
            kinds(text),
            vec![
                ("`a(b=1)`".to_owned(), Kind::Inline { whole_line: false }),
                ("f(x=1)\n".to_owned(), Kind::Fence { from: 21, to: 42 }),
                ("> quoted".to_owned(), Kind::BlockQuote),
                ("`g(y=2)`".to_owned(), Kind::Inline { whole_line: true }),
                ("<think>h(z=3)</think>".to_owned(), Kind::Reasoning),
            ]
        );
    }

    #[test]
    fn a_closing_think_tag_alone_quotes_what_is_before_it_and_an_open_fence_runs_to_the_end() {
        assert_eq!(kinds("plan f(x=1)</think>answer"), vec![("plan f(x=1)</think>".to_owned(), Kind::Reasoning)]);
        assert_eq!(kinds("Code:\n```\nf(x=1)"), vec![("f(x=1)".to_owned(), Kind::Fence { from: 6, to: 16 })]);
        let analysis = "<|channel|>analysis<|message|>call f<|end|><|start|>assistant";
        assert_eq!(kinds(analysis), vec![("<|channel|>analysis<|message|>call f".to_owned(), Kind::Reasoning)]);
    }

    #[test]
    fn a_fence_that_quotes_a_reasoning_marker_is_one_fence() {
        let text =
            "Docs:\n```\n<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.f<|message|>{}\n```";
        assert_eq!(kinds(text).len(), 1);
        assert!(matches!(kinds(text)[0].1, Kind::Fence { .. }));
    }

    #[test]
    fn inline_code_may_run_over_lines_of_one_paragraph() {
        let text = "Write `<tool_call>\n{}\n</tool_call>` to call.";
        assert_eq!(
            kinds(text),
            vec![("`<tool_call>\n{}\n</tool_call>`".to_owned(), Kind::Inline { whole_line: false })]
        );
        assert_eq!(kinds("a `b\n\nc` d"), vec![]);
    }
}
