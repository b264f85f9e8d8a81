//! The console's handlers over real HTTP against a real gateway: login (limited per client address, sessions of
//! one role bounded apart from the other's), the pending reviews, one review, and each verdict (approve; edit,
//! valid, invalid or setting an injected parameter; reject), with the CSRF token, the session and the security
//! headers each page must carry.

use crate::support;
use crate::support::console::{ADMIN_TOKEN, Console, REVIEW_TOKEN, review_path, text};
use crate::support::review::{TENANT, defer, execute, request};
use std::time::Duration;
use toolgate::pb::v1::{self as pb, ErrorKind, ReviewAction, ReviewMode, ToolStatus};

#[tokio::test]
async fn without_a_session_every_page_sends_to_the_login_and_every_action_is_refused() {
    let c = Console::start().await;
    for path in ["/", "/reviews", "/reviews/rows", "/review?call_id=x"] {
        let response = c.http.get(c.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 303, "{path}");
        let to = response.headers()["location"].to_str().unwrap();
        assert!(to == "/login" || to == "/reviews", "{path} -> {to}");
    }
    let post = c.http.post(c.url("/review/decide")).form(&[("call_id", "x"), ("action", "approve")]).send().await;
    assert_eq!(post.unwrap().status(), 401);
    let wrong = c.post_login("eve", "guess").await;
    assert_eq!(wrong.status(), 401);
    let cookies: Vec<_> =
        wrong.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_owned()).collect();
    assert!(cookies.iter().all(|c| !c.starts_with("toolgate_console=")), "no session: {cookies:?}");
    assert!(wrong.text().await.unwrap().contains("opens neither"));
    // The login form carries a CSRF token too: a login posted without it, or with another form's, is refused
    // even with the right token, and starts no session.
    let (_, cookie) = c.login_form().await;
    let (other, _) = c.login_form().await;
    for (csrf, cookie) in [("", cookie.as_str()), (other.as_str(), cookie.as_str()), (other.as_str(), "")] {
        let form = [("name", "eve"), ("token", REVIEW_TOKEN), ("csrf", csrf)];
        let forged = c.http.post(c.url("/login")).header("cookie", cookie).form(&form).send().await.unwrap();
        assert_eq!(forged.status(), 403, "csrf {csrf:?} with cookie {cookie:?}");
        let set: Vec<_> =
            forged.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_owned()).collect();
        assert!(set.iter().all(|c| !c.starts_with("toolgate_console=")), "no session: {set:?}");
        assert!(forged.text().await.unwrap().contains("log in again"));
    }
    let forged = c.http.get(c.url("/reviews")).header("cookie", "toolgate_console=forged").send().await.unwrap();
    assert_eq!(forged.status(), 303);
    // The list refreshing itself after the session ended: htmx is told to load the login page whole.
    let refresh = c.http.get(c.url("/reviews/rows")).header("hx-request", "true").send().await.unwrap();
    assert_eq!(refresh.status(), 401);
    assert_eq!(refresh.headers()["hx-redirect"], "/login");
}

#[tokio::test]
async fn pages_carry_a_strict_csp_and_the_session_cookie_is_http_only_and_strict() {
    let c = Console::start().await;
    let login = c.http.get(c.url("/login")).send().await.unwrap();
    let csp = login.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(login.headers()["x-content-type-options"], "nosniff");
    assert_eq!(login.headers()["x-frame-options"], "DENY");
    let html = login.text().await.unwrap();
    assert!(!html.contains("<script>") && !html.contains(" style="), "no inline script or style: {html}");
    let session = c.login("ana").await;
    assert!(session.set_cookie.contains("HttpOnly") && session.set_cookie.contains("SameSite=Strict"));
    let asset = c.http.get(c.url("/assets/htmx.min.js")).send().await.unwrap();
    assert_eq!(asset.status(), 200);
    assert!(asset.headers()["content-type"].to_str().unwrap().starts_with("text/javascript"));
}

