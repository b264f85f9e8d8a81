//! What a rule sees of a call: `args` (the arguments that would run, injected values included), `context`
//! (`user_id`, `tenant`, `session_id`, `values`), `tool` (`name`, `labels`) and `now`, bound once per call as CEL
//! values that every rule of the call reads.

use cel::objects::{Key, Map};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};
use std::time::SystemTime;

/// The CEL environment every rule is compiled and run in: the standard library, nothing more.
static ENVIRONMENT: LazyLock<Arc<cel::Env>> = LazyLock::new(|| Arc::new(cel::Env::stdlib()));

pub(super) fn environment() -> &'static cel::Env {
    &ENVIRONMENT
}

/// One call, as the rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub args: &'a serde_json::Value,
    /// The length of the arguments' JSON text: with the context's, the size a rule's cost is bounded by.
    pub args_bytes: usize,
    pub user_id: &'a str,
    pub tenant: &'a str,
    pub session_id: &'a str,
    pub values: &'a BTreeMap<String, String>,
    pub tool: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub now: SystemTime,
}

/// The call bound to its variables, for every rule of the call.
pub struct Bindings<'a> {
    context: cel::Context<'a, 'a>,
    size: u64,
    elements: u64,
}

impl Bindings<'_> {
    pub fn new(input: &Input<'_>) -> Self {
        let mut context = cel::Context::with_env(Arc::clone(&ENVIRONMENT));
        let mut elements = input.values.len().max(input.labels.len()).max(4);
        context.add_variable_from_value("args", json(input.args, &mut elements));
        let context_map = [
            ("user_id", text(input.user_id)),
            ("tenant", text(input.tenant)),
            ("session_id", text(input.session_id)),
            ("values", strings(input.values)),
        ];
        context.add_variable_from_value("context", map(context_map));
        context.add_variable_from_value("tool", map([("name", text(input.tool)), ("labels", strings(input.labels))]));
        let now = chrono::DateTime::<chrono::Utc>::from(input.now).fixed_offset();
        context.add_variable_from_value("now", cel::Value::Timestamp(now));
        let context_bytes = input.user_id.len() + input.tenant.len() + input.session_id.len() + input.tool.len();
        let pairs = |m: &BTreeMap<String, String>| m.iter().map(|(k, v)| k.len() + v.len() + 2).sum::<usize>();
        let size = input.args_bytes + context_bytes + pairs(input.values) + pairs(input.labels);
        let (size, elements) = (u64::try_from(size).unwrap_or(u64::MAX), u64::try_from(elements).unwrap_or(u64::MAX));
        Self { context, size: size.max(1), elements }
    }

    pub(super) fn context(&self) -> &cel::Context<'_, '_> {
        &self.context
    }

    /// The call's size in bytes, which bounds every value a rule reads from it.
    pub(super) fn size(&self) -> u64 {
        self.size
    }

    /// The most elements any one list or map of the call has.
    pub(super) fn elements(&self) -> u64 {
        self.elements
    }
}

fn text(s: &str) -> cel::Value {
    cel::Value::String(Arc::new(s.to_owned()))
}

fn map<const N: usize>(entries: [(&str, cel::Value); N]) -> cel::Value {
    let map: HashMap<Key, cel::Value> =
        entries.into_iter().map(|(k, v)| (Key::String(Arc::new(k.into())), v)).collect();
    cel::Value::Map(Map { map: Arc::new(map) })
}

fn strings(pairs: &BTreeMap<String, String>) -> cel::Value {
    let map = pairs.iter().map(|(k, v)| (Key::String(Arc::new(k.clone())), text(v))).collect();
    cel::Value::Map(Map { map: Arc::new(map) })
}

/// A JSON value as CEL's: integers as `int` (or `uint` past its range), other numbers as `double`. `elements`
/// becomes the most elements of any array or object in it, if more.
fn json(value: &serde_json::Value, elements: &mut usize) -> cel::Value {
    use serde_json::Value as J;
    match value {
        J::Null => cel::Value::Null,
        J::Bool(b) => cel::Value::Bool(*b),
        J::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => text(s),
        J::Array(items) => {
            *elements = (*elements).max(items.len());
            cel::Value::List(Arc::new(items.iter().map(|v| json(v, elements)).collect()))
        }
        J::Object(fields) => {
            *elements = (*elements).max(fields.len());
            let map = fields.iter().map(|(k, v)| (Key::String(Arc::new(k.clone())), json(v, elements))).collect();
            cel::Value::Map(Map { map: Arc::new(map) })
        }
    }
}
