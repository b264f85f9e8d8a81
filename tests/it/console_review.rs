//! The review page as a careful reviewer reads it, over real HTTP against a real gateway: a model's attempt to set
//! an injected parameter flagged at the top, the diff from what it wrote to what the tool will receive, the tool's
//! description and how long its caller waits; every problem of an edit at once; a confirmation after a decision;
//! who decided first, and what, when a second reviewer comes late; a rejected call's page, which never says the
//! tool received anything; and one call pending under several call ids, listed once with its count.

use crate::support::console::{Console, review_path, text};
use crate::support::review::{PROMPT, defer, execute, request};
use std::time::Duration;
use toolgate::pb::v1::{ReviewMode, ToolStatus};

/// The part of `page` inside the element whose id is `id` (up to its first closing tag of `tag`).
fn element<'p>(page: &'p str, tag: &str, id: &str) -> &'p str {
    let open = format!("id=\"{id}\"");
    let rest = page.split(&open).nth(1).unwrap_or_else(|| panic!("no #{id} in {page}"));
    let inside = rest.split_once('>').map_or(rest, |(_, inside)| inside);
    inside.split(&format!("</{tag}>")).next().unwrap()
}

#[tokio::test]
async fn an_attempt_to_set_an_injected_value_is_flagged_at_the_top_beside_the_diff() {
    let c = Console::start().await;
    let written = "{'service': 'api', 'replicas': '2', 'user_id': 'mallory'}";
    assert_eq!(defer(c.gw.gateway.clone(), "o1", written).await.status(), ToolStatus::PendingReview);
    let session = c.login("ana").await;
    let page = c.get_with(&session.cookie, &review_path("o1")).await;

    let alarm = text(element(&page, "div", "override"));
    assert!(alarm.contains("/user_id") && alarm.contains(r#""mallory""#) && alarm.contains("alice"), "{alarm}");
    let (at_alarm, at_facts) = (page.find("id=\"override\"").unwrap(), page.find("class=\"facts\"").unwrap());
    assert!(at_alarm < at_facts, "the alarm comes before everything else about the call");
    let description = element(&page, "p", "description");
    assert!(description.contains("Deploys a service"), "the tool's description: {description}");

    // Values, not syntax: the model's Python quotes are read as the gateway read them, so the diff shows the two
    // changes of value and the injected user, and keeps the service line.
    let diff: Vec<String> = text(element(&page, "pre", "diff"))
        .split("</span>")
        .filter_map(|l| l.split_once('>').map(|(_, line)| line.to_owned()))
        .collect();
    for line in
        [r#"-   "replicas": "2","#, r#"-   "user_id": "mallory""#, r#"+   "replicas": 2,"#, r#"+   "user_id": "alice""#]
    {
        assert!(diff.iter().any(|l| l == line), "{line:?} in the diff: {diff:#?}");
    }
    assert!(diff.iter().any(|l| l == r#"    "service": "api","#), "unchanged lines stay: {diff:#?}");
    let will_run = text(element(&page, "pre", "will-run"));
    assert!(will_run.contains(r#""user_id": "alice""#) && !will_run.contains("mallory"), "{will_run}");
    let caller = text(element(&page, "dd", "caller"));
    assert!(caller.starts_with("does not wait"), "a deferred caller asks again: {caller}");

    // A call whose model set nothing it may not: no alarm.
    defer(c.gw.gateway.clone(), "o2", r#"{"service": "api", "replicas": 2}"#).await;
    let page = c.get_with(&session.cookie, &review_path("o2")).await;
    assert!(!page.contains("id=\"override\""), "{page}");
}

#[tokio::test]
async fn a_waiting_caller_shows_how_long_it_still_waits() {
    let c = Console::start().await;
    let waiting = request("w1", r#"{"service": "api", "replicas": 2}"#, ReviewMode::Wait, Duration::from_secs(300));
    let call = tokio::spawn(execute(c.gw.gateway.clone(), waiting));
    let session = c.login("ana").await;
    let mut caller = String::new();
    for _ in 0..200 {
        let page = c.http.get(c.url(&review_path("w1"))).header("cookie", &session.cookie).send().await.unwrap();
        if page.status() == 200 {
            caller = text(element(&page.text().await.unwrap(), "dd", "caller"));
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // Its gRPC deadline is five minutes away: it waits about that long, then is told the call is pending.
    assert!(caller.starts_with("waits 4 min") || caller.starts_with("waits 5 min"), "{caller}");
    assert!(caller.contains("UTC") && caller.contains("pending"), "{caller}");
    call.abort();
}

#[tokio::test]
async fn an_edit_reports_every_problem_at_once() {
    let c = Console::start().await;
    defer(c.gw.gateway.clone(), "m1", r#"{"service": "api", "replicas": 2}"#).await;
    let session = c.login("bo").await;
    // Three problems: an injected parameter set, a replica count below the minimum, and no service.
    let edit = [("call_id", "m1"), ("action", "edit"), ("arguments", r#"{"replicas": 0, "user_id": "root"}"#)];
    let (status, page) = c.decide(&session, &session.csrf, &edit).await;
    assert_eq!(status, 422);
    let error = text(element(&page, "div", "edit-error"));
    assert!(error.contains("3 problems"), "{error}");
    for (path, says) in [("/user_id", "set by the gateway"), ("/replicas", "minimum"), ("(the arguments)", "service")] {
        let line = error.lines().find(|l| l.contains(path)).unwrap_or_else(|| panic!("{path} in {error}"));
        assert!(line.contains(says), "{path}: {line}");
    }
    assert_eq!(c.runs(), 0, "nothing ran");
}

#[tokio::test]
async fn a_decision_is_confirmed_and_a_late_reviewer_learns_who_decided_first_and_what() {
    let c = Console::start().await;
    defer(c.gw.gateway.clone(), "d1", r#"{"service": "api", "replicas": 2}"#).await;
    let (ana, bo) = (c.login("ana").await, c.login("bo").await);
    let edit = [("call_id", "d1"), ("action", "edit"), ("arguments", r#"{"service": "web", "replicas": 3}"#)];
    let response = c.post_decide(&ana, &ana.csrf, &edit).await;
    assert_eq!(response.status(), 303);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let confirmed = text(element(&c.get_with(&ana.cookie, &location).await, "p", "confirmation"));
    assert!(confirmed.contains("deploy call d1") && confirmed.contains("by ana"), "{confirmed}");
    assert!(confirmed.contains(r#"approved with the arguments {"service":"web","replicas":3}"#), "{confirmed}");

    // Bo still has the page open, and rejects.
    let reject = [("call_id", "d1"), ("action", "reject"), ("feedback", "no")];
    let (status, page) = c.decide(&bo, &bo.csrf, &reject).await;
    assert_eq!(status, 409);
    let page = text(&page);
    assert!(page.contains("approved with the arguments") && page.contains("by ana"), "who and what: {page}");

    // A link naming a call that was never decided confirms nothing.
    defer(c.gw.gateway.clone(), "d2", r#"{"service": "api", "replicas": 2}"#).await;
    let page = c.get_with(&ana.cookie, "/reviews?decided=d2&tenant=acme").await;
    assert!(!page.contains("id=\"confirmation\""), "{page}");
}

#[tokio::test]
async fn a_rejected_calls_page_never_says_the_tool_received_it() {
    let c = Console::start().await;
    defer(c.gw.gateway.clone(), "j1", r#"{"service": "db", "replicas": 9}"#).await;
    let session = c.login("cy").await;
    let (status, _) = c.decide(&session, &session.csrf, &[("call_id", "j1"), ("action", "reject")]).await;
    assert_eq!(status, 303);
    let outcome = defer(c.gw.gateway.clone(), "j1", r#"{"service": "db", "replicas": 9}"#).await;
    assert_eq!(outcome.status(), ToolStatus::Error);
    let calls = c.get_with(&session.cookie, "/calls?kind=REJECTED").await;
    let row = calls.split("data-call-id=\"j1\"").nth(1).expect("the rejected call is listed");
    let link = row.split("href=\"").nth(1).unwrap().split('"').next().unwrap();
    let page = text(&c.get_with(&session.cookie, link).await);
    let heading = element(&page, "h2", "effective-heading");
    assert!(heading.contains("What the reviewer rejected"), "{heading}");
    assert!(page.contains("The tool never ran.") && !page.contains("What the tool received"), "{page}");
    assert_eq!(c.runs(), 0);
}

/// The `<tr>` of `rows` whose call id is `id`; `None` when no row has it.
fn row<'p>(rows: &'p str, id: &str) -> Option<&'p str> {
    let rest = rows.split(&format!("data-call-id=\"{id}\"")).nth(1)?;
    rest.split("</tr>").next()
}

#[tokio::test]
async fn identical_pending_calls_are_one_row_and_each_names_the_others() {
    let c = Console::start().await;
    // An agent sending one call three times, under new call ids, each written its own way.
    let same = [
        r#"{"service": "pay", "replicas": 3}"#,
        r#"{"replicas":3,"service":"pay"}"#,
        "{ \"service\" : \"pay\",\n \"replicas\" : 3 }",
    ];
    for (id, arguments) in ["t1", "t2", "t3"].into_iter().zip(same) {
        assert_eq!(defer(c.gw.gateway.clone(), id, arguments).await.status(), ToolStatus::PendingReview);
    }
    defer(c.gw.gateway.clone(), "t4", r#"{"service": "pay", "replicas": 4}"#).await;
    let mut bob = request("t5", same[0], ReviewMode::Defer, PROMPT);
    bob.get_mut().context.as_mut().unwrap().user_id = "bob".into();
    assert_eq!(execute(c.gw.gateway.clone(), bob).await.status(), ToolStatus::PendingReview);

    let session = c.login("ana").await;
    let rows = c.get_with(&session.cookie, "/reviews/rows").await;
    assert_eq!(rows.matches("<tr class=\"pending\"").count(), 3, "t1 for three, t4, bob's t5: {rows}");
    let first = row(&rows, "t1").expect("the oldest stands for the three");
    assert!(first.contains("<span class=\"identical\">3 identical calls waiting</span>"), "{first}");
    assert!(first.contains(&format!("href=\"{}\"", review_path("t1").replace('&', "&amp;"))), "{first}");
    assert!(row(&rows, "t2").is_none() && row(&rows, "t3").is_none(), "{rows}");
    for other in ["t4", "t5"] {
        let single = row(&rows, other).unwrap_or_else(|| panic!("{other} has a row of its own: {rows}"));
        assert!(single.contains("data-identical=\"1\"") && !single.contains("identical calls"), "{other}: {single}");
    }
    assert!(row(&rows, "t5").is_some_and(|r| r.contains("<td>bob</td>")), "bob's own call: {rows}");

    let page = c.get_with(&session.cookie, &review_path("t1")).await;
    let notice = text(element(&page, "div", "identical"));
    assert!(notice.contains("2 other identical calls wait for review"), "{notice}");
    for id in ["t2", "t3"] {
        assert!(notice.contains(&format!("call_id={id}\">{id}</a>")), "{id} linked: {notice}");
    }
    assert!(!notice.contains("t1") && !notice.contains("t4") && !notice.contains("t5"), "{notice}");
    let page = c.get_with(&session.cookie, &review_path("t4")).await;
    assert!(!page.contains("id=\"identical\""), "a call like no other: {page}");

    // Deciding stays per call: approving the oldest leaves the two others pending, now one row for two.
    let (status, _) = c.decide(&session, &session.csrf, &[("call_id", "t1"), ("action", "approve")]).await;
    assert_eq!(status, 303);
    let rows = c.get_with(&session.cookie, "/reviews/rows").await;
    let next = row(&rows, "t2").expect("the oldest still pending stands for them now");
    assert!(next.contains("<span class=\"identical\">2 identical calls waiting</span>"), "{next}");
    let page = c.get_with(&session.cookie, &review_path("t3")).await;
    let notice = text(element(&page, "div", "identical"));
    assert!(notice.contains("1 other identical call waits for review") && notice.contains(">t2</a>"), "{notice}");
}
