//! The mixed load of the fleet fault tests, sent through HAProxy, and its tally: gRPC `Execute` calls each with an
//! id of its own (retried with that id after an error, a refusal marked retryable, or the client's deadline),
//! stateless MCP calls (2026-07-28) and registrations now and then. Reviews are in `fleet_review.rs`.

use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tonic::transport::Channel;
use toolgate::pb::v1::{self as pb, tool_gateway_client::ToolGatewayClient, tool_registry_client::ToolRegistryClient};

/// What the load saw, from the clients' side.
#[derive(Default)]
pub struct Tally {
    /// Logical calls (one id each), and the ones sent more than once.
    pub calls: u64,
    pub retried: u64,
    /// Answered with the tool's result, and the ids so answered.
    pub answered: Vec<String>,
    /// Ids whose every attempt was refused or lost (the client gave up).
    pub gave_up: u64,
    /// Refused attempts by kind: `KIND retryable` / `KIND final`, a gRPC status (`status:Unavailable`), or
    /// `deadline` (the client's own).
    pub refused: BTreeMap<String, u64>,
    /// When each attempt ended, and whether it succeeded.
    events: Vec<(Instant, bool)>,
    pub mcp: u64,
    pub mcp_ok: u64,
    /// 2025-11-25 calls on one session through the balancer: made, answered, and sessions opened (the first,
    /// then one after each session the fleet no longer knew).
    pub sessions: (u64, u64, u64),
    /// Registrations acknowledged: the tool's name and version.
    pub registered: Vec<(String, u64)>,
}

pub type Shared = Arc<Mutex<Tally>>;

impl Tally {
    fn attempt(&mut self, ok: bool, refusal: Option<String>) {
        self.events.push((Instant::now(), ok));
        if let Some(kind) = refusal {
            *self.refused.entry(kind).or_default() += 1;
        }
    }

    /// The longest time from a refusal to the next success, in ms.
    pub fn longest_refusal_window_ms(&self) -> u128 {
        let mut events = self.events.clone();
        events.sort();
        let (mut since, mut longest) = (None::<Instant>, 0);
        for (at, ok) in events {
            match (ok, since) {
                (false, None) => since = Some(at),
                (true, Some(start)) => {
                    longest = longest.max(at.duration_since(start).as_millis());
                    since = None;
                }
                _ => {}
            }
        }
        longest
    }

    pub fn refused_text(&self) -> String {
        let parts: Vec<String> = self.refused.iter().map(|(k, n)| format!("{k}={n}")).collect();
        format!("{{{}}}", parts.join(","))
    }
}

/// How one attempt ended.
enum Attempt {
    Ran,
    Final,
    Retry,
}

/// One caller: calls of `tool` until `until`, ids `{who}-{n}`. One call in eight sleeps 600 ms at the tool and is
/// sent with a 200 ms deadline first, so the client gives up and retries it under its id.
pub async fn caller(channel: Channel, who: String, tool: &'static str, until: Instant, tally: Shared) {
    let mut client = ToolGatewayClient::new(channel);
    let mut n = 0;
    while Instant::now() < until {
        n += 1;
        let id = format!("{who}-{n}");
        let slow = n % 8 == 0;
        let args = json!({"nonce": id, "sleep_ms": if slow { 600 } else { 5 }}).to_string();
        let mut deadline = Duration::from_millis(if slow { 200 } else { 3000 });
        tally.lock().unwrap().calls += 1;
        let mut done = false;
        for attempt in 0..8 {
            if attempt == 1 {
                tally.lock().unwrap().retried += 1;
            }
            match execute(&mut client, &id, tool, &args, deadline, &tally).await {
                Attempt::Ran | Attempt::Final => {
                    done = true;
                    break;
                }
                Attempt::Retry => tokio::time::sleep(Duration::from_millis(100 * (attempt + 1))).await,
            }
            deadline = Duration::from_millis(3000);
        }
        if !done {
            tally.lock().unwrap().gave_up += 1;
        }
    }
}

async fn execute(
    client: &mut ToolGatewayClient<Channel>,
    id: &str,
    tool: &str,
    args: &str,
    deadline: Duration,
    tally: &Shared,
) -> Attempt {
    let call = pb::ToolCall { id: id.into(), name: tool.into(), arguments: args.into() };
    let mut request = tonic::Request::new(pb::ExecuteRequest { call: Some(call), ..Default::default() });
    request.set_timeout(deadline);
    let answer = tokio::time::timeout(deadline + Duration::from_secs(2), client.execute(request)).await;
    let mut tally = tally.lock().unwrap();
    let message = match answer {
        Err(_) => {
            tally.attempt(false, Some("hung".into()));
            return Attempt::Retry;
        }
        Ok(Err(status))
            if status.code() == tonic::Code::DeadlineExceeded || status.code() == tonic::Code::Cancelled =>
        {
            tally.attempt(false, Some("deadline".into()));
            return Attempt::Retry;
        }
        Ok(Err(status)) => {
            tally.attempt(false, Some(format!("status:{:?}", status.code())));
            return Attempt::Retry;
        }
        Ok(Ok(response)) => response.into_inner().message.expect("a message"),
    };
    let Some(error) = message.error else {
        tally.attempt(true, None);
        tally.answered.push(id.to_owned());
        return Attempt::Ran;
    };
    let kind = pb::ErrorKind::try_from(error.kind).map_or("?".into(), |k| k.as_str_name().to_owned());
    // A call still running elsewhere answers TIMEOUT: the client waits and asks again.
    let again = error.retryable || message.content.contains("still running");
    tally.attempt(false, Some(format!("{kind} {}", if error.retryable { "retryable" } else { "final" })));
    if again { Attempt::Retry } else { Attempt::Final }
}

