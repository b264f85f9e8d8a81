//! The command line: `serve`, and the client and offline commands, one file each.

/// `println!` for a command's output, through `emit`: returns from the command when the output's reader is gone.
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::emit(format_args!($($arg)*))? };
}

mod call;
mod definitions;
mod health;
mod mcp;
mod repair;
mod review;
mod serve;
mod text_calls;
mod tools;

use crate::tls::{ClientFiles, ClientTls};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::{Interceptor, interceptor::InterceptedService};
use tonic::transport::Channel;

#[derive(Debug, Parser)]
#[command(name = "toolgate", version, about = "Resolve, repair, validate and run the tool calls of LLM agents")]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the gateway.
    Serve(serve::ServeArgs),
    /// Register, list, show and delete tools.
    Tools(tools::ToolsArgs),
    /// Run one tool call through the gateway and print the ToolMessage as JSON.
    Call(call::CallArgs),
    /// Print the tool definitions a model should be bound to.
    Definitions(definitions::DefinitionsArgs),
    /// Offline, no server: run JSON-lines tool calls (fields id, tools, call) from stdin through the pipeline.
    Repair(repair::RepairArgs),
    /// Offline, no server: find the calls a model wrote in its text (JSON lines with id, tools, text on stdin).
    CallsFromText(text_calls::TextCallsArgs),
    /// List the calls waiting for human review, and approve, edit or reject them.
    Review(review::ReviewArgs),
    /// Add, list and remove the MCP servers whose tools the gateway imports.
    Mcp(mcp::McpArgs),
    /// Exit 0 when the gateway answers that it is serving (grpc.health.v1), 1 otherwise: a probe's command.
    Health(health::HealthArgs),
}

/// Where client commands find the gateway, the token its plane may require, and TLS to it.
#[derive(Debug, Clone, clap::Args)]
struct ServerArg {
    /// The gateway's address: host:port, http://host:port, https://host:port or unix:/path/to.sock.
    #[arg(long, global = true, env = "TOOLGATE_SERVER", default_value = "http://127.0.0.1:50051")]
    server: String,
    /// Bearer token, for a gateway whose admin or data plane is closed with one.
    #[arg(long, global = true, env = "TOOLGATE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// For https://: the CA bundle (PEM) the gateway's certificate is checked against [default: the system's].
    #[arg(long, global = true, env = "TOOLGATE_CA")]
    ca: Option<PathBuf>,
    /// For https:// with mTLS: a client certificate (PEM), with --key.
    #[arg(long, global = true, env = "TOOLGATE_CERT")]
    cert: Option<PathBuf>,
    /// The client certificate's key (PEM).
    #[arg(long, global = true, env = "TOOLGATE_KEY")]
    key: Option<PathBuf>,
}

/// A channel that sends the bearer token, if one was given, on every request.
type Authed = InterceptedService<Channel, Bearer>;

impl ServerArg {
    async fn channel(&self) -> Result<Authed, String> {
        let channel = self.connect().await?;
        let header = match &self.token {
            Some(token) => {
                Some(format!("Bearer {token}").parse().map_err(|_| "--token has characters a header cannot carry")?)
            }
            None => None,
        };
        Ok(InterceptedService::new(channel, Bearer(header)))
    }

    /// A channel to the gateway, with no token.
    async fn connect(&self) -> Result<Channel, String> {
        let server = &self.server;
        let address = if server.contains("://") || server.starts_with("unix:") {
            server.clone()
        } else {
            format!("http://{server}")
        };
        let files = ClientFiles { ca: self.ca.clone(), cert: self.cert.clone(), key: self.key.clone() };
        let tls = Arc::new(ClientTls::load(files).map_err(|e| format!("--ca, --cert, --key: {e}"))?);
        crate::wire::channel::connect(&address, &tls)
            .await
            .map_err(|e| format!("cannot reach the gateway at {address}: {e}"))
    }
}

#[derive(Clone)]
struct Bearer(Option<MetadataValue<Ascii>>);

impl Interceptor for Bearer {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request.metadata_mut().insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// Writes one line of a command's output. A reader that went away (`toolgate tools list | head`) is `CLOSED`, on
/// which the program ends quietly, with the status of a process a closed pipe stops, as a Unix tool ends.
fn emit(line: std::fmt::Arguments<'_>) -> Result<(), String> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}").and_then(|()| stdout.flush()).map_err(output_error)
}

/// A failed write of the output: `CLOSED` when its reader went away.
fn output_error(err: std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::BrokenPipe => CLOSED.to_owned(),
        _ => format!("cannot write the output: {err}"),
    }
}

/// The error of a command whose output's reader went away; said by no one.
const CLOSED: &str = "the output's reader went away";

/// The exit status when the output's reader went away (128 + SIGPIPE).
const EXIT_CLOSED_PIPE: u8 = 141;

/// The exit status of `toolgate call` when the call's ToolMessage is not a success.
const EXIT_CALL_FAILED: u8 = 3;

/// Runs the command. Exit status: 0 done; 1 the command failed (its error on stderr); 2 a usage error (clap);
/// 3 `toolgate call` answered a ToolMessage that is not a success (printed as for any); 141 the output's reader
/// went away.
pub fn main(cli: Cli) -> ExitCode {
    init_logging();
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime starts");
    let result = runtime.block_on(async {
        let done = |result: Result<(), String>| result.map(|()| ExitCode::SUCCESS);
        match cli.command {
            Command::Serve(args) => done(serve::run(args).await),
            Command::Tools(args) => done(tools::run(args).await),
            Command::Call(args) => call::run(args).await.map(|succeeded| match succeeded {
                true => ExitCode::SUCCESS,
                false => ExitCode::from(EXIT_CALL_FAILED),
            }),
            Command::Definitions(args) => done(definitions::run(args).await),
            Command::Repair(args) => done(repair::run(args)),
            Command::CallsFromText(args) => done(text_calls::run(args)),
            Command::Review(args) => done(review::run(args).await),
            Command::Mcp(args) => done(mcp::run(args).await),
            Command::Health(args) => done(health::run(args).await),
        }
    });
    result.unwrap_or_else(|err| match err.as_str() {
        CLOSED => ExitCode::from(EXIT_CLOSED_PIPE),
        _ => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    })
}

fn init_logging() {
    // The MCP SDK logs every session it opens or serves at INFO: one line per MCP host connecting is noise.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,rmcp=warn".into());
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(std::io::stderr).try_init();
}

fn status_text(status: tonic::Status) -> String {
    format!("{:?}: {}", status.code(), status.message())
}
