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
    /// Binds `address`. A Unix socket gets `mode` (such as `0o660`) before its path exists (`bind_with_mode`); a
    /// socket file left by a gateway that is gone is replaced, one another process is listening on is not.
    pub async fn bind(address: &Address, mode: Option<u32>) -> io::Result<Self> {
        match address {
            Address::Tcp(addr) => TcpListener::bind(addr).await.map(Listener::Tcp),
            Address::Unix(path) => {
                clear_stale(path).await?;
                let listener = match mode {
                    Some(mode) => bind_with_mode(path, mode)?,
                    None => UnixListener::bind(path)?,
                };
                Ok(Listener::Unix(listener, SocketFile(path.clone())))
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

/// Binds a Unix socket at `path` that is never reachable with a wider mode than `mode`. Bound in place, the socket
/// would have the umask's mode until a chmod after it (with umask 000, anyone could connect in between), and the
/// umask cannot be set around the bind alone: it belongs to the whole, multi-threaded, process. So the socket is
/// bound inside a private directory (0700) beside `path`, given `mode` there, and then linked into place, which
/// fails rather than replace a file that appeared meanwhile.
fn bind_with_mode(path: &Path, mode: u32) -> io::Result<UnixListener> {
    let staging = Staging::beside(path)?;
    let listener = staging.bind(mode)?;
    std::fs::hard_link(staging.socket(), path).map_err(|e| match e.kind() {
        io::ErrorKind::AlreadyExists => {
            io::Error::new(io::ErrorKind::AddrInUse, format!("{} is in use", path.display()))
        }
        _ => e,
    })?;
    Ok(listener)
}

/// A private directory beside a socket's path, where it is bound and given its mode; removed, with the staged name
/// of the socket, when dropped (the socket lives on under its linked path).
struct Staging {
    dir: PathBuf,
}

impl Staging {
    /// A new directory of mode 0700 (never wider, whatever the umask) in `path`'s directory. Its name is short, as
    /// a socket's path is at most 107 bytes: `.tg` and 8 random hex digits.
    fn beside(path: &Path) -> io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        let parent = path.parent().ok_or_else(|| io::Error::other(format!("{} has no directory", path.display())))?;
        loop {
            let mut bytes = [0u8; 4];
            getrandom::fill(&mut bytes).expect("the OS random source is available");
            let dir = parent.join(format!(".tg{:08x}", u32::from_ne_bytes(bytes)));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    let staging = Staging { dir };
                    // A umask may have taken bits off 0o700 that the bind needs.
                    std::fs::set_permissions(&staging.dir, std::fs::Permissions::from_mode(0o700))?;
                    return Ok(staging);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("s")
    }

    /// The socket bound in the directory, with `mode`.
    fn bind(&self, mode: u32) -> io::Result<UnixListener> {
        let listener = UnixListener::bind(self.socket())?;
        std::fs::set_permissions(self.socket(), std::fs::Permissions::from_mode(mode))?;
        Ok(listener)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.socket());
        let _ = std::fs::remove_dir(&self.dir);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// The steps of `bind_with_mode`: the socket has its mode in a 0700 directory before its path exists, and only
    /// the linked path is left.
    #[tokio::test]
    async fn a_socket_has_its_mode_before_its_path_exists() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gw.sock");
        let staging = Staging::beside(&path).unwrap();
        assert_eq!(mode_of(&staging.dir), 0o700);
        let _listener = staging.bind(0o640).unwrap();
        assert_eq!(mode_of(&staging.socket()), 0o640);
        assert!(!path.exists(), "nothing at the path until the socket has its mode");
        drop(staging);

        let listener = Listener::bind(&Address::Unix(path.clone()), Some(0o600)).await.unwrap();
        assert_eq!(mode_of(&path), 0o600);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["gw.sock"], "the staging directory is gone");
        let stream = Stream::connect(&Address::Unix(path.clone())).await.expect("the linked path reaches the socket");
        let accepted = listener.accept().await.unwrap();
        drop((stream, accepted));
        // A file that appears at the path after the check for a stale one is never replaced.
        let err = bind_with_mode(&path, 0o600).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse, "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "the staging directory is gone");
    }
}
