//! TLS for every connection the gateway opens or accepts, on rustls (ring): the certificates, keys and CAs read
//! from PEM files, the client and server configurations made from them, reloaded when the files change
//! (`watch.rs`), the identity a client certificate gives (`identity.rs`), and errors a person can act on. It
//! knows no socket: `wire` and the HTTP clients use the configurations it makes.

mod client;
mod identity;
mod server;
mod watch;

pub use client::{ClientFiles, ClientPem, ClientTls};
pub use identity::{Identities, IdentityRule, PeerIdentity};
pub use server::{ServerFiles, ServerTls};
pub use watch::{Reloads, Watched};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{CertificateError, RootCertStore};
use std::path::Path;

/// Why TLS material could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {reason}")]
    File { path: String, reason: String },
    #[error("{0}")]
    Config(String),
}

fn file_error(path: &Path, reason: impl std::fmt::Display) -> TlsError {
    TlsError::File { path: path.display().to_string(), reason: reason.to_string() }
}

/// rustls needs a process-wide crypto provider before any configuration is built (reqwest panics otherwise, even
/// for plain http URLs); ring keeps the build free of C toolchains beyond cc. Idempotent.
pub fn install_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Every certificate of a PEM file, in order (a leaf, then its intermediates).
pub fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_error(path, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| file_error(path, e))?;
    if certs.is_empty() {
        return Err(file_error(path, "holds no PEM certificate"));
    }
    Ok(certs)
}

/// The private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
pub fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| file_error(path, format!("holds no usable private key: {e}")))
}

/// The certificates of a CA bundle as trust roots.
pub fn roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(path)? {
        roots.add(cert).map_err(|e| file_error(path, format!("a CA certificate is unusable: {e}")))?;
    }
    Ok(roots)
}

/// The system's trust roots (`/etc/ssl/certs` and the like); those it cannot read are skipped.
pub fn system_roots() -> RootCertStore {
    let mut roots = RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        tracing::warn!("no system CA certificate found: TLS to public servers fails unless [tls.client] ca is set");
    }
    roots
}

/// The TLS failure of an I/O error, as a person can act on it: which certificate check failed, or what the peer
/// refused. `None` for an error that is not TLS's.
pub fn tls_failure(error: &std::io::Error) -> Option<String> {
    rustls_in(error).map(describe_tls).or_else(|| failure_in_text(&error.to_string()))
}

/// A TLS failure a client kept only the text of: an alert an HTTP/2 connection reported after the handshake
/// (under TLS 1.3 a server refuses a client certificate, or the lack of one, after the client has finished its
/// handshake), or a certificate check as Redis's client reports it.
fn failure_in_text(text: &str) -> Option<String> {
    if let Some(check) = text.split("invalid peer certificate: ").nth(1) {
        let name = check.split(|c: char| !c.is_ascii_alphanumeric()).next().unwrap_or_default();
        let error = match name {
            "UnknownIssuer" => CertificateError::UnknownIssuer,
            "Expired" => CertificateError::Expired,
            "NotValidYet" => CertificateError::NotValidYet,
            "NotValidForName" => CertificateError::NotValidForName,
            _ => return Some(format!("its certificate is refused: {}", check.trim())),
        };
        return Some(describe_tls(&rustls::Error::InvalidCertificate(error)));
    }
    let alert = text.split("received fatal alert: ").nth(1)?.trim();
    let described = match alert {
        "CertificateRequired" => {
            describe_tls(&rustls::Error::AlertReceived(rustls::AlertDescription::CertificateRequired))
        }
        "UnknownCA" | "BadCertificate" => {
            describe_tls(&rustls::Error::AlertReceived(rustls::AlertDescription::UnknownCA))
        }
        "CertificateExpired" => {
            describe_tls(&rustls::Error::AlertReceived(rustls::AlertDescription::CertificateExpired))
        }
        other => format!("it ended TLS with the alert {other}"),
    };
    Some(described)
}

/// The TLS failure somewhere in an error's chain of causes (as an HTTP client reports it), in words.
pub fn find_tls_failure(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cause = Some(error);
    while let Some(err) = cause {
        if let Some(tls) = rustls_in(err) {
            return Some(describe_tls(tls));
        }
        // HTTP/2 keeps only the text of an alert that came after the handshake.
        if let Some(alert) = failure_in_text(&err.to_string()) {
            return Some(alert);
        }
        cause = err.source();
    }
    None
}

/// The rustls error an error is, or an I/O error wraps (I/O errors nest: an HTTP connector wraps TLS's own).
fn rustls_in<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = error.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let inner = error.downcast_ref::<std::io::Error>()?.get_ref()?;
    rustls_in(inner)
}

/// A rustls error in words.
pub fn describe_tls(error: &rustls::Error) -> String {
    use rustls::AlertDescription as Alert;
    match error {
        rustls::Error::InvalidCertificate(cert) => match cert {
            CertificateError::UnknownIssuer => {
                "its certificate is not signed by a trusted CA (check [tls.client] ca, or the server's chain)".into()
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => "its certificate has expired".into(),
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "its certificate is not valid yet (check the clocks)".into()
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                "its certificate is not valid for the name connected to (a name mismatch)".into()
            }
            other => format!("its certificate is refused: {other:?}"),
        },
        rustls::Error::AlertReceived(Alert::CertificateRequired) => {
            "it requires a client certificate, and none was sent (set [tls.client] cert and key)".into()
        }
        rustls::Error::AlertReceived(Alert::UnknownCA | Alert::BadCertificate) => {
            "it refused our client certificate (not signed by a CA it trusts)".into()
        }
        rustls::Error::AlertReceived(Alert::CertificateExpired) => {
            "it refused our client certificate as expired".into()
        }
        rustls::Error::NoCertificatesPresented => "no client certificate was presented".into(),
        other => format!("TLS failed: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_kept_only_as_text_are_named_alike() {
        let read = |text: &str| failure_in_text(text).unwrap_or_default();
        assert!(read("Redis: invalid peer certificate: UnknownIssuer").contains("not signed by a trusted CA"));
        assert!(read("invalid peer certificate: NotValidForName").contains("name mismatch"));
        assert!(read("invalid peer certificate: Other(x)").contains("refused: Other(x)"));
        assert!(read("h2: received fatal alert: CertificateRequired").contains("requires a client certificate"));
        assert_eq!(failure_in_text("connection refused"), None);
    }
}
