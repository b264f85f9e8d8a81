//! The deployment files in `deploy/`, checked statically because no container engine runs here: every YAML and
//! JSON file parses, the host paths they mount and copy exist, and their ports, paths and configs agree with each
//! other and with the code's defaults; each gateway config loads in the environment its container declares.
//! `doors.rs` checks the MCP front door and the console, `pods.rs` the image's and the pods' hardening and the
//! Unix-socket pod. `each_check_catches_its_mistake` breaks one thing at a time
//! and sees the check that owns it fail.

use crate::support::deploy::*;
use serde_json::Value;
use std::path::Path;
use toolgate::config::DEFAULT_LISTEN;

type Check = fn(&Deploy) -> Vec<String>;

/// Every YAML file (all its documents) and JSON file in deploy/ parses, and a Grafana dashboard has panels. A Helm
/// chart's templates are Go templates, which tests/it/helm.rs renders and parses.
fn parses(d: &Deploy) -> Vec<String> {
    let (mut problems, mut parsed) = (Vec::new(), 0);
    let template = |path: &str| path.starts_with("deploy/helm/") && path.contains("/templates/");
    for (path, text) in d.texts.iter().filter(|(path, _)| path.starts_with("deploy/") && !template(path)) {
        let docs = match Path::new(path).extension().and_then(|e| e.to_str()) {
            Some("yaml" | "yml") => parse_yaml(text),
            Some("json") => serde_json::from_str(text).map(|v| vec![v]).map_err(|e| e.to_string()),
            _ => continue,
        };
        parsed += 1;
        match docs {
            Err(err) => problems.push(format!("{path} does not parse: {err}")),
            Ok(docs) if docs.is_empty() => problems.push(format!("{path} has no document")),
            Ok(docs) if path.starts_with("deploy/grafana/") && path.ends_with(".json") => {
                if list(&docs[0]["panels"]).is_empty() {
                    problems.push(format!("{path}: a dashboard with no panels"));
                }
            }
            Ok(_) => {}
        }
    }
    if parsed < 7 {
        problems.push(format!("only {parsed} YAML and JSON files in deploy/"));
    }
    problems
}

/// The host paths compose mounts and builds from exist, the toolgate service builds deploy/Dockerfile, and that
/// Dockerfile's COPY sources are in the build context and not left out by .dockerignore.
fn host_paths(d: &Deploy) -> Vec<String> {
    let (mut problems, deploy_dir) = (Vec::new(), d.root.join("deploy"));
    let compose = d.doc(COMPOSE);
    for (name, service) in services(&compose) {
        for mount in mounts(service).into_iter().filter(|m| m.bind) {
            if !deploy_dir.join(&mount.source).exists() {
                problems.push(format!("compose service {name} mounts {}, which does not exist", mount.source));
            }
        }
    }
    let build = &compose["services"]["toolgate"]["build"];
    let context = deploy_dir.join(build["context"].as_str().unwrap_or("."));
    let dockerfile = context.join(build["dockerfile"].as_str().unwrap_or("Dockerfile"));
    if dockerfile.canonicalize().ok() != d.root.join(DOCKERFILE).canonicalize().ok() {
        problems.push(format!("the toolgate service builds {}, not {DOCKERFILE}", dockerfile.display()));
    }
    let ignored: Vec<&str> = d.text(DOCKERIGNORE).lines().map(str::trim).filter(|l| !l.starts_with('#')).collect();
    for source in Dockerfile::parse(d.text(DOCKERFILE)).context_sources() {
        if !context.join(&source).exists() {
            problems.push(format!("Dockerfile COPY {source}: not in the build context {}", context.display()));
        }
        let first = source.trim_start_matches("./").split('/').next().unwrap_or_default();
        let hit = |pattern: &str| {
            let pattern = pattern.trim_start_matches('/').trim_end_matches('/');
            !pattern.is_empty()
                && (pattern == first || pattern.strip_prefix('*').is_some_and(|suffix| source.ends_with(suffix)))
        };
        if let Some(pattern) = ignored.iter().copied().find(|p| hit(p)) {
            problems.push(format!("Dockerfile COPY {source}: .dockerignore leaves it out ({pattern})"));
        }
    }
    problems
}

