//! The console in a real headless Chromium, driven over WebDriver (Debian's `chromium` and `chromium-driver`):
//! an agent's Execute waits on review; the browser logs in, sees the call appear without a reload, sees the
//! model's attempt to set `user_id` flagged above a diff of what will run, sends an edit with three problems and
//! sees all three, edits right and approves, sees the decision confirmed, and the Execute returns the edited
//! call's result. A second call is rejected in the
//! browser and its caller gets the feedback. Arguments holding a script show as text. An operator with the admin
//! token opens the tools page. Screenshots of the pending reviews, a review, the overview, the tools and one tool
//! go to `target/console-screenshots/`.

use crate::support;
use crate::support::console::{ADMIN_TOKEN, Console, REVIEW_TOKEN};
use crate::support::review::{defer, execute, request};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};
use toolgate::pb::v1::{ErrorKind, ReviewMode, ToolStatus};

/// The browser and its driver: `$CHROMIUM` and `$CHROMEDRIVER`, else Debian's.
fn binary(var: &str, default: &str) -> String {
    let path = std::env::var(var).unwrap_or_else(|_| default.to_owned());
    assert!(
        std::path::Path::new(&path).is_file(),
        "{path} is missing: install Debian's chromium and chromium-driver (apt-get install chromium chromium-driver), \
         or point {var} at one (.ci/run installs them)"
    );
    path
}

