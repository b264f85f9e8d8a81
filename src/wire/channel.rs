//! A tonic channel to a gateway or collector by its address: `http://host:port`, `https://host:port` (TLS with
//! ALPN `h2` and SNI, by a `ClientTls`), or `unix:/path/to.sock`. The TLS configuration is read at each new
//! connection, so one made after the files rotate uses the new ones.

use super::socket::{Address, Stream, unix_path};
use crate::tls::ClientTls;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tonic::transport::{Channel, Endpoint};

/// How a connection is opened.
#[derive(Clone)]
enum Dial {
    Unix(Address),
    Tcp { host: String, port: u16, tls: Option<(ServerName<'static>, Arc<ClientTls>)> },
}

impl Dial {
    async fn open(self) -> std::io::Result<TokioIo<Stream>> {
        let stream = match self {
            Dial::Unix(address) => Stream::connect(&address).await?,
            Dial::Tcp { host, port, tls } => {
                let tcp = TcpStream::connect((host.as_str(), port)).await?;
                tcp.set_nodelay(true)?;
                match tls {
                    Some((name, tls)) => Stream::Tcp(tcp).tls(tls.h2(), name).await?,
                    None => Stream::Tcp(tcp),
                }
            }
        };
        Ok(TokioIo::new(stream))
    }
}

/// The endpoint (its URI is what requests carry) and how to reach it.
fn route(address: &str, timeout: Option<Duration>, tls: &Arc<ClientTls>) -> Result<(Endpoint, Dial), String> {
    let bounded = |endpoint: Endpoint| match timeout {
        Some(timeout) => endpoint.timeout(timeout),
        None => endpoint,
    };
    if let Some(path) = unix_path(address) {
        // The authority is a placeholder: a Unix socket has no host, and HTTP/2 servers refuse a path there.
        return Ok((bounded(Endpoint::from_static("http://localhost")), Dial::Unix(Address::Unix(path))));
    }
    let parsed = url::Url::parse(address).map_err(|e| format!("{address:?}: {e}"))?;
    let endpoint = bounded(Endpoint::from_shared(address.to_owned()).map_err(|e| format!("{address:?}: {e}"))?);
    // `host_str` keeps an IPv6 address's brackets, which neither a socket address nor a server name has.
    let host = parsed.host_str().ok_or(format!("{address:?} has no host"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = parsed.port_or_known_default().ok_or(format!("{address:?} has no port"))?;
    let tls = match parsed.scheme() {
        "http" => None,
        "https" => {
            let name = ServerName::try_from(host.clone()).map_err(|e| format!("{host:?} is no server name: {e}"))?;
            Some((name, Arc::clone(tls)))
        }
        other => return Err(format!("{address:?}: the scheme {other:?} is none of http, https and unix")),
    };
    Ok((endpoint, Dial::Tcp { host, port, tls }))
}

/// A channel to `address` that connects on its first request, each request bounded by `timeout` when given.
pub fn lazy(address: &str, timeout: Option<Duration>, tls: &Arc<ClientTls>) -> Result<Channel, String> {
    let (endpoint, dial) = route(address, timeout, tls)?;
    Ok(endpoint.connect_with_connector_lazy(tower::service_fn(move |_: http::Uri| dial.clone().open())))
}

/// A channel to `address`, connected now: a failure names its cause (a TLS one in words).
pub async fn connect(address: &str, tls: &Arc<ClientTls>) -> Result<Channel, String> {
    let (endpoint, dial) = route(address, None, tls)?;
    let connector = tower::service_fn(move |_: http::Uri| dial.clone().open());
    endpoint.connect_with_connector(connector).await.map_err(|e| match crate::tls::find_tls_failure(&e) {
        Some(tls) => format!("TLS: {tls}"),
        None => causes(&e),
    })
}

/// An error and its sources, each said once: a source that repeats the error it is under (an I/O error wrapping
/// an I/O error, say) is left out.
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut said: Vec<String> = Vec::new();
    for cause in std::iter::successors(Some(error), |e| e.source()) {
        let text = cause.to_string();
        if !said.last().is_some_and(|last| last.contains(&text)) {
            said.push(text);
        }
    }
    said.join(": ")
}

#[cfg(test)]
mod tests {
    use super::causes;

    #[test]
    fn a_cause_that_repeats_the_error_above_it_is_said_once() {
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused (os error 111)");
        let wrapped = std::io::Error::other(refused);
        assert_eq!(causes(&wrapped), "Connection refused (os error 111)");
        let parse = "x".parse::<u8>().unwrap_err();
        let outer = std::io::Error::new(std::io::ErrorKind::InvalidData, parse);
        assert_eq!(causes(&outer), "invalid digit found in string");
    }
}
