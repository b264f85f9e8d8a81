//! The image's and the pods' hardening, and the Unix-socket pod (deploy/k8s/agent-with-toolgate-uds.yaml).

use super::Check;
use crate::support::deploy::*;
use serde_json::Value;
use std::path::Path;
use toolgate::wire::socket::Address;

/// The image builds with --locked on a Rust no older than Cargo.toml's rust-version and runs as a numeric
/// non-root user (what runAsNonRoot can verify); the pod's gateway runs as non-root on a read-only root
/// filesystem, with CPU and memory requests and limits.
fn hardening(d: &Deploy) -> Vec<String> {
    let mut problems = Vec::new();
    let image = Dockerfile::parse(d.text(DOCKERFILE));
    let version = |text: &str| -> Vec<u32> { text.split('.').map_while(|n| n.parse().ok()).collect() };
    let manifest: toml::Value = toml::from_str(d.text("Cargo.toml")).expect("Cargo.toml parses");
    let msrv = version(manifest["package"]["rust-version"].as_str().expect("Cargo.toml has a rust-version"));
    let rust = image
        .args("FROM")
        .find_map(|from| from.strip_prefix("rust:"))
        .map(|tag| version(tag.split('-').next().unwrap_or(tag)));
    if rust.as_ref().is_none_or(|rust| rust.len() < 2 || *rust < msrv) {
        problems.push(format!("the builder's Rust {rust:?} is not FROM rust:X.Y at least rust-version {msrv:?}"));
    }
    if !image.args("RUN").any(|run| run.contains("cargo build --release --locked")) {
        problems.push("no RUN cargo build --release --locked".into());
    }
    let user = image.args("USER").last().unwrap_or("0");
    if !user.split(':').next().unwrap_or_default().parse::<u32>().is_ok_and(|uid| uid != 0) {
        problems.push(format!("the image's USER {user} is not a numeric uid other than 0"));
    }
    let k8s = d.docs(K8S);
    let gateway = container(&k8s, "toolgate");
    for field in ["runAsNonRoot", "readOnlyRootFilesystem"] {
        if gateway["securityContext"][field] != true {
            problems.push(format!("the toolgate container's securityContext.{field} is not true"));
        }
    }
    for (kind, resource) in [("requests", "cpu"), ("requests", "memory"), ("limits", "cpu"), ("limits", "memory")] {
        if gateway["resources"][kind][resource].is_null() {
            problems.push(format!("the toolgate container sets no resources.{kind}.{resource}"));
        }
    }
    problems
}

/// The Unix-socket pod: the gateway listens on a socket in a volume both containers mount at the same path, the
/// agent is pointed at that socket, and every probe runs `toolgate health` on it (the kubelet's gRPC probes reach
/// ports only).
fn unix_socket(d: &Deploy) -> Vec<String> {
    let mut problems = Vec::new();
    let k8s = d.docs(K8S_UDS);
    let listen = pod_config(&k8s).map(|c| c.listen);
    let Some(Address::Unix(socket)) = listen else {
        return vec![format!("{K8S_UDS}: the ConfigMap's listen is {listen:?}, not unix:/path")];
    };
    let (server, dir) = (format!("unix:{}", socket.display()), socket.parent().unwrap_or(Path::new("/")));
    let (gateway, agent) = (container(&k8s, "toolgate"), container(&k8s, "agent"));
    let env = |c: &Value, name: &str| list(&c["env"]).iter().find(|e| e["name"] == name).map(|e| e["value"].clone());
    for (who, c, name) in [("toolgate", gateway, "TOOLGATE_LISTEN"), ("agent", agent, "TOOLGATE_SERVER")] {
        if env(c, name) != Some(Value::from(server.as_str())) {
            problems.push(format!("{K8S_UDS}: the {who} container's {name} is not {server}"));
        }
    }
    let volume_at = |c: &Value| {
        let mount = list(&c["volumeMounts"]).iter().find(|m| m["mountPath"].as_str() == dir.to_str());
        mount.and_then(|m| m["name"].as_str()).map(str::to_owned)
    };
    match (volume_at(gateway), volume_at(agent)) {
        (Some(a), Some(b)) if a == b => {
            let volume = list(&pod_spec(&k8s)["volumes"]).iter().find(|v| v["name"] == a.as_str());
            if volume.is_none_or(|v| v["emptyDir"].is_null()) {
                problems.push(format!("{K8S_UDS}: the socket's volume {a} is not an emptyDir"));
            }
        }
        (a, b) => {
            problems.push(format!("{K8S_UDS}: {} is not one volume in both containers ({a:?}, {b:?})", dir.display()))
        }
    }
    for probe in ["startupProbe", "readinessProbe", "livenessProbe"] {
        if strings(&gateway[probe]["exec"]["command"]) != ["toolgate", "health", "--server", server.as_str()] {
            problems.push(format!("{K8S_UDS}: the {probe} does not run toolgate health --server {server}"));
        }
    }
    problems
}

passes! {
    the_image_and_the_pod_are_hardened: hardening,
    the_unix_socket_pod_shares_its_socket_and_probes_it: unix_socket,
}

/// One mistake per row, as `super::MISTAKES`.
#[rustfmt::skip]
pub(super) const MISTAKES: &[(Check, &str, &str, &str, &str)] = &[
    (unix_socket, K8S_UDS, "listen = \"unix:/run/toolgate/toolgate.sock\"", "listen = \"unix:/run/gw.sock\"", "is not unix:/run/gw.sock"),
    (unix_socket, K8S_UDS, "- name: socket\n              mountPath: /run/toolgate\n      volumes", "- name: sock\n              mountPath: /run/toolgate\n      volumes", "is not one volume in both"),
    (unix_socket, K8S_UDS, "emptyDir:\n            medium: Memory", "hostPath:\n            path: /run", "is not an emptyDir"),
    (unix_socket, K8S_UDS, "readinessProbe:\n            exec:\n              command: [\"toolgate\", \"health\"", "readinessProbe:\n            exec:\n              command: [\"toolgate\", \"tools\"", "the readinessProbe does not"),
    (hardening, DOCKERFILE, "USER 10001:10001", "USER toolgate", "USER toolgate is not a numeric uid"),
    (hardening, DOCKERFILE, "FROM rust:1.95-slim", "FROM rust:1.85-slim", "at least rust-version"),
    (hardening, DOCKERFILE, "--release --locked", "--release", "no RUN cargo build --release --locked"),
    (hardening, K8S, "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem"),
    (hardening, K8S, "limits: {cpu: \"1\", memory: 256Mi}", "limits: {cpu: \"1\"}", "resources.limits.memory"),
];
