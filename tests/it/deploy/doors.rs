//! The MCP front door and the console in `deploy/`: their ports agree between each config, the image, the compose
//! service and the pods; compose publishes them on 127.0.0.1 and each accepts the `Host` a browser or host sends
//! there; in the pods they listen on loopback, where the agent beside them and `kubectl port-forward` reach them,
//! and the agent holds the tokens the gateway loads.

use super::Check;
use crate::support::deploy::*;
use serde_json::Value;
use std::net::SocketAddr;
use toolgate::Config;

/// The MCP front door's port: the compose config's, exposed by the image, published by compose, and the one each
/// pod's config serves, declares as a containerPort and hands the agent in TOOLGATE_MCP_URL.
fn mcp_port(d: &Deploy) -> Vec<String> {
    door_port(d, "[mcp_front] listen", |c| c.mcp_front.listen, Some("TOOLGATE_MCP_URL"))
}

/// The console's port, as the MCP door's (no agent variable: a person reaches it).
fn console_port(d: &Deploy) -> Vec<String> {
    door_port(d, "[console] listen", |c| c.console.listen, None)
}

fn door_port(d: &Deploy, door: &str, listen: fn(&Config) -> Option<SocketAddr>, agent: Option<&str>) -> Vec<String> {
    let Some(want) = d.gateway_config().and_then(|c| listen(&c)).map(|a| a.port()) else {
        return vec![format!("{GATEWAY_CONFIG} does not load, or sets no {door}")];
    };
    let mut problems = Vec::new();
    if !Dockerfile::parse(d.text(DOCKERFILE)).expose().contains(&want) {
        problems.push(format!("Dockerfile EXPOSE lacks the {door} port {want}"));
    }
    if !published_ports(&d.doc(COMPOSE)["services"]["toolgate"]).contains(&want) {
        problems.push(format!("compose toolgate ports lack the {door} port {want}"));
    }
    for file in [K8S, K8S_UDS] {
        let k8s = d.docs(file);
        let got = pod_config(&k8s).and_then(|c| listen(&c)).map(|a| a.port());
        if got != Some(want) {
            problems.push(format!("{file}: the ConfigMap's {door} port is {got:?}, not the image's {want}"));
        }
        if !container_ports(container(&k8s, "toolgate")).contains(&want) {
            problems.push(format!("{file}: the toolgate container declares no containerPort {want} ({door})"));
        }
        if let Some(name) = agent {
            let url = container_env(container(&k8s, "agent")).remove(name).unwrap_or_default();
            if port(&url) != Some(want) {
                problems.push(format!("{file}: the agent's {name} {url:?} is not on port {want} ({door})"));
            }
        }
    }
    problems
}

/// Every port compose publishes, of any service, is on the host's 127.0.0.1.
fn published_on_loopback(d: &Deploy) -> Vec<String> {
    let compose = d.doc(COMPOSE);
    let mut problems = Vec::new();
    for (name, service) in services(&compose) {
        for entry in list(&service["ports"]) {
            let loopback = match entry {
                Value::String(short) => short.starts_with("127.0.0.1:"),
                Value::Object(long) => long.get("host_ip").and_then(Value::as_str) == Some("127.0.0.1"),
                _ => false,
            };
            if !loopback {
                problems.push(format!("compose service {name} publishes {entry} beyond the host's 127.0.0.1"));
            }
        }
    }
    problems
}

/// Compose: each door listens beyond the container's loopback (a published port reaches nothing else) and accepts
/// the Host a browser or MCP host on the machine sends to its published port (`localhost:PORT`, `127.0.0.1:PORT`),
/// and the MCP door the name another service of the stack uses (`toolgate:PORT`).
fn compose_doors(d: &Deploy) -> Vec<String> {
    let Some(config) = d.gateway_config() else {
        return vec![format!("{GATEWAY_CONFIG} does not load")];
    };
    let mut problems = Vec::new();
    let doors = [("[mcp_front]", config.mcp_front.listen), ("[console]", config.console.listen)];
    for (door, listen) in doors {
        match listen {
            Some(addr) if addr.ip().is_unspecified() => {}
            other => problems.push(format!("{GATEWAY_CONFIG} {door} listens on {other:?}, not 0.0.0.0:PORT")),
        }
    }
    let (mcp, console) =
        (config.mcp_front.listen.map_or(0, |a| a.port()), config.console.listen.map_or(0, |a| a.port()));
    for host in ["localhost", "127.0.0.1", "toolgate"] {
        if !mcp_accepts(&config.mcp_front.allowed_hosts, host, mcp) {
            problems.push(format!("{GATEWAY_CONFIG} [mcp_front] refuses Host {host}:{mcp}"));
        }
    }
    for host in ["localhost", "127.0.0.1"] {
        if !config.console.allowed_hosts.iter().any(|h| h.host == host && h.port.is_none_or(|p| p == console)) {
            problems.push(format!("{GATEWAY_CONFIG} [console] refuses Host {host}:{console}"));
        }
    }
    problems
}