#[tokio::test]
async fn a_pending_call_is_listed_and_shown_with_its_repairs_and_injected_values() {
    let c = Console::start().await;
    // The model wrote Python-style JSON, a string for an integer and an injected parameter it must not set.
    let written = "{'service': 'api', 'replicas': '2', 'user_id': 'mallory'}";
    assert_eq!(defer(c.gw.gateway.clone(), "r1", written).await.status(), ToolStatus::PendingReview);
    let session = c.login("ana").await;
    let list = c.get_with(&session.cookie, "/reviews").await;
    assert!(list.contains("deploy") && list.contains("alice") && list.contains(TENANT), "{list}");
    assert!(list.contains("hx-get=\"/reviews/rows\""), "the list refreshes itself");
    let rows = c.get_with(&session.cookie, "/reviews/rows").await;
    assert!(rows.contains("data-call-id=\"r1\""), "{rows}");
    let page = c.get_with(&session.cookie, &review_path("r1")).await;
    assert!(page.contains("mallory"), "the arguments as the model wrote them: {page}");
    for rule in ["json_syntax", "string_to_integer"] {
        assert!(page.contains(rule), "the repair {rule} is shown");
    }
    let will_run = page.split("id=\"will-run\">").nth(1).unwrap().split("</pre>").next().unwrap();
    assert!(text(will_run).contains("\"replicas\": 2") && !will_run.contains("mallory"), "{will_run}");
    assert!(page.contains("<code>user_id</code> = <code>alice</code>"), "injected, from the context: {page}");
}

#[tokio::test]
async fn arguments_holding_html_are_shown_as_text() {
    let c = Console::start().await;
    let written = r#"{"service": "<script>alert('x')</script><img src=x onerror=alert(1)>", "replicas": 1}"#;
    defer(c.gw.gateway.clone(), "xss", written).await;
    let session = c.login("ana").await;
    for path in ["/reviews", "/reviews/rows", &review_path("xss")] {
        let page = c.get_with(&session.cookie, path).await;
        assert!(!page.contains("<script>alert") && !page.contains("<img src=x"), "{path}: {page}");
        assert!(text(&page).contains("<script>alert('x')</script>"), "{path} shows the text escaped");
    }
}