/// Registers `reg-{n}` every 1.2 s until `until`, through the balancer; the acknowledged ones are in the tally.
pub async fn registrar(channel: Channel, tool_url: String, until: Instant, tally: Shared) {
    let mut registry = ToolRegistryClient::new(channel);
    let mut n = 0;
    while Instant::now() < until {
        n += 1;
        let spec = json!({"name": format!("reg-{n}"), "input_schema": {"type": "object"},
            "backend": {"http": {"url": tool_url}}});
        let spec: toolgate::registry::ToolSpec = serde_json::from_value(spec).unwrap();
        let mut request = tonic::Request::new(pb::RegisterToolRequest { spec: Some(pb::ToolSpec::from(&spec)) });
        request.set_timeout(Duration::from_secs(3));
        let answer = tokio::time::timeout(Duration::from_secs(5), registry.register_tool(request)).await;
        match answer.unwrap_or_else(|_| Err(tonic::Status::deadline_exceeded("no answer within 5 s"))) {
            Ok(done) => {
                let version = done.into_inner().tool.expect("a tool").version;
                tally.lock().unwrap().registered.push((format!("reg-{n}"), version));
            }
            Err(status) => {
                *tally.lock().unwrap().refused.entry(format!("register:{:?}", status.code())).or_default() += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(1200)).await;
    }
}

/// Stateless MCP (2026-07-28) `tools/call`s of `tool` through the balancer's `/mcp`, one every 150 ms.
pub async fn mcp_caller(url: String, tool: &'static str, until: Instant, tally: Shared) {
    toolgate::tls::install_provider(); // the process-wide rustls provider reqwest needs
    let http = reqwest::Client::new();
    let mut n = 0;
    while Instant::now() < until {
        n += 1;
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}});
        let body = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"_meta": meta, "name": tool, "arguments": {"nonce": format!("mcp-{n}")}}});
        let sent = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .json(&body)
            .timeout(Duration::from_secs(3))
            .send()
            .await;
        let text = match sent {
            Ok(r) => r.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        let ok = text.contains("\"result\"") && !text.contains("\"isError\":true");
        {
            let mut tally = tally.lock().unwrap();
            tally.mcp += 1;
            if ok {
                tally.mcp_ok += 1;
            } else {
                *tally.refused.entry("mcp".into()).or_default() += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

/// A 2025-11-25 host through the balancer: opens a session, then calls `tool` on it every 150 ms until `until`,
/// each request going to whichever gateway the balancer picks. A session the fleet answers 404 is opened again
/// (counted); every other failure is counted and the same session is used again.
pub async fn mcp_session_caller(url: String, tool: &'static str, until: Instant, tally: Shared) {
    toolgate::tls::install_provider(); // the process-wide rustls provider reqwest needs
    let http = reqwest::Client::new();
    let (mut session, mut n) = (None::<String>, 0u64);
    while Instant::now() < until {
        n += 1;
        let Some(id) = session.clone() else {
            session = open_session(&http, &url).await;
            if session.is_some() {
                tally.lock().unwrap().sessions.2 += 1;
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
            continue;
        };
        let body = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": tool, "arguments": {"nonce": format!("mcp-session-{n}")}}});
        let sent = mcp_post(&http, &url, Some(&id)).json(&body).send().await;
        let (status, text) = match sent {
            Ok(r) => (r.status().as_u16(), r.text().await.unwrap_or_default()),
            Err(_) => (0, String::new()),
        };
        let ok = status == 200 && text.contains("\"result\"") && !text.contains("\"isError\":true");
        {
            let mut tally = tally.lock().unwrap();
            tally.sessions.0 += 1;
            if ok {
                tally.sessions.1 += 1;
            } else {
                *tally.refused.entry(format!("mcp-session:{status}")).or_default() += 1;
            }
        }
        if status == 404 {
            session = None;
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

/// `initialize` and `notifications/initialized` on 2025-11-25: the session's id, `None` if refused.
async fn open_session(http: &reqwest::Client, url: &str) -> Option<String> {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "fleet", "version": "1"}}});
    let opened = mcp_post(http, url, None).json(&initialize).send().await.ok()?;
    let id = opened.headers().get("mcp-session-id")?.to_str().ok()?.to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let done = mcp_post(http, url, Some(&id)).json(&initialized).send().await.ok()?;
    done.status().is_success().then_some(id)
}

fn mcp_post(http: &reqwest::Client, url: &str, session: Option<&str>) -> reqwest::RequestBuilder {
    let request =
        http.post(url).header("accept", "application/json, text/event-stream").timeout(Duration::from_secs(3));
    match session {
        Some(id) => request.header("mcp-session-id", id).header("mcp-protocol-version", "2025-11-25"),
        None => request,
    }
}
