//! The end-to-end bench's workload (`cargo bench --bench e2e`): the forecast tool's schema and spec, the echo
//! ToolRuntime behind it, the argument texts of each mode, and one call of each mode with the check of its answer.

use serde_json::{Value, json};
use tonic::transport::Channel;
use tonic::{Request, Response, Status};
use toolgate::pb::v1 as pb;
use toolgate::pb::v1::tool_gateway_client::ToolGatewayClient;
use toolgate::pb::v1::tool_runtime_client::ToolRuntimeClient;
use toolgate::pb::v1::tool_runtime_server::ToolRuntime;

/// The registered name of the tool.
pub const TOOL: &str = "forecast";

/// What a model writes for the forecast tool: 203 bytes, valid against `schema()` as the model sees it, sent byte
/// for byte by the direct and gateway modes.
pub const ARGUMENTS: &str = concat!(
    r#"{"city": "Villeurbanne", "days": 3, "units": "metric", "hourly": false, "#,
    r#""tags": ["rain", "wind", "uv-index", "pollen", "air-quality", "humidity", "pressure"], "#,
    r#""location": {"lat": 45.7667, "lon": 4.8803}}"#
);

/// The same call as a model gets it wrong: `City` for `city` and the string `"3"` for an integer. The gateway
/// repairs both (`key_renamed`, `string_to_integer`) on every call.
pub const BROKEN_ARGUMENTS: &str = concat!(
    r#"{"City": "Villeurbanne", "days": "3", "units": "metric", "hourly": false, "#,
    r#""tags": ["rain", "wind", "uv-index", "pollen", "air-quality", "humidity", "pressure"], "#,
    r#""location": {"lat": 45.7667, "lon": 4.8803}}"#
);

/// `Execute` calls the preflight sends before the load: one valid, one to repair.
pub const PREFLIGHT_EXECUTES: usize = 2;

/// The repair rules every repair-mode answer must report, in order.
pub const EXPECTED_REPAIRS: [&str; 2] = ["key_renamed", "string_to_integer"];

/// Six properties the model writes (a bounded string, an integer range, an enum, a boolean, an array of strings, a
/// nested object of numbers) and `user_id`, which the gateway injects from the call context.
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1, "maxLength": 80, "description": "City name"},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "units": {"type": "string", "enum": ["metric", "imperial"]},
            "hourly": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 8},
            "location": {
                "type": "object",
                "properties": {
                    "lat": {"type": "number", "minimum": -90, "maximum": 90},
                    "lon": {"type": "number", "minimum": -180, "maximum": 180}
                },
                "required": ["lat", "lon"],
                "additionalProperties": false
            },
            "user_id": {"type": "string", "minLength": 1, "description": "Whose preferences apply"}
        },
        "required": ["city", "days", "user_id"],
        "additionalProperties": false
    })
}

/// The tool with everything on that does not refuse: validation, the injected `user_id`, and a rate limit per user
/// far above what the bench sends (the session budgets are the gateway's, in `stack.rs`).
pub fn spec(runtime: &str) -> Value {
    json!({
        "name": TOOL,
        "description": "Weather forecast for a city",
        "input_schema": schema(),
        "backend": {"grpc": {"target": runtime}},
        "inject": [{"param": "user_id", "from": "user_id"}],
        "limits": {"rate": "1000000/s", "key": "USER"},
    })
}

/// Answers every call with its arguments, as content and as structured result.
pub struct Echo;

#[tonic::async_trait]
impl ToolRuntime for Echo {
    async fn invoke(&self, request: Request<pb::InvokeRequest>) -> Result<Response<pb::InvokeResponse>, Status> {
        let arguments = request.into_inner().arguments;
        let structured = arguments.clone();
        Ok(Response::new(pb::InvokeResponse {
            content: arguments,
            structured,
            is_error: false,
            error_message: "".into(),
        }))
    }
}

/// The three ways the workload is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// ToolRuntime `Invoke` straight to the echo server.
    Direct,
    /// `Execute` through the gateway with valid arguments.
    Gateway,
    /// `Execute` through the gateway with arguments it repairs.
    Repair,
    /// `Execute` with valid arguments through a second gateway, the same but with its web console on (it keeps
    /// every call for the console's calls and overview pages), or as `E2E_CONSOLE` says (`stack::Second`).
    Console,
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::Direct, Mode::Gateway, Mode::Repair, Mode::Console];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::Gateway => "gateway",
            Mode::Repair => "repair",
            Mode::Console => "console",
        }
    }
}

/// The calling agent of one load worker: its own user and session, as 64 agents would have.
pub fn context(worker: usize) -> pb::CallContext {
    pb::CallContext {
        tenant: String::new(),
        user_id: format!("user-{worker}"),
        session_id: format!("session-{worker}"),
        values: Default::default(),
    }
}

/// The clients of one load worker, over channels every worker shares, and its requests built once.
#[derive(Clone)]
pub struct Caller {
    runtime: ToolRuntimeClient<Channel>,
    gateway: ToolGatewayClient<Channel>,
    console: ToolGatewayClient<Channel>,
    invoke: pb::InvokeRequest,
    execute: pb::ExecuteRequest,
    repair: pb::ExecuteRequest,
    worker: usize,
}

