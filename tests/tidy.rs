//! House rules checked as a test: every module opens with a `//!` line saying what it owns, no grab-bag modules,
//! the modules of src/ use each other only as the layer graph in ARCHITECTURE.md (`## Layers`) allows, no source
//! file over 400 lines, no two files of a module using each other in a circle, no type name defined twice or named
//! off the settings vocabulary, no `unsafe`, docs/dev/codemap.md naming every file, bench and fuzz target and nothing that is gone, and the integration
//! tests one binary (`tests/it/`) that reaches all its files.
//!
//! Limitations of the layer check: it reads `crate::` paths and `super::` chains that climb to the crate root
//! (counting inline `mod x { }` blocks), not paths a macro builds, `use crate::*` or `#[path]` attributes; a name
//! used as `crate::name` that `lib.rs` imports counts as a use of the module it comes from (per lib.rs's `use` lines).

#[path = "tidy/codemap.rs"]
mod codemap;
#[path = "tidy/layers.rs"]
mod layers;
#[path = "tidy/rust_text.rs"]
mod rust_text;
#[path = "tidy/types.rs"]
mod types;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 400;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under src/, sorted, with its path relative to the crate root (`src/registry/store.rs`).
fn src_files() -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    files.sort();
    assert!(files.len() > 20, "found only {} files under src/", files.len());
    let name = |f: &PathBuf| f.strip_prefix(root()).unwrap().to_string_lossy().replace('\\', "/");
    files.iter().map(|f| (name(f), std::fs::read_to_string(f).unwrap())).collect()
}

/// The top-level module a file belongs to and the depth of its module path (`src/registry/store.rs` is
/// (registry, 2), `src/registry/mod.rs` and `src/store.rs` are depth 1); `None` for lib.rs and main.rs.
fn module_of(file: &str) -> Option<(String, usize)> {
    let parts: Vec<&str> = file.strip_prefix("src/")?.split('/').collect();
    if matches!(parts[..], ["lib.rs"] | ["main.rs"]) {
        return None;
    }
    let depth = parts.len() - usize::from(parts.last() == Some(&"mod.rs"));
    Some((parts[0].trim_end_matches(".rs").to_string(), depth))
}

/// The top-level modules of src/: each `src/X.rs` and each `src/X/` holding Rust files.
fn src_modules(files: &[(String, String)]) -> BTreeSet<String> {
    files.iter().filter_map(|(file, _)| module_of(file)).map(|(module, _)| module).collect()
}

fn layer_graph() -> layers::Graph {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("reading ARCHITECTURE.md");
    layers::parse_layers(&text).unwrap_or_else(|e| panic!("{e}"))
}

/// Uses the graph does not allow: one `file:line: module → dep is not in ...` line each, and the count per edge.
fn forbidden_uses(files: &[(String, String)], graph: &layers::Graph) -> (Vec<String>, BTreeMap<String, usize>) {
    let modules = src_modules(files);
    let lib = files.iter().find(|(f, _)| f == "src/lib.rs").map_or(String::new(), |(_, t)| rust_text::code_only(t));
    let imports: BTreeMap<String, String> = rust_text::root_imports(&lib).into_iter().collect();
    let (mut problems, mut edges) = (Vec::new(), BTreeMap::new());
    for (file, text) in files {
        let Some((module, depth)) = module_of(file) else { continue };
        for rust_text::RootRef { line, name } in rust_text::root_refs(&rust_text::code_only(text), depth) {
            let (target, via) = match imports.get(&name) {
                _ if modules.contains(&name) => (&name, String::new()),
                Some(from) if modules.contains(from) => (from, format!(" (via crate::{name}, imported in lib.rs)")),
                Some(_) => continue, // lib.rs imports it from another crate
                None => {
                    problems
                        .push(format!("{file}:{line}: crate::{name} is neither a module of src/ nor a lib.rs import"));
                    continue;
                }
            };
            if *target != module && !graph.get(&module).is_some_and(|deps| deps.contains(target)) {
                problems.push(format!("{file}:{line}: {module} → {target}{via} is not in ARCHITECTURE.md's graph"));
                *edges.entry(format!("{module} → {target}")).or_default() += 1;
            }
        }
    }
    (problems, edges)
}

