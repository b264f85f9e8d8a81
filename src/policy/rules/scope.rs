//! Rules from the config (`[[policy]]`): each applies to every tool, or to the tools it names (an exact name, or
//! a prefix ending in `*`) and to those carrying all its labels. They run before a tool's own rules.

use super::{PolicyRule, Rule, RuleError};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One `[[policy]]` table as written: a rule, and which tools it applies to.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScopedRule {
    pub name: String,
    pub when: String,
    pub action: super::RuleAction,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub on_error: super::OnError,
    #[serde(default)]
    pub model_fixable: bool,
    /// Tool names, or prefixes ending in `*`; empty is every tool.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Labels a tool must all carry; empty is any.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// A config rule, compiled, with its scope.
#[derive(Debug)]
pub struct ScopedRule {
    pub rule: Arc<Rule>,
    tools: Vec<String>,
    labels: BTreeMap<String, String>,
}

impl ScopedRule {
    pub fn compile(raw: RawScopedRule) -> Result<Self, RuleError> {
        let RawScopedRule { name, when, action, message, on_error, model_fixable, tools, labels } = raw;
        if let Some(bad) = tools.iter().find(|t| t.is_empty() || t[..t.len() - 1].contains('*')) {
            let reason = format!("tools: {bad:?} is not a tool name or a prefix ending in *");
            return Err(RuleError::Invalid { name, reason });
        }
        let rule = Rule::compile(&PolicyRule { name, when, action, message, on_error, model_fixable })?;
        Ok(Self { rule: Arc::new(rule), tools, labels })
    }

    /// Whether the rule applies to the tool `name` with `labels`.
    pub fn applies(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        let named = self.tools.is_empty()
            || self.tools.iter().any(|t| match t.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => t == name,
            });
        named && self.labels.iter().all(|(k, v)| labels.get(k) == Some(v))
    }
}

/// The config's rules, in the order written.
#[derive(Debug, Default)]
pub struct GatewayRules {
    rules: Vec<ScopedRule>,
}

impl GatewayRules {
    /// Compiles the config's rules, refusing duplicate names and more than `MAX_RULES`.
    pub fn compile(raw: Vec<RawScopedRule>) -> Result<Self, RuleError> {
        if raw.len() > super::MAX_RULES {
            let reason = format!("{} rules, over the limit of {}", raw.len(), super::MAX_RULES);
            return Err(RuleError::Invalid { name: String::new(), reason });
        }
        let mut seen = std::collections::HashSet::new();
        let mut rules = Vec::with_capacity(raw.len());
        for rule in raw {
            if !seen.insert(rule.name.clone()) {
                let reason = "another [[policy]] rule has the same name".to_owned();
                return Err(RuleError::Invalid { name: rule.name, reason });
            }
            rules.push(ScopedRule::compile(rule)?);
        }
        Ok(Self { rules })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// The rules for one tool: the config's that apply to it, in order, then the tool's own.
    pub fn for_tool(&self, name: &str, labels: &BTreeMap<String, String>, own: &[Arc<Rule>]) -> Vec<Arc<Rule>> {
        let applying = self.rules.iter().filter(|r| r.applies(name, labels)).map(|r| Arc::clone(&r.rule));
        applying.chain(own.iter().cloned()).collect()
    }
}
