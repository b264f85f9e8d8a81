//! The console under test: a gateway with the console on a free port and the review token set, the reviewed
//! `deploy` tool on a real ToolRuntime, and a plain HTTP client that logs in as a browser does.

use crate::support::backends::{Runtime, start_runtime};
use crate::support::review::spec;
use crate::support::{Gateway, start_gateway};
use reqwest::redirect::Policy;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use tempfile::TempDir;
use toolgate::pb::v1 as pb;

pub const REVIEW_TOKEN: &str = "review-secret";
/// Set by `start_with_admin`: it opens the tools page, and the admin plane.
pub const ADMIN_TOKEN: &str = "admin-secret";

pub struct Console {
    /// The gateway's data directory, deleted when the console is dropped.
    _dir: TempDir,
    pub gw: Gateway,
    pub runtime: Runtime,
    /// The ToolRuntime's target, for more tools.
    pub target: String,
    pub base: String,
    pub http: reqwest::Client,
    /// The admin token, when the admin plane is closed.
    pub admin: Option<String>,
}

impl Console {
    /// The gateway with its console; ToolReview (and the console) closed by the review token.
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// The same, with the admin plane (and the console's tools page) closed by `ADMIN_TOKEN`, and `[budgets]`
    /// defaults a tool's page shows.
    pub async fn start_with_admin() -> Self {
        Self::start_with_admin_and(|_| {}).await
    }

    /// `start_with_admin`'s console, with `adjust` applied to its gateway's config last.
    pub async fn start_with_admin_and(adjust: impl FnOnce(&mut toolgate::Config)) -> Self {
        Self::start_with(|config| {
            config.tokens.admin = Some(ADMIN_TOKEN.into());
            config.policy.budgets.max_tool_calls = Some(40);
            config.policy.budgets.max_calls = Some(200);
            adjust(config);
        })
        .await
    }

    /// A console no token closes (on loopback): anyone who reaches it logs in as admin.
    pub async fn start_open() -> Self {
        Self::start_with(|config| config.tokens.review = None).await
    }

    /// The console with the review token set, and `adjust` applied to its gateway's config last.
    pub async fn start_with(adjust: impl FnOnce(&mut toolgate::Config)) -> Self {
        let (dir, mut config) = crate::support::temp_config();
        let addr: SocketAddr = crate::support::free_addr();
        config.console.listen = Some(addr);
        config.tokens.review = Some(REVIEW_TOKEN.into());
        adjust(&mut config);
        let admin = config.tokens.admin.clone();
        let gw = start_gateway(config).await;
        let runtime = Runtime::default();
        let target = start_runtime(runtime.clone()).await;
        let http = reqwest::Client::builder().redirect(Policy::none()).build().unwrap();
        let mut c = Self { _dir: dir, gw, runtime, target, base: format!("http://{addr}"), http, admin };
        let mut deploy = spec(&c.target);
        deploy["description"] = "Deploys a service: sets how many replicas of it run.".into();
        c.register(deploy).await.expect("the reviewed tool registers");
        c
    }