/// The gRPC port is config::DEFAULT_LISTEN's in the image, the compose service and its config, and the pod: its
/// config, container port, gRPC probes and the agent's TOOLGATE_SERVER.
fn grpc_port(d: &Deploy) -> Vec<String> {
    let want = port(DEFAULT_LISTEN).expect("DEFAULT_LISTEN has a port");
    let mut problems = Vec::new();
    let mut expect = |what: &str, got: Option<u16>| match got {
        Some(got) if got == want => {}
        Some(got) => problems.push(format!("{what}: port {got}, not {want} (config::DEFAULT_LISTEN's)")),
        None => problems.push(format!("{what}: no port {want} (config::DEFAULT_LISTEN's)")),
    };
    let image = Dockerfile::parse(d.text(DOCKERFILE));
    expect("Dockerfile EXPOSE", image.expose().into_iter().find(|p| *p == want));
    expect("Dockerfile ENV TOOLGATE_LISTEN", image.env("TOOLGATE_LISTEN").as_deref().and_then(port));
    expect(&format!("{GATEWAY_CONFIG} listen"), d.gateway_config().and_then(|c| c.listen.port()));
    let service = &d.doc(COMPOSE)["services"]["toolgate"];
    expect("compose toolgate ports", published_ports(service).into_iter().find(|p| *p == want));
    let k8s = d.docs(K8S);
    expect("the ConfigMap's listen", pod_config(&k8s).and_then(|c| c.listen.port()));
    let gateway = container(&k8s, "toolgate");
    expect("the toolgate containerPort", container_ports(gateway).into_iter().find(|p| *p == want));
    for probe in ["readinessProbe", "livenessProbe", "startupProbe"] {
        if probe == "startupProbe" && gateway[probe].is_null() {
            continue;
        }
        expect(&format!("the toolgate {probe} grpc"), gateway[probe]["grpc"]["port"].as_u64().map(|p| p as u16));
    }
    let agent_env = list(&container(&k8s, "agent")["env"]).iter().find(|e| e["name"] == "TOOLGATE_SERVER");
    expect("the agent's TOOLGATE_SERVER", agent_env.and_then(|e| e["value"].as_str()).and_then(port));
    problems
}

/// The gateway's /metrics port (prometheus_listen) is exposed by the image and published by the compose service,
/// and the pod declares the one its config serves.
fn metrics_port(d: &Deploy) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(want) = d.gateway_config().and_then(|c| c.telemetry.prometheus_listen).map(|a| a.port()) else {
        return vec![format!("{GATEWAY_CONFIG} sets no prometheus_listen")];
    };
    if !Dockerfile::parse(d.text(DOCKERFILE)).expose().contains(&want) {
        problems.push(format!("Dockerfile EXPOSE lacks the prometheus_listen port {want}"));
    }
    if !published_ports(&d.doc(COMPOSE)["services"]["toolgate"]).contains(&want) {
        problems.push(format!("compose toolgate ports lack the prometheus_listen port {want}"));
    }
    let k8s = d.docs(K8S);
    let pod_port = pod_config(&k8s).and_then(|c| c.telemetry.prometheus_listen).map(|a| a.port());
    if let Some(pod_port) = pod_port
        && !container_ports(container(&k8s, "toolgate")).contains(&pod_port)
    {
        problems.push(format!("the toolgate container declares no containerPort {pod_port} (prometheus_listen)"));
    }
    problems
}

