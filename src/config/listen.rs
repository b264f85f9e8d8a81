//! `listen` and `listen_mode`: the gRPC listener's address (`host:port` or `unix:/path/to.sock`) and, for a Unix
//! socket, its file's mode.

use super::{ConfigError, DEFAULT_LISTEN};
use crate::wire::socket::Address;

/// The address (`--listen` or the file's, else the default) and the socket file's mode, checked.
pub fn from_raw(listen: Option<String>, mode: Option<u32>) -> Result<(Address, Option<u32>), ConfigError> {
    let text = listen.unwrap_or_else(|| DEFAULT_LISTEN.into());
    let address = Address::parse(&text).map_err(|e| {
        ConfigError::Invalid(format!("listen: {e}; give an address like 127.0.0.1:50051 or unix:/run/toolgate.sock"))
    })?;
    match (mode, &address) {
        (Some(mode), _) if mode > 0o777 => {
            Err(ConfigError::Invalid(format!("listen_mode {mode:o} is not a file mode like 0o660")))
        }
        (Some(_), Address::Tcp(_)) => {
            Err(ConfigError::Invalid("listen_mode applies to a unix: listen address only".into()))
        }
        (mode, _) => Ok((address, mode)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_or_a_unix_socket_with_its_mode() {
        let unix = from_raw(Some("unix:/run/toolgate.sock".into()), Some(0o660)).unwrap();
        assert_eq!(unix, (Address::Unix("/run/toolgate.sock".into()), Some(0o660)));
        assert_eq!(from_raw(Some("unix:///run/t.sock".into()), None).unwrap().0, Address::Unix("/run/t.sock".into()));
        assert_eq!(from_raw(None, None).unwrap().0.port(), Some(50051));
        for (listen, mode, says) in [
            ("unix:relative.sock", None, "neither host:port"),
            ("localhost:1", None, "neither host:port"),
            ("127.0.0.1:1", Some(0o600), "unix: listen address only"),
            ("unix:/x.sock", Some(0o1777), "not a file mode"),
        ] {
            let err = from_raw(Some(listen.into()), mode).unwrap_err().to_string();
            assert!(err.contains(says), "{listen}: {err}");
        }
    }
}