/// chromedriver on a free port, and a WebDriver session of headless Chromium with a profile of its own.
async fn browser(profile: &std::path::Path) -> (Child, Client) {
    let driver = binary("CHROMEDRIVER", "/usr/bin/chromedriver");
    let chromium = binary("CHROMIUM", "/usr/bin/chromium");
    let port = support::free_addr().port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("chromedriver starts");
    let args = [
        "--headless=new".to_owned(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--disable-dev-shm-usage".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--no-first-run".into(),
        "--window-size=1280,900".into(),
        format!("--user-data-dir={}", profile.display()),
    ];
    let options = json!({"binary": chromium, "args": args});
    let capabilities = serde_json::Map::from_iter([("goog:chromeOptions".to_owned(), options)]);
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let url = format!("http://127.0.0.1:{port}");
    for _ in 0..100 {
        match ClientBuilder::new(connector.clone()).capabilities(capabilities.clone()).connect(&url).await {
            Ok(client) => return (child, client),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    panic!("no WebDriver session from chromedriver at {url}");
}

/// Writes `arguments` in the review's editor and approves the call with them.
async fn approve_with(browser: &Client, arguments: &str) {
    let editor = browser.find(Locator::Id("arguments")).await.unwrap();
    editor.clear().await.unwrap();
    editor.send_keys(arguments).await.unwrap();
    browser.find(Locator::Id("edit")).await.unwrap().click().await.unwrap();
}

/// A screenshot of the whole page, however long: the window is made as tall as the page first.
async fn full_page(browser: &Client, name: &str) {
    let height = browser.execute("return document.documentElement.scrollHeight", vec![]).await.unwrap();
    let height = (height.as_u64().unwrap_or(900) + 120).clamp(900, 4000) as u32;
    browser.set_window_size(1280, height).await.unwrap();
    std::fs::write(screenshots().join(name), browser.screenshot().await.unwrap()).unwrap();
    browser.set_window_size(1280, 900).await.unwrap();
}

fn screenshots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target").join("console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Waits until the pending list shows `call_id` (the page refreshes it itself), at most ten seconds.
async fn until_listed(browser: &Client, call_id: &str) {
    let row = format!("tr[data-call-id=\"{call_id}\"]");
    let wait = browser.wait().at_most(Duration::from_secs(10));
    wait.for_element(Locator::Css(&row)).await.unwrap_or_else(|e| panic!("{call_id} never showed up: {e}"));
}

async fn log_in(browser: &Client, c: &Console, name: &str, token: &str) {
    browser.goto(&c.url("/login")).await.unwrap();
    browser.find(Locator::Css("input[name=name]")).await.unwrap().send_keys(name).await.unwrap();
    browser.find(Locator::Css("input[name=token]")).await.unwrap().send_keys(token).await.unwrap();
    browser.find(Locator::Css("form.login button")).await.unwrap().click().await.unwrap();
}

async fn open_review(browser: &Client, call_id: &str) {
    let link = format!("tr[data-call-id=\"{call_id}\"] a");
    browser.find(Locator::Css(&link)).await.unwrap().click().await.unwrap();
    browser.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("will-run")).await.unwrap();
}

#[tokio::test]
#[ignore = "needs chromium and chromium-driver; .ci/run installs them and runs it"]
async fn a_reviewer_edits_and_approves_one_call_and_rejects_another_in_the_browser() {
    let c = Console::start_with_admin().await;
    let profile = tempfile::tempdir().unwrap();
    let (_driver, browser) = browser(profile.path()).await;

    log_in(&browser, &c, "Ana", REVIEW_TOKEN).await;
    let table = browser.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("table.reviews")).await;
    let table = match table {
        Ok(table) => table,
        Err(e) => panic!(
            "the login leads to the pending reviews: {e}; at {:?}: {}",
            browser.current_url().await,
            browser.source().await.unwrap()
        ),
    };
    browser.find(Locator::Css("nav a[href='/overview']")).await.expect("the menu, logged in");
    assert!(browser.find(Locator::Css("nav a[href='/tools']")).await.is_err(), "a reviewer has no tools page");

    // The agent's call waits; the page, loaded before it, shows it without a reload (its table is the same one).
    let agent = c.gw.gateway.clone();
    // Written as models often do: Python-style quotes, a trailing comma, a string for an integer; and, as a
    // model told to by something in its context, a user_id of someone else's.
    let args = "{'service': 'api', 'replicas': '2', 'user_id': 'mallory',}";
    let first = tokio::spawn(execute(agent.clone(), request("b1", args, ReviewMode::Wait, Duration::from_secs(60))));
    until_listed(&browser, "b1").await;
    assert!(table.text().await.expect("the same table, not a reloaded page").contains("deploy"));
    std::fs::write(screenshots().join("pending-reviews.png"), browser.screenshot().await.unwrap()).unwrap();

    open_review(&browser, "b1").await;
    let alarm = browser.find(Locator::Id("override")).await.expect("the attempt is flagged").text().await.unwrap();
    assert!(alarm.contains("/user_id") && alarm.contains("mallory") && alarm.contains("alice"), "{alarm}");
    let added = browser.find_all(Locator::Css("#diff .added")).await.unwrap();
    let mut diff = Vec::new();
    for line in added {
        diff.push(line.text().await.unwrap());
    }
    assert!(diff.iter().any(|l| l.contains(r#""user_id": "alice""#)), "the diff shows the injected user: {diff:?}");
    full_page(&browser, "review.png").await;

    // An edit with three problems: all three come back at once, and nothing is decided.
    approve_with(&browser, r#"{"replicas": 0, "user_id": "root"}"#).await;
    let problems = browser.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("#edit-error li")).await;
    problems.expect("the edit's problems are listed");
    assert_eq!(browser.find_all(Locator::Css("#edit-error li")).await.unwrap().len(), 3, "every problem at once");
    full_page(&browser, "review-edit-problems.png").await;

    approve_with(&browser, r#"{"service": "api", "replicas": 5}"#).await;
    let confirmed = browser.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("confirmation")).await;
    let confirmed = confirmed.expect("the decision is confirmed").text().await.unwrap();
    assert!(confirmed.contains("deploy call b1") && confirmed.contains("by Ana"), "{confirmed}");
    std::fs::write(screenshots().join("review-confirmed.png"), browser.screenshot().await.unwrap()).unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), first).await.unwrap().unwrap();
    assert_eq!(answer.status(), ToolStatus::Success, "{}", answer.content);
    let ran: Value = serde_json::from_str(&answer.content).unwrap();
    assert_eq!(ran, json!({"service": "api", "replicas": 5, "user_id": "alice"}), "the edited call ran");

    let second = tokio::spawn(execute(agent.clone(), request("b2", args, ReviewMode::Wait, Duration::from_secs(60))));
    until_listed(&browser, "b2").await;
    open_review(&browser, "b2").await;
    browser.find(Locator::Id("feedback")).await.unwrap().send_keys("Not today: the release is frozen.").await.unwrap();
    browser.find(Locator::Id("reject")).await.unwrap().click().await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), second).await.unwrap().unwrap();
    assert_eq!(answer.error.as_ref().map(|e| e.kind()), Some(ErrorKind::Rejected));
    assert!(answer.content.contains("Not today: the release is frozen."), "{}", answer.content);
    assert_eq!(c.runs(), 1, "the rejected call never ran");

    // A call whose arguments hold a script: shown as text, never run by the page.
    let script =
        r#"{"service": "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"}"#;
    assert_eq!(defer(agent, "b3", script).await.status(), ToolStatus::PendingReview);
    until_listed(&browser, "b3").await;
    open_review(&browser, "b3").await;
    let written = browser.find(Locator::Id("written")).await.unwrap().text().await.unwrap();
    assert!(written.contains("<script>document.title='pwned'</script>"), "shown as text: {written}");
    let title = browser.title().await.unwrap();
    assert!(!title.contains("pwned") && title.contains("deploy"), "no script ran: {title}");

    browser.goto(&c.url("/overview")).await.unwrap();
    let chart =
        browser.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("section[data-tool=deploy] svg"));
    chart.await.expect("the overview charts the reviewed tool");
    let times = browser.find_all(Locator::Css("section[data-tool=deploy] svg.calls .x-label")).await.unwrap();
    let first = times.first().expect("the time axis has labels").text().await.unwrap();
    assert!(first.len() == 5 && first.as_bytes()[2] == b':', "a time, HH:MM: {first:?}");
    std::fs::write(screenshots().join("overview.png"), browser.screenshot().await.unwrap()).unwrap();

    // An operator with the admin token: the tools page, the reviewed tool up (its tool server answered), and the
    // tool in full with the schema the model sees beside the full one.
    browser.find(Locator::Css("form.logout button")).await.unwrap().click().await.unwrap();
    log_in(&browser, &c, "Olga", ADMIN_TOKEN).await;
    let tools = browser.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("nav a[href='/tools']"));
    tools.await.expect("an admin's menu has the tools page").click().await.unwrap();
    let row = browser.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("tr[data-tool=deploy]")).await;
    assert_eq!(row.unwrap().attr("data-health").await.unwrap().as_deref(), Some("up"));
    std::fs::write(screenshots().join("tools.png"), browser.screenshot().await.unwrap()).unwrap();
    browser.find(Locator::Css("tr[data-tool=deploy] a")).await.unwrap().click().await.unwrap();
    let model = browser.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("model-schema")).await;
    let model = model.unwrap().text().await.unwrap();
    let full = browser.find(Locator::Id("full-schema")).await.unwrap().text().await.unwrap();
    assert!(!model.contains("user_id") && full.contains("user_id"), "model: {model}; full: {full}");
    std::fs::write(screenshots().join("tool.png"), browser.screenshot().await.unwrap()).unwrap();
    browser.close().await.unwrap();
}
