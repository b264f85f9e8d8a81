//! Packed parallel calls: one call whose parameters each hold an array of N values where the schema takes one,
//! split into the N calls the model meant (the repair `parallel_split`). Pure, like the rest of the pipeline.
//!
//! A call is split only when every parameter that takes one value but received an array received an array of
//! the same length N ≥ 2, every other parameter is copied into each part, and each part validates (after the
//! other repairs). Nothing is guessed: the i-th element goes to the i-th call, or nothing is split.

use super::message::{Repair, Violation};
use super::repair::view::{Types, View};
use super::repair::{RepairRule, RepairSettings, Repaired, repair_arguments};
use super::{CallError, Checked, inject::strip_overrides, json_text, validate::validate_arguments};
use crate::registry::CompiledTool;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Whether the pipeline may split a call: as each tool allows, always (the offline `toolgate repair`, which
/// scores what the rule could do), or never.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SplitMode {
    #[default]
    AsToolAllows,
    Always,
    Never,
}

/// A call split into the calls the model meant.
#[derive(Debug, Clone)]
pub struct Split {
    pub tool: Arc<CompiledTool>,
    /// One checked call per element, in order; each part's `repairs` are its own.
    pub parts: Vec<Checked>,
    /// The repairs of the whole call (its name, its syntax), then the split itself.
    pub repairs: Vec<Repair>,
    /// The arguments as sent, and the line telling the model to make one call per value: the refusal when the
    /// executor cannot run the parts (a policy rule may send them to review), made only then.
    pub sent: Value,
    pub one_call_each: Violation,
}

/// The most calls one call is split into. Each part copies the parameters sent once and runs the tool, so a
/// packed array of thousands would be thousands of copies and calls from one request: past this, nothing is split.
pub const MAX_PARTS: usize = 16;

/// The packed parameters of `arguments` (those that take one value but hold an array), if they all hold arrays
/// of one length N, 2 ≤ N ≤ `MAX_PARTS`: their names and N.
fn packed(tool: &CompiledTool, arguments: &Value) -> Option<(Vec<String>, usize)> {
    let (object, schema) = (arguments.as_object()?, tool.model_schema());
    let view = View::new(schema);
    let properties = view.node(schema).properties()?;
    let mut names = Vec::new();
    let mut length = None;
    for (name, value) in object {
        let (Value::Array(items), Some(property)) = (value, properties.get(name)) else { continue };
        let takes_one = view.node(property).types.is_some_and(|t| !t.has(Types::ARRAY));
        if !takes_one {
            continue;
        }
        if *length.get_or_insert(items.len()) != items.len() {
            return None;
        }
        names.push(name.clone());
    }
    length.filter(|n| (2..=MAX_PARTS).contains(n)).map(|n| (names, n))
}

/// The N argument objects: the i-th element of each packed parameter, every other parameter copied.
fn unpacked(arguments: &Value, names: &[String], n: usize) -> Vec<Value> {
    let object = arguments.as_object().expect("packed arguments are an object");
    (0..n)
        .map(|i| {
            let part: Map<String, Value> = object
                .iter()
                .map(|(key, value)| match value {
                    Value::Array(items) if names.contains(key) => (key.clone(), items[i].clone()),
                    other => (key.clone(), other.clone()),
                })
                .collect();
            Value::Object(part)
        })
        .collect()
}

/// One part checked as a call of its own: valid as it is, or repaired into a valid call; None otherwise. Only the
/// elements a part takes from the packed arrays may be repaired: what is copied into every part stays exactly as
/// the model wrote it, so the parts differ from the call as sent by where each value went, and nothing else.
fn checked_part(
    tool: &Arc<CompiledTool>,
    part: Value,
    names: &[String],
    settings: RepairSettings,
    max_depth: usize,
) -> Option<Checked> {
    let validator = tool.model_validator();
    if validator.is_valid(&part) {
        return Some(Checked { tool: Arc::clone(tool), text: json_text(&part), arguments: part, repairs: Vec::new() });
    }
    let Repaired { mut value, mut repairs } = repair_arguments(tool, &part, settings, max_depth).ok()??;
    if !repairs.iter().all(|repair| names.iter().any(|name| within(&repair.path, name))) {
        return None;
    }
    repairs.extend(strip_overrides(tool, &mut value));
    validator.is_valid(&value).then(|| Checked {
        tool: Arc::clone(tool),
        text: json_text(&value),
        arguments: value,
        repairs,
    })
}

/// Whether the JSON pointer `path` is the top-level parameter `name` or inside it.
fn within(path: &str, name: &str) -> bool {
    let escaped = name.replace('~', "~0").replace('/', "~1");
    path.strip_prefix('/')
        .and_then(|rest| rest.strip_prefix(escaped.as_str()))
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

impl Split {
    /// The call refused as sent, with the line telling the model to make one call per value: the answer when the
    /// executor cannot run the parts (a policy rule may send them to review).
    pub fn refusal(&self) -> CallError {
        refusal(&self.tool, &self.sent, self.one_call_each.clone())
    }
}

/// `arguments` refused with their violations and `line` after them.
pub(super) fn refusal(tool: &CompiledTool, arguments: &Value, line: Violation) -> CallError {
    let mut violations = validate_arguments(tool, arguments);
    violations.push(line);
    CallError::Invalid(violations)
}

/// What the split rule makes of arguments that fail the schema and that repair could not fix.
pub(super) enum Outcome {
    /// The parts, the split's record, and the line the model would read if the parts could not run.
    Split(Vec<Checked>, Repair, Violation),
    /// The rule does not apply: refused as any other call.
    NotPacked,
    /// The rule would split the call, but the tool does not allow it: refused with this line for the model.
    NotAllowed(Violation),
}

/// Splits `arguments` into the calls the model meant, when the rule applies and the tool allows it. The
/// violations of the call as sent are not made here: only a refusal needs them.
pub(super) fn split(
    tool: &Arc<CompiledTool>,
    arguments: &Value,
    settings: RepairSettings,
    mode: SplitMode,
    max_depth: usize,
) -> Outcome {
    if mode == SplitMode::Never || !settings.allows(RepairRule::ParallelSplit) {
        return Outcome::NotPacked;
    }
    let Some((names, n)) = packed(tool, arguments) else { return Outcome::NotPacked };
    let objects = unpacked(arguments, &names, n);
    let parts: Option<Vec<Checked>> =
        objects.iter().map(|part| checked_part(tool, part.clone(), &names, settings, max_depth)).collect();
    let Some(parts) = parts else { return Outcome::NotPacked };
    let line = one_call_each(&tool.spec.name, &names, n);
    if mode == SplitMode::AsToolAllows && !tool.splits_parallel() {
        return Outcome::NotAllowed(line);
    }
    let record = Repair {
        rule: RepairRule::ParallelSplit.name().to_owned(),
        path: String::new(),
        before: json_text(arguments),
        after: json_text(&Value::Array(objects)),
    };
    Outcome::Split(parts, record, line)
}

/// The line that tells the model what it should have done: one call per value.
fn one_call_each(tool: &str, names: &[String], n: usize) -> Violation {
    let listed = match names {
        [one] => format!("{one} holds"),
        [init @ .., last] => format!("{} and {last} each hold", init.join(", ")),
        [] => unreachable!("a split has a packed parameter"),
    };
    Violation {
        instance_path: String::new(),
        schema_path: String::new(),
        message: format!(
            "{listed} {n} values, but {tool} takes one per call: make {n} separate calls to {tool}, one per {}",
            names[0]
        ),
    }
}
