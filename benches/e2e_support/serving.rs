//! The gateway in a bench's process, started as the suites start it: the bench goes on once it serves, and a
//! start that fails (a side door's port taken, say) stops the bench saying why, not with a reset connection.

use std::time::Duration;
use tonic::transport::{Channel, Endpoint};

/// How long a start may take before the bench gives up on it: the budget the suites' `connect` gives one.
const START_WITHIN: Duration = Duration::from_secs(30);

/// Runs the gateway on `listener` for as long as the process lives: its channel, once it answers a health check.
pub async fn gateway(listener: tokio::net::TcpListener, config: toolgate::Config) -> Channel {
    let addr = listener.local_addr().expect("a local address");
    let mut handle = tokio::spawn(toolgate::run(listener, config, std::future::pending()));
    let serving = async {
        let endpoint = Endpoint::from_shared(format!("http://{addr}")).expect("a valid URI");
        let deadline = tokio::time::Instant::now() + START_WITHIN;
        while tokio::time::Instant::now() < deadline {
            if let Ok(channel) = endpoint.connect().await {
                let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
                if health.check(tonic_health::pb::HealthCheckRequest::default()).await.is_ok() {
                    return channel;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the gateway at {addr} did not answer a health check within {START_WITHIN:?}");
    };
    tokio::select! {
        channel = serving => channel,
        ended = &mut handle => panic!("the gateway at {addr} stopped before it served: {ended:?}"),
    }
}
