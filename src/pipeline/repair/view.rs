//! What a schema node allows, as repair needs it: its types and enum, following local `$ref`s.

use serde_json::{Map, Value};

/// A set of JSON Schema types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Types(u8);

impl Types {
    pub const NULL: Types = Types(1);
    pub const BOOLEAN: Types = Types(2);
    pub const INTEGER: Types = Types(4);
    pub const NUMBER: Types = Types(8);
    pub const STRING: Types = Types(16);
    pub const ARRAY: Types = Types(32);
    pub const OBJECT: Types = Types(64);

    pub fn has(self, t: Types) -> bool {
        self.0 & t.0 != 0
    }

    fn with(self, t: Types) -> Types {
        Types(self.0 | t.0)
    }

    fn named(name: &str) -> Types {
        match name {
            "null" => Types::NULL,
            "boolean" => Types::BOOLEAN,
            "integer" => Types::INTEGER,
            "number" => Types::NUMBER,
            "string" => Types::STRING,
            "array" => Types::ARRAY,
            "object" => Types::OBJECT,
            _ => Types::default(),
        }
    }

    /// Whether a value is of one of these types. Integers are whole numbers written without a fraction.
    pub fn admit(self, value: &Value) -> bool {
        match value {
            Value::Null => self.has(Types::NULL),
            Value::Bool(_) => self.has(Types::BOOLEAN),
            Value::Number(n) => self.has(Types::NUMBER) || (self.has(Types::INTEGER) && !n.is_f64()),
            Value::String(_) => self.has(Types::STRING),
            Value::Array(_) => self.has(Types::ARRAY),
            Value::Object(_) => self.has(Types::OBJECT),
        }
    }
}

/// One schema node, resolved: the subschema to read keywords from, and the types it allows, if it says.
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    pub schema: &'a Value,
    pub types: Option<Types>,
}

impl<'a> Node<'a> {
    pub fn keyword(&self, name: &str) -> Option<&'a Value> {
        self.schema.get(name)
    }

    pub fn properties(&self) -> Option<&'a Map<String, Value>> {
        self.keyword("properties")?.as_object()
    }

    pub fn required(&self) -> impl Iterator<Item = &'a str> {
        self.keyword("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
    }

    pub fn enum_values(&self) -> Option<&'a [Value]> {
        self.keyword("enum")?.as_array().map(Vec::as_slice)
    }
}

/// Reads schema nodes of one tool's schema, whose root local `$ref`s point into.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    root: &'a Value,
}

/// How many `$ref`s in a row are followed before giving up on a node.
const MAX_REF_HOPS: usize = 16;

impl<'a> View<'a> {
    pub fn new(root: &'a Value) -> Self {
        Self { root }
    }

    /// The node for `schema`. `anyOf`/`oneOf` with one non-null branch (an optional value) reads as that
    /// branch with null allowed; other combinations give no types, so repair leaves their values alone.
    pub fn node(&self, schema: &'a Value) -> Node<'a> {
        let schema = self.follow(schema);
        if let Some(types) = declared_types(schema) {
            return Node { schema, types: Some(types) };
        }
        let branches = ["anyOf", "oneOf"].iter().find_map(|k| schema.get(*k)?.as_array());
        if let Some(branches) = branches {
            let mut non_null = branches.iter().map(|b| self.follow(b)).filter(|b| !is_null_schema(b));
            if let (Some(only), None) = (non_null.next(), non_null.next()) {
                let types = declared_types(only).map(|t| t.with(Types::NULL));
                return Node { schema: only, types };
            }
        }
        Node { schema, types: None }
    }

    /// Whether `key` may be a property of a value of `schema`: declared in its `properties`, or in those of any
    /// subschema that applies to the same value (`allOf`, `anyOf`, `oneOf`, `if`/`then`/`else`, `$ref`). A
    /// declared property is never read as a wrapper around the arguments. Unsure (a `patternProperties`, a
    /// reference not followed, or past the nodes it looks at) is yes.
    pub fn declares(&self, schema: &'a Value, key: &str) -> bool {
        const MAX_NODES: usize = 256;
        let (mut stack, mut seen) = (vec![schema], 0);
        while let Some(node) = stack.pop() {
            seen += 1;
            let node = self.follow(node);
            let Some(map) = node.as_object() else { continue };
            let unsure = seen > MAX_NODES
                || map.contains_key("patternProperties")
                || ["$ref", "$dynamicRef", "$recursiveRef"].iter().any(|k| map.contains_key(*k));
            if unsure || map.get("properties").and_then(Value::as_object).is_some_and(|p| p.contains_key(key)) {
                return true;
            }
            for keyword in ["allOf", "anyOf", "oneOf"] {
                stack.extend(map.get(keyword).and_then(Value::as_array).into_iter().flatten());
            }
            stack.extend(["if", "then", "else"].iter().filter_map(|k| map.get(*k)));
        }
        false
    }

    fn follow(&self, mut schema: &'a Value) -> &'a Value {
        for _ in 0..MAX_REF_HOPS {
            let Some(target) = schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) else {
                return schema;
            };
            match self.root.pointer(target) {
                Some(next) => schema = next,
                None => return schema,
            }
        }
        schema
    }
}

fn declared_types(schema: &Value) -> Option<Types> {
    match schema.get("type")? {
        Value::String(name) => Some(Types::named(name)),
        Value::Array(names) => {
            Some(names.iter().filter_map(Value::as_str).fold(Types::default(), |t, n| t.with(Types::named(n))))
        }
        _ => None,
    }
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}