/// Every address one compose service uses to reach another names a service that declares that port: the
/// gateway's otlp_endpoint (the collector's OTLP/gRPC receiver) and tool URLs, the collector's exporters,
/// Prometheus' scrape targets and Grafana's data sources. The collector's service declares what it listens on.
fn addresses(d: &Deploy) -> Vec<String> {
    let (compose, mut problems) = (d.doc(COMPOSE), Vec::new());
    let mut reach = |from: &str, address: &str| {
        let reason = match host_port(address) {
            None => Some("not host:port".to_owned()),
            Some((host, port)) => undeclared(&compose, host, port),
        };
        problems.extend(reason.map(|reason| format!("{from} {address}: {reason}")));
    };
    let gateway: toml::Value = toml::from_str(d.text(GATEWAY_CONFIG)).unwrap_or(toml::Value::Integer(0));
    let otlp = gateway.get("telemetry").and_then(|t| t.get("otlp_endpoint")).and_then(|e| e.as_str());
    reach(&format!("{GATEWAY_CONFIG} otlp_endpoint"), otlp.unwrap_or("unset"));
    let tools = gateway.get("tools").and_then(|t| t.as_array()).map_or(&[][..], Vec::as_slice);
    for url in tools.iter().filter_map(|t| t.get("backend")?.get("http")?.get("url")?.as_str()) {
        reach(&format!("{GATEWAY_CONFIG} tool at"), url);
    }
    let collector = d.doc(COLLECTOR);
    let receivers = collector["receivers"]["otlp"]["protocols"].as_object().into_iter().flatten();
    let exporters = collector["exporters"].as_object().into_iter().flatten();
    for (name, endpoint) in receivers.chain(exporters).filter_map(|(n, v)| Some((n, v["endpoint"].as_str()?))) {
        match endpoint.strip_prefix("0.0.0.0:") {
            // One it listens on, which its own service must declare.
            Some(listening) => reach(&format!("{COLLECTOR} {name} listens on"), &format!("otel-collector:{listening}")),
            None => reach(&format!("{COLLECTOR} exporter {name} sends to"), endpoint),
        }
    }
    for job in list(&d.doc(PROMETHEUS)["scrape_configs"]) {
        for target in list(&job["static_configs"]).iter().flat_map(|c| list(&c["targets"])) {
            reach(&format!("{PROMETHEUS} job {} scrapes", job["job_name"]), target.as_str().unwrap_or_default());
        }
    }
    for source in list(&d.doc(DATASOURCES)["datasources"]) {
        reach(&format!("{DATASOURCES} {} reads", source["name"]), source["url"].as_str().unwrap_or_default());
    }
    let receiver = collector["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"].as_str().and_then(port);
    if otlp.and_then(port) != receiver {
        problems.push(format!("otlp_endpoint {otlp:?} is not on the collector's OTLP/gRPC port {receiver:?}"));
    }
    problems
}

/// Why `host:port` is not a port a compose service declares, if it is not.
fn undeclared(compose: &Value, host: &str, port: u16) -> Option<String> {
    match compose["services"].get(host) {
        None => Some(format!("no compose service {host}")),
        Some(service) if !declared_ports(service).contains(&port) => Some(format!("{host} declares no port {port}")),
        Some(_) => None,
    }
}

/// The gateway configs in deploy/ (*.toml) and the ones in the k8s ConfigMaps load as `toolgate serve` loads them,
/// in the environment their container declares: the compose service's for deploy/toolgate.toml (none for another
/// file), the toolgate container's for a ConfigMap. A token variable the container never sets fails the load.
fn configs_load(d: &Deploy) -> Vec<String> {
    let compose = compose_env(&d.doc(COMPOSE)["services"]["toolgate"]);
    let mut configs: Vec<(String, String, Env)> = (d.texts.iter())
        .filter(|(path, _)| path.starts_with("deploy/") && path.ends_with(".toml"))
        .map(|(path, text)| {
            (path.clone(), text.clone(), if path == GATEWAY_CONFIG { compose.clone() } else { Env::new() })
        })
        .collect();
    for file in [K8S, K8S_UDS] {
        let docs = d.docs(file);
        let env = container_env(container(&docs, "toolgate"));
        for map in docs.iter().filter(|doc| doc["kind"] == "ConfigMap") {
            let toml = map["data"].as_object().into_iter().flatten().filter(|(key, _)| key.ends_with(".toml"));
            let text = |text: &Value| text.as_str().unwrap_or_default().to_owned();
            configs.extend(toml.map(|(key, t)| (format!("{file} {key}"), text(t), env.clone())));
        }
    }
    let base = d.root.join("deploy");
    let mut problems: Vec<String> = (configs.iter())
        .filter_map(|(name, text, env)| gateway_config(text, &base, env).err().map(|e| format!("{name}: {e}")))
        .collect();
    if configs.len() < 3 {
        problems.push(format!("only {} gateway configs found", configs.len()));
    }
    problems
}

