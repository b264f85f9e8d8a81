//! Reading `deploy/` for tests/it/deploy/ and tests/it/helm.rs: the files as text (so a test can break a copy),
//! YAML and JSON as `serde_json::Value`, the Dockerfile's instructions, compose's ports, mounts and environment, the
//! pod's containers and theirs, gateway configs loaded in the environment their container declares, and
//! `host:port` addresses.

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolgate::config::{Config, Overrides, RawConfig};
use yaml_rust2::{Yaml, YamlLoader};

pub const COMPOSE: &str = "deploy/compose.yaml";
pub const K8S: &str = "deploy/k8s/agent-with-toolgate.yaml";
pub const K8S_UDS: &str = "deploy/k8s/agent-with-toolgate-uds.yaml";
pub const DOCKERFILE: &str = "deploy/Dockerfile";
/// The gateway's config in the compose stack.
pub const GATEWAY_CONFIG: &str = "deploy/toolgate.toml";
pub const COLLECTOR: &str = "deploy/otel-collector.yaml";
pub const PROMETHEUS: &str = "deploy/prometheus.yml";
pub const DASHBOARDS: &str = "deploy/grafana/provisioning/dashboards/toolgate.yaml";
pub const DATASOURCES: &str = "deploy/grafana/provisioning/datasources/prometheus.yaml";
pub const DOCKERIGNORE: &str = ".dockerignore";

/// What a missing part of a document reads as.
pub static NULL: Value = Value::Null;

/// A container's environment as it declares it: name to value.
pub type Env = BTreeMap<String, String>;

/// Every text file under `deploy/` (less what `npm ci` installs), plus `.dockerignore` and `Cargo.toml`, by path from the repository root.
#[derive(Clone)]
pub struct Deploy {
    pub root: PathBuf,
    pub texts: BTreeMap<String, String>,
}

impl Deploy {
    pub fn load() -> Self {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        walk(&root.join("deploy"), &mut files);
        files.extend([root.join(DOCKERIGNORE), root.join("Cargo.toml")]);
        let texts = files
            .iter()
            .filter_map(|file| {
                let name = file.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
                Some((name, std::fs::read_to_string(file).ok()?))
            })
            .collect();
        Self { root, texts }
    }

    /// The compose stack's gateway config, loaded in the toolgate service's environment.
    pub fn gateway_config(&self) -> Option<Config> {
        let env = compose_env(&self.doc(COMPOSE)["services"]["toolgate"]);
        gateway_config(self.text(GATEWAY_CONFIG), &self.root.join("deploy"), &env).ok()
    }

    pub fn text(&self, path: &str) -> &str {
        self.texts.get(path).unwrap_or_else(|| panic!("{path} is missing"))
    }

    /// The first document of a YAML file, or Null when it does not parse (the `parses` check says why).
    pub fn doc(&self, path: &str) -> Value {
        self.docs(path).into_iter().next().unwrap_or(Value::Null)
    }

    pub fn docs(&self, path: &str) -> Vec<Value> {
        parse_yaml(self.text(path)).unwrap_or_default()
    }

    /// Replaces the first `from` in `path`, which must be there: how a test breaks one thing.
    pub fn replace(&mut self, path: &str, from: &str, to: &str) {
        let text = self.texts.get_mut(path).unwrap_or_else(|| panic!("{path} is missing"));
        assert!(text.contains(from), "{path} has no {from:?}");
        *text = text.replacen(from, to, 1);
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.ends_with("node_modules") {
            continue;
        }
        if path.is_dir() { walk(&path, out) } else { out.push(path) }
    }
}

/// All the documents of a YAML stream.
pub fn parse_yaml(text: &str) -> Result<Vec<Value>, String> {
    YamlLoader::load_from_str(text).map_err(|e| e.to_string())?.into_iter().map(to_json).collect()
}