    /// Registers a spec written as JSON in the spec-file form, with the admin token when one is set.
    pub async fn register(&mut self, spec: serde_json::Value) -> Result<pb::ToolSpec, tonic::Status> {
        let spec: toolgate::registry::ToolSpec = serde_json::from_value(spec).expect("a test spec parses");
        let request = self.authed(pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) });
        Ok(self.gw.registry.register_tool(request).await?.into_inner().tool.expect("a registered tool"))
    }

    /// A request carrying the admin token, when one is set.
    pub fn authed<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Some(token) = &self.admin {
            request.metadata_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
        }
        request
    }

    pub fn runs(&self) -> usize {
        self.runtime.calls.load(Ordering::SeqCst)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Logs `name` in with the review token: the session's cookie, and its CSRF token read off a page.
    pub async fn login(&self, name: &str) -> Session {
        self.login_with(name, REVIEW_TOKEN).await
    }

    /// The login form as a browser gets it: its CSRF token, and the login cookie to send back with it.
    pub async fn login_form(&self) -> (String, String) {
        self.login_form_via(&self.http).await
    }

    /// The same, fetched with `http` (a client bound to another address, say).
    pub async fn login_form_via(&self, http: &reqwest::Client) -> (String, String) {
        let response = http.get(self.url("/login")).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let set_cookie = response.headers()["set-cookie"].to_str().unwrap();
        let cookie = set_cookie.split(';').next().unwrap().to_owned();
        let page = response.text().await.unwrap();
        let csrf = page.split("name=\"csrf\" value=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap();
        (csrf.to_owned(), cookie)
    }

    /// Posts the login form `name` and `token`, as a browser that loaded it first.
    pub async fn post_login(&self, name: &str, token: &str) -> reqwest::Response {
        self.post_login_via(&self.http, name, token).await
    }

    /// The same, sent with `http`.
    pub async fn post_login_via(&self, http: &reqwest::Client, name: &str, token: &str) -> reqwest::Response {
        let (csrf, cookie) = self.login_form_via(http).await;
        let form = [("name", name), ("token", token), ("csrf", csrf.as_str())];
        http.post(self.url("/login")).header("cookie", cookie).form(&form).send().await.unwrap()
    }

    /// A client like `http` whose connections come from `ip` (any of 127.0.0.0/8 is this host's loopback).
    pub fn client_from(ip: [u8; 4]) -> reqwest::Client {
        let ip = std::net::IpAddr::from(ip);
        reqwest::Client::builder().redirect(Policy::none()).local_address(ip).build().unwrap()
    }

    /// Logs `name` in with `token`.
    pub async fn login_with(&self, name: &str, token: &str) -> Session {
        let response = self.post_login(name, token).await;
        assert_eq!(response.status(), 303, "a good login redirects to the reviews");
        let set_cookie = response.headers()["set-cookie"].to_str().unwrap().to_owned();
        let cookie = set_cookie.split(';').next().unwrap().to_owned();
        let page = self.get_with(&cookie, "/reviews").await;
        let csrf = page.split("name=\"csrf\" value=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap();
        Session { cookie, csrf: csrf.to_owned(), set_cookie }
    }

    /// A page's HTML, as a logged-in reviewer sees it (asserting a 200).
    pub async fn get_with(&self, cookie: &str, path: &str) -> String {
        let response = self.http.get(self.url(path)).header("cookie", cookie).send().await.unwrap();
        assert_eq!(response.status(), 200, "GET {path}");
        response.text().await.unwrap()
    }

    /// Posts a verdict: the status and the page (empty on a redirect).
    pub async fn decide(&self, session: &Session, csrf: &str, fields: &[(&str, &str)]) -> (u16, String) {
        let response = self.post_decide(session, csrf, fields).await;
        (response.status().as_u16(), response.text().await.unwrap())
    }

    /// Posts a verdict, for tenant `acme`: the response as it came.
    pub async fn post_decide(&self, session: &Session, csrf: &str, fields: &[(&str, &str)]) -> reqwest::Response {
        let mut form = vec![("csrf", csrf), ("tenant", crate::support::review::TENANT)];
        form.extend_from_slice(fields);
        let request = self.http.post(self.url("/review/decide")).header("cookie", &session.cookie).form(&form);
        request.send().await.unwrap()
    }
}

/// The text a page shows: its HTML with the entities askama writes decoded.
pub fn text(html: &str) -> String {
    [("&#34;", "\""), ("&#39;", "'"), ("&#60;", "<"), ("&#62;", ">"), ("&quot;", "\""), ("&lt;", "<"), ("&gt;", ">")]
        .iter()
        .fold(html.to_owned(), |acc, (entity, ch)| acc.replace(entity, ch))
        .replace("&#38;", "&")
        .replace("&amp;", "&")
}

/// A review's page, of tenant `acme`.
pub fn review_path(call_id: &str) -> String {
    format!("/review?tenant={}&call_id={call_id}", crate::support::review::TENANT)
}

pub struct Session {
    /// `toolgate_console=...`, as the browser sends it back.
    pub cookie: String,
    pub csrf: String,
    /// The whole `Set-Cookie` the login answered.
    pub set_cookie: String,
}
