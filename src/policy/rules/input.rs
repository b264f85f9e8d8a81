//! What a rule sees of a call: `args` (the arguments that would run, injected values included), `context`
//! (`user_id`, `tenant`, `session_id`, `values`), `tool` (`name`, `labels`) and `now`, bound once per call, each
//! made into CEL's values when a rule of the call first reads it.

use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelTimestamp, CelUInt,
};
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock, OnceLock};
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

/// The call bound to its variables, for every rule of the call. Each variable is made into CEL's values the first
/// time a rule reads it, borrowing the call's strings rather than copying them.
pub struct Bindings<'a> {
    input: Input<'a>,
    args: OnceLock<Box<dyn Val + 'a>>,
    context: OnceLock<Box<dyn Val + 'a>>,
    tool: OnceLock<Box<dyn Val + 'a>>,
    now: OnceLock<Box<dyn Val + 'a>>,
    size: u64,
    elements: u64,
}

impl<'a> Bindings<'a> {
    pub fn new(input: &Input<'a>) -> Self {
        let context_bytes = input.user_id.len() + input.tenant.len() + input.session_id.len() + input.tool.len();
        let pairs = |m: &BTreeMap<String, String>| m.iter().map(|(k, v)| k.len() + v.len() + 2).sum::<usize>();
        let size = input.args_bytes + context_bytes + pairs(input.values) + pairs(input.labels);
        let elements = most_elements(input.args).max(input.values.len()).max(input.labels.len()).max(4);
        let as_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        Self {
            input: *input,
            args: OnceLock::new(),
            context: OnceLock::new(),
            tool: OnceLock::new(),
            now: OnceLock::new(),
            size: as_u64(size).max(1),
            elements: as_u64(elements),
        }
    }

    /// A context in which the rules read this call.
    pub(super) fn context(&self) -> cel::Context<'_, '_> {
        let mut context = cel::Context::with_env(Arc::clone(&ENVIRONMENT));
        context.set_variable_resolver(self);
        context
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

impl VariableResolver for Bindings<'_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        let input = &self.input;
        let value: &'b (dyn Val + 'b) = match variable {
            "args" => self.args.get_or_init(|| json(input.args)).as_ref(),
            "context" => self
                .context
                .get_or_init(|| {
                    map([
                        ("user_id", text(input.user_id)),
                        ("tenant", text(input.tenant)),
                        ("session_id", text(input.session_id)),
                        ("values", strings(input.values)),
                    ])
                })
                .as_ref(),
            "tool" => {
                self.tool.get_or_init(|| map([("name", text(input.tool)), ("labels", strings(input.labels))])).as_ref()
            }
            "now" => self
                .now
                .get_or_init(|| {
                    Box::new(CelTimestamp::from(chrono::DateTime::<chrono::Utc>::from(input.now).fixed_offset()))
                })
                .as_ref(),
            _ => return None,
        };
        Some(CowVal::Borrowed(value))
    }
}

fn text(s: &str) -> Box<dyn Val + '_> {
    Box::new(CelString::from(s))
}

fn map<'a, const N: usize>(entries: [(&'static str, Box<dyn Val + 'a>); N]) -> Box<dyn Val + 'a> {
    let map: HashMap<CelMapKey<'a>, Box<dyn Val + 'a>> =
        entries.into_iter().map(|(k, v)| (CelMapKey::from(k), v)).collect();
    Box::new(CelMap::from(map))
}

fn strings(pairs: &BTreeMap<String, String>) -> Box<dyn Val + '_> {
    let map: HashMap<CelMapKey<'_>, Box<dyn Val + '_>> =
        pairs.iter().map(|(k, v)| (CelMapKey::from(k.as_str()), text(v))).collect();
    Box::new(CelMap::from(map))
}

/// A JSON value as CEL's, its strings borrowed: integers as `int` (or `uint` past its range), other numbers as
/// `double`.
fn json(value: &serde_json::Value) -> Box<dyn Val + '_> {
    use serde_json::Value as J;
    match value {
        J::Null => Box::new(CelNull),
        J::Bool(b) => Box::new(CelBool::from(*b)),
        J::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Box::new(CelInt::from(i)),
            (None, Some(u)) => Box::new(CelUInt::from(u)),
            _ => Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN))),
        },
        J::String(s) => text(s),
        J::Array(items) => Box::new(CelList::from(items.iter().map(json).collect::<Vec<_>>())),
        J::Object(fields) => {
            let map: HashMap<CelMapKey<'_>, Box<dyn Val + '_>> =
                fields.iter().map(|(k, v)| (CelMapKey::from(k.as_str()), json(v))).collect();
            Box::new(CelMap::from(map))
        }
    }
}

/// The most elements of any array or object in `value`.
fn most_elements(value: &serde_json::Value) -> usize {
    use serde_json::Value as J;
    match value {
        J::Array(items) => items.iter().map(most_elements).fold(items.len(), usize::max),
        J::Object(fields) => fields.values().map(most_elements).fold(fields.len(), usize::max),
        _ => 0,
    }
}
