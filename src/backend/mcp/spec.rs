//! `McpServerSpec`: an MCP server as an operator declares it, in the config file, over the admin API and in
//! the store, and the checks it must pass.

use crate::registry::{
    Budget, Injection, Limits, PolicyRule, RepairPolicy, Review, ToolSpec, compile_rules, refused_header,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// The label every imported tool carries, naming its server: re-imports and removals find their tools by it.
pub const SERVER_LABEL: &str = "toolgate.mcp.server";
const DEFAULT_SEPARATOR: &str = "__";
const DEFAULT_REFRESH: Duration = Duration::from_secs(300);
/// What admins see in place of a secret.
const REDACTED: &str = "<redacted>";
/// Headers the streamable-HTTP transport sets itself, and refuses from the caller.
const RESERVED_HEADERS: &[&str] = &["accept", "mcp-session-id", "mcp-protocol-version", "last-event-id"];
/// Variables a stdio server inherits from the gateway; everything else it gets only through `env`, so the
/// gateway's own secrets (its tokens, say) never reach a tool process.
pub const INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// One MCP server. Exactly one of `command` (stdio) and `url` (streamable HTTP) is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// `None`: the server's name. `Some("")`: no prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Empty means `__`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub separator: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// 0 means every 5 minutes.
    #[serde(default)]
    pub refresh_interval_ms: u64,
    /// By the tool's own name on the server.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overlays: BTreeMap<String, ToolOverlay>,
    #[serde(default)]
    pub pass_invalid_output: bool,
}

/// An operator's policy for one imported tool, laid over what the server declares.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOverlay {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inject: Vec<Injection>,
    #[serde(default)]
    pub repair: RepairPolicy,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub review: Review,
    #[serde(default)]
    pub budget: Budget,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Rules for the tool, as a spec's `policy`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy: Vec<PolicyRule>,
}

/// How the gateway reaches a server.
#[derive(Debug, Clone, Copy)]
pub enum Transport<'a> {
    Stdio { command: &'a str, args: &'a [String], env: &'a BTreeMap<String, String>, cwd: Option<&'a str> },
    Http { url: &'a str, headers: &'a BTreeMap<String, String> },
}

impl McpServerSpec {
    /// Every check a definition must pass before it is stored or started; the error names the field.
    pub fn check(&self) -> Result<(), String> {
        let name_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-');
        if !(1..=64).contains(&self.name.len()) || !self.name.chars().all(name_ok) {
            return Err(format!("name {:?} is invalid: it must match ^[A-Za-z0-9_-]{{1,64}}$", self.name));
        }
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => return Err("set either command (stdio) or url (streamable HTTP), not both".into()),
            (None, None) => return Err("needs a transport: command (stdio) or url (streamable HTTP)".into()),
            (Some(command), None) if command.trim().is_empty() => return Err("command is empty".into()),
            (Some(_), None) if !self.headers.is_empty() => return Err("headers apply to url servers only".into()),
            (None, Some(url)) => check_url(url)?,
            _ => {}
        }
        if self.url.is_some() && (!self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some()) {
            return Err("args, env and cwd apply to command servers only".into());
        }
        self.check_headers()?;
        let name_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
        for (field, value) in [("prefix", self.prefix.as_deref().unwrap_or_default()), ("separator", &self.separator)] {
            if !value.chars().all(name_ok) {
                return Err(format!("{field} {value:?} may hold only the characters of tool names: A-Z a-z 0-9 _ . -"));
            }
        }
        if let Some(key) = self.env.iter().chain(&self.headers).find(|(_, v)| *v == REDACTED).map(|(k, _)| k) {
            return Err(format!("{key} is {REDACTED:?}, as ListMcpServers shows secrets: send the real value"));
        }
        for (tool, overlay) in &self.overlays {
            compile_rules(&overlay.policy).map_err(|e| format!("overlays.{tool}.policy: {e}"))?;
        }
        Ok(())
    }

    fn check_headers(&self) -> Result<(), String> {
        for (name, value) in &self.headers {
            if http::HeaderName::try_from(name.as_str()).is_err() {
                return Err(format!("headers: {name:?} is not a valid header name"));
            }
            if RESERVED_HEADERS.iter().any(|r| name.eq_ignore_ascii_case(r)) {
                return Err(format!("headers: {name:?} is set by the MCP transport itself"));
            }
            if let Some(why) = refused_header(name) {
                return Err(format!("headers: {name:?} may not be set: it {why}"));
            }
            // The value may be a secret: it is not echoed back.
            if http::HeaderValue::try_from(value.as_str()).is_err() {
                return Err(format!("headers: the value of {name:?} is not a valid header value"));
            }
        }
        Ok(())
    }

    pub fn transport(&self) -> Transport<'_> {
        match (&self.command, &self.url) {
            (Some(command), _) => {
                Transport::Stdio { command, args: &self.args, env: &self.env, cwd: self.cwd.as_deref() }
            }
            (None, url) => Transport::Http { url: url.as_deref().unwrap_or_default(), headers: &self.headers },
        }
    }

    /// The registry name of the server's tool `tool` (and the front door's name of its prompt `tool`).
    pub fn tool_name(&self, tool: &str) -> String {
        let prefix = self.prefix.as_deref().unwrap_or(&self.name);
        if prefix.is_empty() {
            return tool.to_owned();
        }
        let separator = if self.separator.is_empty() { DEFAULT_SEPARATOR } else { &self.separator };
        format!("{prefix}{separator}{tool}")
    }

    pub fn refresh_every(&self) -> Duration {
        match self.refresh_interval_ms {
            0 => DEFAULT_REFRESH,
            ms => Duration::from_millis(ms),
        }
    }

    /// The definition as shown to admins: the values of env and headers, and a URL's password and query, which
    /// often hold secrets, are hidden. (`args` are shown: a secret belongs in `env`.)
    pub fn redacted(&self) -> Self {
        let hide = |map: &BTreeMap<String, String>| map.keys().map(|k| (k.clone(), REDACTED.to_owned())).collect();
        let url = self.url.as_deref().map(redacted_url);
        Self { env: hide(&self.env), headers: hide(&self.headers), url, ..self.clone() }
    }
}

