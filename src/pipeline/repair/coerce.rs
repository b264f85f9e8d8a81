//! Scalar coercions: a value of the wrong type read as the type the schema wants, only when it is exact.

use super::rules::RepairRule;
use super::view::Types;
use serde_json::{Number, Value};

/// The value as one of `types`, when it means exactly that: `"5"` → 5, `"TRUE"` → true, `5.0` → 5, 5 → `"5"`.
/// `"2.5"` is not an integer, `"two"` is not 2, `"02134"` is not a number, and a float never becomes a string.
pub fn scalar(value: &Value, types: Types) -> Option<(Value, RepairRule)> {
    match value {
        Value::String(s) => from_string(s, types),
        Value::Number(n) if types.has(Types::INTEGER) => {
            integral(n).map(|i| (Value::Number(i), RepairRule::FloatToInteger))
        }
        Value::Number(n) if types.has(Types::STRING) && !n.is_f64() => {
            Some((Value::String(n.to_string()), RepairRule::IntegerToString))
        }
        _ => None,
    }
}

fn from_string(s: &str, types: Types) -> Option<(Value, RepairRule)> {
    let text = s.trim();
    if types.has(Types::BOOLEAN) {
        if text.eq_ignore_ascii_case("true") {
            return Some((Value::Bool(true), RepairRule::StringToBoolean));
        }
        if text.eq_ignore_ascii_case("false") {
            return Some((Value::Bool(false), RepairRule::StringToBoolean));
        }
    }
    if !types.has(Types::INTEGER) && !types.has(Types::NUMBER) {
        return None;
    }
    let number = exact_number(text)?;
    if types.has(Types::INTEGER)
        && let Some(i) = if number.is_f64() { integral(&number) } else { Some(number.clone()) }
    {
        return Some((Value::Number(i), RepairRule::StringToInteger));
    }
    types.has(Types::NUMBER).then_some((Value::Number(number), RepairRule::StringToNumber))
}

/// A number written exactly as JSON writes one, and nothing else: no sign `+`, no leading zeros, no `1,000`.
fn exact_number(text: &str) -> Option<Number> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let first_two: Vec<char> = digits.chars().take(2).collect();
    if matches!(first_two[..], ['0', c] if c.is_ascii_digit()) || !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let number: Number = serde_json::from_str(text).ok()?;
    number.as_f64().filter(|f| f.is_finite()).map(|_| number)
}

/// A float with no fractional part, as an integer, within the range where floats are exact.
fn integral(n: &Number) -> Option<Number> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    let f = n.as_f64().filter(|_| n.is_f64())?;
    #[allow(clippy::cast_possible_truncation)]
    (f.fract() == 0.0 && f.abs() <= EXACT).then(|| Number::from(f as i64))
}

/// Lowercase letters and digits only.
pub fn loose(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const INT: Types = Types::INTEGER;

    #[test]
    fn exact_numbers_only() {
        let num = |s: &str, t| scalar(&json!(s), t).map(|(v, r)| (v, r.name()));
        assert_eq!(num("5", INT), Some((json!(5), "string_to_integer")));
        assert_eq!(num(" -12 ", INT), Some((json!(-12), "string_to_integer")));
        assert_eq!(num("5.0", INT), Some((json!(5), "string_to_integer")));
        assert_eq!(num("2.5", Types::NUMBER), Some((json!(2.5), "string_to_number")));
        assert_eq!(num("1e3", Types::NUMBER), Some((json!(1000.0), "string_to_number")));
        for refused in ["2.5", "two", "02134", "+5", "1,000", "4k", "", "-", "NaN", "Infinity", "0x10", "1e999"] {
            assert_eq!(num(refused, INT), None, "{refused:?} as integer");
        }
        assert_eq!(num("1e999", Types::NUMBER), None, "overflow is not a number");
        assert_eq!(num("0.5", Types::NUMBER), Some((json!(0.5), "string_to_number")));
        assert_eq!(num("0", INT), Some((json!(0), "string_to_integer")));
    }

    #[test]
    fn booleans_floats_and_integers() {
        assert_eq!(scalar(&json!("TRUE"), Types::BOOLEAN), Some((json!(true), RepairRule::StringToBoolean)));
        assert_eq!(scalar(&json!("False"), Types::BOOLEAN), Some((json!(false), RepairRule::StringToBoolean)));
        assert_eq!(scalar(&json!("yes"), Types::BOOLEAN), None);
        assert_eq!(scalar(&json!("1"), Types::BOOLEAN), None);
        assert_eq!(scalar(&json!(3.0), INT), Some((json!(3), RepairRule::FloatToInteger)));
        assert_eq!(scalar(&json!(3.5), INT), None);
        assert_eq!(scalar(&json!(2022), Types::STRING), Some((json!("2022"), RepairRule::IntegerToString)));
        assert_eq!(scalar(&json!(0.6), Types::STRING), None, "a float's text is not unique");
        assert_eq!(scalar(&json!(true), Types::STRING), None);
    }
}
