//! Policy rules: CEL conditions on what a call says (`args`, `context`, `tool`, `now`) that deny it or send it to
//! review. A rule is compiled once, where it is defined (a tool's spec, an MCP overlay, `[[policy]]` in the
//! config): one that does not parse, names an unknown variable, field or function, or is too large is refused
//! there, with its position. Each rule carries a bound on its cost as a function of the call's size; a call whose
//! size would let a rule go past the budget does not run it, and the rule's `on_error` applies, as it does when the
//! expression fails on the call (a missing field, a type mismatch).

mod check;
mod cost;
mod input;
mod scope;
#[cfg(test)]
mod tests;

pub use input::{Bindings, Input};
pub use scope::{GatewayRules, RawScopedRule, ScopedRule};

use cost::Cost;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The longest condition a rule may have, in bytes.
pub const MAX_CONDITION_BYTES: usize = 4096;
/// The longest message a rule may have, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 1024;
/// The most rules one tool (or the config) may have.
pub const MAX_RULES: usize = 1000;
/// The most work a rule may do on one call, in the units of `cost.rs` (a node evaluated, a byte compared or
/// copied): a rule whose bound, at the call's size, is past it is not run. Linear rules pass on the largest calls
/// the gateway takes; a quadratic one is refused past calls of a few KiB.
pub const MAX_WORK: u64 = 64 * 1024 * 1024;
/// The largest value (a string or list built by the expression) a rule may make on one call, in bytes.
pub const MAX_BUILT_BYTES: u64 = 16 * 1024 * 1024;

/// A rule as written in a spec, an overlay or the config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyRule {
    /// Names the rule in the answer, the pending review, spans and metrics: `[A-Za-z0-9_.:-]`, 1 to 64.
    pub name: String,
    /// The CEL condition: the rule applies when it is true.
    pub when: String,
    pub action: RuleAction,
    /// What the model is told when the rule denies the call (and what a reviewer reads).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// What happens when the condition cannot be evaluated on a call.
    #[serde(default, skip_serializing_if = "OnError::is_default")]
    pub on_error: OnError,
    /// A denied call is the model's to fix (it may call again with other arguments); by default it is not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub model_fixable: bool,
}

/// What a rule does when its condition holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleAction {
    #[serde(alias = "DENY")]
    Deny,
    #[serde(alias = "REVIEW")]
    Review,
}

/// What a rule does when its condition cannot be evaluated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    #[default]
    #[serde(alias = "DENY")]
    Deny,
    #[serde(alias = "REVIEW")]
    Review,
    /// The rule is skipped.
    #[serde(alias = "ALLOW")]
    Allow,
}

impl OnError {
    fn is_default(&self) -> bool {
        *self == OnError::Deny
    }
}

/// Why a rule was refused where it was defined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("rule {name:?}: {reason}")]
    Invalid { name: String, reason: String },
    /// The condition, with the line and column (1-based) of what is wrong.
    #[error("rule {name:?}: `when` at line {line}, column {column}: {reason}")]
    Condition { name: String, line: usize, column: usize, reason: String },
}

/// A rule ready to run.
pub struct Rule {
    pub name: Arc<str>,
    pub action: RuleAction,
    pub message: Arc<str>,
    pub on_error: OnError,
    pub model_fixable: bool,
    pub source: PolicyRule,
    program: cel::Program,
    cost: Cost,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule").field("name", &self.name).field("when", &self.source.when).finish_non_exhaustive()
    }
}

impl Rule {
    /// Checks and compiles a rule.
    pub fn compile(rule: &PolicyRule) -> Result<Self, RuleError> {
        on_large_stack(&rule.name, || Rule::compile_here(rule))?
    }

    fn compile_here(rule: &PolicyRule) -> Result<Self, RuleError> {
        let invalid = |reason: String| RuleError::Invalid { name: rule.name.clone(), reason };
        check_name(&rule.name).map_err(invalid)?;
        if rule.when.trim().is_empty() {
            return Err(invalid("`when` is empty".into()));
        }
        if rule.when.len() > MAX_CONDITION_BYTES {
            return Err(invalid(format!("`when` is over {MAX_CONDITION_BYTES} bytes")));
        }
        if rule.message.len() > MAX_MESSAGE_BYTES {
            return Err(invalid(format!("`message` is over {MAX_MESSAGE_BYTES} bytes")));
        }
        let program = input::environment().compile(&rule.when).map_err(|errors| {
            let first = errors.errors.first();
            let (line, column) = first.map_or((1, 1), |e| (e.pos.0.max(1) as usize, e.pos.1.max(1) as usize));
            let reason = first.map_or_else(|| errors.to_string(), |e| e.msg.clone());
            RuleError::Condition { name: rule.name.clone(), line, column, reason }
        })?;
        check::names(&program).map_err(|at| RuleError::Condition {
            name: rule.name.clone(),
            line: at.line,
            column: at.column,
            reason: at.reason,
        })?;
        let cost = cost::of(program.expression());
        let message = if rule.message.trim().is_empty() {
            format!("The gateway's policy does not allow this call (rule {}).", rule.name)
        } else {
            rule.message.clone()
        };
        Ok(Self {
            name: rule.name.as_str().into(),
            action: rule.action,
            message: message.into(),
            on_error: rule.on_error,
            model_fixable: rule.model_fixable,
            source: rule.clone(),
            program,
            cost,
        })
    }

