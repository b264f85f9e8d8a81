//! Parse: raw argument text to a JSON value, within the size and nesting limits.

use super::CallError;
use serde_json::Value;

/// Bounds on what a model may send as arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParseLimits {
    pub max_bytes: usize,
    pub max_depth: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        Self { max_bytes: 1024 * 1024, max_depth: 64 }
    }
}

/// Parses the arguments. Empty text means `{}`.
pub fn parse_arguments(text: &str, limits: ParseLimits) -> Result<Value, CallError> {
    if text.len() > limits.max_bytes {
        return Err(CallError::Malformed(format!(
            "the arguments are {} bytes, over the limit of {} bytes",
            text.len(),
            limits.max_bytes
        )));
    }
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    check_depth(text, limits.max_depth)?;
    serde_json::from_str(text).map_err(|e| CallError::Malformed(format!("the arguments are not valid JSON: {e}")))
}

/// Scans brackets outside strings, so a deeply nested input is refused before any recursion.
fn check_depth(text: &str, max_depth: usize) -> Result<(), CallError> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max_depth {
                    return Err(CallError::Malformed(format!(
                        "the arguments nest deeper than the limit of {max_depth} levels"
                    )));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Result<Value, String> {
        let limits = ParseLimits { max_bytes: 64, max_depth: 3 };
        parse_arguments(text, limits).map_err(|e| e.to_string())
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