/// Files of `tests/it/` (paths relative to it, and their text) that no `mod` line of the binary reaches: cargo
/// builds the one test binary from `main.rs` alone, so such a file is never compiled and its tests never run.
fn unreached_test_files(files: &[(String, String)]) -> Vec<String> {
    let declares = |parent: &str, name: &str| {
        let text = files.iter().find(|(f, _)| f == parent).map_or("", |(_, t)| t.as_str());
        let wanted = format!("mod {name};");
        text.lines().map(str::trim).any(|l| l.strip_prefix("pub ").unwrap_or(l) == wanted)
    };
    let mut unreached = Vec::new();
    for (file, _) in files.iter().filter(|(f, _)| f != "main.rs") {
        let module = file.strip_suffix("/mod.rs").or_else(|| file.strip_suffix(".rs")).unwrap_or(file);
        let (dir, name) = module.rsplit_once('/').unwrap_or(("", module));
        let parent = if dir.is_empty() { "main.rs".to_string() } else { format!("{dir}/mod.rs") };
        if !declares(&parent, name) {
            unreached.push(format!("tests/it/{file}: no `mod {name};` in tests/it/{parent}"));
        }
    }
    unreached
}

#[test]
fn the_integration_tests_are_one_binary_that_reaches_every_file() {
    let dir = root().join("tests/it");
    let mut paths = Vec::new();
    rust_files(&dir, &mut paths);
    paths.sort();
    let name = |f: &PathBuf| f.strip_prefix(&dir).unwrap().to_string_lossy().replace('\\', "/");
    let files: Vec<(String, String)> = paths.iter().map(|f| (name(f), std::fs::read_to_string(f).unwrap())).collect();
    assert!(files.len() > 40, "found only {} files under tests/it", files.len());
    let mut problems = unreached_test_files(&files);
    for entry in std::fs::read_dir(root().join("tests")).unwrap() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        if file.ends_with(".rs") && file != "tidy.rs" {
            problems.push(format!("tests/{file}: a binary of its own; make it a module of tests/it/main.rs"));
        }
    }
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

#[test]
fn a_test_file_no_mod_line_names_is_reported() {
    let file = |name: &str, text: &str| (name.to_string(), text.to_string());
    let files = [
        file("main.rs", "mod support;\nmod cluster;\n"),
        file("support/mod.rs", "pub mod meter;\n"),
        file("support/meter.rs", ""),
        file("support/alone.rs", ""),
        file("cluster/mod.rs", "// mod admit;\n"),
        file("cluster/admit.rs", ""),
        file("gateway.rs", ""),
    ];
    assert_eq!(
        unreached_test_files(&files),
        [
            "tests/it/support/alone.rs: no `mod alone;` in tests/it/support/mod.rs",
            "tests/it/cluster/admit.rs: no `mod admit;` in tests/it/cluster/mod.rs",
            "tests/it/gateway.rs: no `mod gateway;` in tests/it/main.rs",
        ]
    );
}

