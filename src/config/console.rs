//! `[console]`: the web console's listener and how many recent calls it keeps to show.

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
}

/// `[console]` as checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleSettings {
    pub listen: Option<SocketAddr>,
    pub recent_calls: usize,
}

impl Default for ConsoleSettings {
    fn default() -> Self {
        Self { listen: None, recent_calls: 1_000 }
    }
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
        let recent_calls = raw.recent_calls.unwrap_or(Self::default().recent_calls);
        if !(1..=100_000).contains(&recent_calls) {
            return Err(invalid(format!("recent_calls is {recent_calls}: keep between 1 and 100000")));
        }
        Ok(Self { listen, recent_calls })
    }
}

/// An address, or a port alone on loopback: the console is for the people on this host unless an address says
/// otherwise.
fn address(text: &str) -> Result<SocketAddr, std::net::AddrParseError> {
    match text.trim().parse::<u16>() {
        Ok(port) => Ok(SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port))),
        Err(_) => text.parse(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(listen: &str) -> RawConsole {
        RawConsole { listen: Some(listen.into()), recent_calls: None }
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
        let none = RawConsole { listen: None, recent_calls: Some(0) };
        assert!(ConsoleSettings::from_raw(none, None, true).unwrap_err().to_string().contains("recent_calls"));
    }
}
