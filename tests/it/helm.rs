//! The Helm chart, deploy/helm/toolgate, linted and rendered by the helm deploy/helm/test pins, and what it renders
//! checked as deploy/ is: shared mode's Deployment serves the ports its config names, behind a Service that selects
//! it, with the tokens from the Secret and the image's hardening; sidecar mode renders the config alone, and the
//! example agent's chart includes the gateway as a native sidecar whose doors are on loopback; turning a door off
//! removes its port and its config; a wrong value fails with a message saying what is wrong.

use crate::support::deploy::*;
use crate::support::helm::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use toolgate::Config;

fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(CHART)
}

/// The one document of a kind.
fn one<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    match of_kind(docs, kind)[..] {
        [doc] => doc,
        ref all => panic!("{} documents of kind {kind}, not one: {:?}", all.len(), kinds(docs)),
    }
}

/// The rendered pod's gateway config, loaded in its container's environment.
fn config(docs: &[Value]) -> Config {
    pod_config_loaded(docs).unwrap_or_else(|e| panic!("the rendered ConfigMap does not load: {e}"))
}

/// The container's port of this name, or None.
fn named_port(container: &Value, name: &str) -> Option<u16> {
    let port = list(&container["ports"]).iter().find(|p| p["name"] == name)?;
    port["containerPort"].as_u64()?.try_into().ok()
}

/// What the chart must keep of the k8s file's hardening, on the gateway's container and its pod.
fn hardening_problems(pod: &Value, gateway: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let security = &gateway["securityContext"];
    let wanted = [
        ("runAsNonRoot", Value::from(true)),
        ("runAsUser", Value::from(10001)),
        ("runAsGroup", Value::from(10001)),
        ("readOnlyRootFilesystem", Value::from(true)),
        ("allowPrivilegeEscalation", Value::from(false)),
    ];
    for (field, want) in wanted {
        if security[field] != want {
            problems.push(format!("securityContext.{field} is {}, not {want}", security[field]));
        }
    }
    if !list(&security["capabilities"]["drop"]).contains(&Value::from("ALL")) {
        problems.push("the container drops no ALL capabilities".into());
    }
    for (whose, context) in [("container", security), ("pod", &pod["securityContext"])] {
        if context["seccompProfile"]["type"] != "RuntimeDefault" {
            problems.push(format!("the {whose}'s seccompProfile is not RuntimeDefault"));
        }
    }
    for (kind, resource) in [("requests", "cpu"), ("requests", "memory"), ("limits", "cpu"), ("limits", "memory")] {
        if gateway["resources"][kind][resource].is_null() {
            problems.push(format!("no resources.{kind}.{resource}"));
        }
    }
    problems
}

#[test]
fn the_chart_names_the_crates_version_and_the_images_ports() {
    let d = Deploy::load();
    let chart = d.doc(&format!("{CHART}/Chart.yaml"));
    let manifest: toml::Value = toml::from_str(d.text("Cargo.toml")).unwrap();
    assert_eq!(chart["apiVersion"], "v2");
    assert_eq!(chart["appVersion"].as_str(), manifest["package"]["version"].as_str(), "appVersion is Cargo.toml's");
    let values = d.doc(&format!("{CHART}/values.yaml"));
    let exposed = Dockerfile::parse(d.text(DOCKERFILE)).expose();
    for door in ["grpc", "metrics", "mcp", "console"] {
        let port = values[door]["port"].as_u64().and_then(|p| u16::try_from(p).ok());
        assert!(port.is_some_and(|p| exposed.contains(&p)), "values.yaml {door}.port {port:?} is not EXPOSEd");
    }
}

#[test]
#[ignore = "needs helm from deploy/helm/test (npm ci there), which .ci/run installs"]
fn the_charts_lint_strictly() {
    let helm = Helm::new();
    let chart = chart();
    let tokens =
        "secret.create=true,secret.tokens.admin=a,secret.tokens.data=d,secret.tokens.review=r,secret.tokens.mcp=m";
    for sets in [&[][..], &["mode=sidecar"], &[tokens], &["mcp.enabled=false,console.expose=true"]] {
        let mut args = vec!["lint", "--strict", chart.to_str().unwrap()];
        args.extend(sets.iter().flat_map(|set| ["--set", set]));
        let out = helm.run(&args).unwrap_or_else(|e| panic!("helm lint --strict with {sets:?}: {e}"));
        assert!(out.contains("1 chart(s) linted, 0 chart(s) failed"), "{out}");
    }
    let example = helm.example();
    let out = helm.run(&["lint", "--strict", example.to_str().unwrap()]).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("0 chart(s) failed"), "{out}");
}

