//! Python and JSON literals, and calls written with them (`name(key=value, …)`), read exactly, never evaluated.
//!
//! A value is a string, number, `True`/`False`/`None` (or JSON's words), a list, a tuple (read as a list, as
//! `json.dumps` writes it) or a dict with string keys. Anything else, such as a variable, an expression, an
//! f-string or a positional argument, is refused: reading it would be guessing.

use serde_json::{Map, Number, Value};
use std::borrow::Cow;

/// How deep literals may nest: the parse limit's default, so nothing read here is deeper than a call may be.
const MAX_DEPTH: usize = 64;
/// What a list or dict read costs a reader's budget beyond its bytes: each is an allocation and a level of
/// recursion, and a text of `[[[[` has one a byte, so bytes alone would let it cost many times its length.
const LEVEL_COST: usize = 16;

/// Why a literal or call could not be read: a fixed phrase, so that failing costs no formatting (most places a
/// reader tries hold no call at all).
pub type Unread = &'static str;

/// A call written as Python: its dotted name and its keyword arguments, in the order written.
#[derive(Debug, Clone, PartialEq)]
pub struct PyCall {
    pub name: String,
    pub arguments: Map<String, Value>,
    /// Written `name({"key": value, …})`: the arguments as one dict, as some models write them.
    pub as_dict: bool,
}

/// A cursor over text, reading literals and calls from `pos` on.
pub struct Reader<'a> {
    pub text: &'a str,
    pub pos: usize,
    depth: usize,
    /// The furthest place read since `start_at`: what reading cost, for a caller's budget.
    furthest: std::cell::Cell<usize>,
    /// Lists and dicts read since `start_at`, for the same budget.
    levels: usize,
    /// Whether a value nested deeper than `MAX_DEPTH` since `start_at`: no call is that deep.
    pub too_deep: bool,
    /// How many dicts and call argument lists enclose the place read: outside them, a list can only hold calls
    /// (or strings or pairs of them), so it holds at most `MAX_CALL_ITEMS`.
    data: usize,
}

/// The most items a list outside any dict or call's arguments may hold: one answer's calls, and no more.
const MAX_CALL_ITEMS: usize = super::MAX_TEXT_CALLS;

impl<'a> Reader<'a> {
    pub fn new(text: &'a str) -> Self {
        let furthest = std::cell::Cell::new(0);
        Self { text, pos: 0, depth: 0, furthest, levels: 0, too_deep: false, data: 0 }
    }

    /// Moves to `pos` to read from there, counting what is read from it afresh.
    pub fn start_at(&mut self, pos: usize) {
        self.pos = pos;
        self.furthest.set(pos);
        self.levels = 0;
        self.too_deep = false;
        self.data = 0;
    }

    /// How many bytes reading has gone past `start`, failed attempts included.
    pub fn scanned_from(&self, start: usize) -> usize {
        self.furthest.get().max(self.pos).saturating_sub(start)
    }

    /// What reading since `start` cost a budget: the bytes gone past, and `LEVEL_COST` for each list or dict.
    pub fn cost_from(&self, start: usize) -> usize {
        self.scanned_from(start) + self.levels * LEVEL_COST
    }

