//! Object shape: keys renamed to the properties they mean, optional nulls (and, if asked, unknown keys)
//! dropped, declared defaults of missing required properties, and the wrappers models put around arguments.

use super::rules::RepairRule;
use super::syntax::read_any;
use super::view::{Node, Types};
use super::walk::Walker;
use jsonschema::Validator;
use serde_json::{Map, Value};
use std::collections::HashMap;

type Object = Map<String, Value>;

impl<'a> Walker<'a> {
    /// The whole arguments: decoded if double-encoded, unwrapped or wrapped as the schema needs, then walked.
    pub fn arguments(&mut self, value: Value, root: &'a Value, validator: &Validator) -> Value {
        let value = self.decode_string(value);
        let Value::Object(map) = value else {
            return self.wrap_bare(value, root);
        };
        if let Some(unwrapped) = self.unwrap_wrapper(&map, root, validator) {
            return unwrapped;
        }
        self.value(Value::Object(map), root)
    }

    pub(super) fn object(&mut self, map: Object, node: Node<'a>) -> Value {
        let Some(props) = node.properties() else {
            return Value::Object(self.walk_members(map, node, None));
        };
        let map = self.rename_keys(map, props);
        let map = self.drop_keys(map, node, props);
        let mut out = self.walk_members(map, node, Some(props));
        self.fill_defaults(&mut out, node, props);
        Value::Object(out)
    }

