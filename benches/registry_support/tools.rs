//! Distinct, realistically sized tool specs for the registry-scale benchmark, generated from their index alone.

use serde_json::{Map, Value, json};
use toolgate::registry::ToolSpec;

const SERVICES: [&str; 12] =
    ["crm", "billing", "search", "calendar", "mail", "files", "tickets", "weather", "maps", "hr", "wiki", "ads"];
const VERBS: [&str; 10] = ["get", "list", "create", "update", "delete", "find", "export", "sync", "close", "assign"];
const NOUNS: [&str; 14] = [
    "contact", "invoice", "event", "message", "document", "ticket", "forecast", "route", "employee", "page",
    "campaign", "account", "order", "report",
];
const FIELDS: [&str; 24] = [
    "id",
    "query",
    "limit",
    "offset",
    "city",
    "email",
    "start_date",
    "end_date",
    "status",
    "owner",
    "tags",
    "amount",
    "currency",
    "priority",
    "language",
    "timezone",
    "include_archived",
    "sort_by",
    "page_size",
    "region",
    "notes",
    "filters",
    "due",
    "title",
];
const LEVELS: [&str; 4] = ["low", "normal", "high", "urgent"];
const WORDS: [&str; 12] =
    ["the", "record", "when", "given", "returns", "matching", "optional", "account", "for", "of", "a", "value"];

/// A small deterministic generator (xorshift), so two runs register the same 10,000 tools.
struct Dice(u64);

impl Dice {
    fn new(seed: usize) -> Self {
        Self((seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn roll(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn sentence(&mut self, words: usize) -> String {
        (0..words).map(|_| WORDS[self.roll(WORDS.len())]).collect::<Vec<_>>().join(" ")
    }
}

/// The registered name of tool `i`: a service, a verb, a noun and the index, with dots and underscores, so
/// its normalized form differs from it.
pub fn tool_name(i: usize) -> String {
    let mut dice = Dice::new(i);
    let service = SERVICES[dice.roll(SERVICES.len())];
    format!("{service}.{}_{}_{i}", VERBS[dice.roll(VERBS.len())], NOUNS[dice.roll(NOUNS.len())])
}

/// A variant of `tool_name(i)` a model might write: upper case, with dashes; only the normalized index finds it.
pub fn variant_name(i: usize) -> String {
    tool_name(i).to_uppercase().replace(['.', '_'], "-")
}

/// Tool `i`: 3 to 7 properties (about 5) of varied names and types, a description, an HTTP backend.
pub fn tool_spec(i: usize) -> ToolSpec {
    let mut dice = Dice::new(i + 1_000_003);
    let count = 3 + dice.roll(5);
    let mut properties = Map::new();
    let mut required = Vec::new();
    for p in 0..count {
        let field =
            format!("{}{}", FIELDS[dice.roll(FIELDS.len())], if p > 0 && dice.roll(3) == 0 { "_2" } else { "" });
        if properties.contains_key(&field) {
            continue;
        }
        if dice.roll(2) == 0 {
            required.push(Value::String(field.clone()));
        }
        properties.insert(field, property(&mut dice));
    }
    let words = 8 + dice.roll(10);
    let spec = json!({
        "name": tool_name(i),
        "description": format!("{} ({i}).", dice.sentence(words)),
        "input_schema": {"type": "object", "properties": properties, "required": required, "additionalProperties": false},
        "backend": {"http": {"url": format!("http://127.0.0.1:9/tools/{i}")}},
    });
    serde_json::from_value(spec).expect("a generated spec parses")
}

/// One property schema: a string, integer, number, boolean, enum, array or small object, with a description.
fn property(dice: &mut Dice) -> Value {
    let words = 3 + dice.roll(6);
    let description = dice.sentence(words);
    let mut schema = match dice.roll(8) {
        0 => json!({"type": "string", "maxLength": 64 + dice.roll(200)}),
        1 => json!({"type": "string", "format": "date"}),
        2 => json!({"type": "integer", "minimum": 0, "maximum": 10 + dice.roll(1000)}),
        3 => json!({"type": "number"}),
        4 => json!({"type": "boolean", "default": false}),
        5 => json!({"type": "string", "enum": LEVELS[..2 + dice.roll(3)]}),
        6 => json!({"type": "array", "items": {"type": "string"}, "maxItems": 5 + dice.roll(20)}),
        _ if dice.roll(4) == 0 => json!({"type": "string", "pattern": "^[A-Z]{2}-[0-9]{4,8}$"}),
        _ => {
            json!({"type": "object", "properties": {"key": {"type": "string"}, "value": {"type": ["string", "number"]}},
            "required": ["key"]})
        }
    };
    schema["description"] = Value::String(description);
    schema
}

/// The spec's size as stored, to report what "realistic" meant.
pub fn spec_bytes(spec: &ToolSpec) -> usize {
    serde_json::to_vec(spec).map_or(0, |b| b.len())
}
