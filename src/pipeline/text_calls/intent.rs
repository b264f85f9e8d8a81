//! Whether the calls found in a text are its action: the words before and after each call are read, and any that
//! make it an example, a negation, a question, options, the past, a condition or another's words refuse it.
//!
//! Outside a template's tags the default is no call: the words leading to a call must be nothing, or a lead-in
//! that declares the call an action taken now (`here is the call:`, `I'll check the weather.`, `To book it:`).
//! That is an allowlist of intent in English (`lead.rs`); anything else (another language included) is refused.

use super::cues::{self, Scope};
use super::lead::declares_action;
use super::quoted::Quoted;
use super::refusal::{Reason, TextRefusal};
use std::ops::Range;

/// How much of the text before a call is read as its lead-in, and after it as what follows: enough for the
/// paragraphs around a call, and a bound on the work per call.
const MAX_LEAD: usize = 1000;
const MAX_AFTER: usize = 500;

/// Refuses the calls at `spans` (in order, apart) unless each is the answer's action. `tagged`: the calls are in a
/// template's tags, which already say they are calls, so only the words that refuse are read.
pub fn judge(text: &str, spans: &[Range<usize>], tagged: bool, quoted: &Quoted) -> Result<(), TextRefusal> {
    for (i, span) in spans.iter().enumerate() {
        let from = if i == 0 { 0 } else { spans[i - 1].end };
        let to = spans.get(i + 1).map_or(text.len(), |next| next.start);
        let start = answer_start(text, from..span.start, quoted);
        let lead = lead_in(text, start..span.start);
        let sentence = last_sentence(&text[lead.clone()]);
        let earlier = last_paragraph(text, start..lead.start);
        let lead = &text[lead];
        let cue = cues::first(lead, &[Scope::Lead])
            .or_else(|| cues::first(sentence, &[Scope::Sentence]))
            .map(|cue| (cue, lead))
            .or_else(|| cues::first(earlier, &[Scope::Before]).map(|cue| (cue, earlier)));
        if let Some(((reason, word), around)) = cue {
            return Err(refused(reason, word, around));
        }
        if !tagged && !declares_action(sentence) {
            return Err(TextRefusal::new(
                Reason::NotAnAction,
                format!("the words before the call ({:?}) do not make it an action taken now", excerpt(sentence)),
            ));
        }
        let after = after(text, span.end..to, quoted);
        if let Some((reason, word)) = cues::first(after, &[Scope::After]) {
            return Err(refused(reason, word, after));
        }
        if let Some(question) = asks(after) {
            return Err(TextRefusal::new(
                Reason::Question,
                format!("the call is followed by a question: {question:?}"),
            ));
        }
    }
    Ok(())
}

fn refused(reason: Reason, word: &str, around: &str) -> TextRefusal {
    let what = match reason {
        Reason::Example => "shown as an example",
        Reason::Negated => "negated",
        Reason::Question => "asked about, not made",
        Reason::Options => "offered as options",
        Reason::Past => "reported as made before",
        Reason::Hypothetical => "conditional or supposed",
        Reason::OtherSpeaker => "another's words",
        _ => "not made",
    };
    TextRefusal::new(reason, format!("the call is {what} ({word:?} in {:?}): none was made", excerpt(around)))
}