/// The data dir is one path: the compose config's data_dir, the image's VOLUME and TOOLGATE_DATA_DIR, the compose
/// service's volume, and the ConfigMap's data_dir, mounted from a volume of the pod.
fn data_dir(d: &Deploy) -> Vec<String> {
    let Some(config) = d.gateway_config() else {
        return vec![format!("{GATEWAY_CONFIG} does not load")];
    };
    let want = config.data_dir.to_string_lossy().into_owned();
    let mut problems = Vec::new();
    let mut expect = |what: &str, ok: bool| {
        if !ok {
            problems.push(format!("{what}: not the data dir {want}"));
        }
    };
    let image = Dockerfile::parse(d.text(DOCKERFILE));
    expect("the Dockerfile VOLUME", image.volumes().contains(&want));
    expect("the Dockerfile's TOOLGATE_DATA_DIR", image.env("TOOLGATE_DATA_DIR").as_ref() == Some(&want));
    let service = &d.doc(COMPOSE)["services"]["toolgate"];
    expect("the compose toolgate volumes", mounts(service).iter().any(|m| m.target == want));
    let k8s = d.docs(K8S);
    expect("the ConfigMap's data_dir", pod_config(&k8s).is_some_and(|c| c.data_dir.to_string_lossy() == want));
    let gateway = container(&k8s, "toolgate");
    let mount = list(&gateway["volumeMounts"]).iter().find(|m| m["mountPath"] == want.as_str());
    let volumes = list(&pod_spec(&k8s)["volumes"]);
    let volume = mount.and_then(|m| volumes.iter().find(|v| v["name"] == m["name"]));
    let writable = volume.is_some_and(|v| !v["emptyDir"].is_null() || !v["persistentVolumeClaim"].is_null());
    expect("the toolgate mounts of an emptyDir or claim", writable);
    problems
}

/// Every path a container is told to read is mounted: compose arguments and environment values that are absolute
/// paths lie in a volume of their service, Grafana's dashboard provider reads the folder the dashboard is mounted
/// in, and the pod's --config is a key of the ConfigMap mounted at its folder.
fn container_paths(d: &Deploy) -> Vec<String> {
    let (compose, mut problems) = (d.doc(COMPOSE), Vec::new());
    for (name, service) in services(&compose) {
        let targets: Vec<String> = mounts(service).into_iter().map(|m| m.target).collect();
        let mut named = strings(&service["command"]);
        named.extend(strings(&service["entrypoint"]));
        named.extend(environment(service).into_iter().map(|(_, value)| value));
        for arg in &named {
            let path = arg.split_once('=').map_or(arg.as_str(), |(_, value)| value);
            if path.starts_with('/') && !targets.iter().any(|t| path == t || path.starts_with(&format!("{t}/"))) {
                problems.push(format!("compose service {name} names {path}, which none of its volumes holds"));
            }
        }
    }
    let dashboards = d.doc(DASHBOARDS);
    let grafana: Vec<String> = mounts(&compose["services"]["grafana"]).into_iter().map(|m| m.target).collect();
    for provider in list(&dashboards["providers"]) {
        let folder = provider["options"]["path"].as_str().unwrap_or_default();
        if !grafana.iter().any(|t| Path::new(t).parent() == Some(Path::new(folder))) {
            problems.push(format!("{DASHBOARDS} reads {folder}, where compose mounts no dashboard"));
        }
    }
    let k8s = d.docs(K8S);
    let gateway = container(&k8s, "toolgate");
    let args = strings(&gateway["args"]);
    let Some(config) = args.iter().position(|a| a == "--config").and_then(|i| args.get(i + 1)) else {
        return [problems, vec!["the toolgate container has no --config".into()]].concat();
    };
    let (folder, file) = config.rsplit_once('/').unwrap_or_default();
    let mount = list(&gateway["volumeMounts"]).iter().find(|m| m["mountPath"] == folder);
    let volume = mount.and_then(|m| list(&pod_spec(&k8s)["volumes"]).iter().find(|v| v["name"] == m["name"]));
    let map_name = volume.map_or(&NULL, |v| &v["configMap"]["name"]);
    let map = k8s.iter().find(|doc| doc["kind"] == "ConfigMap" && doc["metadata"]["name"] == *map_name);
    if map.is_none_or(|m| m["data"][file].is_null()) {
        problems.push(format!("the toolgate --config {config} is no key of a ConfigMap mounted at {folder}"));
    }
    problems
}