fn to_json(yaml: Yaml) -> Result<Value, String> {
    Ok(match yaml {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::from(i),
        Yaml::Real(text) => text.parse::<f64>().map(Value::from).map_err(|_| format!("bad number {text}"))?,
        Yaml::String(s) => Value::String(s),
        Yaml::Array(items) => Value::Array(items.into_iter().map(to_json).collect::<Result<_, _>>()?),
        Yaml::Hash(hash) => {
            let mut map = Map::new();
            for (key, value) in hash {
                let key = match to_json(key)? {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                map.insert(key, to_json(value)?);
            }
            Value::Object(map)
        }
        Yaml::Alias(_) | Yaml::BadValue => return Err("an alias or value that cannot be resolved".into()),
    })
}

/// A gateway config as `toolgate serve --config` loads it in `env`, a container's environment: the tokens of the
/// planes from `TOOLGATE_*_TOKEN` (as `serve`'s flags take them), the variables `[mcp_front]` names from `env`. A
/// config naming a variable its container never sets fails here, as it would at start.
pub fn gateway_config(text: &str, base: &Path, env: &Env) -> Result<Config, String> {
    let raw: RawConfig = toml::from_str(text).map_err(|e| e.to_string())?;
    let overrides = Overrides {
        admin_token: env.get("TOOLGATE_ADMIN_TOKEN").cloned(),
        data_token: env.get("TOOLGATE_DATA_TOKEN").cloned(),
        review_token: env.get("TOOLGATE_REVIEW_TOKEN").cloned(),
        ..Overrides::default()
    };
    Config::from_raw_in(raw, overrides, base, |name| env.get(name).cloned()).map_err(|e| e.to_string())
}

/// A compose service's environment as the stack starts it with nothing set: `${NAME:-default}` and `${NAME-default}`
/// give their default, `${NAME}` and `$NAME` nothing, `$$` a `$`.
pub fn compose_env(service: &Value) -> Env {
    environment(service).into_iter().map(|(name, value)| (name, interpolate(&value))).collect()
}

fn interpolate(text: &str) -> String {
    let (mut out, mut rest) = (String::new(), text);
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            out.push('$');
            rest = after;
        } else if let Some(braced) = rest.strip_prefix('{') {
            let end = braced.find('}').unwrap_or(braced.len());
            let default = braced[..end].split_once(":-").or_else(|| braced[..end].split_once('-')).map(|(_, d)| d);
            out.push_str(default.unwrap_or_default());
            rest = braced.get(end + 1..).unwrap_or_default();
        } else {
            rest = rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
        }
    }
    out + rest
}

/// A pod's container's `env` as it declares it: a value as written, a variable taken from a Secret (or elsewhere)
/// as a placeholder naming where from, which a cluster would fill with the key's value.
pub fn container_env(container: &Value) -> Env {
    let value = |entry: &Value| match (&entry["value"], &entry["valueFrom"]) {
        (Value::String(value), _) => value.clone(),
        (_, Value::Object(from)) => match from.get("secretKeyRef") {
            Some(key) => format!("<secret {}, key {}>", str_of(&key["name"]), str_of(&key["key"])),
            None => format!("<from {}>", Value::Object(from.clone())),
        },
        (other, _) => other.as_str().unwrap_or_default().to_owned(),
    };
    list(&container["env"]).iter().map(|e| (e["name"].as_str().unwrap_or_default().to_owned(), value(e))).collect()
}

/// The host and port of `host:port`, `scheme://host:port/path` or `:port`.
pub fn host_port(address: &str) -> Option<(&str, u16)> {
    let rest = address.split_once("://").map_or(address, |(_, rest)| rest);
    let authority = rest.split('/').next()?;
    let (host, port) = authority.rsplit_once(':')?;
    Some((host, port.parse().ok()?))
}

pub fn port(address: &str) -> Option<u16> {
    host_port(address).map(|(_, port)| port)
}

pub fn services(compose: &Value) -> Vec<(&str, &Value)> {
    compose["services"].as_object().map(|s| s.iter().map(|(k, v)| (k.as_str(), v)).collect()).unwrap_or_default()
}

/// The container side of a service's `ports`.
pub fn published_ports(service: &Value) -> Vec<u16> {
    list(&service["ports"]).iter().filter_map(container_port).collect()
}

/// The ports a service declares it serves: its `ports` (container side) and `expose`.
pub fn declared_ports(service: &Value) -> Vec<u16> {
    let mut ports = published_ports(service);
    ports.extend(list(&service["expose"]).iter().filter_map(container_port));
    ports
}

fn container_port(entry: &Value) -> Option<u16> {
    match entry {
        Value::Number(n) => n.as_u64()?.try_into().ok(),
        Value::String(s) => s.split('/').next()?.rsplit(':').next()?.parse().ok(),
        Value::Object(long) => long.get("target").and_then(container_port),
        _ => None,
    }
}

