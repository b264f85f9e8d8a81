//! Whether the calls found in a text are its action: the words before and after each call are read, and any that
//! make it an example, a negation, a question, options, the past, a condition or another's words refuse it.
//!
//! Outside a template's tags the default is no call: the words leading to a call must be nothing, or a lead-in
//! that declares the call an action taken now (`here is the call:`, `I'll check the weather.`, `To book it:`).
//! That is an allowlist of intent in English; anything else (another language included) is refused.

use super::cues::{self, Scope};
use super::quoted::Quoted;
use super::refusal::{Reason, Refusal};
use std::ops::Range;

/// How much of the text before a call is read as its lead-in, and after it as what follows: enough for the
/// paragraphs around a call, and a bound on the work per call.
const MAX_LEAD: usize = 1000;
const MAX_AFTER: usize = 500;

/// Refuses the calls at `spans` (in order, apart) unless each is the answer's action. `tagged`: the calls are in a
/// template's tags, which already say they are calls, so only the words that refuse are read.
pub fn judge(text: &str, spans: &[Range<usize>], tagged: bool, quoted: &Quoted) -> Result<(), Refusal> {
    for (i, span) in spans.iter().enumerate() {
        let from = if i == 0 { 0 } else { spans[i - 1].end };
        let to = spans.get(i + 1).map_or(text.len(), |next| next.start);
        let lead = lead_in(text, from..span.start, quoted);
        let sentence = last_sentence(lead);
        if let Some((reason, word)) =
            cues::first(lead, &[Scope::Lead]).or_else(|| cues::first(sentence, &[Scope::Sentence]))
        {
            return Err(refused(reason, word, lead));
        }
        if !tagged && !declares_action(sentence) {
            return Err(Refusal::new(
                Reason::NotAnAction,
                format!("the words before the call ({:?}) do not make it an action taken now", excerpt(sentence)),
            ));
        }
        let after = after(text, span.end..to, quoted);
        if let Some((reason, word)) = cues::first(after, &[Scope::After]) {
            return Err(refused(reason, word, after));
        }
        if let Some(question) = asks(after) {
            return Err(Refusal::new(Reason::Question, format!("the call is followed by a question: {question:?}")));
        }
    }
    Ok(())
}

fn refused(reason: Reason, word: &str, around: &str) -> Refusal {
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
    Refusal::new(reason, format!("the call is {what} ({word:?} in {:?}): none was made", excerpt(around)))
}

/// At most 80 characters of `text`, trimmed, for a refusal's words.
fn excerpt(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The lead-in of a call in `range`: the last paragraph before it, with the paragraphs before that it continues
/// (each ending in `:`), after any reasoning, at most `MAX_LEAD` bytes.
fn lead_in<'a>(text: &'a str, range: Range<usize>, quoted: &Quoted) -> &'a str {
    let mut start = quoted.reasoning_ends_in(&range).unwrap_or(range.start);
    // A chat template's header opens the answer's turn: what is before it is not the answer's.
    if let Some(header) = text[start..range.end].rfind("<|end_header_id|>") {
        start += header + "<|end_header_id|>".len();
    }
    let before = text[start..range.end].trim_end();
    let mut lead_start = paragraph_start(before, before.len());
    for _ in 0..2 {
        let earlier = before[..lead_start].trim_end();
        if !earlier.ends_with(':') {
            break;
        }
        lead_start = paragraph_start(before, earlier.len());
    }
    let lead = &before[lead_start..];
    let cut = lead.len().saturating_sub(MAX_LEAD);
    let cut = (cut..lead.len()).find(|&i| lead.is_char_boundary(i)).unwrap_or(lead.len());
    lead[cut..].trim_start()
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

