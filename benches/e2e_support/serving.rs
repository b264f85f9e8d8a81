//! The gateway in a bench's process, started as the suites start it: the bench goes on once it serves, and a
//! start that fails (a side door's port taken, say) stops the bench saying why, not with a reset connection.

use std::time::Duration;
use tonic::transport::{Channel, Endpoint};

/// Runs the gateway on `listener` for as long as the process lives: its channel, once it answers a health check.
pub async fn gateway(listener: tokio::net::TcpListener, config: toolgate::Config) -> Channel {
    let addr = listener.local_addr().expect("a local address");
    let mut handle = tokio::spawn(toolgate::run(listener, config, std::future::pending()));
    let serving = async {
        let endpoint = Endpoint::from_shared(format!("http://{addr}")).expect("a valid URI");
        loop {
            if let Ok(channel) = endpoint.connect().await {
                let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
                if health.check(tonic_health::pb::HealthCheckRequest::default()).await.is_ok() {
                    return channel;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        channel = serving => channel,
        ended = &mut handle => panic!("the gateway at {addr} stopped before it served: {ended:?}"),
    }
}