pub struct Mount {
    /// A host path (relative to the compose file) for a bind mount, else the volume's name.
    pub source: String,
    pub target: String,
    pub bind: bool,
}

pub fn mounts(service: &Value) -> Vec<Mount> {
    let mount = |entry: &Value| match entry {
        Value::String(short) => {
            let parts: Vec<&str> = short.split(':').collect();
            let (source, target) = if parts.len() == 1 { ("", parts[0]) } else { (parts[0], parts[1]) };
            let bind = source.starts_with(['.', '/', '~']);
            Some(Mount { source: source.into(), target: target.into(), bind })
        }
        Value::Object(long) => Some(Mount {
            source: long.get("source")?.as_str()?.into(),
            target: long.get("target")?.as_str()?.into(),
            bind: long.get("type").and_then(Value::as_str) == Some("bind"),
        }),
        _ => None,
    };
    list(&service["volumes"]).iter().filter_map(mount).collect()
}

/// An array of strings, or one string split at whitespace (compose's `command` takes both).
pub fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => s.split_whitespace().map(str::to_owned).collect(),
        Value::Array(items) => items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

/// A service's `environment`, as a map or a list of `KEY=value`.
pub fn environment(service: &Value) -> Vec<(String, String)> {
    match &service["environment"] {
        Value::Object(map) => {
            map.iter().map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned))).collect()
        }
        other => strings(other).iter().filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect(),
    }
}

/// The Deployment's pod spec.
pub fn pod_spec(k8s: &[Value]) -> &Value {
    k8s.iter().find(|doc| doc["kind"] == "Deployment").map_or(&NULL, |d| &d["spec"]["template"]["spec"])
}

/// A container of the pod by name, whether a container or an init container (a native sidecar).
pub fn container<'a>(k8s: &'a [Value], name: &str) -> &'a Value {
    let pod = pod_spec(k8s);
    let all = list(&pod["containers"]).iter().chain(list(&pod["initContainers"]));
    all.into_iter().find(|c| c["name"] == name).unwrap_or(&NULL)
}

/// Whether the MCP door's `allowed_hosts` accept `Host: host:port`, as rmcp matches them: an entry's host, and its
/// port if it has one.
pub fn mcp_accepts(allowed: &[String], host: &str, port: u16) -> bool {
    allowed.iter().any(|entry| {
        let (name, entry_port) = match entry.parse::<http::uri::Authority>() {
            Ok(authority) => (authority.host().to_owned(), authority.port_u16()),
            Err(_) => (entry.clone(), None),
        };
        name.trim_matches(['[', ']']).eq_ignore_ascii_case(host) && entry_port.is_none_or(|p| p == port)
    })
}

/// A pod of an agent with toolgate beside it: the MCP door and the console listen on loopback (the agent shares
/// the pod's network namespace, and kubectl port-forward connects to the pod's loopback), and the agent holds what
/// the gateway loads: the data and review tokens, and the MCP door's token, for a Host the door accepts.
pub fn sidecar_doors(k8s: &[Value]) -> Vec<String> {
    let config = match pod_config_loaded(k8s) {
        Ok(config) => config,
        Err(err) => return vec![format!("the ConfigMap does not load: {err}")],
    };
    let mut problems = Vec::new();
    for (door, listen) in [("[mcp_front]", config.mcp_front.listen), ("[console]", config.console.listen)] {
        if !listen.is_some_and(|a| a.ip().is_loopback()) {
            problems.push(format!("{door} listens on {listen:?}, not on loopback"));
        }
    }
    let agent = container_env(container(k8s, "agent"));
    let holds = |name: &str, token: Option<&String>| agent.contains_key(name) && agent.get(name) == token;
    if !holds("TOOLGATE_TOKEN", config.tokens.data.as_ref()) {
        problems.push("the agent's TOOLGATE_TOKEN is not the gateway's data token".into());
    }
    if !holds("TOOLGATE_REVIEW_TOKEN", config.tokens.review.as_ref()) {
        problems.push("the agent's TOOLGATE_REVIEW_TOKEN is not the gateway's review token".into());
    }
    if !config.mcp_front.tokens.iter().any(|(token, _)| holds("TOOLGATE_MCP_TOKEN", Some(token))) {
        problems.push("the agent's TOOLGATE_MCP_TOKEN is none of the MCP door's tokens".into());
    }
    let url = agent.get("TOOLGATE_MCP_URL").map_or("", String::as_str);
    match host_port(url) {
        Some((host, port)) if url.ends_with("/mcp") && mcp_accepts(&config.mcp_front.allowed_hosts, host, port) => {}
        _ => problems.push(format!("the agent's TOOLGATE_MCP_URL {url:?} is no /mcp the door accepts")),
    }
    problems
}

