//! Calls written as objects: `{"name": …, "arguments": …}` (OpenAI, Hermes, Mistral) or `"parameters"` (Llama 3).

use super::TextCall;
use serde_json::{Map, Value};

/// The keys a call object holds its arguments under: OpenAI's and Hermes's, Llama 3's, and the short form.
const ARGUMENTS: [&str; 3] = ["arguments", "parameters", "params"];

/// What an object names, and why it is not exactly a call when it is not: `(name, why)`.
pub type Broken = (String, String);

/// The call an object is, when it is exactly one: a string `name` (or `function`) with an object of
/// `arguments`, `parameters` or `params` (or that object as JSON text), and nothing else but a `type` of
/// `"function"` or an `id`; or `{"type": "function", "function": {…}}`. `Err` says why an object with a name is
/// not a call (it may be data, unless the name is a tool's); `Ok(None)` names nothing.
///
/// `keyed` says which names may also be read in the looser shapes of plain text: `{"tool": {…arguments}}`, as
/// Gemini and others write them, and `{"name": "tool", "a": 1}`, the call flattened. In plain text it knows the
/// tools offered; inside a template's tags it knows none, so only the template's own shape is read there.
#[cfg(test)]
fn call_of(value: &Value, keyed: &dyn Fn(&str) -> bool) -> Result<Option<TextCall>, Broken> {
    Ok(shaped_call_of(value, keyed)?.map(|(call, _)| call))
}

/// `call_of`, and whether the call is in a loose shape (keyed, flat, or `parameters` that are a schema), which
/// plain text takes only as the whole answer.
fn shaped_call_of(value: &Value, keyed: &dyn Fn(&str) -> bool) -> Result<Option<(TextCall, bool)>, Broken> {
    let Value::Object(map) = value else { return Ok(None) };
    shaped_map(map, keyed)
}

fn shaped_map(map: &Map<String, Value>, keyed: &dyn Fn(&str) -> bool) -> Result<Option<(TextCall, bool)>, Broken> {
    if let (1, Some((name, arguments))) = (map.len(), map.iter().next())
        && keyed(name)
    {
        return arguments_of(name, arguments).map(|arguments| Some((TextCall { name: name.clone(), arguments }, true)));
    }
    if let Some(Value::Object(function)) = map.get("function").filter(|_| map.len() <= 3)
        && map.get("type").is_none_or(|t| t == "function")
        && !map.contains_key("name")
    {
        return shaped_map(function, &|_| false); // read in place: a copy at each level would cost depth × size
    }
    let Some((name_key, Value::String(name))) = ["name", "function"].iter().find_map(|k| Some((*k, map.get(*k)?)))
    else {
        return Ok(None);
    };
    let arguments: Vec<_> = ARGUMENTS.iter().filter_map(|k| map.get(*k)).collect();
    let extra =
        map.keys().find(|k| !ARGUMENTS.contains(&k.as_str()) && !matches!(k.as_str(), "type" | "id") && *k != name_key);
    if arguments.is_empty() && name_key == "name" && keyed(name) && !map.contains_key("description") {
        // `{"name": "f", "a": 1}`: the arguments beside the name, as some models flatten a call.
        let flat = map.iter().filter(|(k, _)| k.as_str() != "name").map(|(k, v)| (k.clone(), v.clone())).collect();
        return Ok(Some((TextCall { name: name.clone(), arguments: Value::Object(flat) }, true)));
    }
    let typed = map.get("type").is_none_or(|t| t == "function");
    let arguments = match (&arguments[..], extra, typed) {
        ([one], None, true) => *one,
        ([], None, true) => return Err((name.clone(), format!("{name} is named without its arguments"))),
        (_, Some(key), _) => return Err((name.clone(), format!("the call of {name} holds {key:?}, not a call's"))),
        _ => return Err((name.clone(), format!("the call of {name} is not one call's object"))),
    };
    let schema = arguments.get("properties").is_some_and(Value::is_object) && arguments.get("type").is_some();
    let arguments = arguments_of(name, arguments)?;
    Ok(Some((TextCall { name: name.clone(), arguments }, schema)))
}

