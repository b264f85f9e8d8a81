//! The console's sessions in cluster mode: a login on one gateway's console opens every other's (a page, and a
//! form with its CSRF token), survives a restart, ends everywhere at a logout, and is refused by a gateway whose
//! token of its role is another; Redis holds a hash of the id, never the id; and while Redis does not answer, the
//! console answers 503 rather than let anyone in or out.

use crate::support;
use crate::support::cluster::fleet::Node;
use crate::support::cluster::{Prefix, PrivateRedis, redis_url};
use reqwest::StatusCode;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;

const REVIEW_TOKEN: &str = "review-one";

/// One gateway's console, as a browser without cookies of its own sees it.
struct Door {
    base: String,
    http: reqwest::Client,
}

impl Door {
    fn new(addr: SocketAddr) -> Self {
        toolgate::tls::install_provider();
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Self { base: format!("http://{addr}"), http }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Logs `name` in with `token`: the login's answer, and the session cookie (`name=value`) it set, if any.
    async fn login(&self, name: &str, token: &str) -> (StatusCode, Option<String>) {
        let form = self.http.get(self.url("/login")).send().await.unwrap();
        assert_eq!(form.status(), 200);
        let cookie = form.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
        let csrf = field(&form.text().await.unwrap(), "csrf");
        let fields = [("name", name), ("token", token), ("csrf", &csrf)];
        let login = self.http.post(self.url("/login")).header("cookie", cookie).form(&fields).send().await.unwrap();
        let session = login.headers().get("set-cookie").map(|v| v.to_str().unwrap().split(';').next().unwrap().into());
        (login.status(), session.filter(|s: &String| s.starts_with("toolgate_console=")))
    }

    /// `GET path` with the session cookie: the status, and the page.
    async fn get(&self, session: &str, path: &str) -> (StatusCode, String) {
        let response = self.http.get(self.url(path)).header("cookie", session).send().await.unwrap();
        (response.status(), response.text().await.unwrap())
    }

    /// `POST path` with the session cookie and `fields`: the status, and the page.
    async fn post(&self, session: &str, path: &str, fields: &[(&str, &str)]) -> (StatusCode, String) {
        let response = self.http.post(self.url(path)).header("cookie", session).form(fields).send().await.unwrap();
        (response.status(), response.text().await.unwrap())
    }

    /// Whether the session opens the reviews page here (else the console sends it to the login).
    async fn lets_in(&self, session: &str) -> bool {
        let (status, page) = self.get(session, "/reviews").await;
        match status {
            StatusCode::OK => {
                assert!(page.contains("Ana"), "the page of Ana's session: {page}");
                true
            }
            StatusCode::SEE_OTHER => false,
            other => panic!("{other}: {page}"),
        }
    }
}

/// The value of `name="{field}" value="…"` on a page.
fn field(page: &str, field: &str) -> String {
    let marker = format!("name=\"{field}\" value=\"");
    let value = page.split(&marker).nth(1).and_then(|rest| rest.split('"').next());
    value.unwrap_or_else(|| panic!("{field}: {page}")).to_owned()
}

/// An approval of a call no one waits on, with `csrf`: a 404 once the session and its CSRF token are taken.
fn decide(csrf: &str) -> [(&str, &str); 4] {
    [("csrf", csrf), ("tenant", ""), ("call_id", "none"), ("action", "approve")]
}

/// A gateway on `redis`/`prefix` whose console listens on a port of its own, closed by `review_token`.
async fn gateway(redis: &str, prefix: &str, review_token: &str) -> (Node, Door) {
    let console = support::free_addr();
    let extra = format!("[auth]\nreview_token = \"{review_token}\"\n[console]\nlisten = \"{console}\"\n");
    (Node::start(redis, prefix, &extra).await, Door::new(console))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_console_login_holds_on_every_gateway_and_past_a_restart_until_a_logout_anywhere() {
    let prefix = Prefix::new(&redis_url());
    let (a, door_a) = gateway(&redis_url(), &prefix.prefix, REVIEW_TOKEN).await;
    let (b, door_b) = gateway(&redis_url(), &prefix.prefix, REVIEW_TOKEN).await;
    let (status, session) = door_a.login("Ana", REVIEW_TOKEN).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let session = session.expect("a session cookie");
    assert!(door_a.lets_in(&session).await);

    // Gateway b never saw the login: its page opens, with the same session's CSRF token, which its forms take.
    let csrf = field(&door_a.get(&session, "/reviews").await.1, "csrf");
    let (status, page) = door_b.get(&session, "/reviews").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(field(&page, "csrf"), csrf, "the same session on b");
    let (status, page) = door_b.post(&session, "/review/decide", &decide("forged")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "another CSRF token is refused: {page}");
    let (status, page) = door_b.post(&session, "/review/decide", &decide(&csrf)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "the session's token is taken, and the call is not pending: {page}");
    assert!(page.contains("no longer under review"), "{page}");

    // Redis holds the SHA-256 of the id, never the id, for at most the session's 12 hours.
    let id = session.strip_prefix("toolgate_console=").unwrap();
    let keys = prefix.keys();
    assert!(keys.iter().all(|k| !k.contains(id)), "the cookie's id is in Redis: {keys:?}");
    let hash: String = Sha256::digest(id.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    let key = format!("{}:console_session:{hash}", prefix.prefix);
    let ttl: i64 = redis::cmd("TTL").arg(&key).query(&mut support::cluster::connect(&redis_url())).unwrap();
    assert!(ttl > 11 * 3600 && ttl <= 12 * 3600, "the session's key {key} expires in {ttl} s: {keys:?}");

    // A gateway started after the login (as one restarted) knows the session too.
    let (c, door_c) = gateway(&redis_url(), &prefix.prefix, REVIEW_TOKEN).await;
    assert!(door_c.lets_in(&session).await, "a new gateway lets the session in");

    // A logout on b ends the session on a and c too.
    let (status, page) = door_b.post(&session, "/logout", &[("csrf", &csrf)]).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{page}");
    assert!(!door_a.lets_in(&session).await, "a refuses the session b logged out");
    assert!(!door_c.lets_in(&session).await, "c refuses it too");
    assert!(!prefix.keys().contains(&key), "the session's key is gone");
    for node in [a, b, c] {
        node.kill().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_console_session_opened_with_a_token_no_longer_configured_is_refused() {
    let prefix = Prefix::new(&redis_url());
    let (old, door_old) = gateway(&redis_url(), &prefix.prefix, REVIEW_TOKEN).await;
    let (_, session) = door_old.login("Ana", REVIEW_TOKEN).await;
    let session = session.expect("a session cookie");
    assert!(door_old.lets_in(&session).await);
    // The review token changed: a gateway started with the new one refuses what the old one opened...
    let (new, door_new) = gateway(&redis_url(), &prefix.prefix, "review-two").await;
    assert!(!door_new.lets_in(&session).await, "a session the old token opened is refused");
    let (status, page) = door_new.post(&session, "/logout", &[("csrf", "any")]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "nor does a form of it get through: {page}");
    // ... while the new token logs in there, and a gateway still on the old token refuses that session.
    let (_, fresh) = door_new.login("Ana", "review-two").await;
    let fresh = fresh.expect("a session cookie");
    assert!(door_new.lets_in(&fresh).await);
    assert!(!door_old.lets_in(&fresh).await, "the old token's gateway refuses the new token's session");
    assert!(door_old.lets_in(&session).await, "the old session was refused by b, not ended");
    old.kill().await;
    new.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server on PATH; .ci/run runs it"]
async fn while_redis_is_down_the_console_answers_503_and_lets_no_one_in() {
    let mut redis = PrivateRedis::start();
    let (node, door) = gateway(&redis.url(), "console-down", REVIEW_TOKEN).await;
    let (_, session) = door.login("Ana", REVIEW_TOKEN).await;
    let session = session.expect("a session cookie");
    assert!(door.lets_in(&session).await);
    redis.stop();
    let (status, page) = door.get(&session, "/reviews").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{page}");
    assert!(page.contains("Redis"), "the page says why: {page}");
    let (status, page) = door.get("toolgate_console=forged", "/reviews").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "a cookie the console never made costs no round trip: {page}");
    let (status, page) = door.login("Ana", REVIEW_TOKEN).await;
    assert_eq!((status, page), (StatusCode::SERVICE_UNAVAILABLE, None), "no login without Redis");
    let (status, _) = door.login("Eve", "wrong").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "a wrong token is still told so");
    node.kill().await;
}
