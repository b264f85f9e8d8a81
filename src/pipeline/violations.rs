//! Violations: describing why a value fails its schema within a fixed budget, whatever the schema's shape.
//!
//! jsonschema's own error collection (`iter_errors`, `validate`, `evaluate`) builds every `anyOf`/`oneOf`
//! branch's errors eagerly, which is exponential in the nesting of a recursive schema: 12 levels took 3 GB.
//! Here the schema is walked beside the value instead. Each node's own keywords (its subschemas replaced by
//! `true`) are checked by a small validator compiled from them, so messages are jsonschema's; applicators are
//! followed by hand, and of an `anyOf`/`oneOf` only the branch closest to the value is. Whether a value is valid
//! is never decided here: the caller's compiled validator decides, and this only describes a refusal.

use super::message::Violation;
use crate::registry::{BoundedPattern, compile_own};
use jsonschema::{ValidationError, Validator};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::Write;

mod own;
use own::own_keywords;

/// Most violations described; a description that stops early says so in one more.
pub const MAX_VIOLATIONS: usize = 20;
/// Most schema nodes visited beside the value: bounds the time of one description.
const MAX_STEPS: usize = 4_096;
/// Most nested `anyOf`/`oneOf` branches followed; past it, the alternative is named as a whole.
const MAX_BRANCH_DEPTH: usize = 24;
/// Most distinct schema nodes whose own keywords are compiled: bounds the memory of one description.
const MAX_LOCAL_VALIDATORS: usize = 256;
/// Longest rendering of a value inside a message, in bytes.
const MAX_RENDERED: usize = 80;

/// Why `value` fails `schema`, described within the budget, quoting what the model wrote. Call it only for a
/// value the compiled validator refused: it never returns empty.
pub fn describe(schema: &Value, value: &Value) -> Vec<Violation> {
    Walker::new(schema, false).run(value)
}

/// As `describe`, but no message quotes a value: for arguments that hold injected context values.
pub fn describe_masked(schema: &Value, value: &Value) -> Vec<Violation> {
    Walker::new(schema, true).run(value)
}

/// Where the walk is: the instance location, the schema location, and how many alternatives were entered.
#[derive(Clone)]
struct At {
    instance: String,
    schema: String,
    branches: usize,
}

impl At {
    fn keyword(&self, keyword: &str) -> At {
        At { schema: format!("{}/{}", self.schema, escape(keyword)), ..self.clone() }
    }

    fn child(&self, key: &str, schema: &[&str]) -> At {
        let schema = schema.iter().fold(self.schema.clone(), |path, part| format!("{path}/{}", escape(part)));
        At { instance: format!("{}/{}", self.instance, escape(key)), schema, branches: self.branches }
    }
}

struct Walker<'s> {
    root: &'s Value,
    /// Drafts 4 to 7 ignore every keyword beside `$ref`.
    ref_overrides: bool,
    /// `$schema` of the root, given to each node's own validator so it reads the same draft.
    dialect: Option<&'s Value>,
    masked: bool,
    /// Each node's own validator, by the node's address in `root` (`None`: it could not be compiled).
    locals: HashMap<usize, Option<Validator>>,
    steps: usize,
    stopped: bool,
    out: Vec<Violation>,
}

impl<'s> Walker<'s> {
    fn new(root: &'s Value, masked: bool) -> Self {
        let dialect = root.get("$schema");
        let ref_overrides = dialect.and_then(Value::as_str).is_some_and(|d| d.contains("json-schema.org/draft-0"));
        Walker { root, ref_overrides, dialect, masked, locals: HashMap::new(), steps: 0, stopped: false, out: vec![] }
    }

    fn run(mut self, value: &Value) -> Vec<Violation> {
        let at = At { instance: String::new(), schema: String::new(), branches: 0 };
        self.walk(self.root, value, &at);
        if self.stopped {
            let message = format!("further violations not described: the description stops at {MAX_VIOLATIONS}");
            self.out.push(Violation { instance_path: String::new(), schema_path: String::new(), message });
        } else if self.out.is_empty() {
            let message = "does not match the schema".to_owned();
            self.out.push(Violation { instance_path: String::new(), schema_path: String::new(), message });
        }
        self.out
    }

    /// Counts one node visited; false once the budget is spent.
    fn step(&mut self) -> bool {
        self.steps += 1;
        let open = self.steps <= MAX_STEPS && self.out.len() < MAX_VIOLATIONS;
        self.stopped |= !open;
        open
    }