/// The ports a pod's container declares.
pub fn container_ports(container: &Value) -> Vec<u16> {
    list(&container["ports"]).iter().filter_map(|p| p["containerPort"].as_u64()?.try_into().ok()).collect()
}

/// The gateway config the ConfigMap holds, loaded in the environment the toolgate container declares.
pub fn pod_config(k8s: &[Value]) -> Option<Config> {
    pod_config_loaded(k8s).ok()
}

/// `pod_config`, or why it does not load.
pub fn pod_config_loaded(k8s: &[Value]) -> Result<Config, String> {
    let map = k8s.iter().find(|doc| doc["kind"] == "ConfigMap").ok_or("no ConfigMap")?;
    let data = map["data"].as_object().ok_or("a ConfigMap without data")?;
    let text = data.iter().find(|(key, _)| key.ends_with(".toml")).and_then(|(_, t)| t.as_str());
    let env = container_env(container(k8s, "toolgate"));
    gateway_config(text.ok_or("no *.toml key in the ConfigMap")?, Path::new("."), &env)
}

fn str_of(value: &Value) -> &str {
    value.as_str().unwrap_or("?")
}

pub fn list(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}

/// A Dockerfile's instructions, continuation lines joined and comments dropped: (KEYWORD, arguments).
pub struct Dockerfile(Vec<(String, String)>);

impl Dockerfile {
    pub fn parse(text: &str) -> Self {
        let (mut instructions, mut current) = (Vec::new(), String::new());
        for line in text.lines().filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#')) {
            match line.trim_end().strip_suffix('\\') {
                Some(head) => {
                    current.push_str(head);
                    current.push(' ');
                }
                None => {
                    current.push_str(line);
                    let (keyword, args) =
                        current.trim().split_once(char::is_whitespace).unwrap_or((current.trim(), ""));
                    instructions.push((keyword.to_uppercase(), args.trim().to_owned()));
                    current.clear();
                }
            }
        }
        Self(instructions)
    }

    pub fn args<'a>(&'a self, keyword: &'a str) -> impl Iterator<Item = &'a str> {
        self.0.iter().filter(move |(k, _)| k == keyword).map(|(_, args)| args.as_str())
    }

    pub fn expose(&self) -> Vec<u16> {
        self.args("EXPOSE").flat_map(str::split_whitespace).filter_map(|p| p.split('/').next()?.parse().ok()).collect()
    }

    pub fn volumes(&self) -> Vec<String> {
        self.args("VOLUME")
            .flat_map(|args| serde_json::from_str::<Vec<String>>(args).unwrap_or_else(|_| strings(&Value::from(args))))
            .collect()
    }

    /// The value an `ENV` gives `name` (the `KEY=value` form), the last one winning.
    pub fn env(&self, name: &str) -> Option<String> {
        let pairs = self.args("ENV").flat_map(str::split_whitespace).filter_map(|kv| kv.split_once('='));
        pairs.filter(|(k, _)| *k == name).map(|(_, v)| v.trim_matches('"').to_owned()).last()
    }

    /// The sources of every `COPY` from the build context (not `--from` another stage).
    pub fn context_sources(&self) -> Vec<String> {
        let copies = self.args("COPY").map(|args| args.split_whitespace().collect::<Vec<_>>());
        let from_context = copies.filter(|words| !words.iter().any(|w| w.starts_with("--from")));
        from_context
            .flat_map(|words| {
                let paths: Vec<&str> = words.into_iter().filter(|w| !w.starts_with("--")).collect();
                paths[..paths.len().saturating_sub(1)].iter().map(|s| s.to_string()).collect::<Vec<_>>()
            })
            .collect()
    }
}
