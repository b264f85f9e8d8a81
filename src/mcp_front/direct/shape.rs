//! Which requests the direct path takes: a 2026-07-28 `tools/call` in the plain form, of a tool whose backend
//! cannot talk back to the host. Whatever this does not recognise goes to the SDK, which answers it as it always
//! has, so each check here is the SDK's own or a stricter one: a check the SDK would fail never passes here.

use crate::config::Principal;
use crate::handles::Core;
use crate::pipeline;
use crate::registry::Backend;
use http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN, TRANSFER_ENCODING};
use http::{HeaderMap, Method, request::Parts};
use rmcp::model::{JsonObject, JsonRpcVersion2_0, ProtocolVersion, RequestId, RequestMetaObject};
use serde::Deserialize;

/// The protocol version the direct path serves: the first without sessions.
const VERSION: &str = "2026-07-28";

/// What the SDK's checks are given, read the same way here.
pub struct DoorChecks {
    /// `Host` values accepted (DNS rebinding); empty accepts any, as the SDK does.
    pub allowed_hosts: Vec<String>,
    pub max_body: usize,
}

/// A `tools/call` the direct path runs.
pub struct DirectCall {
    pub id: RequestId,
    pub principal: Principal,
    pub name: String,
    pub arguments: Option<JsonObject>,
    pub meta: RequestMetaObject,
}

/// The JSON-RPC request, with nothing the direct path does not know: a field more (a task, a `requestState`) and it
/// is the SDK's. Read from JSON objects alone (`Object`), as the SDK reads it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireCall {
    #[allow(dead_code)] // Read only to be checked: "2.0".
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    method: String,
    params: Object<WireParams>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireParams {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(rename = "_meta", default)]
    meta: RequestMetaObject,
}

/// `T` read from a JSON object only: a derived struct also reads a JSON array, field by field in order, which the
/// SDK refuses.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Fields<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> Result<T, M::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(Fields(std::marker::PhantomData)).map(Object)
    }
}

/// From the head alone: the length of a body the direct path may take, or `None` for the SDK's.
pub fn by_head(parts: &Parts, checks: &DoorChecks) -> Option<usize> {
    let headers = &parts.headers;
    let plain = parts.method == Method::POST
        && !headers.contains_key("mcp-session-id")
        && !headers.contains_key(ORIGIN)
        && !headers.contains_key(TRANSFER_ENCODING)
        && sole(headers, "mcp-protocol-version") == Some(VERSION)
        && sole(headers, "mcp-method") == Some("tools/call")
        && sole(headers, "mcp-name").is_some_and(|name| !name.starts_with("=?"))
        // Checked by the SDK against the tool's schema, should the door ever give it one.
        && !headers.keys().any(|name| name.as_str().starts_with("mcp-param-"))
        && parts.extensions.get::<Principal>().is_some()
        && accepts_json_and_events(headers)
        && sends_json(headers)
        && host_allowed(parts, &checks.allowed_hosts);
    let length = sole(headers, CONTENT_LENGTH.as_str())?.parse::<usize>().ok()?;
    (plain && length <= checks.max_body).then_some(length)
}

/// From the body: the call, when it is one the direct path runs.
pub fn by_body(parts: &Parts, body: &[u8], core: &Core) -> Option<DirectCall> {
    let call = parse(parts, body)?;
    // An MCP server's tool may report progress, send log messages or ask the host, on the call's stream; no other
    // backend sends anything but its answer, so a host's progress token is no reason to leave the direct path.
    let tool = pipeline::exact_tool(&core.registry.catalog(), &call.principal.tenant, &call.name)?;
    match tool.spec.backend {
        Some(Backend::Grpc { .. } | Backend::Http(_) | Backend::Worker {}) => Some(call),
        Some(Backend::Mcp { .. }) | None => None,
    }
}

/// The body read as a plain `tools/call` that agrees with the head.
fn parse(parts: &Parts, body: &[u8]) -> Option<DirectCall> {
    let Object(WireCall { id, method, params: Object(params), .. }) = serde_json::from_slice(body).ok()?;
    let WireParams { name, arguments, meta } = params;
    let version = ProtocolVersion::V_2026_07_28;
    let plain = method == "tools/call"
        && sole(&parts.headers, "mcp-name") == Some(name.as_str())
        && meta.protocol_version().as_ref() == Some(&version)
        && meta.missing_required_keys(&version).is_empty();
    let principal = parts.extensions.get::<Principal>().filter(|_| plain)?.clone();
    Some(DirectCall { id, principal, name, arguments, meta })
}

