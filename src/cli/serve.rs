//! `toolgate serve`: load the config, bind, run until Ctrl-C or SIGTERM.

use crate::config::{Config, Overrides};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on: host:port, or unix:/path/to.sock [default: 127.0.0.1:50051].
    #[arg(long, env = "TOOLGATE_LISTEN")]
    listen: Option<String>,
    /// Where registrations persist [default: ./toolgate-data].
    #[arg(long, env = "TOOLGATE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// A TOML config file.
    #[arg(long, env = "TOOLGATE_CONFIG")]
    config: Option<PathBuf>,
    /// Bearer token closing the admin plane (ToolRegistry, McpRegistry, ToolWorker, and ToolReview).
    #[arg(long, env = "TOOLGATE_ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,
    /// Bearer token closing the data plane (ToolGateway).
    #[arg(long, env = "TOOLGATE_DATA_TOKEN", hide_env_values = true)]
    data_token: Option<String>,
    /// Bearer token that opens ToolReview alone, for reviewers and agents resuming a review.
    #[arg(long, env = "TOOLGATE_REVIEW_TOKEN", hide_env_values = true)]
    review_token: Option<String>,
    /// OTLP/gRPC collector for traces and metrics, such as http://127.0.0.1:4317 [default: none].
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
    /// The CA bundle (PEM) an https:// collector is checked against [default: [tls.client] ca, else the system's].
    #[arg(long, env = "OTEL_EXPORTER_OTLP_CERTIFICATE")]
    otlp_certificate: Option<PathBuf>,
    /// A client certificate (PEM) for an https:// collector that asks for one, with --otlp-client-key.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE")]
    otlp_client_certificate: Option<PathBuf>,
    /// The client certificate's key (PEM).
    #[arg(long, env = "OTEL_EXPORTER_OTLP_CLIENT_KEY")]
    otlp_client_key: Option<PathBuf>,
    /// Redis shared by a fleet of gateways: redis://10.0.0.5:6379, redis+cluster://host:port,host:port,… (a Redis
    /// Cluster's seed nodes) or redis+sentinel://host:port,…/<master name>; rediss… for TLS [default: none, a single
    /// gateway].
    #[arg(long, env = "TOOLGATE_REDIS_URL", hide_env_values = true)]
    redis_url: Option<String>,
    /// Serve MCP (Streamable HTTP) at http://ADDR/mcp: host:port, or a port alone on 127.0.0.1 [default: none].
    #[arg(long, env = "TOOLGATE_MCP_LISTEN")]
    mcp_listen: Option<String>,
    /// Serve the web console for reviewers and operators at http://ADDR/: host:port, or a port alone on 127.0.0.1
    /// [default: none].
    #[arg(long, env = "TOOLGATE_CONSOLE_LISTEN")]
    console_listen: Option<String>,
}

pub async fn run(args: ServeArgs) -> Result<(), String> {
    let overrides = Overrides {
        listen: args.listen,
        data_dir: args.data_dir,
        admin_token: args.admin_token,
        data_token: args.data_token,
        review_token: args.review_token,
        otlp_endpoint: args.otlp_endpoint,
        otlp_certificate: args.otlp_certificate,
        otlp_client_certificate: args.otlp_client_certificate,
        otlp_client_key: args.otlp_client_key,
        redis_url: args.redis_url,
        mcp_listen: args.mcp_listen,
        console_listen: args.console_listen,
    };
    let config = Config::load(args.config.as_deref(), overrides).map_err(|e| e.to_string())?;
    let listener = crate::wire::socket::Listener::bind(&config.listen, config.listen_mode)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
    crate::run(listener, config, shutdown_signal()).await.map_err(|e| e.to_string())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}
