//! Who a client certificate says the caller is: its subject's common name and its DNS and URI alternative names
//! (a SPIFFE ID is a URI), and, through `[[tls.identities]]`, the tenant it acts for. A caller whose certificate
//! maps to a tenant cannot claim another one.

use rustls::pki_types::CertificateDer;
use x509_parser::extensions::GeneralName;

/// `[[tls.identities]]`: a certificate's name, and the tenant it acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityRule {
    /// Matched against the subject's common name and every DNS and URI alternative name.
    pub name: String,
    pub tenant: String,
}

/// The configured mapping.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identities {
    rules: Vec<IdentityRule>,
}

/// What a connection's client certificate says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerIdentity {
    /// The certificate's names: its common name, then its DNS and URI alternative names.
    pub names: Vec<String>,
    /// The tenant the first matching `[[tls.identities]]` rule gives; `None` when none matches.
    pub tenant: Option<String>,
}

impl Identities {
    pub fn new(rules: Vec<IdentityRule>) -> Self {
        Self { rules }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The identity of a peer's certificate chain (its first certificate); `None` without one, or for one that
    /// does not parse (the handshake has verified it already).
    pub fn of(&self, chain: &[CertificateDer<'_>]) -> Option<PeerIdentity> {
        let names = names(chain.first()?)?;
        let tenant = self.rules.iter().find(|rule| names.contains(&rule.name)).map(|rule| rule.tenant.clone());
        Some(PeerIdentity { names, tenant })
    }
}

fn names(cert: &CertificateDer<'_>) -> Option<Vec<String>> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let mut names: Vec<String> =
        parsed.subject().iter_common_name().filter_map(|cn| cn.as_str().ok()).map(str::to_owned).collect();
    if let Ok(Some(san)) = parsed.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                GeneralName::DNSName(dns) => names.push((*dns).to_owned()),
                GeneralName::URI(uri) => names.push((*uri).to_owned()),
                _ => {}
            }
        }
    }
    Some(names)
}

impl PeerIdentity {
    /// Whether the caller may act for `tenant`: yes unless its certificate maps to another.
    pub fn may_claim(&self, tenant: &str) -> bool {
        self.tenant.as_deref().is_none_or(|own| own == tenant)
    }
}
