//! Outbound TLS (`[tls.client]`): the trust roots (a CA bundle, else the system's) and an optional client
//! certificate for mTLS, made into one rustls configuration per ALPN the gateway speaks (`h2` for gRPC tool servers
//! and the collector, `h2` or `http/1.1` for HTTP and MCP servers), reloaded when the files change.

use super::{TlsError, Watched, certificates, private_key, roots, system_roots};
use rustls::ClientConfig;
use std::path::PathBuf;
use std::sync::Arc;

/// `[tls.client]` as configured: all optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientFiles {
    /// Trust only these CAs (PEM); `None` trusts the system's.
    pub ca: Option<PathBuf>,
    /// A client certificate chain and its key (PEM), presented to servers that ask for one.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

impl ClientFiles {
    fn files(&self) -> Vec<PathBuf> {
        [&self.ca, &self.cert, &self.key].into_iter().flatten().cloned().collect()
    }
}

/// The configurations, made together from one set of files.
pub struct ClientConfigs {
    /// ALPN `h2`: gRPC.
    pub h2: Arc<ClientConfig>,
    /// ALPN `h2` then `http/1.1`: HTTP and MCP servers.
    pub http: Arc<ClientConfig>,
}

/// Outbound TLS for the whole gateway.
pub struct ClientTls {
    configs: Arc<Watched<ClientConfigs>>,
    files: ClientFiles,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls").field("files", &self.files).finish_non_exhaustive()
    }
}

impl ClientTls {
    /// Loads the files now (an error stops the start) and keeps them to reload.
    pub fn load(files: ClientFiles) -> Result<Self, TlsError> {
        if files.cert.is_some() != files.key.is_some() {
            return Err(TlsError::Config("[tls.client] cert and key go together".into()));
        }
        crate::tls::install_provider();
        let made = files.clone();
        let configs = Watched::load("[tls.client]", files.files(), move || make(&made))?;
        Ok(Self { configs, files })
    }

    /// The configuration for gRPC (ALPN `h2`), as of now.
    pub fn h2(&self) -> Arc<ClientConfig> {
        Arc::clone(&self.configs.current().h2)
    }

    /// The configuration for HTTP (ALPN `h2`, `http/1.1`), as of now.
    pub fn http(&self) -> Arc<ClientConfig> {
        Arc::clone(&self.configs.current().http)
    }

    /// How many times the files were loaded again: what was built from an older generation is stale.
    pub fn generation(&self) -> u64 {
        self.configs.generation()
    }

    /// What `Reloads` watches.
    pub fn watched(&self) -> &Arc<Watched<ClientConfigs>> {
        &self.configs
    }

    /// Whether a client certificate is configured.
    pub fn has_identity(&self) -> bool {
        self.files.cert.is_some()
    }

    /// The files' PEM text as of now, for a client that makes its own TLS configuration from it (Redis's).
    pub fn pem(&self) -> Result<ClientPem, TlsError> {
        let read = |path: &PathBuf| std::fs::read(path).map_err(|e| super::file_error(path, e));
        let identity = match (&self.files.cert, &self.files.key) {
            (Some(cert), Some(key)) => Some((read(cert)?, read(key)?)),
            _ => None,
        };
        Ok(ClientPem { ca: self.files.ca.as_ref().map(read).transpose()?, identity })
    }
}

/// `[tls.client]`'s files as PEM text.
pub struct ClientPem {
    /// The CA bundle; `None` trusts the system's.
    pub ca: Option<Vec<u8>>,
    /// The client certificate chain and its key.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

fn make(files: &ClientFiles) -> Result<ClientConfigs, TlsError> {
    let roots = match &files.ca {
        Some(ca) => roots(ca)?,
        None => system_roots(),
    };
    let builder = ClientConfig::builder().with_root_certificates(roots);
    let config = match (&files.cert, &files.key) {
        (Some(cert), Some(key)) => builder
            .with_client_auth_cert(certificates(cert)?, private_key(key)?)
            .map_err(|e| TlsError::Config(format!("[tls.client] cert and key do not match: {e}")))?,
        _ => builder.with_no_client_auth(),
    };
    let alpn = |protocols: &[&[u8]]| {
        let mut config = config.clone();
        config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    };
    Ok(ClientConfigs { h2: alpn(&[b"h2"]), http: alpn(&[b"h2", b"http/1.1"]) })
}
