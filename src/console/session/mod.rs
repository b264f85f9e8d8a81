//! Who is logged in to the console: sessions behind an HttpOnly, SameSite=Strict cookie, each with the
//! reviewer's name, whether the admin token opened it, and the CSRF token its forms carry. Each role's sessions are
//! bounded apart, so logins with the review token never end an admin's session. A single gateway keeps them in
//! its memory (`local.rs`); in cluster mode they live in Redis (`shared.rs`), so that any gateway of a fleet
//! answers a logged-in reviewer, a restart logs no one out, and a logout ends the session on every gateway.

mod local;
mod shared;

use crate::cluster::{ClusterError, Redis};
use crate::config::Tokens;
use hmac::{Hmac, KeyInit, Mac};
use local::LocalSessions;
use sha2::Sha256;
use shared::SharedSessions;
use std::net::IpAddr;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// The cookie's name.
pub const COOKIE: &str = "toolgate_console";
/// The cookie the login form's CSRF token is also in: a login posted from a page the console did not serve (login
/// CSRF, which would log a reviewer in under another's session) lacks it.
pub const LOGIN_COOKIE: &str = "toolgate_login";
/// How long a login form may be filled in.
const LOGIN_FORM_LIFETIME: Duration = Duration::from_secs(60 * 60);
/// A session ends this long after login.
const LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// Sessions of one role (review, admin) kept at most; past it, the oldest of the client holding the most ends.
const MAX_SESSIONS: usize = 1_024;

/// One logged-in reviewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The name decisions are recorded under.
    pub name: String,
    /// Logged in with the admin token (or to a console no token closes): the tools page is open.
    pub admin: bool,
    /// Every form of this session carries it; a POST without it is refused.
    pub csrf: String,
    /// Where it logged in from (`throttle::client`).
    client: IpAddr,
}

/// What a login gave: the session's id for the cookie, and the session.
pub struct Login {
    pub id: String,
    pub session: Session,
}

/// The sessions of one console, and the tokens that open it.
pub struct Sessions {
    review: Option<String>,
    admin: Option<String>,
    store: Store,
}

/// Where the sessions are kept.
enum Store {
    Local(LocalSessions),
    Shared(SharedSessions),
}

impl Sessions {
    /// Sessions in this process's memory: a restart ends them all.
    pub fn local(tokens: &Tokens) -> Self {
        Self {
            review: tokens.review.clone(),
            admin: tokens.admin.clone(),
            store: Store::Local(LocalSessions::default()),
        }
    }

    /// Sessions in the cluster's Redis, which every gateway of the fleet reads.
    pub fn shared(redis: Redis, tokens: &Tokens) -> Self {
        let store = Store::Shared(SharedSessions::new(redis));
        Self { review: tokens.review.clone(), admin: tokens.admin.clone(), store }
    }

    /// Whether a token is needed to log in (else the console is open, on loopback).
    pub fn closed(&self) -> bool {
        self.review.is_some() || self.admin.is_some()
    }

    /// Logs `name` in with `token`: the review token opens the reviews, the admin token everything. Compared in
    /// constant time, each candidate, so timing tells nothing of a guess. `Ok(None)`: the token opens nothing;
    /// an error: Redis did not record the session, and no one is logged in.
    pub async fn login(&self, token: &str, name: &str, client: IpAddr) -> Result<Option<Login>, ClusterError> {
        let matches = |expected: &Option<String>| {
            expected.as_deref().is_some_and(|e| bool::from(token.as_bytes().ct_eq(e.as_bytes())))
        };
        let (review, admin) = (matches(&self.review), matches(&self.admin));
        let admin = admin || !self.closed();
        if !(review || admin) {
            return Ok(None);
        }
        let session = Session { name: name.to_owned(), admin, csrf: random_token(), client };
        let id = random_token();
        match &self.store {
            Store::Local(local) => local.insert(&id, session.clone()),
            Store::Shared(shared) => {
                let opened_by = self.opened_by(admin, &id).expect("the role's token just opened it");
                shared.insert(&id, &session, opened_by).await?;
            }
        }
        Ok(Some(Login { id, session }))
    }

    /// The session a cookie header names, if it is live (and, in Redis, opened by a token of its role this
    /// gateway holds). An error: Redis did not answer, and nobody is let in.
    pub async fn find(&self, cookies: &str) -> Result<Option<Session>, ClusterError> {
        let Some(id) = cookie_value(cookies, COOKIE) else { return Ok(None) };
        match &self.store {
            Store::Local(local) => Ok(local.find(id)),
            Store::Shared(shared) => shared.find(id, |admin| self.opened_by(admin, id)).await,
        }
    }

    /// Ends `session`, which the cookie header names: on every gateway, in cluster mode.
    pub async fn logout(&self, cookies: &str, session: &Session) -> Result<(), ClusterError> {
        let Some(id) = cookie_value(cookies, COOKIE) else { return Ok(()) };
        match &self.store {
            Store::Local(local) => {
                local.remove(id);
                Ok(())
            }
            Store::Shared(shared) => shared.remove(id, session).await,
        }
    }

