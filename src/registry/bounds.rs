//! The size bounds of a spec: its metadata (tenant, description, labels, inject, aliases, headers) and its schemas.
//! A spec is kept in memory, stored and sent to every gateway, so nothing in it may grow without bound.

use super::spec::{SpecError, ToolSpec};
use serde_json::Value;
use std::collections::BTreeMap;

/// The longest tool name or tenant, in bytes. A called name longer than this (once normalized) cannot match.
pub const MAX_NAME_LEN: usize = 128;
/// The longest description, in bytes: a tool's description is sent to the model with every definition.
pub const MAX_DESCRIPTION_BYTES: usize = 16 * 1024;
/// Most labels on one tool, and the longest label key and value, in bytes.
pub const MAX_LABELS: usize = 64;
pub const MAX_LABEL_KEY_BYTES: usize = 128;
pub const MAX_LABEL_VALUE_BYTES: usize = 1024;
/// Most `inject` entries, and the longest `param` or `from` of one, in bytes.
pub const MAX_INJECTIONS: usize = 64;
pub const MAX_INJECTION_FIELD_BYTES: usize = 1024;
/// Most `repair.aliases`, and the longest alias or target, in bytes.
pub const MAX_ALIASES: usize = 256;
pub const MAX_ALIAS_BYTES: usize = 256;
/// Most static headers of an HTTP backend.
pub const MAX_HEADERS: usize = 64;
/// The largest schema, as compact JSON, when the configuration sets none (`limits.max_schema_bytes`). A compiled
/// validator takes about 40 times its schema's text (docs/memory.md).
pub const DEFAULT_MAX_SCHEMA_BYTES: usize = 1024 * 1024;

/// Checks every metadata field against its bound; the error names the field and the bound.
pub fn check_metadata(spec: &ToolSpec) -> Result<(), SpecError> {
    if spec.tenant.len() > MAX_NAME_LEN || spec.tenant.chars().any(char::is_control) {
        return Err(SpecError::Tenant(format!(
            "{} must be at most {MAX_NAME_LEN} bytes with no control characters",
            quoted(&spec.tenant)
        )));
    }
    if spec.description.len() > MAX_DESCRIPTION_BYTES {
        let len = spec.description.len();
        return Err(SpecError::Description(format!("is {len} bytes, more than the {MAX_DESCRIPTION_BYTES} allowed")));
    }
    check_map(&spec.labels, MAX_LABELS, MAX_LABEL_KEY_BYTES, MAX_LABEL_VALUE_BYTES).map_err(SpecError::Labels)?;
    check_map(&spec.repair.aliases, MAX_ALIASES, MAX_ALIAS_BYTES, MAX_ALIAS_BYTES).map_err(SpecError::Alias)?;
    if spec.inject.len() > MAX_INJECTIONS {
        return Err(SpecError::Inject(format!(
            " has {} entries, more than the {MAX_INJECTIONS} allowed",
            spec.inject.len()
        )));
    }
    let long = |s: &str| s.len() > MAX_INJECTION_FIELD_BYTES;
    if let Some(i) = spec.inject.iter().position(|i| long(&i.param) || long(&i.from)) {
        return Err(SpecError::Inject(format!(
            "[{i}]: param and from must be at most {MAX_INJECTION_FIELD_BYTES} bytes"
        )));
    }
    Ok(())
}

/// Headers that frame the request: the HTTP client writes them for each request, from the URL and the body. A
/// static one would send a second, contradicting value (`Host`, `Content-Length`), or ask for framing the body
/// does not have (`Transfer-Encoding`, `Expect`): a request-smuggling shape on any proxy between.
const FRAMING_HEADERS: &[&str] = &["host", "content-length", "transfer-encoding", "expect"];
/// Hop-by-hop headers (RFC 9110 §7.6.1 and the older proxy ones): they speak of one connection, which the
/// gateway's client owns, and a proxy's credentials are not the backend's to receive.
const HOP_BY_HOP_HEADERS: &[&str] = &[
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
];
/// Headers the gateway sets for each call (docs/tool-spec.md): a static one would contradict them.
const PER_CALL_HEADERS: &[&str] = &["x-toolgate-call-id", "x-toolgate-tool"];

/// Why a static header may not be sent to any backend, if it may not: it frames the request or is hop-by-hop.
/// The headers of HTTP tools and of streamable-HTTP MCP servers (`backend::mcp`) are both checked with it.
pub fn refused_header(name: &str) -> Option<&'static str> {
    let is = |list: &[&str]| list.iter().any(|h| name.eq_ignore_ascii_case(h));
    if is(FRAMING_HEADERS) {
        Some("frames the request and is set by the HTTP client for each request")
    } else if is(HOP_BY_HOP_HEADERS) {
        Some("is a hop-by-hop header: it applies to one connection, not to the backend")
    } else {
        None
    }
}

/// Header names and values must be valid HTTP, or every call would fail at its first request, retryably; and no
/// header may be one `refused_header` names.
pub fn check_headers(headers: &BTreeMap<String, String>) -> Result<(), SpecError> {
    let bad = |msg: String| Err(SpecError::Backend(format!("http.headers {msg}")));
    if headers.len() > MAX_HEADERS {
        return bad(format!("has {} entries, more than the {MAX_HEADERS} allowed", headers.len()));
    }
    for (name, value) in headers {
        if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return bad(format!("{}: not a valid HTTP header name", quoted(name)));
        }
        let per_call = PER_CALL_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h));
        if let Some(why) = refused_header(name).or(per_call.then_some("is set by the gateway for each call")) {
            return bad(format!("{}: may not be set: it {why}", quoted(name)));
        }
        if http::HeaderValue::from_str(value).is_err() {
            return bad(format!("{}: the value is not a valid HTTP header value", quoted(name)));
        }
    }
    Ok(())
}

/// Refuses a schema whose compact JSON is longer than `max` bytes, without writing more than `max + 1` of it.
pub fn check_schema_size(field: &str, schema: &Value, max: usize) -> Result<(), SpecError> {
    let mut counter = Counter { written: 0, max };
    if serde_json::to_writer(&mut counter, schema).is_ok() {
        return Ok(());
    }
    let reason = format!("is larger than limits.max_schema_bytes ({max} bytes) as compact JSON");
    Err(if field == "output_schema" { SpecError::OutputSchema(reason) } else { SpecError::InputSchema(reason) })
}

fn check_map(map: &BTreeMap<String, String>, max_len: usize, max_key: usize, max_value: usize) -> Result<(), String> {
    if map.len() > max_len {
        return Err(format!("has {} entries, more than the {max_len} allowed", map.len()));
    }
    if let Some((key, _)) = map.iter().find(|(k, _)| k.len() > max_key) {
        return Err(format!("key {} is longer than {max_key} bytes", quoted(key)));
    }
    if let Some((key, _)) = map.iter().find(|(_, v)| v.len() > max_value) {
        return Err(format!("value of {} is longer than {max_value} bytes", quoted(key)));
    }
    Ok(())
}

/// `text` quoted for an error message, cut to `MAX_NAME_LEN` characters: the text may be the oversized field.
pub fn quoted(text: &str) -> String {
    match text.char_indices().nth(MAX_NAME_LEN) {
        Some((at, _)) => format!("{:?}…", &text[..at]),
        None => format!("{text:?}"),
    }
}

/// Counts what is written, and fails past `max` so a huge schema is not serialized whole.
struct Counter {
    written: usize,
    max: usize,
}

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.written += buf.len();
        if self.written > self.max {
            return Err(std::io::Error::other("over the limit"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
