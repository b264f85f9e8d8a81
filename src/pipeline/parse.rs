//! Parse: raw argument text to a JSON value, within the size and nesting limits; broken syntax is repaired
//! only where it has one reading (see `repair::read_lenient`).

use super::CallError;
use super::message::Repair;
use super::repair::{RepairSettings, SyntaxError, nesting_within, read_lenient};
use serde_json::Value;

/// Argument text past 1 MiB is refused unread.
pub const DEFAULT_MAX_ARGUMENT_BYTES: usize = 1024 * 1024;
/// Arguments nested deeper are refused.
pub const DEFAULT_MAX_DEPTH: usize = 64;

/// Bounds on what a model may send as arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParseLimits {
    pub max_bytes: usize,
    pub max_depth: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        Self { max_bytes: DEFAULT_MAX_ARGUMENT_BYTES, max_depth: DEFAULT_MAX_DEPTH }
    }
}

/// Parses the arguments. Empty text means `{}`. Text that is not JSON is read leniently when `settings`
/// allow it, with one `Repair` per syntax rule it took.
pub fn parse_arguments(
    text: &str,
    limits: ParseLimits,
    settings: RepairSettings,
) -> Result<(Value, Vec<Repair>), CallError> {
    if text.len() > limits.max_bytes {
        return Err(CallError::Malformed(format!(
            "the arguments are {} bytes, over the limit of {} bytes",
            text.len(),
            limits.max_bytes
        )));
    }
    if text.trim().is_empty() {
        return Ok((Value::Object(Default::default()), Vec::new()));
    }
    check_depth(text, limits.max_depth)?;
    let malformed = |e: SyntaxError| CallError::Malformed(format!("the arguments {e}"));
    let strict_error = match super::strict::from_str(text) {
        Ok(value) => return Ok((value, Vec::new())),
        // Well-formed, but a key twice: no repair can say which value was meant.
        Err(e) if e.is_data() => return Err(malformed(SyntaxError::of(&e))),
        Err(e) => e,
    };
    if !settings.enabled {
        return Err(malformed(SyntaxError::Unreadable(strict_error.to_string())));
    }
    match read_lenient(text, limits.max_depth, |r| settings.allows(r)) {
        Ok(reading) => {
            let (before, after) = (Value::String(text.to_owned()).to_string(), reading.value.to_string());
            let repair = |rule: super::repair::RepairRule| Repair {
                rule: rule.name().to_owned(),
                path: String::new(),
                before: before.clone(),
                after: after.clone(),
            };
            Ok((reading.value, reading.rules.iter().map(|r| repair(*r)).collect()))
        }
        Err(SyntaxError::Unreadable(_)) => Err(malformed(SyntaxError::Unreadable(strict_error.to_string()))),
        Err(other) => Err(malformed(other)),
    }
}

/// Scans brackets outside strings, so a deeply nested input is refused before any recursion.
fn check_depth(text: &str, max_depth: usize) -> Result<(), CallError> {
    if nesting_within(text, max_depth) {
        return Ok(());
    }
    Err(CallError::Malformed(format!("the arguments nest deeper than the limit of {max_depth} levels")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Result<Value, String> {
        let limits = ParseLimits { max_bytes: 64, max_depth: 3 };
        let off = RepairSettings::with_disabled(false, []).unwrap();
        parse_arguments(text, limits, off).map(|(v, _)| v).map_err(|e| e.to_string())
    }

    #[test]
    fn table() {
        assert_eq!(parse(""), Ok(json!({})));
        assert_eq!(parse("  \n"), Ok(json!({})));
        assert_eq!(parse(r#"{"a": [1, {"b": 2}]}"#), Ok(json!({"a": [1, {"b": 2}]})));
        assert_eq!(parse(r#"{"a": "[[[[[["}"#), Ok(json!({"a": "[[[[[["})), "brackets in strings do not count");
        assert_eq!(parse(r#"{"a": "\"[[[[["}"#), Ok(json!({"a": "\"[[[[["})), "escaped quotes stay in the string");
        assert!(parse("[[[[1]]]]").unwrap_err().contains("deeper than the limit of 3"));
        assert!(parse(&format!("\"{}\"", "x".repeat(80))).unwrap_err().contains("over the limit of 64 bytes"));
        assert!(parse("{'a': 1}").unwrap_err().contains("not valid JSON"));
    }
}