/// What follows a call up to the next: the rest of its paragraph and the next one, up to any reasoning, at most
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
    // The rest of the call's line, the rest of its paragraph, then the next paragraph: a blank line ends one.
    let (mut paragraphs, mut blank_before, mut at) = (0, false, 0);
    for (i, line) in rest.split_inclusive('\n').enumerate() {
        let blank = i > 0 && line.trim().is_empty();
        if blank && !blank_before {
            paragraphs += 1;
            if paragraphs == 2 {
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

/// Whether a lead-in sentence declares what follows an action taken now (English only): nothing at all, a
/// presentation (`here is`, `the following`), the speaker acting (`I'll`, `let me`, `calling`), a purpose or a
/// step heading (`To book the table:`, `First, convert the amount:`), a label (`Function call:`), or a value
/// named in code (`result = `).
pub fn declares_action(sentence: &str) -> bool {
    let trimmed = sentence.trim();
    let heading = trimmed.ends_with(':');
    if let Some(name) = trimmed.strip_suffix('=') {
        let name = name.trim_end();
        return !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    }
    let (normal, numbered) = normalize(trimmed);
    let (plain, stepped) = without_fillers(&normal);
    let stepped = stepped || numbered;
    if acts(&plain, heading, stepped) {
        return true;
    }
    // `Based on the question, here is the call:`: what follows an opening clause.
    let clause = CLAUSES.iter().any(|c| plain.starts_with(c));
    clause && plain.split_once(", ").is_some_and(|(_, rest)| acts(&without_fillers(rest).0, heading, stepped))
}

const CLAUSES: [&str; 8] =
    ["based on", "according to", "given", "using", "with the", "in order to", "to answer", "to address"];

fn acts(s: &str, heading: bool, stepped: bool) -> bool {
    if s.is_empty() {
        return true;
    }
    const PRESENT: [&str; 9] =
        ["here is", "here are", "here's", "heres", "here goes", "below is", "below are", "the following", "these are"];
    const ACTING: [&str; 17] = [
        "i'll",
        "i will",
        "i am going to",
        "i'm going to",
        "let me",
        "let's",
        "let us",
        "we'll",
        "we will",
        "i shall",
        "i need to call",
        "we need to call",
        "i'm calling",
        "i am calling",
        "i'm now",
        "i am now",
        "now i'll",
    ];
    const LABELS: [&str; 20] = [
        "tool call",
        "tool calls",
        "tools call",
        "tools calls",
        "function call",
        "function calls",
        "call",
        "calls",
        "answer",
        "solution",
        "response",
        "action",
        "actions",
        "code",
        "python",
        "python code",
        "json",
        "function calls in python",
        "tool_call",
        "functions",
    ];
    let starts = |list: &[&str]| list.iter().any(|p| s == *p || s.starts_with(&format!("{p} ")));
    if starts(&PRESENT) || starts(&ACTING) || LABELS.contains(&s) {
        return true;
    }
    let first = s.split(' ').next().unwrap_or_default();
    const NOT_VERBS: [&str; 9] =
        ["warning", "nothing", "something", "anything", "everything", "thing", "string", "morning", "evening"];
    if first.len() > 4 && first.ends_with("ing") && !NOT_VERBS.contains(&first) {
        return true; // `Calling get_weather for Oslo.`, `Checking both cities:`
    }
    if heading && (first == "to" || first == "for" || (stepped && TASK_VERBS.contains(&first))) {
        return true; // a purpose heading, `To book the table:`, or a step, `1. Convert the amount:`
    }
    // `The function call is:`, `The final answer is:`, `The appropriate function calls are:`
    let named = [" call", " answer", " solution", " code"].iter().any(|w| s.contains(w));
    let is = [" is", " are", " call", " calls"].iter().any(|end| s.ends_with(end));
    s.starts_with("the ") && named && is
}

/// Verbs a numbered or ordered step of a plan starts with (`2. Convert 15 km to miles:`).
const TASK_VERBS: [&str; 32] = [
    "call",
    "run",
    "use",
    "invoke",
    "execute",
    "get",
    "find",
    "search",
    "look",
    "fetch",
    "retrieve",
    "check",
    "calculate",
    "compute",
    "convert",
    "create",
    "book",
    "send",
    "set",
    "add",
    "update",
    "determine",
    "estimate",
    "predict",
    "generate",
    "analyze",
    "analyse",
    "combine",
    "query",
    "list",
    "sort",
    "translate",
];

/// The sentence in lower case, without list markers, emphasis, heading marks and its closing punctuation, and
/// whether it was numbered (`2. Convert…`).
fn normalize(sentence: &str) -> (String, bool) {
    let s = sentence.trim().to_lowercase().replace(['*', '#', '`'], "").replace('\u{2019}', "'");
    let s = s.trim_start_matches(|c: char| c == '-' || c == '•' || c.is_whitespace());
    let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let numbered = digits > 0 && s[digits..].starts_with(['.', ')']);
    let s = if numbered { &s[digits + 1..] } else { s };
    let s = s.trim().trim_end_matches([':', '.', '!', ' ']);
    (s.split_whitespace().collect::<Vec<_>>().join(" "), numbered)
}

/// The sentence without the words a model opens with before it says what it does (`Sure,`, `Therefore,`), and
/// whether one of them ordered it as a step (`First,`, `1.`).
fn without_fillers(s: &str) -> (String, bool) {
    const FILLERS: [&str; 20] = [
        "sure",
        "okay",
        "ok",
        "certainly",
        "of course",
        "alright",
        "all right",
        "great",
        "absolutely",
        "yes",
        "got it",
        "understood",
        "i can help with that",
        "i can help you with that",
        "happy to help",
        "so",
        "therefore",
        "thus",
        "hence",
        "and",
    ];
    const STEPS: [&str; 8] = ["first", "second", "third", "next", "then", "finally", "now", "lastly"];
    let mut s = s.to_owned();
    let mut stepped = false;
    loop {
        let before = s.len();
        for (filler, step) in FILLERS.iter().map(|f| (f, false)).chain(STEPS.iter().map(|f| (f, true))) {
            if let Some(rest) = s.strip_prefix(filler).filter(|r| r.is_empty() || r.starts_with([',', '!', '.', ' '])) {
                s = rest.trim_start_matches([',', '!', '.', ' ']).to_owned();
                stepped |= step;
            }
        }
        if s.len() == before {
            return (s, stepped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lead_ins_that_declare_an_action_now() {
        for lead in [
            "",
            "Here are the function calls to answer the question:",
            "Sure, here is the function call:",
            "Based on the question, here are the function calls:",
            "I'll check the weather in Oslo.",
            "Let me look that up.",
            "Calling get_weather for Oslo.",
            "1. To book a hotel room in Paris:",
            "For the Italian restaurant in New York:",
            "tools call:",
            "**Function call:**",
            "Therefore, the function call is:",
            "First, convert 5000 Japanese Yen to US Dollars using the 'currency_conversion' function:",
            "2. Retrieve the details of the case:",
            "Using the 'calculate_fitness' function, the function call is:",
            "result =",
            "The function call is:",
            "The appropriate function calls are:",
        ] {
            assert!(declares_action(lead), "{lead:?}");
        }
    }

    #[test]
    fn lead_ins_that_do_not() {
        for lead in [
            "I found two repositories named prod:",
            "Bad:",
            "Test 1 input:",
            "Beispiel:",
            "Por ejemplo:",
            "The request body looks like this:",
            "Warning: running this deletes everything:",
            "The user wrote:",
            "To delete a repository",
            "The function that would do it is:",
            "Convert the amount:",
            "1. Beispiel:",
        ] {
            assert!(!declares_action(lead), "{lead:?}");
        }
    }

    #[test]
    fn a_lead_in_is_its_paragraph_and_the_introductions_it_continues() {
        let quoted = Quoted::default();
        let text = "Intro.\n\nHere's how:\n\n1. Oslo:\nCALL";
        let at = text.find("CALL").unwrap();
        assert_eq!(lead_in(text, 0..at, &quoted), "Here's how:\n\n1. Oslo:");
        let text = "No.\n\nA thing.\nThe call is:\nCALL";
        let at = text.find("CALL").unwrap();
        assert_eq!(lead_in(text, 0..at, &quoted), "A thing.\nThe call is:");
        assert_eq!(last_sentence("Here is an example. Note the quoting:"), "Note the quoting:");
    }

    #[test]
    fn what_follows_a_call_is_its_paragraph_and_the_next() {
        let quoted = Quoted::default();
        let text = "X rest of line\nmore\n\nnext para\n\nfar away";
        assert_eq!(after(text, 1..text.len(), &quoted), "rest of line\nmore\n\nnext para");
        assert_eq!(asks("Done. Anything else I can help with?"), None);
        assert_eq!(asks("Which city? Oslo."), Some("Which city?"));
    }
}