    /// `{"Location": ..}` → `{"location": ..}`: to the one absent property the key names, ignoring case and
    /// separators, or through the tool's aliases at the top level. Two keys naming one property: neither moves.
    fn rename_keys(&mut self, map: Object, props: &'a Object) -> Object {
        if map.keys().all(|k| props.contains_key(k)) {
            return map;
        }
        let targets: Vec<Option<(&'a String, RepairRule)>> =
            map.keys().map(|k| self.rename_target(k, &map, props)).collect();
        let mut claims: HashMap<&str, usize> = HashMap::new();
        for (to, _) in targets.iter().flatten() {
            *claims.entry(to.as_str()).or_default() += 1;
        }
        let mut out = Object::with_capacity(map.len());
        for ((key, value), target) in map.into_iter().zip(&targets) {
            match target {
                Some((to, rule)) if claims[to.as_str()] == 1 => {
                    let to = (*to).clone();
                    self.under(to.clone(), |w| w.record(*rule, &Value::String(key), &Value::String(to.clone())));
                    out.insert(to, value);
                }
                _ => {
                    out.insert(key, value);
                }
            }
        }
        out
    }

    /// The property `key` names, through an alias or its loose spelling, looked up rather than scanned for.
    fn rename_target(&mut self, key: &str, map: &Object, props: &'a Object) -> Option<(&'a String, RepairRule)> {
        if props.contains_key(key) || !self.spend(1, key.len()) {
            return None;
        }
        let absent = |p: &String| props.contains_key(p) && !map.contains_key(p);
        if self.is_root()
            && self.allows(RepairRule::Alias)
            && let Some(to) = self.policy.aliases.get(key).filter(|t| absent(t))
        {
            return props.get_key_value(to).map(|(to, _)| (to, RepairRule::Alias));
        }
        let wanted = super::coerce::loose(key);
        if !self.allows(RepairRule::KeyRenamed) || wanted.is_empty() {
            return None;
        }
        let candidates = self.tables.spelled(props, &wanted);
        let mut scanned = 0;
        let mut matching = candidates.iter().inspect(|_| scanned += 1).filter(|p| !map.contains_key(p.as_str()));
        let found = match (matching.next(), matching.next()) {
            (Some(only), None) => Some((*only, RepairRule::KeyRenamed)),
            _ => None,
        };
        self.spend(scanned, 0);
        found
    }

    /// `null` for an optional property that does not take null; unknown keys when the tool asks for it.
    fn drop_keys(&mut self, map: Object, node: Node<'a>, props: &'a Object) -> Object {
        let closed = node.keyword("additionalProperties") == Some(&Value::Bool(false))
            && node.keyword("patternProperties").is_none();
        let drop_unknown = closed && self.policy.drop_unknown && self.allows(RepairRule::UnknownDropped);
        let mut out = Object::with_capacity(map.len());
        for (key, value) in map {
            let rule = match props.get(&key) {
                Some(schema) if value.is_null() && !self.tables.is_required(node.keyword("required"), &key) => {
                    let takes_null = self.view.node(schema).types.is_none_or(|t| t.has(Types::NULL));
                    (!takes_null && self.allows(RepairRule::NullDropped)).then_some(RepairRule::NullDropped)
                }
                None if drop_unknown => Some(RepairRule::UnknownDropped),
                _ => None,
            };
            match rule {
                Some(rule) => self.under(key, |w| w.record(rule, &value, &Value::Null)),
                None => {
                    out.insert(key, value);
                }
            }
        }
        out
    }

    fn walk_members(&mut self, map: Object, node: Node<'a>, props: Option<&'a Object>) -> Object {
        let extra = node.keyword("additionalProperties").filter(|s| s.is_object());
        let mut out = Object::with_capacity(map.len());
        for (key, value) in map {
            let value = match props.and_then(|p| p.get(&key)).or(extra) {
                Some(schema) => self.under(key.clone(), |w| w.value(value, schema)),
                None => value,
            };
            out.insert(key, value);
        }
        out
    }

    /// A required property the model left out, when the tool's own schema declares its default.
    fn fill_defaults(&mut self, out: &mut Object, node: Node<'a>, props: &'a Object) {
        if !self.allows(RepairRule::RequiredDefault) {
            return;
        }
        for name in node.required() {
            if out.contains_key(name) || !self.spend(1, 0) {
                continue;
            }
            if let Some(default) = props.get(name).and_then(|s| self.view.node(s).keyword("default")) {
                self.under(name.to_owned(), |w| w.record(RepairRule::RequiredDefault, &Value::Null, default));
                out.insert(name.to_owned(), default.clone());
            }
        }
    }

    /// `"{\"city\": \"Oslo\"}"`: arguments sent as a JSON string of an object.
    fn decode_string(&mut self, value: Value) -> Value {
        let Value::String(text) = &value else {
            return value;
        };
        if !text.trim_start().starts_with('{') || !self.allows(RepairRule::DoubleEncoded) {
            return value;
        }
        if self.refuse_too_deep(text, self.max_depth) || !self.spend(0, text.len()) {
            return value;
        }
        match read_any(text, self.max_depth, |r| self.allows(r)) {
            Some(object @ Value::Object(_)) => {
                self.record(RepairRule::DoubleEncoded, &value, &object);
                object
            }
            _ => value,
        }
    }

    /// `"myCoolButton"` for `{"selector": "myCoolButton"}`: a bare value, into the tool's one parameter.
    fn wrap_bare(&mut self, value: Value, root: &'a Value) -> Value {
        let node = self.view.node(root);
        let Some((name, schema)) = single_parameter(node).filter(|_| !value.is_null()) else {
            return value;
        };
        if !self.allows(RepairRule::BareValueWrapped) {
            return value;
        }
        let mark = self.repairs.len();
        let inner = self.under(name.clone(), |w| w.value(value.clone(), schema));
        let after = Value::Object(Object::from_iter([(name.clone(), inner)]));
        self.insert(mark, RepairRule::BareValueWrapped, &value, &after);
        after
    }

    /// `{"arguments": {...}}`: one key that is no property, around a value that is valid on its own. A key the
    /// schema declares anywhere it applies (an `anyOf` branch too) is the model's, never a wrapper.
    fn unwrap_wrapper(&mut self, map: &Object, root: &'a Value, validator: &Validator) -> Option<Value> {
        let (key, inner) = map.iter().next().filter(|_| map.len() == 1)?;
        if self.view.declares(root, key) || !self.allows(RepairRule::WrapperUnwrapped) {
            return None;
        }
        let mark = self.repairs.len();
        let inner = self.decode_string(inner.clone());
        let walked = if inner.is_object() { self.value(inner, root) } else { Value::Null };
        if walked.is_object() && self.refusal.is_none() && validator.is_valid(&walked) {
            self.insert(mark, RepairRule::WrapperUnwrapped, &Value::Object(map.clone()), &walked);
            return Some(walked);
        }
        self.repairs.truncate(mark);
        None
    }
}

/// The one parameter a tool takes: its single required property, or its only property.
fn single_parameter<'a>(node: Node<'a>) -> Option<(&'a String, &'a Value)> {
    let props = node.properties()?;
    let required: Vec<&str> = node.required().collect();
    match required[..] {
        [one] => props.get_key_value(one),
        [] if props.len() == 1 => props.iter().next(),
        _ => None,
    }
}
