//! Syntax repair: re-reads text that is not JSON but means exactly one JSON value, and refuses the rest.
//!
//! It reads code fences, chat-template residue, single quotes, Python literals, trailing commas, comments
//! and bare keys. It never closes what was cut off, never fills a missing value, never drops a word:
//! every string, number and literal of the output is one the model wrote, in the same place.

use super::rules::RepairRule;
use serde_json::Value;

/// Why text could not be read as JSON.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SyntaxError {
    #[error("end before their value is complete: they look cut off, and a cut-off value is never completed")]
    Truncated,
    #[error("nest deeper than the limit of {0} levels")]
    TooDeep(usize),
    #[error("are not valid JSON: {0}")]
    Unreadable(String),
    /// Readable, but with more than one reading: a key twice in one object.
    #[error("are ambiguous: {0}")]
    Ambiguous(String),
}

impl SyntaxError {
    /// A failure to read `text` as strict JSON: ambiguous when it is well-formed but says a key twice.
    pub fn of(error: &serde_json::Error) -> Self {
        if error.is_data() { Self::Ambiguous(error.to_string()) } else { Self::Unreadable(error.to_string()) }
    }
}

/// A lenient reading: the value and the rules it took.
#[derive(Debug, PartialEq)]
pub struct Reading {
    pub value: Value,
    pub rules: Vec<RepairRule>,
}

/// Reads `text` as one JSON value, repairing syntax only. `allow` says which rules may run.
pub fn read_lenient(text: &str, max_depth: usize, allow: impl Fn(RepairRule) -> bool) -> Result<Reading, SyntaxError> {
    let mut rules = Vec::new();
    let mut body = text.trim();
    if let Some(inner) = strip_fence(body).filter(|_| allow(RepairRule::CodeFence)) {
        body = inner;
        rules.push(RepairRule::CodeFence);
    }
    if let Some(inner) = strip_residue(body).filter(|_| allow(RepairRule::TemplateResidue)) {
        body = inner;
        rules.push(RepairRule::TemplateResidue);
    }
    let unreadable = |e: serde_json::Error| SyntaxError::Unreadable(e.to_string());
    match crate::pipeline::strict::from_str(body) {
        Ok(value) if !rules.is_empty() => return Ok(Reading { value, rules }),
        Ok(_) => return Err(SyntaxError::Unreadable("nothing to repair".into())),
        Err(e) if !allow(RepairRule::JsonSyntax) => return Err(unreadable(e)),
        Err(_) => {}
    }
    let json = rewrite(body, max_depth)?;
    let value = crate::pipeline::strict::from_str(&json).map_err(|e| SyntaxError::of(&e))?;
    rules.push(RepairRule::JsonSyntax);
    Ok(Reading { value, rules })
}

/// Reads text that may be strict JSON or lenient, within `max_depth` either way. None when it has no reading.
pub fn read_any(text: &str, max_depth: usize, allow: impl Fn(RepairRule) -> bool) -> Option<Value> {
    if !nesting_within(text, max_depth) {
        return None;
    }
    crate::pipeline::strict::from_str(text).ok().or_else(|| read_lenient(text, max_depth, allow).ok().map(|r| r.value))
}

