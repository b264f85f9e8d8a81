//! `[console]`: the web console's listener, the host names it answers to, and how many recent calls it keeps to
//! show.

use super::ConfigError;
use serde::Deserialize;
use std::net::SocketAddr;

/// The table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConsole {
    /// Serves the console at `http://{listen}/`; absent, there is none (unless `--console-listen` sets one). A port
    /// alone (`8809`) is on loopback.
    pub listen: Option<String>,
    /// Recent calls kept in memory for the console's calls page.
    pub recent_calls: Option<usize>,
    /// `Host` values answered, as names (any port) or `host:port`; empty, the loopback names only.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
}

/// `[console]` as checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleSettings {
    pub listen: Option<SocketAddr>,
    pub recent_calls: usize,
    /// The names a request's `Host` (and a browser's `Origin`) may give: a page served under another name, such as
    /// one a DNS-rebinding site points at 127.0.0.1, is refused.
    pub allowed_hosts: Vec<AllowedHost>,
}

/// Finished calls the console keeps for its calls page.
pub const DEFAULT_RECENT_CALLS: usize = 1_000;

impl Default for ConsoleSettings {
    fn default() -> Self {
        Self { listen: None, recent_calls: DEFAULT_RECENT_CALLS, allowed_hosts: loopback_hosts() }
    }
}

/// One name the console answers to: a host (lowercase, an IPv6 address without brackets) and, if given, the only
/// port it is answered on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHost {
    pub host: String,
    pub port: Option<u16>,
}

impl AllowedHost {
    /// `name`, `name:port`, `1.2.3.4`, `[::1]` or `[::1]:8809`; a scheme, path, user, wildcard or space is refused.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let bad = |why: &str| format!("{text:?} {why}: give a host name or host:port, such as console.example:8809");
        if text.is_empty() || text.contains(['/', '@', '*', ' ']) {
            return Err(bad("is not a host"));
        }
        let authority = text.parse::<http::uri::Authority>().map_err(|_| bad("is not a host"))?;
        if authority.as_str().rsplit_once(':').is_some_and(|(_, port)| port.is_empty()) {
            return Err(bad("has an empty port"));
        }
        Ok(Self::new(authority.host(), authority.port_u16()))
    }

    /// Normalised: lowercase, an IPv6 address without its brackets.
    pub fn new(host: &str, port: Option<u16>) -> Self {
        Self { host: host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase(), port }
    }
}

/// Answered when `allowed_hosts` is empty: the names of this host's loopback, on any port.
fn loopback_hosts() -> Vec<AllowedHost> {
    ["localhost", "127.0.0.1", "::1"].iter().map(|h| AllowedHost::new(h, None)).collect()
}

impl ConsoleSettings {
    /// Reads the table, with `listen` overridden by `--console-listen` / `TOOLGATE_CONSOLE_LISTEN`. A console that
    /// no token closes (`closed` false: neither a review nor an admin token is set) may listen on loopback only.
    pub fn from_raw(raw: RawConsole, listen: Option<String>, closed: bool) -> Result<Self, ConfigError> {
        let invalid = |reason: String| ConfigError::Invalid(format!("console.{reason}"));
        let listen = match listen.or(raw.listen) {
            None => None,
            Some(text) => Some(address(&text).map_err(|e| {
                invalid(format!("listen {text:?} is not a port or an address like 127.0.0.1:8809: {e}"))
            })?),
        };
        if let Some(addr) = listen
            && !closed
            && !addr.ip().is_loopback()
        {
            return Err(invalid(format!(
                "listen {addr} is not a loopback address, and no review or admin token is set to log in with: \
                 set one ([auth] review_token or admin_token), or listen on 127.0.0.1"
            )));
        }
        let recent_calls = raw.recent_calls.unwrap_or(DEFAULT_RECENT_CALLS);
        if !(1..=100_000).contains(&recent_calls) {
            return Err(invalid(format!("recent_calls is {recent_calls}: keep between 1 and 100000")));
        }
        let allowed_hosts = if raw.allowed_hosts.is_empty() {
            loopback_hosts()
        } else {
            let parsed: Result<Vec<_>, _> = raw.allowed_hosts.iter().map(|h| AllowedHost::parse(h)).collect();
            parsed.map_err(|e| invalid(format!("allowed_hosts: {e}")))?
        };
        Ok(Self { listen, recent_calls, allowed_hosts })
    }
}