#[test]
fn every_module_opens_with_a_doc_line_and_none_is_a_grab_bag() {
    let root = root();
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        if root.join(dir).exists() {
            rust_files(&root.join(dir), &mut files);
        }
    }
    assert!(files.len() > 20, "found only {} files", files.len());
    let mut problems = Vec::new();
    for file in &files {
        let name = file.strip_prefix(root).unwrap().display().to_string();
        let text = std::fs::read_to_string(file).unwrap();
        if !text.starts_with("//!") {
            problems.push(format!("{name}: does not open with a //! line"));
        }
        let stem = file.file_stem().unwrap().to_string_lossy();
        if matches!(stem.as_ref(), "utils" | "helpers" | "util" | "misc") {
            problems.push(format!("{name}: name the concept instead"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_layer_graph_is_acyclic_and_places_every_module() {
    let graph = layer_graph();
    let modules = src_modules(&src_files());
    let mut problems = Vec::new();
    if let Some(cycle) = layers::find_cycle(&graph) {
        problems.push(format!("ARCHITECTURE.md's graph has a cycle: {}", cycle.join(" → ")));
    }
    for module in modules.iter().filter(|m| !graph.contains_key(*m)) {
        problems
            .push(format!("src/ module `{module}` has no `{module} → ...` line in ARCHITECTURE.md's graph: place it"));
    }
    let named: BTreeSet<&String> = graph.iter().flat_map(|(m, deps)| std::iter::once(m).chain(deps)).collect();
    for name in named.into_iter().filter(|n| !modules.contains(*n)) {
        problems.push(format!("ARCHITECTURE.md's graph names `{name}`, which is not a module under src/"));
    }
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

#[test]
fn modules_use_only_what_the_layer_graph_allows() {
    let (problems, edges) = forbidden_uses(&src_files(), &layer_graph());
    let summary: Vec<String> = edges.iter().map(|(edge, n)| format!("{edge} ({n})")).collect();
    let summary = format!("{} forbidden edges: {}", edges.len(), summary.join(", "));
    assert!(problems.is_empty(), "\n{}\n\n{summary}\n", problems.join("\n"));
}

#[test]
fn no_source_file_is_over_400_lines() {
    let long: Vec<String> = src_files()
        .iter()
        .map(|(file, text)| (file, text.lines().count()))
        .filter(|&(_, n)| n > MAX_LINES)
        .map(|(file, n)| format!("{file}: {n} lines (limit {MAX_LINES})"))
        .collect();
    assert!(long.is_empty(), "\n{}\n", long.join("\n"));
}

#[test]
fn no_unsafe_code_under_src() {
    let mut found = Vec::new();
    for (file, text) in src_files() {
        for (line, tok) in rust_text::tokens(&rust_text::code_only(&text)) {
            if tok == rust_text::Tok::Ident("unsafe".into()) {
                found.push(format!("{file}:{line}: `unsafe`"));
            }
        }
    }
    assert!(found.is_empty(), "\n{}\n", found.join("\n"));
}

#[test]
fn files_map_to_their_top_level_module() {
    assert_eq!(module_of("src/registry/store.rs"), Some(("registry".into(), 2)));
    assert_eq!(module_of("src/registry/mod.rs"), Some(("registry".into(), 1)));
    assert_eq!(module_of("src/review/shared/queue.rs"), Some(("review".into(), 3)));
    assert_eq!(module_of("src/store.rs"), Some(("store".into(), 1)));
    assert_eq!(module_of("src/lib.rs"), None);
    assert_eq!(module_of("src/main.rs"), None);
}

#[test]
fn forbidden_uses_name_file_line_and_edge() {
    let file = |name: &str, text: &str| (name.to_string(), text.to_string());
    let files = [
        file("src/lib.rs", "pub use server::run;\n"),
        file(
            "src/cli/serve.rs",
            "use crate::{server::X,\n    registry::Y};\nfn f() { crate::run(); crate::nope(); }\n",
        ),
        file("src/server/mod.rs", "use crate::cli::Args;\n"),
        file("src/registry/mod.rs", "use crate::registry::Z;\n"),
    ];
    let graph = layers::parse_layers("## Layers\n```\ncli → server\nserver →\nregistry →\n```\n").unwrap();
    let (problems, edges) = forbidden_uses(&files, &graph);
    assert_eq!(
        problems,
        [
            "src/cli/serve.rs:2: cli → registry is not in ARCHITECTURE.md's graph",
            "src/cli/serve.rs:3: crate::nope is neither a module of src/ nor a lib.rs import",
            "src/server/mod.rs:1: server → cli is not in ARCHITECTURE.md's graph",
        ]
    );
    assert_eq!(edges.len(), 2);
}

/// Groups of files of one module that use each other in a circle (`src/a/b.rs` uses `super::c`, and `src/a/c.rs`
/// uses `super::b`), each as `a: b, c`: such files cannot be read, or changed, one at a time.
fn sibling_circles(files: &[(String, String)]) -> Vec<String> {
    let path_of = |file: &str| -> Vec<String> {
        let mut parts: Vec<String> = file.trim_start_matches("src/").split('/').map(String::from).collect();
        let last = parts.pop().unwrap_or_default();
        if last != "mod.rs" {
            parts.push(last.trim_end_matches(".rs").to_string());
        }
        parts
    };
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(file, _)| path_of(file)).collect();
    let mut uses: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (file, text) in files {
        let path = path_of(file);
        let Some((_, parent)) = path.split_last() else { continue };
        let parent_names: Vec<&str> = parent.iter().map(String::as_str).collect();
        for rust_text::RootRef { name, .. } in rust_text::parent_refs(&rust_text::code_only(text), &parent_names) {
            let sibling = [parent, &[name]].concat();
            if sibling != path && modules.contains(&sibling) {
                uses.entry(path.clone()).or_default().insert(sibling);
            }
        }
    }
    let reaches = |from: &Vec<String>, to: &Vec<String>| {
        let (mut seen, mut stack) = (BTreeSet::new(), vec![from.clone()]);
        while let Some(at) = stack.pop() {
            for next in uses.get(&at).into_iter().flatten() {
                if next == to {
                    return true;
                }
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        false
    };
    let mut circles: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for from in uses.keys() {
        if reaches(from, from) {
            let (name, parent) = from.split_last().unwrap();
            circles.entry(parent.to_vec()).or_default().insert(name.clone());
        }
    }
    let shown = |parent: &[String]| if parent.is_empty() { "crate".to_string() } else { parent.join("::") };
    circles
        .iter()
        .map(|(parent, names)| format!("{}: {}", shown(parent), names.iter().cloned().collect::<Vec<_>>().join(", ")))
        .collect()
}

#[test]
fn no_files_of_a_module_use_each_other_in_a_circle() {
    let circles = sibling_circles(&src_files());
    assert!(
        circles.is_empty(),
        "files that use each other in a circle (move what they share to one of them, or to the module's mod.rs):\n{}",
        circles.join("\n")
    );
}

#[test]
fn a_circle_of_files_is_named_with_its_module() {
    let file = |name: &str, text: &str| (name.to_string(), text.to_string());
    let files = [
        file("src/a/mod.rs", "mod b; mod c; mod d;\n"),
        file("src/a/b.rs", "use super::c::X;\n"),
        file("src/a/c.rs", "use crate::a::{d::Y};\n"),
        file("src/a/d.rs", "fn f() { super::b::g(); }\nmod tests { use super::*; }\n"),
        file("src/e.rs", "use crate::a::b;\n"),
    ];
    assert_eq!(sibling_circles(&files), ["a: b, c, d"]);
    assert!(sibling_circles(&files[..3]).is_empty());
}

#[test]
fn no_type_name_is_defined_twice() {
    let twice = types::twice_named(&src_files());
    assert!(
        twice.is_empty(),
        "type names defined in more than one file (give each thing its own name):\n{}",
        twice.join("\n")
    );
    let file = |name: &str, text: &str| (name.to_string(), text.to_string());
    let files = [
        file("src/a.rs", "pub struct Rule;\npub(crate) enum Verdict {}\n"),
        file("src/b.rs", "pub(super) trait Rule {}\n// pub struct Verdict\n"),
    ];
    assert_eq!(types::twice_named(&files), ["Rule: src/a.rs, src/b.rs"]);
}

#[test]
fn type_names_keep_the_settings_vocabulary() {
    let off = types::off_vocabulary(&src_files());
    assert!(off.is_empty(), "types named off the vocabulary in ARCHITECTURE.md (`## Layers`):\n{}", off.join("\n"));
    let file = |name: &str, text: &str| (name.to_string(), text.to_string());
    let files = [
        file("src/a.rs", "pub struct Config;\npub struct RawConfig;\npub struct ReviewConfig;\n"),
        file("src/b.rs", "pub(crate) struct CallOptions {}\npub struct ReviewSettings;\n"),
    ];
    assert_eq!(types::off_vocabulary(&files), ["CallOptions (src/b.rs)", "ReviewConfig (src/a.rs)"]);
}

/// The names in `dir` (relative to the crate root) of its files ending in `ext`, sorted.
fn file_names(dir: &str, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(ext))
        .collect();
    names.sort();
    names
}

#[test]
fn the_codemap_names_every_file_and_only_files_that_exist() {
    let map = std::fs::read_to_string(root().join("docs/dev/codemap.md")).expect("reading docs/dev/codemap.md");
    let src: BTreeSet<String> =
        src_files().into_iter().map(|(f, _)| f.trim_start_matches("src/").to_string()).collect();
    let targets: Vec<String> =
        file_names("fuzz/fuzz_targets", ".rs").iter().map(|n| n.trim_end_matches(".rs").to_string()).collect();
    let drift = codemap::drift(&map, &src, &file_names("benches", ".rs"), &targets);
    assert!(drift.is_empty(), "docs/dev/codemap.md has drifted:\n{}", drift.join("\n"));
    let map = "## `a/`\n- `mod.rs`, `gone.rs`\n## Outside `src/`\n- `benches/`: `x.rs`\n";
    let src = BTreeSet::from(["a/mod.rs".to_string(), "a/b.rs".to_string()]);
    let found = codemap::drift(map, &src, &["x.rs".into(), "y.rs".into()], &["rules".into()]);
    assert_eq!(found.len(), 4, "{found:#?}");
}

#[test]
fn the_licence_at_the_root_is_the_one_every_manifest_names() {
    let licence = std::fs::read_to_string(root().join("LICENSE")).expect("a LICENSE file at the root");
    assert!(
        licence.contains("Apache License") && licence.contains("Version 2.0, January 2004"),
        "LICENSE is not the Apache License 2.0"
    );
    for (manifest, field) in [
        ("Cargo.toml", "license = \"Apache-2.0\""),
        ("clients/python/pyproject.toml", "license = \"Apache-2.0\""),
        ("clients/typescript/package.json", "\"license\": \"Apache-2.0\""),
    ] {
        let text = std::fs::read_to_string(root().join(manifest)).unwrap();
        assert!(text.contains(field), "{manifest} does not say {field}");
    }
}
