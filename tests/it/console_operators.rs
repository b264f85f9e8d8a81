//! The console's operator pages over real HTTP against a real gateway: the recent calls (filtered, each in
//! full, a model's text shown as text) and the last hour per tool (calls, failures by kind, repairs by rule); and
//! that the console answers only to its own host names, so a DNS-rebinding page reads and decides nothing.

use crate::support;
use crate::support::console::Console;
use crate::support::review::{TENANT, context, defer};
use serde_json::json;
use toolgate::pb::v1::{self as pb, ToolStatus};

async fn call(c: &Console, id: &str, name: &str, arguments: &str) -> pb::ToolMessage {
    let call = pb::ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() };
    let request = pb::ExecuteRequest { call: Some(call), context: Some(context("acme")), review_mode: 0 };
    c.gw.gateway.clone().execute(request).await.unwrap().into_inner().message.unwrap()
}

/// A plain tool beside the reviewed one: `echo`, answered by the runtime with its arguments.
async fn with_echo(c: &mut Console) {
    let spec = json!({
        "name": "echo", "tenant": "acme",
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}, "note": {"type": "string"}}},
        "backend": {"grpc": {"target": c.target}},
    });
    c.gw.register(spec).await.unwrap();
}

#[tokio::test]
async fn the_calls_page_lists_filters_and_opens_each_call() {
    let mut c = Console::start().await;
    with_echo(&mut c).await;
    assert_eq!(call(&c, "ok-1", "echo", "{'n': '4', 'note': '<b>bold</b>',}").await.status(), ToolStatus::Success);
    assert_eq!(call(&c, "bad-1", "echo", r#"{"n": "four"}"#).await.status(), ToolStatus::Error);
    call(&c, "lost-1", "nothing_here", "{}").await;
    let session = c.login("ops").await;

    let all = c.get_with(&session.cookie, "/calls").await;
    for id in ["ok-1", "bad-1", "lost-1"] {
        assert!(all.contains(&format!("data-call-id=\"{id}\"")), "{id} listed");
    }
    let failed = c.get_with(&session.cookie, "/calls?status=ERROR").await;
    assert!(failed.contains("bad-1") && failed.contains("lost-1") && !failed.contains("ok-1"), "{failed}");
    let invalid = c.get_with(&session.cookie, "/calls?kind=INVALID_ARGUMENTS").await;
    assert!(invalid.contains("bad-1") && !invalid.contains("lost-1"));
    let echo = c.get_with(&session.cookie, "/calls?tool=echo").await;
    assert!(echo.contains("ok-1") && !echo.contains("lost-1"));

    // The newest call is listed first; the first call recorded is seq 1.
    let page = c.get_with(&session.cookie, "/call?seq=1").await;
    assert!(page.contains("ok-1"), "{page}");
    assert!(page.contains("string_to_integer") && page.contains("json_syntax"), "the repairs");
    let effective = page.split("id=\"effective\">").nth(1).unwrap().split("</pre>").next().unwrap();
    assert!(effective.contains("\"n\": 4") || effective.contains("&#34;n&#34;: 4"), "{effective}");
    assert!(!page.contains("<b>bold</b>"), "the model's text is escaped");
    let missing = c.http.get(c.url("/call?seq=999")).header("cookie", &session.cookie).send().await.unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn the_overview_counts_the_hour_per_tool_as_charts() {
    let mut c = Console::start().await;
    with_echo(&mut c).await;
    for i in 0..3 {
        call(&c, &format!("e{i}"), "echo", r#"{"n": "1"}"#).await;
    }
    call(&c, "f1", "echo", r#"{"n": "x"}"#).await;
    let session = c.login("ops").await;
    let page = c.get_with(&session.cookie, "/overview").await;
    let echo = page.split("data-tool=\"echo\"").nth(1).expect("echo has a section").split("</section>").next().unwrap();
    assert!(echo.contains("4 calls"), "{echo}");
    assert!(echo.contains("<svg") && echo.contains("fill=\"#b3261e\""), "a chart with the failed part: {echo}");
    // Failures by kind and repairs by rule are charts too: one bar per name, its count as a label and a title.
    let chart = |class: &str| {
        let svg = echo
            .split(&format!("<svg class=\"chart {class}\""))
            .nth(1)
            .unwrap_or_else(|| panic!("a {class} chart: {echo}"));
        svg.split("</svg>").next().unwrap().to_owned()
    };
    let failures = chart("failures");
    assert!(failures.contains("<title>INVALID_ARGUMENTS: 1</title>") && failures.contains(">1</text>"), "{failures}");
    assert_eq!(failures.matches("<rect").count(), 1, "one bar per kind: {failures}");
    let repairs = chart("repairs");
    assert!(repairs.contains("<title>string_to_integer: 3</title>") && repairs.contains(">3</text>"), "{repairs}");
    assert!(repairs.contains("width=\"360\""), "the most frequent rule fills the chart: {repairs}");
    assert!(repairs.contains(">0</text>") && repairs.contains(">3</text>"), "a count axis from 0 to 3: {repairs}");
    // The calls chart has axes: calls per minute from 0 up to the busiest minute's (the four calls may straddle a
    // minute), and UTC times every quarter hour.
    let calls = chart("calls");
    let counts: Vec<&str> =
        calls.split("class=\"y-label\"").skip(1).filter_map(|t| t.split(['>', '<']).nth(1)).collect();
    assert!(counts.len() == 2 && ["2", "3", "4"].contains(&counts[0]) && counts[1] == "0", "{counts:?}");
    let times: Vec<&str> =
        calls.split("class=\"x-label\"").skip(1).filter_map(|t| t.split(['>', '<']).nth(1)).collect();
    assert!((4..=5).contains(&times.len()), "a time every 15 minutes of the hour: {times:?}");
    for time in &times {
        let (h, m) = time.split_once(':').unwrap_or_else(|| panic!("HH:MM: {time}"));
        assert!(h.len() == 2 && ["00", "15", "30", "45"].contains(&m), "a quarter hour: {time}");
    }
}

#[tokio::test]
async fn without_a_session_the_operator_pages_send_to_the_login() {
    let c = Console::start().await;
    for path in ["/calls", "/call?seq=1", "/overview"] {
        let response = c.http.get(c.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 303, "{path}");
    }
}

#[tokio::test]
async fn a_page_under_another_host_name_is_refused_even_by_an_open_console() {
    let mut c = Console::start_open().await;
    with_echo(&mut c).await;
    call(&c, "secret", "echo", r#"{"note": "password=hunter2"}"#).await;
    defer(c.gw.gateway.clone(), "r1", r#"{"service": "api", "replicas": 2}"#).await;
    let port = c.base.rsplit(':').next().unwrap().to_owned();
    // A page of evil.example, its name rebound to 127.0.0.1, sends `Host: evil.example:PORT`.
    let evil = format!("evil.example:{port}");
    let form = c.http.get(c.url("/login")).header("host", &evil).send().await.unwrap();
    assert_eq!(form.status(), 403);
    let text = form.text().await.unwrap();
    assert!(text.contains("evil.example") && text.contains("allowed_hosts"), "{text}");
    let (csrf, cookie) = c.login_form().await;
    let form = [("name", "mallory"), ("token", ""), ("csrf", csrf.as_str())];
    let login = c.http.post(c.url("/login")).header("host", &evil).header("cookie", cookie).form(&form);
    let login = login.send().await.unwrap();
    assert_eq!(login.status(), 403);
    assert!(login.headers().get("set-cookie").is_none(), "no session");
    // Even a session opened on loopback is no use under the other name.
    let session = c.login_with("ana", "").await;
    let calls = c.http.get(c.url("/calls")).header("host", &evil).header("cookie", &session.cookie);
    let calls = calls.send().await.unwrap();
    assert_eq!(calls.status(), 403);
    assert!(!calls.text().await.unwrap().contains("hunter2"));
    let verdict = [("csrf", session.csrf.as_str()), ("tenant", TENANT), ("call_id", "r1"), ("action", "approve")];
    let decide = c.http.post(c.url("/review/decide")).header("host", &evil).header("origin", format!("http://{evil}"));
    let decide = decide.header("cookie", &session.cookie).form(&verdict).send().await.unwrap();
    assert_eq!(decide.status(), 403);
    assert!(c.get_with(&session.cookie, "/reviews/rows").await.contains("data-call-id=\"r1\""), "still pending");
    // The loopback names answer, on any port.
    for host in [format!("localhost:{port}"), format!("[::1]:{port}"), "127.0.0.1".into()] {
        let page = c.http.get(c.url("/calls")).header("host", &host).header("cookie", &session.cookie);
        assert_eq!(page.send().await.unwrap().status(), 200, "{host}");
    }
}

#[tokio::test]
async fn an_operator_serves_the_console_under_the_names_it_lists() {
    let listed = ["console.example", "[::1]:1"].map(|h| toolgate::config::AllowedHost::parse(h).unwrap());
    let c = Console::start_with(|config| config.console.allowed_hosts = listed.to_vec()).await;
    let port = c.base.rsplit(':').next().unwrap().to_owned();
    let get = |host: String| c.http.get(c.url("/login")).header("host", host).send();
    assert_eq!(get(format!("console.example:{port}")).await.unwrap().status(), 200, "a listed name, any port");
    assert_eq!(get("CONSOLE.example".into()).await.unwrap().status(), 200, "names are case-blind");
    for host in [format!("127.0.0.1:{port}"), format!("[::1]:{port}"), format!("console.example.evil:{port}")] {
        let refused = get(host.clone()).await.unwrap();
        assert_eq!(refused.status(), 403, "{host}: the list replaces the loopback names");
        assert!(refused.text().await.unwrap().contains("console.example, [::1]:1"), "{host}: names what it answers to");
    }
    // A browser on the listed name posts with its Origin: the same name is ours.
    let host = format!("console.example:{port}");
    let (csrf, cookie) = {
        let form = c.http.get(c.url("/login")).header("host", &host).send().await.unwrap();
        let cookie = form.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
        let page = form.text().await.unwrap();
        (page.split("name=\"csrf\" value=\"").nth(1).unwrap().split('"').next().unwrap().to_owned(), cookie)
    };
    let form = [("name", "ana"), ("token", support::console::REVIEW_TOKEN), ("csrf", csrf.as_str())];
    let login = c.http.post(c.url("/login")).header("host", &host).header("origin", format!("http://{host}"));
    assert_eq!(login.header("cookie", cookie).form(&form).send().await.unwrap().status(), 303);
}
