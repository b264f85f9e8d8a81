//! `toolgate health`: asks the gateway's `grpc.health.v1` whether it is serving, for a probe that cannot speak
//! gRPC to the listener itself (a Unix socket in Kubernetes, where the kubelet's gRPC probes reach ports only).

use super::ServerArg;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

#[derive(Debug, clap::Args)]
pub struct HealthArgs {
    #[command(flatten)]
    server: ServerArg,
    /// The service to ask about; the empty name is the gateway as a whole, `toolgate.cluster` its Redis.
    #[arg(long, default_value = "")]
    service: String,
}

pub async fn run(args: HealthArgs) -> Result<(), String> {
    let mut client = HealthClient::new(args.server.connect().await?);
    let request = HealthCheckRequest { service: args.service.clone() };
    let answer = client.check(request).await.map_err(super::status_text)?.into_inner();
    let status = ServingStatus::try_from(answer.status).unwrap_or(ServingStatus::Unknown);
    out!("{}", status.as_str_name());
    match status {
        ServingStatus::Serving => Ok(()),
        other => Err(format!("{:?} is {}", args.service, other.as_str_name())),
    }
}