#[test]
#[ignore = "needs helm from deploy/helm/test (npm ci there), which .ci/run installs"]
fn shared_mode_serves_its_configs_ports_behind_a_service() {
    let docs = Helm::new().template(&chart(), &[]).unwrap();
    assert_eq!(kinds(&docs), ["ConfigMap", "Deployment", "Service"], "a Secret made beforehand, by default");
    let config = config(&docs);
    let (pod, gateway) = (pod_spec(&docs), container(&docs, "toolgate"));
    assert!(list(&pod["containers"]).contains(gateway), "the gateway is the Deployment's container");
    let grpc = config.listen.port();
    assert_eq!(named_port(gateway, "grpc"), grpc);
    for probe in ["startupProbe", "readinessProbe", "livenessProbe"] {
        assert_eq!(gateway[probe]["grpc"]["port"].as_u64().map(|p| p as u16), grpc, "{probe}");
    }
    assert_eq!(container_env(gateway).get("TOOLGATE_LISTEN").and_then(|l| port(l)), grpc, "the image's own wins");
    let mcp = config.mcp_front.listen.expect("the MCP door is on");
    let metrics = config.telemetry.prometheus_listen.expect("/metrics is on");
    let console = config.console.listen.expect("the console is on");
    assert!(mcp.ip().is_unspecified() && metrics.ip().is_unspecified(), "behind the Service: {mcp}, {metrics}");
    assert!(console.ip().is_loopback(), "the console is reached by kubectl port-forward: {console}");
    for (name, addr) in [("mcp", mcp), ("metrics", metrics), ("console", console)] {
        assert_eq!(named_port(gateway, name), Some(addr.port()), "containerPort {name}");
    }
    let service = one(&docs, "Service");
    let labels = &one(&docs, "Deployment")["spec"]["template"]["metadata"]["labels"];
    let selects = |selector: &Value| selector.as_object().is_some_and(|s| s.iter().all(|(k, v)| labels[k] == *v));
    assert!(selects(&service["spec"]["selector"]), "the Service selects the pod: {labels}");
    assert!(selects(&one(&docs, "Deployment")["spec"]["selector"]["matchLabels"]));
    let served: Vec<(String, u16)> = (list(&service["spec"]["ports"]).iter())
        .map(|p| (p["name"].as_str().unwrap().to_owned(), p["port"].as_u64().unwrap() as u16))
        .collect();
    assert_eq!(served, [("grpc".into(), grpc.unwrap()), ("metrics".into(), 9464), ("mcp".into(), mcp.port())]);
    for p in list(&service["spec"]["ports"]) {
        let target = named_port(gateway, p["targetPort"].as_str().unwrap());
        assert_eq!(target.map(u64::from), p["port"].as_u64(), "the Service's {} reaches its containerPort", p["name"]);
    }
    let name = service["metadata"]["name"].as_str().unwrap();
    for host in [format!("{name}.agents.svc"), format!("{name}.agents.svc.cluster.local"), "localhost".into()] {
        assert!(mcp_accepts(&config.mcp_front.allowed_hosts, &host, mcp.port()), "the MCP door refuses Host {host}");
    }
    let secret = |key: &str| Some(format!("<secret toolgate-tokens, key {key}>"));
    assert_eq!((config.tokens.admin, config.tokens.data), (secret("admin-token"), secret("data-token")));
    assert_eq!(config.tokens.review, secret("review-token"));
    assert_eq!(config.mcp_front.tokens.iter().map(|(t, _)| Some(t.clone())).collect::<Vec<_>>(), [secret("mcp-token")]);
    let problems = hardening_problems(pod, gateway);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(pod["automountServiceAccountToken"], false);
    let image = gateway["image"].as_str().unwrap();
    assert!(image.ends_with(&format!(":{}", env!("CARGO_PKG_VERSION"))), "the image's tag is appVersion: {image}");
}

