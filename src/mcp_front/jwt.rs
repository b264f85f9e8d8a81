//! The front door as an OAuth 2.1 resource server (the MCP authorization spec): a bearer JWT is checked against
//! the issuer's JWKS for its signature, `iss`, `aud` (the front door's canonical URL) and `exp`, and its claims say
//! who is calling. A JWKS given by URL is fetched at start and again every `refresh_s`; a file is read once. The
//! RFC 9728 metadata document tells a host where to get a token.

use crate::config::{JwksSource, JwtSettings, Principal};
use arc_swap::ArcSwap;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{DecodingKey, Validation, decode, decode_header};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Weak};

/// How long `exp` may be past, for clocks that disagree a little.
const LEEWAY_S: u64 = 30;

pub struct JwtVerifier {
    settings: JwtSettings,
    keys: ArcSwap<JwkSet>,
}

impl JwtVerifier {
    /// Reads the keys (from a URL in the background, so the gateway starts while the issuer is away) and, for a
    /// URL, keeps them fresh. A file that cannot be read fails the start.
    pub async fn start(settings: JwtSettings) -> Result<Arc<Self>, String> {
        let empty = JwkSet { keys: Vec::new() };
        let verifier = Arc::new(Self { settings, keys: ArcSwap::from_pointee(empty) });
        match &verifier.settings.jwks {
            JwksSource::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
                let keys = serde_json::from_str(&text).map_err(|e| format!("{} is no JWKS: {e}", path.display()))?;
                verifier.keys.store(Arc::new(keys));
            }
            JwksSource::Url(url) => {
                tokio::spawn(refresh(Arc::downgrade(&verifier), url.clone(), verifier.settings.refresh));
            }
        }
        Ok(verifier)
    }

    /// The caller a valid token speaks for, or why it is refused.
    pub fn verify(&self, token: &str) -> Result<Principal, &'static str> {
        let header = decode_header(token).map_err(|_| "the bearer token is not a JWT")?;
        let keys = self.keys.load();
        let jwk = match &header.kid {
            Some(kid) => keys.find(kid),
            None if keys.keys.len() == 1 => keys.keys.first(),
            None => None,
        }
        .ok_or("the JWT is signed by a key the issuer does not list")?;
        let key = DecodingKey::from_jwk(jwk).map_err(|_| "the issuer's key cannot be used")?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = LEEWAY_S;
        let claims = decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|_| "the JWT is not valid here: signature, issuer, audience or expiry")?
            .claims;
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        let user_id = text(&self.settings.user_claim).ok_or("the JWT names no user")?;
        let tenant = self.settings.tenant_claim.as_deref().and_then(text).unwrap_or_default();
        Ok(Principal { tenant, user_id, ..Principal::default() })
    }

    /// Where a host finds the metadata document: the `resource_metadata` of a 401's challenge.
    pub fn metadata_url(&self) -> String {
        match url::Url::parse(&self.settings.audience) {
            Ok(audience) => format!("{}{}", audience.origin().ascii_serialization(), METADATA_PATH),
            Err(_) => METADATA_PATH.to_owned(),
        }
    }

    /// The RFC 9728 protected resource metadata.
    pub fn metadata(&self) -> Value {
        json!({
            "resource": self.settings.audience,
            "authorization_servers": [self.settings.issuer],
            "bearer_methods_supported": ["header"],
        })
    }
}

/// Where the metadata document is served (RFC 9728, section 3).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Fetches the JWKS now and every `every`, until the verifier is gone. A failed fetch keeps the keys it had.
async fn refresh(verifier: Weak<JwtVerifier>, url: String, every: std::time::Duration) {
    let client = reqwest::Client::builder().timeout(std::time::Duration::from_secs(10)).build();
    let Ok(client) = client else { return tracing::error!("no HTTP client for the JWKS") };
    loop {
        let fetched = async { client.get(&url).send().await?.error_for_status()?.json::<JwkSet>().await };
        match fetched.await {
            Ok(keys) => match verifier.upgrade() {
                Some(verifier) => verifier.keys.store(Arc::new(keys)),
                None => return,
            },
            Err(err) => tracing::warn!(%url, error = %err, "fetching the issuer's JWKS failed; the keys held are kept"),
        }
        tokio::time::sleep(every).await;
        if verifier.strong_count() == 0 {
            return;
        }
    }
}
