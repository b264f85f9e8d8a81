//! The listener of the HTTP side doors (the MCP front door and the console): TCP with no delay and, with `[tls]`,
//! each connection handed to axum only once its TLS handshake is done (in a task of its own, so a slow client
//! holds up no other), with what its client certificate says as the connection's `Peer`.

use crate::tls::PeerIdentity;
use crate::wire::listen::{Inbound, handshake};
use crate::wire::socket::Stream;
use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// Pause after a failed accept (out of file descriptors, say), so the loop does not spin on it.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// Connections whose handshake is done, waiting for axum to take them.
const READY: usize = 64;

/// Who is on the other end: the client's address, and what its certificate says over mTLS. Requests carry it as
/// `ConnectInfo<Peer>`.
#[derive(Debug, Clone, Default)]
pub struct Peer {
    pub identity: Option<Arc<PeerIdentity>>,
    pub addr: Option<SocketAddr>,
}

impl Connected<IncomingStream<'_, SideListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, SideListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// A side door's port that could not be bound or made ready, and why.
#[derive(Debug)]
pub struct BindError {
    pub addr: SocketAddr,
    pub reason: String,
}

/// Binds a side door's port.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, BindError> {
    TcpListener::bind(addr).await.map_err(|e| BindError { addr, reason: e.to_string() })
}

/// A side door's listener, plain or TLS.
pub struct SideListener {
    accepted: Accepted,
}

enum Accepted {
    Plain(TcpListener),
    /// Fed by the task that accepts and runs handshakes; it stops when this is dropped.
    Tls(mpsc::Receiver<(Stream, Peer)>),
}

impl SideListener {
    /// Serves `listener`, over TLS with `inbound`.
    pub fn new(listener: TcpListener, inbound: Option<Inbound>) -> Self {
        let accepted = match inbound {
            None => Accepted::Plain(listener),
            Some(inbound) => {
                let (ready, accepted) = mpsc::channel(READY);
                tokio::spawn(handshakes(listener, inbound, ready));
                Accepted::Tls(accepted)
            }
        };
        Self { accepted }
    }

    /// `https` or `http`, for the address logged.
    pub fn scheme(&self) -> &'static str {
        match self.accepted {
            Accepted::Plain(_) => "http",
            Accepted::Tls(_) => "https",
        }
    }
}

impl axum::serve::Listener for SideListener {
    type Io = Stream;
    type Addr = Peer;

    async fn accept(&mut self) -> (Stream, Peer) {
        match &mut self.accepted {
            Accepted::Plain(listener) => loop {
                match TcpListener::accept(listener).await {
                    Ok((tcp, addr)) => {
                        // Small answers leave at once: with Nagle's algorithm, each would wait for a delayed ACK.
                        let _ = tcp.set_nodelay(true);
                        return (Stream::Tcp(tcp), Peer { identity: None, addr: Some(addr) });
                    }
                    Err(err) => backoff(&err).await,
                }
            },
            // The accepting task ends only once this receiver is dropped (or if it panicked: then nothing more
            // is accepted, as a closed listener would).
            Accepted::Tls(ready) => match ready.recv().await {
                Some(accepted) => accepted,
                None => std::future::pending().await,
            },
        }
    }

    fn local_addr(&self) -> io::Result<Peer> {
        Ok(Peer::default())
    }
}

/// Accepts connections and runs each one's handshake in a task of its own, until the listener is dropped.
async fn handshakes(listener: TcpListener, inbound: Inbound, ready: mpsc::Sender<(Stream, Peer)>) {
    loop {
        tokio::select! {
            () = ready.closed() => return,
            accepted = TcpListener::accept(&listener) => match accepted {
                Ok((tcp, addr)) => {
                    let _ = tcp.set_nodelay(true);
                    let (inbound, ready) = (inbound.clone(), ready.clone());
                    tokio::spawn(async move {
                        let acceptor = inbound.tls.http();
                        if let Some((io, identity)) = handshake(Stream::Tcp(tcp), &acceptor, &inbound.identities).await {
                            let _ = ready.send((io, Peer { identity, addr: Some(addr) })).await;
                        }
                    });
                }
                Err(err) => backoff(&err).await,
            },
        }
    }
}

async fn backoff(err: &io::Error) {
    tracing::warn!(error = %err, "accepting a connection failed");
    tokio::time::sleep(ACCEPT_BACKOFF).await;
}
