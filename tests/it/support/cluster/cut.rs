//! A TCP proxy on loopback between one gateway and its Redis, so a test can cut that gateway off (the listener
//! closed and every open connection dropped) and join it again, while the rest of the fleet goes on. Each new
//! connection goes where `resolve` says then, as to a managed primary behind one address that fails over.

use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The proxy; stopped on drop.
pub struct Cut {
    pub addr: SocketAddr,
    resolve: Arc<dyn Fn() -> SocketAddr + Send + Sync>,
    serving: Option<JoinHandle<()>>,
}

impl Cut {
    pub async fn start(resolve: impl Fn() -> SocketAddr + Send + Sync + 'static) -> Self {
        let mut cut = Self { addr: crate::support::free_addr(), resolve: Arc::new(resolve), serving: None };
        cut.join().await;
        cut
    }

    /// The URL a single-primary gateway names to go through the proxy.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Closes the listener and drops every connection through it: the gateway's Redis is unreachable.
    pub fn cut(&mut self) {
        if let Some(serving) = self.serving.take() {
            serving.abort();
        }
    }

    /// Listens again on the same port.
    pub async fn join(&mut self) {
        assert!(self.serving.is_none(), "the proxy already serves");
        let listener = TcpListener::bind(self.addr).await.expect("the proxy's port is free again");
        let resolve = self.resolve.clone();
        self.serving = Some(tokio::spawn(async move {
            let mut pipes = tokio::task::JoinSet::new();
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else { continue };
                let resolve = resolve.clone();
                pipes.spawn(async move {
                    let Ok(to) = tokio::task::spawn_blocking(move || resolve()).await else { return };
                    if let Ok(mut outbound) = TcpStream::connect(to).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                // Finished pipes are reaped here; the rest are aborted with the set when the proxy is cut.
                while pipes.try_join_next().is_some() {}
            }
        }));
    }
}

impl Drop for Cut {
    fn drop(&mut self) {
        self.cut();
    }
}