/// The pods: the MCP door and the console on loopback, and the agent holding the gateway's tokens
/// (`sidecar_doors`).
fn pod_doors(d: &Deploy) -> Vec<String> {
    [K8S, K8S_UDS]
        .iter()
        .flat_map(|file| sidecar_doors(&d.docs(file)).into_iter().map(move |p| format!("{file}: {p}")))
        .collect()
}

passes! {
    the_mcp_port_agrees_everywhere: mcp_port,
    the_console_port_agrees_everywhere: console_port,
    compose_publishes_every_port_on_loopback_only: published_on_loopback,
    compose_doors_answer_at_their_published_ports: compose_doors,
    the_pods_doors_are_on_loopback_and_the_agent_holds_their_tokens: pod_doors,
}

/// One mistake per row, as `super::MISTAKES`.
#[rustfmt::skip]
pub(super) const MISTAKES: &[(Check, &str, &str, &str, &str)] = &[
    (mcp_port, DOCKERFILE, "EXPOSE 50051 9464 8808", "EXPOSE 50051 9464 8807", "EXPOSE lacks the [mcp_front] listen port 8808"),
    (mcp_port, COMPOSE, "127.0.0.1:8808:8808", "127.0.0.1:8807:8807", "compose toolgate ports lack the [mcp_front] listen port"),
    (mcp_port, K8S, "listen = \"127.0.0.1:8808\"", "listen = \"127.0.0.1:8818\"", "agent-with-toolgate.yaml: the ConfigMap's [mcp_front] listen port is Some(8818)"),
    (mcp_port, K8S_UDS, "containerPort: 8808", "containerPort: 8818", "declares no containerPort 8808"),
    (mcp_port, K8S, "value: \"http://127.0.0.1:8808/mcp\"", "value: \"http://127.0.0.1:8818/mcp\"", "TOOLGATE_MCP_URL \"http://127.0.0.1:8818/mcp\" is not on port 8808"),
    (console_port, DOCKERFILE, "8808 8809", "8808 8819", "EXPOSE lacks the [console] listen port 8809"),
    (console_port, COMPOSE, "127.0.0.1:8809:8809", "127.0.0.1:8819:8819", "compose toolgate ports lack the [console] listen port"),
    (console_port, K8S_UDS, "listen = \"127.0.0.1:8809\"", "listen = \"127.0.0.1:8819\"", "uds.yaml: the ConfigMap's [console] listen port is Some(8819)"),
    (console_port, K8S, "containerPort: 8809", "containerPort: 8819", "declares no containerPort 8809"),
    (published_on_loopback, COMPOSE, "\"127.0.0.1:8809:8809\"", "\"8809:8809\"", "publishes \"8809:8809\" beyond"),
    (published_on_loopback, COMPOSE, "\"127.0.0.1:3000:3000\"", "\"0.0.0.0:3000:3000\"", "compose service grafana publishes"),
    (compose_doors, GATEWAY_CONFIG, "listen = \"0.0.0.0:8809\"", "listen = \"127.0.0.1:8809\"", "[console] listens on Some(127.0.0.1:8809)"),
    (compose_doors, GATEWAY_CONFIG, "\"[::1]\", \"toolgate\"]", "\"[::1]\"]", "[mcp_front] refuses Host toolgate:8808"),
    (compose_doors, GATEWAY_CONFIG, "allowed_hosts = [\"localhost\", ", "allowed_hosts = [\"localhost:8807\", ", "[mcp_front] refuses Host localhost:8808"),
    (pod_doors, K8S, "listen = \"127.0.0.1:8809\"", "listen = \"0.0.0.0:8809\"", "[console] listens on Some(0.0.0.0:8809), not on loopback"),
    (pod_doors, K8S_UDS, "listen = \"127.0.0.1:8808\"", "listen = \"0.0.0.0:8808\"", "[mcp_front] listens on Some(0.0.0.0:8808)"),
    (pod_doors, K8S, "key: mcp-token}\n          # Placeholders", "key: data-token}\n          # Placeholders", "TOOLGATE_MCP_TOKEN is none of the MCP door's tokens"),
    (pod_doors, K8S_UDS, "value: \"http://127.0.0.1:8808/mcp\"", "value: \"http://agent:8808/mcp\"", "is no /mcp the door accepts"),
    (pod_doors, K8S, "- name: TOOLGATE_MCP_TOKEN    # the config's", "- name: AGENT_MCP_TOKEN    # the config's", "the ConfigMap does not load: config: mcp_front.tokens: the variable \"TOOLGATE_MCP_TOKEN\" is not set"),
];