/// An address, or a port alone on loopback: the console is for the people on this host unless an address says
/// otherwise.
/// A side door's address: `host:port`, or a port alone on loopback (`--console-listen 8809`). Every side door
/// (`[console]`, `[mcp_front]`) takes the same forms.
pub(super) fn address(text: &str) -> Result<SocketAddr, std::net::AddrParseError> {
    match text.trim().parse::<u16>() {
        Ok(port) => Ok(SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port))),
        Err(_) => text.parse(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(listen: &str) -> RawConsole {
        RawConsole { listen: Some(listen.into()), ..RawConsole::default() }
    }

    #[test]
    fn off_unless_set_and_the_flag_wins_over_the_file() {
        assert_eq!(ConsoleSettings::from_raw(RawConsole::default(), None, false).unwrap(), ConsoleSettings::default());
        let set = ConsoleSettings::from_raw(raw("127.0.0.1:1"), Some("127.0.0.1:2".into()), false).unwrap();
        assert_eq!(set.listen, Some("127.0.0.1:2".parse().unwrap()));
    }

    #[test]
    fn a_port_alone_listens_on_loopback() {
        let set = ConsoleSettings::from_raw(raw("8809"), None, true).unwrap();
        assert_eq!(set.listen, Some("127.0.0.1:8809".parse().unwrap()));
        let flag = ConsoleSettings::from_raw(RawConsole::default(), Some("0".into()), false).unwrap();
        assert_eq!(flag.listen, Some("127.0.0.1:0".parse().unwrap()), "an open console on any free port");
    }

    #[test]
    fn an_open_console_stays_on_loopback_and_bad_values_are_refused() {
        let open = ConsoleSettings::from_raw(raw("0.0.0.0:8809"), None, false).unwrap_err().to_string();
        assert!(open.contains("not a loopback address"), "{open}");
        assert!(ConsoleSettings::from_raw(raw("0.0.0.0:8809"), None, true).is_ok());
        assert!(
            ConsoleSettings::from_raw(raw("nowhere"), None, true).unwrap_err().to_string().contains("console.listen")
        );
        let none = RawConsole { recent_calls: Some(0), ..RawConsole::default() };
        assert!(ConsoleSettings::from_raw(none, None, true).unwrap_err().to_string().contains("recent_calls"));
    }

    #[test]
    fn allowed_hosts_default_to_loopback_and_take_names_with_or_without_a_port() {
        let default = ConsoleSettings::from_raw(raw("8809"), None, false).unwrap().allowed_hosts;
        let names: Vec<_> = default.iter().map(|h| (h.host.as_str(), h.port)).collect();
        assert_eq!(names, [("localhost", None), ("127.0.0.1", None), ("::1", None)]);
        let hosts = vec!["Console.Example".into(), "console.example:8443".into(), "[::1]:8809".into()];
        let set = ConsoleSettings::from_raw(RawConsole { allowed_hosts: hosts, ..raw("8809") }, None, true).unwrap();
        let names: Vec<_> = set.allowed_hosts.iter().map(|h| (h.host.as_str(), h.port)).collect();
        assert_eq!(names, [("console.example", None), ("console.example", Some(8443)), ("::1", Some(8809))]);
        for bad in ["", "http://console.example", "console.example/", "*.example", "a b", "user@host", "host:"] {
            let raw = RawConsole { allowed_hosts: vec![bad.into()], ..raw("8809") };
            let error = ConsoleSettings::from_raw(raw, None, true).unwrap_err().to_string();
            assert!(error.contains("console.allowed_hosts") && error.contains("host:port"), "{bad:?}: {error}");
        }
    }
}