/// Whether `spec` was imported from the server `server`.
pub fn imported_from(spec: &ToolSpec, server: &str) -> bool {
    spec.labels.get(SERVER_LABEL).is_some_and(|s| s == server)
}

pub fn redacted_url(text: &str) -> String {
    let Ok(mut url) = url::Url::parse(text) else { return REDACTED.to_owned() };
    if url.password().is_some() {
        let _ = url.set_password(Some(REDACTED));
    }
    if url.query().is_some() {
        url.set_query(Some(REDACTED));
    }
    url.to_string()
}

fn check_url(url: &str) -> Result<(), String> {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        _ => Err(format!("url {url:?} must be an http:// or https:// address with a host")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(name: &str) -> McpServerSpec {
        McpServerSpec { name: name.into(), command: Some("python3".into()), ..Default::default() }
    }

    #[test]
    fn names_are_prefixed_by_default_and_configurable() {
        let mut spec = stdio("files");
        assert_eq!(spec.tool_name("read"), "files__read");
        spec.separator = ".".into();
        spec.prefix = Some("fs".into());
        assert_eq!(spec.tool_name("read"), "fs.read");
        spec.prefix = Some(String::new());
        assert_eq!(spec.tool_name("read"), "read");
    }

    #[test]
    fn checks_name_each_field_against_the_transport() {
        let cases = [
            (McpServerSpec { name: "a b".into(), ..stdio("") }, "name \"a b\" is invalid"),
            (McpServerSpec { url: Some("http://h/mcp".into()), ..stdio("s") }, "not both"),
            (McpServerSpec { command: None, ..stdio("s") }, "needs a transport"),
            (McpServerSpec { command: Some(" ".into()), ..stdio("s") }, "command is empty"),
            (McpServerSpec { command: None, url: Some("ftp://h".into()), ..stdio("s") }, "url \"ftp://h\""),
            (
                McpServerSpec { command: None, url: Some("http://h".into()), args: vec!["x".into()], ..stdio("s") },
                "apply to command servers only",
            ),
            (McpServerSpec { headers: [("a".into(), "b".into())].into(), ..stdio("s") }, "apply to url servers only"),
            (
                McpServerSpec {
                    command: None,
                    url: Some("http://h".into()),
                    headers: [("bad name".into(), "v".into())].into(),
                    ..stdio("s")
                },
                "not a valid header name",
            ),
        ];
        for (spec, reason) in cases {
            let err = spec.check().unwrap_err();
            assert!(err.contains(reason), "{spec:?}: {err}");
        }
        assert!(stdio("ok-1").check().is_ok());
    }

    #[test]
    fn redaction_hides_values_and_keeps_keys() {
        let spec = McpServerSpec { env: [("TOKEN".into(), "s3cret".into())].into(), ..stdio("s") };
        let shown = spec.redacted();
        assert_eq!(shown.env.get("TOKEN").map(String::as_str), Some("<redacted>"));
        assert!(!format!("{shown:?}").contains("s3cret"));
        let http = McpServerSpec { command: None, url: Some("https://u:pw@h/mcp?key=k1".into()), ..stdio("s") };
        assert_eq!(http.redacted().url.as_deref(), Some("https://u:%3Credacted%3E@h/mcp?%3Credacted%3E"));
        let err = McpServerSpec { env: [("TOKEN".into(), "<redacted>".into())].into(), ..stdio("s") }.check();
        assert!(err.unwrap_err().contains("send the real value"), "a redacted value read back is refused");
    }

    #[test]
    fn headers_are_checked_without_echoing_their_values() {
        let http = |name: &str, value: &str| McpServerSpec {
            command: None,
            url: Some("http://h/mcp".into()),
            headers: [(name.into(), value.into())].into(),
            ..stdio("s")
        };
        assert!(http("Mcp-Session-Id", "x").check().unwrap_err().contains("set by the MCP transport"));
        for name in ["Host", "content-length", "Transfer-Encoding", "connection", "Upgrade", "proxy-authorization"] {
            assert!(http(name, "x").check().unwrap_err().contains("may not be set"), "{name}");
        }
        let err = http("authorization", "Bearer s3cret\n").check().unwrap_err();
        assert!(err.contains("value of \"authorization\"") && !err.contains("s3cret"), "{err}");
        assert!(http("authorization", "Bearer t").check().is_ok());
        let prefix = McpServerSpec { prefix: Some("a/b".into()), ..stdio("s") };
        assert!(prefix.check().unwrap_err().contains("prefix \"a/b\""));
    }
}
