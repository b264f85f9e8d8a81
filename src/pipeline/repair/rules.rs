//! The named repair rules, and the settings that turn repair, or single rules, off.

use std::fmt;

/// Every change the gateway may make to a call. The name is what a `Repair` record and the config say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RepairRule {
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
    CallsFromText,
}

impl RepairRule {
    pub const ALL: [RepairRule; 25] = [
        RepairRule::ToolNameNormalized,
        RepairRule::ToolNamePrefix,
        RepairRule::ToolNameResidue,
        RepairRule::CodeFence,
        RepairRule::TemplateResidue,
        RepairRule::JsonSyntax,
        RepairRule::DoubleEncoded,
        RepairRule::WrapperUnwrapped,
        RepairRule::BareValueWrapped,
        RepairRule::KeyRenamed,
        RepairRule::Alias,
        RepairRule::UnknownDropped,
        RepairRule::NullDropped,
        RepairRule::RequiredDefault,
        RepairRule::StringToNumber,
        RepairRule::StringToInteger,
        RepairRule::StringToBoolean,
        RepairRule::StringToJson,
        RepairRule::IntegerToString,
        RepairRule::FloatToInteger,
        RepairRule::ScalarToArray,
        RepairRule::ArrayToScalar,
        RepairRule::EnumMatched,
        RepairRule::ParallelSplit,
        RepairRule::CallsFromText,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RepairRule::ToolNameNormalized => "tool_name_normalized",
            RepairRule::ToolNamePrefix => "tool_name_prefix",
            RepairRule::ToolNameResidue => "tool_name_residue",
            RepairRule::CodeFence => "code_fence",
            RepairRule::TemplateResidue => "template_residue",
            RepairRule::JsonSyntax => "json_syntax",
            RepairRule::DoubleEncoded => "double_encoded",
            RepairRule::WrapperUnwrapped => "wrapper_unwrapped",
            RepairRule::BareValueWrapped => "bare_value_wrapped",
            RepairRule::KeyRenamed => "key_renamed",
            RepairRule::Alias => "alias",
            RepairRule::UnknownDropped => "unknown_dropped",
            RepairRule::NullDropped => "null_dropped",
            RepairRule::RequiredDefault => "required_default",
            RepairRule::StringToNumber => "string_to_number",
            RepairRule::StringToInteger => "string_to_integer",
            RepairRule::StringToBoolean => "string_to_boolean",
            RepairRule::StringToJson => "string_to_json",
            RepairRule::IntegerToString => "integer_to_string",
            RepairRule::FloatToInteger => "float_to_integer",
            RepairRule::ScalarToArray => "scalar_to_array",
            RepairRule::ArrayToScalar => "array_to_scalar",
            RepairRule::EnumMatched => "enum_matched",
            RepairRule::ParallelSplit => "parallel_split",
            RepairRule::CallsFromText => "calls_from_text",
        }
    }

    pub fn from_name(name: &str) -> Option<RepairRule> {
        RepairRule::ALL.into_iter().find(|r| r.name() == name)
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl fmt::Display for RepairRule {
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
            let rule = RepairRule::from_name(name).ok_or_else(|| {
                let known: Vec<_> = RepairRule::ALL.iter().map(|r| r.name()).collect();
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
    pub fn allows(&self, rule: RepairRule) -> bool {
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
        for rule in RepairRule::ALL {
            assert_eq!(RepairRule::from_name(rule.name()), Some(rule));
        }
        let mut names: Vec<_> = RepairRule::ALL.iter().map(|r| r.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), RepairRule::ALL.len());
    }

    #[test]
    fn rules_turn_off_by_name() {
        let s = RepairSettings::with_disabled(true, ["enum_matched"]).unwrap();
        assert!(!s.allows(RepairRule::EnumMatched) && s.allows(RepairRule::KeyRenamed));
        assert!(!s.for_tool(Some(false)).allows(RepairRule::KeyRenamed));
        assert!(RepairSettings::default().for_tool(None).allows(RepairRule::EnumMatched));
        let err = RepairSettings::with_disabled(true, ["enum_match"]).unwrap_err();
        assert!(err.contains("unknown repair rule \"enum_match\"") && err.contains("enum_matched"), "{err}");
    }
}