    /// Whether the condition holds for the call; `Err` says why it could not be told.
    pub fn holds(&self, bindings: &input::Bindings<'_>) -> Result<bool, String> {
        self.holds_in(bindings, &bindings.context())
    }

    fn holds_in(&self, bindings: &input::Bindings<'_>, context: &cel::Context<'_, '_>) -> Result<bool, String> {
        let (n, m) = (bindings.size(), bindings.elements());
        let (work, built) = (self.cost.work(n, m), self.cost.size(n, m));
        if work > MAX_WORK || built > MAX_BUILT_BYTES {
            return Err(format!(
                "the rule could cost {work} steps and build {built} bytes on a call this large, over its budget"
            ));
        }
        match self.program.execute(context) {
            Ok(cel::Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!("the condition gave {:?}, not a bool", other.type_of())),
            Err(err) => Err(err.to_string()),
        }
    }

    /// Whether the rule may send a call to review (its action, or its `on_error`).
    pub fn may_review(&self) -> bool {
        self.action == RuleAction::Review || self.on_error == OnError::Review
    }

    /// The most work this rule may do on a call of `n` bytes whose lists and maps have at most `m` elements, in
    /// the units of `cost.rs`.
    pub fn work_bound(&self, n: u64, m: u64) -> u64 {
        self.cost.work(n, m)
    }
}

fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'));
    if ok { Ok(()) } else { Err("the name must be 1 to 64 characters of A-Z, a-z, 0-9, _ . : -".into()) }
}

/// Compiles a list of rules, refusing duplicate names and more than `MAX_RULES`.
pub fn compile_all(rules: &[PolicyRule]) -> Result<Vec<Arc<Rule>>, RuleError> {
    if rules.len() > MAX_RULES {
        let name = String::new();
        return Err(RuleError::Invalid {
            name,
            reason: format!("{} rules, over the limit of {MAX_RULES}", rules.len()),
        });
    }
    if rules.is_empty() {
        return Ok(Vec::new());
    }
    let mut seen = std::collections::HashSet::with_capacity(rules.len());
    on_large_stack("", || {
        rules
            .iter()
            .map(|rule| {
                if !seen.insert(rule.name.as_str()) {
                    let reason = "another rule has the same name".to_owned();
                    return Err(RuleError::Invalid { name: rule.name.clone(), reason });
                }
                Rule::compile_here(rule).map(Arc::new)
            })
            .collect()
    })?
}

/// The stack rules are parsed on. CEL's ANTLR parser recurses several frames deep per level of brackets (its
/// own limit is 96 levels), far past the 2 MiB of an async worker's stack in an unoptimised build: a condition
/// of nested brackets would overflow it and end the process.
const PARSE_STACK: usize = 64 * 1024 * 1024;

/// Runs `f` on a thread of its own with `PARSE_STACK` of stack. A panic in it (the parser is not ours) is a
/// refusal of the rule, not of the process.
fn on_large_stack<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> Result<T, RuleError> {
    let refused = |reason: String| RuleError::Invalid { name: name.to_owned(), reason };
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new().name("toolgate-rules".into()).stack_size(PARSE_STACK);
        let spawned = thread.spawn_scoped(scope, f).map_err(|e| refused(format!("no thread to compile it on: {e}")))?;
        spawned.join().map_err(|_| refused("the condition could not be parsed".into()))
    })
}

/// What the rules decided about one call.
#[derive(Debug, Clone)]
pub enum Verdict {
    Pass,
    /// The first rule that denied it; `error` when the rule could not be evaluated and its `on_error` denied.
    Deny {
        rule: Arc<Rule>,
        error: Option<String>,
    },
    /// The first rule that sent it to review.
    Review {
        rule: Arc<Rule>,
        error: Option<String>,
    },
}

/// Runs `rules` in order on one call: the first rule that denies it decides; otherwise the first that sends it to
/// review does; otherwise it passes. A rule that cannot be evaluated acts as its `on_error` says.
pub fn judge<'r>(rules: impl IntoIterator<Item = &'r Arc<Rule>>, bindings: &input::Bindings<'_>) -> Verdict {
    let mut review: Option<(Arc<Rule>, Option<String>)> = None;
    let context = bindings.context();
    for rule in rules {
        let (action, error) = match rule.holds_in(bindings, &context) {
            Ok(false) => continue,
            Ok(true) => (rule.action, None),
            Err(error) => match rule.on_error {
                OnError::Allow => continue,
                OnError::Deny => (RuleAction::Deny, Some(error)),
                OnError::Review => (RuleAction::Review, Some(error)),
            },
        };
        match action {
            RuleAction::Deny => return Verdict::Deny { rule: Arc::clone(rule), error },
            RuleAction::Review => {
                review.get_or_insert((Arc::clone(rule), error));
            }
        }
    }
    match review {
        Some((rule, error)) => Verdict::Review { rule, error },
        None => Verdict::Pass,
    }
}