#[test]
#[ignore = "needs helm from deploy/helm/test (npm ci there), which .ci/run installs"]
fn sidecar_mode_renders_the_config_and_the_example_agent_runs_the_gateway_beside_it() {
    let helm = Helm::new();
    assert_eq!(kinds(&helm.template(&chart(), &["mode=sidecar"]).unwrap()), ["ConfigMap"]);
    let tokens =
        "secret.create=true,secret.tokens.admin=a,secret.tokens.data=d,secret.tokens.review=r,secret.tokens.mcp=m";
    assert_eq!(kinds(&helm.template(&chart(), &["mode=sidecar", tokens]).unwrap()), ["ConfigMap", "Secret"]);
    let docs = helm.template(&helm.example(), &[]).unwrap();
    assert_eq!(kinds(&docs), ["ConfigMap", "Deployment"], "the agent's Deployment, and toolgate's config alone");
    let (pod, gateway) = (pod_spec(&docs), container(&docs, "toolgate"));
    assert!(list(&pod["initContainers"]).contains(gateway), "a native sidecar is an init container");
    assert_eq!(gateway["restartPolicy"], "Always");
    let problems = sidecar_doors(&docs);
    assert!(problems.is_empty(), "{problems:?}");
    let config = config(&docs);
    let agent = container_env(container(&docs, "agent"));
    assert_eq!(agent["TOOLGATE_SERVER"], format!("127.0.0.1:{}", config.listen.port().unwrap()));
    for (name, addr) in [("mcp", config.mcp_front.listen.unwrap()), ("console", config.console.listen.unwrap())] {
        assert_eq!(named_port(gateway, name), Some(addr.port()), "containerPort {name}");
    }
    let map_name = &one(&docs, "ConfigMap")["metadata"]["name"];
    let volume = |name: &str| list(&pod["volumes"]).iter().find(|v| v["name"] == name).cloned().unwrap_or_default();
    for mount in list(&gateway["volumeMounts"]) {
        assert!(!volume(mount["name"].as_str().unwrap()).is_null(), "the pod has no volume {}", mount["name"]);
    }
    assert_eq!(volume("toolgate-config")["configMap"]["name"], *map_name, "the config mounted is the one rendered");
    let problems = hardening_problems(pod, gateway);
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
#[ignore = "needs helm from deploy/helm/test (npm ci there), which .ci/run installs"]
fn a_door_turned_off_loses_its_port_and_its_config() {
    let helm = Helm::new();
    let off = |set: &str| {
        let docs = helm.template(&chart(), &[set]).unwrap();
        let service = list(&one(&docs, "Service")["spec"]["ports"]).iter().map(|p| p["name"].clone()).collect();
        (config(&docs), container(&docs, "toolgate").clone(), service)
    };
    let (config, gateway, service): (_, _, Vec<Value>) = off("mcp.enabled=false");
    assert_eq!(config.mcp_front.listen, None);
    assert_eq!(named_port(&gateway, "mcp"), None);
    assert!(!service.contains(&Value::from("mcp")), "{service:?}");
    assert!(!container_env(&gateway).contains_key("TOOLGATE_MCP_TOKEN"), "no token for a door that is off");
    let (config, gateway, _) = off("console.enabled=false");
    assert_eq!((config.console.listen, named_port(&gateway, "console")), (None, None));
    let (config, gateway, service) = off("metrics.enabled=false");
    assert_eq!((config.telemetry.prometheus_listen, named_port(&gateway, "metrics")), (None, None));
    assert!(!service.contains(&Value::from("metrics")), "{service:?}");
    let docs = helm.template(&chart(), &["console.expose=true", "console.allowedHosts={console.example.com}"]).unwrap();
    let config = self::config(&docs);
    assert!(config.console.listen.is_some_and(|a| a.ip().is_unspecified()), "exposed: {:?}", config.console.listen);
    let served = list(&one(&docs, "Service")["spec"]["ports"]).iter().any(|p| p["name"] == "console");
    assert!(served, "an exposed console is a port of the Service");
    let hosts: Vec<&str> = config.console.allowed_hosts.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(hosts, ["localhost", "127.0.0.1", "::1", "console.example.com"]);
    let tokens = "secret.create=true,secret.tokens.admin=a,secret.tokens.data=d,secret.tokens.review=r";
    let docs = helm.template(&chart(), &[tokens, "mcp.enabled=false"]).unwrap();
    let data = one(&docs, "Secret")["data"].as_object().unwrap().clone();
    let keys: Vec<&String> = data.keys().collect();
    assert_eq!(keys, ["admin-token", "data-token", "review-token"], "no mcp-token without the door");
    assert_eq!(data["admin-token"], "YQ==", "base64 of the value given");
}

#[test]
#[ignore = "needs helm from deploy/helm/test (npm ci there), which .ci/run installs"]
fn a_wrong_value_fails_the_render_saying_what_is_wrong() {
    let helm = Helm::new();
    let err = helm.template(&chart(), &["mode=daemonset"]).unwrap_err();
    assert!(err.contains("mode is \"daemonset\": it must be shared") && err.contains("or sidecar"), "{err}");
    let err = helm.template(&chart(), &["secret.create=true,secret.tokens.admin=a"]).unwrap_err();
    assert!(err.contains("secret.tokens.data is required when secret.create is true"), "{err}");
    let err = helm.template(&chart(), &["secret.name="]).unwrap_err();
    assert!(err.contains("secret.name is required"), "{err}");
}

#[test]
#[ignore = "needs helm from deploy/helm/test (npm ci there), which .ci/run installs"]
fn the_notes_say_how_to_reach_each_door() {
    let helm = Helm::new();
    let shared = helm.notes(&[]);
    for said in [
        "gRPC     rel-toolgate.agents.svc:50051",
        "MCP      http://rel-toolgate.agents.svc:8808/mcp",
        "kubectl -n agents port-forward deployment/rel-toolgate 8809:8809",
        "then open http://localhost:8809",
        "get secret toolgate-tokens -o jsonpath='{.data.review-token}'",
    ] {
        assert!(shared.contains(said), "the shared mode's notes lack {said:?}:\n{shared}");
    }
    let sidecar = helm.notes(&["mode=sidecar"]);
    for said in
        ["include \"toolgate.sidecar\" .Subcharts.toolgate", "kubectl -n agents port-forward pod/<agent-pod> 8809:8809"]
    {
        assert!(sidecar.contains(said), "the sidecar mode's notes lack {said:?}:\n{sidecar}");
    }
    let quiet = helm.notes(&["mcp.enabled=false", "console.enabled=false"]);
    assert!(!quiet.contains("/mcp") && !quiet.contains("port-forward"), "doors that are off: {quiet}");
}
