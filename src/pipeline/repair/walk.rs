//! The schema-guided walk: each value beside its schema node, changed only where the node refuses it.

use super::coerce;
use super::lookup::{TOO_LARGE, Tables};
use super::rules::{RepairRule, RepairSettings};
use super::syntax::{nesting_within, read_any};
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
    pub(super) tables: Tables<'a>,
    /// Why the arguments cannot be repaired at all: the walk stops, and the call is refused with this.
    pub refusal: Option<String>,
}

impl<'a> Walker<'a> {
    pub fn new(schema: &'a Value, settings: RepairSettings, policy: &'a RepairPolicy, max_depth: usize) -> Self {
        let (path, repairs, tables) = (Vec::new(), Vec::new(), Tables::default());
        Self { view: View::new(schema), settings, policy, max_depth, path, repairs, tables, refusal: None }
    }

    /// Charges work to the call's budget; false, with the call refused, once it is spent.
    pub(super) fn spend(&mut self, steps: usize, bytes: usize) -> bool {
        if self.tables.budget.spend(steps, bytes) && self.refusal.is_none() {
            return true;
        }
        self.refusal.get_or_insert_with(|| TOO_LARGE.to_owned());
        false
    }

    /// Refuses the call: `text`, which the schema wants read as JSON, nests past the depth limit. Reading it as
    /// anything else (a string wrapped in an array, say) would treat deep and shallow JSON differently.
    pub(super) fn refuse_too_deep(&mut self, text: &str, depth_left: usize) -> bool {
        if nesting_within(text, depth_left) {
            return false;
        }
        let at = if self.path.is_empty() { "the arguments are".to_owned() } else { format!("{} is", self.pointer()) };
        let limit = self.max_depth;
        self.refusal
            .get_or_insert_with(|| format!("{at} a string holding JSON nested past the limit of {limit} levels"));
        true
    }

    /// Whether `value` passes the node's own type and enum checks, through the enum's table.
    pub(super) fn admits(&mut self, node: Node<'a>, value: &Value) -> bool {
        if !node.types.is_none_or(|t| t.admit(value)) {
            return false;
        }
        let Some(members) = node.enum_values() else { return true };
        let (found, steps) = self.tables.enum_table(members).contains(value);
        self.spend(steps, 0);
        found
    }

    pub(super) fn allows(&self, rule: RepairRule) -> bool {
        self.settings.allows(rule)
    }

    /// Records a change at the current path.
    pub(super) fn record(&mut self, rule: RepairRule, before: &Value, after: &Value) {
        let repair = self.repair(rule, before, after);
        self.repairs.push(repair);
    }

    /// Records a change at the current path, before the changes recorded since `at` (which it encloses).
    pub(super) fn insert(&mut self, at: usize, rule: RepairRule, before: &Value, after: &Value) {
        let repair = self.repair(rule, before, after);
        self.repairs.insert(at, repair);
    }

    fn repair(&mut self, rule: RepairRule, before: &Value, after: &Value) -> Repair {
        let (before, after) = (before.to_string(), after.to_string());
        self.spend(0, before.len() + after.len());
        Repair { rule: rule.name().to_owned(), path: self.pointer(), before, after }
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
        if self.path.len() > self.max_depth || !self.spend(1, 0) {
            return value;
        }
        let node = self.view.node(schema);
        let value = if self.admits(node, &value) { value } else { self.coerce(value, node) };
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
        let Some(members) = node.enum_values().filter(|_| self.allows(RepairRule::EnumMatched)) else { return value };
        let table = self.tables.enum_table(members);
        let member = match table.contains(&value) {
            (false, _) => table.loose_member(&value),
            (true, _) => None,
        };
        match member {
            Some(member) => {
                self.record(RepairRule::EnumMatched, &value, member);
                member.clone()
            }
            None => value,
        }
    }

    /// A string holding the JSON, or Python literal, of the array or object the schema wants.
    fn string_to_json(&mut self, value: &Value, types: Types) -> Option<Value> {
        let text = value.as_str()?.trim();
        let wanted =
            (text.starts_with('[') && types.has(Types::ARRAY)) || (text.starts_with('{') && types.has(Types::OBJECT));
        if !wanted || !self.allows(RepairRule::StringToJson) {
            return None;
        }
        let depth_left = self.max_depth.saturating_sub(self.path.len());
        if self.refuse_too_deep(text, depth_left) || !self.spend(0, text.len()) {
            return None;
        }
        let json = read_any(text, depth_left, |r| self.allows(r))?;
        types.admit(&json).then(|| {
            self.record(RepairRule::StringToJson, value, &json);
            json
        })
    }

    /// `["Oslo"]` for `"Oslo"`: kept only when the element, repaired, is what the node wants.
    fn array_to_scalar(&mut self, mut items: Vec<Value>, node: Node<'a>) -> Value {
        if !self.allows(RepairRule::ArrayToScalar) {
            return Value::Array(items);
        }
        let mark = self.repairs.len();
        let before = Value::Array(items.clone());
        let inner = self.value(items.pop().expect("one element"), node.schema);
        if self.admits(node, &inner) {
            self.insert(mark, RepairRule::ArrayToScalar, &before, &inner);
            return inner;
        }
        self.repairs.truncate(mark);
        before
    }

    /// `"Oslo"` for `["Oslo"]`: kept only when the element, repaired, is what the items want.
    fn scalar_to_array(&mut self, value: Value, node: Node<'a>) -> Value {
        if !self.allows(RepairRule::ScalarToArray) {
            return value;
        }
        let items = node.keyword("items").unwrap_or(&ANY);
        let mark = self.repairs.len();
        let inner = self.under("0".into(), |w| w.value(value.clone(), items));
        let items_node = self.view.node(items);
        if self.refusal.is_none() && self.admits(items_node, &inner) {
            let after = Value::Array(vec![inner]);
            self.insert(mark, RepairRule::ScalarToArray, &value, &after);
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