    fn walk(&mut self, node: &'s Value, value: &Value, at: &At) {
        if !self.step() {
            return;
        }
        let map = match node {
            Value::Object(map) => map,
            Value::Bool(false) => return self.push(at, format!("False schema does not allow {}", self.render(value))),
            _ => return,
        };
        if let Some(target) = map.get("$ref").and_then(Value::as_str).and_then(|r| self.resolve(r)) {
            self.walk(target, value, &at.keyword("$ref"));
            if self.ref_overrides {
                return;
            }
        }
        self.local(node, value, at);
        self.applicators(map, value, at);
    }

    fn applicators(&mut self, map: &'s Map<String, Value>, value: &Value, at: &At) {
        match value {
            Value::Object(object) => self.members(map, object, at),
            Value::Array(items) => self.items(map, items, at),
            _ => {}
        }
        for (keyword, subschemas) in ["allOf", "anyOf", "oneOf"].iter().filter_map(|k| Some((*k, map.get(*k)?))) {
            let Some(subschemas) = subschemas.as_array() else { continue };
            if keyword == "allOf" {
                for (index, subschema) in subschemas.iter().enumerate() {
                    self.walk(subschema, value, &at.keyword(keyword).keyword(&index.to_string()));
                }
            } else {
                self.alternative(keyword, subschemas, value, &at.keyword(keyword));
            }
        }
    }

    /// `properties`, `patternProperties` and an `additionalProperties` schema, each on the members it covers.
    fn members(&mut self, map: &'s Map<String, Value>, object: &Map<String, Value>, at: &At) {
        let properties = map.get("properties").and_then(Value::as_object);
        let patterns: Vec<(&'s String, &'s Value, Option<BoundedPattern>)> = map
            .get("patternProperties")
            .and_then(Value::as_object)
            .map(|p| p.iter().map(|(source, sub)| (source, sub, BoundedPattern::new(source).ok())).collect())
            .unwrap_or_default();
        let additional = map.get("additionalProperties").filter(|a| a.is_object());
        for (key, member) in object {
            if self.stopped {
                return;
            }
            let declared = properties.and_then(|p| p.get(key));
            if let Some(subschema) = declared {
                self.walk(subschema, member, &at.child(key, &["properties", key]));
            }
            let mut matched = false;
            for (source, subschema, pattern) in &patterns {
                if pattern.as_ref().is_some_and(|p| p.is_match(key) == Ok(true)) {
                    matched = true;
                    self.walk(subschema, member, &at.child(key, &["patternProperties", source]));
                }
            }
            if let Some(subschema) = additional.filter(|_| declared.is_none() && !matched) {
                self.walk(subschema, member, &at.child(key, &["additionalProperties"]));
            }
        }
    }

    /// `prefixItems` and `items` (either form), each on the items it covers.
    fn items(&mut self, map: &'s Map<String, Value>, items: &[Value], at: &At) {
        let tuple = map.get("prefixItems").or_else(|| map.get("items").filter(|i| i.is_array()));
        let tuple_keyword = if map.contains_key("prefixItems") { "prefixItems" } else { "items" };
        let tuple = tuple.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let rest = map.get("items").filter(|i| !i.is_array());
        for (index, item) in items.iter().enumerate() {
            if self.stopped {
                return;
            }
            let key = index.to_string();
            if let Some(subschema) = tuple.get(index) {
                self.walk(subschema, item, &at.child(&key, &[tuple_keyword, &key]));
            } else if let Some(subschema) = rest {
                self.walk(subschema, item, &at.child(&key, &["items"]));
            }
        }
    }

    /// An `anyOf`/`oneOf`: follows the branch closest to the value, or names the alternative as a whole when no
    /// branch is close (each refuses a `const`/`enum` of the value or of one of its members) or the walk is
    /// already too many alternatives deep.
    fn alternative(&mut self, keyword: &str, branches: &'s [Value], value: &Value, at: &At) {
        let mut best: Option<((usize, usize), usize)> = None;
        if at.branches < MAX_BRANCH_DEPTH {
            for (index, branch) in branches.iter().enumerate() {
                if !self.step() {
                    return;
                }
                let score = self.distance(branch, value);
                if best.is_none_or(|(least, _)| score < least) {
                    best = Some((score, index));
                }
            }
        }
        let before = self.out.len();
        if let Some(((0, _), index)) = best {
            let at = At { branches: at.branches + 1, ..at.keyword(&index.to_string()) };
            self.walk(&branches[index], value, &at);
        }
        if self.out.len() == before && !self.stopped {
            let which = if keyword == "oneOf" { "exactly one" } else { "any" };
            let message = format!(
                "{} is not valid under {which} of the schemas listed in the '{keyword}' keyword",
                self.render(value)
            );
            self.push(at, message);
        }
    }