/// Each test runs one check on the files as they are, and passes when it finds nothing.
macro_rules! passes {
    ($($test:ident: $check:ident),* $(,)?) => {$(
        #[test]
        fn $test() {
            let problems = $check(&Deploy::load());
            assert!(problems.is_empty(), "{}", problems.join("\n"));
        }
    )*};
}

mod doors;
mod pods;

passes! {
    every_yaml_and_json_file_parses: parses,
    the_host_paths_mounted_built_and_copied_exist: host_paths,
    the_grpc_port_is_the_default_everywhere: grpc_port,
    the_metrics_port_is_exposed_and_declared: metrics_port,
    every_address_names_a_service_serving_that_port: addresses,
    the_gateway_configs_load: configs_load,
    the_data_dir_is_one_path_everywhere: data_dir,
    every_path_a_container_reads_is_mounted: container_paths,
}

/// One mistake per row: the file, the text replaced, its replacement, and what the owning check must then say.
#[rustfmt::skip]
const MISTAKES: &[(Check, &str, &str, &str, &str)] = &[
    (parses, PROMETHEUS, "scrape_configs:", "scrape_configs: [", "deploy/prometheus.yml does not parse"),
    (parses, "deploy/grafana/toolgate.json", "\"uid\": \"toolgate\",", "\"uid\": ,", "toolgate.json does not parse"),
    (parses, "deploy/grafana/toolgate.json", "\"panels\"", "\"panes\"", "a dashboard with no panels"),
    (parses, COMPOSE, "  jaeger:", "  toolgate:", "duplicated key"),
    (host_paths, COMPOSE, "./prometheus.yml:", "./prometheus.yaml:", "mounts ./prometheus.yaml, which does not"),
    (host_paths, COMPOSE, "dockerfile: deploy/Dockerfile", "dockerfile: Dockerfile", "not deploy/Dockerfile"),
    (host_paths, DOCKERFILE, "COPY benches benches", "COPY bench bench", "COPY bench: not in the build context"),
    (host_paths, DOCKERIGNORE, "tests/", "benches/", "COPY benches: .dockerignore leaves it out"),
    (grpc_port, COMPOSE, "127.0.0.1:50051:50051", "127.0.0.1:50052:50052", "compose toolgate ports"),
    (grpc_port, DOCKERFILE, "EXPOSE 50051", "EXPOSE 50052", "Dockerfile EXPOSE"),
    (grpc_port, DOCKERFILE, "TOOLGATE_LISTEN=0.0.0.0:50051", "TOOLGATE_LISTEN=0.0.0.0:50052", "TOOLGATE_LISTEN"),
    (grpc_port, GATEWAY_CONFIG, "listen = \"0.0.0.0:50051\"", "listen = \"0.0.0.0:50052\"", "toml listen"),
    (grpc_port, K8S, "listen = \"0.0.0.0:50051\"", "listen = \"0.0.0.0:50052\"", "the ConfigMap's listen"),
    (grpc_port, K8S, "containerPort: 50051", "containerPort: 50052", "the toolgate containerPort"),
    (grpc_port, K8S, "readinessProbe:\n            grpc: {port: 50051}", "readinessProbe:\n            grpc: {port: 50052}", "readinessProbe"),
    (grpc_port, K8S, "livenessProbe:\n            grpc:", "livenessProbe:\n            tcpSocket:", "livenessProbe grpc"),
    (grpc_port, K8S, "value: \"127.0.0.1:50051\"", "value: \"127.0.0.1:50052\"", "TOOLGATE_SERVER"),
    (metrics_port, GATEWAY_CONFIG, "0.0.0.0:9464", "0.0.0.0:9465", "EXPOSE lacks the prometheus_listen port 9465"),
    (metrics_port, K8S, "containerPort: 9464", "containerPort: 9465", "no containerPort 9464"),
    (addresses, PROMETHEUS, "otel-collector:8889", "otel-collector:8890", "otel-collector declares no port 8890"),
    (addresses, COLLECTOR, "endpoint: 0.0.0.0:4317", "endpoint: 0.0.0.0:4319", "collector's OTLP/gRPC port"),
    (addresses, COLLECTOR, "endpoint: jaeger:4317", "endpoint: jaeger:14250", "jaeger declares no port 14250"),
    (addresses, GATEWAY_CONFIG, "http://otel-collector:4317", "http://collector:4317", "no compose service collector"),
    (addresses, GATEWAY_CONFIG, "example-tool:8080", "example-tool:8081", "example-tool declares no port 8081"),
    (addresses, DATASOURCES, "http://prometheus:9090", "http://prometheus:9091", "prometheus declares no port 9091"),
    (configs_load, K8S, "[telemetry]", "[telemetri]", "agent-with-toolgate.yaml toolgate.toml"),
    (configs_load, GATEWAY_CONFIG, "http://otel-collector", "grpc://otel-collector", "must be http://host:port"),
    (configs_load, K8S_UDS, "listen_mode = 0o660", "listen_mode = 0o1777", "not a file mode like 0o660"),
    (configs_load, COMPOSE, "TOOLGATE_MCP_TOKEN: ${TOOLGATE_MCP_TOKEN:-example-mcp-token-change-me}", "TOOLGATE_MCP_TOKEN: ${TOOLGATE_MCP_TOKEN}", "variable \"TOOLGATE_MCP_TOKEN\" is not set or empty"),
    (configs_load, COMPOSE, "TOOLGATE_ADMIN_TOKEN: ${TOOLGATE_ADMIN_TOKEN:-example-admin-token-change-me}", "TOOLGATE_ADMIN_TOKEN: ${TOOLGATE_ADMIN_TOKEN}", "auth.admin_token is empty"),
    (configs_load, COMPOSE, "TOOLGATE_ADMIN_TOKEN: ${TOOLGATE_ADMIN_TOKEN:-example-admin-token-change-me}\n      TOOLGATE_DATA_TOKEN: ${TOOLGATE_DATA_TOKEN:-example-data-token-change-me}\n      TOOLGATE_REVIEW_TOKEN: ${TOOLGATE_REVIEW_TOKEN:-example-review-token-change-me}", "TOOLGATE_DATA_TOKEN: ${TOOLGATE_DATA_TOKEN:-example-data-token-change-me}", "console.listen 0.0.0.0:8809 is not a loopback address"),
    (configs_load, K8S_UDS, "- name: TOOLGATE_MCP_TOKEN          # the config's", "- name: MCP_TOKEN          # the config's", "toolgate-uds.yaml toolgate.toml: config: mcp_front.tokens: the variable \"TOOLGATE_MCP_TOKEN\" is not set"),
    (data_dir, DOCKERFILE, "VOLUME /var/lib/toolgate", "VOLUME /data", "the Dockerfile VOLUME"),
    (data_dir, DOCKERFILE, "TOOLGATE_DATA_DIR=/var/lib/toolgate", "TOOLGATE_DATA_DIR=/data", "TOOLGATE_DATA_DIR"),
    (data_dir, COMPOSE, "toolgate-data:/var/lib/toolgate", "toolgate-data:/data", "compose toolgate volume"),
    (data_dir, K8S, "data_dir = \"/var/lib/toolgate\"", "data_dir = \"/data\"", "the ConfigMap's data_dir"),
    (data_dir, K8S, "mountPath: /var/lib/toolgate", "mountPath: /data", "emptyDir or claim"),
    (container_paths, COMPOSE, "/etc/prometheus/prometheus.yml\n", "/etc/prometheus.yml\n", "names /etc/prometheus.yml"),
    (container_paths, COMPOSE, "\"/etc/toolgate/toolgate.toml\"", "\"/etc/toolgate.toml\"", "names /etc/toolgate.toml"),
    (container_paths, DASHBOARDS, "path: /var/lib/grafana/dashboards", "path: /dashboards", "reads /dashboards"),
    (container_paths, K8S, "\"/etc/toolgate/toolgate.toml\"", "\"/etc/toolgate/gateway.toml\"", "no key of a ConfigMap"),
];

#[test]
fn each_check_catches_its_mistake() {
    let deploy = Deploy::load();
    let mut missed = Vec::new();
    for (check, path, from, to, expected) in MISTAKES.iter().chain(doors::MISTAKES).chain(pods::MISTAKES) {
        let mut broken = deploy.clone();
        broken.replace(path, from, to);
        let problems = check(&broken).join("\n");
        if !problems.contains(expected) {
            missed.push(format!("{path}: {from:?} -> {to:?} should report {expected:?}, got:\n{problems}"));
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n\n"));
}
