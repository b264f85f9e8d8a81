//! The gateway's sockets: a TCP port or a Unix domain socket, listened on and connected to alike. On one host a
//! Unix socket skips the TCP stack for the sidecar hop; its file's mode says who may connect.

use rustls::pki_types::ServerName;
use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

/// Where the gateway listens, or a tool server is reached: `host:port`, or `unix:/path/to.sock`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    Tcp(std::net::SocketAddr),
    Unix(PathBuf),
}

impl Address {
    /// `unix:/absolute/path` (also `unix:///absolute/path`, as gRPC spells it), else a socket address.
    pub fn parse(text: &str) -> Result<Self, String> {
        match unix_path(text) {
            Some(path) => Ok(Address::Unix(path)),
            None => text
                .parse()
                .map(Address::Tcp)
                .map_err(|e| format!("{text:?} is neither host:port (an IP address and port) nor unix:/path: {e}")),
        }
    }
}

impl Address {
    /// The TCP port, for a TCP address.
    pub fn port(&self) -> Option<u16> {
        match self {
            Address::Tcp(addr) => Some(addr.port()),
            Address::Unix(_) => None,
        }
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::Tcp(addr) => write!(f, "{addr}"),
            Address::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// The path of a `unix:` address: absolute, after `unix:` or `unix://`.
pub fn unix_path(text: &str) -> Option<PathBuf> {
    let rest = text.strip_prefix("unix:")?;
    let path = rest.strip_prefix("//").unwrap_or(rest);
    path.starts_with('/').then(|| PathBuf::from(path))
}

/// A bound listener.
#[derive(Debug)]
pub enum Listener {
    Tcp(TcpListener),
    /// The socket file is removed when the listener is dropped.
    Unix(UnixListener, SocketFile),
}

impl From<TcpListener> for Listener {
    fn from(listener: TcpListener) -> Self {
        Listener::Tcp(listener)
    }
}

impl Listener {
    /// Binds `address`. A Unix socket gets `mode` (such as `0o660`); a socket file left by a gateway that is gone
    /// is replaced, one another process is listening on is not.
    pub async fn bind(address: &Address, mode: Option<u32>) -> io::Result<Self> {
        match address {
            Address::Tcp(addr) => TcpListener::bind(addr).await.map(Listener::Tcp),
            Address::Unix(path) => {
                clear_stale(path).await?;
                let listener = UnixListener::bind(path)?;
                let file = SocketFile(path.clone());
                if let Some(mode) = mode {
                    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
                }
                Ok(Listener::Unix(listener, file))
            }
        }
    }

    /// The address it listens on (the port the OS chose, for `:0`).
    pub fn local(&self) -> io::Result<Address> {
        match self {
            Listener::Tcp(listener) => listener.local_addr().map(Address::Tcp),
            Listener::Unix(_, file) => Ok(Address::Unix(file.0.clone())),
        }
    }

    /// The next connection: TCP with no delay (Nagle and delayed ACKs would stall small answers by 40 ms).
    pub async fn accept(&self) -> io::Result<Stream> {
        match self {
            Listener::Tcp(listener) => {
                let (stream, _) = listener.accept().await?;
                stream.set_nodelay(true)?;
                Ok(Stream::Tcp(stream))
            }
            Listener::Unix(listener, _) => listener.accept().await.map(|(stream, _)| Stream::Unix(stream)),
        }
    }
}

/// A Unix socket's file, removed when its listener is dropped.
#[derive(Debug)]
pub struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Removes a socket file nothing listens on; refuses to touch one something does, or a file that is no socket.
async fn clear_stale(path: &Path) -> io::Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return Ok(()) };
    if !meta.file_type().is_socket() {
        let reason = format!("{} exists and is not a socket", path.display());
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, reason));
    }
    match UnixStream::connect(path).await {
        Ok(_) => Err(io::Error::new(io::ErrorKind::AddrInUse, format!("{} is in use", path.display()))),
        Err(_) => std::fs::remove_file(path),
    }
}

/// An accepted or opened connection.
#[derive(Debug)]
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// TLS this side opened, over a TCP or Unix connection.
    TlsClient(Box<tokio_rustls::client::TlsStream<Stream>>),
    /// TLS a client opened to this side.
    TlsServer(Box<tokio_rustls::server::TlsStream<Stream>>),
}

/// The same call on whichever stream it is.
macro_rules! each {
    ($stream:expr, $s:ident => $call:expr) => {
        match $stream {
            Stream::Tcp($s) => $call,
            Stream::Unix($s) => $call,
            Stream::TlsClient($s) => $call,
            Stream::TlsServer($s) => $call,
        }
    };
}

impl Stream {
    /// TLS over this connection, as a client of `server_name` (checked against its certificate, and sent as SNI).
    pub async fn tls(self, config: Arc<rustls::ClientConfig>, server_name: ServerName<'static>) -> io::Result<Self> {
        let tls = tokio_rustls::TlsConnector::from(config).connect(server_name, self).await?;
        Ok(Stream::TlsClient(Box::new(tls)))
    }

    /// TLS over this accepted connection, as the server.
    pub async fn accept_tls(self, acceptor: &tokio_rustls::TlsAcceptor) -> io::Result<Self> {
        Ok(Stream::TlsServer(Box::new(acceptor.accept(self).await?)))
    }

    /// The client's certificate chain, on a TLS connection it presented one on.
    pub fn peer_certificates(&self) -> Option<&[rustls::pki_types::CertificateDer<'static>]> {
        match self {
            Stream::TlsServer(tls) => tls.get_ref().1.peer_certificates(),
            _ => None,
        }
    }

    /// Connects to `address`: a TCP connection with no delay, or a Unix socket.
    pub async fn connect(address: &Address) -> io::Result<Self> {
        match address {
            Address::Tcp(addr) => {
                let stream = TcpStream::connect(addr).await?;
                stream.set_nodelay(true)?;
                Ok(Stream::Tcp(stream))
            }
            Address::Unix(path) => UnixStream::connect(path).await.map(Stream::Unix),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        each!(self.get_mut(), s => Pin::new(s).poll_read(cx, buf))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        each!(self.get_mut(), s => Pin::new(s).poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        each!(self.get_mut(), s => Pin::new(s).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        each!(self, s => s.is_write_vectored())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self.get_mut(), s => Pin::new(s).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self.get_mut(), s => Pin::new(s).poll_shutdown(cx))
    }
}