    /// How far a branch is from the value: the `const`s and `enum`s it or its properties refuse (a discriminator
    /// mismatch), then the count of its own keywords that refuse the value.
    fn distance(&mut self, branch: &'s Value, value: &Value) -> (usize, usize) {
        let branch = self.follow(branch);
        let own = self.local_errors(branch, value);
        let pinned = |node: &Value| node.get("const").is_some() || node.get("enum").is_some();
        let mut mismatches = usize::from(pinned(branch) && own > 0);
        let properties = branch.get("properties").and_then(Value::as_object);
        if let (Some(properties), Some(object)) = (properties, value.as_object()) {
            for (key, subschema) in properties {
                let subschema = self.follow(subschema);
                if let Some(member) = object.get(key).filter(|_| pinned(subschema)) {
                    mismatches += usize::from(self.local_errors(subschema, member) > 0);
                }
            }
        }
        (mismatches, own)
    }

    /// The node a chain of `$ref`s ends at (a few hops at most).
    fn follow(&self, mut node: &'s Value) -> &'s Value {
        for _ in 0..8 {
            match node.get("$ref").and_then(Value::as_str).and_then(|r| self.resolve(r)) {
                Some(target) if node.as_object().is_some_and(|m| m.len() == 1) || self.ref_overrides => node = target,
                _ => break,
            }
        }
        node
    }

    /// A `$ref` within the root document (`#` or `#/json/pointer`); others are not followed.
    fn resolve(&self, reference: &str) -> Option<&'s Value> {
        let pointer = reference.strip_prefix('#')?;
        let decoded = percent_decode(pointer);
        self.root.pointer(&decoded)
    }

    /// The node's own keywords' violations, as jsonschema words them.
    fn local(&mut self, node: &'s Value, value: &Value, at: &At) {
        let (room, masked) = (MAX_VIOLATIONS.saturating_sub(self.out.len()), self.masked);
        let Some(validator) = self.local_validator(node) else { return };
        if validator.is_valid(value) {
            return;
        }
        let found: Vec<(String, String, String)> = validator
            .iter_errors(value)
            .take(room)
            .map(|e| (e.instance_path().to_string(), e.schema_path().to_string(), message(&e, masked)))
            .collect();
        for (instance, schema, message) in found {
            let at =
                At { instance: at.instance.clone() + &instance, schema: at.schema.clone() + &schema, ..at.clone() };
            self.push(&at, message);
        }
    }

    fn local_errors(&mut self, node: &'s Value, value: &Value) -> usize {
        match self.local_validator(node) {
            Some(validator) if !validator.is_valid(value) => validator.iter_errors(value).take(MAX_VIOLATIONS).count(),
            _ => 0,
        }
    }

    fn local_validator(&mut self, node: &'s Value) -> Option<&Validator> {
        let key = std::ptr::from_ref(node) as usize;
        if !self.locals.contains_key(&key) {
            if self.locals.len() >= MAX_LOCAL_VALIDATORS {
                self.stopped = true;
                return None;
            }
            let own = own_keywords(node, self.dialect);
            let compiled = own.and_then(|own| compile_own(&own).ok());
            self.locals.insert(key, compiled);
        }
        self.locals.get(&key)?.as_ref()
    }

    fn render(&self, value: &Value) -> String {
        render(value, self.masked)
    }

    fn push(&mut self, at: &At, message: String) {
        if self.out.len() >= MAX_VIOLATIONS {
            self.stopped = true;
            return;
        }
        self.out.push(Violation { instance_path: at.instance.clone(), schema_path: at.schema.clone(), message });
    }
}

/// jsonschema's message for `error`, with the value it quotes cut to a bound (or not quoted, when masked).
fn message(error: &ValidationError<'_>, masked: bool) -> String {
    error.masked_with(render(error.instance(), masked)).to_string()
}

/// A value as JSON text, cut to `MAX_RENDERED` bytes; "the value" when masked.
fn render(value: &Value, masked: bool) -> String {
    if masked {
        return "the value".to_owned();
    }
    let mut out = Capped(Vec::with_capacity(MAX_RENDERED));
    let complete = serde_json::to_writer(&mut out, value).is_ok();
    let mut text = String::from_utf8_lossy(&out.0).into_owned();
    if !complete {
        text.push('…');
    }
    text
}

/// A JSON pointer segment (RFC 6901).
fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// `%XX` escapes of a `$ref` fragment decoded (a `$ref` is a URI).
fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

/// A writer that takes `MAX_RENDERED` bytes and then fails, so a large value is never rendered whole.
struct Capped(Vec<u8>);

impl Write for Capped {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let room = MAX_RENDERED.saturating_sub(self.0.len());
        if room == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        let taken = bytes.len().min(room);
        self.0.extend_from_slice(&bytes[..taken]);
        Ok(taken)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
