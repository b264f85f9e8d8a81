//! The schema-guided walk: each value beside its schema node, changed only where the node refuses it.

use super::coerce;
use super::rules::{RepairSettings, Rule};
use super::syntax::read_any;
use super::view::{Node, Types, View};
use crate::pipeline::message::Repair;
use crate::registry::RepairPolicy;
use serde_json::Value;

/// The schema that admits anything: what `items` means when a schema leaves it out.
static ANY: Value = Value::Bool(true);

/// Walks one call's arguments, collecting a `Repair` for every change.
pub struct Walker<'a> {
    pub(super) view: View<'a>,
    pub(super) settings: RepairSettings,
    pub(super) policy: &'a RepairPolicy,
    pub(super) max_depth: usize,
    path: Vec<String>,
    pub repairs: Vec<Repair>,
}

impl<'a> Walker<'a> {
    pub fn new(schema: &'a Value, settings: RepairSettings, policy: &'a RepairPolicy, max_depth: usize) -> Self {
        Self { view: View::new(schema), settings, policy, max_depth, path: Vec::new(), repairs: Vec::new() }
    }

    pub(super) fn allows(&self, rule: Rule) -> bool {
        self.settings.allows(rule)
    }

    /// Records a change at the current path.
    pub(super) fn record(&mut self, rule: Rule, before: &Value, after: &Value) {
        let repair = self.repair(rule, before, after);
        self.repairs.push(repair);
    }

    /// Records a change at the current path, before the changes recorded since `at` (which it encloses).
    pub(super) fn insert(&mut self, at: usize, rule: Rule, before: &Value, after: &Value) {
        let repair = self.repair(rule, before, after);
        self.repairs.insert(at, repair);
    }

    fn repair(&self, rule: Rule, before: &Value, after: &Value) -> Repair {
        Repair {
            rule: rule.name().to_owned(),
            path: self.pointer(),
            before: before.to_string(),
            after: after.to_string(),
        }
    }

    fn pointer(&self) -> String {
        crate::registry::json_pointer(&self.path)
    }

    /// Runs `f` one level down, under `segment`.
    pub(super) fn under<T>(&mut self, segment: String, f: impl FnOnce(&mut Self) -> T) -> T {
        self.path.push(segment);
        let out = f(self);
        self.path.pop();
        out
    }

    pub(super) fn is_root(&self) -> bool {
        self.path.is_empty()
    }

    /// The value as `schema` wants it, or as it was where no rule applies exactly.
    pub fn value(&mut self, value: Value, schema: &'a Value) -> Value {
        if self.path.len() > self.max_depth {
            return value;
        }
        let node = self.view.node(schema);
        let value = if node.admits(&value) { value } else { self.coerce(value, node) };
        match value {
            Value::Object(map) if node.types.is_none_or(|t| t.has(Types::OBJECT)) => self.object(map, node),
            Value::Array(items) if node.types.is_none_or(|t| t.has(Types::ARRAY)) => self.array(items, node),
            other => other,
        }
    }

    fn coerce(&mut self, value: Value, node: Node<'a>) -> Value {
        let Some(types) = node.types.filter(|t| !t.admit(&value)) else {
            return self.enum_member(value, node);
        };
        if let Some(parsed) = self.string_to_json(&value, types) {
            return parsed;
        }
        if let Some((after, rule)) = coerce::scalar(&value, types).filter(|(_, r)| self.allows(*r)) {
            self.record(rule, &value, &after);
            return self.enum_member(after, node);
        }
        match value {
            Value::Array(items) if is_one_scalar(&items) && !types.has(Types::ARRAY) => {
                self.array_to_scalar(items, node)
            }
            other @ (Value::Null | Value::Object(_) | Value::Array(_)) => other,
            scalar if types.has(Types::ARRAY) => self.scalar_to_array(scalar, node),
            other => other,
        }
    }

    fn enum_member(&mut self, value: Value, node: Node<'a>) -> Value {
        let members = node.enum_values().filter(|m| !m.contains(&value) && self.allows(Rule::EnumMatched));
        match members.and_then(|m| coerce::enum_member(&value, m)) {
            Some(member) => {
                self.record(Rule::EnumMatched, &value, &member);
                member
            }
            None => value,
        }
    }

    /// A string holding the JSON, or Python literal, of the array or object the schema wants.
    fn string_to_json(&mut self, value: &Value, types: Types) -> Option<Value> {
        let text = value.as_str()?.trim();
        let wanted =
            (text.starts_with('[') && types.has(Types::ARRAY)) || (text.starts_with('{') && types.has(Types::OBJECT));
        if !wanted || !self.allows(Rule::StringToJson) {
            return None;
        }
        let depth_left = self.max_depth.saturating_sub(self.path.len());
        let json = read_any(text, depth_left, |r| self.allows(r))?;
        types.admit(&json).then(|| {
            self.record(Rule::StringToJson, value, &json);
            json
        })
    }

    /// `["Oslo"]` for `"Oslo"`: kept only when the element, repaired, is what the node wants.
    fn array_to_scalar(&mut self, mut items: Vec<Value>, node: Node<'a>) -> Value {
        if !self.allows(Rule::ArrayToScalar) {
            return Value::Array(items);
        }
        let mark = self.repairs.len();
        let before = Value::Array(items.clone());
        let inner = self.value(items.pop().expect("one element"), node.schema);
        if node.admits(&inner) {
            self.insert(mark, Rule::ArrayToScalar, &before, &inner);
            return inner;
        }
        self.repairs.truncate(mark);
        before
    }

    /// `"Oslo"` for `["Oslo"]`: kept only when the element, repaired, is what the items want.
    fn scalar_to_array(&mut self, value: Value, node: Node<'a>) -> Value {
        if !self.allows(Rule::ScalarToArray) {
            return value;
        }
        let items = node.keyword("items").unwrap_or(&ANY);
        let mark = self.repairs.len();
        let inner = self.under("0".into(), |w| w.value(value.clone(), items));
        if self.view.node(items).admits(&inner) {
            let after = Value::Array(vec![inner]);
            self.insert(mark, Rule::ScalarToArray, &value, &after);
            return after;
        }
        self.repairs.truncate(mark);
        value
    }

    fn array(&mut self, items: Vec<Value>, node: Node<'a>) -> Value {
        let prefix = node.keyword("prefixItems").and_then(Value::as_array);
        let rest = node.keyword("items").filter(|s| s.is_object());
        let walked = items.into_iter().enumerate().map(|(i, item)| match prefix.and_then(|p| p.get(i)).or(rest) {
            Some(schema) => self.under(i.to_string(), |w| w.value(item, schema)),
            None => item,
        });
        Value::Array(walked.collect())
    }
}

/// `["Oslo"]`: an array of exactly one string, number or boolean.
fn is_one_scalar(items: &[Value]) -> bool {
    matches!(items, [Value::String(_) | Value::Number(_) | Value::Bool(_)])
}