/// The header's one value, as text; `None` when it is missing, repeated or not text.
fn sole<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    values.next().is_none().then(|| value.to_str().ok()).flatten()
}

/// `Accept` names both JSON and an event stream, with no parameters (no weight that could refuse either).
fn accepts_json_and_events(headers: &HeaderMap) -> bool {
    let (mut json, mut events) = (false, false);
    for value in headers.get_all(ACCEPT) {
        let Ok(value) = value.to_str() else { return false };
        if value.contains([';', '"']) {
            return false;
        }
        for essence in value.split(',').map(str::trim) {
            json |= essence.eq_ignore_ascii_case("application/json");
            events |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && events
}

/// `Content-Type` is JSON, as the SDK reads it.
fn sends_json(headers: &HeaderMap) -> bool {
    headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|value| {
        let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
        essence.trim().eq_ignore_ascii_case("application/json")
    })
}

/// The request's host is one of `allowed` (any port for an entry without one), as the SDK matches it.
fn host_allowed(parts: &Parts, allowed: &[String]) -> bool {
    let authority = match parts.headers.get(HOST) {
        Some(host) => host.to_str().ok().and_then(|h| http::uri::Authority::try_from(h).ok()),
        None => parts.uri.authority().cloned(),
    };
    let Some(authority) = authority else { return false };
    if allowed.is_empty() {
        return true;
    }
    let host = normal(authority.host());
    allowed.iter().filter(|entry| !entry.trim().is_empty()).any(|entry| {
        let entry = entry.trim();
        let (name, port) = match http::uri::Authority::try_from(entry) {
            Ok(allowed) => (normal(allowed.host()), allowed.port_u16()),
            Err(_) => (normal(entry), None),
        };
        name == host && port.is_none_or(|port| authority.port_u16() == Some(port))
    })
}

fn normal(host: &str) -> String {
    host.trim_matches('[').trim_matches(']').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const CHECKS: DoorChecks = DoorChecks { allowed_hosts: Vec::new(), max_body: 1024 };

    /// The head of a plain call, as `benches/mcp_front.rs` and `tests/it/mcp_front/direct.rs` send it, changed
    /// by `change`.
    fn head(change: impl FnOnce(&mut http::request::Builder)) -> Parts {
        let mut request = http::Request::post("/mcp")
            .header(HOST, "127.0.0.1:9000")
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .header(CONTENT_LENGTH, "200")
            .header("mcp-protocol-version", VERSION)
            .header("mcp-method", "tools/call")
            .header("mcp-name", "transfer");
        change(&mut request);
        let (mut parts, ()) = request.body(()).unwrap().into_parts();
        parts.extensions.insert(Principal { tenant: "acme".into(), ..Principal::default() });
        parts
    }

    fn set(name: &'static str, value: &'static str) -> impl FnOnce(&mut http::request::Builder) {
        move |b| {
            b.headers_mut().unwrap().insert(name, http::HeaderValue::from_static(value));
        }
    }

    fn body(meta: Value) -> Vec<u8> {
        let params = json!({"name": "transfer", "arguments": {"amount": 1}, "_meta": meta});
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})).unwrap()
    }

    fn meta() -> Value {
        json!({"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}})
    }

    #[test]
    fn a_plain_call_is_taken_by_its_head_and_its_body() {
        let parts = head(|_| {});
        assert_eq!(by_head(&parts, &CHECKS), Some(200));
        let call = parse(&parts, &body(meta())).expect("a plain call is the direct path's");
        assert_eq!((call.id, call.name.as_str()), (RequestId::Number(7), "transfer"));
        assert_eq!(call.arguments.map(Value::Object), Some(json!({"amount": 1})));
        assert_eq!(call.principal.tenant, "acme");
    }

    #[test]
    fn a_head_the_sdk_must_judge_goes_to_it() {
        let sdk = |change: Box<dyn FnOnce(&mut http::request::Builder)>| by_head(&head(change), &CHECKS);
        assert_eq!(sdk(Box::new(set("mcp-session-id", "s"))), None, "a session");
        assert_eq!(sdk(Box::new(set("origin", "http://localhost"))), None, "a browser's origin");
        assert_eq!(sdk(Box::new(set("mcp-protocol-version", "2025-11-25"))), None, "an older version");
        assert_eq!(sdk(Box::new(set("mcp-method", "tools/list"))), None, "another method");
        assert_eq!(sdk(Box::new(set("mcp-name", "=?base64?dHJhbnNmZXI=?="))), None, "an encoded name");
        assert_eq!(sdk(Box::new(set("accept", "application/json;q=0, text/event-stream"))), None, "a weight");
        assert_eq!(sdk(Box::new(set("accept", "application/json"))), None, "no event stream");
        assert_eq!(sdk(Box::new(set("content-type", "text/plain"))), None, "not JSON");
        assert_eq!(sdk(Box::new(set("content-length", "1025"))), None, "over the body limit");
        assert_eq!(sdk(Box::new(set("transfer-encoding", "chunked"))), None, "chunked");
        assert_eq!(sdk(Box::new(set("mcp-param-region", "eu"))), None, "a parameter in a header");
        let twice = |b: &mut http::request::Builder| {
            b.headers_mut().unwrap().append("mcp-method", http::HeaderValue::from_static("tools/call"));
        };
        assert_eq!(sdk(Box::new(twice)), None, "a repeated header");
        let mut anonymous = head(|_| {});
        anonymous.extensions.clear();
        assert_eq!(by_head(&anonymous, &CHECKS), None, "no principal");
    }

    #[test]
    fn the_host_is_matched_as_the_sdk_matches_it() {
        let allowed = |hosts: &[&str], host: &'static str| {
            let checks = DoorChecks { allowed_hosts: hosts.iter().map(|h| h.to_string()).collect(), max_body: 1024 };
            by_head(&head(set("host", host)), &checks).is_some()
        };
        assert!(allowed(&["127.0.0.1"], "127.0.0.1:9000"), "an entry without a port takes any");
        assert!(allowed(&["LOCALHOST"], "localhost"), "names are compared without case");
        assert!(allowed(&["[::1]"], "[::1]:9000"));
        assert!(allowed(&["127.0.0.1:9000"], "127.0.0.1:9000"));
        assert!(!allowed(&["127.0.0.1:9001"], "127.0.0.1:9000"), "an entry's port must match");
        assert!(!allowed(&["127.0.0.1:9000"], "127.0.0.1"), "a host without a port does not match one with");
        assert!(!allowed(&["localhost"], "evil.example"));
        assert!(!allowed(&["localhost"], "localhost.evil.example"));
        assert!(allowed(&[], "evil.example"), "an empty list takes any, as the SDK's does");
    }

    #[test]
    fn a_body_the_sdk_must_judge_goes_to_it() {
        let parts = head(|_| {});
        let sdk = |body: Vec<u8>| parse(&parts, &body).is_none();
        assert!(sdk(body(json!({"io.modelcontextprotocol/protocolVersion": VERSION}))), "required _meta missing");
        assert!(sdk(body(json!({}))), "no protocol version in _meta");
        let older = json!({"io.modelcontextprotocol/protocolVersion": "2025-11-25",
            "io.modelcontextprotocol/clientCapabilities": {}});
        assert!(sdk(body(older)), "_meta names another version than the head");
        let with = |key: &str, value: Value| {
            let mut request: Value = serde_json::from_slice(&body(meta())).unwrap();
            request["params"][key] = value;
            serde_json::to_vec(&request).unwrap()
        };
        assert!(sdk(with("requestState", json!("sealed"))), "a retried reviewed call");
        assert!(sdk(with("task", json!({}))), "a task");
        assert!(sdk(with("arguments", json!([1]))), "arguments that are not an object");
        assert!(sdk(with("name", json!("other"))), "a name the head does not carry");
        let mut request: Value = serde_json::from_slice(&body(meta())).unwrap();
        request["jsonrpc"] = json!("1.0");
        assert!(sdk(serde_json::to_vec(&request).unwrap()), "not JSON-RPC 2.0");
        request["jsonrpc"] = json!("2.0");
        request["method"] = json!("tools/list");
        assert!(sdk(serde_json::to_vec(&request).unwrap()), "another method");
        assert!(sdk(b"[]".to_vec()), "a batch");
        let envelope = json!(["2.0", 7, "tools/call", {"name": "transfer", "_meta": meta()}]);
        assert!(sdk(serde_json::to_vec(&envelope).unwrap()), "a request written as an array");
        let mut request: Value = serde_json::from_slice(&body(meta())).unwrap();
        request["params"] = json!(["transfer", {"amount": 1}, meta()]);
        assert!(sdk(serde_json::to_vec(&request).unwrap()), "params written as an array");
        assert!(sdk(b"{".to_vec()), "not JSON");
        assert!(!sdk(body(meta())), "the plain call itself is taken");
        let mut progress = meta();
        progress["progressToken"] = json!(1);
        assert!(!sdk(body(progress)), "and with a progress token, as rmcp's host sends on every request");
    }
}
