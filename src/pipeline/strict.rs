//! Strict JSON reading for arguments: a key twice in one object is refused, because the schema, the rules and
//! the backend could each read a different one of its values; and `-0` is read as the integer `0`, not the
//! float `-0.0` serde_json makes of it, so arguments written again (after injection) keep their type.

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};
use std::fmt;

/// Parses `text` as one JSON value, refusing a duplicate key.
pub fn from_str(text: &str) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = deserializer.deserialize_any(Strict)?;
    deserializer.end()?;
    Ok(value)
}

/// Builds a `Value` as serde_json's own visitor does, with the two differences above.
#[derive(Clone, Copy)]
struct Strict;

impl<'de> de::DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // serde_json reads `-0` as `-0.0`: written again it would be a float. Zero is zero, and an integer.
        if v == 0.0 && v.is_sign_negative() {
            return Ok(Value::Number(0.into()));
        }
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self)?;
            // One lookup for the check and the insert: the key is hashed once.
            match object.entry(key) {
                Entry::Vacant(vacant) => {
                    vacant.insert(value);
                }
                Entry::Occupied(taken) => {
                    return Err(de::Error::custom(format_args!(
                        "the key {:?} appears twice in one object: write it once",
                        super::answer::quoted_name(taken.key())
                    )));
                }
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_as_serde_json_does_but_refuses_a_key_twice() {
        for text in [r#"{"a": [1, -2, 3.5, "x", null, true, {"b": {}}], "c": 18446744073709551615}"#, "[]", "\"s\""] {
            assert_eq!(from_str(text).unwrap(), serde_json::from_str::<Value>(text).unwrap(), "{text}");
        }
        let err = from_str(r#"{"amount": 5000, "amount": 10}"#).unwrap_err().to_string();
        assert!(err.contains(r#"the key "amount" appears twice"#), "{err}");
        assert!(from_str(r#"{"a": {"b": 1, "b": 1}}"#).is_err(), "at any depth, even with equal values");
        assert!(from_str(r#"{"a": 1} x"#).is_err(), "trailing text");
    }

    #[test]
    fn minus_zero_is_the_integer_zero() {
        assert_eq!(from_str(r#"{"n": -0, "f": -0.0, "z": 0.0}"#).unwrap().to_string(), r#"{"n":0,"f":0,"z":0.0}"#);
    }
}