#[tokio::test]
async fn approve_runs_the_call_and_the_record_keeps_who_decided() {
    let c = Console::start().await;
    defer(c.gw.gateway.clone(), "a1", r#"{"service": "api", "replicas": 2}"#).await;
    let session = c.login("Ana Reviewer").await;
    let (status, _) = c.decide(&session, &session.csrf, &[("call_id", "a1"), ("action", "approve")]).await;
    assert_eq!(status, 303);
    let outcome = defer(c.gw.gateway.clone(), "a1", r#"{"service": "api", "replicas": 2}"#).await;
    assert_eq!(outcome.status(), ToolStatus::Success, "{}", outcome.content);
    assert_eq!(c.runs(), 1);
    let page = c.get_with(&session.cookie, &review_path("a1")).await;
    assert!(page.contains("by Ana Reviewer"), "{page}");
    assert!(!page.contains("id=\"approve\""), "a decided call offers no verdict");
    let again = c.decide(&session, &session.csrf, &[("call_id", "a1"), ("action", "approve")]).await;
    assert_eq!(again.0, 409);
}

#[tokio::test]
async fn a_decision_over_the_api_keeps_the_reviewer_it_names_and_the_console_shows_it() {
    let c = Console::start().await;
    let mut review = c.gw.review.clone();
    for id in ["api-named", "api-anonymous"] {
        defer(c.gw.gateway.clone(), id, r#"{"service": "api", "replicas": 2}"#).await;
    }
    let mut named = tonic::Request::new(pb::DecideRequest {
        call_id: "api-named".into(),
        tenant: TENANT.into(),
        action: ReviewAction::Approve.into(),
        reviewer: "cli-bot".into(),
        ..Default::default()
    });
    named.metadata_mut().insert("authorization", format!("Bearer {REVIEW_TOKEN}").parse().unwrap());
    let decided = review.decide(named).await.unwrap().into_inner().decided.unwrap();
    assert_eq!(decided.decided_by, "cli-bot");
    assert!(decided.decided_ms >= decided.created_ms && decided.created_ms > 0, "{decided:?}");
    let mut anonymous = tonic::Request::new(pb::DecideRequest {
        call_id: "api-anonymous".into(),
        tenant: TENANT.into(),
        action: ReviewAction::Approve.into(),
        ..Default::default()
    });
    anonymous.metadata_mut().insert("authorization", format!("Bearer {REVIEW_TOKEN}").parse().unwrap());
    assert_eq!(review.decide(anonymous).await.unwrap().into_inner().decided.unwrap().decided_by, "");
    let session = c.login("ana").await;
    assert!(c.get_with(&session.cookie, &review_path("api-named")).await.contains("by cli-bot"));
    assert!(c.get_with(&session.cookie, &review_path("api-anonymous")).await.contains("by the API"));
}

#[tokio::test]
async fn an_edit_is_checked_against_the_schema_and_may_not_set_an_injected_parameter() {
    let c = Console::start().await;
    defer(c.gw.gateway.clone(), "e1", r#"{"service": "api", "replicas": 2}"#).await;
    let session = c.login("bo").await;
    let edit = |args: &'static str| [("call_id", "e1"), ("action", "edit"), ("arguments", args)];

    let (status, page) = c.decide(&session, &session.csrf, &edit(r#"{"service": "api", "replicas": 0}"#)).await;
    assert_eq!(status, 422);
    assert!(page.contains("<code>/replicas</code>"), "the violation, inline: {page}");
    assert!(text(&page).contains(r#""replicas": 0"#), "the form keeps what the reviewer wrote");
    let (status, page) =
        c.decide(&session, &session.csrf, &edit(r#"{"service": "api", "replicas": 1, "user_id": "root"}"#)).await;
    assert_eq!(status, 422);
    assert!(page.contains("set by the gateway"), "{page}");
    assert_eq!(c.runs(), 0, "nothing ran for a refused edit");

    let (status, _) = c.decide(&session, &session.csrf, &edit(r#"{"service": "web", "replicas": 3}"#)).await;
    assert_eq!(status, 303);
    let outcome = defer(c.gw.gateway.clone(), "e1", r#"{"service": "api", "replicas": 2}"#).await;
    assert_eq!(outcome.status(), ToolStatus::Success);
    let ran: serde_json::Value = serde_json::from_str(&outcome.content).unwrap();
    assert_eq!(ran, serde_json::json!({"service": "web", "replicas": 3, "user_id": "alice"}));
}

#[tokio::test]
async fn reject_tells_the_waiting_caller_the_reviewers_feedback() {
    let c = Console::start().await;
    let waiting = tokio::spawn(execute(
        c.gw.gateway.clone(),
        request("j1", r#"{"service": "db", "replicas": 9}"#, ReviewMode::Wait, Duration::from_secs(30)),
    ));
    let session = c.login("cy").await;
    for _ in 0..500 {
        if c.get_with(&session.cookie, "/reviews/rows").await.contains("data-call-id=\"j1\"") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let feedback = [("call_id", "j1"), ("action", "reject"), ("feedback", "Not the database, <b>please</b>.")];
    assert_eq!(c.decide(&session, &session.csrf, &feedback).await.0, 303);
    let answer = tokio::time::timeout(Duration::from_secs(10), waiting).await.unwrap().unwrap();
    assert_eq!(answer.status(), ToolStatus::Error);
    assert_eq!(answer.error.unwrap().kind(), ErrorKind::Rejected);
    assert!(answer.content.contains("Not the database, <b>please</b>."), "{}", answer.content);
    assert_eq!(c.runs(), 0);
}

#[tokio::test]
async fn a_missing_or_wrong_csrf_token_or_another_origin_is_refused() {
    let c = Console::start().await;
    defer(c.gw.gateway.clone(), "c1", r#"{"service": "api"}"#).await;
    let session = c.login("dee").await;
    let other = c.login("eve").await;
    for csrf in ["", "0000", other.csrf.as_str()] {
        let (status, page) = c.decide(&session, csrf, &[("call_id", "c1"), ("action", "approve")]).await;
        assert_eq!(status, 403, "csrf {csrf:?}");
        assert!(page.contains("CSRF"), "{page}");
    }
    let cross = c
        .http
        .post(c.url("/review/decide"))
        .header("cookie", &session.cookie)
        .header("origin", "http://evil.example")
        .form(&[("csrf", session.csrf.as_str()), ("tenant", TENANT), ("call_id", "c1"), ("action", "approve")])
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), 403);
    assert_eq!(c.runs(), 0);
    assert!(c.get_with(&session.cookie, "/reviews/rows").await.contains("data-call-id=\"c1\""), "still pending");

    let logout = c.http.post(c.url("/logout")).header("cookie", &session.cookie).form(&[("csrf", &session.csrf)]);
    assert_eq!(logout.send().await.unwrap().status(), 303);
    let after = c.http.get(c.url("/reviews")).header("cookie", &session.cookie).send().await.unwrap();
    assert_eq!(after.status(), 303, "the session ended");
}

#[tokio::test]
async fn a_call_a_policy_rule_sent_to_review_names_the_rule() {
    let mut c = Console::start().await;
    let spec = serde_json::json!({
        "name": "scale", "tenant": TENANT,
        "input_schema": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
        "policy": [{"name": "big-scale", "when": "args.replicas > 10", "action": "review",
                    "message": "Scaling past 10 replicas <costs> money."}],
        "backend": {"grpc": {"target": c.target}},
    });
    c.gw.register(spec).await.unwrap();
    let call = |id: &str, replicas: u32| {
        let call =
            pb::ToolCall { id: id.into(), name: "scale".into(), arguments: format!(r#"{{"replicas": {replicas}}}"#) };
        let request = pb::ExecuteRequest {
            call: Some(call),
            context: Some(support::review::context(TENANT)),
            review_mode: ReviewMode::Defer.into(),
        };
        support::review::execute(c.gw.gateway.clone(), tonic::Request::new(request))
    };
    assert_eq!(call("small", 2).await.status(), ToolStatus::Success);
    assert_eq!(call("big", 40).await.status(), ToolStatus::PendingReview);
    defer(c.gw.gateway.clone(), "by-tool", r#"{"service": "api", "replicas": 2}"#).await;
    let session = c.login("ana").await;
    let rows = c.get_with(&session.cookie, "/reviews/rows").await;
    let row = |id: &str| {
        rows.split(&format!("data-call-id=\"{id}\"")).nth(1).unwrap().split("</tr>").next().unwrap().to_owned()
    };
    assert!(row("big").contains("rule <code>big-scale</code>"), "{rows}");
    assert!(row("by-tool").contains("the tool"), "{rows}");
    assert!(!rows.contains("data-call-id=\"small\""), "below the threshold nothing waits");
    let page = c.get_with(&session.cookie, &review_path("big")).await;
    assert!(page.contains("Sent to review by policy rule <code>big-scale</code>"), "{page}");
    assert!(
        text(&page).contains("Scaling past 10 replicas <costs> money.") && !page.contains("<costs>"),
        "escaped: {page}"
    );
}

#[tokio::test]
async fn wrong_tokens_are_limited_per_client_address_and_then_the_right_one_waits_too() {
    let c = Console::start().await;
    // Ten wrong guesses at once (the burst), then one every 6 s: the loop meets a 429 long before 100.
    let mut wrong = 0;
    let limited = loop {
        let response = c.post_login("eve", "guess").await;
        if response.status() != 401 || wrong == 100 {
            break response;
        }
        wrong += 1;
    };
    assert_eq!(limited.status(), 429, "after {wrong} wrong tokens");
    assert!(wrong >= 10, "the burst is ten guesses: limited after {wrong}");
    let retry = limited.headers()["retry-after"].to_str().unwrap().parse::<u64>().unwrap();
    assert!((1..=6).contains(&retry), "Retry-After: {retry}");
    assert!(limited.text().await.unwrap().contains("try again in"));
    // While the address waits, the right token is refused too (else the answer would tell a guess apart).
    let right = c.post_login("ana", REVIEW_TOKEN).await;
    assert_eq!(right.status(), 429);
    assert!(
        right.headers().get_all("set-cookie").iter().all(|v| !v.to_str().unwrap().starts_with("toolgate_console="))
    );
    // Another address has a bucket of its own.
    let elsewhere = Console::client_from([127, 0, 0, 2]);
    assert_eq!(c.post_login_via(&elsewhere, "ana", REVIEW_TOKEN).await.status(), 303);
}

#[tokio::test]
async fn logins_with_the_review_token_never_end_an_admins_session_or_another_clients() {
    let c = Console::start_with_admin().await;
    let admin = c.login_with("root", ADMIN_TOKEN).await;
    let elsewhere = Console::client_from([127, 0, 0, 2]);
    let ana = c.post_login_via(&elsewhere, "ana", REVIEW_TOKEN).await;
    assert_eq!(ana.status(), 303);
    let ana = ana.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    // More review logins from one address than the console keeps sessions (1,024): a session must end, and it
    // is one of this address's own.
    let (csrf, cookie) = c.login_form().await;
    for i in 0..1_030 {
        let form = [("name", "flood"), ("token", REVIEW_TOKEN), ("csrf", csrf.as_str())];
        let login = c.http.post(c.url("/login")).header("cookie", &cookie).form(&form).send().await.unwrap();
        assert_eq!(login.status(), 303, "login {i}");
    }
    assert!(c.get_with(&admin.cookie, "/tools").await.contains("root"), "the admin is still logged in");
    assert!(c.get_with(&ana, "/reviews").await.contains("ana"), "the reviewer elsewhere is still logged in");
}