    /// What a session of this role with this id records of the token that opened it: HMAC-SHA256 of the id, keyed
    /// with the role's token as this gateway holds it (an open console's sessions under a key of their own).
    /// `None` when this gateway has no token for the role: no session of it is live here.
    fn opened_by(&self, admin: bool, id: &str) -> Option<String> {
        let (label, key) = match (admin, self.closed()) {
            (true, false) => ("open", ""),
            (true, true) => ("admin", self.admin.as_deref()?),
            (false, _) => ("review", self.review.as_deref()?),
        };
        let mut mac =
            <Hmac<Sha256> as KeyInit>::new_from_slice(key.as_bytes()).expect("HMAC takes a key of any length");
        mac.update(format!("toolgate console session\0{label}\0{id}").as_bytes());
        Some(hex(&mac.finalize().into_bytes()))
    }
}

/// The `Set-Cookie` value of a session: HttpOnly (no script reads it), SameSite=Strict (no other site sends it),
/// and, on a console served over TLS, Secure (never sent in clear).
pub fn set_cookie(id: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}", LIFETIME.as_secs())
}

/// The `Set-Cookie` value that ends it.
pub fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
}

/// A new login form's CSRF token and the `Set-Cookie` value that holds it too (HttpOnly, SameSite=Strict, for
/// `/login` only).
pub fn login_form_token(secure: bool) -> (String, String) {
    let token = random_token();
    let secure = if secure { "; Secure" } else { "" };
    let cookie = format!(
        "{LOGIN_COOKIE}={token}; Path=/login; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        LOGIN_FORM_LIFETIME.as_secs()
    );
    (token, cookie)
}

/// Whether a posted login form's CSRF token is the one its cookie holds (compared in constant time).
pub fn login_form_matches(cookies: &str, posted: &str) -> bool {
    let held = cookie_value(cookies, LOGIN_COOKIE).unwrap_or_default();
    !held.is_empty() && bool::from(held.as_bytes().ct_eq(posted.as_bytes()))
}

/// One cookie's value from a `Cookie` header (`a=1; b=2`).
fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').map(str::trim).find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

/// 32 random bytes from the OS, hex-encoded.
fn random_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the OS random source is available");
    hex(&bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    pub(super) fn tokens(review: Option<&str>, admin: Option<&str>) -> Tokens {
        Tokens { review: review.map(Into::into), admin: admin.map(Into::into), data: None }
    }

    #[tokio::test]
    async fn the_review_token_opens_reviews_and_the_admin_token_everything() {
        let sessions = Sessions::local(&tokens(Some("r"), Some("a")));
        assert!(sessions.login("wrong", "eve", HERE).await.unwrap().is_none());
        assert!(sessions.login("", "eve", HERE).await.unwrap().is_none());
        let reviewer = sessions.login("r", "ana", HERE).await.unwrap().unwrap();
        assert!(!reviewer.session.admin);
        let admin = sessions.login("a", "bo", HERE).await.unwrap().unwrap();
        assert!(admin.session.admin);
        assert_ne!(reviewer.id, admin.id);
        assert_ne!(reviewer.session.csrf, admin.session.csrf);
        let header = format!("other=1; {COOKIE}={}", reviewer.id);
        let found = sessions.find(&header).await.unwrap();
        assert_eq!(found.as_ref().map(|s| s.name.as_str()), Some("ana"));
        sessions.logout(&header, &found.unwrap()).await.unwrap();
        assert!(sessions.find(&header).await.unwrap().is_none());
        assert!(sessions.find(&format!("{COOKIE}=forged")).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_console_no_token_closes_logs_anyone_in_as_admin() {
        let sessions = Sessions::local(&tokens(None, None));
        assert!(!sessions.closed());
        assert!(sessions.login("", "ana", HERE).await.unwrap().unwrap().session.admin);
    }

    #[test]
    fn a_session_is_bound_to_the_token_of_its_role_and_its_id() {
        let sessions = Sessions::local(&tokens(Some("r"), Some("a")));
        let (review, admin) = (sessions.opened_by(false, "id").unwrap(), sessions.opened_by(true, "id").unwrap());
        assert_ne!(review, admin);
        assert_ne!(review, sessions.opened_by(false, "other").unwrap(), "another id, another fingerprint");
        let rotated = Sessions::local(&tokens(Some("r2"), Some("a")));
        assert_ne!(rotated.opened_by(false, "id").unwrap(), review, "another review token");
        assert_eq!(rotated.opened_by(true, "id").unwrap(), admin, "the admin token unchanged");
        assert!(Sessions::local(&tokens(None, Some("a"))).opened_by(false, "id").is_none());
        let open = Sessions::local(&tokens(None, None)).opened_by(true, "id").unwrap();
        assert_ne!(open, admin, "an open console's sessions open no closed one");
    }

    #[test]
    fn a_login_form_token_matches_only_its_own_cookie() {
        let (token, cookie) = login_form_token(false);
        let sent = cookie.split(';').next().unwrap();
        assert!(login_form_matches(&format!("a=1; {sent}"), &token));
        assert!(!login_form_matches(sent, "forged") && !login_form_matches("", &token) && !login_form_matches("", ""));
        assert!(cookie.contains("Path=/login; HttpOnly; SameSite=Strict"), "{cookie}");
    }

    #[test]
    fn the_cookie_is_http_only_and_strict_and_secure_over_tls() {
        let cookie = set_cookie("abc", false);
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
        assert!(!cookie.contains("Secure"), "a browser drops a Secure cookie sent over plain HTTP: {cookie}");
        assert!(set_cookie("abc", true).ends_with("; Secure"));
    }
}