/// `["name", {…arguments}]`, or the tuple `("name", {…})`, where `keyed` knows the name.
fn pair(value: &Value, keyed: &dyn Fn(&str) -> bool) -> Option<TextCall> {
    match value.as_array()?.as_slice() {
        [Value::String(name), arguments @ Value::Object(_)] if keyed(name) => {
            Some(TextCall { name: name.clone(), arguments: arguments.clone() })
        }
        _ => None,
    }
}

/// Arguments as an object, or as JSON text of one.
fn arguments_of(name: &str, arguments: &Value) -> Result<Value, Broken> {
    match arguments {
        Value::Object(_) => Ok(arguments.clone()),
        Value::String(text) => match crate::pipeline::strict::from_str(text) {
            Ok(value @ Value::Object(_)) => Ok(value),
            _ => Err((name.to_owned(), format!("the arguments of {name} are not an object"))),
        },
        _ => Err((name.to_owned(), format!("the arguments of {name} are not an object"))),
    }
}

/// The calls a value is: one call object, or a list of them, and whether any is in a loose shape. `Ok(None)` when
/// it names no call.
pub fn calls_of(value: &Value, keyed: &dyn Fn(&str) -> bool) -> Result<Option<(Vec<TextCall>, bool)>, Broken> {
    if let Some(call) = pair(value, keyed) {
        return Ok(Some((vec![call], false)));
    }
    match value {
        Value::Array(items) if items.iter().all(|i| pair(i, keyed).is_some()) => {
            Ok(Some((items.iter().filter_map(|i| pair(i, keyed)).collect(), false)))
        }
        Value::Array(items) if !items.is_empty() => {
            let calls: Vec<_> = items.iter().map(|item| shaped_call_of(item, keyed)).collect::<Result<_, _>>()?;
            match calls.iter().position(Option::is_none) {
                _ if calls.iter().all(Option::is_none) => Ok(None),
                None => {
                    let loose = calls.iter().flatten().any(|(_, loose)| *loose);
                    Ok(Some((calls.into_iter().flatten().map(|(call, _)| call).collect(), loose)))
                }
                Some(_) => {
                    let name = calls.into_iter().flatten().next().map(|(c, _)| c.name).unwrap_or_default();
                    Err((name, "a list holds calls and other values".into()))
                }
            }
        }
        _ => Ok(shaped_call_of(value, keyed)?.map(|(call, loose)| (vec![call], loose))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_object_forms_of_todays_templates_are_calls() {
        let forms = [
            json!({"name": "f", "arguments": {"a": 1}}),
            json!({"name": "f", "parameters": {"a": 1}}),
            json!({"function": "f", "parameters": {"a": 1}}),
            json!({"name": "f", "arguments": "{\"a\": 1}"}),
            json!({"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}),
        ];
        let keyed = |name: &str| name == "f";
        assert_eq!(call_of(&json!({"f": {"a": 1}}), &keyed).unwrap().unwrap().arguments, json!({"a": 1}));
        assert_eq!(call_of(&json!({"f": {"a": 1}}), &|_| false).unwrap(), None);
        assert_eq!(call_of(&json!({"name": "f", "a": 1}), &keyed).unwrap().unwrap().arguments, json!({"a": 1}));
        for form in forms {
            assert_eq!(
                call_of(&form, &|_| false).unwrap(),
                Some(TextCall { name: "f".into(), arguments: json!({"a": 1}) })
            );
        }
    }

    #[test]
    fn an_object_that_is_not_exactly_a_call_is_not_read_as_one() {
        assert_eq!(call_of(&json!({"city": "Paris"}), &|_| false).unwrap(), None);
        for form in [
            json!({"name": "f", "a": 1}),
            json!({"name": "f"}),
            json!({"name": "f", "arguments": {}, "parameters": {}}),
            json!({"name": "f", "arguments": [1]}),
        ] {
            assert!(call_of(&form, &|_| false).is_err(), "{form}");
        }
    }
}