    pub fn rest(&self) -> &'a str {
        self.furthest.set(self.furthest.get().max(self.pos));
        &self.text[self.pos..]
    }

    pub fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    pub fn eat(&mut self, s: &str) -> bool {
        let found = self.rest().starts_with(s);
        if found {
            self.pos += s.len();
        }
        found
    }

    /// `eat` for one character.
    fn eat_char(&mut self, c: char) -> bool {
        let found = self.rest().starts_with(c);
        if found {
            self.pos += c.len_utf8();
        }
        found
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    /// Skips whitespace, newlines included.
    pub fn space(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    /// `a` or `a.b.c`: a Python name, possibly dotted. Markdown escapes of `_` (`get\_weather`, as some models
    /// write names in Markdown) are read as the `_` they escape: a name holds no backslash.
    pub fn dotted(&mut self) -> Option<Cow<'a, str>> {
        let start = self.pos;
        let mut escaped = false;
        loop {
            let rest = self.rest();
            if rest.starts_with(|c: char| c.is_ascii_digit()) {
                self.pos = start;
                return None;
            }
            let mut ident = 0;
            loop {
                let tail = &rest[ident..];
                match tail.chars().next() {
                    Some(c) if c.is_alphanumeric() || c == '_' => ident += c.len_utf8(),
                    Some('\\') if tail[1..].starts_with('_') && ident > 0 => {
                        ident += 2;
                        escaped = true;
                    }
                    _ => break,
                }
            }
            if ident == 0 {
                self.pos = start;
                return None;
            }
            self.pos += ident;
            if !(self.rest().starts_with('.') && self.rest()[1..].starts_with(|c: char| c.is_alphabetic() || c == '_'))
            {
                let name = &self.text[start..self.pos];
                return Some(if escaped { Cow::Owned(name.replace("\\_", "_")) } else { Cow::Borrowed(name) });
            }
            self.pos += 1;
        }
    }

    /// `name(key=value, …)`; on failure the cursor is where it was.
    pub fn call(&mut self) -> Result<PyCall, Unread> {
        let start = self.pos;
        self.data += 1; // a call's arguments are data: their lists may be long
        let result = self.call_inner();
        self.data -= 1;
        if result.is_err() {
            self.pos = start;
        }
        result
    }

    fn call_inner(&mut self) -> Result<PyCall, Unread> {
        let name = self.dotted().ok_or("no name")?.into_owned();
        if !self.eat_char('(') {
            return Err("a name is not called");
        }
        self.space();
        if self.peek() == Some('{') {
            let Value::Object(arguments) = self.value()? else { return Err("a call is given a set") };
            self.space();
            self.eat_char(',');
            self.space();
            if !self.eat_char(')') {
                return Err("a call is given more than its dict of arguments");
            }
            return Ok(PyCall { name, arguments, as_dict: true });
        }
        let mut arguments = Map::new();
        loop {
            self.space();
            if self.eat_char(')') {
                return Ok(PyCall { name, arguments, as_dict: false });
            }
            let key = self.dotted().filter(|k| !k.contains('.'));
            self.space();
            let Some(key) = key.filter(|_| self.eat_char('=') && !self.rest().starts_with('=')) else {
                return Err("a call is given an argument without its name");
            };
            self.space();
            let value = self.value()?;
            if arguments.insert(key.clone().into_owned(), value).is_some() {
                return Err("a call is given an argument twice");
            }
            self.space();
            if !self.eat_char(',') && !self.rest().starts_with(')') {
                return Err("a call's arguments are not literals");
            }
        }
    }

    /// One literal value.
    pub fn value(&mut self) -> Result<Value, Unread> {
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
            return Err("values nest deeper than 64 levels");
        }
        self.depth += 1;
        let value = match self.peek().ok_or("the text ends before a value")? {
            '"' | '\'' => self.string().map(Value::String),
            'r' | 'R' if self.rest()[1..].starts_with(['"', '\'']) => {
                self.pos += 1;
                self.raw_string().map(Value::String)
            }
            '[' => self.items('[', ']').map(Value::Array),
            '(' => self.items('(', ')').map(Value::Array),
            '{' => self.dict(),
            c if c.is_ascii_digit() || matches!(c, '-' | '+' | '.') => self.number(),
            _ => self.word(),
        };
        self.depth -= 1;
        value
    }

    fn word(&mut self) -> Result<Value, Unread> {
        let start = self.pos;
        let word = self.dotted().unwrap_or_default();
        let value = match word.as_ref() {
            "True" | "true" => Value::Bool(true),
            "False" | "false" => Value::Bool(false),
            "None" | "null" => Value::Null,
            _ => {
                self.pos = start;
                return Err("a word is not a literal");
            }
        };
        Ok(value)
    }

    fn items(&mut self, open: char, close: char) -> Result<Vec<Value>, Unread> {
        self.pos += open.len_utf8();
        self.levels += 1;
        let mut items = Vec::new();
        loop {
            self.space();
            if self.eat_char(close) {
                return Ok(items);
            }
            if self.data == 0 && items.len() == MAX_CALL_ITEMS {
                return Err("a list holds more items than one answer makes calls");
            }
            items.push(self.value()?);
            self.space();
            if !self.eat_char(',') && !self.rest().starts_with(close) {
                return Err("a list holds something that is not a literal");
            }
        }
    }

    fn dict(&mut self) -> Result<Value, Unread> {
        self.data += 1;
        let dict = self.dict_inner();
        self.data -= 1;
        dict
    }

    fn dict_inner(&mut self) -> Result<Value, Unread> {
        self.pos += 1;
        self.levels += 1;
        let mut map = Map::new();
        loop {
            self.space();
            if self.eat_char('}') {
                return Ok(Value::Object(map));
            }
            let Value::String(key) = self.value()? else {
                return Err("a dict's key is not a string");
            };
            self.space();
            if !self.eat_char(':') {
                return Err("a {…} is not a dict");
            }
            self.space();
            let value = self.value()?;
            if map.insert(key.clone(), value).is_some() {
                return Err("a dict has a key twice");
            }
            self.space();
            if !self.eat_char(',') && !self.rest().starts_with('}') {
                return Err("a dict holds something that is not a literal");
            }
        }
    }

    fn number(&mut self) -> Result<Value, Unread> {
        let rest = self.rest();
        let len = rest
            .char_indices()
            .find(|&(i, c)| {
                !(c.is_ascii_digit() || c == '.' || c == '_' || matches!(c, 'e' | 'E'))
                    && !(matches!(c, '-' | '+') && (i == 0 || rest[..i].ends_with(['e', 'E'])))
            })
            .map_or(rest.len(), |(i, _)| i);
        let written = rest[..len].trim_start_matches('+');
        let written: Cow<str> = if written.contains('_') { written.replace('_', "").into() } else { written.into() };
        self.pos += len;
        let number = if let Ok(n) = written.parse::<i64>() {
            Number::from(n)
        } else if let Ok(n) = written.parse::<u64>() {
            Number::from(n)
        } else {
            written
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .and_then(Number::from_f64)
                .ok_or("a number is not one")?
        };
        Ok(Value::Number(number))
    }

    /// A quoted string, `'…'`, `"…"` or triple-quoted, with Python's escapes.
    fn string(&mut self) -> Result<String, Unread> {
        let (quote, body_start) = self.open_quote();
        let mut out = String::new();
        let mut chars = self.text[body_start..].char_indices();
        while let Some((i, c)) = chars.next() {
            if self.text[body_start + i..].starts_with(quote) {
                self.pos = body_start + i + quote.len();
                return Ok(out);
            }
            match c {
                '\\' => {
                    let (_, e) = chars.next().ok_or("a string ends in a backslash")?;
                    escape(e, &mut chars, &mut out)?;
                }
                '\n' if quote.len() == 1 => return Err("a string runs past its line"),
                _ => out.push(c),
            }
        }
        self.furthest.set(self.text.len());
        Err("a string is not closed")
    }

    /// `r'…'`: backslashes are kept as written.
    fn raw_string(&mut self) -> Result<String, Unread> {
        let (quote, body_start) = self.open_quote();
        let Some(end) = self.text[body_start..].find(quote) else {
            self.furthest.set(self.text.len());
            return Err("a string is not closed");
        };
        self.pos = body_start + end + quote.len();
        Ok(self.text[body_start..body_start + end].to_owned())
    }

    fn open_quote(&self) -> (&'static str, usize) {
        let rest = self.rest();
        let quote = ["\"\"\"", "'''", "\"", "'"].into_iter().find(|q| rest.starts_with(q)).expect("peeked a quote");
        (quote, self.pos + quote.len())
    }
}

/// One escape of a Python string, after its backslash.
fn escape(e: char, chars: &mut std::str::CharIndices, out: &mut String) -> Result<(), Unread> {
    let simple = match e {
        'n' => Some('\n'),
        't' => Some('\t'),
        'r' => Some('\r'),
        '0' => Some('\0'),
        '\\' | '\'' | '"' => Some(e),
        '\n' => return Ok(()),
        _ => None,
    };
    if let Some(c) = simple {
        out.push(c);
        return Ok(());
    }
    let digits = match e {
        'x' => 2,
        'u' => 4,
        'U' => 8,
        _ => {
            out.extend(['\\', e]);
            return Ok(());
        }
    };
    let hex: String = chars.by_ref().take(digits).map(|(_, c)| c).collect();
    let code = u32::from_str_radix(&hex, 16).map_err(|_| "a string holds an escape that is not one")?;
    out.push(char::from_u32(code).ok_or("a string holds an escape of no character")?);
    Ok(())
}
