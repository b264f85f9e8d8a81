//! Inbound TLS (`[tls]`): the gateway's certificate and key, and, with `client_ca`, client certificates required
//! and checked against it (mTLS). One configuration per ALPN a listener speaks (`h2` for the gRPC listener, `h2`
//! or `http/1.1` for the MCP front door and the console), reloaded when the files change.

use super::{TlsError, Watched, certificates, private_key, roots};
use rustls::ServerConfig;
use rustls::server::WebPkiClientVerifier;
use std::path::PathBuf;
use std::sync::Arc;

/// `[tls]` as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Client certificates must be signed by one of these CAs; `None` asks for none.
    pub client_ca: Option<PathBuf>,
}

impl ServerFiles {
    fn files(&self) -> Vec<PathBuf> {
        [Some(&self.cert), Some(&self.key), self.client_ca.as_ref()].into_iter().flatten().cloned().collect()
    }
}

/// The configurations, made together from one set of files.
pub struct ServerConfigs {
    pub h2: Arc<ServerConfig>,
    pub http: Arc<ServerConfig>,
}

/// Inbound TLS for the gateway's listeners.
pub struct ServerTls {
    configs: Arc<Watched<ServerConfigs>>,
    files: ServerFiles,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls").field("files", &self.files).finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Loads the files now (an error stops the start) and keeps them to reload.
    pub fn load(files: ServerFiles) -> Result<Self, TlsError> {
        crate::tls::install_provider();
        let made = files.clone();
        let configs = Watched::load("[tls]", files.files(), move || make(&made))?;
        Ok(Self { configs, files })
    }

    /// A TLS acceptor for gRPC (ALPN `h2`), with the files as of now.
    pub fn h2(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(Arc::clone(&self.configs.current().h2))
    }

    /// A TLS acceptor for HTTP (ALPN `h2`, `http/1.1`), with the files as of now.
    pub fn http(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(Arc::clone(&self.configs.current().http))
    }

    pub fn watched(&self) -> &Arc<Watched<ServerConfigs>> {
        &self.configs
    }

    /// Whether clients must present a certificate.
    pub fn requires_client_certificates(&self) -> bool {
        self.files.client_ca.is_some()
    }
}

fn make(files: &ServerFiles) -> Result<ServerConfigs, TlsError> {
    let builder = match &files.client_ca {
        Some(ca) => {
            let verifier = WebPkiClientVerifier::builder(Arc::new(roots(ca)?))
                .build()
                .map_err(|e| TlsError::Config(format!("[tls] client_ca: {e}")))?;
            ServerConfig::builder().with_client_cert_verifier(verifier)
        }
        None => ServerConfig::builder().with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(certificates(&files.cert)?, private_key(&files.key)?)
        .map_err(|e| TlsError::Config(format!("[tls] cert and key do not match: {e}")))?;
    let alpn = |protocols: &[&[u8]]| {
        let mut config = config.clone();
        config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    };
    Ok(ServerConfigs { h2: alpn(&[b"h2"]), http: alpn(&[b"h2", b"http/1.1"]) })
}
