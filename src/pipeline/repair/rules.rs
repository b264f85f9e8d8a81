//! The named repair rules, and the settings that turn repair, or single rules, off.

use std::fmt;

/// Every change the gateway may make to a call. The name is what a `Repair` record and the config say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    ToolNameNormalized,
    ToolNamePrefix,
    ToolNameResidue,
    CodeFence,
    TemplateResidue,
    JsonSyntax,
    DoubleEncoded,
    WrapperUnwrapped,
    BareValueWrapped,
    KeyRenamed,
    Alias,
    UnknownDropped,
    NullDropped,
    RequiredDefault,
    StringToNumber,
    StringToInteger,
    StringToBoolean,
    StringToJson,
    IntegerToString,
    FloatToInteger,
    ScalarToArray,
    ArrayToScalar,
    EnumMatched,
    ParallelSplit,
}

impl Rule {
    pub const ALL: [Rule; 24] = [
        Rule::ToolNameNormalized,
        Rule::ToolNamePrefix,
        Rule::ToolNameResidue,
        Rule::CodeFence,
        Rule::TemplateResidue,
        Rule::JsonSyntax,
        Rule::DoubleEncoded,
        Rule::WrapperUnwrapped,
        Rule::BareValueWrapped,
        Rule::KeyRenamed,
        Rule::Alias,
        Rule::UnknownDropped,
        Rule::NullDropped,
        Rule::RequiredDefault,
        Rule::StringToNumber,
        Rule::StringToInteger,
        Rule::StringToBoolean,
        Rule::StringToJson,
        Rule::IntegerToString,
        Rule::FloatToInteger,
        Rule::ScalarToArray,
        Rule::ArrayToScalar,
        Rule::EnumMatched,
        Rule::ParallelSplit,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Rule::ToolNameNormalized => "tool_name_normalized",
            Rule::ToolNamePrefix => "tool_name_prefix",
            Rule::ToolNameResidue => "tool_name_residue",
            Rule::CodeFence => "code_fence",
            Rule::TemplateResidue => "template_residue",
            Rule::JsonSyntax => "json_syntax",
            Rule::DoubleEncoded => "double_encoded",
            Rule::WrapperUnwrapped => "wrapper_unwrapped",
            Rule::BareValueWrapped => "bare_value_wrapped",
            Rule::KeyRenamed => "key_renamed",
            Rule::Alias => "alias",
            Rule::UnknownDropped => "unknown_dropped",
            Rule::NullDropped => "null_dropped",
            Rule::RequiredDefault => "required_default",
            Rule::StringToNumber => "string_to_number",
            Rule::StringToInteger => "string_to_integer",
            Rule::StringToBoolean => "string_to_boolean",
            Rule::StringToJson => "string_to_json",
            Rule::IntegerToString => "integer_to_string",
            Rule::FloatToInteger => "float_to_integer",
            Rule::ScalarToArray => "scalar_to_array",
            Rule::ArrayToScalar => "array_to_scalar",
            Rule::EnumMatched => "enum_matched",
            Rule::ParallelSplit => "parallel_split",
        }
    }

    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.name() == name)
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Gateway-wide repair settings, from the config. A tool's `repair.enabled` overrides `enabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepairSettings {
    pub enabled: bool,
    disabled: u32,
}

impl Default for RepairSettings {
    fn default() -> Self {
        Self { enabled: true, disabled: 0 }
    }
}

impl RepairSettings {
    /// Repair on, except for the named rules; an unknown name is an error that lists the known ones.
    pub fn with_disabled<'a>(enabled: bool, names: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut disabled = 0;
        for name in names {
            let rule = Rule::from_name(name).ok_or_else(|| {
                let known: Vec<_> = Rule::ALL.iter().map(|r| r.name()).collect();
                format!("unknown repair rule {name:?}; the rules are: {}", known.join(", "))
            })?;
            disabled |= rule.bit();
        }
        Ok(Self { enabled, disabled })
    }

    /// No repair at all: text must be strict JSON and valid as written.
    pub fn off() -> Self {
        Self { enabled: false, disabled: 0 }
    }

    /// Whether `rule` may run at all, before any per-tool setting.
    pub fn allows(&self, rule: Rule) -> bool {
        self.enabled && self.disabled & rule.bit() == 0
    }

    /// The settings for one tool: its own `repair.enabled` wins over the gateway's.
    pub fn for_tool(&self, tool_enabled: Option<bool>) -> Self {
        Self { enabled: tool_enabled.unwrap_or(self.enabled), disabled: self.disabled }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_has_a_distinct_name_that_reads_back() {
        for rule in Rule::ALL {
            assert_eq!(Rule::from_name(rule.name()), Some(rule));
        }
        let mut names: Vec<_> = Rule::ALL.iter().map(|r| r.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Rule::ALL.len());
    }

    #[test]
    fn rules_turn_off_by_name() {
        let s = RepairSettings::with_disabled(true, ["enum_matched"]).unwrap();
        assert!(!s.allows(Rule::EnumMatched) && s.allows(Rule::KeyRenamed));
        assert!(!s.for_tool(Some(false)).allows(Rule::KeyRenamed));
        assert!(RepairSettings::default().for_tool(None).allows(Rule::EnumMatched));
        let err = RepairSettings::with_disabled(true, ["enum_match"]).unwrap_err();
        assert!(err.contains("unknown repair rule \"enum_match\"") && err.contains("enum_matched"), "{err}");
    }
}