/// Whether brackets outside double-quoted strings nest at most `max_depth` deep: a scan with no recursion.
pub fn nesting_within(text: &str, max_depth: usize) -> bool {
    // Brackets cannot nest deeper than there are opening ones: a count the compiler vectorises answers most
    // texts, and only one with more openings than the limit is walked through its strings.
    if text.bytes().filter(|&b| b == b'[' || b == b'{').count() <= max_depth {
        return true;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max_depth {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

/// The inside of a Markdown code fence: "```json\n...\n```". Either fence alone is stripped too.
fn strip_fence(text: &str) -> Option<&str> {
    let Some(rest) = text.strip_prefix("```") else {
        return text.strip_suffix("```").map(str::trim_end);
    };
    // The info string ("json") runs to the end of the first line, unless the fence is all on one line.
    let rest = if rest.starts_with(['{', '[']) { rest } else { &rest[rest.find('\n')?..] };
    Some(rest.trim_end().strip_suffix("```").unwrap_or(rest).trim())
}

/// The one JSON-looking segment of text cut up by chat-template tokens such as `<|call|>`.
fn strip_residue(text: &str) -> Option<&str> {
    if !text.contains("<|") {
        return None;
    }
    let mut segments = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<|") {
        let end = rest[start + 2..].find("|>").map(|e| start + 2 + e + 2)?;
        let token = &rest[start + 2..end - 2];
        if token.is_empty() || !token.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        segments.push(&rest[..start]);
        rest = &rest[end..];
    }
    segments.push(rest);
    let json: Vec<&str> = segments.iter().map(|s| s.trim()).filter(|s| s.starts_with(['{', '['])).collect();
    match json[..] {
        [one] => Some(one),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Open {
    Object,
    Array,
}

/// The token stream of lenient text, written back out as strict JSON text.
struct Writer {
    out: String,
    stack: Vec<Open>,
    max_depth: usize,
    /// Inside an object, where the next token must be a key.
    expect_key: bool,
    /// The last token written was a comma, which a closing bracket would make trailing.
    after_comma: bool,
    /// The last token written ended a value, so only `,`, `:` or a closing bracket may follow.
    after_value: bool,
    done: bool,
}

fn rewrite(text: &str, max_depth: usize) -> Result<String, SyntaxError> {
    let mut w = Writer {
        out: String::with_capacity(text.len() + 8),
        stack: Vec::new(),
        max_depth,
        expect_key: false,
        after_comma: false,
        after_value: false,
        done: false,
    };
    let mut chars = text.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        match c {
            _ if c.is_whitespace() => {
                chars.next();
            }
            '/' | '#' => skip_comment(text, i, &mut chars)?,
            '{' | '[' => {
                chars.next();
                w.open(if c == '{' { Open::Object } else { Open::Array })?;
            }
            '}' | ']' => {
                chars.next();
                w.close(if c == '}' { Open::Object } else { Open::Array })?;
            }
            ',' | ':' => {
                chars.next();
                w.punct(c)?;
            }
            '"' | '\'' => {
                let s = read_string(&mut chars)?;
                w.scalar(&Value::String(s).to_string())?;
            }
            '-' | '0'..='9' => w.scalar(read_number(text, &mut chars)?)?,
            _ if c.is_ascii_alphabetic() || c == '_' => w.word(read_word(text, &mut chars))?,
            _ => return Err(SyntaxError::Unreadable(format!("unexpected character {c:?} at byte {i}"))),
        }
    }
    if !w.stack.is_empty() || !w.done {
        return Err(SyntaxError::Truncated);
    }
    Ok(w.out)
}

impl Writer {
    fn value_start(&mut self) -> Result<(), SyntaxError> {
        if self.done && self.stack.is_empty() {
            return Err(SyntaxError::Unreadable("they hold more than one value".into()));
        }
        if self.after_value {
            return Err(SyntaxError::Unreadable("a value follows another without a comma".into()));
        }
        self.after_comma = false;
        Ok(())
    }

    fn open(&mut self, kind: Open) -> Result<(), SyntaxError> {
        self.value_start()?;
        if self.stack.len() >= self.max_depth {
            return Err(SyntaxError::TooDeep(self.max_depth));
        }
        self.stack.push(kind);
        self.expect_key = kind == Open::Object;
        self.out.push(if kind == Open::Object { '{' } else { '[' });
        Ok(())
    }

    fn close(&mut self, kind: Open) -> Result<(), SyntaxError> {
        if self.stack.pop() != Some(kind) {
            return Err(SyntaxError::Unreadable("their brackets do not match".into()));
        }
        if self.after_comma {
            self.out.pop();
            self.after_comma = false;
        }
        self.out.push(if kind == Open::Object { '}' } else { ']' });
        self.finish_value();
        Ok(())
    }

    fn punct(&mut self, c: char) -> Result<(), SyntaxError> {
        if self.stack.is_empty() || self.after_comma {
            return Err(SyntaxError::Unreadable(format!("unexpected {c:?}")));
        }
        self.out.push(c);
        self.after_value = false;
        self.after_comma = c == ',';
        self.expect_key = c == ',' && self.stack.last() == Some(&Open::Object);
        Ok(())
    }

    fn scalar(&mut self, json: &str) -> Result<(), SyntaxError> {
        self.value_start()?;
        self.out.push_str(json);
        self.finish_value();
        Ok(())
    }

    /// A bare word: a Python or JSON literal, or an object key.
    fn word(&mut self, word: &str) -> Result<(), SyntaxError> {
        let literal = match word.to_ascii_lowercase().as_str() {
            _ if self.expect_key => return self.scalar(&Value::String(word.to_owned()).to_string()),
            "true" => "true",
            "false" => "false",
            "null" | "none" => "null",
            _ => return Err(SyntaxError::Unreadable(format!("{word:?} is not a JSON value; quote strings"))),
        };
        self.scalar(literal)
    }

    fn finish_value(&mut self) {
        self.after_value = true;
        self.expect_key = false;
        self.done = true;
    }
}

type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

fn skip_comment(text: &str, at: usize, chars: &mut Chars) -> Result<(), SyntaxError> {
    let rest = &text[at..];
    let len = if rest.starts_with("//") || rest.starts_with('#') {
        rest.find('\n').unwrap_or(rest.len())
    } else if rest.starts_with("/*") {
        rest.find("*/").map(|e| e + 2).ok_or(SyntaxError::Truncated)?
    } else {
        return Err(SyntaxError::Unreadable(format!("unexpected '/' at byte {at}")));
    };
    while chars.next_if(|&(i, _)| i < at + len).is_some() {}
    Ok(())
}

/// A string in double or single quotes, with JSON escapes (and `\'`). An unterminated one is truncated.
fn read_string(chars: &mut Chars) -> Result<String, SyntaxError> {
    let (start, quote) = chars.next().expect("caller peeked a quote");
    let mut json = String::from('"');
    let mut escaped = false;
    for (i, c) in chars.by_ref() {
        match c {
            _ if escaped => {
                escaped = false;
                if c == '\'' {
                    json.pop();
                }
                json.push(c);
            }
            '\\' => {
                escaped = true;
                json.push(c);
            }
            _ if c == quote => {
                json.push('"');
                return serde_json::from_str(&json).map_err(|e| {
                    SyntaxError::Unreadable(format!("the string at byte {start}..{i} is not readable: {e}"))
                });
            }
            '"' => json.push_str("\\\""),
            '\n' => json.push_str("\\n"),
            '\r' => json.push_str("\\r"),
            '\t' => json.push_str("\\t"),
            _ => json.push(c),
        }
    }
    Err(SyntaxError::Truncated)
}

/// A number exactly as JSON writes it; `.5`, `01` or `1.` are refused rather than guessed at.
fn read_number<'a>(text: &'a str, chars: &mut Chars) -> Result<&'a str, SyntaxError> {
    let start = chars.peek().map_or(text.len(), |&(i, _)| i);
    let mut end = start;
    while let Some((i, c)) = chars.next_if(|&(_, c)| c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.')) {
        end = i + c.len_utf8();
    }
    let number = &text[start..end];
    match serde_json::from_str::<serde_json::Number>(number) {
        Ok(_) => Ok(number),
        Err(_) => Err(SyntaxError::Unreadable(format!("{number:?} is not a JSON number"))),
    }
}

fn read_word<'a>(text: &'a str, chars: &mut Chars) -> &'a str {
    let start = chars.peek().map_or(text.len(), |&(i, _)| i);
    let mut end = start;
    while let Some((i, c)) = chars.next_if(|&(_, c)| c.is_ascii_alphanumeric() || c == '_') {
        end = i + c.len_utf8();
    }
    &text[start..end]
}

#[cfg(test)]
mod tests {
    use super::nesting_within;

    #[test]
    fn nesting_is_counted_outside_strings_whether_or_not_the_brackets_are_few() {
        let nested = |n: usize| "[".repeat(n) + &"]".repeat(n);
        // Few openings: answered by their count.
        assert!(nesting_within(&nested(4), 4) && !nesting_within(&nested(5), 4));
        // More openings than the limit, but side by side: walked, and within.
        assert!(nesting_within(&"[[]]".repeat(8), 2) && !nesting_within(&"[[]]".repeat(8), 1));
        // More openings than the limit inside strings, escaped quotes among them: text, not nesting.
        assert!(nesting_within(r#"{"a": "[[[[\"{{{{", "b": [1]}"#, 2));
        assert!(!nesting_within(r#"{"a": "[[[[\"{{{{", "b": [[1]]}"#, 2));
    }
}