/// At most 80 characters of `text`, trimmed, for a refusal's words.
fn excerpt(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Where the answer's own words before a call in `range` start: after any reasoning, and after a chat template's
/// header, which opens the answer's turn (what is before it is not the answer's).
fn answer_start(text: &str, range: Range<usize>, quoted: &Quoted) -> usize {
    let start = quoted.reasoning_ends_in(&range).unwrap_or(range.start);
    match text[start..range.end].rfind("<|end_header_id|>") {
        Some(header) => start + header + "<|end_header_id|>".len(),
        None => start,
    }
}

/// The lead-in of a call whose answer's words before it are `range`: the last paragraph, with the paragraphs
/// before that it continues (each ending in `:`), at most `MAX_LEAD` bytes.
fn lead_in(text: &str, range: Range<usize>) -> Range<usize> {
    let before = text[range.clone()].trim_end();
    let mut lead_start = paragraph_start(before, before.len());
    for _ in 0..2 {
        let earlier = before[..lead_start].trim_end();
        if !earlier.ends_with(':') {
            break;
        }
        lead_start = paragraph_start(before, earlier.len());
    }
    let lead_start = lead_start.max(before.len().saturating_sub(MAX_LEAD));
    let lead_start = (lead_start..before.len()).find(|&i| before.is_char_boundary(i)).unwrap_or(before.len());
    let lead = &before[lead_start..];
    let start = range.start + lead_start + (lead.len() - lead.trim_start().len());
    start..range.start + before.len()
}

/// The last paragraph of `range`, at most `MAX_LEAD` bytes.
fn last_paragraph(text: &str, range: Range<usize>) -> &str {
    let before = text[range].trim_end();
    let start = paragraph_start(before, before.len()).max(before.len().saturating_sub(MAX_LEAD));
    let start = (start..before.len()).find(|&i| before.is_char_boundary(i)).unwrap_or(before.len());
    before[start..].trim_start()
}

/// Where the paragraph that ends at `end` starts: after the last blank line before it.
fn paragraph_start(text: &str, end: usize) -> usize {
    let mut line_end = end;
    while let Some(newline) = text[..line_end].rfind('\n') {
        let line_start = text[..newline].rfind('\n').map_or(0, |i| i + 1);
        if text[line_start..newline].trim().is_empty() {
            return newline + 1;
        }
        line_end = newline;
    }
    0
}

/// The sentence that leads straight to the call: the lead-in's last line, after its last full stop.
fn last_sentence(lead: &str) -> &str {
    let line = lead.rsplit('\n').next().unwrap_or(lead);
    let cut = [". ", "! ", "? ", "。"].iter().filter_map(|t| line.rfind(t).map(|i| i + t.len())).max();
    cut.map_or(line, |i| &line[i..]).trim()
}

/// What follows a call up to the next: the rest of its paragraph and the next two, up to any reasoning, at most
/// `MAX_AFTER` bytes.
fn after<'a>(text: &'a str, range: Range<usize>, quoted: &Quoted) -> &'a str {
    let mut end = range.end.min(range.start + MAX_AFTER);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if let Some(thought) = quoted.reasoning_from(range.start).filter(|at| *at < end) {
        end = thought;
    }
    let rest = &text[range.start..end];
    // The rest of the call's line, the rest of its paragraph, then the next two: a blank line ends one.
    let (mut paragraphs, mut blank_before, mut at) = (0, false, 0);
    for (i, line) in rest.split_inclusive('\n').enumerate() {
        let blank = i > 0 && line.trim().is_empty();
        if blank && !blank_before {
            paragraphs += 1;
            if paragraphs == 3 {
                break;
            }
        }
        blank_before = blank;
        at += line.len();
    }
    rest[..at].trim()
}

/// A question in `text` that asks the user something, other than whether they need anything else.
fn asks(text: &str) -> Option<&str> {
    const CLOSERS: [&str; 6] = ["anything else", "further", "other question", "any question", "more help", "help with"];
    let mut from = 0;
    for (i, c) in text.char_indices() {
        if matches!(c, '.' | '!' | '\n') {
            from = i + c.len_utf8();
        } else if matches!(c, '?' | '？') {
            let question = text[from..i + c.len_utf8()].trim();
            if question.matches(['"', '\u{201c}', '\u{201d}']).count() % 2 == 1 {
                continue; // a question inside a quotation: what the call's arguments or result say
            }
            let lower = question.to_lowercase();
            if !CLOSERS.iter().any(|c| lower.contains(c)) {
                return Some(question);
            }
            from = i + c.len_utf8();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lead_in_is_its_paragraph_and_the_introductions_it_continues() {
        let quoted = Quoted::default();
        let text = "Intro.\n\nHere's how:\n\n1. Oslo:\nCALL";
        let at = text.find("CALL").unwrap();
        assert_eq!(&text[lead_in(text, answer_start(text, 0..at, &quoted)..at)], "Here's how:\n\n1. Oslo:");
        let text = "No.\n\nA thing.\nThe call is:\nCALL";
        let at = text.find("CALL").unwrap();
        let lead = lead_in(text, 0..at);
        assert_eq!(&text[lead.clone()], "A thing.\nThe call is:");
        assert_eq!(last_paragraph(text, 0..lead.start), "No.");
        assert_eq!(last_sentence("Here is an example. Note the quoting:"), "Note the quoting:");
    }

    #[test]
    fn what_follows_a_call_is_its_paragraph_and_the_next_two() {
        let quoted = Quoted::default();
        let text = "X rest of line\nmore\n\nnext para\n\nand the next\n\nfar away";
        assert_eq!(after(text, 1..text.len(), &quoted), "rest of line\nmore\n\nnext para\n\nand the next");
        assert_eq!(asks("Done. Anything else I can help with?"), None);
        assert_eq!(asks("Which city? Oslo."), Some("Which city?"));
    }
}
