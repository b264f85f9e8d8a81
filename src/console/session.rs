//! Who is logged in to the console: sessions behind an HttpOnly, SameSite=Strict cookie, each with the
//! reviewer's name, whether the admin token opened it, and the CSRF token its forms carry. Each role's sessions are
//! bounded apart, so logins with the review token never end an admin's session.

use crate::config::Tokens;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};
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
    started: Instant,
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
    live: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    pub fn new(tokens: &Tokens) -> Self {
        Self { review: tokens.review.clone(), admin: tokens.admin.clone(), live: Mutex::new(HashMap::new()) }
    }

    /// Whether a token is needed to log in (else the console is open, on loopback).
    pub fn closed(&self) -> bool {
        self.review.is_some() || self.admin.is_some()
    }

    /// Logs `name` in with `token`: the review token opens the reviews, the admin token everything. Compared in
    /// constant time, each candidate, so timing tells nothing of a guess.
    pub fn login(&self, token: &str, name: &str, client: IpAddr) -> Option<Login> {
        let matches = |expected: &Option<String>| {
            expected.as_deref().is_some_and(|e| bool::from(token.as_bytes().ct_eq(e.as_bytes())))
        };
        let (review, admin) = (matches(&self.review), matches(&self.admin));
        let admin = admin || !self.closed();
        if !(review || admin) {
            return None;
        }
        let session = Session { name: name.to_owned(), admin, csrf: random_token(), started: Instant::now(), client };
        let id = random_token();
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|_, s| s.started.elapsed() < LIFETIME);
        make_room(&mut live, admin);
        live.insert(id.clone(), session.clone());
        Some(Login { id, session })
    }

    /// The session a cookie header names, if it is live.
    pub fn find(&self, cookies: &str) -> Option<Session> {
        let id = cookie_value(cookies, COOKIE)?;
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        match live.get(id) {
            Some(session) if session.started.elapsed() < LIFETIME => Some(session.clone()),
            Some(_) => {
                live.remove(id);
                None
            }
            None => None,
        }
    }

    /// Ends the session a cookie header names.
    pub fn logout(&self, cookies: &str) {
        if let Some(id) = cookie_value(cookies, COOKIE) {
            self.live.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        }
    }
}

/// Makes room for one more session of a role: with MAX_SESSIONS of it live, the oldest session of the client that
/// holds the most of them ends. A login never ends a session of the other role, and a client logging in over and
/// over ends its own sessions rather than other people's.
fn make_room(live: &mut HashMap<String, Session>, admin: bool) {
    let mut held: HashMap<IpAddr, usize> = HashMap::new();
    for session in live.values().filter(|s| s.admin == admin) {
        *held.entry(session.client).or_default() += 1;
    }
    if held.values().sum::<usize>() < MAX_SESSIONS {
        return;
    }
    let Some(busiest) = held.into_iter().max_by_key(|(_, n)| *n).map(|(client, _)| client) else { return };
    let oldest = live
        .iter()
        .filter(|(_, s)| s.admin == admin && s.client == busiest)
        .min_by_key(|(_, s)| s.started)
        .map(|(id, _)| id.clone());
    if let Some(id) = oldest {
        live.remove(&id);
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
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    fn tokens(review: Option<&str>, admin: Option<&str>) -> Tokens {
        Tokens { review: review.map(Into::into), admin: admin.map(Into::into), data: None }
    }

    #[test]
    fn the_review_token_opens_reviews_and_the_admin_token_everything() {
        let sessions = Sessions::new(&tokens(Some("r"), Some("a")));
        assert!(sessions.login("wrong", "eve", HERE).is_none());
        assert!(sessions.login("", "eve", HERE).is_none());
        let reviewer = sessions.login("r", "ana", HERE).unwrap();
        assert!(!reviewer.session.admin);
        let admin = sessions.login("a", "bo", HERE).unwrap();
        assert!(admin.session.admin);
        assert_ne!(reviewer.id, admin.id);
        assert_ne!(reviewer.session.csrf, admin.session.csrf);
        let header = format!("other=1; {COOKIE}={}", reviewer.id);
        assert_eq!(sessions.find(&header).map(|s| s.name), Some("ana".into()));
        sessions.logout(&header);
        assert!(sessions.find(&header).is_none());
        assert!(sessions.find(&format!("{COOKIE}=forged")).is_none());
    }

    #[test]
    fn a_console_no_token_closes_logs_anyone_in_as_admin() {
        let sessions = Sessions::new(&tokens(None, None));
        assert!(!sessions.closed());
        assert!(sessions.login("", "ana", HERE).unwrap().session.admin);
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

    #[test]
    fn a_full_table_ends_a_session_of_the_same_role_and_the_busiest_client() {
        let sessions = Sessions::new(&tokens(Some("r"), Some("a")));
        let elsewhere = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));
        let admin = sessions.login("a", "root", HERE).unwrap();
        let ana = sessions.login("r", "ana", elsewhere).unwrap();
        let first = sessions.login("r", "flood", HERE).unwrap();
        for _ in 0..MAX_SESSIONS {
            sessions.login("r", "flood", HERE).unwrap();
        }
        let live = |login: &Login| sessions.find(&format!("{COOKIE}={}", login.id)).is_some();
        assert!(live(&admin) && live(&ana), "another role's and another client's sessions stay");
        assert!(!live(&first), "the flooding client's oldest ended");
        let held = sessions.live.lock().unwrap().values().filter(|s| !s.admin).count();
        assert_eq!(held, MAX_SESSIONS);
    }
}
