//! Reviews under the fleet's load: a call of a tool with `review.required` waits on whichever gateway HAProxy sent
//! it to, and a reviewer logged in once to the console through the balancer approves it there (a page for the CSRF
//! token, then the form's POST), each request landing on any gateway.

use super::fleet_load::Shared;
use serde_json::json;
use std::time::{Duration, Instant};
use tonic::transport::Channel;
use toolgate::pb::v1::{self as pb, tool_gateway_client::ToolGatewayClient};

/// The console through the balancer, with a reviewer's session.
#[derive(Clone)]
pub struct Reviewer {
    base: String,
    http: reqwest::Client,
    session: String,
}

fn field(page: &str, field: &str) -> Option<String> {
    let marker = format!("name=\"{field}\" value=\"");
    page.split(&marker).nth(1).and_then(|rest| rest.split('"').next()).map(str::to_owned)
}

impl Reviewer {
    /// Logs Ana in (the console has no token: open on loopback); tries again while the fleet is unsettled.
    pub async fn login(base: String) -> Self {
        toolgate::tls::install_provider();
        let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
        let http = client.timeout(Duration::from_secs(5)).build().unwrap();
        for _ in 0..20 {
            if let Some(session) = try_login(&http, &base).await {
                return Self { base, http, session };
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        panic!("no login to the console through the balancer")
    }

    async fn get(&self, path: &str) -> Option<String> {
        let sent = self.http.get(format!("{}{path}", self.base)).header("cookie", &self.session).send().await.ok()?;
        if sent.status() != 200 {
            return None;
        }
        sent.text().await.ok()
    }

    /// Approves `call_id` once it is listed: true when the console acknowledged the decision (303).
    pub async fn approve(&self, call_id: &str, within: Duration) -> bool {
        let until = Instant::now() + within;
        while Instant::now() < until {
            let listed = self.get("/reviews").await.is_some_and(|p| p.contains(&format!("data-call-id=\"{call_id}\"")));
            let page = if listed { self.get(&format!("/review?tenant=&call_id={call_id}")).await } else { None };
            if let Some(csrf) = page.as_deref().and_then(|p| field(p, "csrf")) {
                let fields = [("csrf", csrf.as_str()), ("tenant", ""), ("call_id", call_id), ("action", "approve")];
                let url = format!("{}/review/decide", self.base);
                let sent = self.http.post(url).header("cookie", &self.session).form(&fields).send().await;
                if sent.is_ok_and(|r| r.status() == 303) {
                    return true;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        false
    }

    /// Whether the shared record shows the call as decided by Ana.
    pub async fn recorded(&self, call_id: &str) -> bool {
        self.get(&format!("/review?tenant=&call_id={call_id}")).await.is_some_and(|p| p.contains("by Ana"))
    }
}

async fn try_login(http: &reqwest::Client, base: &str) -> Option<String> {
    let form = http.get(format!("{base}/login")).send().await.ok()?;
    let cookie = form.headers().get("set-cookie")?.to_str().ok()?.split(';').next()?.to_owned();
    let csrf = field(&form.text().await.ok()?, "csrf")?;
    let fields = [("name", "Ana"), ("token", ""), ("csrf", &csrf)];
    let login = http.post(format!("{base}/login")).header("cookie", cookie).form(&fields).send().await.ok()?;
    let session = login.headers().get("set-cookie")?.to_str().ok()?.split(';').next()?.to_owned();
    (login.status() == 303 && session.starts_with("toolgate_console=")).then_some(session)
}

/// The reviewed calls of one run: ids whose approval the console acknowledged, and the answers their callers got.
#[derive(Default)]
pub struct Reviews {
    pub acked: Vec<String>,
    pub answered_ok: u64,
}

/// Every second until `until`: a call of `tool` (id `rv-{n}`) that waits for its review, approved in the console.
/// The caller retries under its id after an error, as the gRPC callers do.
pub async fn reviews(
    channel: Channel,
    reviewer: Reviewer,
    tool: &'static str,
    until: Instant,
    tally: Shared,
) -> Reviews {
    let (mut out, mut waiting) = (Reviews::default(), Vec::new());
    let mut n = 0;
    while Instant::now() < until {
        n += 1;
        let id = format!("rv-{n}");
        let client = ToolGatewayClient::new(channel.clone());
        waiting.push(tokio::spawn(wait_for_review(client, id.clone(), tool)));
        if reviewer.approve(&id, Duration::from_secs(10)).await {
            out.acked.push(id);
        } else {
            *tally.lock().unwrap().refused.entry("review:not-approved".into()).or_default() += 1;
        }
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    for call in waiting {
        if tokio::time::timeout(Duration::from_secs(20), call).await.is_ok_and(|r| r.unwrap_or(false)) {
            out.answered_ok += 1;
        }
    }
    out
}

/// Sends the reviewed call until it is answered (at most 6 tries, 20 s each); true when it ran.
async fn wait_for_review(mut client: ToolGatewayClient<Channel>, id: String, tool: &str) -> bool {
    let args = json!({"nonce": id}).to_string();
    for _ in 0..6 {
        let call = pb::ToolCall { id: id.clone(), name: tool.into(), arguments: args.clone() };
        let mut request = tonic::Request::new(pb::ExecuteRequest { call: Some(call), ..Default::default() });
        request.set_timeout(Duration::from_secs(20));
        if let Ok(answer) = client.execute(request).await {
            let message = answer.into_inner().message.expect("a message");
            let Some(error) = message.error else { return true };
            if !error.retryable && !message.content.contains("still running") {
                return false;
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    false
}