/// Numbers every call sent: each gets an id of its own, as each of a model's tool calls does, so the gateway's
/// call-id record runs (and costs) as it does in production, and never answers from it.
static SENT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Caller {
    pub fn new(runtime: Channel, gateway: Channel, console: Channel, worker: usize) -> Caller {
        let execute = |arguments: &str| pb::ExecuteRequest {
            call: Some(pb::ToolCall { id: format!("call-{worker}"), name: TOOL.into(), arguments: arguments.into() }),
            context: Some(context(worker)),
            ..Default::default()
        };
        let invoke = pb::InvokeRequest {
            call_id: format!("call-{worker}"),
            tool: TOOL.into(),
            arguments: ARGUMENTS.into(),
            context: Some(context(worker)),
        };
        Caller {
            runtime: ToolRuntimeClient::new(runtime),
            gateway: ToolGatewayClient::new(gateway),
            console: ToolGatewayClient::new(console),
            invoke,
            execute: execute(ARGUMENTS),
            repair: execute(BROKEN_ARGUMENTS),
            worker,
        }
    }

    /// One call of `mode`, with the cheap per-call check of its answer; `Err` says what was wrong.
    pub async fn call(&mut self, mode: Mode) -> Result<(), String> {
        match mode {
            Mode::Direct => {
                let mut invoke = self.invoke.clone();
                invoke.call_id = self.next_id();
                let answer = self.runtime.invoke(invoke).await.map_err(|s| s.to_string())?;
                let answer = answer.into_inner();
                if answer.is_error || answer.content != ARGUMENTS {
                    return Err(format!("direct: unexpected answer {answer:?}"));
                }
                Ok(())
            }
            Mode::Gateway => check_pass(self.execute(false).await?),
            Mode::Repair => check_repaired(self.execute(true).await?),
            Mode::Console => check_pass(self.execute_on_console().await?),
        }
    }

    pub async fn execute(&mut self, broken: bool) -> Result<pb::ToolMessage, String> {
        let request = self.request(if broken { &self.repair } else { &self.execute });
        let answer = self.gateway.execute(request).await.map_err(|s| s.to_string())?;
        answer.into_inner().message.ok_or_else(|| "Execute answered without a message".into())
    }

    async fn execute_on_console(&mut self) -> Result<pb::ToolMessage, String> {
        let request = self.request(&self.execute);
        let answer = self.console.execute(request).await.map_err(|s| s.to_string())?;
        answer.into_inner().message.ok_or_else(|| "Execute answered without a message".into())
    }

    /// `template` with an id of its own.
    fn request(&self, template: &pb::ExecuteRequest) -> pb::ExecuteRequest {
        let mut request = template.clone();
        if let Some(call) = request.call.as_mut() {
            call.id = self.next_id();
        }
        request
    }
}

impl Caller {
    fn next_id(&self) -> String {
        format!("call-{}-{}", self.worker, SENT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

fn succeeded(message: &pb::ToolMessage) -> bool {
    message.status == pb::ToolStatus::Success as i32 && message.error.is_none() && !message.content.is_empty()
}

fn check_pass(message: pb::ToolMessage) -> Result<(), String> {
    if !succeeded(&message) || !message.repairs.is_empty() {
        return Err(format!("gateway: not a clean SUCCESS: {message:?}"));
    }
    Ok(())
}

fn check_repaired(message: pb::ToolMessage) -> Result<(), String> {
    if !succeeded(&message) || message.repairs.is_empty() {
        return Err(format!("repair: not a repaired SUCCESS: {message:?}"));
    }
    Ok(())
}

/// What the tool received through the gateway: the model's arguments plus the injected user.
fn expected_received(worker: usize) -> Value {
    let mut value: Value = serde_json::from_str(ARGUMENTS).expect("ARGUMENTS is JSON");
    value["user_id"] = json!(context(worker).user_id);
    value
}

/// Checks once, in depth, what the per-call checks take on trust: the tool got the arguments with the right user
/// injected, a valid call came back untouched, and the broken one was repaired by exactly the expected rules.
pub async fn preflight(caller: &mut Caller, worker: usize) -> Result<(), String> {
    caller.call(Mode::Direct).await?;
    let pass = caller.execute(false).await?;
    let received: Value = serde_json::from_str(&pass.structured).map_err(|e| format!("gateway: {e}"))?;
    if received != expected_received(worker) || pass.effective_arguments != ARGUMENTS {
        return Err(format!("gateway: the tool did not get the arguments with the user injected: {pass:?}"));
    }
    check_pass(pass)?;
    let repaired = caller.execute(true).await?;
    let received: Value = serde_json::from_str(&repaired.structured).map_err(|e| format!("repair: {e}"))?;
    let rules: Vec<&str> = repaired.repairs.iter().map(|r| r.rule.as_str()).collect();
    if received != expected_received(worker) || rules != EXPECTED_REPAIRS {
        return Err(format!("repair: expected {EXPECTED_REPAIRS:?} and the valid call, got {repaired:?}"));
    }
    check_repaired(repaired)
}
