//! The console in cluster mode: a call waiting on one gateway is listed, and decided, in the console of another,
//! and (`console_sessions.rs`) a login on one gateway's console holds on every other's (real `toolgate serve` processes on one Redis).

use crate::support;
use crate::support::backends::{Runtime, start_runtime};
use crate::support::cluster::{Prefix, redis_url};
use serde_json::json;
use std::time::Duration;
use toolgate::pb::v1::{self as pb, ToolStatus};

/// The value of `name="{field}" value="…"` on a page.
fn field(page: &str, field: &str) -> String {
    let marker = format!("name=\"{field}\" value=\"");
    page.split(&marker)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("{field}: {page}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis at 127.0.0.1:6379; .ci/run runs it"]
async fn a_call_waiting_on_one_gateway_is_approved_in_the_console_of_another() {
    let prefix = Prefix::new(&redis_url());
    let console = support::free_addr();
    let mut a = support::cluster::fleet::Node::start(&redis_url(), &prefix.prefix, "").await;
    let extra = format!("[console]\nlisten = \"{console}\"\n");
    let mut b = support::cluster::fleet::Node::start(&redis_url(), &prefix.prefix, &extra).await;
    let target = start_runtime(Runtime::default()).await;
    let spec = json!({"name": "deploy", "input_schema": {"type": "object"}, "backend": {"grpc": {"target": target}},
        "review": {"required": true}});
    a.register(spec).await.unwrap();
    support::eventually(Duration::from_secs(5), "registered on b", async || b.version("deploy").await.is_some()).await;

    // The agent's call waits on gateway a.
    let mut agent = a.gateway.clone();
    let waiting = tokio::spawn(async move {
        let call = pb::ToolCall { id: "c-1".into(), name: "deploy".into(), arguments: r#"{"replicas": 3}"#.into() };
        let context = pb::CallContext { tenant: String::new(), user_id: "u1".into(), ..Default::default() };
        let mut request =
            tonic::Request::new(pb::ExecuteRequest { call: Some(call), context: Some(context), ..Default::default() });
        request.set_timeout(Duration::from_secs(30));
        agent.execute(request).await.unwrap().into_inner().message.unwrap()
    });

    // A reviewer logs in to gateway b's console (open: no token is set, on loopback).
    toolgate::tls::install_provider();
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let url = |path: &str| format!("http://{console}{path}");
    let form = http.get(url("/login")).send().await.unwrap();
    let cookie = form.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let csrf = field(&form.text().await.unwrap(), "csrf");
    let login =
        http.post(url("/login")).header("cookie", cookie).form(&[("name", "Ana"), ("token", ""), ("csrf", &csrf)]);
    let login = login.send().await.unwrap();
    assert_eq!(login.status(), 303);
    let session = login.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let page = |path: String| {
        let (http, session) = (http.clone(), session.clone());
        async move { http.get(url(&path)).header("cookie", session).send().await.unwrap().text().await.unwrap() }
    };
    support::eventually(Duration::from_secs(10), "the call listed on b", async || {
        page("/reviews".into()).await.contains("data-call-id=\"c-1\"")
    })
    .await;
    let review = page("/review?tenant=&call_id=c-1".into()).await;
    assert!(review.contains("replicas"), "{review}");
    let csrf = field(&review, "csrf");
    let fields = [("csrf", csrf.as_str()), ("tenant", ""), ("call_id", "c-1"), ("action", "approve")];
    let decided = http.post(url("/review/decide")).header("cookie", &session).form(&fields).send().await.unwrap();
    assert_eq!(decided.status(), 303);

    let message = tokio::time::timeout(Duration::from_secs(20), waiting).await.expect("a answers").unwrap();
    assert_eq!(message.status(), ToolStatus::Success, "{}", message.content);
    let record = page("/review?tenant=&call_id=c-1".into()).await;
    assert!(record.contains("by Ana"), "the shared record keeps who decided: {record}");
    a.kill().await;
    b.kill().await;
}
